"""Bounded memos: what the engine remembers between dispatches, safe to share between threads.

The engine keeps a few small module-level memos that change nothing but speed (the
middleware composed from a sequence, the registry made from a tool list, a frozenset of
``advertised`` names, what a handler's code said, a traceback line's text). Hosts call
``dispatch_sync`` from several threads at once (a web server's worker pool), so the memos
are shared between threads: reading one is a single ``dict.get`` (atomic), and every
write goes through :func:`remember`, which holds one lock while it evicts the oldest
entry and stores the new one. The lock is taken only when something new is remembered,
never on a hit.
"""

from __future__ import annotations

import os
import threading
from typing import TypeVar

__all__ = ["remember"]

_K = TypeVar("_K")
_V = TypeVar("_V")

#: Serialises the writes of every memo (eviction reads the oldest key, then deletes it:
#: two threads evicting at once would both pick it).
_WRITING = threading.Lock()


def _forked() -> None:
    """A forked child gets the lock free: a thread of the parent that held it at the
    fork does not exist in the child, and the child's first write would wait forever."""
    global _WRITING
    _WRITING = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forked)


def remember(memo: dict[_K, _V], key: _K, value: _V, limit: int = 64) -> None:
    """Store ``value`` under ``key``, first forgetting the oldest entries when ``memo``
    holds ``limit`` of them (first in, first out)."""
    with _WRITING:
        while len(memo) >= limit:
            del memo[next(iter(memo))]
        memo[key] = value
