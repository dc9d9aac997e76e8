"""``dispatch_sync``'s event loop: one asyncio loop per calling thread, kept and reused.

:func:`loop_holder` gives each thread that calls ``dispatch_sync`` one asyncio event loop,
made on first use and reused by every later batch of that thread (about 7 us to enter,
against 200 us for a fresh trio run); :func:`run_on` runs a batch's execution stage on it
(or, ``backend="trio"``, under a fresh ``trio.run``). On the main thread a signal wakes
the loop, and a Ctrl-C landing inside the loop's own steps is put off until the loop is
between two of them, so that an interrupt at any point leaves the loop fit for the next
batch. A forked child never uses or closes its parent's loops.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
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

    __slots__ = ("clean", "deferred", "forks", "loop", "pid", "previous", "signals", "woken")

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
        #: interrupts put off until the loop is between two steps (:func:`_on_sigint`).
        self.previous: Callable[[int, FrameType | None], object] | None = None
        self.deferred: list[tuple[int, FrameType | None]] = []

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
# any two bytecodes of the main thread. Raised inside the steps of asyncio or of the
# engine, it leaves them half-way: a handle taken off the loop's ready queue and never
# run (its task never wakes, so cancelling the batch waits for ever), a task made but
# not counted, a finished future's stop callback still queued (the next run stops at
# once). So while a batch runs on the main thread, SIGINT's handler is replaced by
# :func:`_on_sigint`: when it lands in the host's code (a tool, a host callback) it calls
# the host's handler at once, as before; when it lands in asyncio's or the engine's own
# code, it stops the loop, and :func:`_drive` calls the host's handler once the loop is
# between two steps, then the batch is cancelled like any other. Whatever ends a run
# early, :func:`_drive` ignores a stop left queued by an earlier run, and the tasks left
# are run to their end before the loop serves another batch (:func:`_unwind`).

#: The modules of the engine's own steps: the standard library (asyncio), tinytools and
#: the packages it runs on (a frame of any other is the host's code).
_ENGINE: Final = frozenset(sys.stdlib_module_names) | {
    "anyio",
    "attr",
    "attrs",
    "exceptiongroup",
    "fastjsonschema",
    "msgspec",
    "re2",
    "sniffio",
    "tinytools",
}


def _on_sigint(signum: int, frame: FrameType | None) -> object:
    """SIGINT's handler while a batch runs on the main thread's loop (see above)."""
    holder: _LoopHolder | None = getattr(_local, "holder", None)
    if holder is None or holder.previous is None:  # (left installed: see _guard_sigint)
        return signal.default_int_handler(signum, frame)
    at = frame
    while at is not None:
        if at.f_code in _GUARDED:  # the loop's or the engine's steps: not now
            holder.deferred.append((signum, frame))
            holder.loop.call_soon_threadsafe(holder.loop.stop)  # (and wakes it)
            return None
        name = at.f_globals.get("__name__")  # (none: exec'd code, judged by its caller)
        if isinstance(name, str) and name.partition(".")[0] not in _ENGINE:
            break  # the host's code, run by the batch
        at = at.f_back
    return holder.previous(signum, frame)


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
    """Call the host's SIGINT handler for each interrupt put off (it raises, as a rule)."""
    previous = holder.previous
    while holder.deferred:
        signum, frame = holder.deferred.pop(0)
        if previous is not None:
            previous(signum, frame)


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
    holder.deferred.clear()  # (put off and never delivered: an earlier run was cut short)
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
    while it lands in the loop's or the engine's steps (here included: an interrupt
    between two of these steps is delivered once SIGINT's handler is the host's again)."""
    try:
        _wake_on_signals(holder)
        _guard_sigint(holder)
        return _run_batch(holder, fn, args)
    finally:  # (the wakeup fd first: SIGINT is still put off meanwhile)
        try:
            _unwake(holder)
        finally:
            _unguard_sigint(holder)


#: The code that owns the loop while it runs, where an interrupt is put off.
_GUARDED: Final = frozenset({_drive.__code__, _run_guarded.__code__})


def run_on(backend: Backend, fn: Callable[..., Awaitable[T]], *args: object) -> T:
    """Run ``fn(*args)`` to completion on ``backend`` from synchronous code.

    The caller refuses first a thread where an event loop runs (:func:`refuse_nested_loop`:
    dispatch does so before the ledger records the batch, so it is not checked again here).
    """
    if backend == "asyncio":
        holder = loop_holder()
        if threading.current_thread() is threading.main_thread():
            return _run_guarded(holder, fn, args)
        return _run_batch(holder, fn, args)  # (no signal handler runs in this thread)
    import trio

    return trio.run(fn, *args)
