"""Tests for `tinytools.ledger.SqliteLedger` and `PostgresLedger`: the protocol on a real
database."""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import sys
from contextlib import closing
from pathlib import Path

import pytest
from conftest import make_ledger, stored_status

from tinytools.ledger import AlreadyStarted, LedgerError, PostgresLedger, SqliteLedger, reconcile


class TestProtocol:
    def test_started_twice_is_refused(self, ledger: SqliteLedger, run_id: str) -> None:
        """A call starts once; starting it again raises AlreadyStarted naming it."""
        ledger.started(run_id, "c1", "pay", {"amount": 5})
        with pytest.raises(AlreadyStarted) as info:
            ledger.started(run_id, "c1", "pay", {"amount": 5})
        assert ("c1", run_id) == (info.value.call_id, info.value.run_id)
        assert "c1" in str(info.value)

    def test_unresolved_until_settled(self, ledger: SqliteLedger, run_id: str) -> None:
        """Started calls are unresolved, oldest first, until settled; settled ones stay
        started (a settled call is not started again)."""
        ledger.started(run_id, "c1", "pay", {"amount": 5})
        ledger.started(run_id, "c2", "lookup", {"key": "a"})
        assert [("c1", "pay", {"amount": 5}), ("c2", "lookup", {"key": "a"})] == [
            (e.call_id, e.tool_name, e.arguments) for e in ledger.unresolved(run_id)
        ]
        ledger.settled(run_id, "c1", "ok")
        assert ["c2"] == [e.call_id for e in ledger.unresolved(run_id)]
        with pytest.raises(AlreadyStarted):
            ledger.started(run_id, "c1", "pay", {"amount": 5})

    def test_unresolved_per_run(self, ledger: SqliteLedger, run_id: str) -> None:
        """unresolved(run_id) holds that run's calls only; unresolved() holds every run's."""
        ledger.started(run_id, "c1", "pay", {})
        ledger.started(f"{run_id}-other", "c1", "pay", {})
        assert [run_id] == [e.run_id for e in ledger.unresolved(run_id)]
        everyone = {(e.run_id, e.call_id) for e in ledger.unresolved()}
        assert {(run_id, "c1"), (f"{run_id}-other", "c1")} <= everyone

    def test_settling_what_never_started_changes_nothing(
        self, ledger: SqliteLedger, run_id: str
    ) -> None:
        ledger.settled(run_id, "ghost", "ok")
        ledger.started(run_id, "ghost", "pay", {})
        assert ["ghost"] == [e.call_id for e in ledger.unresolved(run_id)]

    def test_a_settled_call_is_left_as_it_is(
        self, ledger: SqliteLedger, kind_and_place: tuple[str, str], run_id: str
    ) -> None:
        """A call already settled keeps its status and time when settled again: a worker's
        late ``ok`` after reconcile answered the call as interrupted does not rewrite the
        record (the model was told the effect is uncertain, and that is what it says)."""
        from tinytools import ToolCall, tool

        @tool
        def pay(amount: int) -> str:
            """Pay (not replay-safe: reconcile answers it as interrupted)."""
            return "paid"

        ledger.started(run_id, "c1", "pay", {"amount": 5})
        decided = reconcile([ToolCall("c1", "pay", {"amount": 5})], [pay], ledger, run_id)
        assert ["c1"] == [m.tool_call_id for m in decided.messages]
        settled = stored_status(*kind_and_place, run_id, "c1")
        assert "interrupted" == settled[0]
        ledger.settled(run_id, "c1", "ok")  # the worker that was thought lost
        ledger.settled(run_id, "c1", "error")
        assert settled == stored_status(*kind_and_place, run_id, "c1")
        assert () == ledger.unresolved(run_id)

    def test_released_call_starts_once_more(self, ledger: SqliteLedger, run_id: str) -> None:
        """A released call may be started again, once."""
        ledger.started(run_id, "c1", "lookup", {"key": "a"})
        ledger.release(run_id, "c1")
        assert ["c1"] == [e.call_id for e in ledger.unresolved(run_id)]  # still waiting
        ledger.started(run_id, "c1", "lookup", {"key": "a"})
        with pytest.raises(AlreadyStarted):
            ledger.started(run_id, "c1", "lookup", {"key": "a"})

    def test_batch_refuses_only_the_started(self, ledger: SqliteLedger, run_id: str) -> None:
        """started_batch claims the new calls and names the ones already started."""
        ledger.started(run_id, "b", "t", {})
        refused = ledger.started_batch(run_id, [("a", "t", {}), ("b", "t", {}), ("c", "t", {})])
        assert frozenset({"b"}) == refused
        assert ["a", "b", "c"] == sorted(e.call_id for e in ledger.unresolved(run_id))

    @pytest.mark.parametrize(
        "call_id",
        ["nul\x00inside", "lone \ud800 surrogate", '~json:"x"', "~json:", "ünïcödé", " "],
    )
    def test_any_id_round_trips(self, ledger: SqliteLedger, run_id: str, call_id: str) -> None:
        """Ids a database text column cannot hold (NUL, lone surrogates) are stored and
        read back exactly, and never collide with another id."""
        ledger.started(run_id, call_id, "t\x00", {"v": "\x00\udfff"})
        ledger.started(run_id, "plain", "t", {})
        with pytest.raises(AlreadyStarted):
            ledger.started(run_id, call_id, "t", {})
        entries = {e.call_id: e for e in ledger.unresolved(run_id)}
        assert {call_id, "plain"} == set(entries)
        assert "t\x00" == entries[call_id].tool_name
        assert {"v": "\x00\udfff"} == entries[call_id].arguments

    @pytest.mark.parametrize("size", [3_000, 100_000])
    def test_ids_of_any_length(self, ledger: SqliteLedger, run_id: str, size: int) -> None:
        """A call id or run id of any length (random, so that it does not compress; with
        NUL and a lone surrogate too) is claimed, read back whole, released, settled and
        refused again like any other; ids that differ only at their end, or an id spelled as
        another's digest, are other calls.
        PostgreSQL refused a row key over its index's ~2.7 KB, and with it the batch."""
        long = secrets.token_hex(size // 2)
        odd = f"\x00{long}\ud800"
        twin = f"{long[:-1]}!"
        forged = f"~json:sha256:{hashlib.sha256(long.encode()).hexdigest()}"  # long's digest
        ids = {long, odd, twin, forged, "short"}
        calls = [(call_id, "t", {"n": n}) for n, call_id in enumerate(sorted(ids))]
        for run in (run_id, f"{run_id}{long}\ud800"):
            assert frozenset() == ledger.started_batch(run, calls)
            assert ids == {e.call_id for e in ledger.unresolved(run)}
            assert {run} == {e.run_id for e in ledger.unresolved(run)}
            assert frozenset(ids) == ledger.started_batch(run, calls)
            ledger.release(run, odd)
            assert {odd} == ledger._released_ids(run)
            for call_id in ids - {"short"}:
                ledger.settled(run, call_id, "ok")
            assert ["short"] == [e.call_id for e in ledger.unresolved(run)]
            with pytest.raises(AlreadyStarted):
                ledger.started(run, odd, "t", {})

    def test_unencodable_arguments_still_recorded(self, ledger: SqliteLedger, run_id: str) -> None:
        """Arguments JSON cannot hold are stored by their repr; the row is still written."""
        ledger.started(run_id, "c", "t", {"when": object, "big": 10**40})
        (entry,) = ledger.unresolved(run_id)
        assert 10**40 == entry.arguments["big"]
        assert "object" in str(entry.arguments["when"])


class TestSqlite:
    def test_file_and_schema_made_on_first_use(self, tmp_path: Path) -> None:
        """Constructing touches nothing; the first use makes a WAL file with schema 1."""
        path = tmp_path / "l.db"
        ledger = SqliteLedger(path)
        assert not path.exists()
        assert () == ledger.unresolved()
        with closing(sqlite3.connect(path)) as raw:
            assert "wal" == raw.execute("PRAGMA journal_mode").fetchone()[0]
            assert 1 == raw.execute("PRAGMA user_version").fetchone()[0]
        ledger.close()

    def test_wal_refused_says_what_to_do(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A file system where SQLite cannot use WAL is named, with where to put the file."""

        class NoWal(sqlite3.Connection):
            def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
                if sql.startswith("PRAGMA journal_mode"):
                    sql = "PRAGMA journal_mode = DELETE"
                return super().execute(sql, *args)

        connect = sqlite3.connect
        monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: connect(*a, **k, factory=NoWal))
        with SqliteLedger(tmp_path / "l.db") as ledger, pytest.raises(LedgerError) as caught:
            ledger.unresolved()
        assert "refused WAL mode (the journal stays 'delete')" in str(caught.value)
        assert "keep the ledger file on a local disk" in str(caught.value)

    def test_newer_schema_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "l.db"
        with closing(sqlite3.connect(path)) as raw:
            raw.execute("PRAGMA user_version = 99")
        with SqliteLedger(path) as newer, pytest.raises(LedgerError, match="99 is newer"):
            newer.unresolved()

    def test_missing_folder_is_a_clear_error(self, tmp_path: Path) -> None:
        with (
            SqliteLedger(tmp_path / "nope" / "l.db") as ledger,
            pytest.raises(LedgerError, match="does its folder exist"),
        ):
            ledger.started("r", "c", "t", {})

    def test_a_locked_database_fails_after_the_timeout(self, tmp_path: Path) -> None:
        """A writer that cannot get the lock fails with an error, not a hang."""
        path = tmp_path / "l.db"
        with SqliteLedger(path) as first:
            first.unresolved()
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with (
                SqliteLedger(path, timeout=0.05) as waiting,
                pytest.raises(LedgerError, match=r"timeout=0\.05s"),
            ):
                waiting.started("r", "c", "t", {})
        finally:
            holder.execute("ROLLBACK")
            holder.close()

    def test_bad_setting_refused(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="synchronous must be"):
            SqliteLedger(tmp_path / "l.db", synchronous="off")  # type: ignore[arg-type]


#: The tables version 1 of the PostgreSQL ledger made, as it made them.
VERSION_1_SCHEMA = """
CREATE TABLE tinytools_ledger_version (version integer NOT NULL);
INSERT INTO tinytools_ledger_version (version) VALUES (1);
CREATE TABLE tinytools_effects (
    run_id      text NOT NULL,
    call_id     text NOT NULL,
    tool_name   text NOT NULL,
    arguments   text NOT NULL,
    started_at  double precision NOT NULL,
    attempt     integer NOT NULL DEFAULT 1,
    status      text,
    settled_at  double precision,
    PRIMARY KEY (run_id, call_id)
);
CREATE INDEX tinytools_effects_open ON tinytools_effects (started_at)
    WHERE status IS NULL OR status = 'released';
"""


class TestPostgres:
    def test_version_table_and_newer_schema_refused(self, fresh_postgres: str) -> None:
        """The schema's version is in tinytools_ledger_version; a newer one is refused."""
        import psycopg

        with PostgresLedger(fresh_postgres) as fresh:
            fresh.unresolved()
        with psycopg.connect(fresh_postgres, autocommit=True) as raw:
            assert [(2,)] == raw.execute("SELECT version FROM tinytools_ledger_version").fetchall()
            raw.execute("UPDATE tinytools_ledger_version SET version = 7")
        with PostgresLedger(fresh_postgres) as old, pytest.raises(LedgerError, match="is newer"):
            old.unresolved()

    def test_a_version_1_database_is_upgraded(self, fresh_postgres: str, run_id: str) -> None:
        """A database made by the previous schema (version 1) is upgraded by the first
        connection: its rows are kept and read, and ids of any length are taken."""
        import psycopg

        with psycopg.connect(fresh_postgres, autocommit=True) as raw:
            raw.execute(VERSION_1_SCHEMA)
            raw.execute(
                "INSERT INTO tinytools_effects (run_id, call_id, tool_name, arguments, "
                "started_at) VALUES (%s, 'old', 'pay', '{\"n\": 1}', 1.0)",
                (run_id,),
            )
        long = secrets.token_hex(2_000)
        with PostgresLedger(fresh_postgres) as ledger:
            assert [("old", "pay", {"n": 1})] == [
                (e.call_id, e.tool_name, e.arguments) for e in ledger.unresolved(run_id)
            ]
            with pytest.raises(AlreadyStarted):
                ledger.started(run_id, "old", "pay", {"n": 1})
            ledger.settled(run_id, "old", "ok")
            ledger.started(run_id, long, "pay", {})
            assert [long] == [e.call_id for e in ledger.unresolved(run_id)]
        with PostgresLedger(fresh_postgres) as again:  # upgraded once
            assert [long] == [e.call_id for e in again.unresolved(run_id)]
        with psycopg.connect(fresh_postgres, autocommit=True) as raw:
            versions = raw.execute("SELECT version FROM tinytools_ledger_version").fetchall()
        assert [(1,), (2,)] == sorted(versions)

    def test_an_upgrade_held_up_by_a_long_transaction_says_so(self, fresh_postgres: str) -> None:
        """An upgrade that waits past lock_timeout for a transaction of a worker of the
        older version is a LedgerError saying so; once that transaction ends, it is done."""
        import psycopg

        with psycopg.connect(fresh_postgres, autocommit=True) as raw:
            raw.execute(VERSION_1_SCHEMA)
        with psycopg.connect(fresh_postgres) as older:  # a transaction of its own
            older.execute("SELECT count(*) FROM tinytools_effects").fetchone()
            with PostgresLedger(fresh_postgres, lock_timeout=0.05) as ledger:
                with pytest.raises(LedgerError) as failed:
                    ledger.unresolved()
                older.rollback()
                assert () == ledger.unresolved()
        assert "could not create or upgrade its tables to schema version 2" in str(failed.value)
        assert "a long transaction of another worker holds the table" in str(failed.value)

    def test_unreachable_server_is_an_error(self, postgres: str, tmp_path: Path) -> None:
        """No server: a LedgerError naming the ledger, at once, and no password shown."""
        ledger = PostgresLedger(f"host={tmp_path} port=1 user=u password=sekrit dbname=d")
        with ledger, pytest.raises(LedgerError, match="could not connect") as info:
            ledger.started("r", "c", "t", {})
        assert "sekrit" not in str(info.value)

    def test_lost_connection_is_an_error_then_reconnects(self, postgres: str, run_id: str) -> None:
        """A connection the server dropped fails the next write with LedgerError; the
        write after it connects again."""
        import psycopg

        ledger = PostgresLedger(postgres)
        ledger.started(run_id, "c1", "t", {})
        assert ledger._connection is not None
        pid = ledger._connection.info.backend_pid
        with psycopg.connect(postgres, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(LedgerError, match="could not settle a call"):
            ledger.settled(run_id, "c1", "ok")
        ledger.settled(run_id, "c1", "ok")
        assert () == ledger.unresolved(run_id)
        ledger.close()


#: Conninfos a password leaks from in libpq's messages, each with the password's parts.
LEAKY_CONNINFOS = {
    # libpq's parse error quotes the text around the problem: the password.
    "a % in a URI password": ("postgresql://alice:hunter%zz2@localhost/db", ["hunter"]),
    "a space in a password": ("host=localhost password=open sesame dbname=x", ["sesame"]),
    "an = in a password": ("host=localhost password=open sesame=x dbname=x", ["sesame"]),
    "a quote in a password": ("host=localhost password='sesame dbname=x", ["sesame"]),
    "the whole URI quoted": ("postgresql://alice:sesame@[::1/db", ["sesame"]),
    # Parsed, but the password, split by an unescaped @ or /, lands in another field, which
    # the connection error quotes.
    "an @ in a URI password": (
        "postgresql://alice:open@sesame@/db?hostaddr=127.0.0.1&port=1",
        ["sesame"],
    ),
    "a / in a URI password": (
        "postgresql://alice:hunter/sesame@localhost/db",
        ["hunter", "sesame"],
    ),
    "a password in another field": (
        "host=/nonexistent port=5432 sslmode=sesame password=sesame",
        ["sesame"],
    ),
}


class TestConninfoSecrets:
    """A password in the conninfo reaches no message: libpq's errors quote the conninfo
    (before the fix, a parse error was appended to the masked conninfo whole)."""

    @pytest.mark.parametrize("case", LEAKY_CONNINFOS)
    def test_no_password_in_ledger_error_abort_or_cli(
        self, case: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from tinytools import Context, DispatchAborted, ToolCall, dispatch_sync, tool
        from tinytools._cli import main

        conninfo, parts = LEAKY_CONNINFOS[case]

        @tool
        def noop() -> str:
            """Do nothing."""
            return ""

        seen = []
        with PostgresLedger(conninfo) as ledger:
            seen.append(repr(ledger))
            with pytest.raises(LedgerError) as failed:
                ledger.started("r", "c", "t", {})
            seen.append(_whole(failed.value))
            with pytest.raises(DispatchAborted) as aborted:
                dispatch_sync([ToolCall("c", "noop", {})], [noop], ledger=ledger, context=Context())
            seen.append(_whole(aborted.value))
        assert 1 == main(["ledger", "list", "--db", conninfo])
        seen.append(capsys.readouterr().err)
        assert "could not connect" in seen[1]
        for text in seen:
            for part in parts:
                assert part not in text

    def test_what_libpq_cannot_parse_is_named(self) -> None:
        """The message says, in its own words, what libpq found wrong, and how to write it."""
        conninfo = "postgresql://alice:hunter%zz2@localhost/db"
        with PostgresLedger(conninfo) as ledger, pytest.raises(LedgerError) as failed:
            ledger.unresolved()
        assert "a '%' in the URI is not followed by two hex digits" in str(failed.value)
        assert "% as %25" in str(failed.value)

    def test_the_database_is_still_named(self, postgres: str) -> None:
        """What shows where the database is stays in the message: host, port, database,
        user, and the server's complaint (its quoted option value hidden, named)."""
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        fields = conninfo_to_dict(postgres)
        conninfo = make_conninfo(postgres, password="sesame", options="-c lock_timeout=forty")
        with PostgresLedger(conninfo) as ledger, pytest.raises(LedgerError) as failed:
            ledger.unresolved()
        text = str(failed.value)
        assert "sesame" not in text
        assert "invalid value for parameter <options>: <options>" in text
        for name in ("host", "port", "dbname", "user"):
            if name in fields:
                assert f"{name}={fields[name]}" in text


def _whole(error: BaseException) -> str:
    """An exception as a log shows it: its traceback, with every cause and context."""
    import traceback

    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


def test_importing_the_ledger_loads_no_driver() -> None:
    """`import tinytools.ledger` does not load psycopg: a PostgresLedger imports it when
    it first connects."""
    import subprocess
    import sys

    code = "import sys, tinytools.ledger; print('psycopg' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert "False" == out.stdout.strip()


def test_connection_lost_mid_batch_aborts_with_every_call_answered(
    postgres: str, run_id: str
) -> None:
    """The server drops the ledger's connection while the batch runs: the next settled()
    fails, the batch aborts at once (no hang) with every call answered and no later call
    run; the ledger reconnects to settle the calls that never ran, so only the call whose
    outcome it could not record is left for reconcile."""
    import psycopg

    from tinytools import Context, DispatchAborted, ToolCall, dispatch_sync, tool

    ran: list[int] = []
    ledger = PostgresLedger(postgres)

    @tool
    def step(n: int) -> int:
        """Run a step; the first one cuts the ledger's connection."""
        ran.append(n)
        if n == 0:
            assert ledger._connection is not None
            with psycopg.connect(postgres, autocommit=True) as admin:
                pid = ledger._connection.info.backend_pid
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        return n

    calls = [ToolCall(f"c{n}", "step", {"n": n}) for n in range(3)]
    with ledger, pytest.raises(DispatchAborted) as info:
        dispatch_sync(calls, [step], ledger=ledger, context=Context(run_id=run_id))
    assert [0] == ran
    assert ["c0", "c1", "c2"] == [m.tool_call_id for m in info.value.result.messages]
    assert "could not settle a call" in info.value.reason
    with PostgresLedger(postgres) as fresh:
        assert ["c0"] == [e.call_id for e in fresh.unresolved(run_id)]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_prune_keeps_unresolved_and_recent(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, run_id: str
) -> None:
    """prune deletes settled rows older than the cutoff, never an unresolved one."""
    where = (
        str(tmp_path / "l.db") if kind == "sqlite" else request.getfixturevalue("fresh_postgres")
    )
    with make_ledger(kind, where) as ledger:
        _prune_checks(ledger, run_id)


def _prune_checks(ledger: SqliteLedger | PostgresLedger, run_id: str) -> None:
    ledger.started(run_id, "done", "t", {})
    ledger.settled(run_id, "done", "ok")
    ledger.started(run_id, "open", "t", {})
    assert 0 == ledger.prune(3600)  # settled just now: kept
    assert ledger.prune(-1) >= 1  # everything settled is older than a second from now
    assert ["open"] == [e.call_id for e in ledger.unresolved(run_id)]
    ledger.started(run_id, "done", "t", {})  # pruned: its id is free again


def test_missing_psycopg_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without psycopg, a PostgresLedger's first use names the extra to install."""
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now fails
    ledger = PostgresLedger("dbname=x")
    with pytest.raises(LedgerError, match=r"tinytools\[postgres\]"):
        ledger.unresolved()
