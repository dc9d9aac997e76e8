"""Tests for `tinytools._engine.api` concurrency.

Bounded concurrency, per-call timeouts, cancellation through a `Cancellation` handle, the run
deadline, retry backoff and worker threads for synchronous tools with a timeout. Timing tests
run under trio with an autojump `MockClock` (virtual seconds, no real waiting); the others run
under trio and asyncio through the `anyio_backend` fixture and synchronise with events, never
with sleeps.
"""

from __future__ import annotations

import itertools
import math
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import attrs
import pytest
import trio
import trio.testing

from tinytools import (
    Cancellation,
    DispatchAborted,
    DispatchResult,
    FatalToolError,
    Inject,
    RetryableError,
    RunContext,
    RunPolicy,
    Tool,
    ToolCall,
    ToolPolicy,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools.events import ToolFailed, ToolRetried, ToolStarted

T = TypeVar("T")

INTERRUPTED = "Tool call interrupted: the batch was {}."
NOT_RUN = "Tool call not run: the batch was {}."


def on_mock_clock(fn: Callable[[], Awaitable[T]]) -> tuple[T, float]:
    """Run ``fn`` under trio with an autojump mock clock; returns its value and virtual time."""

    async def main() -> tuple[T, float]:
        start = trio.current_time()
        value = await fn()
        return value, trio.current_time() - start

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def statuses(result: DispatchResult) -> list[tuple[str, str]]:
    """``(call id, status)`` of every message, in order."""
    return [(m.tool_call_id, m.status) for m in result.messages]


def contents(result: DispatchResult) -> dict[str, str]:
    """Call id → the content of its message."""
    return {m.tool_call_id: m.content for m in result.messages}


@attrs.define
class Gauge:
    """Counts the tools running right now and the most that ever ran at once."""

    running: int = 0
    peak: int = 0

    def enter(self) -> None:
        """A tool started."""
        self.running += 1
        self.peak = max(self.peak, self.running)

    def leave(self) -> None:
        """A tool finished."""
        self.running -= 1


def sleeper(gauge: Gauge | None = None) -> Tool[..., object]:
    """An async tool that takes ``seconds`` (virtual, under the mock clock)."""

    @tool
    async def sleep(seconds: float) -> float:
        """Sleep, then return the seconds slept."""
        if gauge is not None:
            gauge.enter()
        try:
            await anyio.sleep(seconds)
        finally:
            if gauge is not None:
                gauge.leave()
        return seconds

    return sleep


def hanger(started: anyio.Event | None = None) -> Tool[..., object]:
    """An async tool that never returns on its own."""

    @tool
    async def hang() -> None:
        """Wait forever."""
        if started is not None:
            started.set()
        await anyio.sleep_forever()

    return hang


@tool
def quick(x: int) -> int:
    """Return x at once."""
    return x


@tool
async def aquick(x: int) -> int:
    """Return x at once, asynchronously.

    With a run-level timeout a synchronous sibling would run in a worker thread, whose
    start-up the autojump clock (or a short real timeout) may overtake; an async one does not.
    """
    return x


def calls_to(name: str, count: int, **arguments: Any) -> list[ToolCall]:
    """``count`` calls of ``name`` with the same arguments, ids ``name-0``, ``name-1``, ..."""
    return [ToolCall(f"{name}-{i}", name, dict(arguments)) for i in range(count)]


class TestMaxConcurrency:
    @pytest.mark.parametrize("k", [1, 2, 3, 5])
    def test_peak_is_k_on_mock_clock(self, k: int) -> None:
        """With max_concurrency=k, a batch of 2k+1 one-second calls runs exactly k at a time."""
        gauge = Gauge()
        calls = calls_to("sleep", 2 * k + 1, seconds=1)

        result, elapsed = on_mock_clock(
            lambda: dispatch(calls, [sleeper(gauge)], policy=RunPolicy(max_concurrency=k))
        )

        assert k == gauge.peak
        assert math.ceil(len(calls) / k) == elapsed
        assert [(c.id, "ok") for c in calls] == statuses(result)

    def test_serial_runs_in_call_order(self) -> None:
        """max_concurrency=1 starts the calls one after another, in call order."""
        calls = [ToolCall(str(i), "sleep", {"seconds": 3 - i}) for i in range(3)]

        result, elapsed = on_mock_clock(lambda: dispatch(calls, [sleeper()]))

        started = [e.call_id for e in result.events if isinstance(e, ToolStarted)]
        assert ["0", "1", "2"] == started
        assert 6 == elapsed

    @pytest.mark.anyio
    @pytest.mark.parametrize("k", [8, 3])
    async def test_concurrent_calls_start_in_call_order(self, k: int) -> None:
        """All at once or k at a time, calls start in call order (trio runs the tasks it
        has just started in either order: ten batches in order are no accident)."""
        calls = calls_to("sleep", 8, seconds=0)

        for _ in range(10):
            result = await dispatch(calls, [sleeper()], policy=RunPolicy(max_concurrency=k))
            started = [e.call_id for e in result.events if isinstance(e, ToolStarted)]
            assert [c.id for c in calls] == started

    @pytest.mark.anyio
    @pytest.mark.parametrize("k", [2, 3])
    async def test_peak_is_k_with_events(self, k: int) -> None:
        """Once every task is blocked, exactly k tools are running; releasing them finishes all."""
        gauge = Gauge()
        release = anyio.Event()

        @tool
        async def held(x: int) -> int:
            """Wait for the test to release it."""
            gauge.enter()
            try:
                await release.wait()
            finally:
                gauge.leave()
            return x

        calls = calls_to("held", 2 * k + 1, x=1)
        results: list[DispatchResult] = []

        async def run() -> None:
            results.append(await dispatch(calls, [held], policy=RunPolicy(max_concurrency=k)))

        with anyio.fail_after(10):  # a broken limiter deadlocks: fail instead of hanging
            async with anyio.create_task_group() as group:
                group.start_soon(run)
                await anyio.wait_all_tasks_blocked()
                assert k == gauge.running
                release.set()

        assert k == gauge.peak
        assert [(c.id, "ok") for c in calls] == statuses(results[0])


class TestTimeout:
    def test_timed_out_call_is_answered_and_siblings_finish(self) -> None:
        """A call past tool_timeout is answered as timed out while its siblings complete."""
        calls = [
            ToolCall("h", "hang", {}),
            ToolCall("s", "sleep", {"seconds": 2}),
            ToolCall("q", "aquick", {"x": 7}),
        ]
        policy = RunPolicy(max_concurrency=3, tool_timeout=5)

        result, elapsed = on_mock_clock(
            lambda: dispatch(calls, [hanger(), sleeper(), aquick], policy=policy)
        )

        assert [("h", "error"), ("s", "ok"), ("q", "ok")] == statuses(result)
        assert "Tool `hang` timed out after 5 seconds." == contents(result)["h"]
        assert {"s": "2.0", "q": "7"} == {k: v for k, v in contents(result).items() if k != "h"}
        failed = [e for e in result.events if isinstance(e, ToolFailed)]
        assert [("h", "TimeoutError")] == [(e.call_id, e.error_type) for e in failed]
        assert 5 == elapsed

    def test_serial_batch_goes_on_after_a_timeout(self) -> None:
        """Serially, the call after a timed-out one still runs."""
        calls = [ToolCall("h", "hang", {}), ToolCall("q", "aquick", {"x": 1})]

        result, elapsed = on_mock_clock(
            lambda: dispatch(calls, [hanger(), aquick], policy=RunPolicy(tool_timeout=1.5))
        )

        assert [("h", "error"), ("q", "ok")] == statuses(result)
        assert 1.5 == elapsed

    def test_tool_timeout_overrides_run_timeout(self) -> None:
        """A tool's own runtime timeout wins over the run's tool_timeout."""
        patient = attrs.evolve(hanger(), policy=ToolPolicy().with_runtime(timeout=9))

        result, elapsed = on_mock_clock(
            lambda: dispatch(
                [ToolCall("h", "hang", {})], [patient], policy=RunPolicy(tool_timeout=1)
            )
        )

        assert "Tool `hang` timed out after 9 seconds." == contents(result)["h"]
        assert 9 == elapsed

    @pytest.mark.parametrize("limit", ["tool_timeout", "deadline"])
    def test_a_tool_that_refuses_cancellation_is_waited_for(self, limit: str) -> None:
        """An async tool that catches the cancellation at its timeout (or the batch's
        deadline) and goes on is waited for — a coroutine cannot be stopped against its
        will — and the value it then returns is its answer: nothing it did is lost."""

        @tool
        async def stubborn() -> str:
            try:
                await trio.sleep(10)
            except trio.Cancelled:
                await trio.lowlevel.cancel_shielded_checkpoint()
                return "finished anyway"
            return "never cancelled"

        policy = RunPolicy(**{limit: 1})
        result, elapsed = on_mock_clock(
            lambda: dispatch([ToolCall("s", "stubborn", {})], [stubborn], policy=policy)
        )

        assert {"s": "finished anyway"} == contents(result)
        assert [("s", "ok")] == statuses(result)
        assert 1 == elapsed

    @pytest.mark.anyio
    async def test_timeout_under_each_backend(self) -> None:
        """Under trio and asyncio alike, a hanging call times out and its sibling is answered."""
        calls = [ToolCall("h", "hang", {}), ToolCall("q", "aquick", {"x": 3})]
        policy = RunPolicy(max_concurrency=2, tool_timeout=0.01)

        with anyio.fail_after(10):
            result = await dispatch(calls, [hanger(), aquick], policy=policy)

        assert [("h", "error"), ("q", "ok")] == statuses(result)
        assert "timed out" in contents(result)["h"]


class TestCancellation:
    @pytest.mark.anyio
    @pytest.mark.parametrize("where", ["task", "thread"])
    async def test_cancel_answers_every_call(self, where: str) -> None:
        """Cancelling from another task or thread interrupts running calls and skips the rest."""
        handle = Cancellation()
        started = anyio.Event()
        calls = [
            ToolCall("a", "hang", {}),
            ToolCall("b", "hang", {}),
            ToolCall("c", "quick", {"x": 1}),
        ]
        results: list[DispatchResult] = []

        async def cancel() -> None:
            await started.wait()
            if where == "task":
                handle.cancel()
            else:
                await anyio.to_thread.run_sync(handle.cancel)

        async def run_with_handle() -> None:
            policy = RunPolicy(max_concurrency=1)
            hang = hanger(started)
            results.append(await dispatch(calls, [hang, quick], policy=policy, cancellation=handle))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(run_with_handle)
                group.start_soon(cancel)

        result = results[0]
        assert [("a", "interrupted"), ("b", "interrupted"), ("c", "interrupted")] == statuses(
            result
        )
        assert {
            "a": INTERRUPTED.format("cancelled"),
            "b": NOT_RUN.format("cancelled"),
            "c": NOT_RUN.format("cancelled"),
        } == contents(result)
        assert ("a",) == result.executed
        failed = [(e.call_id, e.error_type) for e in result.events if isinstance(e, ToolFailed)]
        assert [("a", "Cancelled")] == failed

    @pytest.mark.anyio
    async def test_cancel_from_inside_a_tool(self) -> None:
        """A tool cancelling its own batch interrupts the siblings running beside it."""
        handle = Cancellation()
        hangs = anyio.Semaphore(0)

        @tool
        async def hang() -> None:
            """Wait forever."""
            hangs.release()
            await anyio.sleep_forever()

        @tool
        async def stop() -> str:
            """Cancel the batch once both hanging calls run."""
            for _ in range(2):
                await hangs.acquire()
            handle.cancel()
            return "stopped"

        # Every call holds a slot: trio starts same-tick tasks in random order.
        calls = [ToolCall("a", "hang", {}), ToolCall("b", "stop", {}), ToolCall("c", "hang", {})]
        policy = RunPolicy(max_concurrency=3)

        with anyio.fail_after(10):
            result = await dispatch(calls, [hang, stop], policy=policy, cancellation=handle)

        messages = contents(result)
        assert ["a", "b", "c"] == [m.tool_call_id for m in result.messages]
        assert ("a", "b", "c") == result.executed
        assert INTERRUPTED.format("cancelled") == messages["a"]
        assert INTERRUPTED.format("cancelled") == messages["c"]
        # `stop` was running too: answered with its result or as interrupted, never dropped.
        assert messages["b"] in {"stopped", INTERRUPTED.format("cancelled")}

    @pytest.mark.anyio
    async def test_cancel_from_inside_a_serial_batch(self) -> None:
        """Serially, the calls after the cancelling one are never started."""
        handle = Cancellation()

        @tool
        async def stop() -> str:
            """Cancel the batch."""
            handle.cancel()
            return "stopped"

        calls = [ToolCall("a", "stop", {}), ToolCall("b", "quick", {"x": 1})]
        calls.append(ToolCall("c", "hang", {}))

        with anyio.fail_after(10):
            result = await dispatch(calls, [stop, quick, hanger()], cancellation=handle)

        assert ("a",) == result.executed
        assert {"b", "c"} == {m.tool_call_id for m in result.messages if m.status == "interrupted"}
        assert NOT_RUN.format("cancelled") == contents(result)["b"]
        assert NOT_RUN.format("cancelled") == contents(result)["c"]

    def test_cancel_in_dispatch_sync(self) -> None:
        """Without an event loop, a cancel takes effect between calls; dispatch_sync returns."""
        handle = Cancellation()

        @tool
        def stop() -> str:
            """Cancel the batch."""
            handle.cancel()
            return "stopped"

        calls = [ToolCall("a", "quick", {"x": 1}), ToolCall("b", "stop", {})]
        calls.append(ToolCall("c", "quick", {"x": 2}))

        result = dispatch_sync(calls, [quick, stop], cancellation=handle)

        assert [("a", "ok"), ("b", "ok"), ("c", "interrupted")] == statuses(result)
        assert NOT_RUN.format("cancelled") == contents(result)["c"]

    @pytest.mark.anyio
    async def test_cancelled_before_dispatch(self) -> None:
        """A handle cancelled beforehand answers every call as interrupted and runs none."""
        handle = Cancellation()
        handle.cancel()

        result = await dispatch(calls_to("quick", 3, x=1), [quick], cancellation=handle)

        assert ["interrupted"] * 3 == [m.status for m in result.messages]
        assert () == result.executed


class TestDeadline:
    def test_deadline_interrupts_slow_calls(self) -> None:
        """Calls still running at the run deadline are interrupted; faster ones finish."""
        calls = [
            ToolCall("fast", "sleep", {"seconds": 1}),
            ToolCall("hang", "hang", {}),
            ToolCall("slow", "sleep", {"seconds": 5}),
        ]
        policy = RunPolicy(max_concurrency=3, deadline=3)

        result, elapsed = on_mock_clock(
            lambda: dispatch(calls, [sleeper(), hanger()], policy=policy)
        )

        assert [("fast", "ok"), ("hang", "interrupted"), ("slow", "interrupted")] == statuses(
            result
        )
        assert INTERRUPTED.format("past its deadline") == contents(result)["slow"]
        assert 3 == elapsed

    def test_serial_deadline_skips_unstarted_calls(self) -> None:
        """Serially, the call running at the deadline is interrupted and later ones never start."""
        calls = calls_to("sleep", 3, seconds=2)

        result, elapsed = on_mock_clock(
            lambda: dispatch(calls, [sleeper()], policy=RunPolicy(deadline=3))
        )

        assert ["ok", "interrupted", "interrupted"] == [m.status for m in result.messages]
        assert INTERRUPTED.format("past its deadline") == result.messages[1].content
        assert NOT_RUN.format("past its deadline") == result.messages[2].content
        assert ("sleep-0", "sleep-1") == result.executed
        assert 3 == elapsed

    @pytest.mark.parametrize("concurrency", [1, 3])
    def test_no_call_starts_after_a_call_passes_the_deadline(self, concurrency: int) -> None:
        """A call that passes the deadline without ever yielding (so the loop cannot
        interrupt anything) is answered; no later call starts, serially or all at once."""
        clock = trio.testing.MockClock()

        @tool
        async def overrun() -> str:
            """Take longer than the batch may, without yielding."""
            clock.jump(5)
            return "done"

        calls = [ToolCall("a", "overrun", {}), *calls_to("quick", 2, x=1)]
        policy = RunPolicy(max_concurrency=concurrency, deadline=3)

        async def main() -> DispatchResult:
            return await dispatch(calls, [overrun, quick], policy=policy)

        result = trio.run(main, clock=clock)

        assert ("a",) == result.executed
        assert "done" == result.messages[0].content
        assert [NOT_RUN.format("past its deadline")] * 2 == [m.content for m in result.messages[1:]]

    def test_sync_tools_at_the_deadline(self) -> None:
        """A sync tool run inline keeps its answer past the deadline; one on a worker
        thread is abandoned and answered as interrupted (RunPolicy.deadline)."""
        clock = trio.testing.MockClock(autojump_threshold=0)
        release = threading.Event()

        @tool
        def inline() -> str:
            """Take longer than the batch may; nothing can stop it."""
            clock.jump(5)
            return "done"

        @tool(blocking=True)
        def threaded() -> str:
            """Block its worker thread until the test is over."""
            release.wait(10)
            return "done"

        async def main(name: str) -> DispatchResult:
            policy = RunPolicy(deadline=3)
            return await dispatch([ToolCall("a", name, {})], [inline, threaded], policy=policy)

        try:
            kept = trio.run(main, "inline", clock=clock)
            abandoned = trio.run(main, "threaded", clock=clock)
        finally:
            release.set()
        assert ("ok", "done") == (kept.messages[0].status, kept.messages[0].content)
        assert INTERRUPTED.format("past its deadline") == abandoned.messages[0].content

    def test_tools_see_the_deadline(self) -> None:
        """An injected RunContext carries the batch's deadline on the loop's clock."""
        seen: list[float | None] = []

        @tool
        async def look(run: Inject[RunContext]) -> None:
            """Record the deadline."""
            seen.append(run.deadline)

        async def main() -> float:
            start = trio.current_time()
            await dispatch([ToolCall("1", "look", {})], [look], policy=RunPolicy(deadline=4))
            return start

        start, _ = on_mock_clock(main)

        assert [start + 4] == seen


def flaky(failures: int, retries: int, attempts: list[float]) -> Tool[..., object]:
    """An async tool raising RetryableError ``failures`` times, noting each attempt's time."""

    @tool(policy=ToolPolicy.classified().with_runtime(max_retries=retries))
    async def flaky_tool() -> int:
        """Fail transiently, then succeed."""
        attempts.append(anyio.current_time())
        if len(attempts) <= failures:
            raise RetryableError(f"transient {len(attempts)}")
        return len(attempts)

    return attrs.evolve(flaky_tool, name="flaky")


class TestRetries:
    def test_backoff_on_the_mock_clock(self) -> None:
        """Each retry is a ToolRetried event and waits its jittered exponential delay."""
        attempts: list[float] = []
        policy = RunPolicy(retry_base_delay=10, retry_max_delay=25)
        result, elapsed = on_mock_clock(
            lambda: dispatch([ToolCall("1", "flaky", {})], [flaky(3, 3, attempts)], policy=policy)
        )

        retried = [e for e in result.events if isinstance(e, ToolRetried)]
        assert [1, 2, 3] == [e.attempt for e in retried]
        assert ["transient 1", "transient 2", "transient 3"] == [e.error for e in retried]
        for event, ceiling in zip(retried, [10, 20, 25], strict=True):
            assert ceiling / 2 <= event.delay <= ceiling, event
        gaps = [later - earlier for earlier, later in itertools.pairwise(attempts)]
        assert pytest.approx([e.delay for e in retried]) == gaps
        assert pytest.approx(sum(e.delay for e in retried)) == elapsed
        assert [("1", "ok")] == statuses(result)
        assert "4" == result.messages[0].content

    @pytest.mark.parametrize(("failures", "retries"), [(5, 2), (1, 0)])
    def test_exhausted_retries_are_reported(self, failures: int, retries: int) -> None:
        """After max_retries retries the last RetryableError is answered as an error."""
        attempts: list[float] = []

        result, _ = on_mock_clock(
            lambda: dispatch([ToolCall("1", "flaky", {})], [flaky(failures, retries, attempts)])
        )

        retried = [e for e in result.events if isinstance(e, ToolRetried)]
        assert retries == len(retried)
        assert retries + 1 == len(attempts)
        expected = f"Tool `flaky` failed: RetryableError: transient {retries + 1}"
        assert [("1", "error")] == statuses(result)
        assert expected == result.messages[0].content

    def test_retries_in_dispatch_sync(self) -> None:
        """The loop-free path retries synchronous tools the same way."""
        failures = iter([True, True, False])

        @tool(policy=ToolPolicy.classified().with_runtime(max_retries=2))
        def shaky() -> str:
            """Fail twice."""
            if next(failures):
                raise RetryableError("again")
            return "done"

        policy = RunPolicy(retry_base_delay=0.001, retry_max_delay=0.001)
        result = dispatch_sync([ToolCall("1", "shaky", {})], [shaky], policy=policy)

        assert [1, 2] == [e.attempt for e in result.events if isinstance(e, ToolRetried)]
        assert "done" == result.messages[0].content


@attrs.define
class Blocker:
    """A synchronous tool that blocks until the test releases it, then reports what it saw."""

    release: threading.Event = attrs.Factory(threading.Event)
    done: threading.Event = attrs.Factory(threading.Event)
    saw_cancel: threading.Event = attrs.Factory(threading.Event)
    threads: list[int] = attrs.Factory(list)

    def tool(self) -> Tool[..., object]:
        @tool
        def block(cancel: Inject[Cancellation]) -> str:
            """Block until released."""
            self.threads.append(threading.get_ident())
            self.release.wait(timeout=30)  # the bound only matters if a test fails
            if cancel.cancelled:
                self.saw_cancel.set()
            self.done.set()
            return "released"

        return block

    def check_abandoned(self, result: DispatchResult, timeout: float) -> None:
        """The blocked call timed out while its thread kept running, then saw its cancellation."""
        assert [("b", "error"), ("q", "ok")] == statuses(result)
        assert f"Tool `block` timed out after {timeout:g} seconds." == contents(result)["b"]
        assert not self.done.is_set(), "dispatch must not wait for the abandoned thread"
        self.release.set()
        assert self.done.wait(timeout=30)
        assert self.saw_cancel.is_set()
        assert threading.get_ident() not in self.threads


BLOCKED = [ToolCall("b", "block", {}), ToolCall("q", "aquick", {"x": 1})]


class TestThreadedTimeout:
    def test_dispatch_sync(self) -> None:
        """dispatch_sync runs a sync tool with a timeout in a worker thread and abandons it."""
        blocker = Blocker()

        result = dispatch_sync(
            BLOCKED, [blocker.tool(), aquick], policy=RunPolicy(tool_timeout=0.01)
        )

        blocker.check_abandoned(result, 0.01)

    def test_mock_clock(self) -> None:
        """Under trio's mock clock the timeout holds in virtual time while the thread blocks."""
        blocker = Blocker()
        policy = RunPolicy(tool_timeout=60, max_concurrency=2)

        result, elapsed = on_mock_clock(
            lambda: dispatch(BLOCKED, [blocker.tool(), aquick], policy=policy)
        )

        blocker.check_abandoned(result, 60)
        assert 60 == elapsed

    @pytest.mark.anyio
    async def test_each_backend(self) -> None:
        """Under trio and asyncio, `await dispatch` abandons the timed-out thread the same way.

        The timeout leaves the worker thread time to start: anyio's asyncio backend drops a job
        cancelled before a worker thread takes it, so on a loaded machine a 10 ms timeout could
        expire before the tool ever ran, and there would be no abandoned thread to check.
        """
        blocker = Blocker()

        with anyio.fail_after(10):
            result = await dispatch(
                BLOCKED, [blocker.tool(), aquick], policy=RunPolicy(tool_timeout=0.5)
            )

        blocker.check_abandoned(result, 0.5)


def ender(started: anyio.Semaphore, ended: list[str]) -> Tool[..., object]:
    """An async tool that waits forever, says when it started and records its end."""

    @tool
    async def wait_forever(name: str) -> None:
        """Wait until cancelled."""
        started.release()
        try:
            await anyio.sleep_forever()
        finally:
            ended.append(name)

    return wait_forever


class TestHostCancel:
    @pytest.mark.anyio
    @pytest.mark.parametrize("concurrency", [3, 2])
    async def test_a_host_cancel_ends_every_running_call(self, concurrency: int) -> None:
        """A host cancelling `await dispatch` (one task per call, or fewer workers than
        calls) ends every running tool before the cancellation reaches the host."""
        started, ended = anyio.Semaphore(0), []
        calls = [ToolCall(n, "wait_forever", {"name": n}) for n in "abc"]
        returned: list[DispatchResult] = []
        policy = RunPolicy(max_concurrency=concurrency)

        async def run() -> None:
            returned.append(await dispatch(calls, [ender(started, ended)], policy=policy))

        with anyio.fail_after(10):
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(run)
                    for _ in range(concurrency):
                        await started.acquire()
                    scope.cancel()

        assert returned == []
        assert sorted(ended) == ["a", "b", "c"][:concurrency]

    def test_cancelling_the_dispatch_task_under_asyncio_leaves_no_task(self) -> None:
        """Cancelling the task that awaits dispatch under plain asyncio raises CancelledError
        there, once every call's task has ended."""
        import asyncio

        ended: list[str] = []

        async def main() -> None:
            started = anyio.Semaphore(0)
            calls = [ToolCall(n, "wait_forever", {"name": n}) for n in "abc"]
            policy = RunPolicy(max_concurrency=3)
            task = asyncio.ensure_future(dispatch(calls, [ender(started, ended)], policy=policy))
            for _ in range(3):
                await started.acquire()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert asyncio.all_tasks() == {asyncio.current_task()}

        asyncio.run(main())
        assert sorted(ended) == ["a", "b", "c"]


class TestEagerTasks:
    @pytest.mark.skipif(sys.version_info < (3, 12), reason="eager tasks are new in Python 3.12")
    def test_a_loop_starting_tasks_eagerly(self) -> None:
        """Under a loop whose tasks start eagerly (a call may end inside create_task),
        every call is answered, and a fatal first call still starts no other."""
        import asyncio

        @tool
        def fail() -> None:
            """Fail fatally at once."""
            raise FatalToolError("stop everything")

        async def main() -> tuple[DispatchResult, DispatchAborted]:
            asyncio.get_running_loop().set_task_factory(asyncio.eager_task_factory)  # type: ignore[attr-defined]
            calls = calls_to("quick", 2, x=1) + calls_to("sleep", 2, seconds=0)
            policy = RunPolicy(max_concurrency=4)
            result = await dispatch(calls, [quick, sleeper()], policy=policy)
            calls = [ToolCall("f", "fail", {}), *calls]
            with pytest.raises(DispatchAborted) as info:
                await dispatch(calls, [quick, sleeper(), fail], policy=RunPolicy(max_concurrency=5))
            return result, info.value

        result, aborted = asyncio.run(main())
        assert ["ok"] * 4 == [status for _, status in statuses(result)]
        assert ("f",) == aborted.result.executed
        assert 5 == len(aborted.result.messages)


class TestFatalStopsSiblings:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("order", "concurrency"), [("abfc", 4), ("afz", 2)], ids=["each-call", "workers"]
    )
    async def test_a_fatal_call_interrupts_its_running_siblings(
        self, order: str, concurrency: int
    ) -> None:
        """A fatal call ends the siblings running beside it and starts no other; every call
        is answered, in call order."""
        started, ended = anyio.Semaphore(0), []
        running = order[:concurrency].replace("f", "")

        @tool
        async def fail() -> None:
            """Fail fatally once the siblings beside it run."""
            for _ in running:
                await started.acquire()
            raise FatalToolError("stop everything")

        calls = [
            ToolCall("f", "fail", {}) if n == "f" else ToolCall(n, "wait_forever", {"name": n})
            for n in order
        ]
        policy = RunPolicy(max_concurrency=concurrency)

        with anyio.fail_after(10):
            with pytest.raises(DispatchAborted) as info:
                await dispatch(calls, [ender(started, ended), fail], policy=policy)

        result = info.value.result
        assert list(order) == [m.tool_call_id for m in result.messages]
        assert sorted(ended) == sorted(running)
        answers = dict(statuses(result))
        assert answers.pop("f") == "error"
        assert set(answers.values()) == {"interrupted"}
        assert set(result.executed) == {"f", *running}

    @pytest.mark.anyio
    async def test_a_fatal_call_before_its_siblings_start_runs_none_of_them(self) -> None:
        """A synchronous fatal call first in an all-at-once batch: the tasks of the other
        calls are cancelled before they ever ran, and dispatch still returns."""

        @tool
        def fail() -> None:
            """Fail fatally at once."""
            raise FatalToolError("stop everything")

        started, ended = anyio.Semaphore(0), []
        calls = [ToolCall("f", "fail", {})]
        calls += [ToolCall(n, "wait_forever", {"name": n}) for n in "ab"]

        with anyio.fail_after(10):
            with pytest.raises(DispatchAborted) as info:
                await dispatch(
                    calls, [ender(started, ended), fail], policy=RunPolicy(max_concurrency=3)
                )

        assert ["f", "a", "b"] == [m.tool_call_id for m in info.value.result.messages]
        assert ("f",) == info.value.result.executed
        assert ended == []
