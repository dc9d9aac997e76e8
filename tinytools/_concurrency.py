"""Running admitted calls under an event loop: one call, and the batch (serial or bounded).

Imported on the first batch that needs an event loop, so ``import tinytools`` loads
neither trio nor anyio. One call (:func:`run_call`) is :func:`_execute.run_inline`'s
twin: an async tool is awaited (under its timeout, if any); a synchronous tool runs
inline, or on a pool thread (:mod:`_workers`) whose end wakes this loop; retries wait
with ``anyio.sleep``.

The batch (:func:`execute`) runs inside one cancel scope when a deadline or a
cancellation handle can stop it. Calls run one after another when
``max_concurrency`` is 1 (or there is one call); otherwise ``min(max_concurrency,
len(calls))`` tasks each take the next call in call order until none is left (one
call each when all may run at once), in a trio nursery or, under asyncio, as counted
tasks (:mod:`_asyncio_tasks`: no event-loop turn per task to learn that it ended,
as ``asyncio.TaskGroup`` takes) — so calls start in call order and a bounded batch
pays no limiter. A fatal call cancels its siblings; calls a stop cuts off are
answered as interrupted. An async tool that needs nothing but awaiting
(``Plan.awaited``) is awaited in its task directly.

``KeyboardInterrupt`` and ``SystemExit`` raised by a tool propagate bare, never
wrapped in an exception group; so does any exception a host callback (``on_event``, a
middleware hook, the ledger) raises that dispatch does not catch (a ``BaseException``
that is no ``Exception``): what comes out of a batch is the same on trio and asyncio,
serial or concurrent (:func:`_bare`). An ``asyncio.CancelledError`` a tool raises of its
own accord (its task was not cancelled) is that tool's failure, not the batch's
cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import anyio
import sniffio

from ._admit import Admitted
from ._execute import PROPAGATE, UNSEEN, kwargs_for, linked, retry_wait, timed_out
from ._inject import Cancellation
from ._run import Run, Stop
from ._runtime import threads
from ._runtime.contexts import in_context
from ._runtime.tasks import Tasks
from ._runtime.threads import Job, PoolExhausted

__all__ = ["current_time", "execute", "run_call"]

T = TypeVar("T")

#: The event loop's clock (deadlines under ``dispatch`` are on it).
current_time = anyio.current_time


def _call_soon() -> Callable[[Callable[[], object]], None]:
    """Schedule a function on this event loop from any thread, without waiting; a loop
    that has finished meanwhile is ignored (nobody waits for it any more)."""
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


async def _in_thread(
    fn: functools.partial[object], timeout: float | None, handle: Cancellation, patient: bool
) -> tuple[bool, object]:
    """Run ``fn`` on a pool thread; ``(True, value)``, or ``(False, None)`` on timeout.
    ``patient``: nothing bounds the wait (no timeout, no batch deadline; see
    ``ThreadPool.submit``)."""
    job: Job[object] = threads.THREADS.submit(fn, patient)
    done = anyio.Event()
    soon = _call_soon()
    job.on_done(lambda: soon(done.set))
    try:
        if timeout is None:
            await done.wait()
        else:
            with anyio.move_on_after(timeout):
                await done.wait()
    except BaseException:
        threads.THREADS.give_up(job)  # (still in line: it never starts)
        handle.cancel()  # cancelled: the abandoned tool can still see it should stop
        raise
    if not job.done.is_set():
        if threads.THREADS.give_up(job):  # every thread stayed busy: the tool never started
            raise PoolExhausted(threads.THREADS.threads)
        handle.cancel()
        return False, None
    return True, job.outcome()


async def run_call(run: Run, item: Admitted, deadline: float | None) -> object:
    """Run one call under the event loop, with its timeout and retries; its outcome."""
    plan = item.tool._plan
    timeout = plan.timeout_under(run.policy.tool_timeout)
    handle = Cancellation() if plan.injections or timeout is not None else UNSEEN
    kwargs = kwargs_for(run, item, handle, deadline)
    run.start(item)
    context = run.caller_context.copy()  # the call's own copy of the caller's context
    return await _attempts(run, item, kwargs, timeout, handle, 0, context)


async def _attempts(
    run: Run,
    item: Admitted,
    kwargs: dict[str, object],
    timeout: float | None,
    handle: Cancellation,
    attempt: int,
    context: contextvars.Context,
) -> object:
    """The call's attempts from ``attempt`` on, until one is not retried; its outcome.
    The tool's body runs in ``context``."""
    plan = item.tool._plan
    fn = plan.fn
    assert fn is not None
    threaded = plan.threaded(timeout)
    if handle is not UNSEEN and run.cancellation is not None:
        fn = linked(fn, run.cancellation, handle, plan.is_async)  # it sees the batch cancelled
    while True:
        try:
            if plan.is_async:
                if timeout is None:
                    return await in_context(context, fn(**kwargs))  # type: ignore[arg-type]
                with anyio.move_on_after(timeout):
                    return await in_context(context, fn(**kwargs))  # type: ignore[arg-type]
                handle.cancel()  # the tool may hold a reference and look
                return timed_out(item, timeout)
            if not threaded:
                return context.run(fn, **kwargs)
            patient = timeout is None and run.policy.deadline is None  # (as run_inline's)
            finished, value = await _in_thread(
                functools.partial(context.run, fn, **kwargs), timeout, handle, patient
            )
            if finished:
                return value
            assert timeout is not None
            return timed_out(item, timeout)
        except PROPAGATE:
            raise
        except BaseException as error:  # a tool's failure, whatever it raised
            if _is_cancellation(error):
                raise
            wait = retry_wait(run, item, error, attempt)
            if type(wait) is not float:
                return wait
            attempt += 1
            await anyio.sleep(wait)


async def _raised(
    run: Run, item: Admitted, error: BaseException, context: contextvars.Context
) -> object:
    """The outcome of an awaited call (``Plan.awaited``) whose first attempt raised
    ``error``, a tool's failure: classified, or retried (in the call's ``context``)."""
    wait = retry_wait(run, item, error, 0)
    if type(wait) is not float:
        return wait
    await anyio.sleep(wait)
    return await _attempts(run, item, item.arguments, None, UNSEEN, 1, context)


async def execute(run: Run, deadline: float | None) -> Stop | None:
    """Run the admitted calls under the batch's deadline (on ``anyio.current_time``'s
    clock) and cancellation; why calls were cut off, or None when none was."""
    admitted = run.admitted
    cancellation = run.cancellation
    if cancellation is None and deadline is None:
        # Nothing can stop the batch from outside: no batch scope, no loop token.
        await _run_all(run, admitted, deadline, None)
        return _after(run, None)
    soon, loop_thread = _call_soon(), threading.get_ident()
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
    if cancellation is not None and cancellation.cancelled:
        return _after(run, Stop.CANCELLED)
    if run.halted:
        return _after(run, Stop.ABORTED)
    if scope.cancel_called or (deadline is not None and current_time() >= deadline):
        return _after(run, Stop.DEADLINE)
    return None


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
    concurrency = run.policy.max_concurrency
    awaiting = run.policy.tool_timeout is None
    stopped = _stopped(run, deadline)
    if concurrency == 1 or len(admitted) <= 1:  # serial: the loop itself bounds concurrency
        await _worker(run, iter(admitted), deadline, stopped, _go_on, awaiting)
        return
    try:
        workers = min(concurrency, len(admitted))
        await _spread(run, admitted, workers, deadline, stopped, scope, awaiting)
    except BaseException as error:
        found = _bare(error)
        if found is error:
            raise
    else:
        return
    raise found  # (out of the handler: the group is not chained onto it)


def _stopped(run: Run, deadline: float | None) -> Callable[[], bool] | None:
    """What tells whether the batch was cancelled or is past its deadline (a halted run
    aside: :func:`_call` reads that flag itself); None when neither can happen, the
    common batch, which then pays no check per call for them."""
    cancellation = run.cancellation
    if cancellation is None and deadline is None:
        return None

    def stopped() -> bool:
        return (cancellation is not None and cancellation.cancelled) or (
            deadline is not None and current_time() >= deadline
        )

    return stopped


def _go_on() -> None:
    """A serial batch's ``stop``: nothing runs beside the call that stopped it."""


async def _worker(
    run: Run,
    items: Iterator[Admitted],
    deadline: float | None,
    stopped: Callable[[], bool] | None,
    stop: Callable[[], object],
    awaiting: bool,
    tasks: Tasks | None = None,
) -> None:
    """Take the next call (in call order) until none is left, or the batch must stop
    (with ``tasks``: the asyncio tasks this one is one of, told when it ends)."""
    try:
        while await _call(run, items, deadline, stopped, stop, awaiting):
            pass
    except BaseException as error:
        if tasks is None or isinstance(error, PROPAGATE):
            raise
        _failed(tasks, error)
    finally:
        if tasks is not None:
            tasks.ended()


async def _call(
    run: Run,
    items: Iterator[Admitted],
    deadline: float | None,
    stopped: Callable[[], bool] | None,
    stop: Callable[[], object],
    awaiting: bool,
    tasks: Tasks | None = None,
) -> bool:
    """Take the next call, run it and fold its outcome; whether the batch goes on (else
    none was left, or ``stop`` was called). In a batch whose calls all run at once,
    each task is this coroutine (with ``tasks`` under asyncio: the tasks it is one of,
    told when it ends): taking the next call, rather than being handed one, keeps calls
    starting in call order whatever order the loop runs its new tasks in.

    Whether the batch must stop is read before the call starts (a tool that never yields
    cannot be cancelled by the loop): ``run.halted``, then ``stopped`` (see
    :func:`_stopped`). With ``awaiting`` (the run sets no ``tool_timeout``) an
    awaited tool (``Plan.awaited``) is awaited right here, its first attempt without a
    frame of :func:`run_call` between.
    """
    try:
        halted = run.halted  # read into a local: it changes while the call runs
        if halted or (stopped is not None and stopped()):
            stop()
            return False
        item = next(items, None)
        if item is None:
            return False
        plan = item.tool._plan
        if awaiting and plan.awaited:
            run.start(item)
            context = run.caller_context.copy()
            try:
                outcome = await in_context(context, plan.fn(**item.arguments))  # type: ignore[arg-type,misc]
            except PROPAGATE:
                raise
            except BaseException as error:  # a tool's failure, whatever it raised
                if _is_cancellation(error):
                    raise
                outcome = await _raised(run, item, error, context)
        else:
            outcome = await run_call(run, item, deadline)
        run.finish(item, outcome)
        sink = run.sink
        # (not once the batch is stopping: its scope would cut the handler off; dispatch
        # flushes again after the batch, outside that scope)
        if sink is not None and sink.pending and (stopped is None or not stopped()):
            await sink.flush()
        if run.halted:
            stop()
            return False
        return True
    except BaseException as error:
        # :func:`_worker`'s ending, written out: here each task is this coroutine itself
        # (no worker frame per call); keep the two alike.
        if tasks is None or isinstance(error, PROPAGATE):
            raise
        _failed(tasks, error)
        return False
    finally:
        if tasks is not None:
            tasks.ended()


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
    stopped: Callable[[], bool] | None,
    scope: anyio.CancelScope | None,
    awaiting: bool,
) -> None:
    """Run the calls ``workers`` at a time in the loop's own tasks (a trio nursery; under
    asyncio, :class:`Tasks`): one task per call when all may run at once, else
    ``workers`` tasks taking the next call in turn."""
    items = iter(admitted)
    task = _call if workers == len(admitted) else _worker
    if sniffio.current_async_library() == "trio":
        import trio

        async with trio.open_nursery() as nursery:
            stop = nursery.cancel_scope.cancel if scope is None else scope.cancel
            start = nursery.start_soon
            for _ in range(workers):
                # A name given spares trio making one from the function per task.
                start(task, run, items, deadline, stopped, stop, awaiting, name=_TASK_NAME)
        return
    tasks = Tasks()
    stop_tasks = tasks.cancel  # the batch's scope, if any, is read by execute afterwards
    try:
        for _ in range(workers):
            tasks.start(task(run, items, deadline, stopped, stop_tasks, awaiting, tasks))
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
