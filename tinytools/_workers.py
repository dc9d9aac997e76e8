"""Long-lived workers: threads for blocking sync tools, an event loop for ``dispatch_sync``.

Starting a thread or an event loop per call costs far more than most tools do (a trio
run is about 200 us; a new thread about 50 us), so both are kept:

* :data:`THREADS`, one process-wide :class:`ThreadPool` of daemon threads, runs every
  synchronous tool that blocks or has a timeout, under ``dispatch`` and ``dispatch_sync``
  alike. A call that outlives its timeout is answered at once and its thread
  *abandoned*: Python cannot stop a thread, so the tool keeps running until it returns
  (its injected ``Cancellation`` is set, so a tool that polls it stops early), and the
  thread then returns to the pool. Abandoned threads never starve later calls — a call
  that finds no idle thread gets a new one — and never grow without bound: at most
  :data:`MAX_THREADS` threads exist. Past that (a server with more blocking calls at
  once than threads, or threads held by hung tools), a call waits in line, first in,
  first out, for a thread to come free, within its own timeout (and its batch's
  deadline and cancellation); one still in line when that passes is taken out of it
  and never runs, answered with an error that says how many tool threads are still busy
  (:class:`PoolExhausted`). A call with no timeout waits as long as a busy thread may
  still come free: when every thread is held by a tool whose caller gave up on it (timed
  out, or interrupted), it is refused at once, or taken out of the line when the last busy
  thread is given up, as nothing may ever free one (the pool counts the abandoned threads:
  each caller that leaves its tool, and each such tool's return, in either order). One
  made from a tool thread (a tool that dispatches again) is refused at once when every
  thread is busy: every thread could be waiting for another. At most
  :data:`MAX_IDLE` idle threads are kept (a few more, briefly, when many calls end at
  once); extra ones exit. What a hung thread still holds — the tool's arguments, its
  frames, whatever it locked — stays held until the tool returns; a thread that never
  returns stays counted among the busy ones for the life of the process (daemon threads
  do not delay interpreter exit).

  A waiting caller (:meth:`ThreadPool.run`, used by ``dispatch_sync``) and its thread meet
  on a *baton*: two locks, one per direction, and a state both sides change under the GIL,
  so that "the tool ended" and "the caller gave up at the timeout" are decided once. No
  future, condition or event is made per call. The compiled baton
  (``_workers_speedups.c``) releases the GIL before it wakes the other thread, so the woken
  thread never finds the GIL taken: a round trip costs about a third of the CPU of the
  pure-Python twin (:class:`_Baton`, used when the extension is not built). A caller that
  does not wait — the event loops' threaded calls, and ``dispatch_sync`` with a
  ``cancellation`` — gets a :class:`Job` that reports its end (:meth:`ThreadPool.submit`).
  A ``KeyboardInterrupt`` (or another signal handler's exception) while a caller waits
  propagates at once; the tool's thread is then abandoned like a timed-out one (or, when
  the tool had just returned, goes back to the pool). On the
  main thread a caller waits in slices (:func:`wait_main`, and the compiled baton alike),
  so that this holds also for a signal another thread received and for
  ``_thread.interrupt_main()``, which flag the handler without waking the main thread.
* :func:`loop_holder` gives ``dispatch_sync`` one asyncio event loop per calling thread,
  created on first use and reused by every later ``dispatch_sync`` on that thread (about
  7 us to enter, against 200 us for a fresh trio run). On the main thread a signal wakes
  it (:func:`_wake_on_signals`): ``KeyboardInterrupt`` leaves ``dispatch_sync`` at once,
  also when Ctrl-C lands on a tool's thread; one that lands inside the loop's own steps
  is held until the first code the loop runs that is not its own (:func:`_on_sigint`), so
  that an interrupt at any point leaves the loop fit for the next batch, and a
  ``dispatch_sync`` that SIGINT's handler makes meanwhile runs on a loop of its own. It
  is closed when its thread ends
  (or at interpreter exit for the main thread). A forked child never uses or closes its
  parent's loops: on Linux a loop's epoll instance and wake-up pipe are shared with the
  parent across a fork, so closing the copy (at the child's exit) would unregister the
  parent's wake-up pipe and hang the parent's next batch that waits for a tool thread.
  The child makes its own loop on first use, and an inherited one is first given an
  epoll instance of its own (:func:`_detached`), then closed.
* :func:`run_on` runs ``dispatch_sync``'s execution stage on the chosen :data:`Backend`:
  that reused asyncio loop (the default), or a fresh ``trio.run`` for tools written for
  trio (trio has no loop to keep between runs).
"""

from __future__ import annotations

import _thread
import asyncio
import atexit
import collections
import contextlib
import functools
import inspect
import os
import select
import selectors
import signal
import socket
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any, Final, Generic, Literal, Protocol, TypeVar, get_args

import sniffio

from . import _asyncio_tasks

try:  # (signal's wrappers convert handlers to enums: about 5 us a call, against 1)
    from _signal import getsignal as _get_handler  # type: ignore[import-not-found,unused-ignore]
    from _signal import signal as _set_handler  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - another interpreter
    _get_handler, _set_handler = signal.getsignal, signal.signal

__all__ = [
    "BACKENDS",
    "BATON",
    "MAX_IDLE",
    "Backend",
    "MAX_THREADS",
    "THREADS",
    "Handoff",
    "Job",
    "NestedLoop",
    "PoolExhausted",
    "Signal",
    "ThreadPool",
    "check_backend",
    "loop_holder",
    "refuse_nested_loop",
    "run_on",
    "wait_main",
]

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


class Signal:
    """A one-shot, thread-safe flag a thread can wait for: ``threading.Event``'s job,
    on a bare lock (an Event waits through a Condition, several times slower)."""

    __slots__ = ("_lock", "_set")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._set = False

    def set(self) -> None:
        self._set = True
        self._lock.release()

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until set, or ``timeout`` seconds; whether it is set."""
        if self._set:
            return True
        if self._lock.acquire(True, _lock_timeout(timeout)):
            self._lock.release()  # let the next waiter through
            return True
        return self._set


def _lock_timeout(timeout: float | None) -> float:
    """``timeout`` as ``Lock.acquire`` takes it: -1 for none, else clamped to what it can."""
    if timeout is None:
        return -1
    return min(max(0.0, timeout), threading.TIMEOUT_MAX)


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


# The states of a baton (see _workers_speedups.c, which documents the protocol).
IDLE, RUNNING, FINISHED, DETACHED, FREE = 0, 1, 2, 3, 4


class _Baton:
    """The single slot between a caller and a worker thread, in Python: the twin of
    ``_workers_speedups.Baton`` used when the extension is not built (same protocol and
    answers; it never polls, and each hand-off costs about three times the CPU, as a woken
    thread finds the GIL still held by the thread that woke it)."""

    __slots__ = ("_done", "_go", "_mutex", "state")

    def __init__(self) -> None:
        self._go = _thread.allocate_lock()
        self._go.acquire()
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._mutex = _thread.allocate_lock()
        self.state = IDLE

    def hand(self, timeout: float | None, /) -> bool:
        if self.state != IDLE and self.state != FREE:
            raise RuntimeError("the baton already carries a job")
        self.state = RUNNING
        try:
            self._go.release()
            if wait_main(self._acquire_done, timeout):
                self.state = IDLE
                return True
        except BaseException:  # a signal handler's (KeyboardInterrupt), maybe raised
            self._settle()  # after the end was taken: abandoned (DETACHED), or IDLE
            raise
        return self._settle()

    def _acquire_done(self, timeout: float | None) -> bool:
        return self._done.acquire(True, _lock_timeout(timeout))

    def _settle(self) -> bool:
        with self._mutex:
            if self.state == RUNNING:
                self.state = DETACHED
                return False
            # FINISHED (or IDLE): the worker released it, and this caller may have taken it
            self._done.acquire(False)
            self.state = IDLE
        return True

    def give(self) -> None:
        self.state = DETACHED
        self._go.release()

    def wait(self) -> None:
        self._go.acquire()

    def back(self) -> bool:
        with self._mutex:
            if self.state == DETACHED:
                self.state = FREE
                return False
            self.state = FINISHED
            self._done.release()  # (under the mutex: _settle then knows it is released)
        self._go.acquire()
        return True


class Handoff(Protocol):
    """What a worker and its callers use a baton for (either implementation)."""

    @property
    def state(self) -> int: ...
    def hand(self, timeout: float | None, /) -> bool: ...
    def give(self) -> None: ...
    def wait(self) -> None: ...
    def back(self) -> bool: ...


try:
    from ._workers_speedups import Baton, set_main_thread
except ImportError:  # pragma: no cover - installed without a C compiler
    Baton = _Baton  # type: ignore[assignment,misc]

    def set_main_thread(ident: int, /) -> None:
        """(The compiled baton's: the Python one reads :data:`_MAIN`.)"""


#: The main thread's ident (a forked child's is the thread that forked): waits made on it
#: are sliced, so that a signal another thread received, or ``_thread.interrupt_main()``,
#: raises its ``KeyboardInterrupt`` at once rather than when the tool ends (Python runs
#: signal handlers on the main thread only, between bytecodes; only a signal the main thread
#: receives itself interrupts its sleep on a lock).
_MAIN = [threading.main_thread().ident or 0]
#: The longest the main thread sleeps before it runs flagged signal handlers (seconds).
_SLICE = 0.05


def _main_is(ident: int) -> None:
    _MAIN[0] = ident
    set_main_thread(ident)


_main_is(_MAIN[0])
if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=lambda: _main_is(threading.get_ident()))


def wait_main(wait: Callable[[float | None], bool], timeout: float | None) -> bool:
    """``wait(timeout)``: whether what it waits for happened. On the main thread, in slices
    of :data:`_SLICE` seconds, between which a flagged signal handler runs (see
    :data:`_MAIN`): ``KeyboardInterrupt`` propagates from here at once."""
    if threading.get_ident() != _MAIN[0]:
        return wait(timeout)
    if timeout is None:
        while not wait(_SLICE):
            pass
        return True
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if wait(min(max(0.0, left), _SLICE)):
            return True
        if left <= _SLICE:
            return False


#: The batons a pool's workers use unless told otherwise: compiled when built.
BATON: Callable[[], Handoff] = Baton

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


#: How many forks this process is from the one that imported tinytools (a loop made in
#: an earlier generation is the parent's: see :func:`_detached`).
_forks = 0


def _forked() -> None:
    global _forks
    _forks += 1


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forked)


class _LoopHolder:
    """A thread's event loop; closing it when the thread's locals are dropped."""

    __slots__ = (
        "busy",
        "clean",
        "deferred",
        "forks",
        "handling",
        "loop",
        "pid",
        "previous",
        "signals",
        "woken",
    )

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.forks = _forks  # read by loop_holder (a process id costs a system call)
        self.pid = os.getpid()  # read by close: a child clears its parent's other
        # threads' locals before any after-fork hook has run
        #: The socket pair that wakes the main thread's loop for a signal (made on first
        #: need: see :func:`_wake_on_signals`).
        self.signals: tuple[socket.socket, socket.socket] | None = None
        self.woken = False  # (while the wakeup fd is set to them)
        #: No task of an interrupted batch is left on the loop (see :func:`_run_batch`).
        self.clean = True
        #: The host's SIGINT handler while a batch runs on the main thread, and the
        #: interrupts held while it is in the loop's own steps (:func:`_on_sigint`).
        self.previous: Callable[[int, FrameType | None], object] | None = None
        self.deferred: list[tuple[int, FrameType | None]] = []
        #: A batch runs on the loop (:func:`run_on`); the host's SIGINT handler is being
        #: called (:func:`_deliver`).
        self.busy = self.handling = False

    def close(self) -> None:
        loop = self.loop
        if loop.is_closed() or loop.is_running():
            return
        if self.pid == os.getpid() or _detached(loop):
            signals = self.signals
            if signals is not None:
                loop.remove_reader(signals[0].fileno())
                signals[0].close()
                signals[1].close()
            loop.close()

    def __del__(self) -> None:
        self.close()


def _drain_signals(reader: socket.socket) -> None:
    with contextlib.suppress(OSError):  # (BlockingIOError: nothing left)
        while reader.recv(512):
            pass


def _wake_on_signals(holder: _LoopHolder) -> None:
    """Have a signal wake the main thread's loop while ``dispatch_sync`` runs on it (undo
    it with :func:`_unwake`).

    Python runs signal handlers in the main thread, between bytecodes: a Ctrl-C that the
    kernel delivers to another thread (a tool's), or ``_thread.interrupt_main()``, would
    wait until the loop next wakes — when the tool ends, which may be never — before its
    ``KeyboardInterrupt`` is raised. The signal module writes to a "wakeup fd" for every
    signal it handles: this loop reads one for the time of the batch, so the interrupt
    comes out of ``dispatch_sync`` at once. A wakeup fd the host set itself is left as it
    is (the host's loop, asyncio's signal handlers, rely on it).
    """
    signals = holder.signals
    if signals is None:
        reader, writer = socket.socketpair()
        reader.setblocking(False)
        writer.setblocking(False)
        holder.loop.add_reader(reader.fileno(), _drain_signals, reader)
        signals = holder.signals = (reader, writer)
    ours = signals[1].fileno()
    holder.woken = True  # (first: an interrupt may come out of the call once it set it)
    try:
        before = signal.set_wakeup_fd(ours, warn_on_full_buffer=False)
    except ValueError:  # not the main interpreter's main thread after all
        holder.woken = False
        return
    if before != -1 and before != ours:  # the host's: put back
        holder.woken = False
        signal.set_wakeup_fd(before)


def _unwake(holder: _LoopHolder) -> None:
    """Undo :func:`_wake_on_signals` (a wakeup fd a tool set meanwhile is kept)."""
    if holder.woken:
        holder.woken = False
        before = signal.set_wakeup_fd(-1)
        if before != -1 and holder.signals is not None and before != holder.signals[1].fileno():
            signal.set_wakeup_fd(before)


#: Loops inherited over a fork that :func:`_detached` could not make safe to close: kept
#: open (never used) for the life of the process.
_INHERITED: list[asyncio.AbstractEventLoop] = []
#: The selectors whose state lives in this process alone (closing a copy is harmless;
#: ``poll`` is missing on Windows, which has no fork either).
_PRIVATE = tuple(
    getattr(selectors, name)
    for name in ("PollSelector", "SelectSelector")
    if hasattr(selectors, name)
)


def _detached(loop: asyncio.AbstractEventLoop) -> bool:
    """Make a loop inherited from the parent process safe to close in this child; whether
    it now is (else it is kept open, unused).

    Across ``fork`` the child's copy of an epoll instance is the parent's instance, not a
    copy: closing the loop here would unregister the parent's wake-up pipe from it, and
    the parent's loop would then sleep through every wake-up from a tool thread. The
    copy's descriptor is pointed at a new, empty epoll instance, so closing the loop
    touches only the child. asyncio offers no public way to a loop's selector (hence the
    private attribute); a loop with another selector or none (kqueue, uvloop) is kept.
    """
    selector = getattr(loop, "_selector", None)
    if isinstance(selector, _PRIVATE):
        return True
    if sys.platform != "linux" or not isinstance(selector, selectors.EpollSelector):
        _INHERITED.append(loop)
        return False
    fresh = select.epoll()
    try:
        os.dup2(fresh.fileno(), selector.fileno())
    finally:
        fresh.close()
    return True


_local = threading.local()


class NestedLoop(RuntimeError):
    """``dispatch_sync`` was called, for a batch that needs an event loop, from inside a
    running one (see :func:`refuse_nested_loop`). Raised by a tool, it aborts the tool's
    batch: the host's mistake, which the model cannot fix (``_event_loops``)."""


def refuse_nested_loop() -> None:
    """Raise when an event loop runs in this thread: ``dispatch_sync`` would block it with
    a loop of its own (asyncio refuses to nest; under trio, an asyncio loop inside a trio
    task makes ``sniffio`` and anyio-based tools answer for the wrong loop).

    Called before any tool of the batch runs and before the ledger records it (a call
    recorded as started and never run would be refused as already started when retried).
    The host's SIGINT handler, called at a Ctrl-C inside a step of this thread's
    ``dispatch_sync`` loop, is let through: its batch runs on a loop of its own while the
    interrupted one waits (see :func:`_run_apart`).

    Raises:
        NestedLoop: Naming the loop and what to do instead.
    """
    loop = asyncio._get_running_loop()
    if loop is not None and _handling_sigint_on(loop):
        return
    running = "asyncio" if loop is not None else None
    running = running or sniffio.thread_local.name or sniffio.current_async_library_cvar.get()
    if running is not None:
        raise NestedLoop(
            "dispatch_sync needs an event loop for this batch (an async tool, an async "
            "on_event handler, or threaded calls run concurrently) but was called from "
            f"inside a running {running} event loop, which it would block (no tool of this "
            "batch has run). Use `await tinytools.dispatch(...)` there; a synchronous tool "
            "that dispatches can be declared `@tool(blocking=True)` to run on a worker "
            "thread instead"
        )


def _handling_sigint_on(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether the host's SIGINT handler runs inside a step of ``loop``, this thread's
    ``dispatch_sync`` loop (:func:`_deliver`)."""
    holder: _LoopHolder | None = getattr(_local, "holder", None)
    return holder is not None and holder.handling and holder.loop is loop


def loop_holder() -> _LoopHolder:
    """This thread's asyncio loop for ``dispatch_sync`` (made on first use, then reused).
    The caller has checked that no loop runs in this thread (:func:`refuse_nested_loop`).
    """
    holder: _LoopHolder | None = getattr(_local, "holder", None)
    if holder is None or holder.loop.is_closed() or holder.forks != _forks:
        holder = _LoopHolder()
        _local.holder = holder
        if threading.current_thread() is threading.main_thread():
            atexit.register(holder.close)
    return holder


#: The event loops ``dispatch_sync`` can run async tools on.
Backend = Literal["asyncio", "trio"]
BACKENDS: Final = get_args(Backend)


def check_backend(backend: object) -> None:
    """Raise ``ValueError`` unless ``backend`` is one of :data:`BACKENDS`."""
    if backend not in BACKENDS:
        raise ValueError(
            f"backend must be one of {', '.join(map(repr, BACKENDS))}, not {backend!r}"
        )


# Interrupts and the reused loop. A signal handler's exception (Ctrl-C) is raised between
# any two bytecodes of the main thread. Raised inside asyncio's own steps, it leaves them
# half-way: a handle taken off the loop's ready queue and never run (its task never
# wakes, so cancelling the batch waits for ever), a task scheduled but not registered, a
# finished future's stop callback still queued (the next run stops at once), the loop
# still marked as running. So while a batch runs on the main thread, SIGINT's handler is
# replaced by :func:`_on_sigint`. A Ctrl-C that lands in asyncio's own steps, or in the
# code here that drives the loop, is held: the loop is told to stop, and a profile hook
# (:func:`_at_next_step`) delivers it (calls the host's handler) at the first function
# call or builtin return outside those steps — the first code the loop runs that is not
# its own (a tool, a callback, the engine) — or the driver does once the loop has
# stopped; it never waits for a tool or a host callback. Anywhere else it is delivered at
# once, as without the swap: in a tool, a host callback, whatever they call (the standard
# library, a builtin), and in tinytools' engine, whose batch state dies with the batch
# and whose tasks are unwound as after a tool's own KeyboardInterrupt. Whatever ends a
# run early, :func:`_drive` ignores a stop left queued by an earlier run, and the tasks
# left are run to their end before the loop serves another batch (:func:`_unwind`). A
# ``dispatch_sync`` the host's handler makes meanwhile runs on a loop of its own
# (:func:`_run_apart`).

#: The globals of the modules whose code makes up the loop's own steps (held, so that
#: their ids stay theirs): asyncio's, and the engine's bookkeeping of a batch's tasks,
#: which calls nothing of the host's (:mod:`_asyncio_tasks`).
_STEPS: Final = {
    id(vars(module)): vars(module)
    for name, module in tuple(sys.modules.items())
    if name == "asyncio" or name.startswith("asyncio.")
} | {id(vars(_asyncio_tasks)): vars(_asyncio_tasks)}
#: The flags of code that is awaited (a coroutine's, an async generator's), and of code
#: that is resumed (a generator's too).
_AWAITED: Final = inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE | inspect.CO_ASYNC_GENERATOR
_RESUMED: Final = _AWAITED | inspect.CO_GENERATOR


def _in_steps(frame: FrameType | None) -> bool:
    """Whether the main thread, interrupted in ``frame``, is inside the loop's own steps:
    in the code of :data:`_STEPS` or of the driver (:data:`_DRIVER`), or in code one of
    them calls as a part of its step (a weak set, the selector). What they run is not: a
    callback, a task's coroutine (a tool, the engine, the host's code they call), an
    awaited coroutine, the host's SIGINT handler. Decided by the first such frame outwards
    from ``frame`` and by how it called the frame below it; the module a frame comes from
    tells nothing else."""
    below = None
    at = frame
    while at is not None:
        code = at.f_code
        if code in _DRIVER or id(at.f_globals) in _STEPS:
            return below is None or not (code in _CALLS_OUT or below.f_code.co_flags & _AWAITED)
        below, at = at, at.f_back
    return False


def _on_sigint(signum: int, frame: FrameType | None) -> object:
    """SIGINT's handler while a batch runs on the main thread's loop (see above)."""
    holder: _LoopHolder | None = getattr(_local, "holder", None)
    if holder is None or holder.previous is None:  # (left installed: see _guard_sigint)
        return signal.default_int_handler(signum, frame)
    holder.deferred.append((signum, frame))
    if not _in_steps(frame):
        _deliver(holder)
    elif len(holder.deferred) == 1:  # held: the loop stops (it may be waiting for a tool)
        holder.loop.call_soon_threadsafe(holder.loop.stop)
        if sys.getprofile() is None:  # (else held until the loop stops, the host's
            sys.setprofile(_at_next_step)  # profiler left in place)
    return None


def _at_next_step(frame: FrameType, event: str, arg: object) -> None:
    """The profile hook while a Ctrl-C is held (:func:`_on_sigint`): delivers it at the
    first function start or builtin return outside the loop's own steps. Not as a
    coroutine or generator resumes: it passes the resume down to what it awaits, which an
    exception there would leave suspended for ever (Python runs no signal handler there
    either)."""
    starts = event == "c_return" or (event == "call" and not frame.f_code.co_flags & _RESUMED)
    if starts and not _in_steps(frame):
        _deliver(_local.holder)


def _drive(holder: _LoopHolder, start: Callable[[], Awaitable[T]]) -> T:
    """Run the loop until the future or coroutine ``start()`` makes has ended (made here,
    so that no interrupt falls between making it and the loop owning it); its result."""
    loop = holder.loop
    future = asyncio.ensure_future(start(), loop=loop)
    future.add_done_callback(_stop_loop)
    try:
        while not future.done():
            if holder.deferred:  # the host's handler, now that the loop is between steps
                _deliver(holder)
            else:  # (a stop an interrupted run left queued ends a pass early)
                loop.run_forever()
    except BaseException:
        if future.done() and not future.cancelled():
            future.exception()  # (retrieved: asyncio would log it as never retrieved)
        raise
    finally:
        future.remove_done_callback(_stop_loop)
    return future.result()


def _stop_loop(future: asyncio.Future[Any]) -> None:
    future.get_loop().stop()


def _deliver(holder: _LoopHolder) -> None:
    """Call the host's SIGINT handler for each interrupt held (it raises, as a rule; a
    ``dispatch_sync`` it makes runs apart: see :func:`refuse_nested_loop`)."""
    if sys.getprofile() is _at_next_step:
        sys.setprofile(None)
    previous = holder.previous
    while holder.deferred:
        signum, frame = holder.deferred.pop(0)
        if previous is not None:
            handling = holder.handling
            holder.handling = True
            try:
                previous(signum, frame)
            finally:
                holder.handling = handling


def _unwind(holder: _LoopHolder) -> None:
    """Cancel the tasks a batch left on the loop and run them to their end (an interrupt
    meanwhile leaves the rest for the next use): none may start, or go on, inside a later,
    unrelated ``dispatch_sync``."""
    left = asyncio.all_tasks(holder.loop)
    if left:
        for task in left:
            task.cancel()
        _drive(holder, functools.partial(asyncio.gather, *left, return_exceptions=True))
    holder.clean = True


def _run_batch(holder: _LoopHolder, fn: Callable[..., Awaitable[T]], args: tuple[object, ...]) -> T:
    """``fn(*args)`` run to completion on the holder's loop; whatever ends it early
    propagates once the tasks it leaves are unwound."""
    if not holder.clean:  # an interrupt cut short the unwinding of an earlier batch
        _unwind(holder)
    holder.clean = False
    try:
        result = _drive(holder, functools.partial(fn, *args))
    except BaseException:
        _unwind(holder)
        raise
    holder.clean = True
    return result


def _guard_sigint(holder: _LoopHolder) -> None:
    """Put :func:`_on_sigint` in place of a SIGINT handler written in Python (undo it with
    :func:`_unguard_sigint`)."""
    holder.deferred.clear()  # (held and never delivered: an earlier run was cut short)
    current = _get_handler(signal.SIGINT)
    if current is _on_sigint:  # (left installed: its previous handler stands)
        if holder.previous is None:  # (and this thread's loop made anew since)
            holder.previous = signal.default_int_handler
        return
    if callable(current):  # (else ignored, the default action, or not Python's: no exception)
        holder.previous = current
        _set_handler(signal.SIGINT, _on_sigint)


def _unguard_sigint(holder: _LoopHolder) -> None:
    """Put the host's SIGINT handler back (unless the batch replaced it meanwhile), then
    call it for an interrupt still put off."""
    if _get_handler(signal.SIGINT) is _on_sigint:
        _set_handler(signal.SIGINT, holder.previous)
    if holder.deferred:
        _deliver(holder)


def _run_guarded(
    holder: _LoopHolder, fn: Callable[..., Awaitable[T]], args: tuple[object, ...]
) -> T:
    """:func:`_run_batch` on the main thread, woken by signals and with SIGINT put off
    while it lands in the loop's own steps (here included: an interrupt between two of
    these steps is delivered once SIGINT's handler is the host's again)."""
    try:
        _wake_on_signals(holder)
        _guard_sigint(holder)
        return _run_batch(holder, fn, args)
    finally:  # (the wakeup fd first: SIGINT is still put off meanwhile)
        try:
            _unwake(holder)
        finally:
            _unguard_sigint(holder)


def _run_apart(holder: _LoopHolder, fn: Callable[..., Awaitable[T]], args: tuple[object, ...]) -> T:
    """``fn(*args)`` on a loop of its own, for a ``dispatch_sync`` made while a batch runs on
    this thread's loop (by SIGINT's handler, between two of its steps or inside one): that
    batch's loop, tasks, wakeup fd and SIGINT handler are left as they are, and it goes on
    once this one has returned."""
    apart = _LoopHolder()  # (the thread's held interrupts are one list)
    apart.previous, apart.deferred, apart.busy = holder.previous, holder.deferred, True
    if holder.woken and holder.signals is not None:  # (a signal wakes this loop as well)
        apart.loop.add_reader(holder.signals[0].fileno(), _drain_signals, holder.signals[0])
    running = asyncio._get_running_loop()  # (the batch's, when the handler cut into a step)
    _local.holder = apart
    try:
        asyncio._set_running_loop(None)
        return _run_batch(apart, fn, args)
    finally:
        _local.holder = holder
        asyncio._set_running_loop(running)
        if apart.clean:
            apart.close()
        else:  # (its unwinding was cut short: closed, it would drop its tasks unfinished)
            _LEFT.append(apart)
        _deliver(apart)  # (an interrupt held as its batch ended)


#: Loops of a ``dispatch_sync`` made by SIGINT's handler whose tasks an interrupt kept
#: from unwinding (:func:`_run_apart`): kept, never used, for the life of the process.
_LEFT: list[_LoopHolder] = []


#: The code that drives the loop (an interrupt there is held, as in asyncio's own steps),
#: and the code of asyncio or of the driver that calls what it runs: a callback, a task's
#: step, the host's SIGINT handler (an interrupt in those is not held).
_DRIVER: Final = frozenset(
    {_drive.__code__, _run_guarded.__code__, _run_apart.__code__, _deliver.__code__}
)
_CALLS_OUT: Final = frozenset({asyncio.events.Handle._run.__code__, _deliver.__code__})


def run_on(backend: Backend, fn: Callable[..., Awaitable[T]], *args: object) -> T:
    """Run ``fn(*args)`` to completion on ``backend`` from synchronous code.

    The caller refuses first a thread where an event loop runs (:func:`refuse_nested_loop`:
    dispatch does so before the ledger records the batch, so it is not checked again here).
    """
    if backend == "asyncio":
        holder = loop_holder()
        if holder.busy:  # (SIGINT's handler dispatching while a batch runs on this thread)
            return _run_apart(holder, fn, args)
        holder.busy = True
        try:
            if threading.current_thread() is threading.main_thread():
                return _run_guarded(holder, fn, args)
            return _run_batch(holder, fn, args)  # (no signal handler runs in this thread)
        finally:
            holder.busy = False
    import trio

    return trio.run(fn, *args)
