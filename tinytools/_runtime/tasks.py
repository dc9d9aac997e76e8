"""The tasks of one batch under asyncio: started on the loop, counted, waited for.

``asyncio.TaskGroup`` learns that a task finished through a done callback: one more
turn of the event loop for every task, about a fifth of the whole cost of a call that
yields once. A batch's tasks need less than a general task group: each catches its
tool's failures itself, so a task ends by returning, by being cancelled, with
``KeyboardInterrupt``/``SystemExit`` (which asyncio raises out of the event loop
itself) or with a bug. So a task tells :class:`Tasks` that it ended, from its own
``finally`` (:meth:`Tasks.ended`), and the group:

- cancels every task once, when asked (:meth:`Tasks.cancel`: a fatal call, a stop) or
  when the task waiting for them is cancelled;
- waits until every task has ended, also after such a cancellation (then through the
  tasks themselves: one cancelled before it started never reaches its ``finally``), and
  re-raises the cancellation (:meth:`Tasks.wait`);
- re-raises the first unexpected error a task reported (:meth:`Tasks.failed`) once every
  task has ended. A task's own ``CancelledError`` ends that task only, as in a
  ``TaskGroup``.

It needs nothing newer than Python 3.10 (which has no ``TaskGroup``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine
from typing import Any

__all__ = ["Tasks"]


class Tasks:
    """The tasks of one batch under the running asyncio loop (see the module docstring)."""

    __slots__ = ("_cancelling", "_create", "_error", "_left", "_loop", "_tasks", "_waiter")

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._create = self._loop.create_task
        self._tasks: list[asyncio.Task[Any]] = []
        self._left = 0  # started, not ended
        self._waiter: asyncio.Future[None] | None = None
        self._cancelling = False
        self._error: BaseException | None = None

    def start(self, coroutine: Coroutine[Any, Any, object]) -> None:
        """Run ``coroutine`` in a new task, which calls :meth:`ended` when it ends."""
        self._left += 1
        task = self._create(coroutine)
        self._tasks.append(task)
        if self._cancelling:
            task.cancel()

    def ended(self) -> None:
        """A task has ended (called from its ``finally``)."""
        self._left -= 1
        if not self._left:
            waiter = self._waiter
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    def failed(self, error: BaseException) -> None:
        """A task ends with ``error``: a cancellation ends that task only; the first other
        error cancels the rest and is raised by :meth:`wait`."""
        if isinstance(error, asyncio.CancelledError):
            return
        self.raised(error)

    def raised(self, error: BaseException) -> None:
        """A task ends with ``error``, which ends the batch whatever its type (a
        ``CancelledError`` the task raised of its own accord, not its cancellation): the
        first such error cancels the rest and is raised by :meth:`wait`."""
        if self._error is None:
            self._error = error
        self.cancel()

    def cancel(self) -> None:
        """Cancel every task, once (the task calling this excepted: it is ending)."""
        if self._cancelling:
            return
        self._cancelling = True
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()
        waiter = self._waiter  # the count no longer tells: see wait
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> None:
        """Wait until every task has ended.

        Until a cancellation, the tasks' count tells when (no callback per task); after
        it, the tasks themselves do: a task cancelled before its first step never runs
        its ``finally``.

        Raises:
            asyncio.CancelledError: The waiting task was cancelled (every task was
                cancelled then, and has ended).
            BaseException: The first unexpected error a task reported.
        """
        cancelled: asyncio.CancelledError | None = None
        while True:
            if self._cancelling:
                running = [task for task in self._tasks if not task.done()]
                if not running:
                    break
                waiting: Awaitable[object] = asyncio.wait(running)
            elif self._left:
                waiting = self._waiter = self._loop.create_future()
            else:
                break
            try:
                await waiting
            except asyncio.CancelledError as error:  # so are the tasks; wait for their end
                cancelled = error
                self.cancel()
        self._waiter = None
        if cancelled is not None:
            raise cancelled
        if self._error is not None:
            raise self._error
