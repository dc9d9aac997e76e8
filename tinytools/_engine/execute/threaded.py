"""A synchronous call on a worker thread: what its waiting caller and the thread share.

A tool that blocks, or has a timeout, runs on a pool thread (``_runtime.threads``) —
its attempts and their retries included — while its caller waits: on this thread under
``dispatch_sync`` (:func:`wait_here`), or on its event loop (``loop``). A timeout bounds
one attempt: when a call may make several (retries, or a wrap that calls ``proceed``
again), the thread marks when each starts on the
call's :class:`Leash`, and the caller re-arms its wait from there. A caller that stops
waiting (the timeout, the batch's deadline or cancellation) abandons the thread: the tool
runs on until it returns, but its cancellation handle is set and no further attempt
starts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from tinytools._engine.admit.admission import Admitted
from tinytools._engine.outcome import Outcome
from tinytools._engine.state import Run
from tinytools._engine.stops import Stop, interrupted
from tinytools._inject import Cancellation
from tinytools._runtime import threads
from tinytools._runtime.baton import Signal, wait_main
from tinytools._runtime.threads import PoolExhausted

from .bind import UNSEEN
from .classify import classify, timed_out

__all__ = ["Leash", "abandoned", "wait_here"]

#: The keyword arguments of a job handed to the pool (never written to).
_NO_KWARGS: dict[str, object] = {}


class Leash:
    """When the current attempt of a call on a worker thread started, and whether its
    caller left (made for a call that may make more than one attempt)."""

    __slots__ = ("_left", "started")

    def __init__(self) -> None:
        #: On :func:`time.monotonic`'s clock; in the future while the thread waits before
        #: a retry (no attempt runs then, so no timeout does).
        self.started = time.monotonic()
        self._left = Signal()

    def pause(self, delay: float) -> bool:
        """Wait ``delay`` seconds before the next attempt (on the worker thread); False
        when the caller left meanwhile."""
        self.started = time.monotonic() + delay
        return not self._left.wait(delay)

    def restart(self) -> bool:
        """A new attempt starts now (a wrap called ``proceed`` again): its timeout starts
        again; False when the caller left meanwhile (then it does not start)."""
        self.started = time.monotonic()
        return not self._left.is_set()

    def leave(self) -> None:
        """The caller stops waiting: no further attempt starts."""
        if not self._left.is_set():
            self._left.set()


def expiry(started: float, timeout: float | None, deadline: float | None) -> float | None:
    """When the caller stops waiting: the attempt's timeout or the batch's deadline,
    whichever comes first (None: neither)."""
    if timeout is None:
        return deadline
    end = started + timeout
    return end if deadline is None else min(end, deadline)


def abandoned(
    run: Run,
    item: Admitted,
    handle: Cancellation,
    leash: Leash | None,
    timeout: float | None,
    deadline: float | None,
) -> Outcome:
    """The outcome of a call its caller stopped waiting for: the thread is left to the
    tool, told through its cancellation handle."""
    if leash is not None:
        leash.leave()
    if handle is not UNSEEN:
        handle.cancel()  # the abandoned tool can still see it should stop
    if run.cancellation is not None and run.cancellation.cancelled:
        return interrupted(Stop.CANCELLED)
    if timeout is not None and (deadline is None or time.monotonic() < deadline):
        return timed_out(item, timeout)
    return interrupted(Stop.DEADLINE)


def wait_here(
    run: Run,
    item: Admitted,
    body: Callable[[], object],
    timeout: float | None,
    deadline: float | None,
    handle: Cancellation,
    leash: Leash | None,
) -> object:
    """Run ``body`` (the call's attempts, or its one attempt, whose ``Raised`` its caller
    classifies) on a pool thread and wait for it on this one, within the attempt's
    timeout and the batch's ``deadline`` (on :func:`time.monotonic`'s clock), woken by the
    batch's cancellation; the call's outcome."""
    pool = threads.THREADS
    try:
        if leash is None and run.cancellation is None:  # one attempt: the pool's hand-off
            left = timeout
            if deadline is not None:
                until = deadline - time.monotonic()
                left = max(0.0, until if timeout is None else min(timeout, until))
            finished, outcome = pool.run(body, _NO_KWARGS, left)
            if not finished:
                return abandoned(run, item, handle, leash, timeout, deadline)
        else:
            outcome = _waited(run, item, body, timeout, deadline, handle, leash)
    except PoolExhausted as error:  # no thread came free in time: the tool never started
        if deadline is not None and time.monotonic() >= deadline:
            return interrupted(Stop.DEADLINE)  # (as under the event loops)
        return classify(error, item)
    return outcome


def _waited(
    run: Run,
    item: Admitted,
    body: Callable[[], object],
    timeout: float | None,
    deadline: float | None,
    handle: Cancellation,
    leash: Leash | None,
) -> object:
    """:func:`wait_here` for a call that may make several attempts, or that the batch's
    cancellation must wake: a job the caller waits for, re-armed at each attempt."""
    pool = threads.THREADS
    cancellation = run.cancellation
    started = time.monotonic()
    job = pool.submit(body, timeout is None and deadline is None)
    wake = threading.Event()
    job.on_done(wake.set)
    forget = cancellation.on_cancel(wake.set) if cancellation is not None else None
    try:
        while not job.done.is_set():
            if cancellation is not None and cancellation.cancelled:
                break
            end = expiry(started if leash is None else leash.started, timeout, deadline)
            wait = None if end is None else max(0.0, end - time.monotonic())
            if wait_main(wake.wait, wait):  # (on the main thread: a signal interrupts it)
                continue  # done, or cancelled
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                break
            if leash is None or timeout is None or leash.started + timeout <= now:
                break  # out of time (else an attempt started meanwhile: wait again)
    finally:
        if forget is not None:
            forget()
        # Still in line: it never starts (withdrawn); running: its thread is abandoned.
        withdrawn = not job.done.is_set() and pool.give_up(job)
    if job.done.is_set():
        return job.outcome()
    if withdrawn and not (cancellation is not None and cancellation.cancelled):
        raise PoolExhausted(pool.threads)  # every thread stayed busy
    return abandoned(run, item, handle, leash, timeout, deadline)
