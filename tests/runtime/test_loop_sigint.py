"""Ctrl-C while ``dispatch_sync`` runs a batch on the main thread's event loop
(tinytools._runtime.loop): raised at once where it lands in what the batch runs, whatever
module or language that code is in; held only inside the loop's own steps, and raised at
the first code the loop runs after them; and a ``dispatch_sync`` that SIGINT's handler
makes meanwhile runs apart, leaving the interrupted batch to go on.

Each Ctrl-C is sent from a tool (``signal.raise_signal``, which runs the handler before
it returns) or, for one landing inside the loop's own steps, by calling SIGINT's handler
from a profile hook on the loop's step, as Python would when the signal arrives there.
"""

from __future__ import annotations

import asyncio
import functools
import sched
import signal
import sys
import threading
import types
from collections.abc import Callable, Iterator

import pytest

from tinytools import (
    DispatchAborted,
    DispatchResult,
    RunPolicy,
    Tool,
    ToolCall,
    dispatch_sync,
    tool,
)

pytestmark = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(),
    reason="signals reach Python handlers in the main thread only",
)

#: An object schema with no parameters.
NOTHING = {"type": "object", "properties": {}}


@pytest.fixture(autouse=True)
def sigint() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt, as in a terminal (a shell starts background jobs
    with it ignored); afterwards, each test finds it and the wakeup fd as they were."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def assert_loop_fit(handler: object = signal.default_int_handler) -> None:
    """SIGINT's handler and the wakeup fd are the host's again, and the next batch on the
    thread's loop answers."""
    assert signal.getsignal(signal.SIGINT) is handler
    assert signal.set_wakeup_fd(-1) == -1
    result = dispatch_sync([ToolCall("n", "ping", {}), ToolCall("m", "ping", {})], [ping])
    assert [m.content for m in result.messages] == ["pong", "pong"]


@tool
async def ping() -> str:
    """Answer at once (an async tool: its batch runs on the event loop)."""
    return "pong"


ran: list[str] = []


@tool
def mark() -> str:
    """Note that it ran."""
    ran.append("mark")
    return "marked"


def _scheduled() -> Tool[..., object]:
    """A tool whose function is the standard library's: a ``sched`` scheduler's run,
    which sends Ctrl-C, then goes on to its next event."""
    scheduler = sched.scheduler()
    scheduler.enter(0, 1, signal.raise_signal, (signal.SIGINT,))
    scheduler.enter(0, 2, ran.append, ("went on",))
    return Tool.from_schema("interrupt", "Send Ctrl-C, then go on.", NOTHING, scheduler.run)


def _builtin() -> Tool[..., object]:
    """A tool whose function is a builtin, with no Python frame of its own."""
    fn = functools.partial(signal.raise_signal, signal.SIGINT)
    return Tool.from_schema("interrupt", "Send Ctrl-C.", NOTHING, fn)


def _host_module_named_like_the_stdlibs() -> Tool[..., object]:
    """A tool whose function is the host's, in a module named like one of the standard
    library (``code``)."""
    module = types.ModuleType("code.tools")
    module.ran = ran  # type: ignore[attr-defined]
    exec(  # (as a module of that name would hold it)
        "import signal\n"
        "def interrupt():\n"
        "    signal.raise_signal(signal.SIGINT)\n"
        "    ran.append('went on')\n"
        "    return 'late'\n",
        vars(module),
    )
    return Tool.from_schema("interrupt", "Send Ctrl-C, then go on.", NOTHING, module.interrupt)


@pytest.mark.parametrize(
    "make", [_scheduled, _builtin, _host_module_named_like_the_stdlibs], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("concurrency", [1, 3])
def test_ctrl_c_in_a_tool_with_no_frame_of_the_hosts_is_raised_there(
    make: Callable[[], Tool[..., object]], concurrency: int
) -> None:
    """Defect: a Ctrl-C that landed in a synchronous tool whose code is the standard
    library's (``sched``, ``urllib.request.urlopen`` declared with ``Tool.from_schema``), a
    builtin, or the host's in a module named like one of the standard library, run on the
    loop beside an async tool, was put off until the tool returned (a hung one could never
    be interrupted): the tool went on, and so did the next call. It is raised where it
    lands, as in any other tool."""
    ran.clear()
    calls = [ToolCall("p", "ping", {}), ToolCall("i", "interrupt", {}), ToolCall("m", "mark", {})]
    with pytest.raises(KeyboardInterrupt):
        dispatch_sync(calls, [ping, make(), mark], policy=RunPolicy(max_concurrency=concurrency))
    assert ran == []
    assert_loop_fit()


#: A step of the event loop itself, where a Ctrl-C is put off.
LOOP_STEP = asyncio.base_events.BaseEventLoop._run_once.__code__


def ctrl_c_in_the_loops_step(times: int, outcomes: list[str]) -> Callable[..., object]:
    """A profile hook that, at the next step of the event loop, sends Ctrl-C ``times`` in a
    row by calling SIGINT's handler there, noting whether each call raised or returned
    (put off); the hook then removes itself."""

    def hook(frame: types.FrameType, event: str, arg: object) -> None:
        if event != "call" or frame.f_code is not LOOP_STEP:
            return
        sys.setprofile(None)
        handler = signal.getsignal(signal.SIGINT)
        assert callable(handler)
        for _ in range(times):
            try:
                handler(signal.SIGINT, frame)
            except BaseException:
                outcomes.append("raised")
                raise
            outcomes.append("put off")

    return hook


@pytest.mark.parametrize("times", [1, 2])
def test_a_ctrl_c_in_the_loops_step_is_raised_before_any_code_it_runs_next(times: int) -> None:
    """Defect: a Ctrl-C that landed inside the loop's own steps was held until the loop had
    run every callback ready in that pass, and so was each Ctrl-C after it: a tool that
    blocked in one of them kept them all waiting. Held (the loop's step is not cut
    half-way), it is raised at the start of the first code the loop runs that is not its
    own: here the task due next, whose tool never goes on; so are those sent meanwhile."""
    ran.clear()
    outcomes: list[str] = []

    def went_on(name: str) -> None:
        ran.append(name)

    @tool
    async def first() -> str:
        """Yield to the loop, with Ctrl-C sent as it begins its next step."""
        sys.setprofile(ctrl_c_in_the_loops_step(times, outcomes))
        await asyncio.sleep(0)
        went_on("first")
        return "late"

    @tool
    async def second() -> str:
        """Yield to the loop, then go on."""
        await asyncio.sleep(0)
        went_on("second")
        return "late"

    calls = [ToolCall("a", "first", {}), ToolCall("b", "second", {})]
    try:
        with pytest.raises(KeyboardInterrupt):
            dispatch_sync(calls, [first, second], policy=RunPolicy(max_concurrency=2))
    finally:
        sys.setprofile(None)
    assert outcomes == ["put off"] * times
    assert ran == []
    assert_loop_fit()


# --- a dispatch_sync inside SIGINT's handler -------------------------------------------


@tool
async def note(text: str) -> str:
    """Note ``text``."""
    noted.append(text)
    return "noted " + text


noted: list[str] = []


def stop_requested(signum: int, frame: types.FrameType | None) -> None:
    """A host's SIGINT handler that does not raise: it notes the request with a batch of
    its own."""
    result = dispatch_sync([ToolCall("n", "note", {"text": "stop"})], [note])
    noted.append(result.messages[0].content)


@tool
async def interrupted_in_its_code() -> str:
    """Send Ctrl-C from inside this tool (the loop runs this step), then go on."""
    signal.raise_signal(signal.SIGINT)
    await asyncio.sleep(0)
    return "went on"


@tool
async def interrupted_in_the_loops_step() -> str:
    """Wait (the loop steps) until SIGINT's handler has noted the request."""
    sys.setprofile(ctrl_c_in_the_loops_step(1, []))
    while "noted stop" not in noted:
        await asyncio.sleep(0)
    return "went on"


@pytest.mark.parametrize("where", ["interrupted_in_its_code", "interrupted_in_the_loops_step"])
def test_a_sigint_handler_that_dispatches_leaves_the_interrupted_batch_going(where: str) -> None:
    """Defect: a host's SIGINT handler that records the request with its own
    ``dispatch_sync`` took the interrupted batch down: called between two of the loop's
    steps, its run cancelled the interrupted batch's tasks (which raised
    ``CancelledError``) and removed its wakeup fd and SIGINT guard; called inside a step,
    it was refused as nested in a running loop. Its batch runs on a loop of its own; the
    interrupted batch goes on and answers; the host's handler is in place afterwards."""
    noted.clear()
    signal.signal(signal.SIGINT, stop_requested)
    tools = [note, interrupted_in_its_code, interrupted_in_the_loops_step, ping]
    try:
        result = dispatch_sync([ToolCall("a", where, {}), ToolCall("b", "ping", {})], tools)
    finally:
        sys.setprofile(None)
    assert [m.content for m in result.messages] == ["went on", "pong"]
    assert noted == ["stop", "noted stop"]
    assert_loop_fit(stop_requested)


def test_a_sigint_handler_that_dispatches_while_no_batch_runs() -> None:
    """The handler's batch runs on the thread's loop, under the same guard as any."""
    noted.clear()
    signal.signal(signal.SIGINT, stop_requested)
    signal.raise_signal(signal.SIGINT)
    assert noted == ["stop", "noted stop"]
    assert_loop_fit(stop_requested)


def _from_a_tool(inner: Callable[[], DispatchResult]) -> DispatchResult:
    @tool
    def dispatches() -> str:
        """Dispatch from inside the running loop."""
        return inner().messages[0].content

    return dispatch_sync(
        [ToolCall("p", "ping", {}), ToolCall("d", "dispatches", {})], [ping, dispatches]
    )


def _from_on_event(inner: Callable[[], DispatchResult]) -> DispatchResult:
    return dispatch_sync([ToolCall("p", "ping", {})], [ping], on_event=lambda event: inner())


@pytest.mark.parametrize("outer", [_from_a_tool, _from_on_event], ids=lambda f: f.__name__)
def test_a_dispatch_sync_nested_in_a_running_batch_leaves_that_batch_intact(
    outer: Callable[[Callable[[], DispatchResult]], DispatchResult],
) -> None:
    """A tool or an ``on_event`` handler that calls ``dispatch_sync`` inside the running
    loop: a batch that needs no loop runs inline; one that needs the loop is refused (the
    outer batch is aborted), and the thread's loop, wakeup fd and SIGINT handler are left
    as they were."""
    result = outer(lambda: dispatch_sync([ToolCall("m", "mark", {})], [mark]))
    assert [m.status for m in result.messages] == ["ok"] * len(result.messages)
    with pytest.raises(DispatchAborted, match="inside a running asyncio event loop"):
        outer(lambda: dispatch_sync([ToolCall("n", "ping", {})], [ping]))
    assert_loop_fit()
