"""The run's events: ``on_event`` sees each event live, in order and once, on every route
(sync and async handlers, threaded and async tools), and a failing handler aborts."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

import anyio
import attrs
import msgspec
import pytest
import trio
import trio.testing

from tests.engine.dispatch_tools import (
    TOOLS,
    _reset,  # noqa: F401 (autouse: clears `ran`)
    call,
    ran,
)
from tinytools import (
    DispatchAborted,
    DispatchResult,
    Emit,
    Inject,
    RunPolicy,
    Tool,
    ToolCall,
    ToolDefinitionError,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools.events import (
    Custom,
    Event,
)


def kinds(events: tuple[Event, ...]) -> list[str]:
    """The ``kind`` tag of each event."""
    return [json.loads(msgspec.json.encode(e))["kind"] for e in events]


class TestEventsAndContext:
    def test_on_event_live_sync(self) -> None:
        """A sync on_event receives exactly the result's events, in order."""
        seen: list[Event] = []
        result = dispatch_sync(
            [call("c", "add", '{"a": 1}'), call("d", "x")], TOOLS, on_event=seen.append
        )
        assert list(result.events) == seen

    def test_every_call_admitted_before_any_tool_runs(self) -> None:
        """The last call's admission answer is out before the first call's tool runs."""
        seen: list[Event] = []

        @tool
        def look(a: int) -> int:
            """Report how many events came before it ran."""
            return len(seen)

        calls = [call("c", "look", '{"a": 1}'), call("d", "nope"), call("e", "look", "{a: x}")]
        result = dispatch_sync(calls, [look], on_event=seen.append)
        kinds = [e.kind for e in seen[: int(result.messages[0].content)]]
        assert ["unknown_tool_call", "invalid_tool_args", "tool_started"] == kinds

    @pytest.mark.anyio
    async def test_on_event_async(self) -> None:
        """An async on_event receives every event in order."""
        seen: list[Event] = []

        async def record(event: Event) -> None:
            seen.append(event)

        result = await dispatch([call("c", "add", '{"a": 1}')], TOOLS, on_event=record)
        assert list(result.events) == seen

    @pytest.mark.anyio
    async def test_on_event_object_with_async_call(self) -> None:
        """An object whose __call__ is async is awaited like an async function."""

        class Recorder:
            def __init__(self) -> None:
                self.kinds: list[str] = []

            async def __call__(self, event: Event) -> None:
                await anyio.lowlevel.checkpoint()
                self.kinds.append(type(event).__name__)

        recorder = Recorder()
        result = await dispatch([call("c", "add", '{"a": 1}')], TOOLS, on_event=recorder)
        assert [type(e).__name__ for e in result.events] == recorder.kinds
        assert ["ToolStarted", "ToolCompleted"] == recorder.kinds

    def test_unsatisfiable_injection(self) -> None:
        """A tool whose injection the context cannot satisfy fails before anything runs."""
        with pytest.raises(ToolDefinitionError, match="no store"):
            dispatch_sync(
                [call("a", "add", '{"a": 1}'), call("b", "stored", '{"key": "k"}')], TOOLS
            )
        assert [] == ran

    def test_sync_path_has_no_event_loop(self) -> None:
        """dispatch_sync runs synchronous tools without any event loop."""
        seen: list[str] = []

        @tool
        def probe() -> str:
            try:
                asyncio.get_running_loop()
                seen.append("asyncio")
            except RuntimeError:
                pass
            try:
                trio.lowlevel.current_trio_token()
                seen.append("trio")
            except RuntimeError:
                pass
            return "x"

        dispatch_sync([call("c", "probe")], [probe])
        assert [] == seen

    def test_ledger_hooks(self) -> None:
        """A ledger hears started before any tool runs and settled after each call."""
        log: list[tuple[str, ...]] = []

        class Ledger:
            def started(self, run_id: str, call_id: str, tool_name: str, arguments: object) -> None:
                log.append(("started", call_id, str(ran)))

            def settled(self, run_id: str, call_id: str, status: str) -> None:
                log.append(("settled", call_id, status))

        dispatch_sync(
            [call("1", "add", '{"a": 1}'), call("2", "add", '{"a": 2}')], TOOLS, ledger=Ledger()
        )
        assert [
            ("started", "1", "[]"),
            ("started", "2", "[]"),
            ("settled", "1", "ok"),
            ("settled", "2", "ok"),
        ] == log

    def test_events_encode(self) -> None:
        """Every event of a mixed batch encodes to JSON and decodes back."""
        calls = [
            call("1", "add", '{"a": 1}'),
            call("2", "nope"),
            call("3", "add", "{a:1}"),
            call("4", "lookup"),
        ]
        result = dispatch_sync(calls, TOOLS)
        data = msgspec.json.encode(result.events)
        assert list(result.events) == msgspec.json.decode(data, type=list[Event])
        assert ["unknown_tool_call", "invalid_tool_args", "tool_deferred"] == kinds(result.events)[
            :3
        ]
        assert kinds(result.events) == [event.kind for event in result.events]


#: How long a live-delivery test waits, at most, for what should come at once: a guard,
#: never a synchronisation (under trio's autojumping MockClock it passes in no time once
#: nothing else can run, so a hand-off that is not live fails at once; elsewhere it fails
#: after this many seconds instead of hanging).
_GUARD = 10.0


#: How each live-delivery test runs its batch: ``await dispatch`` under trio or asyncio,
#: or ``dispatch_sync`` on its asyncio loop or under trio.
_RUNNERS = ["trio", "asyncio", "dispatch_sync", "dispatch_sync-trio"]


def _run_batch(
    runner: str,
    calls: list[ToolCall],
    tools: list[Tool[..., object]],
    on_event: Callable[[Event], object],
    *,
    mock_clock: bool = False,
    **options: Any,
) -> DispatchResult:
    """``calls`` dispatched by ``runner``, under the :data:`_GUARD` timeout (on trio's
    autojumping mock clock with ``mock_clock``: only when no thread of the test's must be
    waited for, as the mock clock jumps while the loop waits for one)."""
    if runner.startswith("dispatch_sync"):  # (the guard: the batch's deadline)
        backend = "trio" if runner.endswith("trio") else "asyncio"
        policy = attrs.evolve(options.pop("policy", RunPolicy()), deadline=_GUARD)
        return dispatch_sync(
            calls, tools, on_event=on_event, backend=backend, policy=policy, **options
        )

    async def main() -> DispatchResult:
        with anyio.fail_after(_GUARD):
            return await dispatch(calls, tools, on_event=on_event, **options)

    if runner == "trio":
        clock = trio.testing.MockClock(autojump_threshold=0) if mock_clock else None
        return trio.run(main, clock=clock)
    return asyncio.run(main())


class TestLiveEmit:
    """An event a tool emits reaches ``on_event`` while the tool still runs: each tool here
    waits for what only the handler does on hearing its progress event, so a batch ends
    only when the hand-off is live."""

    @pytest.mark.parametrize("runner", _RUNNERS)
    def test_async_tool_to_async_handler(self, runner: str) -> None:
        """Defect: an async handler got an async tool's events only when the tool had
        returned (at dispatch's next await point), so a tool waiting for its host to hear
        its progress waited forever."""
        heard: list[anyio.Event] = []

        @tool
        async def long_job(steps: int, emit: Inject[Emit]) -> str:
            """Report progress, and go on once the host has heard it."""
            for step in range(steps):
                heard.append(anyio.Event())  # (made on the batch's own loop)
                emit("progress", {"step": step})
                await heard[step].wait()
            return "finished"

        async def on_event(event: Event) -> None:
            if isinstance(event, Custom):
                heard[event.data["step"]].set()  # type: ignore[index]

        result = _run_batch(
            runner, [call("c", "long_job", '{"steps": 3}')], [long_job], on_event, mock_clock=True
        )
        assert result.messages[0].content == "finished"
        assert kinds(result.events) == ["tool_started", *["custom"] * 3, "tool_completed"]

    @pytest.mark.parametrize("route", ["blocking", "timeout"])
    @pytest.mark.parametrize("runner", _RUNNERS)
    def test_threaded_tool_to_async_handler(self, runner: str, route: str) -> None:
        """Defect: an async handler got the events of a sync tool on a worker thread
        (``blocking=True`` or a timeout) only once the thread had finished."""
        heard = threading.Event()

        @tool(blocking=route == "blocking", timeout=None if route == "blocking" else 60.0)
        def long_job(emit: Inject[Emit]) -> str:
            """Report progress, and go on once the host has heard it."""
            emit("progress", {"pct": 50})
            return "finished" if heard.wait(_GUARD) else "the host never heard the progress"

        async def on_event(event: Event) -> None:
            await anyio.lowlevel.checkpoint()  # (a handler that awaits, as real ones do)
            if isinstance(event, Custom):
                heard.set()

        result = _run_batch(runner, [call("c", "long_job")], [long_job], on_event)
        assert result.messages[0].content == "finished"

    @pytest.mark.parametrize("runner", _RUNNERS)
    def test_order_and_once_with_concurrent_threads(self, runner: str) -> None:
        """Live events from several threads at once reach the handler in the order the
        result lists them, each once."""

        @tool(blocking=True)
        def counter(n: int, emit: Inject[Emit]) -> int:
            """Count to n, reporting each step."""
            for i in range(n):
                emit("step", i)
            return n

        seen: list[Event] = []

        async def on_event(event: Event) -> None:
            await anyio.lowlevel.checkpoint()
            seen.append(event)

        calls = [call(f"c{i}", "counter", {"n": 20}) for i in range(4)]
        result = _run_batch(runner, calls, [counter], on_event, policy=RunPolicy(max_concurrency=4))
        assert [m.content for m in result.messages] == ["20"] * 4
        assert seen == list(result.events)
        assert len(result.events) == 4 * 22

    @pytest.mark.parametrize("runner", ["trio", "asyncio"])
    def test_handler_failure_while_the_tool_runs_aborts(self, runner: str) -> None:
        """A handler that raises on a live event fails the run as on any other event: the
        batch aborts with every call answered, the next call never starts."""

        @tool
        async def long_job(emit: Inject[Emit]) -> str:
            """Report progress, and go on once the host has heard it."""
            emit("progress", None)
            await anyio.lowlevel.checkpoint()
            return "finished"

        async def on_event(event: Event) -> None:
            if isinstance(event, Custom):
                raise ValueError("the progress bar broke")

        calls = [call("a", "long_job"), call("b", "long_job")]
        with pytest.raises(DispatchAborted, match="progress bar broke") as raised:
            _run_batch(runner, calls, [long_job], on_event, mock_clock=True)
        assert [m.tool_call_id for m in raised.value.result.messages] == ["a", "b"]
        assert raised.value.result.executed == ("a",)

    @pytest.mark.parametrize("runner", ["trio", "asyncio"])
    def test_handler_base_exception_ends_a_running_tool(self, runner: str) -> None:
        """What the handler raises that is no ``Exception`` leaves dispatch bare, at once:
        the tool that emitted is cancelled, not waited for."""

        class Stop(BaseException):
            pass

        @tool
        async def endless(emit: Inject[Emit]) -> str:
            """Report progress, then wait forever."""
            emit("progress", None)
            await anyio.sleep_forever()
            return "never"

        async def on_event(event: Event) -> None:
            if isinstance(event, Custom):
                raise Stop

        async def main() -> float:
            began = anyio.current_time()
            with anyio.move_on_after(_GUARD), pytest.raises(Stop):
                await dispatch([call("c", "endless")], [endless], on_event=on_event)
            return anyio.current_time() - began

        if runner == "trio":
            took = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
        else:
            took = asyncio.run(main())
        assert took < _GUARD  # (not left to the guard: the handler's exception ended it)

    @pytest.mark.parametrize("runner", ["trio", "asyncio"])
    def test_late_event_of_an_abandoned_thread_is_dropped(self, runner: str) -> None:
        """An event a timed-out tool's thread emits after dispatch returned never reaches
        the handler (nor any later batch's)."""
        release, emitted = threading.Event(), threading.Event()

        @tool(timeout=0.01)
        def stuck(emit: Inject[Emit]) -> str:
            """Block past its timeout, then report."""
            release.wait(_GUARD)
            emit("late", None)
            emitted.set()
            return "too late"

        seen: list[str] = []

        async def on_event(event: Event) -> None:
            seen.append(event.kind)

        async def main() -> list[str]:
            result = await dispatch([call("c", "stuck")], [stuck], on_event=on_event)
            handled = list(seen)
            release.set()
            await anyio.to_thread.run_sync(emitted.wait, _GUARD)
            for _ in range(10):  # (the loop runs whatever the late event scheduled)
                await anyio.lowlevel.checkpoint()
            assert result.messages[0].status == "error"
            assert handled == kinds(result.events)
            return list(seen)

        after = trio.run(main) if runner == "trio" else asyncio.run(main())
        assert "custom" not in after
        assert emitted.is_set()


class TestLiveEmitSyncHandler:
    """A synchronous handler is called as the event happens, on every route: on the thread
    that emits it (a tool's worker thread included)."""

    @pytest.mark.parametrize("runner", _RUNNERS)
    @pytest.mark.parametrize("route", ["inline", "async", "blocking", "timeout"])
    def test_called_at_once_on_the_emitting_thread(self, runner: str, route: str) -> None:
        threads: list[int] = []
        heard: list[int] = []

        def on_event(event: Event) -> None:
            if isinstance(event, Custom):
                heard.append(threading.get_ident())

        if route == "async":

            @tool(name="job")
            async def async_job(emit: Inject[Emit]) -> str:
                """Report progress; say whether the host heard it at once."""
                threads.append(threading.get_ident())
                emit("progress", None)
                return "heard" if heard else "not heard"

            job = async_job
        else:

            @tool(
                name="job",
                blocking=route == "blocking",
                timeout=60.0 if route == "timeout" else None,
            )
            def sync_job(emit: Inject[Emit]) -> str:
                """Report progress; say whether the host heard it at once."""
                threads.append(threading.get_ident())
                emit("progress", None)
                return "heard" if heard else "not heard"

            job = sync_job
        result = _run_batch(runner, [call("c", "job")], [job], on_event)
        assert result.messages[0].content == "heard"
        assert heard == threads  # called on the tool's own thread
