"""What dispatch returns: :class:`DispatchResult` (and what it raises on abort)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ._approvals import DeferredToolRequests
from ._wire import ContentBlock, ToolMessage
from .errors import TinytoolsError
from .events import Event

__all__ = ["DispatchAborted", "DispatchResult", "FollowUp"]


@attrs.frozen
class FollowUp:
    """Content a tool asked the model to see as a later user message."""

    call_id: str
    content: tuple[ContentBlock, ...]


@attrs.frozen
class DispatchResult:
    """The answer to one batch of calls.

    Attributes:
        messages: One message per answered call, in call order (deferred calls
            have none).
        events: Every event, in the order they were emitted.
        deferred: The calls that left the batch, or None.
        follow_ups: Content to add as a user message after the last tool message.
        metadata: Call id → the host-only metadata its result carried.
        executed: Ids of the calls whose tool ran, in call order.
    """

    messages: tuple[ToolMessage, ...]
    events: tuple[Event, ...]
    deferred: DeferredToolRequests | None = None
    follow_ups: tuple[FollowUp, ...] = ()
    metadata: Mapping[str, Mapping[str, object]] = attrs.field(factory=dict)
    executed: tuple[str, ...] = ()


class DispatchAborted(TinytoolsError):
    """The batch was aborted: a ``Fail`` policy, a ``FatalToolError``, or a middleware error.

    Attributes:
        result: The result with every call id answered (calls that could not
            run are answered as ``interrupted``).
        reason: What aborted the batch.
    """

    def __init__(self, reason: str, result: DispatchResult) -> None:
        self.reason = reason
        self.result = result
        super().__init__(f"dispatch aborted: {reason}")
