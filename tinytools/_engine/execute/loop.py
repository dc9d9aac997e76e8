"""Execution under an event loop (trio or asyncio): one call, and the batch.

Imported on the first batch that needs an event loop, so ``import tinytools`` loads
neither trio nor anyio. Each call (:func:`_worker`) runs its attempts with
:func:`adrive`, the event-loop driver (an async tool awaited under its timeout; retries
wait with ``anyio.sleep``), in its own copy of the caller's context, in the task that
runs it; a synchronous tool that blocks or has a timeout runs on a pool thread whose end
wakes this loop (:func:`_on_thread`).

The batch (:func:`execute`) runs inside one cancel scope when a deadline or a
cancellation handle can stop it. Calls run one after another when ``max_concurrency``
is 1 (or there is one call); otherwise ``min(max_concurrency, len(calls))`` tasks each
take the next call in call order until none is left (one call each when all may run at
once), in a trio nursery or, under asyncio, as counted tasks (``_runtime.tasks``) — so
calls start in call order and a bounded batch pays no limiter. A fatal call cancels its
siblings; calls a stop cuts off are answered as interrupted.

``KeyboardInterrupt`` and ``SystemExit`` raised by a tool propagate bare, never wrapped
in an exception group; so does any exception a host callback (``on_event``, a middleware
hook, the ledger) raises that dispatch does not catch (a ``BaseException`` that is no
``Exception``): what comes out of a batch is the same on trio and asyncio, serial or
concurrent (:func:`_bare`). An ``asyncio.CancelledError`` a tool raises of its own accord
(its task was not cancelled) is that tool's failure, not the batch's cancellation.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import math
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TypeVar

import anyio
import sniffio

from tinytools._engine.admit.admission import Admitted
from tinytools._engine.outcome import Outcome
from tinytools._engine.state import Run, Sink
from tinytools._engine.stops import Stop, stop_now
from tinytools._inject import Cancellation, Source
from tinytools._runtime import contexts, threads
from tinytools._runtime.tasks import Tasks
from tinytools._runtime.threads import PoolExhausted
from tinytools._runtime.wakeup import Wakeup, call_soon

from .attempts import Attempt, Raised, attempts, drive
from .bind import UNSEEN, begin
from .classify import PROPAGATE, classify, next_attempt, timed_out
from .threaded import Leash, abandoned
from .wraps import awrapped, sync_body

__all__ = ["current_time", "execute"]

#: The event loop's clock (deadlines under ``dispatch`` are on it).
current_time = anyio.current_time


def _is_cancellation(error: BaseException) -> bool:
    """Whether ``error`` is the event loop cancelling this task (not a tool's own raise)."""
    if not isinstance(error, anyio.get_cancelled_exc_class()):
        return False
    if sniffio.current_async_library() != "asyncio":
        return True  # trio's Cancelled is raised by trio alone
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    if cancelling is None:  # Python 3.10 cannot tell: treat it as a cancellation
        return True
    return bool(cancelling()) or anyio.current_effective_deadline() == -math.inf


async def adrive(
    run: Run,
    item: Admitted,
    fn: Callable[..., object],
    kwargs: dict[str, object],
    timeout: float | None,
    handle: Cancellation,
) -> Outcome:
    """Run a call's attempts to their outcome under the event loop: an async tool called
    and awaited under the attempt's ``timeout`` (:func:`_awaited`), each wait before a
    retry with ``anyio.sleep`` (the loop's cancellation of the task passes through)."""
    if item.tool._plan.is_async and not item.tool._plan.retries:  # one attempt, no loop
        value = await _awaited(fn, kwargs, item, timeout, handle)
        if type(value) is Raised:  # (replaced: no cycle through the failure's traceback)
            value = next_attempt(run, item, value.error, 0)
        return value  # type: ignore[return-value]
    at = Attempt()
    for step in attempts(run, item, fn, kwargs, at):
        if type(step) is float:
            await anyio.sleep(step)
        else:  # AWAIT
            at.reply = await _awaited(fn, kwargs, item, timeout, handle)
    return at.outcome


async def _awaited(
    fn: Callable[..., object],
    kwargs: dict[str, object],
    item: Admitted,
    timeout: float | None,
    handle: Cancellation,
) -> object:
    """One attempt of an async tool, called and awaited under its ``timeout``: what it
    returned, :class:`Raised` with what it raised, or the call's outcome when it timed
    out. The coroutine is made and awaited in one expression, inside the timeout: a
    Ctrl-C delivered at a function call before it (``move_on_after``) finds no coroutine
    made, which would be left never awaited (tests/runtime/test_threads_handoff.py
    interrupts every step)."""
    try:
        if timeout is None:
            return await fn(**kwargs)  # type: ignore[misc]
        with anyio.move_on_after(timeout):
            return await fn(**kwargs)  # type: ignore[misc]
        if handle is not UNSEEN:
            handle.cancel()  # the tool may hold a reference and look
        return timed_out(item, timeout)
    except BaseException as error:
        if isinstance(error, PROPAGATE) or _is_cancellation(error):
            raise
        return Raised(error)


async def _on_thread(
    run: Run,
    item: Admitted,
    fn: Callable[..., object],
    kwargs: dict[str, object],
    context: contextvars.Context,
    timeout: float | None,
    handle: Cancellation,
) -> Outcome:
    """Run a synchronous call's attempts on a pool thread and wait for it on this loop,
    re-armed at each attempt when the call may make several (see ``threaded``); the
    batch's deadline and cancellation cancel the wait itself."""
    leash = Leash() if item.tool._plan.retries or run.stack.wraps else None
    pool = threads.THREADS
    try:
        job = pool.submit(
            functools.partial(context.run, sync_body(run, item, fn, kwargs, leash)),
            timeout is None and run.env.policy.deadline is None,  # (patient: see ThreadPool.submit)
        )
    except PoolExhausted as error:  # refused at once: the tool never starts
        return classify(error, item)
    done = anyio.Event()
    soon = call_soon()
    job.on_done(lambda: soon(done.set))
    try:
        if timeout is None:
            await done.wait()
        else:  # each attempt's timeout, on the loop's clock (the thread marks a new start)
            wait = timeout
            while True:
                with anyio.move_on_after(wait):
                    await done.wait()
                if job.done.is_set() or leash is None:
                    break
                wait = leash.started + timeout - time.monotonic()
                if wait <= 0:
                    break
    except BaseException:
        pool.give_up(job)  # (still in line: it never starts)
        abandoned(run, item, handle, leash, None, None)  # cancelled: the tool is told
        raise
    if job.done.is_set():
        return job.outcome()
    if pool.give_up(job):  # every thread stayed busy: the tool never started
        return classify(PoolExhausted(pool.threads), item)
    return abandoned(run, item, handle, leash, timeout, None)


async def execute(run: Run, deadline: float | None) -> Stop | None:
    """Run the admitted calls under the batch's deadline (on ``anyio.current_time``'s
    clock) and cancellation; why calls were cut off, or None when none was."""
    if run.sink is not None and _emits_live(run):
        return await _handing_over(run, run.sink, deadline)
    return await _execute(run, deadline)


def _emits_live(run: Run) -> bool:
    """Whether a call of the batch may emit while it lets the loop run: its tool injects
    ``Emit`` and is async, runs on a worker thread or waits before a retry. Only then can
    an event reach an async handler before the call ends; any other batch's events are
    handed over as each call ends (an inline call holds the loop throughout), and the
    batch pays for no task."""
    run_timeout = run.env.policy.tool_timeout
    for item in run.admitted:
        plan = item.tool._plan
        if (
            plan.injections
            and (plan.is_async or plan.blocking or plan.retries or plan.timeout_under(run_timeout))
            and any(injection.source is Source.EMIT for injection in plan.injections)
        ):
            return True
    return False


async def _handing_over(run: Run, sink: Sink, deadline: float | None) -> Stop | None:
    """:func:`_execute` with a task beside the calls that hands each event to the async
    ``on_event`` handler as it is queued — from a call's task or its worker thread —
    so a tool's ``Emit`` reaches the handler while the tool runs (as far as the tool
    lets the loop run: an async tool at its awaits, a threaded one throughout).

    The task stands outside the batch's cancel scope: the batch's deadline or
    cancellation never cuts the handler off mid-event. It stops once the calls have
    ended; what is left, dispatch flushes after the batch. An exception the handler
    raises ends as it does elsewhere (``Sink``): the run's failure, or out of dispatch.
    The task runs in a trio nursery or, under asyncio, as counted tasks (as
    :func:`_spread`'s do: a general task group costs a call about twice as much); a
    ``BaseException`` the handler raises ends the calls at once under both.
    """
    wakeup = Wakeup()
    listening = True

    async def hand_over() -> None:
        while listening:  # (checked first: a batch over before this task began ends it)
            await wakeup.wait()
            if listening:
                await sink.flush()

    async def calls() -> Stop | None:
        sink.wake = wakeup.set
        try:
            return await _execute(run, deadline)
        finally:
            nonlocal listening
            sink.wake = None  # (a late event from an abandoned thread wakes nobody)
            listening = False
            wakeup.set()

    async def both() -> Stop | None:
        if sniffio.current_async_library() == "trio":
            import trio

            async with trio.open_nursery() as nursery:
                nursery.start_soon(hand_over, name=_HAND_OVER_NAME)
                return await calls()
        # Under asyncio the calls run in a task of their own beside it, so that what the
        # handler raises ends them at once, as trio's nursery does.
        tasks = Tasks()
        stopped: list[Stop | None] = []

        async def calls_kept() -> None:
            stopped.append(await calls())

        try:
            tasks.start(_counted(tasks, hand_over))
            tasks.start(_counted(tasks, calls_kept))
        finally:
            await tasks.wait()
        return stopped[0]

    return await _ungrouped(both)


T = TypeVar("T")

#: The name of the trio task that hands events to an async ``on_event`` handler.
_HAND_OVER_NAME = "tinytools.dispatch on_event"


async def _execute(run: Run, deadline: float | None) -> Stop | None:
    admitted = run.admitted
    cancellation = run.cancellation
    if cancellation is None and deadline is None:
        # Nothing can stop the batch from outside: no batch scope, no loop token.
        await _run_all(run, admitted, deadline, None)
        return _after(run, None)
    soon, loop_thread = call_soon(), threading.get_ident()
    with anyio.CancelScope(deadline=math.inf if deadline is None else deadline) as scope:

        def cancel_from_anywhere() -> None:
            if threading.get_ident() == loop_thread:
                scope.cancel()
            else:
                soon(scope.cancel)

        forget = cancellation.on_cancel(cancel_from_anywhere) if cancellation else None
        try:
            await _run_all(run, admitted, deadline, scope)
        finally:
            if forget is not None:
                forget()
    stop = stop_now(run.halted, cancellation, deadline, current_time)
    if stop is None and scope.cancel_called:  # (the deadline, as the scope saw it)
        stop = Stop.DEADLINE
    return _after(run, stop)


def _after(run: Run, stop: Stop | None) -> Stop | None:
    if stop is None and run.halted:
        stop = Stop.ABORTED
    if stop is not None:
        run.interrupt(stop)
    return stop


async def _run_all(
    run: Run,
    admitted: Sequence[Admitted],
    deadline: float | None,
    scope: anyio.CancelScope | None,
) -> None:
    concurrency = run.env.policy.max_concurrency
    if concurrency == 1 or len(admitted) <= 1:  # serial: the loop itself bounds concurrency
        await _worker(run, iter(admitted), deadline, _go_on)
        return
    await _ungrouped(_spread, run, admitted, min(concurrency, len(admitted)), deadline, scope)


def _go_on() -> None:
    """A serial batch's ``stop``: nothing runs beside the call that stopped it."""


async def _worker(
    run: Run,
    items: Iterator[Admitted],
    deadline: float | None,
    stop: Callable[[], object],
) -> None:
    """Take the next call (in call order), run it and fold its outcome, until none is left
    or the batch must stop (then ``stop`` is called). Taking the next call, rather than being handed
    one, keeps calls starting in call order whatever order the loop runs its new tasks
    in. Whether the batch must stop is checked before each call starts (a tool that never
    yields cannot be cancelled by the loop)."""
    while True:
        if stop_now(run.halted, run.cancellation, deadline, current_time) is not None:
            stop()
            return
        item = next(items, None)
        if item is None:
            return
        # The call's route (in this task, its steps in its own copy of the context).
        plan = item.tool._plan
        timeout = plan.timeout or run.env.policy.tool_timeout
        fn, kwargs, handle, context = begin(run, item, deadline)
        outcome: Outcome
        wraps = run.stack
        if plan.is_async:  # its coroutines made and stepped in its context
            if wraps.awraps:
                each = functools.partial(adrive, run, item, fn, kwargs, timeout, handle)
                outcome = await contexts.in_context(
                    context, awrapped, wraps.awraps, run, item, each, _is_cancellation
                )
            else:
                outcome = await contexts.in_context(
                    context, adrive, run, item, fn, kwargs, timeout, handle
                )
        elif plan.blocking or timeout is not None or (plan.retries and wraps.wraps):
            # (wraps around a retried call wait for its backoff on the thread that
            # runs them: a worker's, not the loop's)
            outcome = await _on_thread(run, item, fn, kwargs, context, timeout, handle)
        elif plan.retries:  # its backoff awaited on the loop
            outcome = await contexts.in_context(
                context, adrive, run, item, fn, kwargs, timeout, handle
            )
        elif wraps.wraps:
            outcome = context.run(sync_body(run, item, fn, kwargs, None))
        else:
            outcome = context.run(drive, run, item, fn, kwargs)
        run.finish(item, outcome)
        sink = run.sink
        # (not once the batch is stopping: its scope would cut the handler off;
        # dispatch flushes again after the batch, outside that scope)
        if (
            sink is not None
            and sink.pending
            and stop_now(False, run.cancellation, deadline, current_time) is None
        ):
            await sink.flush()


async def _counted(tasks: Tasks, work: Callable[..., Awaitable[object]], *args: object) -> None:
    """Await ``work(*args)`` as one of ``tasks`` (an asyncio task of a batch): what it
    raises ends the others (:func:`_failed`), what must propagate propagates, and ``tasks``
    is told when it ends. (``work`` is called here, in the task: a coroutine made before
    would be left unawaited by a task cancelled before its first step.)"""
    try:
        await work(*args)
    except BaseException as error:
        if isinstance(error, PROPAGATE):
            raise
        _failed(tasks, error)
    finally:
        tasks.ended()


async def _ungrouped(work: Callable[..., Awaitable[T]], *args: object) -> T:
    """Await ``work(*args)``, a batch's tasks, raising what they raised out of trio's
    exception group (:func:`_bare`). (``work`` is called inside: a coroutine made before
    would be left unawaited by a Ctrl-C between.)"""
    try:
        return await work(*args)
    except BaseException as error:
        found = _bare(error)
        if found is error:
            raise
    raise found  # (out of the handler: the group is not chained onto it)


def _failed(tasks: Tasks, error: BaseException) -> None:
    """Tell ``tasks`` that one of them ends with ``error``: an ``asyncio.CancelledError``
    that is not this task's cancellation (a host callback raised it: a tool's own never
    leaves its call) ends the batch as any other error would, as it does serially and
    under trio."""
    if isinstance(error, asyncio.CancelledError) and not _is_cancellation(error):
        tasks.raised(error)
    else:
        tasks.failed(error)


async def _spread(
    run: Run,
    admitted: Sequence[Admitted],
    workers: int,
    deadline: float | None,
    scope: anyio.CancelScope | None,
) -> None:
    """Run the calls ``workers`` at a time in the loop's own tasks (a trio nursery; under
    asyncio, :class:`Tasks`), each task taking the next call in turn."""
    items = iter(admitted)
    if sniffio.current_async_library() == "trio":
        import trio

        async with trio.open_nursery() as nursery:
            stop = nursery.cancel_scope.cancel if scope is None else scope.cancel
            for _ in range(workers):
                # A name given spares trio making one from the function per task.
                nursery.start_soon(_worker, run, items, deadline, stop, name=_TASK_NAME)
        return
    tasks = Tasks()
    stop_tasks = tasks.cancel  # the batch's scope, if any, is read by execute afterwards
    try:
        for _ in range(workers):
            tasks.start(_counted(tasks, _worker, run, items, deadline, stop_tasks))
    finally:
        await tasks.wait()


#: The name of a batch's trio tasks (in trio's task tree, as a debugger shows it).
_TASK_NAME = "tinytools.dispatch call"


def _bare(error: BaseException) -> BaseException:
    """What a batch's tasks raised, out of the exception group trio's nursery wraps it in,
    as it comes out of a serial batch and of asyncio's tasks: a ``KeyboardInterrupt`` or
    ``SystemExit`` first, else the first other exception that is not the loop's
    cancellation (a host callback's ``BaseException``, say: a tool's own failures never
    leave its task). ``error`` itself when it is no group. A group of cancellations only
    (the host cancelled a scope around ``await dispatch``, or the batch's own scope was
    cancelled) gives its first one, bare: the host's ``except trio.Cancelled`` sees its
    own cancellation, not an exception group, and the cancel scope that caused it still
    catches it. Like asyncio's tasks, the batch raises one exception: when several tasks
    raised, the others are dropped."""
    inner = getattr(error, "exceptions", None)
    if not isinstance(inner, tuple):
        return error
    leaves: list[BaseException] = []
    _leaves(inner, leaves)
    for leaf in leaves:
        if isinstance(leaf, PROPAGATE):
            return leaf
    cancelled = anyio.get_cancelled_exc_class()
    for leaf in leaves:
        if not isinstance(leaf, cancelled):
            return leaf
    return leaves[0] if leaves else error


def _leaves(members: tuple[BaseException, ...], into: list[BaseException]) -> None:
    """The exceptions inside nested exception groups, in order."""
    for member in members:
        inner = getattr(member, "exceptions", None)
        if isinstance(inner, tuple):
            _leaves(inner, into)
        else:
            into.append(member)
