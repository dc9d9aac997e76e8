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

import sys
from typing import Final

import sniffio

__all__ = ["NestedLoop", "refuse_nested_loop", "wrong_loop"]


class NestedLoop(RuntimeError):
    """``dispatch_sync`` was called, for a batch that needs an event loop, from inside a
    running one (see :func:`refuse_nested_loop`). Raised by a tool, it aborts the tool's
    batch: the host's mistake, which the model cannot fix (:func:`wrong_loop`)."""


def refuse_nested_loop() -> None:
    """Raise when an event loop runs in this thread: ``dispatch_sync`` would block it with
    a loop of its own (asyncio refuses to nest; under trio, an asyncio loop inside a trio
    task makes ``sniffio`` and anyio-based tools answer for the wrong loop).

    Called before any tool of the batch runs and before the ledger records it (a call
    recorded as started and never run would be refused as already started when retried).
    The host's SIGINT handler, called at a Ctrl-C inside a step of this thread's
    ``dispatch_sync`` loop, is let through: its batch runs on a loop of its own while the
    interrupted one waits (see ``loop._run_apart``).

    Raises:
        NestedLoop: Naming the loop and what to do instead.
    """
    aio = sys.modules.get("asyncio")  # (no loop of it runs if it was never imported)
    loop = None if aio is None else aio._get_running_loop()
    if loop is not None:
        from .loop import handling_sigint_on  # (a loop runs: asyncio is loaded already)

        if handling_sigint_on(loop):
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
