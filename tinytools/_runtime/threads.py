"""The tool threads: one process-wide pool of daemon threads for blocking sync tools.

:data:`THREADS` runs every synchronous call that blocks or has a timeout, under
``dispatch`` and ``dispatch_sync`` alike. A call that outlives its timeout is answered at
once and its thread *abandoned* (Python cannot stop a thread: the tool runs until it
returns, its injected ``Cancellation`` set, then the thread returns to the pool). At most
:data:`MAX_THREADS` threads exist; past that a call waits in line, first in, first out,
within its own timeout, and one still in line then never runs (:class:`PoolExhausted`).
How waits, abandoned threads and forks are handled: docs/concepts/performance.md.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from .baton import BATON, IDLE, Handoff, Signal, wait_main

__all__ = ["MAX_IDLE", "MAX_THREADS", "THREADS", "Job", "PoolExhausted", "ThreadPool"]

T = TypeVar("T")

#: Idle threads kept for the next blocking call.
MAX_IDLE = 8
#: Threads the pool may hold at once, busy (abandoned ones included) or idle.
MAX_THREADS = 64


class PoolExhausted(RuntimeError):
    """Every tool thread stayed busy (abandoned calls that outlived their timeout included)
    while a call waited in line for one, or a tool thread asked for another; or (``hung``)
    a call with no timeout found every thread held by a tool its caller gave up on."""

    def __init__(self, busy: int, hung: bool = False) -> None:
        if hung:
            super().__init__(
                f"no thread is free to run the tool: all {busy} tool threads are held by "
                "tools nobody waits for any more (they outlived their timeout, or their "
                "caller was interrupted; each keeps its thread until it returns), and this "
                "call has no timeout, so it could wait for ever; make hung tools "
                "observe their injected Cancellation, give this tool a timeout (it then "
                "waits in line for a thread within it), or retry later"
            )
            return
        super().__init__(
            f"no thread came free to run the tool in time: {busy} tool threads are busy (a "
            "call that outlived its timeout keeps its thread until the tool returns; a tool "
            "that dispatches from a tool thread is refused at once when all are busy); make "
            "hung tools observe their injected Cancellation, give the tool a longer timeout, "
            "or retry later"
        )


class Job(Generic[T]):
    """A function given to a pool thread without waiting (:meth:`ThreadPool.submit`); its
    outcome once :attr:`done` is set."""

    __slots__ = ("_notify", "done", "error", "fn", "left", "patient", "returned", "value")

    def __init__(self, fn: Callable[[], T] | None = None, patient: bool = False) -> None:
        #: The function, while the job waits in the pool's queue for a thread.
        self.fn = fn
        #: Its caller waits with no time limit (see :meth:`ThreadPool.submit`).
        self.patient = patient
        #: Its caller stopped waiting for it while it ran (:meth:`ThreadPool.give_up`); its
        #: function returned, or never will run (refused in line) (both set under the
        #: pool's lock).
        self.left = self.returned = False
        self._notify: Callable[[], None] | None = None
        self.done = Signal()
        self.value: T | None = None
        self.error: BaseException | None = None

    def finish(self, value: T | None, error: BaseException | None) -> None:
        """Record the outcome, set :attr:`done`, call the ``on_done`` callback (from the
        worker thread)."""
        self.value = value
        self.error = error
        self.done.set()
        notify = self._notify
        if notify is not None:
            notify()

    def on_done(self, notify: Callable[[], None]) -> None:
        """Call ``notify`` (from the worker thread) when the job ends; now if it has."""
        self._notify = notify
        if self.done.is_set():
            notify()

    def outcome(self) -> T:
        """The job's value, or raise what it raised."""
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


#: The empty keyword arguments of a submitted function (never written to).
_NO_KWARGS: dict[str, object] = {}


#: Marks the pool's own threads (see :meth:`ThreadPool.submit`).
_worker_thread = threading.local()


class _Worker:
    """One pool thread and its baton. The caller fills ``fn``/``kwargs`` (``fn`` None:
    stop) and ``job`` (for :meth:`ThreadPool.submit`), the thread the outcome."""

    __slots__ = ("_pool", "baton", "error", "fn", "job", "kwargs", "value")

    def __init__(self, pool: ThreadPool) -> None:
        self._pool = pool
        self.baton = pool._baton()
        self.fn: Callable[..., object] | None = None
        self.kwargs: dict[str, object] = _NO_KWARGS
        self.job: Job[object] | None = None
        self.value: object = None
        self.error: BaseException | None = None

    def start(self) -> None:
        threading.Thread(target=self._loop, name="tinytools-tool", daemon=True).start()

    def _loop(self) -> None:
        _worker_thread.marked = True
        baton = self.baton
        baton.wait()
        while True:
            fn, kwargs = self.fn, self.kwargs
            if fn is None:  # stopped by the pool (more idle threads than it keeps)
                pool = self._pool
                pool._exited()
                if pool._queue:  # (joined the line since: a new thread takes this place)
                    pool._drain()
                return
            self.fn, self.kwargs = None, _NO_KWARGS
            try:
                self.value = fn(**kwargs)
            except BaseException as raised:  # handed to the caller, whatever it is
                self.error = raised
            del fn, kwargs
            if baton.back():  # the waiting caller took the outcome; a next job is here
                continue
            # Nobody waits: a submitted job, or one abandoned at its timeout.
            job, value, error = self.job, self.value, self.error
            self.job = self.value = self.error = None
            pool = self._pool
            pool._returned(job)
            keep = pool._park(self)  # parked (or counted out) before the job is done
            if not keep:
                pool._exited()
            if pool._queue:  # a job waits for a thread: this one, or another idle one
                pool._drain()
            if job is not None:
                with contextlib.suppress(BaseException):  # a failing on_done: nobody waits
                    job.finish(value, error)
            del job, value, error
            if not keep:
                return
            baton.wait()


class ThreadPool:
    """Daemon threads for blocking sync tools (see the module docstring)."""

    def __init__(
        self,
        max_threads: int = MAX_THREADS,
        max_idle: int = MAX_IDLE,
        baton: Callable[[], Handoff] = BATON,
    ) -> None:
        self._baton = baton
        self._max_threads = max_threads
        self._max_idle = max_idle
        self._after_fork()
        if hasattr(os, "register_at_fork"):  # POSIX
            forked = weakref.WeakMethod(self._after_fork)
            os.register_at_fork(after_in_child=lambda: _call(forked()))

    def _after_fork(self) -> None:
        """Start empty: in a forked child only the forking thread exists, so the parent's
        idle workers are gone (a job handed to one would never run) and its lock may be
        held by a thread that is not there."""
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._threads = 0
        #: Busy threads whose caller stopped waiting for their tool (never more than there
        #: are: a caller counts its leaving, the thread its tool's return, in either order).
        self._abandoned = 0
        self._queue: collections.deque[Job[object]] = collections.deque()

    @property
    def threads(self) -> int:
        """The threads alive now, busy or idle."""
        return self._threads

    def run(
        self, fn: Callable[..., T], kwargs: dict[str, object], timeout: float | None
    ) -> tuple[bool, T | None]:
        """Run ``fn(**kwargs)`` on a pool thread and wait for it, at most ``timeout``
        seconds: ``(True, value)``, or ``(False, None)`` when the timeout passed first
        (the thread is then abandoned to the tool; it returns to the pool when the tool
        returns). What ``fn`` raises is raised here.

        When :data:`MAX_THREADS` threads are busy, the call waits in line for one to come
        free, within its ``timeout``; with no ``timeout``, as long as it takes, unless
        every thread is held by a tool whose caller gave up on it (see :meth:`submit`).

        Raises:
            PoolExhausted: No thread came free within ``timeout``, or (no ``timeout``)
                every thread is held by an abandoned tool.
        """
        try:
            worker = self._idle.pop()  # atomic: no lock needed (_take, written out)
        except IndexError:
            found = self._take()
            if found is None:
                return self._in_line(fn, kwargs, timeout)
            worker = found
        worker.fn = fn
        worker.kwargs = kwargs
        baton = worker.baton
        # Interrupted while waiting (KeyboardInterrupt), hand() raises, or the next
        # bytecode does once the tool ended: the baton says which.
        try:
            finished = baton.hand(timeout)
        except BaseException:
            if baton.state == IDLE:  # the tool's end was taken: its thread is free
                worker.fn, worker.kwargs, worker.value, worker.error = None, _NO_KWARGS, None, None
                self._give_back(worker)
            else:  # abandoned (it parks itself when its tool ends, FREE)
                self._left()
            raise
        if not finished:
            self._left()
            return False, None
        value, error = worker.value, worker.error
        worker.value = None
        if error is not None:
            worker.error = None
            self._give_back(worker)
            try:
                raise error
            finally:
                del error  # no cycle through this frame's traceback
        idle = self._idle
        if len(idle) < self._max_idle:  # _give_back, written out
            idle.append(worker)
            if self._queue:
                self._drain()
        else:
            self._give_back(worker)
        return True, value  # type: ignore[return-value]

    def _in_line(
        self, fn: Callable[..., T], kwargs: dict[str, object], timeout: float | None
    ) -> tuple[bool, T | None]:
        """:meth:`run` when every thread is busy: wait in line, then for the tool."""
        job = self.submit(functools.partial(fn, **kwargs), patient=timeout is None)
        try:
            wait_main(job.done.wait, timeout)
        finally:
            # (interrupted, or out of time: a job that has not started never will)
            withdrawn = not job.done.is_set() and self.give_up(job)
        if withdrawn:
            raise PoolExhausted(self._threads)
        if not job.done.is_set():
            return False, None
        return True, job.outcome()

    def submit(self, fn: Callable[[], T], patient: bool = False) -> Job[T]:
        """Run ``fn`` on an idle thread, or on a new one, without waiting for it. When
        :data:`MAX_THREADS` threads are busy, the job waits in line (first in, first out)
        for one to come free; a caller that stops waiting for it must say so
        (:meth:`give_up`), so that it never starts late, or, once it has started, its
        thread counts as abandoned. A ``patient`` caller waits with no time limit: its job is
        refused while every thread is held by a tool whose caller left it (then nothing
        may ever come free), and taken out of the line with that error (its ``outcome``)
        when the last busy thread is left so.

        Raises:
            PoolExhausted: Every thread is busy and this is one of them (a tool that
                dispatches again): it is refused at once, as waiting could deadlock; or
                the job is ``patient`` and every thread is held by an abandoned tool.
        """
        job: Job[T] = Job(None, patient)
        worker = self._take()
        if worker is None:
            if getattr(_worker_thread, "marked", False):
                # A tool on a pool thread asking for another (a nested dispatch): waiting
                # could deadlock, every thread waiting for one of the others.
                raise PoolExhausted(self._threads)
            job.fn = fn
            with self._lock:
                if patient and self._hung():
                    raise PoolExhausted(self._threads, hung=True)
                self._queue.append(job)  # type: ignore[arg-type]
            self._drain()  # (a thread may have come free since _take looked)
            return job
        worker.fn = fn
        worker.job = job  # type: ignore[assignment]
        worker.baton.give()
        return job

    def give_up(self, job: Job[T]) -> bool:
        """The caller stops waiting for ``job``: True when it was still in line (it is taken
        out, and never runs: :meth:`withdraw`); else it has started, and its thread counts
        as abandoned until the function returns (nothing, if it has returned)."""
        if self.withdraw(job):
            return True
        with self._lock:
            if job.returned:
                return False
            job.left = True
        self._left()
        return False

    def _left(self) -> None:
        """A caller stopped waiting for a running tool (its thread is abandoned). When that
        leaves every thread held so, the patient jobs waiting in line are refused."""
        with self._lock:
            self._abandoned += 1
            if not self._hung():
                return
            queue = self._queue
            refused = [job for job in queue if job.patient]
            for job in refused:
                queue.remove(job)
                job.returned = True  # (its caller, not yet woken, may leave it first)
        for job in refused:
            job.fn = None
            job.finish(None, PoolExhausted(self._threads, hung=True))

    def _returned(self, job: Job[object] | None) -> None:
        """A tool nobody waited for returned: ``job``'s (given, or left by its caller),
        or (None) one whose caller left it at its timeout."""
        with self._lock:
            if job is None:
                self._abandoned -= 1
                return
            job.returned = True
            if job.left:
                self._abandoned -= 1

    def _hung(self) -> bool:
        """Every thread there may be is held by an abandoned tool (under the lock)."""
        return self._threads >= self._max_threads and self._abandoned >= self._threads

    def withdraw(self, job: Job[T]) -> bool:
        """Take ``job`` out of the line; whether it was still waiting there (it then never
        runs; else it has started, or ended)."""
        with self._lock:
            try:
                self._queue.remove(job)  # type: ignore[arg-type]
            except ValueError:
                return False
        job.fn = None
        return True

    def _drain(self) -> None:
        """Start the jobs waiting in line on the idle threads (called whenever a thread
        comes free while jobs wait, and when a job starts waiting)."""
        while self._queue:
            worker = self._take()  # an idle one, or a new one (a thread may have ended)
            if worker is None:
                return  # every thread busy: the next to come free drains
            with self._lock:
                job = self._queue.popleft() if self._queue else None
            if job is None:  # (withdrawn meanwhile)
                self._give_back(worker)
                return
            worker.fn, job.fn = job.fn, None
            worker.job = job
            worker.baton.give()

    def _take(self) -> _Worker | None:
        """An idle worker, or a new one; None when :data:`MAX_THREADS` are busy."""
        try:
            return self._idle.pop()  # atomic: no lock needed
        except IndexError:
            pass
        with self._lock:
            if self._threads >= self._max_threads:
                return None
            self._threads += 1
        worker = _Worker(self)
        try:
            worker.start()
        except BaseException:
            with self._lock:
                self._threads -= 1
            raise
        return worker

    def _give_back(self, worker: _Worker) -> None:
        """A caller took the outcome of its worker's job: park the worker, or stop it."""
        if not self._park(worker):
            worker.fn = None
            worker.baton.give()
        elif self._queue:
            self._drain()

    def _park(self, worker: _Worker) -> bool:
        """Keep an idle worker (True), or not (False: its thread is to end)."""
        if len(self._idle) < self._max_idle:  # at most a few over, under a race
            self._idle.append(worker)
            return True
        return False

    def _exited(self) -> None:
        """A worker's thread ends."""
        with self._lock:
            self._threads -= 1


def _call(fn: Callable[[], object] | None) -> None:
    if fn is not None:
        fn()


#: The process-wide pool every dispatch uses.
THREADS = ThreadPool()
