"""Why calls of a batch were cut off, how the engine tells, and the one place their
messages are written.

A batch stops when it is cancelled (its ``Cancellation``), passes its deadline, or is
halted (a fatal call, a hook or host callback that raised). :func:`stop_now` is the one
check, made before a call starts; a call cut off before it started is answered with
:func:`not_run`, one cut off while it ran with :func:`interrupted`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from tinytools._inject import Cancellation

from .outcome import Failed

__all__ = ["Stop", "interrupted", "limit_reached", "not_run", "stop_now"]


class Stop(enum.Enum):
    """Why calls of a batch were cut off before they finished (their message says so)."""

    CANCELLED = "cancelled"
    DEADLINE = "past its deadline"
    ABORTED = "aborted"


def not_run(stop: Stop) -> str:
    """The message of a call a stop cut off before it started."""
    return f"Tool call not run: the batch was {stop.value}."


def interrupted(stop: Stop) -> Failed:
    """The outcome of a call a stop cut off while it ran."""
    text = f"Tool call interrupted: the batch was {stop.value}."
    return Failed("Cancelled", text, status="interrupted")


def limit_reached(limit: int) -> str:
    """The message of a call past ``RunPolicy(max_tool_calls=...)``."""
    return f"Tool call not run: the limit of {limit} tool calls was reached."


def stop_now(
    halted: bool,
    cancellation: Cancellation | None,
    deadline: float | None,
    clock: Callable[[], float],
) -> Stop | None:
    """The one stop check, made before a call starts: whether the batch is ``halted`` (a
    fatal call, a hook or host callback that raised), cancelled, or past its ``deadline``
    (on ``clock``); None when it goes on."""
    if halted:
        return Stop.ABORTED
    if cancellation is not None and cancellation.cancelled:
        return Stop.CANCELLED
    if deadline is not None and clock() >= deadline:
        return Stop.DEADLINE
    return None
