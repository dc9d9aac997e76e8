"""``dispatch_sync``'s event loop: one asyncio loop per calling thread, kept and reused.

:func:`loop_holder` gives each thread that calls ``dispatch_sync`` one asyncio event loop,
made on first use and reused by every later batch of that thread (about 7 us to enter,
against 200 us for a fresh trio run); :func:`run_on` runs a batch's execution stage on it
(or, ``backend="trio"``, under a fresh ``trio.run``). On the main thread a signal wakes
the loop, and a Ctrl-C landing inside the loop's own steps is held until the first code
the loop runs that is not its own, so that an interrupt at any point leaves the loop fit
for the next batch; a ``dispatch_sync`` that SIGINT's handler makes meanwhile runs on a
loop of its own. A forked child never uses or closes its parent's loops.
"""

from __future__ import annotations

import asyncio
import atexit
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
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any, Final, Literal, TypeVar, get_args

from . import tasks as _asyncio_tasks

try:  # (signal's wrappers convert handlers to enums: about 5 us a call, against 1)
    from _signal import getsignal as _get_handler  # type: ignore[import-not-found,unused-ignore]
    from _signal import signal as _set_handler  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - another interpreter
    _get_handler, _set_handler = signal.getsignal, signal.signal

__all__ = ["BACKENDS", "Backend", "check_backend", "loop_holder", "run_on"]

T = TypeVar("T")

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


def handling_sigint_on(loop: asyncio.AbstractEventLoop) -> bool:
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
#: which calls nothing of the host's (:mod:`.tasks`).
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
