"""What dispatch returns: :class:`DispatchResult` (and what it raises on abort).

``DispatchResult`` and ``FollowUp`` are frozen msgspec Structs: a result is
built on every dispatch (a Struct costs a fraction of an attrs instance), and
it encodes to JSON with ``msgspec.json.encode`` like the rest of the wire data.
Derive variants with ``msgspec.structs.replace``.
"""

# No `from __future__ import annotations` (see `tinytools/_wire.py`).

from collections.abc import Mapping

import msgspec

from tinytools._wire import ContentBlock, ToolMessage
from tinytools.errors import TinytoolsError
from tinytools.events import Event, ToolSearched

from .resume import DeferredToolRequests

__all__ = ["DispatchAborted", "DispatchResult", "FollowUp"]


class FollowUp(msgspec.Struct, frozen=True):
    """Content a tool asked the model to see as a later user message."""

    call_id: str
    content: tuple[ContentBlock, ...]


class DispatchResult(msgspec.Struct, frozen=True):
    """The answer to one batch of calls.

    Attributes:
        messages: One message per answered call, in call order (deferred calls
            have none).
        events: Every event, in the order they were emitted.
        deferred: The calls that left the batch, or None.
        follow_ups: Content to add as a user message after the last tool message.
        metadata: Call id → the host-only metadata its result carried.
        executed: Ids of the calls whose tool ran, in call order.
        promoted: The tool names ``tool_search`` found in this batch (read from
            the ``ToolSearched`` events).
    """

    messages: tuple[ToolMessage, ...]
    events: tuple[Event, ...]
    deferred: DeferredToolRequests | None = None
    follow_ups: tuple[FollowUp, ...] = ()
    metadata: Mapping[str, Mapping[str, object]] = msgspec.field(default_factory=dict)
    executed: tuple[str, ...] = ()

    @property
    def promoted(self) -> tuple[str, ...]:
        """The tool names ``tool_search`` found in this batch, in order, each once (pass
        them to ``Discovery.promote`` to declare them on the next request)."""
        found = [n for e in self.events if type(e) is ToolSearched for n in e.names]
        return tuple(dict.fromkeys(found))


class DispatchAborted(TinytoolsError):
    """The batch was aborted: a ``Fail`` policy, a ``FatalToolError``, or a middleware error.

    Attributes:
        result: The result with every call id answered (calls that could not
            run are answered as ``interrupted``).
        reason: What aborted the batch.
    """

    def __init__(self, reason: str, result: "DispatchResult") -> None:
        self.reason = reason
        self.result = result
        super().__init__(f"dispatch aborted: {reason}")
