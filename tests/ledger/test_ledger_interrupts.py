"""Interrupt tests for `tinytools.ledger`: a ``KeyboardInterrupt`` at each point of a batch.

A Ctrl-C's handler raises between two bytecodes of whatever Python code runs, such as
just after ``BEGIN IMMEDIATE`` returns from a busy wait. Here a trace function raises
``KeyboardInterrupt`` before the n-th bytecode the ledger's code runs during a
dispatch, for every n in turn (for PostgreSQL, whose writes are slower, for n spread over
them, and over psycopg's). After
each interrupt another worker, on a connection of its own, claims the batch's calls
at once (a transaction left open would hold its lock: the worker would time out),
the interrupted ledger's next dispatch runs, no tool ran twice, and no row the
database held (settled or started) is lost or changed.
"""

from __future__ import annotations

import sqlite3
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import tinytools
from tinytools import ApprovalRequired, Context, ToolCall, dispatch_sync, tool
from tinytools.ledger import LedgerError, PostgresLedger, SqliteLedger

#: The code watched in every run: the ledgers' own, and how dispatch calls them.
OURS = (
    str(Path(tinytools.ledger.__file__).parent),
    str(Path(tinytools.__file__).parent / "_engine" / "effects.py"),
)
#: How many points of a dispatch a run interrupts at, at most, spread over them all: with
#: SQLite, every bytecode of the ledger's code (about 1,100); with PostgreSQL, whose every
#: write waits for the server, a sample of ours (about 1,200) and of psycopg's (14,000).
POINTS = {"sqlite": 2_000, "postgres": 400}
PSYCOPG_POINTS = 150


class Interrupt:
    """A trace function that raises ``KeyboardInterrupt`` before the ``at``-th bytecode
    run in ``files`` (0: never; it counts them)."""

    def __init__(self, files: tuple[str, ...], at: int = 0) -> None:
        self.files, self.at, self.seen = files, at, 0

    def __call__(self, frame: FrameType, event: str, arg: object) -> Any:
        if not frame.f_code.co_filename.startswith(self.files):
            return None
        frame.f_trace_opcodes = True
        return self._opcode

    def _opcode(self, frame: FrameType, event: str, arg: object) -> Any:
        if event == "opcode":
            self.seen += 1
            if self.seen == self.at:
                raise KeyboardInterrupt  # (the trace function is then unset)
        return self._opcode

    @contextmanager
    def watching(self) -> Iterator[None]:
        before = sys.gettrace()
        sys.settrace(self)
        try:
            yield
        finally:
            sys.settrace(before)


class Run:
    """One ledger interrupted again and again, another worker, and what ran."""

    def __init__(self, kind: str, where: str) -> None:
        self.kind, self.where = kind, where
        self.prefix = f"intr-{uuid.uuid4().hex}-"
        # (No fsync per batch: the steps between BEGIN and COMMIT are the same.)
        self.ledger = (
            SqliteLedger(where, synchronous="normal") if kind == "sqlite" else PostgresLedger(where)
        )
        # Another worker: it waits at most 2 s for a lock the interrupted ledger holds.
        self.other = (
            SqliteLedger(where, synchronous="normal", timeout=2)
            if kind == "sqlite"
            else PostgresLedger(where, lock_timeout=2)
        )
        self.reader: Any
        if kind == "sqlite":
            self.reader, self.mark = sqlite3.connect(where, isolation_level=None), "?"
        else:
            import psycopg

            self.reader, self.mark = psycopg.connect(where, autocommit=True), "%s"
        self.ran: list[tuple[str, str]] = []
        self.seen: dict[tuple[str, str], object] = {}  # the rows of each batch, as left
        self.batches = 0

        @tool
        def step(ctx: tinytools.Inject[tinytools.RunContext], n: int) -> int:
            """Run a step."""
            self.ran.append((ctx.run_id, f"c{n}"))
            return n

        @tool
        def asks(n: int) -> int:
            """Ask for approval (its row is released)."""
            raise ApprovalRequired({"n": n})

        self.tools = [step, asks]

    def calls(self) -> list[ToolCall]:
        return [
            ToolCall("c0", "step", {"n": 0}),
            ToolCall("c1", "asks", {"n": 1}),
            ToolCall("c2", "step", {"n": 2}),
        ]

    def dispatch(self, interrupt: Interrupt | None = None) -> tuple[str, bool]:
        """A batch under a new run id; the run id, and whether it was interrupted."""
        self.batches += 1
        run_id = f"{self.prefix}{self.batches}"
        context = Context(run_id=run_id)
        if interrupt is None:
            result = dispatch_sync(self.calls(), self.tools, ledger=self.ledger, context=context)
            assert ["ok", "ok"] == [m.status for m in result.messages]
            assert result.deferred is not None
            return run_id, False
        try:
            with interrupt.watching():
                dispatch_sync(self.calls(), self.tools, ledger=self.ledger, context=context)
        except KeyboardInterrupt:
            return run_id, True
        return run_id, False

    def rows(self, run_id: str | None = None) -> dict[tuple[str, str], object]:
        """The rows of a run (of every run of this test when None), read on a connection
        of its own: key -> status."""
        pattern = run_id if run_id is not None else f"{self.prefix}%"
        query = "SELECT run_id, call_id, status FROM tinytools_effects WHERE run_id LIKE "
        found = self.reader.execute(query + self.mark, (pattern,)).fetchall()
        return {(run, call): status for run, call, status in found}

    def close(self) -> None:
        self.ledger.close()
        self.other.close()
        self.reader.close()


def kept(before: dict[tuple[str, str], object], after: dict[tuple[str, str], object]) -> None:
    """No row is lost, and none settled changes (a released one may be claimed again)."""
    assert set(before) <= set(after), f"rows lost: {set(before) - set(after)}"
    changed = {
        row: (status, after[row])
        for row, status in before.items()
        if status not in (None, "released") and after[row] != status
    }
    assert {} == changed


def interrupt_everywhere(run: Run, files: tuple[str, ...], points: list[int]) -> int:
    """Interrupt a dispatch at each point; after each, check the other worker, the next
    dispatch and the rows. How many dispatches were interrupted."""
    interrupted = 0
    for at in points:
        try:
            run_id, stopped = run.dispatch(Interrupt(files, at))
            interrupted += stopped
            rows = run.rows(run_id)
            ran = {(ran_in, call) for ran_in, call in run.ran if ran_in == run_id}
            assert ran <= set(rows), "a tool ran with no started row"

            # Another worker is not held up: it claims what never started, or was released.
            calls = [(call.id, call.name, call.arguments) for call in run.calls()]
            refused = run.other.started_batch(run_id, calls)  # type: ignore[arg-type]
            for call_id in {call.id for call in run.calls()} - refused:
                run.ran.append((run_id, call_id))  # (it "runs" the call)
                run.other.settled(run_id, call_id, "ok")
            kept(rows, rows := run.rows(run_id))

            run.dispatch()  # the interrupted ledger's next batch runs
            kept(rows, rows := run.rows(run_id))
            run.seen.update(rows)
            assert len(run.ran) == len(set(run.ran)), "a call ran twice"
        except (AssertionError, LedgerError) as error:
            raise AssertionError(f"interrupted at bytecode {at} of {files}: {error}") from error
    kept(run.seen, run.rows())  # nothing of an earlier batch changed since
    return interrupted


def spread(total: int, count: int) -> list[int]:
    """``count`` points spread over ``1..total`` (all of them when fewer)."""
    if total <= count:
        return list(range(1, total + 1))
    return sorted({1 + (i * total) // count for i in range(count)})


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_interrupted_at_every_point(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """After a KeyboardInterrupt at any point of the ledger's code, the ledger and the
    other workers on its database go on, and nothing settled is lost."""
    where = str(tmp_path / "l.db") if kind == "sqlite" else request.getfixturevalue("postgres")
    run = Run(kind, where)
    try:
        run.dispatch()  # connected, schema made
        counted = Interrupt(OURS)
        run.dispatch(counted)
        points = spread(counted.seen, POINTS[kind])
        assert len(points) == interrupt_everywhere(run, OURS, points)  # (each one was hit)
        if kind == "postgres":
            import psycopg

            # (Not its libpq binding, psycopg/pq/: C code in psycopg[c] and [binary], where
            # no interrupt lands.)
            package = Path(psycopg.__file__).parent
            files = tuple(
                str(path) for path in [*package.glob("*.py"), *package.glob("types/*.py")]
            )
            counted = Interrupt(files)
            run.dispatch(counted)
            points = spread(counted.seen, PSYCOPG_POINTS)
            # How much of psycopg's code a batch runs depends on timing (its wait loop polls
            # the socket until the server answers): the last points may lie past a shorter
            # batch's end. Most must be hit, so that the test cannot pass vacuously.
            assert interrupt_everywhere(run, files, points) >= 0.9 * len(points)
    finally:
        run.close()


def test_a_second_interrupt_during_the_rollback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C just after BEGIN returns, and again while the write is rolled back, leaves
    the transaction open: the ledger's next use ends it (nothing of it was committed)
    and goes on, and the other workers with it."""
    interrupts: list[str] = []

    class Interrupted(sqlite3.Connection):
        """Raises KeyboardInterrupt after BEGIN returns, then on ROLLBACK, once each."""

        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
            if sql in interrupts:
                interrupts.remove(sql)
                if sql == "BEGIN IMMEDIATE":
                    super().execute(sql, *args)
                raise KeyboardInterrupt
            return super().execute(sql, *args)

    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: connect(*a, **k, factory=Interrupted))
    path = str(tmp_path / "l.db")
    with SqliteLedger(path) as ledger, SqliteLedger(path, timeout=2) as other:
        ledger.started("r", "a", "t", {})
        interrupts[:] = ["BEGIN IMMEDIATE", "ROLLBACK"]
        with pytest.raises(KeyboardInterrupt):
            ledger.settled("r", "a", "ok")
        assert [] == interrupts
        ledger.started("r", "b", "t", {})  # the next use ends the transaction left open
        other.started("r", "c", "t", {})
        assert ["a", "b", "c"] == [e.call_id for e in other.unresolved("r")]  # a: not settled
