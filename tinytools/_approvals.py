"""Deferred calls and how a host resolves them.

A dispatch that defers calls returns :class:`DeferredToolRequests`: calls the
host completes itself (external tools, ``CallDeferred``, middleware
``Defer``) and calls awaiting a human's approval. The host answers with
:class:`DeferredToolResults`, built fluently::

    results = (
        DeferredToolResults()
        .approve("call-1")                          # run with the model's arguments
        .approve_with_args("call-2", {"path": "x"}) # run with edited arguments
        .deny("call-3", "operator refused")         # answered with an error, never run
        .respond("call-4", ToolResult.success("done"))  # the host ran it
    )

and resumes with ``dispatch(pending_calls, tools, approvals=results)``: an
approved call re-enters the whole admission pipeline (middleware, name and
argument checks — edited arguments are validated like the model's) marked
approved, so no approval gate defers it again; a denial or a host result is
answered through the same fold and events as any call, but never counts as
executed. On resume, calls the results do not mention are left alone: they
get no message and do not run (they were answered, or are still pending —
``DeferredToolRequests.remaining(results)`` says which).

A results value is single-use per call: dispatch consumes each decision once,
so resuming again with the same value never runs or answers a call twice.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import TypeAlias

import attrs
import msgspec

from ._middleware import Deny
from ._wire import ToolCall, ToolResult

__all__ = [
    "Approve",
    "ApproveWithArgs",
    "Decision",
    "DeferredToolRequests",
    "DeferredToolResults",
    "Deny",
    "Respond",
    "same_call",
]


@attrs.frozen
class Approve:
    """Run the call with the model's arguments."""


@attrs.frozen
class ApproveWithArgs:
    """Run the call with these arguments instead (validated like the model's)."""

    arguments: Mapping[str, object]


@attrs.frozen
class Respond:
    """The host completed the call; ``result`` is its answer."""

    result: ToolResult


Decision: TypeAlias = "Approve | ApproveWithArgs | Deny | Respond"


def _comparable(arguments: object) -> tuple[str, object]:
    """Arguments as a value two calls can be compared by (see the module docstring).

    JSON text is decoded and re-encoded with sorted keys, so a raw string and
    the dict it decodes to compare equal; text that does not decode compares
    as itself; a dict that cannot be encoded as JSON compares with ``==``.
    """
    value = arguments
    if isinstance(arguments, (str, bytes)):
        try:
            value = msgspec.json.decode(arguments)
        except msgspec.DecodeError:
            return "text", arguments
    try:
        return "json", msgspec.json.encode(value, order="sorted")
    except (TypeError, ValueError, OverflowError):
        return "value", value


def same_call(a: ToolCall, b: ToolCall) -> bool:
    """Whether ``a`` and ``b`` are the same call: id, tool name and arguments."""
    if a.id != b.id or a.name != b.name:
        return False
    return a.arguments is b.arguments or _comparable(a.arguments) == _comparable(b.arguments)


class DeferredToolResults:
    """The host's decisions on deferred calls, by call id (a fluent, copy-on-write builder)."""

    __slots__ = ("_decisions", "_lock", "_spent")

    def __init__(self, decisions: Mapping[str, Decision] | None = None) -> None:
        self._decisions: dict[str, Decision] = dict(decisions or {})
        self._spent: set[str] = set()
        self._lock = threading.Lock()

    def _with(self, call_id: str, decision: Decision) -> DeferredToolResults:
        return DeferredToolResults({**self._decisions, call_id: decision})

    def approve(self, call_id: str) -> DeferredToolResults:
        """Approve ``call_id`` as the model sent it."""
        return self._with(call_id, Approve())

    def approve_with_args(
        self, call_id: str, arguments: Mapping[str, object]
    ) -> DeferredToolResults:
        """Approve ``call_id`` with edited arguments (re-validated on resume)."""
        return self._with(call_id, ApproveWithArgs(dict(arguments)))

    def deny(self, call_id: str, message: str) -> DeferredToolResults:
        """Deny ``call_id``; ``message`` tells the model why."""
        return self._with(call_id, Deny(message))

    def respond(self, call_id: str, result: ToolResult | str) -> DeferredToolResults:
        """Answer ``call_id`` with the host's own result."""
        answer = ToolResult.success(result) if isinstance(result, str) else result
        return self._with(call_id, Respond(answer))

    @property
    def decisions(self) -> Mapping[str, Decision]:
        """Every decision, by call id."""
        return dict(self._decisions)

    def take(self, call_id: str) -> Decision | None:
        """The decision for ``call_id``, once: a taken decision is not returned again."""
        with self._lock:
            if call_id in self._spent:
                return None
            decision = self._decisions.get(call_id)
            if decision is not None:
                self._spent.add(call_id)
            return decision

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._decisions

    def __repr__(self) -> str:
        return f"DeferredToolResults({self._decisions!r})"


def _frozen_meta(value: Mapping[str, Mapping[str, object]]) -> Mapping[str, Mapping[str, object]]:
    return {key: dict(meta) for key, meta in value.items()}


@attrs.frozen
class DeferredToolRequests:
    """Calls that left the batch without a result, to be resolved later.

    Attributes:
        calls: Calls the host completes itself: external (schema-only) tools
            and tools that raised ``CallDeferred`` or were deferred by
            middleware.
        approvals: Calls waiting for a human's approval.
        metadata: Call id → what the deferring side attached.
    """

    calls: tuple[ToolCall, ...] = ()
    approvals: tuple[ToolCall, ...] = ()
    metadata: Mapping[str, Mapping[str, object]] = attrs.field(factory=dict, converter=_frozen_meta)

    @property
    def all(self) -> tuple[ToolCall, ...]:
        """Every pending call (host calls first, then approvals)."""
        return self.calls + self.approvals

    def remaining(self, results: DeferredToolResults) -> tuple[ToolCall, ...]:
        """The pending calls ``results`` does not decide."""
        return tuple(call for call in self.all if call.id not in results)

    def approve_all(self) -> DeferredToolResults:
        """A blanket approval of every call awaiting approval."""
        return _approve(self.approvals)


def _approve(calls: Iterable[ToolCall]) -> DeferredToolResults:
    return DeferredToolResults({call.id: Approve() for call in calls})
