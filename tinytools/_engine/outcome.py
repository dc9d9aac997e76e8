"""What a call's execution produced: its :data:`Outcome`, folded into its message.

A tool's plain return value is the outcome itself (no wrapper is made for the common
call: :data:`Returned` names it for the type checker only); anything else the engine
decided about the call is one of the frozen values below.
"""

from __future__ import annotations

from typing import Literal, NewType, TypeAlias

import msgspec

from tinytools._wire import MessageStatus

__all__ = ["Failed", "Fatal", "Outcome", "Postponed", "Returned"]


class Failed(msgspec.Struct, frozen=True):
    """The tool raised, timed out or was interrupted; ``message`` is for the model."""

    error_type: str
    message: str
    traceback: str | None = None
    status: MessageStatus = "error"


class Fatal(msgspec.Struct, frozen=True):
    """The tool raised ``FatalToolError``: the batch is aborted."""

    message: str
    traceback: str | None = None


class Postponed(msgspec.Struct, frozen=True):
    """The tool raised ``ApprovalRequired`` or ``CallDeferred``."""

    kind: Literal["approval", "deferred"]
    metadata: dict[str, object]


#: What the tool returned (a plain value, or a ``ToolResult``), as it returned it.
Returned = NewType("Returned", object)

#: One call's outcome.
Outcome: TypeAlias = "Returned | Failed | Fatal | Postponed"
