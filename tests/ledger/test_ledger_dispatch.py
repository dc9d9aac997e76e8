"""Tests for dispatch with an effect ledger: started rows before any tool runs, one
transaction per batch, settled whatever the outcome, already-started calls refused."""

from __future__ import annotations

import secrets
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from contextlib import closing
from typing import Any

import anyio
import pytest

from tinytools import (
    ApprovalRequired,
    Cancellation,
    Context,
    DispatchAborted,
    FatalToolError,
    Inject,
    RunContext,
    RunPolicy,
    ToolCall,
    ToolPolicy,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools._redact import MARKER
from tinytools.events import ToolDenied
from tinytools.ledger import AlreadyStarted, PostgresLedger, SqliteLedger


class Recording:
    """A plain EffectLedger (no started_batch): remembers every started and settled."""

    def __init__(self) -> None:
        self.rows: dict[str, str | None] = {}
        self.log: list[tuple[str, str]] = []

    def started(
        self, run_id: str, call_id: str, tool_name: str, arguments: Mapping[str, object]
    ) -> None:
        if call_id in self.rows:
            raise AlreadyStarted(run_id, call_id)
        self.rows[call_id] = None
        self.log.append(("started", call_id))

    def settled(self, run_id: str, call_id: str, status: str) -> None:
        self.rows[call_id] = status
        self.log.append(("settled", call_id))

    def unresolved(self, run_id: str | None = None) -> tuple[Any, ...]:
        return tuple(c for c, s in self.rows.items() if s is None)


def calls_of(*specs: tuple[str, str, dict[str, object]]) -> list[ToolCall]:
    return [ToolCall(call_id, name, arguments) for call_id, name, arguments in specs]


def visible(kind: str, where: str, run_id: str) -> set[str]:
    """The call ids another connection sees committed for ``run_id``."""
    if kind == "sqlite":
        with closing(sqlite3.connect(where)) as raw:
            rows = raw.execute("SELECT call_id FROM tinytools_effects WHERE run_id = ?", (run_id,))
            return {row[0] for row in rows}
    import psycopg

    with psycopg.connect(where) as raw:
        rows = raw.execute("SELECT call_id FROM tinytools_effects WHERE run_id = %s", (run_id,))
        return {row[0] for row in rows}


class TestStartedRows:
    def test_committed_before_any_tool_runs(
        self, kind_and_place: tuple[str, str], ledger: Any, run_id: str
    ) -> None:
        """When the first tool runs, every started row of the batch is committed: another
        connection sees them all."""
        seen: list[set[str]] = []

        @tool
        def note(n: int) -> int:
            """Note n."""
            if not seen:
                seen.append(visible(*kind_and_place, run_id))
            return n

        calls = [ToolCall(f"c{n}", "note", {"n": n}) for n in range(4)]
        dispatch_sync(calls, [note], ledger=ledger, context=Context(run_id=run_id))
        assert [{"c0", "c1", "c2", "c3"}] == seen
        assert () == ledger.unresolved(run_id)

    @pytest.mark.parametrize("size", [1, 10])
    def test_one_commit_per_batch(
        self, kind_and_place: tuple[str, str], run_id: str, size: int
    ) -> None:
        """The started rows of a batch cost one commit, not one per call."""
        kind, where = kind_and_place
        base: Any = SqliteLedger if kind == "sqlite" else PostgresLedger
        commits: list[str] = []

        class Counting(base):  # type: ignore[misc, valid-type]
            def _commit(self, connection: Any) -> None:
                commits.append("commit")
                super()._commit(connection)

        @tool
        def note(n: int) -> int:
            """Note n."""
            commits.append("tool")
            return n

        calls = [ToolCall(f"c{n}", "note", {"n": n}) for n in range(size)]
        with Counting(where) as ledger:
            dispatch_sync(calls, [note], ledger=ledger, context=Context(run_id=run_id))
        assert ["commit"] == commits[: commits.index("tool")]  # then the settled rows
        assert size == commits.count("tool")

    def test_a_long_id_runs_with_its_batch(self, ledger: Any, run_id: str) -> None:
        """A call id and a run id over 3 KB (random, so that they do not compress) are
        claimed with the rest of their batch, which runs; before, PostgreSQL refused the
        row, and the batch was aborted with none of its calls run."""
        ran: list[int] = []

        @tool
        def note(n: int) -> int:
            """Note n."""
            ran.append(n)
            return n

        long = secrets.token_hex(1_600)
        calls = [ToolCall(long, "note", {"n": 0}), ToolCall("c1", "note", {"n": 1})]
        context = Context(run_id=f"{run_id}{long}")
        first = dispatch_sync(calls, [note], ledger=ledger, context=context)
        assert ["ok", "ok"] == [m.status for m in first.messages]
        again = dispatch_sync(calls, [note], ledger=ledger, context=context)
        assert ["error", "error"] == [m.status for m in again.messages]  # already started
        assert [0, 1] == ran
        assert () == ledger.unresolved(context.run_id)

    def test_arguments_stored_redacted(self, ledger: Any, run_id: str) -> None:
        """A redacted argument's value never reaches the ledger; the tool gets it."""
        got: list[str] = []

        @tool(policy=ToolPolicy(redact=("password",)))
        def login(user: str, password: str) -> str:
            """Log in."""
            got.append(password)
            raise OSError("down")  # stays unresolved? no: settled as an error

        class Keeping(type(ledger)):  # type: ignore[misc]
            def settled(self, *args: Any) -> None:
                pass  # keep the row unresolved, to read what was stored

        with Keeping(ledger.path if isinstance(ledger, SqliteLedger) else ledger.conninfo) as kept:
            dispatch_sync(
                [ToolCall("c", "login", '{"user": "ann", "password": "hunter22"}')],
                [login],
                ledger=kept,
                context=Context(run_id=run_id),
            )
            (entry,) = kept.unresolved(run_id)
        assert ["hunter22"] == got
        assert {"user": "ann", "password": MARKER} == entry.arguments


class TestSettled:
    def test_every_outcome_settles(self) -> None:
        """ok, error, timed out and a tool that deferred itself: each started row is
        settled with its message's status (the deferred one released)."""
        gate = threading.Event()

        @tool
        def fine() -> str:
            """Fine."""
            return "ok"

        @tool
        def broken() -> str:
            """Raise."""
            raise ValueError("nope")

        @tool(timeout=0.05, blocking=True)
        def stuck() -> str:
            """Never finishes in time."""
            gate.wait()
            return "late"

        @tool
        def asks(ctx: Inject[RunContext]) -> str:
            """Ask for approval from inside."""
            raise ApprovalRequired({"why": "big"})

        ledger = Recording()
        calls = calls_of(
            ("a", "fine", {}), ("b", "broken", {}), ("c", "stuck", {}), ("d", "asks", {})
        )
        try:
            result = dispatch_sync(calls, [fine, broken, stuck, asks], ledger=ledger)
        finally:
            gate.set()
        assert ["ok", "error", "error"] == [m.status for m in result.messages]
        assert {"a": "ok", "b": "error", "c": "error", "d": None} == ledger.rows

    def test_fatal_abort_settles_the_calls_that_never_ran(self) -> None:
        @tool
        def fatal() -> str:
            """Abort."""
            raise FatalToolError("stop everything")

        @tool
        def later() -> str:
            """Never reached."""
            raise AssertionError("ran after an abort")

        ledger = Recording()
        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(
                calls_of(("a", "fatal", {}), ("b", "later", {})), [fatal, later], ledger=ledger
            )
        assert ["a", "b"] == [m.tool_call_id for m in info.value.result.messages]
        assert {"a": "error", "b": "interrupted"} == ledger.rows

    def test_cancelled_batch_settles(self) -> None:
        handle = Cancellation()

        @tool
        def first() -> str:
            """Cancel the batch."""
            handle.cancel()
            return "done"

        @tool
        def second() -> str:
            """Never runs."""
            raise AssertionError("ran after cancel")

        ledger = Recording()
        result = dispatch_sync(
            calls_of(("a", "first", {}), ("b", "second", {})),
            [first, second],
            ledger=ledger,
            cancellation=handle,
        )
        assert ["ok", "interrupted"] == [m.status for m in result.messages]
        assert {"a": "ok", "b": "interrupted"} == ledger.rows

    @pytest.mark.anyio
    async def test_async_dispatch_settles(self, tmp_path: Any, anyio_backend: str) -> None:
        """Under an event loop, concurrently: the same rows, all settled."""

        @tool
        async def slow(n: int) -> int:
            """Yield once."""
            await anyio.sleep(0)
            return n

        with SqliteLedger(tmp_path / "l.db") as ledger:
            calls = [ToolCall(f"c{n}", "slow", {"n": n}) for n in range(5)]
            result = await dispatch(
                calls,
                [slow],
                ledger=ledger,
                policy=RunPolicy(max_concurrency=3),
                context=Context(run_id="r"),
            )
            assert ["ok"] * 5 == [m.status for m in result.messages]
            assert () == ledger.unresolved()
            again = await dispatch(calls, [slow], ledger=ledger, context=Context(run_id="r"))
            assert ["error"] * 5 == [m.status for m in again.messages]


class TestAlreadyStarted:
    @pytest.mark.parametrize("batching", [True, False])
    def test_refused_call_answered_and_not_run(self, tmp_path: Any, batching: bool) -> None:
        """A call started elsewhere is answered with an error, does not run, and its row
        (another worker's) is not settled by this batch."""
        ran: list[int] = []

        @tool
        def charge(n: int) -> str:
            """Charge."""
            ran.append(n)
            return "charged"

        ledger: Any = SqliteLedger(tmp_path / "l.db") if batching else Recording()
        ledger.started("r", "b", "charge", {"n": 2})
        calls = calls_of(
            ("a", "charge", {"n": 1}), ("b", "charge", {"n": 2}), ("c", "charge", {"n": 3})
        )
        result = dispatch_sync(calls, [charge], ledger=ledger, context=Context(run_id="r"))
        assert [1, 3] == ran
        assert ["ok", "error", "ok"] == [m.status for m in result.messages]
        assert "already started" in result.messages[1].content
        assert ("a", "c") == result.executed
        denied = [e for e in result.events if isinstance(e, ToolDenied)]
        assert ["b"] == [e.call_id for e in denied]
        assert ["b"] == [getattr(e, "call_id", e) for e in ledger.unresolved("r")]
        if batching:
            ledger.close()


class TestDeferredByTool:
    def test_a_call_its_tool_deferred_runs_on_resume(self, tmp_path: Any) -> None:
        """A tool that raised ApprovalRequired did nothing: its row is released, and the
        approved call runs on resume, once."""
        ran: list[int] = []

        @tool
        def transfer(ctx: Inject[RunContext], amount: int) -> str:
            """Ask for approval from inside, unless approved."""
            if not ctx.approved:
                raise ApprovalRequired({"amount": amount})
            ran.append(amount)
            return "moved"

        calls = calls_of(("t", "transfer", {"amount": 7}))
        with SqliteLedger(tmp_path / "l.db") as ledger:
            context = Context(run_id="r")
            first = dispatch_sync(calls, [transfer], ledger=ledger, context=context)
            assert first.deferred is not None
            decided = first.deferred.approve("t")
            resumed = dispatch_sync(
                calls, [transfer], ledger=ledger, context=context, approvals=decided
            )
            assert ["ok"] == [m.status for m in resumed.messages]
            again = dispatch_sync(
                calls, [transfer], ledger=ledger, context=context, approvals=decided
            )
            assert ["error"] == [m.status for m in again.messages]
            assert [7] == ran
            assert () == ledger.unresolved()


class FailingLedger:
    """Fails its ``fail_at``-th write (counting started then settled calls)."""

    def __init__(self, fail_on: str, at: int) -> None:
        self.fail_on, self.at, self.count = fail_on, at, 0

    def started(self, run_id: str, call_id: str, tool_name: str, arguments: object) -> None:
        self._maybe("started")

    def started_batch(self, run_id: str, calls: Sequence[Any]) -> frozenset[str]:
        self._maybe("started_batch")
        return frozenset()

    def settled(self, run_id: str, call_id: str, status: str) -> None:
        self._maybe("settled")

    def unresolved(self, run_id: str | None = None) -> tuple[Any, ...]:
        return ()

    def _maybe(self, what: str) -> None:
        if what == self.fail_on:
            self.count += 1
            if self.count == self.at:
                raise ConnectionError(f"{what} lost the database")


class TestFailingLedger:
    def test_failed_settle_aborts_with_every_call_answered(self) -> None:
        """A settled() that fails aborts the batch before the next call runs; every call
        is answered."""
        ran: list[int] = []

        @tool
        def note(n: int) -> int:
            """Note."""
            ran.append(n)
            return n

        calls = [ToolCall(f"c{n}", "note", {"n": n}) for n in range(4)]
        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(calls, [note], ledger=FailingLedger("settled", 2))
        assert [0, 1] == ran
        assert [c.id for c in calls] == [m.tool_call_id for m in info.value.result.messages]
        assert "ConnectionError('settled lost the database')" in info.value.reason

    def test_failed_batch_claim_runs_nothing(self) -> None:
        @tool
        def note(n: int) -> int:
            """Note."""
            raise AssertionError("ran although the claim failed")

        calls = [ToolCall(f"c{n}", "note", {"n": n}) for n in range(3)]
        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(calls, [note], ledger=FailingLedger("started_batch", 1))
        assert ["interrupted"] * 3 == [m.status for m in info.value.result.messages]
