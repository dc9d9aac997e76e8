"""The ledger's promise under attack: a call runs at most once, and reconcile answers each
call once, also when the host answers deferred calls, the database is locked or lost, and
the ledger file is deleted or replaced under a running worker."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import ledger_children
import pytest
from conftest import make_ledger

from tinytools import (
    ApprovalRequired,
    CallDeferred,
    Context,
    DispatchAborted,
    Inject,
    RunContext,
    ToolCall,
    dispatch_sync,
    tool,
)
from tinytools._cli import main
from tinytools.ledger import LedgerError, SqliteLedger, reconcile

CHILDREN = str(Path(ledger_children.__file__))


def deferring_tools(ran: list[str]) -> list[Any]:
    @tool
    def wire(ctx: Inject[RunContext], amount: int) -> str:
        """Wire money: asks for approval from inside, unless approved."""
        if not ctx.approved:
            raise ApprovalRequired({"amount": amount})
        ran.append(f"wire:{amount}")
        return "sent"

    @tool
    def ship(parcel: str) -> str:
        """Ship a parcel: the host does it (the tool hands it over)."""
        ran.append(f"ship:{parcel}")
        raise CallDeferred({"parcel": parcel})

    return [wire, ship]


class TestHostAnsweredDeferrals:
    """A call its tool deferred leaves a released row; the host then answers it (deny, or
    its own result). Before the fix the row stayed released: it was listed as unresolved
    for ever, reconcile answered it a second time, and the same call dispatched again ran
    its tool again (a ``CallDeferred`` call handed to the host a second time)."""

    def test_answered_call_is_settled_and_never_runs_again(
        self, kind_and_place: tuple[str, str], run_id: str
    ) -> None:
        ran: list[str] = []
        tools = deferring_tools(ran)
        calls = [ToolCall("a", "wire", {"amount": 5}), ToolCall("b", "ship", {"parcel": "p1"})]
        context = Context(run_id=run_id)
        ledger = make_ledger(*kind_and_place)
        try:
            first = dispatch_sync(calls, tools, ledger=ledger, context=context)
            assert first.deferred is not None
            decided = first.deferred.deny("a", "not today").respond("b", "shipped by hand")
            second = dispatch_sync(calls, tools, ledger=ledger, context=context, approvals=decided)
            assert ["denied", "ok"] == [m.status for m in second.messages]
            assert () == ledger.unresolved(run_id)

            # A later crash of the run: reconcile answers only the interrupted batch.
            later = [ToolCall("c", "wire", {"amount": 1})]
            decided_later = reconcile(later, tools, ledger, run_id)
            assert [] == [m.tool_call_id for m in decided_later.messages]

            # The same calls dispatched again: refused, no tool runs, nothing deferred.
            again = dispatch_sync(calls, tools, ledger=ledger, context=context)
            assert ["error", "error"] == [m.status for m in again.messages]
            assert again.deferred is None
            assert ["ship:p1"] == ran  # (ship ran once, handing the call over)
        finally:
            ledger.close()

    def test_reconcile_leaves_a_pending_approval_to_the_host(
        self, kind_and_place: tuple[str, str], run_id: str
    ) -> None:
        """A call its tool deferred waits for a human's decision when another batch of the
        run crashes. Reconciling that batch (or the whole run, as `tinytools ledger
        reconcile` does) must not answer the pending call as interrupted: before the
        fix it did (and, its row released, the approval later ran it anyway: two answers
        for one call). It is left for the host's resume, which runs it once."""
        ran: list[str] = []
        tools = deferring_tools(ran)
        pending = [ToolCall("a", "wire", {"amount": 5})]
        context = Context(run_id=run_id)
        ledger = make_ledger(*kind_and_place)
        try:
            first = dispatch_sync(pending, tools, ledger=ledger, context=context)
            assert first.deferred is not None
            ledger.started(run_id, "b", "wire", {"amount": 9})  # a later batch, crashed
            decided = reconcile([], tools, ledger, run_id)
            assert ["b"] == [m.tool_call_id for m in decided.messages]
            assert () == decided.rerun
            assert ["b"] == [e.call_id for e in decided.events]  # type: ignore[attr-defined]
            resumed = dispatch_sync(
                pending,
                tools,
                ledger=ledger,
                context=context,
                approvals=first.deferred.approve_all(),
            )
            assert ["ok"] == [m.status for m in resumed.messages]
            assert ["wire:5"] == ran
            assert () == ledger.unresolved(run_id)
        finally:
            ledger.close()

    def test_a_pending_call_the_host_passes_is_asked_again(
        self, kind_and_place: tuple[str, str], run_id: str
    ) -> None:
        """The host lost its pending decisions in the crash and passes the deferred call to
        reconcile: it has not acted (its tool deferred it before acting), so it is listed
        to dispatch again — which asks for the approval again — not answered as
        interrupted."""
        ran: list[str] = []
        tools = deferring_tools(ran)
        pending = [ToolCall("a", "wire", {"amount": 5})]
        context = Context(run_id=run_id)
        ledger = make_ledger(*kind_and_place)
        try:
            dispatch_sync(pending, tools, ledger=ledger, context=context)
            decided = reconcile(pending, tools, ledger, run_id)
            assert () == decided.messages
            assert pending == list(decided.rerun)
            again = dispatch_sync(decided.rerun, tools, ledger=ledger, context=context)
            assert again.deferred is not None
            assert ["a"] == [c.id for c in again.deferred.approvals]
            assert [] == ran
        finally:
            ledger.close()


def test_cli_shows_a_pending_approval_and_leaves_it(
    kind_and_place: tuple[str, str], run_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tinytools ledger list` marks a call its tool deferred as released (it waits to
    start again), and `tinytools ledger reconcile` leaves it for the host's resume."""
    kind, where = kind_and_place
    tools = deferring_tools([])
    with make_ledger(kind, where) as ledger:
        dispatch_sync(
            [ToolCall("a", "wire", {"amount": 5})],
            tools,
            ledger=ledger,
            context=Context(run_id=run_id),
        )
        ledger.started(run_id, "b", "wire", {"amount": 9})  # crashed
    assert 0 == main(["ledger", "list", "--db", where, "--run", run_id])
    listed = capsys.readouterr().out
    assert "call a  tool wire" in listed
    assert "released: waits to start again" in listed.split("call b")[0]
    assert "released" not in listed.split("call b")[1]
    assert 0 == main(["ledger", "list", "--db", where, "--run", run_id, "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert {"a": True, "b": False} == {row["call_id"]: row["released"] for row in rows}
    assert 0 == main(["ledger", "reconcile", "--db", where, "--run", run_id, "--json"])
    assert {"rerun": [], "interrupted": ["b"], "waiting": ["a"]} == json.loads(
        capsys.readouterr().out
    )
    assert 0 == main(["ledger", "reconcile", "--db", where, "--run", run_id])
    out = capsys.readouterr().out
    assert "a (wire): deferred by its tool, waits for the host's decision" in out


class AlwaysFailingSettle:
    """A ledger whose every ``settled`` fails, as a locked database or a server that is
    down fails each write after waiting out its timeout."""

    def __init__(self) -> None:
        self.settles = 0

    def started(self, run_id: str, call_id: str, tool_name: str, arguments: object) -> None:
        pass

    def started_batch(self, run_id: str, calls: Sequence[Any]) -> frozenset[str]:
        return frozenset()

    def settled(self, run_id: str, call_id: str, status: str) -> None:
        self.settles += 1
        raise LedgerError("could not settle a call: database is locked")

    def unresolved(self, run_id: str | None = None) -> tuple[Any, ...]:
        return ()


def test_a_failing_ledger_is_not_waited_out_once_per_call() -> None:
    """Before the fix an aborting batch settled each call that never ran, each write
    waiting out the same lock (a 20-call batch with the default 30 s timeout: ten
    minutes). Now a write that fails while the batch is already aborting is its last."""
    ran: list[int] = []

    @tool
    def note(n: int) -> int:
        """Note."""
        ran.append(n)
        return n

    ledger = AlwaysFailingSettle()
    calls = [ToolCall(f"c{n}", "note", {"n": n}) for n in range(20)]
    with pytest.raises(DispatchAborted) as info:
        dispatch_sync(calls, [note], ledger=ledger)
    assert [0] == ran
    assert [c.id for c in calls] == [m.tool_call_id for m in info.value.result.messages]
    assert 2 == ledger.settles
    assert "database is locked" in info.value.reason


def test_a_locked_settle_says_what_became_of_the_call(tmp_path: Path) -> None:
    """The abort names the lock, the timeout, and that the call is left for reconcile."""
    path = tmp_path / "l.db"
    holder = sqlite3.connect(path, isolation_level=None)

    @tool
    def step(n: int) -> int:
        """Take the database's lock from another connection, then return."""
        holder.execute("BEGIN IMMEDIATE")
        return n

    try:
        with SqliteLedger(path, timeout=0.05) as ledger, pytest.raises(DispatchAborted) as info:
            dispatch_sync([ToolCall("c", "step", {"n": 1})], [step], ledger=ledger)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    reason = info.value.reason
    assert "timeout=0.05s" in reason
    assert "stays unresolved" in reason
    assert "reconcile the run" in reason
    assert ["ok"] == [m.status for m in info.value.result.messages]


class TestLedgerFileUnderTheWorker:
    """Before the fix a worker whose ledger file was deleted kept claiming calls in the
    unlinked file, which no other worker sees: a second worker opening the path made a
    new, empty ledger and ran the same call again."""

    @staticmethod
    def tools(ran: list[int]) -> list[Any]:
        @tool
        def charge(n: int) -> str:
            """Charge once."""
            ran.append(n)
            return "charged"

        return [charge]

    def test_deleted_file_refuses_the_batch(self, tmp_path: Path) -> None:
        ran: list[int] = []
        tools = self.tools(ran)
        path = tmp_path / "l.db"
        context = Context(run_id="r")
        call = [ToolCall("c1", "charge", {"n": 1})]
        with SqliteLedger(path) as worker:
            dispatch_sync(
                [ToolCall("c0", "charge", {"n": 0})], tools, ledger=worker, context=context
            )
            for leftover in tmp_path.glob("l.db*"):
                leftover.unlink()
            with pytest.raises(DispatchAborted) as info:
                dispatch_sync(call, tools, ledger=worker, context=context)
            assert "deleted or replaced" in info.value.reason
            assert "put the ledger file back" in info.value.reason
            with SqliteLedger(path) as other:  # a new empty file: it runs the call
                dispatch_sync(call, tools, ledger=other, context=context)
            with pytest.raises(DispatchAborted):  # still not the file it opened
                dispatch_sync(call, tools, ledger=worker, context=context)
        assert [0, 1] == ran

    def test_replaced_file_refuses_until_put_back(self, tmp_path: Path) -> None:
        ran: list[int] = []
        tools = self.tools(ran)
        path, aside = tmp_path / "l.db", tmp_path / "aside.db"
        context = Context(run_id="r")
        with SqliteLedger(path) as worker:
            dispatch_sync(
                [ToolCall("c0", "charge", {"n": 0})], tools, ledger=worker, context=context
            )
            with closing(sqlite3.connect(path)) as raw:  # checkpoint the WAL into the file
                raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            os.rename(path, aside)
            shutil.copy(aside, path)  # an equal copy, but not the file the worker opened
            with pytest.raises(DispatchAborted, match="deleted or replaced"):
                dispatch_sync(
                    [ToolCall("c1", "charge", {"n": 1})], tools, ledger=worker, context=context
                )
            os.replace(aside, path)  # put back: the worker goes on
            done = dispatch_sync(
                [ToolCall("c0", "charge", {"n": 0}), ToolCall("c1", "charge", {"n": 1})],
                tools,
                ledger=worker,
                context=context,
            )
        assert ["error", "ok"] == [m.status for m in done.messages]
        assert [0, 1] == ran

    def test_closed_ledger_starts_over_with_the_file_at_its_path(self, tmp_path: Path) -> None:
        path = tmp_path / "l.db"
        worker = SqliteLedger(path)
        worker.started("r", "a", "t", {})
        for leftover in tmp_path.glob("l.db*"):
            leftover.unlink()
        with pytest.raises(LedgerError, match="deleted or replaced"):
            worker.started("r", "b", "t", {})
        worker.close()
        worker.started("r", "b", "t", {})
        assert ["b"] == [e.call_id for e in worker.unresolved("r")]
        worker.close()

    def test_path_is_fixed_when_made(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A relative path names one file, whatever folder the process moves to later
        (before, a worker that changed folders reopened another, empty ledger)."""
        monkeypatch.chdir(tmp_path)
        ledger = SqliteLedger("l.db")
        (tmp_path / "elsewhere").mkdir()
        monkeypatch.chdir(tmp_path / "elsewhere")
        ledger.started("r", "a", "t", {})
        ledger.close()
        assert str(tmp_path / "l.db") == ledger.path
        assert not (tmp_path / "elsewhere" / "l.db").exists()


def test_cli_refuses_a_ledger_file_that_is_not_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before the fix `tinytools ledger list --db typo.db` made an empty ledger and said
    "No unresolved calls." — after a crash, the operator concluded nothing was uncertain."""
    missing = tmp_path / "typo.db"
    assert 1 == main(["ledger", "list", "--db", str(missing)])
    assert f"no ledger file at {missing}" in capsys.readouterr().err
    assert 1 == main(["ledger", "reconcile", "--db", str(missing), "--run", "r"])
    assert not missing.exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_child_forked_during_a_write_can_write(tmp_path: Path) -> None:
    """Before the fix a fork taken while another thread was inside a ledger write gave a
    child whose first write hung: it inherited the lock held, and SQLite's state of the
    open transaction (its own process holding the write lock). Now the fork waits for the
    write to end, and the child writes. (In a process of its own: the test's fork hook
    stays registered.)"""
    child = subprocess.run(
        [sys.executable, CHILDREN, "fork-during-write", str(tmp_path / "l.db")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    status, rows = json.loads(child.stdout)
    assert os.WIFEXITED(status), f"the child's write hung (status {status}): {child.stderr}"
    assert 0 == os.WEXITSTATUS(status)
    assert ["child", "parent"] == rows


def test_postgres_crashed_mid_batch_and_restarted(own_postgres: Any, run_id: str) -> None:
    """The server crashes (``pg_ctl stop -m immediate``) while a batch runs: the batch aborts
    at the next settle with every call answered and a reason saying what to do; once the
    server is back, the same ledger object connects again, no call of the batch runs
    again, and reconcile answers the ones left unresolved."""
    from tinytools.ledger import PostgresLedger

    ran: list[int] = []

    @tool
    def pay(n: int) -> str:
        """Pay (not idempotent); the second payment crashes the server after it."""
        ran.append(n)
        if n == 1:
            own_postgres.crash()
        return "paid"

    calls = [ToolCall(f"c{n}", "pay", {"n": n}) for n in range(4)]
    context = Context(run_id=run_id)
    with PostgresLedger(own_postgres.conninfo) as ledger:
        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(calls, [pay], ledger=ledger, context=context)
        assert [c.id for c in calls] == [m.tool_call_id for m in info.value.result.messages]
        assert ["ok", "ok", "interrupted", "interrupted"] == [
            m.status for m in info.value.result.messages
        ]
        assert "could not settle a call" in info.value.reason
        assert "reconcile the run" in info.value.reason
        with pytest.raises(DispatchAborted, match="could not connect"):  # still down
            dispatch_sync(calls, [pay], ledger=ledger, context=context)

        own_postgres.restart()
        again = dispatch_sync(calls, [pay], ledger=ledger, context=context)
        assert ["error"] * 4 == [m.status for m in again.messages]
        assert [0, 1] == ran
        decided = reconcile(calls, [pay], ledger, run_id)
        # c0's settle may or may not have survived the crash (it commits without waiting
        # for the WAL flush): settled, it is listed to re-dispatch, which refuses it.
        interrupted = [m.tool_call_id for m in decided.messages]
        assert ["c1", "c2", "c3"] == [c for c in interrupted if c != "c0"]
        assert sorted(interrupted + [c.id for c in decided.rerun]) == [c.id for c in calls]
        assert () == ledger.unresolved(run_id)
        resumed = dispatch_sync(decided.rerun, [pay], ledger=ledger, context=context)
        assert all(m.status == "error" for m in resumed.messages)
        assert [0, 1] == ran


def test_a_call_past_its_timeout_is_not_run_by_another_worker(
    kind_and_place: tuple[str, str], run_id: str
) -> None:
    """A sync tool outlives its ``tool_timeout``: the call is answered as timed out and
    settled while its thread still runs; another worker dispatching the same call does
    not run it a second time (the thread's late effect is the documented limit)."""
    import threading

    from tinytools import RunPolicy

    entered: list[int] = []
    hold = threading.Event()

    @tool
    def transfer(n: int) -> str:
        """Transfer (slow)."""
        entered.append(n)
        hold.wait(30)
        return "moved"

    calls = [ToolCall("t", "transfer", {"n": 1})]
    context = Context(run_id=run_id)
    policy = RunPolicy(tool_timeout=0.05)
    first, second = make_ledger(*kind_and_place), make_ledger(*kind_and_place)
    try:
        timed_out = dispatch_sync(calls, [transfer], ledger=first, context=context, policy=policy)
        assert "timed out" in str(timed_out.messages[0].content)
        assert () == first.unresolved(run_id)
        other = dispatch_sync(calls, [transfer], ledger=second, context=context, policy=policy)
        assert ["error"] == [m.status for m in other.messages]
        assert "already started" in str(other.messages[0].content)
        assert [1] == entered
    finally:
        hold.set()
        first.close()
        second.close()


def test_approvals_resumed_by_many_workers_at_once_run_once(
    kind_and_place: tuple[str, str], run_id: str, tmp_path: Path
) -> None:
    """Ten calls their tool deferred for approval; four processes resume the same approved
    batch at the same moment: each call runs exactly once between them."""
    from collections import Counter

    kind, where = kind_and_place
    effects = str(tmp_path / "effects")
    with make_ledger(kind, where) as ledger:
        first = dispatch_sync(
            ledger_children.APPROVAL_CALLS,
            ledger_children.approval_tools(effects),
            ledger=ledger,
            context=Context(run_id=run_id),
        )
    assert first.deferred is not None
    assert 10 == len(first.deferred.approvals)
    command = [sys.executable, CHILDREN, "resume", kind, where, run_id, effects]
    ran = ledger_children.race([command] * 4, timeout=60)
    every = Counter(call.id for call in ledger_children.APPROVAL_CALLS)
    assert every == Counter(ledger_children.effects(effects))
    assert every == Counter(ran)


def test_postgres_table_dropped_under_the_workers(fresh_postgres: str, run_id: str) -> None:
    """The ledger's table is dropped while a worker uses it: the batch is refused (nothing
    runs), and keeps being refused after a reconnect — the rows that kept calls from
    running twice are gone, and the message says how to go on."""
    import psycopg

    from tinytools.ledger import PostgresLedger

    ran: list[int] = []

    @tool
    def pay(n: int) -> str:
        """Pay."""
        ran.append(n)
        return "paid"

    context = Context(run_id=run_id)
    with PostgresLedger(fresh_postgres) as ledger:
        dispatch_sync([ToolCall("c0", "pay", {"n": 0})], [pay], ledger=ledger, context=context)
        with psycopg.connect(fresh_postgres, autocommit=True) as admin:
            admin.execute("DROP TABLE tinytools_effects")
        for _ in range(2):
            with pytest.raises(DispatchAborted) as info:
                dispatch_sync(
                    [ToolCall("c0", "pay", {"n": 0})], [pay], ledger=ledger, context=context
                )
            assert "the table tinytools_effects is gone" in info.value.reason
            ledger.close()
    assert [0] == ran
