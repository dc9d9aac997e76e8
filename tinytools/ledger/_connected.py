"""What both SQL ledgers share: one connection per process, behind a lock."""

from __future__ import annotations

import os
import threading
from typing import Protocol, TypeVar

__all__ = ["Connected"]

_Self = TypeVar("_Self", bound="Connected")


class _Closable(Protocol):
    def close(self) -> None: ...


class Connected:
    """One connection, opened on first use in each process (a forked child opens its own:
    it never closes or uses its parent's), closed by :meth:`close` or at the end of a
    ``with`` block; the next use opens it again."""

    _connection: _Closable | None

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._connection = None
        self._pid = 0

    def close(self) -> None:
        """Close the connection (the next use opens it again)."""
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
