"""What both SQL ledgers share: one connection per process, behind a lock."""

from __future__ import annotations

import os
import threading
import weakref
from typing import Protocol, TypeVar

__all__ = ["Connected"]

_Self = TypeVar("_Self", bound="Connected")


class _Closable(Protocol):
    def close(self) -> None: ...


class Connected:
    """One connection, opened on first use in each process (a forked child opens its own
    and never uses its parent's), closed by :meth:`close` or at the end of a
    ``with`` block; the next use opens it again.

    A fork waits for the writes in progress in other threads to end (every ledger's lock
    is taken before the fork, and given back after it): a child forked in the middle of
    another thread's transaction would inherit the database library's state of that
    transaction (SQLite then sees its own process holding the write lock, and the child's
    writes wait for ever) and a copy of the lock held for ever. The child gets a new lock,
    and opens its own connection on first use.
    """

    _connection: _Closable | None

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._connection = None
        self._pid = 0
        _LIVE.add(self)

    def close(self) -> None:
        """Close the connection (the next use opens it again)."""
        with self._lock:
            # (unset first: an interrupt in between leaves it unused, never closed and in use)
            connection, self._connection = self._connection, None
            if connection is not None and self._pid == os.getpid():
                connection.close()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


#: The ledgers alive in this process, whose locks a fork takes (weak: a ledger is
#: forgotten when it is collected, so nothing here grows with the ledgers made).
_LIVE: weakref.WeakSet[Connected] = weakref.WeakSet()
#: The ledgers whose locks the fork in progress holds.
_HELD: list[Connected] = []


def _before_fork() -> None:
    """Wait for every write in progress to end, and hold off new ones until the fork."""
    held = list(_LIVE)
    for ledger in held:
        ledger._lock.acquire()
    _HELD[:] = held


def _after_fork_in_parent() -> None:
    for ledger in _HELD:
        ledger._lock.release()
    _HELD.clear()


#: The parent's connections a forked child inherited: kept, never used nor closed while
#: the child runs (SQLite: closing one is a use of the parent's handle, which must not
#: cross a fork, and can drop the file locks the child's own connection holds; letting it
#: be collected would close it). psycopg never ends a session from a process that did not
#: open it.
_INHERITED: list[_Closable] = []


def _after_fork_in_child() -> None:
    """In the child (one thread, so nothing else touches the ledgers yet): new locks, and
    the parent's connections set aside (each ledger opens its own on first use)."""
    for ledger in _HELD:
        ledger._lock = threading.RLock()
    _HELD.clear()
    for ledger in list(_LIVE):
        if ledger._connection is not None:
            _INHERITED.append(ledger._connection)
            ledger._connection = None


if hasattr(os, "register_at_fork"):  # (not on Windows, which has no fork)
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )
