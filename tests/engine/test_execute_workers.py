"""Execution on worker threads and event loops: hung threads never starve later calls, the
pools stay bounded, an async tool under ``dispatch_sync`` runs on asyncio."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
import trio
import trio.testing

from tests.engine.calls import call
from tinytools import (
    RunPolicy,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools._runtime import threads
from tinytools._runtime.threads import ThreadPool


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """An event hung tools wait on; set at the end so their threads return to the pool."""
    event = threading.Event()
    yield event
    event.set()


class TestWorkers:
    def test_hung_threads_never_starve_later_calls(self, gate: threading.Event) -> None:
        """Defect: after 40 hung calls every later threaded call timed out (trio's thread
        limiter stayed taken by the abandoned threads)."""

        @tool(timeout=0.01)
        def hang() -> str:
            """Block until the test ends."""
            gate.wait(30)
            return "late"

        @tool(timeout=5)
        def quick(n: int) -> int:
            """Answer at once, on a worker thread."""
            return n

        hung = [call(f"h{i}", "hang", {}) for i in range(45)]

        async def main() -> tuple[object, object]:
            timed = await dispatch(hung, [hang], policy=RunPolicy(max_concurrency=45))
            return timed, await dispatch([call("q", "quick", {"n": 7})], [quick])

        timed, later = trio.run(main)
        assert all("timed out after 0.01 seconds" in m.content for m in timed.messages)  # type: ignore[attr-defined]
        assert later.messages[0].content == "7"  # type: ignore[attr-defined]
        assert dispatch_sync([call("q", "quick", {"n": 8})], [quick]).messages[0].content == "8"

    def test_the_pool_is_bounded_and_says_so(self, gate: threading.Event) -> None:
        """Defect: under asyncio, abandoned threads grew without bound (41 -> 86 after 45
        calls). The pool never holds more than its limit: a job past it waits in line for
        a thread."""
        pool = ThreadPool(max_threads=3, max_idle=1)
        jobs = [pool.submit(lambda: gate.wait(30)) for _ in range(3)]
        assert pool.threads == 3
        waiting = pool.submit(lambda: "in line")
        assert pool.threads == 3
        assert not waiting.done.is_set()
        gate.set()
        for job in [*jobs, waiting]:
            assert job.done.wait(10)
        assert waiting.outcome() == "in line"
        assert pool.threads <= 3
        fresh = pool.submit(lambda: "again")
        assert fresh.done.wait(10)
        assert fresh.outcome() == "again"

    def test_process_pool_stays_bounded(self) -> None:
        assert threads.THREADS.threads <= 64

    def test_async_tool_under_dispatch_sync_runs_on_asyncio(self) -> None:
        """An async tool written for asyncio works under dispatch_sync (and the loop is
        reused: no new event loop per call)."""

        @tool
        async def nap() -> str:
            """Sleep on asyncio."""
            await asyncio.sleep(0)
            return type(asyncio.get_running_loop()).__name__

        first = dispatch_sync([call("n", "nap", {})], [nap]).messages[0]
        second = dispatch_sync([call("n", "nap", {})], [nap]).messages[0]
        assert first.status == "ok"
        assert first.content == second.content

    def test_dispatch_sync_inside_a_running_loop_needing_one_says_what_to_do(self) -> None:
        @tool
        async def nap() -> str:
            """Sleep on asyncio."""
            return "ok"

        async def main() -> None:
            dispatch_sync([call("n", "nap", {})], [nap])

        with pytest.raises(RuntimeError, match=r"await tinytools\.dispatch"):
            asyncio.run(main())
