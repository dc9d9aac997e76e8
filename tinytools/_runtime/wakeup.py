"""Waking a task of the running event loop (trio or asyncio) from any thread.

A tool on a worker thread hands what it makes as it runs (its ``Emit`` events) to a
task of the loop that waits for it: the thread cannot touch the loop's own objects, so
it schedules the wake-up on the loop (trio's token, asyncio's ``call_soon_threadsafe``).
Used by dispatch's live ``on_event`` hand-off (``_engine.execute.loop``) and the MCP
server's progress notifications.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

import anyio
import sniffio

__all__ = ["Wakeup", "call_soon"]


def call_soon() -> Callable[[Callable[[], object]], None]:
    """Schedule a function on the running event loop from any thread, without waiting;
    a loop that has finished meanwhile is ignored (nobody waits for it any more)."""
    if sniffio.current_async_library() == "trio":
        import trio

        token = trio.lowlevel.current_trio_token()

        def soon_trio(fn: Callable[[], object]) -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(fn)

        return soon_trio
    loop = asyncio.get_running_loop()

    def soon_asyncio(fn: Callable[[], object]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(fn)

    return soon_asyncio


class Wakeup:
    """A flag one task of the running loop waits on and any thread raises (made on the
    loop's thread). Raised from that thread, it is set at once; from another, the loop is
    asked to set it. :meth:`wait` returns once it is raised and lowers it again, so a
    raise that comes while the waiter is busy wakes its next wait: none is lost."""

    __slots__ = ("_event", "_loop_thread", "_soon")

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._soon = call_soon()
        self._loop_thread = threading.get_ident()

    def set(self) -> None:
        """Wake the waiter (from any thread)."""
        if threading.get_ident() == self._loop_thread:
            self._event.set()
        else:  # (read on the loop: the waiter may have made a new event meanwhile)
            self._soon(self._set)

    def _set(self) -> None:
        self._event.set()

    async def wait(self) -> None:
        """Wait until :meth:`set` was called (since the last wait returned)."""
        await self._event.wait()
        self._event = anyio.Event()
