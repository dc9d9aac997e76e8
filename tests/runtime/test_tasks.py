"""Tests for `tinytools._runtime.tasks.Tasks`: the counted asyncio tasks of one batch.

Each task here keeps the protocol a batch's task keeps: it reports an unexpected error
with `failed` and says it ended with `ended`, from its `finally`. Tasks synchronise with
events, never with sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from tinytools._runtime.tasks import Tasks


def member(tasks: Tasks, body: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[None]]:
    """``body`` as a task of ``tasks`` (reporting its failure and its end)."""

    async def task() -> None:
        try:
            await body()
        except BaseException as error:
            tasks.failed(error)
        finally:
            tasks.ended()

    return task


def hanging(
    started: asyncio.Semaphore, ended: list[str], name: str
) -> Callable[[], Awaitable[None]]:
    """A body that waits until cancelled, saying when it started and recording its end."""

    async def body() -> None:
        started.release()
        try:
            await asyncio.Event().wait()
        finally:
            ended.append(name)

    return body


def test_wait_returns_once_every_task_returned() -> None:
    done: list[int] = []

    async def main() -> None:
        tasks = Tasks()
        gate = asyncio.Event()

        def finisher(n: int) -> Callable[[], Awaitable[None]]:
            async def body() -> None:
                await gate.wait()
                done.append(n)

            return body

        for n in range(3):
            tasks.start(member(tasks, finisher(n))())
        gate.set()
        await tasks.wait()

    asyncio.run(main())
    assert sorted(done) == [0, 1, 2]


def test_an_unexpected_error_cancels_the_rest_and_is_raised_after_they_ended() -> None:
    ended: list[str] = []

    async def main() -> None:
        tasks, started = Tasks(), asyncio.Semaphore(0)

        async def broken() -> None:
            for _ in range(2):
                await started.acquire()
            raise LookupError("a bug")

        tasks.start(member(tasks, hanging(started, ended, "a"))())
        tasks.start(member(tasks, broken)())
        tasks.start(member(tasks, hanging(started, ended, "b"))())
        with pytest.raises(LookupError, match="a bug"):
            await tasks.wait()

    asyncio.run(main())
    assert sorted(ended) == ["a", "b"]


def test_tasks_cancelled_before_they_ran_do_not_hold_up_wait() -> None:
    """A task cancelled before its first step never reaches its ``finally``."""
    ran: list[str] = []

    async def main() -> None:
        tasks = Tasks()

        async def first() -> None:
            tasks.cancel()  # as a fatal call does, before its siblings ran

        async def later() -> None:
            ran.append("later")

        tasks.start(member(tasks, first)())
        tasks.start(member(tasks, later)())
        await asyncio.wait_for(tasks.wait(), 10)

    asyncio.run(main())
    assert ran == []


def test_a_task_started_after_a_cancel_is_cancelled() -> None:
    ran: list[str] = []

    async def main() -> None:
        tasks = Tasks()
        tasks.cancel()

        async def body() -> None:
            ran.append("body")

        tasks.start(member(tasks, body)())
        await asyncio.wait_for(tasks.wait(), 10)

    asyncio.run(main())
    assert ran == []


def test_cancelling_the_waiting_task_cancels_every_task_then_raises() -> None:
    ended: list[str] = []

    async def main() -> None:
        tasks, started = Tasks(), asyncio.Semaphore(0)
        for name in "abc":
            tasks.start(member(tasks, hanging(started, ended, name))())
        waiting = asyncio.ensure_future(tasks.wait())
        for _ in range(3):
            await started.acquire()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert sorted(ended) == ["a", "b", "c"]
        assert asyncio.all_tasks() == {asyncio.current_task()}

    asyncio.run(main())


def test_a_tasks_own_cancellation_ends_that_task_only() -> None:
    done: list[str] = []

    async def main() -> None:
        tasks = Tasks()
        gate = asyncio.Event()

        async def rogue() -> None:
            raise asyncio.CancelledError

        async def fine() -> None:
            await gate.wait()
            done.append("fine")

        tasks.start(member(tasks, rogue)())
        tasks.start(member(tasks, fine)())
        gate.set()
        await tasks.wait()

    asyncio.run(main())
    assert done == ["fine"]
