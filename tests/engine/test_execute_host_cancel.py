"""The host's own task or scope cancelled mid-dispatch (a client that disconnects, a
timeout around ``await dispatch``), and many batches sharing one event loop.

What the host cancels reaches it unchanged (its own cancellation, bare, never a
result, a ``DispatchAborted`` or an exception group); nothing of the batch is left
behind: no callback on a shared ``Cancellation``, no ledger row of a call that never
started (those that started stay unresolved). Synchronised with events, never sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
import signal
import sys
import threading
from collections.abc import Iterator, Mapping

import anyio
import pytest
import trio

from tinytools import (
    Cancellation,
    Context,
    DispatchResult,
    Inject,
    MemoryArtifactStore,
    Registry,
    RunPolicy,
    ToolCall,
    ToolPolicy,
    dispatch,
    tool,
)
from tinytools.ledger import AlreadyStarted, SqliteLedger, reconcile


def waiting_tools(started: anyio.Event) -> list[object]:
    """``hang``: an async tool that says it started and waits until cancelled; ``quick``."""

    @tool
    async def hang(x: int) -> int:
        """Wait until cancelled."""
        started.set()
        await anyio.sleep_forever()
        return x

    @tool
    def quick(x: int) -> int:
        """Answer at once."""
        return x

    return [hang, quick]


async def cancelled_mid_batch(
    calls: list[ToolCall], tools: list[object], started: anyio.Event, **kwargs: object
) -> list[BaseException]:
    """Dispatch ``calls`` in a scope the host cancels once ``started`` is set; what came out
    of ``await dispatch`` (the host's cancellation is caught by its own scope)."""
    caught: list[BaseException] = []
    returned: list[DispatchResult] = []

    async def run() -> None:
        try:
            returned.append(await dispatch(calls, tools, **kwargs))  # type: ignore[arg-type]
        except BaseException as error:
            caught.append(error)
            raise

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await started.wait()
            group.cancel_scope.cancel()
    assert returned == []
    return caught


class TestCancelledBare:
    @pytest.mark.parametrize("concurrency", [1, 3])
    def test_trio_host_scope_gets_a_bare_cancelled(self, concurrency: int) -> None:
        """A trio host cancelling the scope around a concurrent batch sees trio.Cancelled
        itself (an `except trio.Cancelled` catches it), not an exception group."""

        async def main() -> list[BaseException]:
            started = anyio.Event()
            calls = [ToolCall(n, "hang", {"x": 1}) for n in "abc"]
            policy = RunPolicy(max_concurrency=concurrency)
            return await cancelled_mid_batch(calls, waiting_tools(started), started, policy=policy)

        caught = trio.run(main)
        assert [type(error) for error in caught] == [trio.Cancelled]

    def test_asyncio_host_task_cancel_keeps_its_message(self) -> None:
        """Under asyncio the host's own CancelledError (its message) comes out, and
        `asyncio.timeout` around dispatch still turns it into TimeoutError."""

        async def main() -> None:
            started = anyio.Event()
            tools = waiting_tools(started)
            calls = [ToolCall(n, "hang", {"x": 1}) for n in "abc"]
            task = asyncio.ensure_future(
                dispatch(calls, tools, policy=RunPolicy(max_concurrency=3))
            )
            await started.wait()
            task.cancel("client went away")
            with pytest.raises(asyncio.CancelledError) as info:
                await task
            if sys.version_info >= (3, 11):  # (3.10 drops the message on the way)
                assert info.value.args == ("client went away",)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(dispatch(calls, tools), 0.01)
            assert asyncio.all_tasks() == {asyncio.current_task()}

        asyncio.run(main())


class MemoryLedger:
    """A ledger without ``release`` (the protocol's minimum)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], str | None] = {}

    def started(
        self, run_id: str, call_id: str, tool_name: str, arguments: Mapping[str, object]
    ) -> None:
        if (run_id, call_id) in self.rows:
            raise AlreadyStarted(run_id, call_id)
        self.rows[run_id, call_id] = None

    def settled(self, run_id: str, call_id: str, status: str) -> None:
        self.rows[run_id, call_id] = status

    def unresolved(self, run_id: str | None = None) -> tuple[object, ...]:
        return ()


class TestLedgerAfterHostCancel:
    @pytest.mark.anyio
    async def test_unstarted_calls_start_again(self, tmp_path: pathlib.Path) -> None:
        """The host cancels a serial batch while its first call runs: that call stays
        unresolved (its effect is uncertain) and is never run again; the calls that never
        started run when the host dispatches the turn again."""
        started = anyio.Event()
        tools = waiting_tools(started)
        calls = [
            ToolCall("c1", "hang", {"x": 1}),
            ToolCall("c2", "quick", {"x": 2}),
            ToolCall("c3", "quick", {"x": 3}),
        ]
        context = Context(run_id="turn-1")
        with SqliteLedger(tmp_path / "effects.db") as ledger:
            await cancelled_mid_batch(calls, tools, started, ledger=ledger, context=context)
            decided = reconcile(calls, tools, ledger, "turn-1")  # type: ignore[arg-type]
            assert [call.id for call in decided.rerun] == ["c2", "c3"]
            assert [m.tool_call_id for m in decided.messages] == ["c1"]

    @pytest.mark.anyio
    async def test_rerun_after_cancel(self, tmp_path: pathlib.Path) -> None:
        started = anyio.Event()
        tools = waiting_tools(started)
        calls = [ToolCall("c1", "hang", {"x": 1}), ToolCall("c2", "quick", {"x": 2})]
        context = Context(run_id="turn-1")
        with SqliteLedger(tmp_path / "effects.db") as ledger:
            await cancelled_mid_batch(calls, tools, started, ledger=ledger, context=context)
            again = await dispatch(calls[1:], tools, ledger=ledger, context=context)  # type: ignore[arg-type]
            assert [m.status for m in again.messages] == ["ok"]

    @pytest.mark.anyio
    async def test_a_ledger_without_release_settles_them_interrupted(self) -> None:
        started = anyio.Event()
        calls = [ToolCall("c1", "hang", {"x": 1}), ToolCall("c2", "quick", {"x": 2})]
        ledger = MemoryLedger()
        await cancelled_mid_batch(
            calls, waiting_tools(started), started, ledger=ledger, context=Context(run_id="r")
        )
        assert ledger.rows == {("r", "c1"): None, ("r", "c2"): "interrupted"}


class TestSharedCancellation:
    @pytest.mark.anyio
    async def test_an_abandoned_thread_keeps_no_callback(self) -> None:
        """The host cancels while a timed sync tool blocks on a worker thread: the thread is
        abandoned, and the host's shared Cancellation keeps no callback of it."""
        release, started = threading.Event(), anyio.Event()
        token = _waker(started)

        @tool(policy=ToolPolicy().with_runtime(timeout=60))
        def block(x: int) -> int:
            """Block until released."""
            token()
            release.wait(10)
            return x

        shared = Cancellation()
        try:
            await cancelled_mid_batch(
                [ToolCall("b", "block", {"x": 1})], [block], started, cancellation=shared
            )
            assert shared._callbacks == []
        finally:
            release.set()


def _waker(event: anyio.Event) -> object:
    """A function any thread may call to set ``event`` on this event loop."""
    import sniffio

    if sniffio.current_async_library() == "trio":
        trio_token = trio.lowlevel.current_trio_token()
        return lambda: trio_token.run_sync_soon(event.set)
    loop = asyncio.get_running_loop()
    return lambda: loop.call_soon_threadsafe(event.set)


def test_keyboard_interrupt_in_dispatch_sync_releases_unstarted_rows(
    tmp_path: pathlib.Path,
) -> None:
    """KeyboardInterrupt out of a tool leaves dispatch_sync bare; the call that never
    started runs when the turn is dispatched again, the interrupted one never does."""
    from tinytools import dispatch_sync

    @tool
    def interrupt(x: int) -> int:
        """Raise KeyboardInterrupt, as Ctrl-C does inside a tool."""
        raise KeyboardInterrupt

    @tool
    def quick(x: int) -> int:
        """Answer at once."""
        return x

    calls = [ToolCall("c1", "interrupt", {"x": 1}), ToolCall("c2", "quick", {"x": 2})]
    context = Context(run_id="turn-1")
    with SqliteLedger(tmp_path / "effects.db") as ledger:
        with pytest.raises(KeyboardInterrupt):
            dispatch_sync(calls, [interrupt, quick], ledger=ledger, context=context)
        again = dispatch_sync(calls, [interrupt, quick], ledger=ledger, context=context)
        assert [m.status for m in again.messages] == ["error", "ok"]  # c1: already started


@pytest.mark.anyio
@pytest.mark.parametrize("concurrency", [1, 3])
async def test_an_async_handler_cut_off_by_the_batch_cancellation_gets_its_event(
    concurrency: int,
) -> None:
    """The batch's Cancellation fires while an async on_event handler awaits inside its
    event: the handler still receives that event, and every later one, in order."""
    cancellation = Cancellation()
    handled: list[str] = []
    in_handler = anyio.Event()

    @tool
    async def quick(n: int) -> int:
        """Answer at once."""
        return n

    @tool
    async def slow(n: int) -> int:
        """Wait until cancelled."""
        await anyio.sleep_forever()
        return n

    async def on_event(event: object) -> None:
        kind = event.kind  # type: ignore[attr-defined]
        if kind == "tool_completed" and not in_handler.is_set():
            in_handler.set()
            cancellation.cancel()  # the batch stops while this event is being handled
            await anyio.sleep(0)
        handled.append(kind)

    calls = [ToolCall("a", "quick", {"n": 1}), ToolCall("b", "slow", {"n": 2})]
    with anyio.fail_after(10):
        result = await dispatch(
            calls,
            [quick, slow],
            cancellation=cancellation,
            on_event=on_event,
            policy=RunPolicy(max_concurrency=concurrency),
        )
    assert handled == [event.kind for event in result.events]
    assert "tool_completed" in handled


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raising KeyboardInterrupt, as in a terminal. A shell starts background jobs
    with SIGINT ignored (CI runs its Pythons side by side), and Python then installs no
    handler of its own: `_thread.interrupt_main()` does nothing."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals are handled on the main thread")
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.usefixtures("ctrl_c_raises")
def test_interrupt_main_wakes_dispatch_sync_loop() -> None:
    """`_thread.interrupt_main()` from another thread (as a Ctrl-C the kernel hands to a
    tool's thread) while dispatch_sync's loop waits for an async tool: KeyboardInterrupt
    leaves dispatch_sync at once, the tool is cancelled, and the thread's loop works after."""
    import _thread

    from tinytools import dispatch_sync

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals are handled on the main thread")
    started = threading.Event()
    seen: list[str] = []
    woken: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    @tool
    async def wait_long() -> str:
        """Wait until cancelled (or, without a prompt interrupt, until the fallback)."""
        done = asyncio.Event()  # nothing wakes the loop until the fallback sets it
        woken.append((asyncio.get_running_loop(), done))
        started.set()
        try:
            await done.wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        seen.append("finished")
        return "late"

    def fallback() -> None:
        seen.append("fallback")
        loop, done = woken[0]
        with contextlib.suppress(RuntimeError):  # the loop is closed
            loop.call_soon_threadsafe(done.set)

    def interrupter() -> None:
        started.wait(10)
        _thread.interrupt_main()
        # without a prompt wake-up only this wakes the loop, and the interrupt comes late
        timer.start()

    timer = threading.Timer(1.5, fallback)

    threading.Thread(target=interrupter, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        dispatch_sync([ToolCall("w", "wait_long", {})], [wait_long])
    timer.cancel()
    assert seen == ["cancelled"]  # before the fallback fired

    @tool
    async def later() -> str:
        """Answer."""
        return "fine"

    assert dispatch_sync([ToolCall("l", "later", {})], [later]).messages[0].content == "fine"


@pytest.mark.anyio
async def test_many_batches_on_one_loop_share_everything(tmp_path: pathlib.Path) -> None:
    """A hundred batches at once on one loop, sharing a registry, a sync and an async
    handler, a Cancellation, an artifact store and a ledger; every third one cancelled by
    its host while its tools run: each other batch gets exactly its own answers and events,
    and the shared Cancellation keeps no callback."""

    @tool
    async def echo(batch: str, n: int) -> str:
        """Echo after a checkpoint."""
        await anyio.sleep(0)
        return f"{batch}:{n}"

    @tool(policy=ToolPolicy().with_runtime(timeout=30))
    def threaded(batch: str, n: int, cancel: Inject[Cancellation]) -> str:
        """Echo on a worker thread."""
        return f"{batch}:{n}"

    gates: dict[str, anyio.Event] = {}

    @tool
    async def hold(batch: str, n: int) -> str:
        """Say the batch is running, then wait to be cancelled."""
        gates[batch].set()
        await anyio.sleep_forever()
        return ""

    registry = Registry.of(echo, threaded, hold)
    shared, store = Cancellation(), MemoryArtifactStore()
    heard: dict[str, list[str]] = {}

    def on_event(event: object) -> None:
        call_id = event.call_id  # type: ignore[attr-defined]
        heard.setdefault(call_id.split("/")[0], []).append(call_id)

    async def on_event_async(event: object) -> None:
        await anyio.sleep(0)
        on_event(event)

    results: dict[str, tuple[list[ToolCall], DispatchResult]] = {}
    with SqliteLedger(tmp_path / "effects.db") as ledger:

        async def one(i: int) -> None:
            batch = f"b{i}"
            names = ["echo", "threaded", "echo"]
            calls = [
                ToolCall(f"{batch}/{k}", names[(i + k) % 3], {"batch": batch, "n": k})
                for k in range(1 + i % 4)
            ]
            if i % 3 == 0:
                gates[batch] = anyio.Event()
                calls.append(ToolCall(f"{batch}/h", "hold", {"batch": batch, "n": 0}))
            async with anyio.create_task_group() as group:

                async def run() -> None:
                    results[batch] = (
                        calls,
                        await dispatch(
                            calls,
                            registry,
                            policy=RunPolicy(max_concurrency=1 + i % 3),
                            cancellation=shared,
                            artifacts=store,
                            ledger=ledger,
                            context=Context(run_id=batch),
                            on_event=on_event if i % 2 else on_event_async,
                        ),
                    )

                group.start_soon(run)
                if batch in gates:
                    await gates[batch].wait()
                    group.cancel_scope.cancel()

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for i in range(100):
                    group.start_soon(one, i)
    assert sorted(results) == sorted(f"b{i}" for i in range(100) if i % 3)
    for batch, (calls, result) in results.items():
        assert [m.tool_call_id for m in result.messages] == [c.id for c in calls]
        assert [m.content for m in result.messages] == [
            f"{batch}:{c.arguments['n']}"
            for c in calls  # type: ignore[index]
        ]
        assert heard[batch] == [e.call_id for e in result.events]  # type: ignore[attr-defined]
    assert shared._callbacks == []


@pytest.mark.anyio
@pytest.mark.parametrize("concurrency", [1, 3])
async def test_events_of_a_stopping_batch_reach_an_async_handler_once(concurrency: int) -> None:
    """A tool cancels the batch's Cancellation: the events that follow reach an async
    handler that records, then awaits, each exactly once, in order."""
    cancellation = Cancellation()
    handled: list[object] = []

    @tool
    def stop(n: int) -> int:
        """Cancel the batch, then answer."""
        cancellation.cancel()
        return n

    async def on_event(event: object) -> None:
        handled.append(event)
        await anyio.lowlevel.checkpoint()

    calls = [ToolCall("a", "stop", {"n": 1}), ToolCall("b", "stop", {"n": 2})]
    result = await dispatch(
        calls,
        [stop],
        cancellation=cancellation,
        on_event=on_event,
        policy=RunPolicy(max_concurrency=concurrency),
    )
    assert handled == list(result.events)


@pytest.mark.usefixtures("ctrl_c_raises")
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled-baton", "python-baton"])
@pytest.mark.parametrize("shared", [False, True], ids=["plain", "with-cancellation"])
def test_interrupt_main_while_dispatch_sync_waits_for_a_thread(
    compiled: bool, shared: bool
) -> None:
    """`_thread.interrupt_main()` while dispatch_sync waits, with no event loop, for a tool
    on a worker thread: KeyboardInterrupt leaves at once, not when the tool ends; the
    thread is abandoned and later calls run."""
    import _thread

    from tinytools import dispatch_sync
    from tinytools._runtime import baton, threads

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals are handled on the main thread")
    release, ended = threading.Event(), threading.Event()

    @tool(blocking=True)
    def busy() -> str:
        """Interrupt the main thread, then go on until released."""
        _thread.interrupt_main()
        release.wait(1.5)  # without a prompt interrupt, the call ends here
        ended.set()
        return "late"

    pool = threads.THREADS if compiled else threads.ThreadPool(baton=baton._Baton)
    saved = threads.THREADS
    try:
        threads.THREADS = pool
        with pytest.raises(KeyboardInterrupt):
            dispatch_sync(
                [ToolCall("b", "busy", {})],
                [busy],
                cancellation=Cancellation() if shared else None,
            )
        assert not ended.is_set()  # it came before the tool ended
    finally:
        release.set()
        threads.THREADS = saved

    @tool
    def quick() -> str:
        """Answer."""
        return "fine"

    assert dispatch_sync([ToolCall("q", "quick", {})], [quick]).messages[0].content == "fine"
