"""Deferred calls and how a host resolves them.

A dispatch that defers calls returns :class:`DeferredToolRequests`: calls the
host completes itself (external tools, ``CallDeferred``, middleware
``Defer``) and calls awaiting a human's approval. The host answers with
:class:`DeferredToolResults`, built fluently from the requests themselves::

    pending = result.deferred
    results = (
        pending.approve("call-1")                         # run with the model's arguments
        .approve_with_args("call-2", {"path": "x"})       # run with edited arguments
        .deny("call-3", "operator refused")               # answered with an error, never run
        .respond("call-4", ToolResult.success("done"))    # the host ran it
    )

and resumes with ``dispatch(pending.all, tools, approvals=results)``: an
approved call re-enters the whole admission pipeline (middleware, name and
argument checks — edited arguments are validated like the model's) marked
approved, so no approval gate defers it again (a ``before_tool`` hook that
changes it leaves a call the decision does not answer: that call is deferred
again, with ``metadata["reason"]`` naming the hook); a denial or a host result is
answered through the same fold and events as any call, but never counts as
executed. On resume, calls the results do not decide are left alone: they get
no message and do not run (they were answered, or are still pending —
``DeferredToolRequests.remaining(results)`` says which).

Decisions are bound to calls. A decision made through the requests
(``pending.approve(id)`` and the rest, and every decision chained after
one) answers the deferred call itself — its id, tool name, arguments and
``invalid`` reason. On resume, a call that reuses that id with another tool
name, other arguments or another ``invalid`` reason (a provider's verdict
that its text could not be read decides how admission reads that text) is not
answered by it: the call is deferred again, among the approvals, with
``metadata["reason"]`` saying why, and nothing runs. Arguments compare as
JSON values (a raw JSON string and the dict it decodes to are the same
arguments; key order does not matter, ``1`` and ``1.0`` and ``true`` all
differ); a number in JSON text compares as the exact value its digits spell,
not as the float they round to, since a tool may read them exactly (a
``Decimal`` parameter gets ``0.10000000000000001``, not ``0.1``), while
``1.50`` and ``1.5`` are one number. Raw text that does not decode, or repeats
a field, compares as text, and arguments that hold no JSON value (a host's own
objects, a non-finite number) match nothing but themselves. Deciding an id
that is not pending in the requests raises ``ValueError``.

``DeferredToolResults()`` built from nothing binds each decision by id alone:
the weaker form, for hosts that keep no record of the deferred calls. It
answers whatever call arrives under that id.

A results value is immutable: the builders return a new value and dispatch
only looks decisions up, so dispatching the same calls with the same results
twice gives the same answers both times (resuming is pure). Running a resumed
side effect at most once is the effect ledger's job (``ledger=``), not the
results'.

Decisions whose id answers no call of the batch (an id not in it, or a bound
decision whose call differs) are ignored;
``DeferredToolResults.unmatched(calls)`` lists them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import TypeAlias

import attrs
import msgspec

from tinytools._declare.json_values import text_problem
from tinytools._middleware import Deny
from tinytools._wire import ToolCall, ToolResult, plain_text

__all__ = [
    "Answer",
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

    def __reduce__(self) -> tuple[object, ...]:  # (a read-only mapping does not pickle)
        return _approve_with_args, (dict(self.arguments),)


def _approve_with_args(arguments: dict[str, object]) -> ApproveWithArgs:
    return ApproveWithArgs(MappingProxyType(arguments))


@attrs.frozen
class Respond:
    """The host completed the call; ``result`` is its answer."""

    result: ToolResult


#: What the host decided for one call.
Answer: TypeAlias = "Approve | ApproveWithArgs | Deny | Respond"
_ANSWERS = (Approve, ApproveWithArgs, Deny, Respond)


#: Numbers in JSON text read as the exact values their digits spell (see :func:`_comparable`).
_EXACT = msgspec.json.Decoder(float_hook=Decimal)


def _comparable(arguments: object) -> tuple[str, object]:
    """Arguments as a value two calls can be compared by (see the module docstring).

    JSON text is decoded (each number with a fraction or exponent as the exact
    ``Decimal`` its digits spell), so a raw string and the dict it decodes to
    compare equal; text that does not decode, or repeats a field, compares as
    itself. Values compare by JSON type and value (:func:`_typed`).
    """
    value = arguments
    if isinstance(arguments, (str, bytes)):
        try:
            value = _EXACT.decode(arguments)
        except (msgspec.DecodeError, RecursionError, UnicodeError):  # (unreadable: as text)
            return "text", arguments
        if text_problem(arguments) is not None:  # a repeated field: read one way, of several
            return "text", arguments
    try:
        return "value", _typed(value)
    except RecursionError:  # nested deeper than a walk can follow: equals nothing
        return "value", object()


def _typed(value: object) -> object:
    """``value`` as its JSON type and value, where ``1``, ``1.0`` and ``True`` differ
    (``==`` does not tell them apart) and a float is the exact number it holds; a value
    of a ``str``, ``int`` or ``float`` subclass is the plain value it holds (as
    validation reads it). A non-finite number or anything that is no JSON value equals
    nothing (a fresh object), so it never matches."""
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        return "s", str.__str__(value)
    if isinstance(value, int):
        return "i", int.__int__(value)
    if isinstance(value, float):
        value = Decimal(float.__repr__(value))
    if isinstance(value, Decimal):
        return ("f", value, value.is_signed()) if value.is_finite() else object()
    if isinstance(value, Mapping):
        members = ((_typed(key), _typed(item)) for key, item in value.items())
        return "o", tuple(sorted(members, key=repr))
    if isinstance(value, (list, tuple)):
        return "a", tuple(map(_typed, value))
    return object()


def same_call(a: ToolCall, b: ToolCall) -> bool:
    """Whether ``a`` and ``b`` are the same call: id, tool name, ``invalid`` reason and
    arguments."""
    if a.id != b.id or a.name != b.name or a.invalid != b.invalid:
        return False
    return a.arguments is b.arguments or _comparable(a.arguments) == _comparable(b.arguments)


@attrs.frozen
class Decision:
    """One decision and the deferred call it answers.

    Attributes:
        answer: What was decided.
        call: The call it answers, or None for a decision bound by id alone
            (the weaker form, from a bare ``DeferredToolResults()``).
    """

    answer: Answer
    call: ToolCall | None = None

    def answers(self, call: ToolCall) -> bool:
        """Whether this decision answers ``call`` (a bound decision: the same call)."""
        return same_call(self.call, call) if self.call is not None else True


def _decisions(value: Mapping[str, Decision | Answer] | None) -> Mapping[str, Decision]:
    """A read-only copy; a bare answer becomes a decision bound by id alone; an id of a
    ``str`` subclass (an SDK's own string type) is its text, as dispatch reads call ids.

    Raises:
        TypeError: A call id is not a ``str``, or a decision is not one.
    """
    decisions: dict[str, Decision] = {}
    for call_id, decision in (value or {}).items():
        if type(call_id) is not str:
            plain = plain_text(call_id)
            if plain is None:
                raise TypeError(
                    f"a call id is a str, got {type(call_id).__name__}: decide calls by the "
                    "ids of the deferred calls (DeferredToolRequests)"
                )
            call_id = plain
        if isinstance(decision, _ANSWERS):
            decision = Decision(decision)
        if not isinstance(decision, Decision):
            raise TypeError(
                f"the decision for call {call_id!r} is {decision!r}; build decisions with "
                "DeferredToolResults().approve(...), .approve_with_args(...), .deny(...) "
                "or .respond(...)"
            )
        decisions[call_id] = decision
    return MappingProxyType(decisions)


def _pending(value: Mapping[str, ToolCall] | Iterable[ToolCall]) -> Mapping[str, ToolCall]:
    calls = value.values() if isinstance(value, Mapping) else value
    return MappingProxyType({call.id: call for call in calls})


@attrs.frozen(repr=False, eq=True)
class DeferredToolResults:
    """The host's decisions on deferred calls, by call id: an immutable value.

    Build it with the fluent, copy-on-write builders, best started from the
    ``DeferredToolRequests`` it answers (decisions bound to the calls) rather
    than from ``DeferredToolResults()`` (decisions bound by id alone). See the
    module docstring.

    Attributes:
        decisions: Call id → its decision (read-only).
        pending: Call id → the deferred call, when the results answer a
            ``DeferredToolRequests``: decisions are bound to these calls.
            Empty for the weaker, id-only form.
    """

    decisions: Mapping[str, Decision] = attrs.field(default=None, converter=_decisions, hash=False)
    pending: Mapping[str, ToolCall] = attrs.field(
        factory=dict, converter=_pending, kw_only=True, hash=False
    )

    def _with(self, call_id: str, answer: Answer) -> DeferredToolResults:
        bound = self.pending.get(call_id)
        if self.pending and bound is None:
            ids = ", ".join(map(repr, self.pending))
            raise ValueError(
                f"call id {call_id!r} is not among the deferred calls these results answer "
                f"({ids}); decide only pending calls, or start from DeferredToolResults() "
                "to decide by id alone"
            )
        return attrs.evolve(self, decisions={**self.decisions, call_id: Decision(answer, bound)})

    def approve(self, call_id: str) -> DeferredToolResults:
        """Approve ``call_id`` as the model sent it."""
        return self._with(call_id, Approve())

    def approve_with_args(
        self, call_id: str, arguments: Mapping[str, object]
    ) -> DeferredToolResults:
        """Approve ``call_id`` with edited arguments (re-validated on resume).

        Raises:
            TypeError: ``arguments`` is not a mapping.
        """
        if not isinstance(arguments, Mapping):
            raise TypeError(
                "approve_with_args takes the edited arguments as a mapping (a dict of "
                f"argument names to values), got {type(arguments).__name__}; decode JSON "
                "text first (json.loads)"
            )
        return self._with(call_id, ApproveWithArgs(MappingProxyType(dict(arguments))))

    def deny(self, call_id: str, message: str) -> DeferredToolResults:
        """Deny ``call_id``; ``message`` tells the model why."""
        return self._with(call_id, Deny(message))

    def respond(self, call_id: str, result: ToolResult | str) -> DeferredToolResults:
        """Answer ``call_id`` with the host's own result."""
        answer = ToolResult.success(result) if isinstance(result, str) else result
        return self._with(call_id, Respond(answer))

    def decision_for(self, call: ToolCall) -> Decision | None:
        """The decision that answers ``call``, or None (a lookup: nothing is consumed)."""
        decision = self.decisions.get(call.id)
        return decision if decision is not None and decision.answers(call) else None

    def unmatched(self, calls: Iterable[ToolCall]) -> tuple[str, ...]:
        """The ids whose decision answers none of ``calls`` (dispatch ignores them)."""
        batch = {call.id: call for call in calls}
        return tuple(
            call_id
            for call_id, decision in self.decisions.items()
            if call_id not in batch or not decision.answers(batch[call_id])
        )

    def __contains__(self, call_id: object) -> bool:
        return call_id in self.decisions

    def __repr__(self) -> str:
        return f"DeferredToolResults({dict(self.decisions)!r})"

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as its decisions and pending calls (a host may hand its decisions to
        another process, as ``DeferredToolRequests`` can be)."""
        return _results, (dict(self.decisions), tuple(self.pending.values()))


def _results(decisions: dict[str, Decision], pending: tuple[ToolCall, ...]) -> DeferredToolResults:
    return DeferredToolResults(decisions, pending=pending)


def _frozen_meta(value: Mapping[str, Mapping[str, object]]) -> Mapping[str, Mapping[str, object]]:
    return {key: dict(meta) for key, meta in value.items()}


@attrs.frozen
class DeferredToolRequests:
    """Calls that left the batch without a result, to be resolved later.

    The builders (``approve``, ``approve_with_args``, ``deny``, ``respond``,
    ``approve_all``, and ``results()`` for an empty start) return
    ``DeferredToolResults`` bound to these calls.

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
        """The pending calls ``results`` does not decide (a decision for another call
        under the same id does not count)."""
        return tuple(call for call in self.all if results.decision_for(call) is None)

    def results(self) -> DeferredToolResults:
        """No decisions yet, bound to these calls: the start of a decision chain."""
        return DeferredToolResults(pending=self.all)

    def approve(self, call_id: str) -> DeferredToolResults:
        """Approve the pending call ``call_id`` as the model sent it (bound to it)."""
        return self.results().approve(call_id)

    def approve_with_args(
        self, call_id: str, arguments: Mapping[str, object]
    ) -> DeferredToolResults:
        """Approve the pending call ``call_id`` with edited arguments (bound to it)."""
        return self.results().approve_with_args(call_id, arguments)

    def deny(self, call_id: str, message: str) -> DeferredToolResults:
        """Deny the pending call ``call_id``; ``message`` tells the model why."""
        return self.results().deny(call_id, message)

    def respond(self, call_id: str, result: ToolResult | str) -> DeferredToolResults:
        """Answer the pending call ``call_id`` with the host's own result."""
        return self.results().respond(call_id, result)

    def approve_all(self) -> DeferredToolResults:
        """Approve exactly the calls awaiting approval, each bound to its call."""
        decisions = {call.id: Decision(Approve(), call) for call in self.approvals}
        return DeferredToolResults(decisions, pending=self.all)
