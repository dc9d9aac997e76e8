"""The tool threads' hand-off (tinytools._runtime.threads, .baton): a caller waits for its
tool with a timeout, abandons a hung one, and the pool stays usable and bounded.

Every test runs on both batons: the compiled one (when built) and its pure-Python twin.
Hung tools wait on events set at the end; the few real timeouts are the behaviour under
test (a tool that never returns in time).
"""

from __future__ import annotations

import _thread
import gc
import inspect
import os
import signal
import subprocess
import sys
import threading
import types
from collections.abc import Callable, Iterator

import pytest

from tinytools import RunPolicy, ToolCall, ToolPolicy, dispatch_sync, tool
from tinytools._runtime import baton as _baton
from tinytools._runtime import threads as _threads
from tinytools._runtime.baton import Handoff
from tinytools._runtime.threads import PoolExhausted, ThreadPool

try:
    from tinytools._runtime._baton import Baton as CompiledBaton
except ImportError:  # pragma: no cover - installed without a C compiler
    CompiledBaton = None  # type: ignore[assignment,misc]

BATONS = [
    pytest.param(_baton._Baton, id="python"),
    pytest.param(
        CompiledBaton,
        id="compiled",
        marks=pytest.mark.skipif(CompiledBaton is None, reason="the C extension is not built"),
    ),
]


@pytest.mark.skipif(
    not os.environ.get("TINYTOOLS_REQUIRE_SPEEDUPS"), reason="TINYTOOLS_REQUIRE_SPEEDUPS unset"
)
def test_the_compiled_baton_is_built_and_used() -> None:
    """Where a C compiler is known to exist (CI sets the variable), the install built the
    hand-off and the pool uses it."""
    assert CompiledBaton is not None, "tinytools._runtime._baton was not built"
    assert _baton.BATON is CompiledBaton


@pytest.fixture(params=BATONS)
def baton(request: pytest.FixtureRequest) -> Callable[[], Handoff]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """An event hung tools wait on; set at the end so their threads return to the pool."""
    event = threading.Event()
    yield event
    event.set()


def settled(pool: ThreadPool, idle: int) -> bool:
    """Wait (polling, at most 10 s) until ``idle`` workers are parked: an abandoned worker
    parks itself when its tool ends, which nothing else signals."""
    for _ in range(10_000):
        if len(pool._idle) >= idle:
            return True
        threading.Event().wait(0.001)
    return False


def test_a_call_returns_its_value_and_the_thread_is_reused(baton: Callable[[], Handoff]) -> None:
    pool = ThreadPool(max_threads=2, max_idle=2, baton=baton)
    names = {pool.run(lambda: threading.current_thread().name, {}, 5)[1] for _ in range(50)}
    assert names == {"tinytools-tool"}
    assert pool.threads == 1
    assert pool.run(lambda a, b: a + b, {"a": 2, "b": 3}, None) == (True, 5)


@pytest.mark.parametrize("raised", [ValueError("bad"), KeyboardInterrupt(), SystemExit(3)])
def test_what_the_tool_raises_is_raised_to_the_caller(
    baton: Callable[[], Handoff], raised: BaseException
) -> None:
    pool = ThreadPool(max_threads=1, max_idle=1, baton=baton)

    def fail() -> None:
        raise raised

    with pytest.raises(type(raised)) as info:
        pool.run(fail, {}, 5)
    assert info.value is raised
    assert pool.run(lambda: "next", {}, 5) == (True, "next")
    assert pool.threads == 1


def test_a_hung_tool_is_abandoned_at_its_timeout_and_its_thread_comes_back(
    baton: Callable[[], Handoff], gate: threading.Event
) -> None:
    pool = ThreadPool(max_threads=2, max_idle=2, baton=baton)
    assert pool.run(gate.wait, {"timeout": 30}, 0.01) == (False, None)
    assert pool.threads == 1
    assert pool.run(lambda: "meanwhile", {}, 5) == (True, "meanwhile")  # a second thread
    assert pool.threads == 2
    gate.set()
    assert settled(pool, 2)
    assert [pool.run(lambda: "again", {}, 5) for _ in range(5)] == [(True, "again")] * 5
    assert pool.threads == 2


def test_abandoned_threads_never_starve_later_calls_nor_exceed_the_bound(
    baton: Callable[[], Handoff], gate: threading.Event
) -> None:
    pool = ThreadPool(max_threads=3, max_idle=1, baton=baton)
    for _ in range(3):
        assert pool.run(gate.wait, {"timeout": 30}, 0.01) == (False, None)
    ran = []
    with pytest.raises(PoolExhausted, match="in time: 3 tool threads are busy"):
        pool.run(ran.append, {"object": "late"}, 0.01)  # (a wait in line, then the answer)
    gate.set()
    assert settled(pool, 1)
    assert pool.run(lambda: "free", {}, 5) == (True, "free")
    assert pool.threads <= 3
    assert ran == []  # the call that found no thread in time never ran


def test_jobs_beyond_the_bound_wait_in_line_and_run_in_order(
    baton: Callable[[], Handoff], gate: threading.Event
) -> None:
    """Defect: a job submitted while every thread was busy (no tool hung: the pool was
    merely full) was refused at once with ``PoolExhausted``."""
    pool = ThreadPool(max_threads=1, max_idle=1, baton=baton)
    busy = [pool.submit(gate.wait)]
    order: list[int] = []
    waiting = [pool.submit(lambda n=n: order.append(n)) for n in range(5)]  # type: ignore[misc]
    withdrawn = pool.submit(lambda: order.append(99))
    assert pool.withdraw(withdrawn)  # a job still in line can be taken back: it never runs
    assert not any(job.done.is_set() for job in waiting)
    gate.set()
    assert all(job.done.wait(10) for job in [*busy, *waiting])
    assert order == [0, 1, 2, 3, 4]
    assert not pool.withdraw(waiting[0])  # (it ran)
    assert pool.threads == 1


def test_a_call_with_no_timeout_is_refused_at_once_when_every_thread_is_hung(
    baton: Callable[[], Handoff], gate: threading.Event
) -> None:
    """Defect: a call with no timeout waited in line for ever behind threads held by tools
    whose callers had given up on them (nothing could ever free them). It is refused at
    once; one with a timeout still waits in line within it; freed threads serve again."""
    pool = ThreadPool(max_threads=2, max_idle=2, baton=baton)
    for _ in range(2):
        assert pool.run(gate.wait, {"timeout": 30}, 0.01) == (False, None)
    ran: list[str] = []
    with pytest.raises(
        PoolExhausted, match="all 2 tool threads are held by tools nobody waits for"
    ):
        pool.run(ran.append, {"object": "patient"}, None)
    with pytest.raises(PoolExhausted, match="in time: 2 tool threads are busy"):
        pool.run(ran.append, {"object": "timed"}, 0.01)
    gate.set()
    assert settled(pool, 2)
    assert pool.run(lambda: "free", {}, None) == (True, "free")
    assert ran == []


def test_calls_waiting_with_no_timeout_are_refused_when_the_last_busy_thread_is_left(
    baton: Callable[[], Handoff], gate: threading.Event
) -> None:
    """A patient call waits in line while some busy thread may still come free (its caller
    waits for it); when that caller gives up too, the waiting call is answered with the
    error instead of waiting for ever. A timed call in the same line keeps waiting."""
    pool = ThreadPool(max_threads=2, max_idle=2, baton=baton)
    assert pool.run(gate.wait, {"timeout": 30}, 0.01) == (False, None)  # hung, left
    awaited = pool.submit(lambda: gate.wait(30))  # busy, its caller still waits
    patient = pool.submit(lambda: "patient", patient=True)
    timed = pool.submit(lambda: "timed")
    assert not patient.done.is_set()  # (the awaited thread may still come free)
    pool.give_up(awaited)
    assert patient.done.wait(10)
    with pytest.raises(PoolExhausted, match="held by tools nobody waits for any more"):
        patient.outcome()
    pool.give_up(patient)  # (its caller, giving up as it was refused: it never ran)
    assert not timed.done.is_set()
    gate.set()
    assert timed.done.wait(10)
    assert timed.outcome() == "timed"
    assert settled(pool, 2)
    hold = threading.Event()
    busy = [pool.submit(lambda: hold.wait(30)) for _ in range(2)]
    pool.give_up(busy[1])  # one left; the other's caller waits, so a patient call waits
    patient = pool.submit(lambda: "patient again", patient=True)
    assert not patient.done.is_set()
    hold.set()
    assert patient.done.wait(10)
    assert patient.outcome() == "patient again"
    assert all(job.done.wait(10) for job in busy)


def test_a_tool_ending_as_its_caller_leaves_is_not_counted_hung(
    baton: Callable[[], Handoff], gate: threading.Event
) -> None:
    """The caller giving up and the tool returning race (a zero timeout); however each
    ends, a thread is never counted held by an abandoned tool after it came back: a
    patient call behind the one busy thread, whose caller waits, waits in line."""
    pool = ThreadPool(max_threads=1, max_idle=1, baton=baton)
    for _ in range(200):
        pool.run(lambda: "v", {}, 0)
        left = pool.submit(lambda: "w")
        if not left.done.wait(0):
            pool.give_up(left)
        assert settled(pool, 1)
    awaited = pool.submit(lambda: gate.wait(30))
    patient = pool.submit(lambda: "patient", patient=True)
    assert not patient.done.is_set()
    gate.set()
    assert awaited.done.wait(10)
    assert patient.done.wait(10)
    assert patient.outcome() == "patient"


def test_a_call_in_line_gets_the_place_of_a_thread_stopped_as_it_joined_the_line(
    baton: Callable[[], Handoff], gate: threading.Event
) -> None:
    """Defect: a thread the pool stopped (it keeps no more idle ones) that ended after a
    call had joined the line left that call waiting, though a new thread could serve it:
    with every other thread hung, a call with no timeout waited for ever."""
    holding, stopping, resume = threading.Event(), threading.Event(), threading.Event()

    class Held:
        """The baton, a thread woken to stop held before it ends while ``holding``."""

        def __init__(self) -> None:
            self.inner = baton()

        @property
        def state(self) -> int:
            return self.inner.state

        def hand(self, timeout: float | None, /) -> bool:
            return self.inner.hand(timeout)

        def give(self) -> None:
            self.inner.give()

        def wait(self) -> None:
            self.inner.wait()

        def back(self) -> bool:
            ended = self.inner.back()
            if ended and holding.is_set():  # (its caller took the end, then stopped it)
                stopping.set()
                resume.wait(10)
            return ended

    pool = ThreadPool(max_threads=2, max_idle=0, baton=Held)
    assert pool.run(gate.wait, {"timeout": 30}, 0.01) == (False, None)  # one thread hung
    holding.set()
    assert pool.run(lambda: "quick", {}, 5) == (True, "quick")  # no idle thread is kept
    assert stopping.wait(10)
    patient = pool.submit(lambda: "patient", patient=True)  # both threads busy: in line
    resume.set()
    assert patient.done.wait(10)
    assert patient.outcome() == "patient"


def test_a_tool_thread_asking_for_another_when_all_are_busy_is_refused_at_once(
    baton: Callable[[], Handoff],
) -> None:
    """A tool that dispatches again from a tool thread while every thread is busy would
    wait in line for a thread that may never come free (each busy one waiting likewise):
    it is refused at once instead."""
    pool = ThreadPool(max_threads=1, max_idle=1, baton=baton)
    nested = pool.submit(lambda: pool.run(lambda: "inner", {}, None))
    assert nested.done.wait(10)
    with pytest.raises(PoolExhausted, match="1 tool threads are busy"):
        nested.outcome()


def test_a_tool_ending_at_its_timeout_is_answered_once_either_way(
    baton: Callable[[], Handoff],
) -> None:
    """The caller giving up and the tool ending race; whichever wins, the call has one
    answer and the worker is not lost (a zero timeout makes the race as tight as it gets)."""
    pool = ThreadPool(max_threads=1, max_idle=1, baton=baton)
    for _ in range(200):
        outcome = pool.run(lambda: "v", {}, 0)
        assert outcome in {(True, "v"), (False, None)}
        assert settled(pool, 1)  # abandoned or not, the one worker comes back
    assert pool.threads == 1
    assert pool.run(lambda: "after", {}, 5) == (True, "after")


def test_submitted_jobs_report_when_done_and_park_first(baton: Callable[[], Handoff]) -> None:
    pool = ThreadPool(max_threads=1, max_idle=1, baton=baton)
    for n in range(20):
        job = pool.submit(lambda n=n: n * 2)  # type: ignore[misc]
        assert job.done.wait(10)
        assert job.outcome() == n * 2
    failed = pool.submit(lambda: 1 // 0)
    assert failed.done.wait(10)
    with pytest.raises(ZeroDivisionError):
        failed.outcome()
    assert pool.run(lambda: "mixed", {}, 5) == (True, "mixed")
    assert pool.threads == 1


main_thread_only = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread()
    or not hasattr(signal, "pthread_kill"),
    reason="signals reach Python handlers in the main thread only (POSIX)",
)


@pytest.fixture
def interrupter() -> Iterator[Callable[[], None]]:
    """A function a tool thread calls to interrupt the waiting main thread: it signals the
    main thread until the handler has run there. The handler raises KeyboardInterrupt, once
    (a signal landing just before the main thread starts waiting is only handled when the
    wait ends, as with any lock; the next one interrupts the wait)."""
    main = threading.main_thread().ident
    assert main is not None
    handled = threading.Event()

    def handler(signum: int, frame: object) -> None:
        if not handled.is_set():
            handled.set()
            raise KeyboardInterrupt

    def interrupt() -> None:
        while not handled.wait(0.01):
            signal.pthread_kill(main, signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, handler)
    yield interrupt
    signal.signal(signal.SIGUSR1, previous)


@main_thread_only
@pytest.mark.parametrize("timeout", [30.0, None])
def test_ctrl_c_while_waiting_for_a_tool_propagates_at_once(
    baton: Callable[[], Handoff],
    gate: threading.Event,
    interrupter: Callable[[], None],
    timeout: float | None,
) -> None:
    """The interrupt leaves the caller at once; the tool it leaves running holds its
    thread like a timed-out one: a later call with no timeout is refused at once rather
    than waiting for it for ever. The thread serves again when the tool returns."""
    pool = ThreadPool(max_threads=1, max_idle=1, baton=baton)

    def interrupt_then_hang() -> str:
        interrupter()
        gate.wait(30)
        return "late"

    with pytest.raises(KeyboardInterrupt):
        pool.run(interrupt_then_hang, {}, timeout)
    with pytest.raises(PoolExhausted, match="all 1 tool threads are held"):
        pool.run(lambda: "patient", {}, None)
    gate.set()
    assert settled(pool, 1)
    assert pool.run(lambda: "after", {}, None) == (True, "after")


@pytest.fixture
def ctrl_c() -> Iterator[Callable[[], None]]:
    """``_thread.interrupt_main``: Ctrl-C as a signal another thread received flags it (the
    waiting main thread is not woken), with SIGINT raising KeyboardInterrupt as in a
    terminal (a shell starts background jobs with it ignored). A main thread still in the
    test after 10 s (a caller hung in the hand-off) is sent SIGINT: it fails, not hangs."""
    main = threading.main_thread().ident
    assert main is not None
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    ended = threading.Event()

    def unhang() -> None:
        if not ended.wait(10):
            signal.pthread_kill(main, signal.SIGINT)

    watchdog = threading.Thread(target=unhang, daemon=True)
    watchdog.start()
    yield _thread.interrupt_main
    ended.set()
    watchdog.join()
    signal.signal(signal.SIGINT, before)


@main_thread_only
@pytest.mark.parametrize("timeout", [None, 30])
def test_ctrl_c_raised_as_the_tool_returns_leaves_its_thread_to_the_pool(
    baton: Callable[[], Handoff], ctrl_c: Callable[[], None], timeout: float | None
) -> None:
    """Defect: a KeyboardInterrupt flagged while the caller waited and raised once the tool
    had returned lost the thread, counted for good as held by an abandoned tool: a later
    call with no timeout was refused, a timed one found no thread (the compiled baton); the
    caller hung (the Python baton)."""
    pool = ThreadPool(max_threads=1, max_idle=1, baton=baton)

    def interrupt_and_return() -> str:
        ctrl_c()
        return "ended"

    for _ in range(3):
        with pytest.raises(KeyboardInterrupt):
            pool.run(interrupt_and_return, {}, timeout)
    assert pool.run(lambda: "patient", {}, None) == (True, "patient")
    assert pool.run(lambda: "timed", {}, 5) == (True, "timed")
    assert pool.threads == 1


@main_thread_only
def test_a_call_in_line_gets_the_thread_of_a_caller_interrupted_as_its_tool_returned(
    baton: Callable[[], Handoff], ctrl_c: Callable[[], None], gate: threading.Event
) -> None:
    """Defect: the call waiting in line behind an interrupted caller whose tool had just
    returned was refused as if every thread were hung (the thread, freed, was counted
    abandoned), or waited on (the freed thread ended without serving the line)."""
    pool = ThreadPool(max_threads=2, max_idle=2, baton=baton)
    assert pool.run(gate.wait, {"timeout": 30}, 0.01) == (False, None)  # one thread hung
    started, queued = threading.Event(), []

    def line_up() -> None:
        started.wait(10)
        queued.append(pool.submit(lambda: "in line", patient=True))

    helper = threading.Thread(target=line_up)
    helper.start()

    def interrupt_once_a_call_waits() -> str:
        started.set()
        helper.join(10)
        ctrl_c()
        return "ended"

    with pytest.raises(KeyboardInterrupt):
        pool.run(interrupt_once_a_call_waits, {}, None)
    assert queued[0].done.wait(10)
    assert queued[0].outcome() == "in line"


@main_thread_only
def test_a_signal_handled_while_waiting_does_not_end_the_wait(
    baton: Callable[[], Handoff],
) -> None:
    pool = ThreadPool(max_threads=1, max_idle=1, baton=baton)
    main = threading.main_thread().ident
    assert main is not None
    handled = threading.Event()
    previous = signal.signal(signal.SIGUSR1, lambda *_: handled.set())
    try:

        def signal_then_answer() -> str:
            while not handled.wait(0.01):  # the handler ran in the waiting main thread
                signal.pthread_kill(main, signal.SIGUSR1)
            return "answered"

        assert pool.run(signal_then_answer, {}, 30) == (True, "answered")
    finally:
        signal.signal(signal.SIGUSR1, previous)


@main_thread_only
def test_ctrl_c_propagates_out_of_dispatch_sync_while_a_timed_tool_runs(
    gate: threading.Event, interrupter: Callable[[], None]
) -> None:
    @tool(timeout=30)
    def interrupt() -> str:
        """Interrupt the host, then hang."""
        interrupter()
        gate.wait(30)
        return "late"

    with pytest.raises(KeyboardInterrupt):
        dispatch_sync([ToolCall("i", "interrupt", {})], [interrupt])


@pytest.mark.parametrize("raised", [KeyboardInterrupt(), SystemExit(3)])
def test_an_interrupt_raised_by_a_timed_tool_propagates_from_dispatch_sync(
    raised: BaseException,
) -> None:
    @tool(timeout=5)
    def leave() -> str:
        """Raise an interrupt on a tool thread."""
        raise raised

    with pytest.raises(type(raised)) as info:
        dispatch_sync([ToolCall("x", "leave", {})], [leave])
    assert info.value is raised


def test_a_timed_tools_failure_is_that_calls_error_and_the_next_call_runs() -> None:
    @tool(timeout=5)
    def fail(n: int) -> int:
        """Fail for 0."""
        return 10 // n

    calls = [ToolCall("a", "fail", {"n": 0}), ToolCall("b", "fail", {"n": 5})]
    result = dispatch_sync(calls, [fail])
    assert result.messages[0].is_error
    assert "ZeroDivisionError" in result.messages[0].content
    assert result.messages[1].content == "2"


def test_dispatch_sync_answers_a_hung_tool_at_its_timeout_and_runs_the_next(
    gate: threading.Event,
) -> None:
    @tool
    def hang() -> str:
        """Block until the test ends."""
        gate.wait(30)
        return "late"

    calls = [ToolCall("h", "hang", {}), ToolCall("q", "hang", {})]
    result = dispatch_sync(calls[:1], [hang], policy=RunPolicy(tool_timeout=0.01))
    assert result.messages[0].content == "Tool `hang` timed out after 0.01 seconds."
    gate.set()
    result = dispatch_sync(calls[1:], [hang], policy=RunPolicy(tool_timeout=5))
    assert result.messages[0].content == "late"


FORKED = """
import os, sys
from tinytools import RunPolicy, ToolCall, ToolPolicy, dispatch_sync, tool

@tool(blocking=True)
def pid() -> int:
    \"\"\"This process's id, from a tool thread.\"\"\"
    return os.getpid()

def ask() -> str:
    result = dispatch_sync([ToolCall("p", "pid", {})], [pid], policy=RunPolicy(tool_timeout=5))
    return result.messages[0].content

assert ask() == str(os.getpid())  # the parent now has an idle tool thread
child = os.fork()
if child == 0:
    os._exit(0 if ask() == str(os.getpid()) else 1)
_, status = os.waitpid(child, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_child_gets_its_own_tool_threads() -> None:
    """Defect: a child forked after a threaded call found the parent's idle threads in the
    pool (threads a fork does not copy) and handed them calls that never ran."""
    done = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", FORKED],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_a_timed_call_leaves_no_cycle() -> None:
    """A tool's exception carried from its thread to the caller is freed with the result
    (once it waited for the collector through the frame that re-raised it)."""

    @tool(timeout=5)
    def broken(a: int) -> int:
        """Always fail."""
        raise ValueError("no")

    calls = [ToolCall("b", "broken", {"a": 1}), ToolCall("f", "broken", "{}")]
    dispatch_sync(calls, [broken])  # the first call fills the memos
    gc.collect()
    gc.disable()
    try:
        result = dispatch_sync(calls, [broken])
        assert [m.status for m in result.messages] == ["error", "error"]
        del result
        # Only this call's exception and frames count: a thread or event loop left by an
        # earlier test may be freed while the collector is off.
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [
            o
            for o in gc.garbage
            if (isinstance(o, ValueError) and o.args == ("no",))
            or (isinstance(o, types.FrameType) and o.f_code.co_name == "broken")
        ]
        assert left == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


class TestInterruptedLoop:
    """``KeyboardInterrupt`` or ``SystemExit`` from an async tool leaves ``dispatch_sync``
    at once; the batch's other tasks on the thread's long-lived loop are cancelled then,
    never started or resumed by a later, unrelated ``dispatch_sync`` on that loop."""

    @pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
    def test_no_call_of_the_interrupted_batch_runs_later(
        self, interrupt: type[BaseException]
    ) -> None:
        import asyncio

        from tinytools import RunPolicy, ToolCall, dispatch_sync, tool

        ran: list[tuple[str, int]] = []

        @tool
        async def stop() -> str:
            raise interrupt

        @tool
        async def step(i: int) -> str:
            ran.append(("start", i))
            for _ in range(3):
                await asyncio.sleep(0)
            ran.append(("end", i))
            return "ok"

        calls = [ToolCall("1", "stop", {})]
        calls += [ToolCall(str(i), "step", {"i": i}) for i in range(2, 5)]
        with pytest.raises(interrupt):
            dispatch_sync(calls, [stop, step], policy=RunPolicy(max_concurrency=4))
        interrupted = list(ran)
        assert all(kind == "start" for kind, _ in interrupted)  # none went on to finish
        result = dispatch_sync([ToolCall("x", "step", {"i": 99})], [stop, step])
        assert [m.status for m in result.messages] == ["ok"]
        assert ran == [*interrupted, ("start", 99), ("end", 99)]


@pytest.fixture
def pool(baton: Callable[[], Handoff], monkeypatch: pytest.MonkeyPatch) -> ThreadPool:
    """The tool threads every dispatch uses, replaced by a pool on ``baton``."""

    pool = ThreadPool(baton=baton)
    monkeypatch.setattr(_threads, "THREADS", pool)
    return pool


@tool
async def pause(n: int) -> int:
    """Yield to the event loop once, then answer ``n``."""
    import asyncio

    await asyncio.sleep(0)
    return n


@tool(policy=ToolPolicy().with_runtime(max_retries=1))
async def pause_retried(n: int) -> int:
    """``pause``, under a retry policy: its attempts are driven one by one."""
    import asyncio

    await asyncio.sleep(0)
    return n


@tool(blocking=True)
def on_thread(n: int) -> int:
    """Answer ``n`` from a tool thread."""
    return n


INTERRUPTED_TOOLS = [pause, pause_retried, on_thread]


#: Batches that run on the thread's event loop (two async tools at once; an async tool
#: beside a threaded one) and, for comparison, one that needs no loop (threaded calls in
#: turn: the caller waits on the baton itself).
INTERRUPTED_BATCHES = {
    "async": ("pause", "pause", 2),
    "async-retried": ("pause_retried", "pause_retried", 2),
    "async-and-thread": ("pause", "on_thread", 2),
    "threads-no-loop": ("on_thread", "on_thread", 1),
}


def _batch(kind: str) -> tuple[list[ToolCall], RunPolicy]:
    first, second, concurrency = INTERRUPTED_BATCHES[kind]
    calls = [ToolCall("a", first, {"n": 1}), ToolCall("b", second, {"n": 2})]
    return calls, RunPolicy(max_concurrency=concurrency)


def _answers(kind: str) -> list[str]:
    calls, policy = _batch(kind)
    return [m.content for m in dispatch_sync(calls, INTERRUPTED_TOOLS, policy=policy).messages]


def _steps(kind: str, interrupt_at: int, twice: bool = False) -> tuple[int, bool]:
    """Dispatch ``kind``'s batch, counting the steps at which Python runs a signal handler
    that is due (a function's start, a builtin's return; not a coroutine's resumption,
    which passes on to what it awaits: bpo-30039), and at the ``interrupt_at``-th run
    SIGINT's handler there, as Python does when Ctrl-C lands (``twice``: there and at the
    next step); the steps taken and whether ``KeyboardInterrupt`` came out (or was raised
    where Python drops exceptions, in a finalizer: a weak reference's callback,
    ``__del__``)."""
    calls, policy = _batch(kind)
    steps = 0
    started: set[types.FrameType] = set()
    dropped = []
    report = sys.unraisablehook

    def drop(unraisable: sys.UnraisableHookArgs) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            dropped.append(unraisable.exc_value)
        else:
            report(unraisable)

    after: list[object] = [None]  # (the profile hook the handler set, if any)

    def count(frame: types.FrameType, event: str, arg: object) -> None:
        nonlocal steps
        if event == "call" and frame.f_code.co_flags & inspect.CO_COROUTINE:
            if frame in started:
                return
            started.add(frame)
        if event == "call" or event == "c_return":
            steps += 1
            if steps == interrupt_at or (twice and steps == interrupt_at + 1):
                sys.setprofile(after[0])  # type: ignore[arg-type]
                handler = signal.getsignal(signal.SIGINT)
                assert callable(handler)
                handler(signal.SIGINT, frame)
                if twice and steps == interrupt_at:  # (it returned: on to the second)
                    after[0] = sys.getprofile()
                    sys.setprofile(count)

    sys.unraisablehook = drop
    try:
        sys.setprofile(count)
        try:
            dispatch_sync(calls, INTERRUPTED_TOOLS, policy=policy)
        finally:
            sys.setprofile(None)
    except KeyboardInterrupt:
        return steps, True
    finally:
        sys.unraisablehook = report
    return steps, bool(dropped)


@main_thread_only
@pytest.mark.parametrize("kind", list(INTERRUPTED_BATCHES))
@pytest.mark.usefixtures("ctrl_c")
def test_ctrl_c_at_any_step_of_dispatch_sync_leaves_the_next_one_answering(
    pool: ThreadPool, kind: str
) -> None:
    """Defect: a Ctrl-C landing as a batch's loop finished left asyncio's stop callback
    queued on the thread's reused loop: the next, uninterrupted ``dispatch_sync`` raised
    ``RuntimeError('Event loop stopped before Future completed.')``; one landing between
    two of the loop's own steps lost a task's wake-up, and the interrupted call hung
    cancelling its tasks. Ctrl-C at every step of the batch, each time followed by the
    same batch uninterrupted: the interrupt comes out of the interrupted call, never
    lost; SIGINT's handler and the wakeup fd are the host's again; the next call
    answers."""
    expected = ["1", "2"]
    assert _answers(kind) == expected  # (memos filled: the steps below are the same)
    total, interrupted = _steps(kind, 0)
    assert not interrupted
    for step in range(1, total + 1):
        taken, interrupted = _steps(kind, step)
        assert interrupted or taken < step, f"the interrupt at step {step} was lost"
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.set_wakeup_fd(-1) == -1
        assert _answers(kind) == expected, f"after an interrupt at step {step}"
    assert pool.run(lambda: "after", {}, None) == (True, "after")


@main_thread_only
@pytest.mark.parametrize("kind", ["async", "async-and-thread"])
@pytest.mark.usefixtures("ctrl_c")
def test_two_ctrl_cs_at_any_two_steps_in_a_row_leave_the_next_call_answering(
    pool: ThreadPool, kind: str
) -> None:
    """Two Ctrl-Cs, at each pair of consecutive steps of the batch (the second while the
    first may be held): the interrupt comes out of the call, SIGINT's handler and the
    wakeup fd are the host's again, and the next call answers."""
    expected = ["1", "2"]
    assert _answers(kind) == expected
    total, _ = _steps(kind, 0)
    for step in range(1, total + 1):
        taken, interrupted = _steps(kind, step, twice=True)
        assert interrupted or taken < step, f"the interrupts at step {step} were lost"
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.set_wakeup_fd(-1) == -1
        assert _answers(kind) == expected, f"after interrupts at steps {step} and {step + 1}"
    assert pool.run(lambda: "after", {}, None) == (True, "after")


@main_thread_only
@pytest.mark.parametrize("kind", ["async", "async-and-thread"])
def test_a_host_sigint_handler_that_returns_is_called_once_for_each_ctrl_c(
    pool: ThreadPool, kind: str
) -> None:
    """A Ctrl-C that lands in the loop's own steps reaches the host's SIGINT handler once
    the loop is between two: once for each, wherever it lands, and when the handler
    returns (it only takes note) the batch goes on and answers."""
    seen: list[int] = []
    before = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        total, _ = _steps(kind, 0)
        for step in range(1, total + 1):
            taken, interrupted = _steps(kind, step)
            assert not interrupted
            assert len(seen) == (taken >= step), f"at step {step}"
            seen.clear()
    finally:
        signal.signal(signal.SIGINT, before)
