"""Child processes for the ledger tests: a batch killed at a chosen point, and a worker.

``python ledger_children.py crash KIND WHERE RUN_ID POINT EFFECTS`` dispatches the
crash batch (``lookup`` then ``pay``) with a ledger and, at POINT, prints ``READY`` and
blocks until the parent kills it. ``python ledger_children.py worker KIND WHERE RUN_ID
EFFECTS INDEX`` prints ``READY`` once connected, waits for a line on stdin, dispatches
the 50 ``charge`` calls in batches of 5 (rotated by INDEX, so workers interleave) and
prints the ids it ran as JSON. Every side effect is a line appended to EFFECTS.
``python ledger_children.py resume KIND WHERE RUN_ID EFFECTS`` resumes the 10 deferred
``wire`` calls, all approved, once a line arrives on stdin, and prints the ids it ran.
``python ledger_children.py defer-crash KIND WHERE RUN_ID POINT EFFECTS`` dispatches that
batch unapproved (every call deferred by its tool) and waits to be killed at POINT.
``python ledger_children.py fork-during-write PATH`` forks while another thread is inside
a ledger write, and prints the child's exit status and the rows written, as JSON.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

from tinytools import (
    ApprovalRequired,
    Context,
    DeferredToolRequests,
    Inject,
    RunContext,
    ToolCall,
    ToolPolicy,
    dispatch_sync,
    tool,
)
from tinytools.ledger import PostgresLedger, SqliteLedger

POINTS = ("before-commit", "after-commit", "in-tool", "before-settle")
WORKER_CALLS = 50


def effect(path: str, text: str) -> None:
    """Append one line (one write to an O_APPEND file: lines of processes never mix)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{text}\n".encode())
    finally:
        os.close(fd)


def race(commands: list[list[str]], timeout: float = 120) -> list[str]:
    """Start a child per command (each a ``worker`` or ``resume`` role), wait until every
    one is connected (``READY``), tell them all to go at once, and return the call ids
    they ran, together. A child that fails fails the caller's test with its stderr."""
    import subprocess

    children = [
        subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]
    ran: list[str] = []
    try:
        for child in children:  # every one connected before any starts: a real race
            assert child.stdout is not None
            assert "READY\n" == child.stdout.readline(), child.communicate()[1]
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        for child in children:
            out, err = child.communicate(timeout=timeout)
            assert 0 == child.returncode, err
            ran.extend(json.loads(out))
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.communicate()
    return ran


def effects(path: str) -> list[str]:
    try:
        with open(path) as lines:
            return lines.read().split()
    except FileNotFoundError:
        return []


def crash_tools(effects_path: str, point: str | None) -> list[Any]:
    @tool(policy=ToolPolicy.read_only())
    def lookup(key: str) -> str:
        """Read a value."""
        effect(effects_path, f"lookup:{key}")
        return key.upper()

    @tool
    def pay(amount: int) -> str:
        """Send a payment (not idempotent)."""
        effect(effects_path, f"pay:{amount}")
        if point == "in-tool":
            hold()
        return f"paid {amount}"

    return [lookup, pay]


#: The crash batch's tools for ``tinytools ledger reconcile --tools`` (never run there).
RECONCILE_TOOLS = crash_tools(os.devnull, None)

CRASH_CALLS = (
    ToolCall("c1", "lookup", {"key": "a"}),
    ToolCall("c2", "pay", {"amount": 5}),
)


def hold() -> None:
    """Tell the parent this point is reached, and wait to be killed."""
    print("READY", flush=True)
    threading.Event().wait()


def crashing_ledger(kind: str, where: str, point: str) -> Any:
    base: Any = SqliteLedger if kind == "sqlite" else PostgresLedger

    class Crashing(base):  # type: ignore[misc, valid-type]
        def _commit(self, connection: Any) -> None:
            if point == "before-commit":
                hold()
            super()._commit(connection)

        def started_batch(self, run_id: str, calls: Any) -> frozenset[str]:
            refused: frozenset[str] = super().started_batch(run_id, calls)
            if point == "after-commit":
                hold()
            return refused

        def settled(self, run_id: str, call_id: str, status: Any) -> None:
            if point == "before-settle" and call_id == "c2":
                hold()
            super().settled(run_id, call_id, status)

    return Crashing(where)


def crash(kind: str, where: str, run_id: str, point: str, effects_path: str) -> None:
    ledger = crashing_ledger(kind, where, point)
    tools = crash_tools(effects_path, point)
    dispatch_sync(CRASH_CALLS, tools, ledger=ledger, context=Context(run_id=run_id))
    print("FINISHED", flush=True)


def worker_calls() -> list[ToolCall]:
    return [ToolCall(f"w{n}", "charge", {"n": n}) for n in range(WORKER_CALLS)]


def worker_tools(effects_path: str) -> list[Any]:
    @tool
    def charge(n: int) -> str:
        """Charge once (not idempotent)."""
        effect(effects_path, f"w{n}")
        return "charged"

    return [charge]


def work(ledger: Any, run_id: str, effects_path: str, index: int) -> list[str]:
    """Dispatch the worker batch in 5-call batches, rotated by ``index``; the ids that ran."""
    calls = worker_calls()
    shift = (index * 7) % len(calls)
    calls = calls[shift:] + calls[:shift]
    tools = worker_tools(effects_path)
    ran = []
    for start in range(0, len(calls), 5):
        part = calls[start : start + 5]
        result = dispatch_sync(part, tools, ledger=ledger, context=Context(run_id=run_id))
        assert [m.tool_call_id for m in result.messages] == [c.id for c in part]
        ran.extend(m.tool_call_id for m in result.messages if m.status == "ok")
    return ran


def worker(kind: str, where: str, run_id: str, effects_path: str, index: int) -> None:
    ledger = SqliteLedger(where) if kind == "sqlite" else PostgresLedger(where)
    ledger.unresolved(run_id)  # connected, schema made: now wait for the others
    print("READY", flush=True)
    sys.stdin.readline()
    print(json.dumps(work(ledger, run_id, effects_path, index)), flush=True)


APPROVAL_CALLS = tuple(ToolCall(f"a{n}", "wire", {"n": n}) for n in range(10))


def approval_tools(effects_path: str) -> list[Any]:
    @tool
    def wire(ctx: Inject[RunContext], n: int) -> str:
        """Wire money once approved (asks from inside, before acting)."""
        if not ctx.approved:
            raise ApprovalRequired({"n": n})
        effect(effects_path, f"a{n}")
        return "sent"

    return [wire]


def resume(kind: str, where: str, run_id: str, effects_path: str) -> None:
    """Resume the deferred approval batch, every call approved (the same decisions in every
    worker); print the ids that ran."""
    ledger = SqliteLedger(where) if kind == "sqlite" else PostgresLedger(where)
    ledger.unresolved(run_id)
    decided = DeferredToolRequests((), APPROVAL_CALLS, {}).approve_all()
    print("READY", flush=True)
    sys.stdin.readline()
    result = dispatch_sync(
        APPROVAL_CALLS,
        approval_tools(effects_path),
        ledger=ledger,
        context=Context(run_id=run_id),
        approvals=decided,
    )
    assert [m.tool_call_id for m in result.messages] == [c.id for c in APPROVAL_CALLS]
    print(json.dumps([m.tool_call_id for m in result.messages if m.status == "ok"]), flush=True)


DEFERRAL_POINTS = ("before-release", "after-deferral")


def defer_crash(kind: str, where: str, run_id: str, point: str, effects_path: str) -> None:
    """Dispatch the approval batch (its tool defers every call before acting) and wait to
    be killed at POINT: before the first call's row is released, or once the batch is
    deferred (the host waits for a human's decision)."""
    base: Any = SqliteLedger if kind == "sqlite" else PostgresLedger

    class Crashing(base):  # type: ignore[misc, valid-type]
        def release(self, run_id: str, call_id: str) -> None:
            if point == "before-release":
                hold()
            super().release(run_id, call_id)

    ledger = Crashing(where)
    result = dispatch_sync(
        APPROVAL_CALLS, approval_tools(effects_path), ledger=ledger, context=Context(run_id=run_id)
    )
    assert result.deferred is not None
    hold()


def fork_during_write(where: str) -> None:
    """Fork while another thread is inside a write (its transaction open), let the
    write end, and write from the child; print the child's exit status."""
    import signal
    import warnings

    warnings.simplefilter("ignore", DeprecationWarning)  # (fork with threads, 3.12+)
    inside, finish = threading.Event(), threading.Event()

    class Pausing(SqliteLedger):
        def _commit(self, connection: Any) -> None:
            if threading.current_thread() is not threading.main_thread():
                inside.set()
                finish.wait()
            super()._commit(connection)

    ledger = Pausing(where)
    writer = threading.Thread(target=ledger.started, args=("r", "parent", "t", {}))
    writer.start()
    inside.wait()
    # Let the write go on as the fork begins. (Hooks registered later run first: this one
    # runs before the ledger's own, which waits for the write to end; without that, the
    # fork happens in the middle of the transaction.)
    os.register_at_fork(before=finish.set)
    child = os.fork()
    if child == 0:
        signal.alarm(10)  # a child whose write hangs dies of SIGALRM
        ledger.started("r", "child", "t", {})
        os._exit(0)
    writer.join()
    _, status = os.waitpid(child, 0)
    print(json.dumps([status, sorted(e.call_id for e in ledger.unresolved("r"))]), flush=True)


if __name__ == "__main__":
    role, *rest = sys.argv[1:]
    if role == "crash":
        crash(*rest)
    elif role == "fork-during-write":
        fork_during_write(*rest)
    elif role == "resume":
        resume(*rest)
    elif role == "defer-crash":
        defer_crash(*rest)
    else:
        worker(*rest[:4], int(rest[4]))
