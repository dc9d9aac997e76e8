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
  :data:`MAX_THREADS` threads exist; past that, a call is refused at once with an error
  that says how many tool threads are still busy (:class:`PoolExhausted`). At most
  :data:`MAX_IDLE` idle threads are kept; extra ones exit.
* :func:`event_loop` gives ``dispatch_sync`` one asyncio event loop per calling thread,
  created on first use and reused by every later ``dispatch_sync`` on that thread (about
  7 us to enter, against 200 us for a fresh trio run). It is closed when its thread ends
  (or at interpreter exit for the main thread).
* :func:`run_on` runs ``dispatch_sync``'s execution stage on the chosen :data:`Backend`:
  that reused asyncio loop (the default), or a fresh ``trio.run`` for tools written for
  trio (trio has no loop to keep between runs).
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from collections.abc import Awaitable, Callable
from typing import Final, Generic, Literal, TypeVar, get_args

__all__ = [
    "BACKENDS",
    "MAX_IDLE",
    "Backend",
    "MAX_THREADS",
    "THREADS",
    "Job",
    "PoolExhausted",
    "Signal",
    "ThreadPool",
    "check_backend",
    "event_loop",
    "run_on",
]

T = TypeVar("T")

#: Idle threads kept for the next blocking call.
MAX_IDLE = 8
#: Threads the pool may hold at once, busy (abandoned ones included) or idle.
MAX_THREADS = 64


class PoolExhausted(RuntimeError):
    """Every tool thread is busy (abandoned calls that outlived their timeout included)."""

    def __init__(self, busy: int) -> None:
        super().__init__(
            f"no thread is free to run the tool: {busy} tool threads are still busy "
            "(calls that outlived their timeout keep their thread until the tool returns); "
            "make the hung tools observe their injected Cancellation, or retry later"
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
        if self._lock.acquire(True, -1 if timeout is None else max(0.0, timeout)):
            self._lock.release()  # let the next waiter through
            return True
        return self._set


class Job(Generic[T]):
    """One function run on a pool thread; its outcome once :attr:`done` is set."""

    __slots__ = ("_fn", "_notify", "done", "error", "value")

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._notify: Callable[[], None] | None = None
        self.done = Signal()
        self.value: T | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self._fn()
        except BaseException as error:  # handed to the caller, whatever it is
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


class _Worker:
    __slots__ = ("_job", "_pool", "_ready")

    def __init__(self, pool: ThreadPool) -> None:
        self._pool = pool
        self._ready = threading.Lock()
        self._ready.acquire()
        self._job: Job[object] | None = None

    def start(self) -> None:
        threading.Thread(target=self._loop, name="tinytools-tool", daemon=True).start()

    def give(self, job: Job[object]) -> None:
        self._job = job
        self._ready.release()

    def _loop(self) -> None:
        while True:
            self._ready.acquire()
            job, self._job = self._job, None
            assert job is not None
            job.run()
            del job
            if not self._pool._park(self):
                return


class ThreadPool:
    """Daemon threads for blocking sync tools (see the module docstring)."""

    def __init__(self, max_threads: int = MAX_THREADS, max_idle: int = MAX_IDLE) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._threads = 0
        self._max_threads = max_threads
        self._max_idle = max_idle

    @property
    def threads(self) -> int:
        """The threads alive now, busy or idle."""
        return self._threads

    def submit(self, fn: Callable[[], T]) -> Job[T]:
        """Run ``fn`` on an idle thread, or on a new one.

        Raises:
            PoolExhausted: :data:`MAX_THREADS` threads are alive and none is idle.
        """
        job: Job[T] = Job(fn)
        with self._lock:
            if self._idle:
                worker = self._idle.pop()
            elif self._threads < self._max_threads:
                self._threads += 1
                worker = None
            else:
                raise PoolExhausted(self._threads)
        if worker is None:
            worker = _Worker(self)
            worker.give(job)  # type: ignore[arg-type]
            try:
                worker.start()
            except BaseException:
                with self._lock:
                    self._threads -= 1
                raise
        else:
            worker.give(job)  # type: ignore[arg-type]
        return job

    def _park(self, worker: _Worker) -> bool:
        """A worker finished its job: keep it idle (True) or let its thread end (False)."""
        with self._lock:
            if len(self._idle) < self._max_idle:
                self._idle.append(worker)
                return True
            self._threads -= 1
            return False


#: The process-wide pool every dispatch uses.
THREADS = ThreadPool()


class _LoopHolder:
    """A thread's event loop; closing it when the thread's locals are dropped."""

    __slots__ = ("loop",)

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def close(self) -> None:
        if not self.loop.is_closed() and not self.loop.is_running():
            self.loop.close()

    def __del__(self) -> None:
        self.close()


_local = threading.local()


def event_loop() -> asyncio.AbstractEventLoop:
    """This thread's asyncio loop for ``dispatch_sync`` (made on first use, then reused).

    Raises:
        RuntimeError: An event loop is already running in this thread (await
            ``dispatch`` there instead).
    """
    if asyncio._get_running_loop() is not None:
        raise RuntimeError(
            "dispatch_sync needs an event loop for this batch (an async tool or async "
            "on_event handler, or a sync tool with a timeout) but was called from inside a "
            "running event loop; use `await tinytools.dispatch(...)` there"
        )
    holder: _LoopHolder | None = getattr(_local, "holder", None)
    if holder is None or holder.loop.is_closed():
        holder = _LoopHolder()
        _local.holder = holder
        if threading.current_thread() is threading.main_thread():
            atexit.register(holder.close)
    return holder.loop


#: The event loops ``dispatch_sync`` can run async tools on.
Backend = Literal["asyncio", "trio"]
BACKENDS: Final = get_args(Backend)


def check_backend(backend: object) -> None:
    """Raise ``ValueError`` unless ``backend`` is one of :data:`BACKENDS`."""
    if backend not in BACKENDS:
        raise ValueError(
            f"backend must be one of {', '.join(map(repr, BACKENDS))}, not {backend!r}"
        )


def run_on(backend: Backend, fn: Callable[..., Awaitable[T]], *args: object) -> T:
    """Run ``fn(*args)`` to completion on ``backend`` from synchronous code.

    Raises:
        RuntimeError: An event loop is already running in this thread.
    """
    if backend == "asyncio":
        return event_loop().run_until_complete(fn(*args))
    import sniffio
    import trio

    try:
        running = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        running = None
    if running is not None or asyncio._get_running_loop() is not None:
        raise RuntimeError(
            "dispatch_sync needs an event loop for this batch but was called from inside a "
            "running event loop; use `await tinytools.dispatch(...)` there"
        )
    return trio.run(fn, *args)
