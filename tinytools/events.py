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
    """A call passed admission and its tool is about to run.

    Attributes:
        call_id: The call's id, as the model sent it.
        tool_name: The tool's canonical name.
        arguments: The arguments the tool runs with (validated, repairs applied), its
            secret arguments redacted.
    """

    call_id: str
    tool_name: str
    arguments: dict[str, object]


class ToolCompleted(_Event, frozen=True):
    """A call ended with a result (``is_error`` when the result says it failed).

    Attributes:
        call_id: The call's id.
        tool_name: The tool's canonical name.
        is_error: The result describes a failure (``ToolResult.error``).
        metadata: The result's host-only metadata (``ToolResult.metadata``).
    """

    call_id: str
    tool_name: str
    is_error: bool = False
    metadata: dict[str, object] = msgspec.field(default_factory=dict)


class ToolFailed(_Event, frozen=True):
    """A call's tool raised, timed out or was interrupted.

    ``traceback`` is the full traceback for the host; the model only ever sees
    the exception's type and message.

    Attributes:
        call_id: The call's id.
        tool_name: The tool's canonical name.
        error_type: The exception's class name (``"TimeoutError"`` for a timeout).
        message: What the model was told.
        traceback: The exception's full traceback, when there is one.
    """

    call_id: str
    tool_name: str
    error_type: str
    message: str
    traceback: str | None = None


class UnknownToolCall(_Event, frozen=True):
    """The model called a tool that is not callable this turn.

    Attributes:
        call_id: The call's id.
        requested_name: The name the model called.
        arguments: The arguments as the model sent them (an object, or the raw text),
            so a host can retarget or replay the call; the values of arguments any
            tool declares secret are redacted.
        recovery: What the run's ``unknown_tool`` policy did: ``"tool_error"``,
            ``"fail"`` or ``"rewrite:<name>"``.
    """

    call_id: str
    requested_name: str
    arguments: dict[str, object] | str
    recovery: str


class InvalidToolArgs(_Event, frozen=True):
    """A call's arguments were malformed or broke the schema.

    Attributes:
        call_id: The call's id.
        tool_name: The tool's canonical name.
        arguments: The arguments as the model sent them (an object, or the raw text),
            secret arguments redacted.
        error: What was wrong with them.
        recovery: ``"repaired"`` (relaxed JSON repaired; the call goes on),
            ``"normalized"`` (a transport shape undone; the call goes on),
            ``"coerced"`` (numbers or booleans sent as strings read as such; the call
            goes on with them),
            ``"tool_error"`` (answered with an error message) or ``"fail"``.
    """

    call_id: str
    tool_name: str
    arguments: dict[str, object] | str
    error: str
    recovery: str


class ToolDeferred(_Event, frozen=True):
    """A call left the batch without a result, to be resolved later.

    Attributes:
        call_id: The call's id.
        tool_name: The tool's name.
        reason: ``"approval"`` (it waits for a human's approval),
            ``"external"`` (the tool is external: the host runs it) or
            ``"deferred"`` (the host completes it: the tool raised
            ``CallDeferred``, or middleware deferred it).
        metadata: What the deferring side attached (it comes back in
            ``DeferredToolRequests.metadata``).
    """

    call_id: str
    tool_name: str
    reason: Literal["approval", "external", "deferred"]
    metadata: dict[str, object] = msgspec.field(default_factory=dict)


class ToolApproved(_Event, frozen=True):
    """A deferred call was approved and re-admitted.

    Attributes:
        call_id: The call's id.
        tool_name: The tool's name.
    """

    call_id: str
    tool_name: str


class ToolDenied(_Event, frozen=True):
    """A call was refused (by middleware, policy or a human).

    Attributes:
        call_id: The call's id.
        tool_name: The tool's name.
        message: What the model was told.
    """

    call_id: str
    tool_name: str
    message: str


class ToolRetried(_Event, frozen=True):
    """A call raised ``RetryableError``; it runs again after ``delay`` seconds.

    Attributes:
        call_id: The call's id.
        tool_name: The tool's canonical name.
        attempt: How many attempts have failed so far (1 after the first).
        delay: Seconds until the next attempt.
        error: The error's message (its class name when it has none).
    """

    call_id: str
    tool_name: str
    attempt: int
    delay: float
    error: str


class Custom(_Event, frozen=True):
    """An event a tool emitted through ``Inject[Emit]``.

    Attributes:
        call_id: The id of the call whose tool emitted it.
        name: The name the tool gave it (``emit("progress", ...)``).
        data: The value the tool gave with it.
    """

    call_id: str
    name: str
    data: object = None


class ToolsAdvertised(_Event, frozen=True):
    """The tools offered to the model this turn.

    Not emitted by dispatch, which never sees the request the model was sent: the tools
    it declared are the host's to record (``formats.*.declarations`` of the same toolset
    and context that dispatch resolves).

    Attributes:
        names: The names of the tools declared to the model, in order.
    """

    names: tuple[str, ...]


class ToolWithheld(_Event, frozen=True):
    """A tool a remote server lists (``McpToolset``'s) was left out of this dispatch's
    toolset because another tool has its name (one of the host's, discovery's
    ``tool_search`` / ``tool_call``, or another server's listed first), or because an
    adaptor would give it an invalid name (``Prefixed`` past 64 characters). ``reason``
    and ``adaptor`` are those of its ``ExposureExplanation`` (``toolset.explain()``).
    Emitted by every dispatch of that toolset, before the events of its calls.

    Attributes:
        tool_name: The name of the tool left out.
        reason: Why it was left out.
        adaptor: The toolset adaptor that left it out.
    """

    tool_name: str
    reason: str
    adaptor: str


class ToolSearched(_Event, frozen=True):
    """The model searched the deferred-tool catalogue (``tinytools.discovery``'s
    ``tool_search``): the query (its first 1,000 characters) and the names found, best
    first (they are ``DispatchResult.promoted``).

    Attributes:
        call_id: The id of the ``tool_search`` call.
        query: The search query, cut to its first 1,000 characters.
        names: The tool names found, best first.
    """

    call_id: str
    query: str
    names: tuple[str, ...]


class ToolEffectReconciled(_Event, frozen=True):
    """After a crash, ``tinytools.ledger.reconcile`` decided a call left unresolved.

    ``outcome`` is ``"rerun"`` (the tool is replay-safe: the ledger released the call
    for the next dispatch) or ``"interrupted"`` (the call was answered as interrupted
    and settled; it never runs again).

    Attributes:
        call_id: The call's id.
        tool_name: The tool's name.
        outcome: ``"rerun"`` or ``"interrupted"``.
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
