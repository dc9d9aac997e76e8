"""The hand-off between a caller and a tool thread (the baton), and waits on the main thread.

A waiting caller and its worker thread meet on a *baton*: two locks, one per direction,
and a state both sides change under the GIL, so that "the tool ended" and "the caller gave
up at the timeout" are decided once; no future, condition or event is made per call. The
compiled baton (``_baton.c``) is used when built; :class:`_Baton` is its pure-Python twin
(same protocol and answers). Why it exists, and what it costs: docs/concepts/performance.md.
"""

from __future__ import annotations

import _thread
import os
import threading
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["BATON", "FREE", "IDLE", "Handoff", "Signal", "wait_main"]


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


# The states of a baton (see _baton.c, which documents the protocol).
IDLE, RUNNING, FINISHED, DETACHED, FREE = 0, 1, 2, 3, 4


class _Baton:
    """The single slot between a caller and a worker thread, in Python: the twin of
    ``_baton.Baton`` used when the extension is not built (same protocol and
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
    from ._baton import Baton, set_main_thread
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
