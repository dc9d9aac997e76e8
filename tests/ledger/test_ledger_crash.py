"""Crash tests for `tinytools.ledger`: a real child process, killed with SIGKILL.

The child dispatches ``lookup`` (read-only, replay-safe) then ``pay`` (not idempotent)
with a ledger and is killed at each point of a call's life: before the batch's started
rows commit, after they commit and before any tool runs, while ``pay`` runs, and after
``pay`` returns and before its row is settled. The parent then reconciles from a fresh
ledger, dispatches what reconcile left for a re-run, and tries the whole batch once more:
``pay`` never takes effect twice, and a replay-safe call is run again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import ledger_children as children
import pytest
from conftest import make_ledger

from tinytools import Context, DeferredToolRequests, dispatch_sync
from tinytools.ledger import reconcile

CHILD = str(Path(children.__file__))

# point -> (unresolved call ids after the kill, reconcile's re-run ids, interrupted ids,
#           pay's effects when killed)
EXPECTED = {
    "before-commit": (set(), ["c1", "c2"], [], 0),
    "after-commit": ({"c1", "c2"}, ["c1"], ["c2"], 0),
    "in-tool": ({"c2"}, ["c1"], ["c2"], 1),
    "before-settle": ({"c2"}, ["c1"], ["c2"], 1),
}


def run_until(
    point: str, kind: str, where: str, run_id: str, effects: str, role: str = "crash"
) -> None:
    """Start the child, wait until it reaches ``point``, and SIGKILL it."""
    child = subprocess.Popen(
        [sys.executable, CHILD, role, kind, where, run_id, point, effects],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    guard = threading.Timer(120, child.kill)  # a child that never gets there fails the test
    guard.start()
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert "READY\n" == line, f"child did not reach {point}: {child.communicate()[1]}"
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    finally:
        guard.cancel()
        if child.poll() is None:
            child.kill()
        child.communicate()
    assert -signal.SIGKILL == child.returncode


@pytest.mark.parametrize("point", children.POINTS)
def test_killed_at_each_point(
    point: str, kind_and_place: tuple[str, str], run_id: str, tmp_path: Path
) -> None:
    """After a SIGKILL at each point, reconcile re-runs the replay-safe call, answers the
    payment as interrupted when it may have happened, and the payment never runs twice."""
    kind, where = kind_and_place
    effects = str(tmp_path / "effects")
    run_until(point, kind, where, run_id, effects)
    unresolved, rerun_ids, interrupted_ids, paid = EXPECTED[point]
    pays = lambda: [e for e in children.effects(effects) if e.startswith("pay")]  # noqa: E731
    assert paid == len(pays())

    ledger = make_ledger(kind, where)
    tools = children.crash_tools(effects, None)
    context = Context(run_id=run_id)
    try:
        assert unresolved == {entry.call_id for entry in ledger.unresolved(run_id)}
        decided = reconcile(children.CRASH_CALLS, tools, ledger, run_id)
        assert rerun_ids == [call.id for call in decided.rerun]
        assert interrupted_ids == [m.tool_call_id for m in decided.messages]
        assert all(m.status == "interrupted" and m.is_error for m in decided.messages)
        outcomes = {e.call_id: e.outcome for e in decided.events}  # type: ignore[union-attr]
        assert {c: ("rerun" if c in rerun_ids else "interrupted") for c in unresolved} == outcomes

        resumed = dispatch_sync(decided.rerun, tools, ledger=ledger, context=context)
        assert ["ok"] * len(rerun_ids) == [m.status for m in resumed.messages]
        assert () == ledger.unresolved(run_id)

        # The model (or a confused host) sends the whole batch again: nothing runs twice.
        before = children.effects(effects)
        again = dispatch_sync(children.CRASH_CALLS, tools, ledger=ledger, context=context)
        assert ["error", "error"] == [m.status for m in again.messages]
        assert before == children.effects(effects)
        assert 1 >= len(pays())
        assert (1 if point != "after-commit" else 0) == len(pays())
    finally:
        ledger.close()


@pytest.mark.parametrize("point", ["after-commit", "in-tool", "before-settle"])
def test_operator_reconciles_from_the_command_line(
    point: str,
    kind_and_place: tuple[str, str],
    run_id: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """After a SIGKILL, `tinytools ledger list` shows the calls whose effect is uncertain,
    `tinytools ledger reconcile` settles the payment as interrupted and releases the
    replay-safe lookup, and the payment never runs again."""
    import json

    from tinytools._cli import main

    kind, where = kind_and_place
    effects = str(tmp_path / "effects")
    run_until(point, kind, where, run_id, effects)
    unresolved, rerun_ids, interrupted_ids, paid = EXPECTED[point]

    assert 0 == main(["ledger", "list", "--db", where, "--run", run_id, "--json"])
    assert unresolved == {row["call_id"] for row in json.loads(capsys.readouterr().out)}
    target = "ledger_children:RECONCILE_TOOLS"
    command = ["ledger", "reconcile", "--db", where, "--run", run_id, "--tools", target]
    assert 0 == main([*command, "--json"])
    decided = json.loads(capsys.readouterr().out)
    rerun = [c for c in rerun_ids if c in unresolved]
    assert {"rerun": rerun, "interrupted": interrupted_ids, "waiting": []} == decided
    assert 0 == main(["ledger", "list", "--db", where, "--run", run_id, "--json"])
    released = [row["call_id"] for row in json.loads(capsys.readouterr().out)]
    assert [c for c in rerun_ids if c in unresolved] == released  # waits for its re-run

    ledger = make_ledger(kind, where)
    try:
        tools = children.crash_tools(effects, None)
        again = dispatch_sync(
            children.CRASH_CALLS, tools, ledger=ledger, context=Context(run_id=run_id)
        )
        assert paid == len([e for e in children.effects(effects) if e.startswith("pay")])
        assert "error" == again.messages[1].status  # the payment: never again
        assert () == ledger.unresolved(run_id)
    finally:
        ledger.close()


@pytest.mark.parametrize("point", children.DEFERRAL_POINTS)
def test_killed_while_calls_wait_for_approval(
    point: str, kind_and_place: tuple[str, str], run_id: str, tmp_path: Path
) -> None:
    """Killed while its tool defers the calls: before the first deferred call's row is
    released, every call of the batch may have acted as far as the ledger knows (their
    rows are started) — reconcile answers them as interrupted and none runs; once the
    batch is deferred, the calls wait for the human's decision — reconcile leaves them,
    and the approval runs each once."""
    kind, where = kind_and_place
    effects = str(tmp_path / "effects")
    run_until(point, kind, where, run_id, effects, role="defer-crash")
    ids = [call.id for call in children.APPROVAL_CALLS]
    tools = children.approval_tools(effects)
    ledger = make_ledger(kind, where)
    try:
        decided = reconcile([], tools, ledger, run_id)
        interrupted = ids if point == "before-release" else []
        assert interrupted == [m.tool_call_id for m in decided.messages]
        assert () == decided.rerun
        approved = DeferredToolRequests((), children.APPROVAL_CALLS, {}).approve_all()
        context = Context(run_id=run_id)
        resumed = dispatch_sync(
            children.APPROVAL_CALLS, tools, ledger=ledger, context=context, approvals=approved
        )
        ran = [m.tool_call_id for m in resumed.messages if m.status == "ok"]
        assert [i for i in ids if i not in interrupted] == ran
        assert ran == children.effects(effects)
        assert () == ledger.unresolved(run_id)
    finally:
        ledger.close()
