"""Fixtures for the effect-ledger tests: ledgers of both kinds on a real database.

PostgreSQL: ``TINYTOOLS_TEST_POSTGRES`` (a conninfo) names a server to use; without
it a throwaway cluster is started for the session (``throwaway_postgres.py``). When
neither works the PostgreSQL tests are skipped with the reason, unless
``TINYTOOLS_REQUIRE_POSTGRES=1`` (CI sets it), which turns the skip into a failure.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
import throwaway_postgres

from tinytools.ledger import PostgresLedger, SqliteLedger


def _unavailable(reason: str) -> None:
    if os.environ.get("TINYTOOLS_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"PostgreSQL is required (TINYTOOLS_REQUIRE_POSTGRES=1): {reason}")
    pytest.skip(f"no PostgreSQL: {reason}")


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """A conninfo of a PostgreSQL server the tests may write to."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable('psycopg is not installed (pip install "tinytools[postgres]")')
    given = os.environ.get("TINYTOOLS_TEST_POSTGRES")
    if given:
        yield given
        return
    try:
        cluster = throwaway_postgres.start()
    except throwaway_postgres.Unavailable as error:
        _unavailable(str(error))
    try:
        yield cluster.conninfo
    finally:
        cluster.stop()


@pytest.fixture
def own_postgres() -> Iterator[throwaway_postgres.Cluster]:
    """A throwaway PostgreSQL cluster of the test's own, which it may crash and restart
    (the shared server, or CI's, must stay up)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable('psycopg is not installed (pip install "tinytools[postgres]")')
    try:
        cluster = throwaway_postgres.start()
    except throwaway_postgres.Unavailable as error:
        _unavailable(str(error))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def fresh_postgres(postgres: str) -> Iterator[str]:
    """A conninfo of a new, empty database of its own (dropped after the test), for a test
    that changes the schema or deletes rows other tests (or another Python under CI,
    which tests two at once) may be using."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    name = f"tt_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield make_conninfo(postgres, dbname=name)
    finally:
        with psycopg.connect(postgres, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def run_id() -> str:
    """A run id no other test uses (the PostgreSQL database is shared)."""
    return f"run-{uuid.uuid4().hex}"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "ledger.db"


def make_ledger(kind: str, where: str) -> SqliteLedger | PostgresLedger:
    return SqliteLedger(where) if kind == "sqlite" else PostgresLedger(where)


def stored_status(kind: str, where: str, run_id: str, call_id: str) -> tuple[object, ...]:
    """What the database holds for a call's row, read with a connection of its own: its
    status and when it was settled (plain ids only)."""
    query = "SELECT status, settled_at FROM tinytools_effects WHERE run_id = {0} AND call_id = {0}"
    if kind == "sqlite":
        with closing(sqlite3.connect(where)) as raw:
            row = raw.execute(query.format("?"), (run_id, call_id)).fetchone()
    else:
        import psycopg

        with psycopg.connect(where) as raw:
            row = raw.execute(query.format("%s"), (run_id, call_id)).fetchone()
    assert row is not None, f"no row for call {call_id!r} of run {run_id!r}"
    return tuple(row)


@pytest.fixture(params=["sqlite", "postgres"])
def kind_and_place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """Each ledger kind with where it lives (a file path, or a conninfo)."""
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "ledger.db")
    return "postgres", str(request.getfixturevalue("postgres"))


@pytest.fixture
def ledger(kind_and_place: tuple[str, str]) -> Iterator[SqliteLedger | PostgresLedger]:
    """A ledger of each kind."""
    made = make_ledger(*kind_and_place)
    try:
        yield made
    finally:
        made.close()
