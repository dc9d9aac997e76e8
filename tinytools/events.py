"""Lifecycle events: what happened to each call, as data.

Every event is a frozen :class:`msgspec.Struct` tagged on ``kind`` with the
snake_case of its class name (``ToolStarted`` → ``"tool_started"``), so a
sequence of events encodes to JSON with ``msgspec.json.encode`` and decodes
back with ``msgspec.json.decode(data, type=list[Event])``. Every event that
concerns one call carries its ``call_id``.

Per call, events come in this order: admission events (``UnknownToolCall``,
``InvalidToolArgs``, ``ToolDenied``, ``ToolDeferred``), then ``ToolStarted``,
any ``ToolRetried`` and ``Custom`` events, then ``ToolCompleted`` or
``ToolFailed``. Events carry no clocks, so equal inputs give equal events.
"""

# No `from __future__ import annotations` (see `tinytools/_wire.py`).

import re
from typing import Literal, TypeAlias

import msgspec

__all__ = [
    "Custom",
    "Event",
    "InvalidToolArgs",
    "ToolApproved",
    "ToolCompleted",
    "ToolDeferred",
    "ToolDenied",
    "ToolEffectReconciled",
    "ToolFailed",
    "ToolRetried",
    "ToolSearched",
    "ToolStarted",
    "ToolWithheld",
    "ToolsAdvertised",
    "UnknownToolCall",
]

_CAPITAL = re.compile(r"(?<!^)(?=[A-Z])")


def _snake(name: str) -> str:
    return _CAPITAL.sub("_", name).lower()


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag=_snake):
    """Base of every event."""

    @property
    def kind(self) -> str:
        """The event's tag, as in its JSON: the snake_case of its class name."""
        return str(type(self).__struct_config__.tag)


class ToolStarted(_Event, frozen=True):
    """A call passed admission and its tool is about to run."""

    call_id: str
    tool_name: str
    arguments: dict[str, object]


class ToolCompleted(_Event, frozen=True):
    """A call ended with a result (``is_error`` when the result says it failed)."""

    call_id: str
    tool_name: str
    is_error: bool = False
    metadata: dict[str, object] = msgspec.field(default_factory=dict)


class ToolFailed(_Event, frozen=True):
    """A call's tool raised, timed out or was interrupted.

    ``traceback`` is the full traceback for the host; the model only ever sees
    the exception's type and message.
    """

    call_id: str
    tool_name: str
    error_type: str
    message: str
    traceback: str | None = None


class UnknownToolCall(_Event, frozen=True):
    """The model called a tool that is not callable this turn.

    ``recovery`` is ``"tool_error"``, ``"fail"`` or ``"rewrite:<name>"``; the
    arguments are kept verbatim so a host can retarget or replay the call.
    """

    call_id: str
    requested_name: str
    arguments: dict[str, object] | str
    recovery: str


class InvalidToolArgs(_Event, frozen=True):
    """A call's arguments were malformed or broke the schema.

    ``recovery`` is ``"repaired"`` (relaxed JSON repaired; the call goes on),
    ``"normalized"`` (a transport shape undone; the call goes on),
    ``"tool_error"`` (answered with an error message) or ``"fail"``.
    """

    call_id: str
    tool_name: str
    arguments: dict[str, object] | str
    error: str
    recovery: str


class ToolDeferred(_Event, frozen=True):
    """A call left the batch without a result, to be resolved later."""

    call_id: str
    tool_name: str
    reason: Literal["approval", "external", "deferred"]
    metadata: dict[str, object] = msgspec.field(default_factory=dict)


class ToolApproved(_Event, frozen=True):
    """A deferred call was approved and re-admitted."""

    call_id: str
    tool_name: str


class ToolDenied(_Event, frozen=True):
    """A call was refused (by middleware, policy or a human); ``message`` went to the model."""

    call_id: str
    tool_name: str
    message: str


class ToolRetried(_Event, frozen=True):
    """A call raised ``RetryableError``; it runs again after ``delay`` seconds."""

    call_id: str
    tool_name: str
    attempt: int
    delay: float
    error: str


class Custom(_Event, frozen=True):
    """An event a tool emitted through ``Inject[Emit]``."""

    call_id: str
    name: str
    data: object = None


class ToolsAdvertised(_Event, frozen=True):
    """The tools offered to the model this turn.

    Not emitted by dispatch, which never sees the request the model was sent: the tools
    it declared are the host's to record (``formats.*.declarations`` of the same toolset
    and context that dispatch resolves).
    """

    names: tuple[str, ...]


class ToolWithheld(_Event, frozen=True):
    """A tool a remote server lists (``McpToolset``'s) was left out of this dispatch's
    toolset because another tool has its name (one of the host's, discovery's
    ``tool_search`` / ``tool_call``, or another server's listed first), or because an
    adaptor would give it an invalid name (``Prefixed`` past 64 characters). ``reason``
    and ``adaptor`` are those of its ``ExposureExplanation`` (``toolset.explain()``).
    Emitted by every dispatch of that toolset, before the events of its calls.
    """

    tool_name: str
    reason: str
    adaptor: str


class ToolSearched(_Event, frozen=True):
    """The model searched the deferred-tool catalogue (``tinytools.discovery``'s
    ``tool_search``): the query (its first 1,000 characters) and the names found, best
    first (they are ``DispatchResult.promoted``)."""

    call_id: str
    query: str
    names: tuple[str, ...]


class ToolEffectReconciled(_Event, frozen=True):
    """After a crash, ``tinytools.ledger.reconcile`` decided a call left unresolved.

    ``outcome`` is ``"rerun"`` (the tool is replay-safe: the ledger released the call
    for the next dispatch) or ``"interrupted"`` (the call was answered as interrupted
    and settled; it never runs again).
    """

    call_id: str
    tool_name: str
    outcome: str


#: Any event (decode a list of events with ``type=list[Event]``).
Event: TypeAlias = (
    ToolStarted
    | ToolCompleted
    | ToolFailed
    | UnknownToolCall
    | InvalidToolArgs
    | ToolDeferred
    | ToolApproved
    | ToolDenied
    | ToolRetried
    | Custom
    | ToolsAdvertised
    | ToolWithheld
    | ToolSearched
    | ToolEffectReconciled
)
