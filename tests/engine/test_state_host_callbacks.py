"""The host's callbacks (``on_event``, the ledger) failing or raising a ``BaseException``:
the batch aborts with every call answered, or the interrupt comes out bare."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

import anyio
import pytest
import trio
import trio.testing

from tests.engine.calls import add, call, ids
from tinytools import (
    Cancellation,
    DispatchAborted,
    Emit,
    Inject,
    RunPolicy,
    after_tool,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools.events import (
    Custom,
    Event,
    ToolCompleted,
    ToolStarted,
    UnknownToolCall,
)


class Halt(BaseException):
    """A host's own BaseException (neither an interrupt nor a cancellation)."""


@tool
async def step(n: int) -> int:
    """Yield once, then answer n."""
    await anyio.sleep(0)
    return n


@tool
async def step_and_report(n: int, emit: Inject[Emit]) -> int:
    """Report progress while running (the host's handler runs inside this tool)."""
    emit("progress", {"n": n})
    await anyio.sleep(0)
    return n


@tool(blocking=True)
def report_in_a_thread(n: int, emit: Inject[Emit]) -> int:
    """Report progress from a worker thread."""
    emit("progress", {"n": n})
    return n


@tool
async def halting(n: int) -> int:
    """Raise a BaseException that is neither an interrupt nor a cancellation."""
    await anyio.sleep(0)
    raise Halt(f"tool {n}")


@tool
async def exiting(n: int) -> int:
    """Raise GeneratorExit of its own accord."""
    await anyio.sleep(0)
    raise GeneratorExit(f"tool {n}")


@tool(blocking=True)
def halting_in_a_thread(n: int) -> int:
    """Raise a plain BaseException on a worker thread."""
    raise Halt(f"tool {n}")


@tool
def halting_inline(n: int) -> int:
    """Raise a plain BaseException on the calling thread."""
    raise Halt(f"tool {n}")


def _raising_on(kind: type[Event], raised: BaseException) -> Callable[[Event], None]:
    def handler(event: Event) -> None:
        if isinstance(event, kind):
            raise raised

    return handler


class _Ledger:
    """A ledger whose ``settled`` raises ``raised``."""

    def __init__(self, raised: BaseException) -> None:
        self.raised = raised

    def started(self, run_id: str, call_id: str, tool_name: str, arguments: object) -> None:
        pass

    def settled(self, run_id: str, call_id: str, status: str) -> None:
        raise self.raised

    def unresolved(self, run_id: str | None = None) -> tuple[()]:
        return ()


def _host_raising(where: str, raised: BaseException) -> tuple[str, dict[str, object]]:
    """The tool to call and the dispatch keywords making a host callback raise ``raised``
    at ``where``: during admission, as a call starts, inside the call, after it."""
    if where == "admission: on_event":
        return "step", {"on_event": _raising_on(UnknownToolCall, raised)}
    if where == "admission: before_tool":
        return "step", {"middleware": [before_tool(lambda call, env: _raise(raised))]}
    if where == "start: on_event":
        return "step", {"on_event": _raising_on(ToolStarted, raised)}
    if where == "during: on_event via Emit":
        return "step_and_report", {"on_event": _raising_on(Custom, raised)}
    if where == "during: on_event via Emit in a thread":
        return "report_in_a_thread", {"on_event": _raising_on(Custom, raised)}
    if where == "after: after_tool":
        return "step", {"middleware": [after_tool(lambda call, result, env: _raise(raised))]}
    if where == "after: on_event":
        return "step", {"on_event": _raising_on(ToolCompleted, raised)}
    if where == "after: async on_event":

        async def handler(event: Event) -> None:
            if isinstance(event, ToolCompleted):
                raise raised

        return "step", {"on_event": handler}
    assert where == "after: ledger.settled"
    return "step", {"ledger": _Ledger(raised)}


def _raise(error: BaseException) -> NoReturn:
    raise error


_WHERE = [
    "admission: on_event",
    "admission: before_tool",
    "start: on_event",
    "during: on_event via Emit",
    "during: on_event via Emit in a thread",
    "after: after_tool",
    "after: on_event",
    "after: async on_event",
    "after: ledger.settled",
]


_TOOLS = [
    step,
    step_and_report,
    report_in_a_thread,
    halting,
    exiting,
    halting_in_a_thread,
    halting_inline,
]


_OWN = ["halting", "exiting", "halting_in_a_thread", "halting_inline"]


class TestHostBaseExceptions:
    """A host callback raising a BaseException that is no Exception (the host's business,
    as an interrupt is) comes out of dispatch bare, on every event loop and concurrency."""

    @pytest.mark.parametrize(
        "raised",
        [Halt("host"), GeneratorExit("host"), asyncio.CancelledError("host")],
        ids=repr,
    )
    @pytest.mark.parametrize("concurrency", [1, 4])
    @pytest.mark.parametrize("where", _WHERE)
    @pytest.mark.anyio
    async def test_comes_out_bare(
        self, where: str, concurrency: int, raised: BaseException, anyio_backend: str
    ) -> None:
        """Defect: under trio with max_concurrency above 1 it came out wrapped in a
        BaseExceptionGroup (bare under asyncio, and serially); raised by ``on_event``
        inside a tool's ``Emit`` it became that call's error message, telling the model
        the host's exception; and an ``asyncio.CancelledError`` a host callback raised
        was swallowed by a concurrent asyncio batch, as if its task had been cancelled."""
        if (
            sys.version_info < (3, 11)
            and isinstance(raised, asyncio.CancelledError)
            and anyio_backend == "asyncio"
            and concurrency > 1
        ):
            pytest.skip("3.10 cannot tell a task's own CancelledError from its cancellation")
        name, options = _host_raising(where, raised)
        calls = [call(str(n), name, {"n": n}) for n in range(3)]
        if where == "admission: on_event":
            calls.append(call("x", "nope", {}))
        with pytest.raises(type(raised)) as info:
            await dispatch(calls, _TOOLS, policy=RunPolicy(max_concurrency=concurrency), **options)  # type: ignore[arg-type]
        assert info.value is raised

    @pytest.mark.parametrize("concurrency", [1, 4])
    @pytest.mark.parametrize("where", _WHERE)
    def test_comes_out_bare_from_dispatch_sync(self, where: str, concurrency: int) -> None:
        """The same under ``dispatch_sync`` (its asyncio loop, and trio's)."""
        raised = Halt("host")
        name, options = _host_raising(where, raised)
        calls = [call(str(n), name, {"n": n}) for n in range(3)]
        if where == "admission: on_event":
            calls.append(call("x", "nope", {}))
        for backend in ("asyncio", "trio"):
            with pytest.raises(Halt) as info:
                dispatch_sync(
                    calls,
                    _TOOLS,
                    policy=RunPolicy(max_concurrency=concurrency),
                    backend=backend,  # type: ignore[arg-type]
                    **options,  # type: ignore[arg-type]
                )
            assert info.value is raised

    @pytest.mark.parametrize("concurrency", [1, 4])
    @pytest.mark.parametrize("name", _OWN)
    @pytest.mark.anyio
    async def test_a_tools_own_is_its_calls_error(self, name: str, concurrency: int) -> None:
        """A tool raising such a BaseException itself is that call's error (documented in
        ``_engine.execute.classify``), the other calls answered, on every loop and
        concurrency; only an interrupt or the loop's cancellation propagates."""
        calls = [call("0", name, {"n": 0}), call("1", "step", {"n": 1})]
        result = await dispatch(calls, _TOOLS, policy=RunPolicy(max_concurrency=concurrency))
        _assert_the_calls_error(result, name)

    @pytest.mark.parametrize("concurrency", [1, 4])
    @pytest.mark.parametrize("name", _OWN)
    def test_a_tools_own_is_its_calls_error_under_dispatch_sync(
        self, name: str, concurrency: int
    ) -> None:
        """The same under ``dispatch_sync``, on either backend."""
        calls = [call("0", name, {"n": 0}), call("1", "step", {"n": 1})]
        policy = RunPolicy(max_concurrency=concurrency)
        for backend in ("asyncio", "trio"):
            result = dispatch_sync(calls, _TOOLS, policy=policy, backend=backend)  # type: ignore[arg-type]
            _assert_the_calls_error(result, name)


def _assert_the_calls_error(result: object, name: str) -> None:
    failed, answered = result.messages  # type: ignore[attr-defined]
    assert "error" == failed.status
    raised = "GeneratorExit" if name == "exiting" else "Halt"
    assert f"Tool `{name}` failed: {raised}: tool 0" == failed.content
    assert "1" == answered.content


class TestHostCallbacks:
    def test_on_event_failing_during_admission_aborts_with_every_call_answered(self) -> None:
        """Defect: an on_event handler raising on UnknownToolCall escaped raw."""

        def picky(event: Event) -> None:
            if isinstance(event, UnknownToolCall):
                raise OSError("log full")

        ran: list[int] = []

        @tool
        def note(n: int) -> int:
            """Record n."""
            ran.append(n)
            return n

        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(
                [call("n", "note", {"n": 1}), call("x", "nope", {})], [note], on_event=picky
            )
        assert ["n", "x"] == ids(info.value.result)
        assert ran == []  # aborted before anything ran
        assert "on_event handler picky raised OSError('log full')" in info.value.reason
        assert isinstance(info.value.__cause__, OSError)

    def test_ledger_started_failing_aborts_before_anything_runs(self) -> None:
        ran: list[int] = []

        @tool
        def note(n: int) -> int:
            """Record n."""
            ran.append(n)
            return n

        class Broken:
            def started(self, run_id: str, call_id: str, tool_name: str, arguments: object) -> None:
                raise ConnectionError("db down")

            def settled(self, run_id: str, call_id: str, status: str) -> None:
                raise AssertionError("never started, never settled")

        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(
                [call("a", "note", {"n": 1}), call("b", "note", {"n": 2})], [note], ledger=Broken()
            )
        assert ran == []
        assert ["a", "b"] == ids(info.value.result)
        assert all(m.status == "interrupted" for m in info.value.result.messages)
        assert "ConnectionError('db down')" in info.value.reason

    @pytest.mark.parametrize("backend", ["trio", "sync"])
    def test_on_event_may_cancel_while_a_threaded_tool_emits(self, backend: str) -> None:
        """Defect: an on_event handler calling Cancellation.cancel() while a threaded tool
        emitted an event deadlocked (the sink held its lock while calling the handler)."""
        handle = Cancellation()

        @tool(blocking=True)
        def chatty(emit: Inject[Emit]) -> str:
            """Emit progress from a worker thread."""
            emit("progress", {"pct": 50})
            emit("progress", {"pct": 100})
            return "done"

        def handler(event: Event) -> None:
            if isinstance(event, Custom):
                handle.cancel()

        calls = [call("c", "chatty", {}), call("a", "add", {"a": 1})]
        if backend == "sync":
            result = dispatch_sync(calls, [chatty, add], on_event=handler, cancellation=handle)
        else:

            async def main() -> object:
                with anyio.fail_after(30):  # a guard against the old deadlock, not a wait
                    return await dispatch(
                        calls, [chatty, add], on_event=handler, cancellation=handle
                    )

            result = trio.run(main)
        assert ["c", "a"] == ids(result)
        assert result.messages[1].status == "interrupted"  # type: ignore[attr-defined]

    def test_cancel_racing_the_end_of_the_batch_never_raises(self) -> None:
        """Defect: Cancellation.cancel() could raise RunFinishedError when it raced the
        batch's end."""
        failures: list[BaseException] = []

        for _ in range(30):
            handle = Cancellation()
            returned = threading.Event()

            thread = threading.Thread(target=_cancel_when, args=(returned, handle, failures))
            thread.start()
            trio.run(_dispatch_quick, returned, handle)
            thread.join(10)
        assert failures == []


def _cancel_when(
    returned: threading.Event, handle: Cancellation, failures: list[BaseException]
) -> None:
    returned.wait(10)
    try:
        handle.cancel()
    except BaseException as error:
        failures.append(error)


async def _dispatch_quick(returned: threading.Event, handle: Cancellation) -> None:
    @tool
    async def quick() -> str:
        """Answer at once; a thread cancels as the batch ends."""
        returned.set()
        return "ok"

    await dispatch([call("q", "quick", {})], [quick], cancellation=handle)
