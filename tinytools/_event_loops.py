"""Telling a tool written for the other event loop from a tool that failed.

An async tool written for asyncio (``asyncio.sleep``, an asyncio-only client) fails
under trio with ``RuntimeError: no running event loop``; one written for trio fails
under asyncio with ``must be called from async context``, and either may instead
yield something the running loop does not understand. That is a mistake in how the
host runs its tools, not something a model can fix, so it must not become a tool
error the model reads: :func:`wrong_loop` recognises it, and the call then aborts
the batch with a message that names the fix. So does a tool that calls
``dispatch_sync`` from inside the loop its own batch runs on (:class:`NestedLoop`).
"""

from __future__ import annotations

from typing import Final

import sniffio

from ._workers import NestedLoop

__all__ = ["wrong_loop"]

#: What each library raises when code written for the *other* one runs under it.
_SIGNS: Final = {
    # running library: (exception type, text that marks the foreign code)
    "trio": (
        (RuntimeError, "no running event loop"),
        (TypeError, "trio.run received unrecognized yield message"),
    ),
    "asyncio": (
        (RuntimeError, "must be called from async context"),
        (RuntimeError, "Task got bad yield"),
    ),
}
_OTHER: Final = {"trio": "asyncio", "asyncio": "trio"}
#: Every exception type above: anything else is answered without asking which library
#: runs (sniffio raises to say "none", which costs about a tenth of a failed sync call).
_KINDS: Final = tuple({kind for signs in _SIGNS.values() for kind, _ in signs})


def wrong_loop(error: BaseException, tool_name: str) -> str | None:
    """The developer-facing message when ``error`` says the tool needs the other loop."""
    if not isinstance(error, _KINDS):
        return None
    if isinstance(error, NestedLoop):
        return f"Tool `{tool_name}` called dispatch_sync from inside a running event loop: {error}"
    try:
        running = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return None  # a synchronous tool: no event loop to be wrong about
    for kind, sign in _SIGNS.get(running, ()):
        if isinstance(error, kind) and sign in str(error):
            needed = _OTHER[running]
            return (
                f"Tool `{tool_name}` is written for {needed}, but this batch ran its async "
                f"tools under {running} ({type(error).__name__}: {error}). Pass "
                f'`backend="{needed}"` to dispatch_sync, or await dispatch from {needed} '
                f"code; to serve both, write the tool with anyio."
            )
    return None
