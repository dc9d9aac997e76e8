"""tinytools under real multi-threaded, re-entrant and forking hosts.

A web server's sync endpoints call ``dispatch_sync`` from a thread pool, several event
loops run in several threads, tools dispatch from inside tools, and worker processes are
forked from a parent that has already dispatched. These tests share one registry, one
handler, one ledger across threads and processes, and check that every call is answered
once, with the right answer, and that nothing hangs. Threads meet on barriers and events,
never on sleeps; ``sys.setswitchinterval`` is lowered to make the interpreter switch
threads often, and restored.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio.lowlevel
import pytest
import trio

from tinytools import (
    Allow,
    Artifact,
    Cancellation,
    Context,
    DispatchAborted,
    DispatchResult,
    Inject,
    MemoryArtifactStore,
    Registry,
    RunPolicy,
    Tool,
    ToolCall,
    ToolResult,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools._runtime import threads
from tinytools.discovery import Discovery
from tinytools.events import ToolStarted
from tinytools.ledger import SqliteLedger
from tinytools.toolsets import Combined

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")


def _run_script(script: str) -> None:
    """Run ``script`` in a fresh interpreter; it exits 0 when all is well (1 when the
    check it makes fails), and never hangs past its own timeouts."""
    done = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# A batch that needs dispatch_sync's event loop (an async tool) and wakes it from a tool
# thread (a blocking tool): the loop must hear its wake-up pipe.
_LOOP_BATCH = """
import asyncio, faulthandler, os, sys, threading
from tinytools import Registry, ToolCall, dispatch_sync, tool

@tool
async def double(n: int) -> int:
    \"\"\"Twice n, from the event loop.\"\"\"
    await asyncio.sleep(0)
    return 2 * n

@tool(blocking=True)
def triple(n: int) -> int:
    \"\"\"Thrice n, from a tool thread.\"\"\"
    return 3 * n

TOOLS = Registry.of(double, triple)

def answers() -> list[str]:
    batch = [ToolCall("a", "double", {"n": 2}), ToolCall("b", "triple", {"n": 2})]
    return [m.content for m in dispatch_sync(batch, TOOLS).messages]

def answered_in_time() -> bool:
    \"\"\"Whether this thread's next batch is answered rightly within 10 s (a hang ends the
    process with a traceback instead).\"\"\"
    faulthandler.dump_traceback_later(10, exit=True)
    try:
        return answers() == ["4", "6"]
    finally:
        faulthandler.cancel_dump_traceback_later()
"""

FORKED_CHILD_EXITS = (
    _LOOP_BATCH
    + """
assert answers() == ["4", "6"]  # the main thread now has its event loop
child = os.fork()
if child == 0:
    ok = answers() == ["4", "6"]  # the child's own loop
    sys.exit(0 if ok else 1)  # a normal exit: the child's copies are closed
_, status = os.waitpid(child, 0)
ok = os.waitstatus_to_exitcode(status) == 0 and answered_in_time()
os._exit(0 if ok else 1)
"""
)


@needs_fork
def test_a_forked_child_leaves_the_parents_event_loop_working() -> None:
    """Defect: a child forked after ``dispatch_sync`` ran an async tool shared its parent's
    epoll instance; closing its copy of the loop at exit unregistered the parent's wake-up
    pipe, and the parent's next batch with a tool thread hung forever."""
    _run_script(FORKED_CHILD_EXITS)


FORKED_BESIDE_A_THREAD = (
    _LOOP_BATCH
    + """
go = threading.Event()
first = []
def serve():
    first.append(answers())  # this thread's loop
    go.wait()
    first.append(answers())
server = threading.Thread(target=serve, daemon=True)
server.start()
while not first:  # (the child must be forked after the thread made its loop)
    server.join(0.01)
child = os.fork()
if child == 0:
    sys.exit(0)  # the child drops the locals of the threads it did not inherit
_, status = os.waitpid(child, 0)
go.set()
faulthandler.dump_traceback_later(10, exit=True)
server.join()
os._exit(0 if first == [["4", "6"], ["4", "6"]] else 1)
"""
)


@needs_fork
def test_a_forked_child_leaves_other_threads_event_loops_working() -> None:
    """Defect: a forked child dropped the loops of the parent's other threads (their
    locals are cleared in the child) and closed them, unregistering those threads'
    wake-up pipes in the parent."""
    _run_script(FORKED_BESIDE_A_THREAD)


BUSIER_THAN_THE_POOL = """
import asyncio, sys, threading
from tinytools import Registry, ToolCall, dispatch, tool
from tinytools._runtime.threads import MAX_THREADS

CALLS = MAX_THREADS + 6  # more blocking calls at once than there are tool threads
submitted, running, gate = threading.Semaphore(0), threading.Semaphore(0), threading.Event()

@tool(blocking=True)
def lookup(n: int) -> int:
    \"\"\"A lookup that blocks until the gate opens.\"\"\"
    running.release()
    gate.wait(30)
    return n

def counted(event) -> None:
    if type(event).__name__ == "ToolStarted":  # (its thread is asked for next, at once)
        submitted.release()

def open_the_gate() -> None:  # once every call asked for a thread and every thread is busy
    for _ in range(CALLS):
        submitted.acquire()
    for _ in range(MAX_THREADS):
        running.acquire()
    gate.set()

async def server() -> list[str]:
    opener = asyncio.get_running_loop().run_in_executor(None, open_the_gate)
    tools = Registry.of(lookup)
    requests = [dispatch([ToolCall(f"c{n}", "lookup", {"n": n})], tools, on_event=counted)
                for n in range(CALLS)]
    results = await asyncio.gather(*requests)
    await opener
    return [result.messages[0].content for result in results]

sys.exit(0 if asyncio.run(server()) == [str(n) for n in range(CALLS)] else 1)
"""


def test_more_blocking_calls_at_once_than_tool_threads_wait_for_one() -> None:
    """Defect: an async server running more blocking calls at once than the pool's 64
    threads answered the extra calls at once with "no thread is free ... make the hung
    tools observe their Cancellation" (35 of 100 requests, no tool hung). They now wait
    in line for a thread, within their timeout."""
    _run_script(BUSIER_THAN_THE_POOL)


EVERY_THREAD_HUNG = """
import asyncio, threading
from tinytools import RunPolicy, ToolCall, dispatch, dispatch_sync, tool
from tinytools._runtime.threads import MAX_THREADS

gate = threading.Event()

@tool(blocking=True)
def hang() -> str:
    \"\"\"Hangs until the gate opens.\"\"\"
    gate.wait(60)
    return "late"

@tool(blocking=True)
def lookup() -> str:
    \"\"\"A lookup with no timeout of its own.\"\"\"
    return "found"

hung = [ToolCall(f"h{n}", "hang", {}) for n in range(MAX_THREADS)]
policy = RunPolicy(tool_timeout=0.05, max_concurrency=MAX_THREADS)
timed_out = asyncio.run(dispatch(hung, [hang], policy=policy))  # every thread left hung
assert all("timed out" in m.content for m in timed_out.messages), timed_out

ask = [ToolCall("q", "lookup", {})]
for answer in (dispatch_sync(ask, [lookup]), asyncio.run(dispatch(ask, [lookup]))):
    message = answer.messages[0]
    assert message.is_error, message
    assert "held by tools nobody waits for any more" in message.content, message

gate.set()  # the tools return; their threads serve again
for _ in range(1000):
    if dispatch_sync(ask, [lookup]).messages[0].content == "found":
        break
    threading.Event().wait(0.01)
else:
    raise SystemExit("the freed threads never served again")
"""


def test_a_call_with_no_timeout_is_answered_at_once_when_every_tool_thread_is_hung() -> None:
    """Defect: once every tool thread was held by a tool that outlived its timeout, a
    blocking call with no timeout waited in line for ever (``dispatch_sync`` never
    returned). It is answered at once with an error naming the fix."""
    _run_script(EVERY_THREAD_HUNG)


@pytest.mark.parametrize("runner", ["sync", "asyncio", "trio"])
def test_a_call_in_a_batch_with_a_deadline_waits_within_it_when_every_thread_is_hung(
    runner: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defect: under ``await dispatch``, a blocking call with no timeout of its own in a
    batch with a deadline was refused at once when every tool thread was held by a hung
    tool, as if it could wait for ever (``dispatch_sync`` waited in line within the
    deadline, as a timed call does): a thread coming free in time never served it."""
    pool = threads.ThreadPool(max_threads=1, max_idle=1)
    monkeypatch.setattr(threads, "THREADS", pool)
    gate, answered = threading.Event(), threading.Event()
    assert pool.run(gate.wait, {"timeout": 30}, 0.01) == (False, None)  # its thread hung

    def free_the_thread_once_a_call_waits() -> None:
        for _ in range(10_000):  # (polled: nothing signals a job joining the line)
            if pool._queue or answered.is_set():
                break
            threading.Event().wait(0.001)
        gate.set()

    opener = threading.Thread(target=free_the_thread_once_a_call_waits)
    opener.start()

    @tool(blocking=True)
    def lookup() -> str:
        """A lookup with no timeout of its own."""
        return "found"

    calls, policy = [ToolCall("q", "lookup", {})], RunPolicy(deadline=30)
    try:
        if runner == "sync":
            result = dispatch_sync(calls, [lookup], policy=policy)
        elif runner == "asyncio":
            result = asyncio.run(dispatch(calls, [lookup], policy=policy))
        else:
            result = trio.run(functools.partial(dispatch, calls, [lookup], policy=policy))
    finally:
        answered.set()
        opener.join()
    assert result.messages[0].content == "found"


def test_a_call_still_in_line_at_the_deadline_is_answered_alike_by_every_runner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Defect: a call still waiting in line for a tool thread when the batch's deadline
    passed was answered by ``dispatch_sync`` as the tool's failure ("PoolExhausted: no
    thread came free"), and by ``await dispatch`` as interrupted by the deadline. Every
    runner now answers it as interrupted, with the same events."""
    pool = threads.ThreadPool(max_threads=1, max_idle=1)
    monkeypatch.setattr(threads, "THREADS", pool)
    gate = threading.Event()
    assert pool.run(gate.wait, {"timeout": 30}, 0.01) == (False, None)  # its thread hung

    @tool(blocking=True)
    def lookup() -> str:
        """A lookup with no timeout of its own."""
        return "found"

    calls = [ToolCall("a", "lookup", {}), ToolCall("b", "lookup", {})]
    policy = RunPolicy(deadline=0.05)  # (the wait under test: nothing frees the thread)
    answers = []
    try:
        for runner in ("sync", "asyncio", "trio"):
            events: list[object] = []
            run = functools.partial(
                dispatch, calls, [lookup], policy=policy, on_event=events.append
            )
            if runner == "sync":
                result = dispatch_sync(calls, [lookup], policy=policy, on_event=events.append)
            elif runner == "asyncio":
                result = asyncio.run(run())
            else:
                result = trio.run(run)
            kinds = [type(event).__name__ for event in events]
            answers.append(([(m.status, m.content) for m in result.messages], kinds))
    finally:
        gate.set()
    assert answers[0][0][0] == (
        "interrupted",
        "Tool call interrupted: the batch was past its deadline.",
    )
    assert answers[0] == answers[1] == answers[2]


FORKED_WORKERS_SHARE_A_LEDGER = """
import os, sys, tempfile
from tinytools import Registry, ToolCall, dispatch_sync, tool
from tinytools.ledger import SqliteLedger

@tool
def charge(amount: int) -> str:
    \"\"\"Charges amount.\"\"\"
    return f"charged {amount}"

TOOLS = Registry.of(charge)
path = os.path.join(tempfile.mkdtemp(), "effects.db")

def request() -> str:  # a new request: a new run (no context given), a provider's call id
    with SqliteLedger(path) as ledger:
        result = dispatch_sync([ToolCall("call_1", "charge", {"amount": 5})], TOOLS, ledger=ledger)
    return result.messages[0].content

assert request() == "charged 5"
child = os.fork()
if child == 0:
    os._exit(0 if request() == "charged 5" else 1)
_, status = os.waitpid(child, 0)
os._exit(0 if request() == "charged 5" and os.waitstatus_to_exitcode(status) == 0 else 1)
"""


@needs_fork
def test_forked_workers_sharing_a_ledger_draw_their_own_run_ids() -> None:
    """Defect: a forked child drew the same default run ids as its parent (a per-process
    prefix and counter, copied by the fork), so a ledger shared by the two refused the
    child's new request as "already started" by the parent's."""
    _run_script(FORKED_WORKERS_SHARE_A_LEDGER)


FORKED_BESIDE_BUSY_THREADS = """
import faulthandler, os, sys, threading
from tinytools import ToolCall, dispatch_sync, tool

@tool
def echo(n: int) -> int:
    \"\"\"n.\"\"\"
    return n

stop = threading.Event()

def serve() -> None:  # a new list of tools per request: the engine remembers each
    while not stop.is_set():
        dispatch_sync([ToolCall("c", "echo", {"n": 1})], [echo])

servers = [threading.Thread(target=serve) for _ in range(4)]
for server in servers:
    server.start()
sys.setswitchinterval(1e-6)
ok = True
for _ in range(20):
    child = os.fork()
    if child == 0:
        faulthandler.dump_traceback_later(10, exit=True)  # a hang: exit code 1
        result = dispatch_sync([ToolCall("c", "echo", {"n": 2})], [echo])
        os._exit(0 if result.messages[0].content == "2" else 2)
    _, status = os.waitpid(child, 0)
    ok = os.waitstatus_to_exitcode(status) == 0
    if not ok:
        break
stop.set()
for server in servers:
    server.join()
os._exit(0 if ok else 1)
"""


@needs_fork
def test_a_child_forked_beside_busy_dispatching_threads_can_dispatch() -> None:
    """Defect: a child forked while another thread was storing a memo entry (the engine's
    memos are written under one lock) hung on its first dispatch, waiting for a lock held
    by a thread the child does not have."""
    _run_script(FORKED_BESIDE_BUSY_THREADS)


# --- dispatch_sync inside a running event loop ------------------------------------------


@tool
async def echo(n: int) -> int:
    """n, from an event loop (any: anyio's checkpoint runs under asyncio and trio)."""
    await anyio.lowlevel.checkpoint()
    return n


ECHO = Registry.of(echo)


def test_dispatch_sync_in_a_running_loop_refuses_before_the_ledger_records_anything() -> None:
    """Defect: refused inside a running asyncio loop only after the ledger had recorded
    the batch as started; retried with ``await dispatch`` as the error advised, the call
    (which never ran) was refused as already started."""
    ledger = SqliteLedger(":memory:")
    context = Context(run_id="run-1")
    call = ToolCall("c1", "echo", {"n": 7})

    async def endpoint() -> str:
        with pytest.raises(RuntimeError, match=r"running asyncio event loop.*await tinytools"):
            dispatch_sync([call], ECHO, ledger=ledger, context=context)
        assert ledger.unresolved() == ()
        retried = await dispatch([call], ECHO, ledger=ledger, context=context)
        return retried.messages[0].content

    with ledger:
        assert asyncio.run(endpoint()) == "7"


def test_dispatch_sync_in_a_trio_run_refuses_a_batch_that_needs_a_loop() -> None:
    """Defect: inside a trio run, dispatch_sync ran an asyncio loop inside the trio task;
    anyio saw trio there and an anyio tool failed with "Task got bad yield", which the
    model was told as the tool's error."""

    async def endpoint() -> None:
        with pytest.raises(RuntimeError, match=r"running trio event loop.*await tinytools"):
            dispatch_sync([ToolCall("c1", "echo", {"n": 7})], ECHO)

    trio.run(endpoint)


def test_a_tool_that_dispatch_syncs_inside_its_batchs_loop_aborts_the_batch() -> None:
    """A tool running on its batch's event loop that calls dispatch_sync for a batch that
    needs one made a tool error telling the model to "await tinytools.dispatch": the
    host's mistake, which the model cannot fix. The batch aborts instead, naming the fix,
    with every call answered."""

    @tool
    def relay(n: int) -> str:
        """Asks echo for n (inline, on the outer batch's loop)."""
        return dispatch_sync([ToolCall("inner", "echo", {"n": n})], ECHO).messages[0].content

    batch = [ToolCall("a", "relay", {"n": 1}), ToolCall("b", "echo", {"n": 2})]
    with pytest.raises(DispatchAborted, match=r"`relay` called dispatch_sync.*blocking=True"):
        dispatch_sync(batch, Registry.of(relay, echo))
    with pytest.raises(DispatchAborted) as aborted:
        asyncio.run(dispatch(batch, Registry.of(relay, echo)))
    assert [m.tool_call_id for m in aborted.value.result.messages] == ["a", "b"]


def test_a_sync_tool_that_dispatches_runs_when_declared_blocking() -> None:
    """The refusal's advice works: a blocking tool runs on a worker thread, where its own
    dispatch_sync gets that thread's loop (the outer batch's loop keeps running)."""

    @tool(blocking=True)
    def relay(n: int) -> str:
        """Asks echo for n."""
        return dispatch_sync([ToolCall("inner", "echo", {"n": n})], ECHO).messages[0].content

    tools = Registry.of(relay, echo)
    batch = [ToolCall("a", "relay", {"n": 1}), ToolCall("b", "echo", {"n": 2})]
    assert [m.content for m in dispatch_sync(batch, tools).messages] == ["1", "2"]


# --- a Cancellation shared with another thread -------------------------------------------


def _cancelled_once_started(runner: str, watch: Tool, started: threading.Event) -> DispatchResult:
    """One call of ``watch`` under ``runner``, whose batch another thread cancels once
    the tool says it ``started``."""
    batch_cancellation = Cancellation()
    canceller = threading.Thread(target=lambda: (started.wait(10), batch_cancellation.cancel()))
    canceller.start()
    calls, tools = [ToolCall("c1", "watch", {})], Registry.of(watch)
    try:
        if runner == "dispatch_sync":
            return dispatch_sync(calls, tools, cancellation=batch_cancellation)
        if runner == "asyncio":
            return asyncio.run(dispatch(calls, tools, cancellation=batch_cancellation))
        return trio.run(lambda: dispatch(calls, tools, cancellation=batch_cancellation))
    finally:
        canceller.join()


@pytest.mark.parametrize("runner", ["dispatch_sync", "asyncio", "trio"])
def test_a_sync_tool_sees_the_batch_cancelled_from_another_thread(runner: str) -> None:
    """Defect: a synchronous tool's injected Cancellation was set only when its own call
    timed out, never when the batch's cancellation was cancelled: a tool that polled it
    (as Cancellation's docs ask) ran on to its end while the host waited."""
    started, seen = threading.Event(), threading.Event()

    @tool
    def watch(cancellation: Inject[Cancellation]) -> str:
        """Waits to be told to stop."""
        cancellation.on_cancel(seen.set)
        started.set()
        return "stopped" if seen.wait(10) else "never told"

    result = _cancelled_once_started(runner, watch, started)
    assert result.messages[0].content == "stopped"


@pytest.mark.parametrize("runner", ["dispatch_sync", "asyncio", "trio"])
def test_an_async_tool_sees_its_handle_set_when_the_batch_is_cancelled(runner: str) -> None:
    """Defect: an async tool's injected Cancellation was never set by the batch's
    cancellation (only the loop's cancellation reached the tool): work the tool handed to
    a thread with its handle never learned to stop. It is set before the loop delivers
    the cancellation, so the tool sees it set as it is cancelled."""
    started = threading.Event()
    seen: list[bool] = []

    @tool
    async def watch(cancellation: Inject[Cancellation]) -> str:
        """Waits to be cancelled."""
        started.set()
        try:
            await anyio.Event().wait()
        except anyio.get_cancelled_exc_class():
            seen.append(cancellation.cancelled)
            raise
        return "never cancelled"

    result = _cancelled_once_started(runner, watch, started)
    assert result.messages[0].status == "interrupted"
    assert seen == [True]


def _failing_callback() -> None:
    raise RuntimeError("a tool's own callback failed")


def test_a_tools_failing_callback_does_not_keep_other_batches_from_being_cancelled() -> None:
    """A callback a tool registered on its own handle, raising, neither escapes the host's
    ``cancel()`` nor keeps the other batches sharing the cancellation from stopping."""
    shutdown = Cancellation()  # one for the whole process, as a server has
    started = {"first": threading.Event(), "second": threading.Event()}
    answers: dict[str, str] = {}

    @tool
    def watch(who: str, cancellation: Inject[Cancellation]) -> str:
        """Waits to be told to stop."""
        seen = threading.Event()
        cancellation.on_cancel(seen.set)
        if who == "second":  # (told first)
            cancellation.on_cancel(_failing_callback)
        started[who].set()
        return "stopped" if seen.wait(10) else "never told"

    def serve(who: str) -> None:
        calls = [ToolCall(who, "watch", {"who": who})]
        result = dispatch_sync(calls, Registry.of(watch), cancellation=shutdown)
        answers[who] = result.messages[0].content

    servers = []
    for who in ("first", "second"):  # the second's handle is told first (newest first)
        servers.append(threading.Thread(target=serve, args=(who,)))
        servers[-1].start()
        assert started[who].wait(10)
    shutdown.cancel()
    for server in servers:
        server.join()
    assert answers == {"first": "stopped", "second": "stopped"}


def test_every_batch_sharing_a_cancellation_stops_when_a_host_callback_fails() -> None:
    """Defect: ``cancel()`` stopped at the first callback that raised; the batches whose
    callbacks came after it were never told to stop."""
    shutdown = Cancellation()
    told_before, told_after = threading.Event(), threading.Event()
    shutdown.on_cancel(told_before.set)  # (as batches sharing the handle register their own)
    shutdown.on_cancel(_failing_callback)  # the host's own, among them
    shutdown.on_cancel(told_after.set)
    with pytest.raises(RuntimeError, match="callback failed"):
        shutdown.cancel()
    assert told_before.is_set()
    assert told_after.is_set()
    assert shutdown.cancelled


def test_cancel_tells_the_newest_callback_first() -> None:
    """Defect: callbacks were called oldest first, so a batch's own hook (registered as
    the batch began) woke its event loop before the running calls' handles were set: an
    async tool could be cancelled and look at its handle before it was set (seen on
    3.13 under load). Newest first, as a stack unwinds, the calls are told first."""
    handle, told = Cancellation(), []
    for name in ("batch's loop", "call 1", "call 2"):
        handle.on_cancel(lambda name=name: told.append(name))
    handle.cancel()
    assert told == ["call 2", "call 1", "batch's loop"]


# --- many threads, everything shared ----------------------------------------------------


@contextlib.contextmanager
def _switching_often() -> Iterator[None]:
    """Make the interpreter switch threads after every few bytecodes (races show)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _in_threads(count: int, work: Callable[[int], None]) -> list[BaseException]:
    """Run ``work(i)`` on ``count`` threads released at once; what they raised."""
    start = threading.Barrier(count)
    raised: list[BaseException] = []

    def thread(i: int) -> None:
        start.wait()
        try:
            work(i)
        except BaseException as error:  # the test reports it
            raised.append(error)

    threads = [threading.Thread(target=thread, args=(i,)) for i in range(count)]
    with _switching_often():
        for each in threads:
            each.start()
        for each in threads:
            each.join()
    return raised


@tool(timeout=5)
def timed(n: int) -> int:
    """n plus one, on a worker thread (it has a timeout)."""
    return n + 1


@tool(exposure="deferred")
def refund_status(order_id: str) -> str:
    """The status of the refund of an order.

    Args:
        order_id: The order id.
    """
    return f"refund of {order_id} sent"


@tool
def report(n: int) -> ToolResult:
    """A report of n bytes, kept as an artifact."""
    return ToolResult.success("report", artifacts=[Artifact("r.txt", b"x" * n, "text/plain")])


def test_threads_sharing_every_dispatch_argument_get_every_answer_once(tmp_path: Path) -> None:
    """A web server's worker threads share one discovery toolset, ledger, artifact store,
    event handler, middleware list and cancellation: each call is answered once, with its
    own answer, and every ledger row is settled."""
    discovery = Discovery(Combined(Registry.of(echo, timed, report), Registry.of(refund_status)))
    ledger = SqliteLedger(tmp_path / "effects.db", synchronous="normal")
    store, shutdown, events = MemoryArtifactStore(), Cancellation(), []
    middleware = [before_tool(lambda call, env: Allow())]

    def serve(worker: int) -> None:
        for turn in range(30):
            key = f"{worker}-{turn}"
            calls = [
                ToolCall(f"a{key}", "echo", {"n": turn}),
                ToolCall(f"b{key}", "timed", {"n": turn}),
                ToolCall(
                    f"c{key}",
                    "tool_call",
                    {"name": "refund_status", "arguments": {"order_id": key}},
                ),
                ToolCall(f"d{key}", "report", {"n": turn + 1}),
            ]
            result = dispatch_sync(
                calls,
                discovery,
                context=Context(run_id=f"request-{key}"),
                ledger=ledger,
                artifacts=store,
                cancellation=shutdown,
                on_event=events.append,
                middleware=middleware,
            )
            assert [(m.tool_call_id, m.content) for m in result.messages] == [
                (f"a{key}", str(turn)),
                (f"b{key}", str(turn + 1)),
                (f"c{key}", f"refund of {key} sent"),
                (f"d{key}", "report"),
            ]
            [ref] = result.messages[3].artifact.artifacts  # type: ignore[union-attr]
            assert store.get(ref.uri).data == b"x" * (turn + 1)  # type: ignore[union-attr]

    with ledger:
        assert _in_threads(8, serve) == []
        assert ledger.unresolved() == ()
    started = [e.call_id for e in events if isinstance(e, ToolStarted)]
    assert len(started) == len(set(started)) == 8 * 30 * 4


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_short_lived_threads_leave_no_event_loop_behind() -> None:
    """Each thread that runs an async tool gets its own event loop; it is closed when the
    thread ends, so a server that starts a thread per request does not leak descriptors."""

    def open_descriptors() -> int:
        gc.collect()
        return len(os.listdir("/proc/self/fd"))

    def request(worker: int) -> None:
        result = dispatch_sync([ToolCall("c", "echo", {"n": worker})], ECHO)
        assert result.messages[0].content == str(worker)

    dispatch_sync([ToolCall("c", "timed", {"n": 0})], Registry.of(timed))  # a tool thread
    before = open_descriptors()
    for wave in range(10):
        assert _in_threads(20, lambda i, wave=wave: request(20 * wave + i)) == []
    assert open_descriptors() == before
