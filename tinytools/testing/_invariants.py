"""``check_dispatch_invariants``: the dispatch invariants, checked on one result.

The invariants are docs/concepts/invariants.md's. The checker derives what may run from
the documented rules (the registry, exposure, the
allow-list, ``advertised``), not from the library's own code, and checks the result
against them: one answer per call in call order (1), nothing unknown, hidden or
disallowed ran (2), nothing ran on arguments that break its schema or that its call's
text does not mean (3), injected parameters stay out of schemas and out of the model's
reach (4), "repaired" is never said of strict JSON (5), and every refusal is a clear
error value with an event saying why (7). What ran is read from ``ToolStarted``
events, and, when the caller recorded them, from the tool functions' own entries.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import attrs
import fastjsonschema
import msgspec

from tinytools._declare.coerce import coerce_scalars
from tinytools._declare.models import encode_model
from tinytools._declare.patterns import linear
from tinytools._declare.registry import Registry
from tinytools._declare.schema_dialect import Dialect, Enforce, local_schema
from tinytools._declare.spec import Exposure, Tool
from tinytools._declare.validate import SchemaValidator
from tinytools._engine.result import DispatchResult
from tinytools._redact import WITHHELD, Redactor, shown_arguments
from tinytools._text import json_text, printable
from tinytools._wire import ToolCall, ToolMessage
from tinytools.errors import ToolArgumentsError
from tinytools.events import (
    Custom,
    InvalidToolArgs,
    ToolApproved,
    ToolCompleted,
    ToolDeferred,
    ToolDenied,
    ToolFailed,
    ToolRetried,
    ToolStarted,
    UnknownToolCall,
)
from tinytools.policies import Coerce, RunPolicy
from tinytools.repair import normalize_arguments, recover_relaxed_object
from tinytools.toolsets import Toolset

from ._tools import registry_of

__all__ = [
    "Entry",
    "callable_this_turn",
    "check_dispatch_invariants",
    "decoded_arguments",
]


@attrs.frozen
class Entry:
    """One entry into a tool's function, as the function saw it.

    Attributes:
        call_id: The call the function says it runs for (from its injected call id).
        tool: The tool's name.
        arguments: The model-visible keyword arguments it received.
        injected: The injected keyword arguments it received.
    """

    call_id: str
    tool: str
    arguments: dict[str, object]
    injected: dict[str, object] = attrs.field(factory=dict)


_TERMINAL = (ToolCompleted, ToolFailed)
_ADMISSION = (UnknownToolCall, InvalidToolArgs, ToolDenied)
_REWRITE = re.compile(r"rewrite:(.+)", re.DOTALL)
_UNKNOWN_RECOVERIES = frozenset({"tool_error", "fail"})
_INVALID_RECOVERIES = frozenset({"repaired", "normalized", "coerced", "tool_error", "fail"})


def callable_this_turn(
    tools: Registry, policy: RunPolicy, advertised: Collection[str] | None
) -> frozenset[str]:
    """The names the model may call, derived from the documented rules rather than from
    the library.

    Registered, not hidden, allowed by the allow-list (a declared empty one denies all
    unless ``fail_closed_allowlist`` is False), and advertised when an ``advertised`` set
    is given; a deferred-exposure tool only when advertised.
    """
    names = set()
    for name, item in tools.items():
        if item.exposure is Exposure.Hidden:
            continue
        allowlist = policy.allowlist
        denies_all = allowlist is not None and not allowlist and policy.fail_closed_allowlist
        if denies_all or (allowlist and name not in allowlist):
            continue
        if advertised is None and item.exposure is Exposure.Deferred:
            continue
        if advertised is None or name in advertised:
            names.add(name)
    return frozenset(names)


def decoded_arguments(call: ToolCall) -> tuple[object, bool]:
    """``(value, strict)``: the call's arguments as decoded JSON, and whether that was strict.

    Malformed text that relaxed repair recovers gives the repaired object with ``strict``
    False; text nothing recovers gives ``(None, False)``.
    """
    raw = call.arguments
    if not isinstance(raw, (str, bytes)):
        return raw, call.invalid is None
    if call.invalid is None:
        try:
            return msgspec.json.decode(raw), True
        except (msgspec.DecodeError, UnicodeError):
            pass
    return (recover_relaxed_object(raw) if isinstance(raw, str) else None), False


def _candidates(
    call: ToolCall, item: Tool[..., object], policy: RunPolicy | None = None
) -> list[dict[str, object]]:
    """Every keyword-argument dict admission may legitimately derive from ``call`` (under
    ``policy``: the default ``RunPolicy()`` when None)."""
    value, strict = decoded_arguments(call)
    if value is None and not strict and isinstance(call.arguments, (str, bytes)):
        return []  # malformed and unrecoverable: nothing may run (never `{}`)
    values = [value]
    if (policy is not None and isinstance(policy.invalid_args, Coerce)) or (
        item.policy.runtime.coerce
    ):
        coerced = coerce_scalars(item.parameters, value)
        if coerced is not None:
            values.append(coerced)
    normalized = normalize_arguments(value, item.parameters)
    if normalized is not None:
        values.append(normalized.value)
    found = []
    for candidate in values:
        with contextlib.suppress(ToolArgumentsError):
            found.append(validate(item, candidate))
    return found


def validate(item: Tool[..., object], value: object) -> dict[str, object]:
    """``item.validate`` for a decoded value (a decoded string is not JSON text again)."""
    if not isinstance(value, dict):
        raise ToolArgumentsError(item.name, f"Expected `object`, got {type(value).__name__}")
    return item.validate(value)


@functools.lru_cache(maxsize=256)
def _schema_check(schema: bytes, enforce: Enforce, dialect: Dialect) -> Any:
    # The schema as tinytools documents enforcing it (``_declare.schema_dialect``): 2020-12 spelt
    # the draft-7 way fastjsonschema reads (read raw, `prefixItems` and `dependentRequired`
    # were ignored, and `contains` was read without its `minContains`), and what is never
    # enforced locally left out: a tool running on what the schema allows only through
    # that documented loosening broke no promise.
    local = local_schema(msgspec.json.decode(schema), enforce, dialect)
    check = fastjsonschema.compile(local)  # type: ignore[arg-type]
    _match_linearly(check)
    return check


class _Unchecked:
    """Stands for a pattern RE2 cannot run: tinytools does not enforce it (the provider
    does), so an argument it would refuse is no broken promise."""

    @staticmethod
    def search(text: str) -> bool:
        return True

    match = search


def _match_linearly(check: object) -> None:
    """The advertised schema's patterns matched as the tools match them, by RE2 (see
    ``tinytools._declare.patterns``): Python's ``re`` backtracks, and an argument a tool rightly
    accepted (``(a+)+b|c`` against forty ``a`` and a ``c``) would take it hours. The
    format checks' fixed expressions (``<format>_re_pattern``) stay."""
    table = getattr(getattr(check, "func", check), "__globals__", {}).get("REGEX_PATTERNS")
    if not isinstance(table, dict):
        return
    for name in list(table):
        if isinstance(name, str) and not name.endswith("_re_pattern"):
            table[name] = linear(name) or _Unchecked


def _satisfies_schema(arguments: Mapping[str, object], item: Tool[..., object]) -> str | None:
    """Why ``arguments`` break the tool's schema as enforced (an independent check), or None."""
    validator = item._validator
    if isinstance(validator, SchemaValidator):
        enforce, dialect = validator.enforce, validator.dialect
    else:  # a signature tool's schema is generated in 2020-12, enforced whole
        enforce, dialect = "full", "draft2020-12"
    check = _schema_check(msgspec.json.encode(item.parameters), enforce, dialect)
    try:
        check(msgspec.to_builtins(dict(arguments), enc_hook=encode_model))
    except fastjsonschema.JsonSchemaValueException as error:
        return str(error)
    return None


def _injected_names_in_schema(item: Tool[..., object]) -> set[str]:
    properties = item.parameters.get("properties") or {}
    required = item.parameters.get("required") or []
    assert isinstance(properties, Mapping)
    assert isinstance(required, list)
    return {name for name in item.injected if name in properties or name in required}


def check_dispatch_invariants(
    calls: Sequence[ToolCall],
    result: DispatchResult,
    tools: Registry | Toolset | Iterable[Tool[..., object]],
    *,
    ran: Iterable[Entry] | None = None,
    policy: RunPolicy | None = None,
    advertised: Collection[str] | None = None,
    resolved: Collection[str] | None = None,
) -> None:
    """Assert the dispatch invariants (docs/concepts/invariants.md) for one batch and
    what dispatch made of it.

    Call it after any dispatch (your own middleware, policies and agent loop
    included) with the calls as the model sent them. It checks, for every call:
    exactly one answer in call order unless deferred, also when ids repeat
    (invariant 1); no unknown, hidden, unadvertised or disallowed tool ran (2);
    no tool ran on arguments that break its schema, or that its call's text does
    not decode, repair or normalize to — malformed JSON never becomes ``{}``
    (3); no injected parameter is in a schema or set by the model (4); strict
    JSON is never "repaired" (5); every refusal is an error message that names
    the tool, with an event saying why (7); and that events, messages and
    ``executed`` agree.

    What ran is read from the ``ToolStarted`` events; pass ``ran`` to check
    what your tool functions really received as well. A batch ``on_deferred``
    resolved inline is checked pass by pass: a call whose tool asked for
    approval ran once, and again once approved; a run after the host's
    decision may have the host's edited arguments (``approve_with_args``), so
    those are checked against the schema only.

    Args:
        calls: The batch as given to dispatch. When a ``before_tool`` middleware
            rewrites arguments, pass the calls as it left them; on a resume with
            ``approvals``, pass edited calls with the host's arguments.
        result: What dispatch returned, or ``DispatchAborted.result``.
        tools: The registry, tools or toolset the batch ran against (a toolset is
            resolved with no context; a ``Discovery`` is refused with a ``TypeError``).
        ran: Every entry into a tool function, when your tools record them
            (:class:`Entry`); a synchronous tool abandoned in its worker thread
            (timed out or interrupted) may enter after dispatch returned, so it
            may be missing. A ``wrap_tool``/``awrap_tool`` hook that answers a call
            without calling ``proceed`` (a cache) runs no function: record an entry
            for that call from the wrap as the tool would have, or the call is
            reported as in ``executed`` with a tool that never ran.
        policy: The run policy the batch ran with (default ``RunPolicy()``).
        advertised: The ``advertised`` names the batch ran with.
        resolved: On resume (with ``approvals`` or ``on_deferred``), the ids of
            the calls a host decision answered with its own result: such a call
            is folded like one that ran (``ToolStarted`` and ``ToolCompleted``)
            but never runs, so ``executed`` omits it (a denial is read from its
            ``ToolDenied``). Without it, a resumed call the host approved is
            taken to have run, unless it was resolved inline and ``executed``
            omits it; after its tool ran and asked for approval, the result
            cannot tell a run from the host's answer, and the checker takes either.

    Raises:
        AssertionError: An invariant is broken. The message starts with the
            invariant (``invariant 1: ...``), names the call id and says what
            the checker saw.

    Example:
        >>> from tinytools import ToolCall, dispatch_sync, tool
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     \"\"\"Add two integers.\"\"\"
        ...     return a + b
        >>> calls = [ToolCall("1", "add", '{"a": 1, "b": 2}'), ToolCall("2", "sub", {})]
        >>> result = dispatch_sync(calls, [add])
        >>> check_dispatch_invariants(calls, result, [add])  # passes
        >>> import msgspec
        >>> dropped = msgspec.structs.replace(result, messages=result.messages[:1])
        >>> check_dispatch_invariants(calls, dropped, [add])
        Traceback (most recent call last):
        ...
        AssertionError: invariant 1: ... call '2' ...
    """
    registry = registry_of(tools, "check_dispatch_invariants")
    policy = RunPolicy() if policy is None else policy
    callable_names = callable_this_turn(registry, policy, advertised)
    ids = {call.id for call in calls}
    events_of: dict[str, list[tuple[int, object]]] = collections.defaultdict(list)
    for position, event in enumerate(result.events):
        call_id = getattr(event, "call_id", None)
        if call_id is not None:
            assert call_id in ids, (
                f"event {type(event).__name__} names call id {call_id!r}, which is not in the "
                f"batch: {event!r}"
            )
            events_of[call_id].append((position, event))
    answers = _check_answers(calls, result, events_of)
    firsts = _check_repeats(calls, answers, events_of)
    executed = set(result.executed)
    deferred = {c.id for c in result.deferred.all} if result.deferred is not None else set()
    _check_schemas(registry)
    passes_of: dict[str, list[_Pass]] = {}
    for index, call in firsts.items():
        message = answers.get(index)
        events = [event for _, event in events_of[call.id]]
        host = None if resolved is None else call.id in resolved
        passes = _passes(events, call.id in executed, host)
        passes_of[call.id] = passes
        _check_passes(call, message, passes, call.id in deferred, callable_names, registry)
        final = passes[-1]
        _check_message(call, message, final.events, final.start is not None, policy, registry)
    _check_executed(list(firsts.values()), result, passes_of)
    runs = _runs(passes_of)
    resumed = any(one.resumed and one.events for passes in passes_of.values() for one in passes)
    _check_fail(result, runs, resumed)
    by_id = {call.id: call for call in firsts.values()}
    # A pass that may have folded a host's answer reports the call's own arguments, or
    # `{}` for text: other arguments are a run's, which the schema must allow.
    started = [
        Entry(call_id, tool, {} if _redacts(registry, tool, by_id[call_id].name) else arguments)
        for call_id, tool, arguments, _, certain, _ in runs
        if certain or arguments not in ({}, by_id[call_id].arguments)
    ]
    _check_journal(
        by_id, result, registry, callable_names, started, runs, recorded=False, policy=policy
    )
    if ran is not None:
        _check_journal(
            by_id, result, registry, callable_names, list(ran), runs, recorded=True, policy=policy
        )


@attrs.frozen
class _Pass:
    """One pass of a call through dispatch: its events up to a deferral, or to the end.

    A call dispatch resumed inline (``on_deferred``) has two: the first ends in
    ``ToolDeferred`` (its tool asked for approval, or admission deferred it), the second
    starts from the host's decision. Its ``ToolStarted`` may fold a host's answer
    (denied, or answered with the host's own result) instead of a run of the tool.
    """

    events: tuple[object, ...]
    resumed: bool  # a later pass: the host's decision re-admitted the call
    start: int | None  # where its ToolStarted is
    #: Whether its ToolStarted and ToolCompleted fold a host's answer (nothing ran);
    #: None when the result cannot tell (see `_passes`).
    folded: bool | None

    @property
    def ran(self) -> bool:
        return self.start is not None and self.folded is False


def _passes(events: Sequence[object], executed: bool, resolved: bool | None) -> list[_Pass]:
    """A call's events cut after each ``ToolDeferred``, each pass told whether it ran.

    A host's denial is folded after its ``ToolDenied``. Otherwise a first pass ran,
    unless ``resolved`` (the host answered the call) is true for its last start. A
    resumed pass the host approved ran, or folded the host's own result: ``resolved``
    tells which when given; else ``executed`` does when no earlier pass ran; else
    (the tool ran before it and asked for approval) nothing does.
    """
    chunks: list[list[object]] = [[]]
    for event in events:
        chunks[-1].append(event)
        if isinstance(event, ToolDeferred):
            chunks.append([])
    starts = [
        next((i for i, e in enumerate(chunk) if isinstance(e, ToolStarted)), None)
        for chunk in chunks
    ]
    last = max((k for k, start in enumerate(starts) if start is not None), default=None)
    passes: list[_Pass] = []
    for k, (chunk, start) in enumerate(zip(chunks, starts, strict=True)):
        folded: bool | None = False
        if start is None:
            folded = False
        elif any(isinstance(e, ToolDenied) for e in chunk[:start]):
            folded = True
        elif resolved is not None or k == 0:
            folded = bool(resolved) and k == last
        elif not any(one.ran for one in passes):
            folded = not executed
        else:
            folded = None
        passes.append(_Pass(tuple(chunk), k > 0, start, folded))
    return passes


#: One pass that may have run: call id, tool, arguments, resumed, whether it ran for
#: certain, and its ToolStarted event.
_Run = tuple[str, str, dict[str, object], bool, bool, ToolStarted]


def _runs(passes_of: Mapping[str, list[_Pass]]) -> list[_Run]:
    """The passes that ran or may have, as their ``ToolStarted`` events report them."""
    found = []
    for call_id, passes in passes_of.items():
        for one in passes:
            if one.start is not None and one.folded is not True:
                event = one.events[one.start]
                assert isinstance(event, ToolStarted)
                found.append(
                    (call_id, event.tool_name, event.arguments, one.resumed, one.ran, event)
                )
    return found


def _check_fail(result: DispatchResult, runs: Sequence[_Run], resumed: bool) -> None:
    """A ``Fail`` policy aborts the batch before any tool runs: nothing runs, or (in a
    batch resumed inline, where the first pass's tools ran before the resumed pass could
    fail) nothing runs after it."""
    fired = next(
        (i for i, e in enumerate(result.events) if getattr(e, "recovery", None) == "fail"), None
    )
    if fired is None:
        return
    started = {id(event) for *_, certain, event in runs if certain}
    after = result.events[fired:] if resumed else result.events
    late = [e for e in after if isinstance(e, ToolStarted) and id(e) in started]
    assert not late, (
        f"a Fail policy fired, yet calls {sorted({e.call_id for e in late})} ran after it: "
        "Fail aborts the batch before any tool runs"
    )


def _redacts(registry: Registry, name: str, asked: str | None = None) -> bool:
    """Whether events may show the arguments of a call of ``name`` redacted: the tool
    redacts, or the call asked for another name (``asked``: a rewrite, whose arguments
    every registered tool's redaction applies to) and any registered tool does."""
    item = registry.get(name)
    if item is not None and bool(getattr(item.policy, "redact", ())):
        return True
    return asked is not None and asked != name and bool(_every_path(registry))


def _check_answers(
    calls: Sequence[ToolCall], result: DispatchResult, events_of: Mapping[str, list[Any]]
) -> dict[int, ToolMessage]:
    """Invariant 1: one message per call, in call order, unless deferred.

    Returns:
        Each answered call's position in the batch → its message.
    """
    deferred: list[str] = []
    if result.deferred is not None:
        deferred = [c.id for c in (*result.deferred.calls, *result.deferred.approvals)]
    assert len(deferred) == len(set(deferred)), f"invariant 1: a call is deferred twice: {deferred}"
    ids = {call.id for call in calls}
    assert set(deferred) <= ids, (
        f"invariant 1: deferred calls {sorted(set(deferred) - ids)} are not in the batch"
    )
    seen: set[str] = set()
    expected: list[tuple[int, str]] = []
    for index, call in enumerate(calls):
        first = call.id not in seen
        seen.add(call.id)
        if not (first and call.id in deferred):  # a repeated id is answered, never deferred
            expected.append((index, call.id))
    actual = [message.tool_call_id for message in result.messages]
    wanted = [call_id for _, call_id in expected]
    if wanted != actual:
        at = next(
            (i for i, (w, a) in enumerate(zip(wanted, actual, strict=False)) if w != a),
            min(len(wanted), len(actual)),
        )
        culprit = wanted[at] if at < len(wanted) else actual[at]
        saw = f"message {at} answers {actual[at]!r}" if at < len(actual) else "no message"
        raise AssertionError(
            "invariant 1: every call must be answered by exactly one ToolMessage, in call "
            f"order, unless deferred; at call {culprit!r} the checker saw {saw}. Expected "
            f"answers for {wanted}, got {actual} (missing "
            f"{sorted(set(wanted) - set(actual))}, answered more often than called "
            f"{sorted({i for i in actual if actual.count(i) > wanted.count(i)})}, deferred "
            f"{deferred})"
        )
    for call_id in deferred:
        assert any(isinstance(e, ToolDeferred) for _, e in events_of[call_id]), (
            f"invariant 1: call {call_id!r} is deferred without a ToolDeferred event"
        )
    return {index: message for (index, _), message in zip(expected, result.messages, strict=True)}


def _check_repeats(
    calls: Sequence[ToolCall],
    answers: Mapping[int, ToolMessage],
    events_of: dict[str, list[tuple[int, object]]],
) -> dict[int, ToolCall]:
    """A call repeating an earlier call's id is refused, with its own ``ToolDenied`` (or
    answered as interrupted, when the batch stopped before admission reached it).

    Removes each repeat's ``ToolDenied`` from ``events_of``, so the rest of the checks
    see the first call of each id alone. Returns the first calls by position.
    """
    firsts: dict[int, ToolCall] = {}
    seen: set[str] = set()
    for index, call in enumerate(calls):
        if call.id not in seen:
            seen.add(call.id)
            firsts[index] = call
            continue
        message = answers[index]
        refused = message.is_error and message.status != "ok"
        assert refused, (
            f"invariant 1: call {call.id!r} at position {index} repeats an earlier call's id, "
            "so its answer, in its place in call order, is a refusal (a repeated id could "
            f"inherit another call's approval); the checker saw {message!r} there"
        )
        if message.status == "interrupted":
            continue  # the batch stopped before admission reached it: nothing was denied
        denials = [
            (p, e)
            for p, e in events_of[call.id]
            if isinstance(e, ToolDenied) and _says(message.content, e.message)
        ]
        assert denials, (
            f"invariant 7: call {call.id!r} at position {index} repeats an id and is refused "
            f"({message.content!r}) with no ToolDenied event saying why"
        )
        events_of[call.id].remove(denials[-1])
    return firsts


def _check_schemas(registry: Registry) -> None:
    """Invariant 4, the schema half: no injected parameter is model-visible."""
    for name, item in registry.items():
        leaked = _injected_names_in_schema(item)
        assert not leaked, (
            f"invariant 4: tool {name!r} shows injected parameters {sorted(leaked)} in its "
            f"schema {item.parameters}"
        )


#: How a message cut to ``RunPolicy.max_result_bytes`` ends: the marker, a short one for a
#: small limit, or nothing at all below 3 bytes (written out here, not read from dispatch's
#: code: the checker is an oracle for it).
_MARKER = re.compile(r"(?:\n\[truncated(?:: \d+ bytes, showing the first \d+)?\]|…)\Z")


def _cut(content: str) -> bool:
    """Whether ``content`` may be a text cut to a byte limit (see :data:`_MARKER`)."""
    return _MARKER.search(content) is not None or len(content.encode("utf-8", "surrogatepass")) < 3


def _says(content: str, said: str) -> bool:
    """Whether ``content`` is ``said`` as the model reads it: whole, or its start cut to a
    byte limit."""
    if content == said:
        return True
    found = _MARKER.search(content)
    kept = content if found is None else content[: found.start()]
    return _cut(content) and len(kept) < len(said) and said.startswith(kept)


def _check_message(
    call: ToolCall,
    message: ToolMessage | None,
    events: Sequence[object],
    executed: bool,
    policy: RunPolicy,
    registry: Registry,
) -> None:
    """The message's shape, and invariant 7: every refusal is a clear error value."""
    if message is None:
        return
    assert message.status in {"ok", "error", "denied", "interrupted"}, message
    assert message.is_error == (message.status != "ok"), (
        f"call {call.id!r}: is_error={message.is_error} disagrees with status "
        f"{message.status!r} in {message!r}"
    )
    assert isinstance(message.content, str), message
    assert message.status == "ok" or message.content.strip(), (
        f"invariant 7: call {call.id!r} is answered with an empty error: {message!r}"
    )
    recoveries = (getattr(e, "recovery", "") for e in events)
    rewrites = {m[1] for m in map(_REWRITE.fullmatch, recoveries) if m}
    # (a name holding a lone surrogate is answered escaped: every result encodes)
    assert message.name in (call.name, printable(call.name)) or message.name in rewrites, (
        f"call {call.id!r} to {call.name!r} is answered under the name {message.name!r}, "
        "which is neither the requested name nor a rewrite target"
    )
    if executed or message.status == "interrupted":
        return
    if message.status == "ok":
        assert any(isinstance(e, ToolApproved) for e in events), (
            f"call {call.id!r} is answered as a success, yet its tool never ran and no "
            f"host answered it: {message!r}"
        )
        return
    if message.status == "denied":
        assert any(isinstance(e, ToolDenied) for e in events), (
            f"call {call.id!r} is denied without a ToolDenied event"
        )
        return
    reasons = [e for e in events if isinstance(e, (UnknownToolCall, InvalidToolArgs))]
    denied = any(isinstance(e, ToolDenied) for e in events)
    assert reasons or denied or policy.max_tool_calls is not None, (
        f"invariant 7: call {call.id!r} was refused ({message.content!r}) with no "
        "UnknownToolCall, InvalidToolArgs or ToolDenied event saying why"
    )
    if _cut(message.content):
        return  # cut to a byte limit: what it said past the cut cannot be checked
    if reasons and not call.name and call.invalid is not None:
        # A call that could not be read and names no tool: its reason is the answer (but
        # where a registered tool redacts: the reason may quote its secret, and is withheld).
        reason = WITHHELD if _every_path(registry) else call.invalid
        assert printable(reason.strip()[:40]) in message.content, (
            f"invariant 7: the refusal of unreadable call {call.id!r} does not give its "
            f"reason ({reason!r}): {message.content!r}"
        )
    elif reasons:
        named = {printable(call.name), *(getattr(e, "tool_name", call.name) for e in reasons)}
        assert any(f"`{name}`" in message.content for name in named), (
            f"invariant 7: the refusal of call {call.id!r} does not name the tool "
            f"({sorted(named)}): {message.content!r}"
        )


def _check_passes(
    call: ToolCall,
    message: ToolMessage | None,
    passes: Sequence[_Pass],
    deferred: bool,
    callable_names: frozenset[str],
    registry: Registry,
) -> None:
    """Per call, pass by pass: lifecycle order, and what each recovery event promises."""
    kinds = [type(event).__name__ for one in passes for event in one.events]
    if deferred:
        assert not passes[-1].events, (
            f"invariant 1: call {call.id!r} is deferred, yet its events do not end with "
            f"ToolDeferred: {kinds}"
        )
    for one in passes:
        final = one is passes[-1]
        _check_lifecycle(call, one, kinds)
        if final and message is not None and one.start is not None:
            _check_end(call, message, one)
        recoveries = [e for e in one.events if isinstance(e, (UnknownToolCall, InvalidToolArgs))]
        answer = message if final else None
        running = one.start is not None
        for index, event in enumerate(recoveries):
            last = index == len(recoveries) - 1
            if isinstance(event, UnknownToolCall):
                _check_unknown(call, event, callable_names, running, answer, last, registry)
            else:
                _check_invalid(call, event, registry, running, answer, one, last)


def _check_lifecycle(call: ToolCall, one: _Pass, kinds: list[str]) -> None:
    """One ToolStarted followed by exactly one end in a pass that started, none in one
    that did not; admission before the start, retries and custom events within."""
    events = one.events
    started = [i for i, e in enumerate(events) if isinstance(e, ToolStarted)]
    # A tool that raises ApprovalRequired or CallDeferred ends with ToolDeferred instead.
    ended = [
        i
        for i, e in enumerate(events)
        if isinstance(e, _TERMINAL) or (isinstance(e, ToolDeferred) and started and i > started[0])
    ]
    if one.start is None:
        assert not ended, f"call {call.id!r} ended without a ToolStarted: its events are {kinds}"
        assert not any(isinstance(e, (ToolRetried, Custom)) for e in events), kinds
        return
    lifecycle = len(started) == 1 and len(ended) == 1 and started[0] < ended[0]
    assert lifecycle, (
        f"call {call.id!r} ran, so each run needs one ToolStarted followed by exactly one "
        f"ToolCompleted, ToolFailed or (the tool deferring) ToolDeferred; its events are {kinds}"
    )
    for index, event in enumerate(events):
        if isinstance(event, _ADMISSION):
            assert index < started[0], f"call {call.id!r}: {kinds} has admission after start"
        if isinstance(event, (ToolRetried, Custom)):
            assert started[0] < index < ended[0], f"call {call.id!r}: misplaced {kinds}"
            assert not one.folded, f"call {call.id!r}: a host's answer has {kinds}"
    if one.resumed:
        decided = any(isinstance(e, (ToolApproved, ToolDenied)) for e in events[: started[0]])
        assert decided, (
            f"invariant 2: call {call.id!r} started again after its deferral without a "
            f"host's decision (ToolApproved or ToolDenied) before it; its events are {kinds}"
        )
    if one.folded:
        assert isinstance(events[ended[0]], ToolCompleted), (
            f"call {call.id!r}: a host's answer ends with ToolCompleted; its events are {kinds}"
        )


def _check_end(call: ToolCall, message: ToolMessage, final: _Pass) -> None:
    """The answer agrees with how the call's last pass ended."""
    end = next(e for e in final.events if isinstance(e, _TERMINAL))
    assert end.tool_name == message.name, (end, message)
    if isinstance(end, ToolCompleted):
        denied = any(isinstance(e, ToolDenied) for e in final.events)
        statuses = {"denied"} if final.folded and denied else {"ok", "error"}
        assert message.status in statuses, (
            f"call {call.id!r}: {end!r} ends it, but it is answered {message.status!r}: {message!r}"
        )
        assert end.is_error == message.is_error, (end, message)
    else:
        assert message.status in {"error", "interrupted"}, (end, message)


def _check_unknown(
    call: ToolCall,
    event: UnknownToolCall,
    callable_names: frozenset[str],
    executed: bool,
    message: ToolMessage | None,
    last: bool,
    registry: Registry,
) -> None:
    assert event.requested_name == printable(call.name), f"{event!r} does not name {call!r}"
    assert event.arguments == _unknown_shown(call, registry), (
        f"invariant 7: call {call.id!r} sent {call.arguments!r}, but the checker saw "
        f"UnknownToolCall report {event.arguments!r} ({event!r})"
    )
    assert call.name not in callable_names, (
        f"call {call.id!r} names the callable tool {call.name!r} but got {event!r}"
    )
    rewrite = _REWRITE.fullmatch(event.recovery)
    if rewrite is None:
        assert event.recovery in _UNKNOWN_RECOVERIES, f"unknown recovery in {event!r}"
        refused = last and not executed and message is not None and message.status != "ok"
        assert refused, (
            f"call {call.id!r} got {event!r}, so it must be answered with an error and "
            f"never run; executed={executed}, message={message!r}"
        )
    else:
        assert rewrite[1] in callable_names, (
            f"call {call.id!r} was rewritten to {rewrite[1]!r}, which is not callable: {event!r}"
        )
        went_on = executed or not last or message is None
        assert went_on or (message is not None and message.status == "interrupted"), (
            f"call {call.id!r} was rewritten to {rewrite[1]!r} but neither ran, nor got a "
            f"further recovery event, nor was interrupted by an abort; message={message!r}"
        )


def _unknown_shown(call: ToolCall, registry: Registry) -> object:
    """The arguments an unknown call's event shows: verbatim, but with the secrets of
    every redacting tool of the registry redacted — the name may be a variant, a
    misspelling or a rewrite of any of them, and a call never leaks a secret for having
    missed its tool's name. (Written out here rather than calling dispatch's own
    ``every_secret``: the checker is an oracle for it.)"""
    paths = _every_path(registry)
    arguments = call.arguments
    if paths:
        arguments = Redactor(paths, loose=True).raw(arguments)[0]
    return _shown(arguments)


def _every_path(registry: Registry) -> tuple[str, ...]:
    """Every redaction path of the registry's tools."""
    return tuple(dict.fromkeys(p for tool in registry.values() for p in tool.policy.redact))


def _shown(arguments: object) -> object:
    """Arguments as events keep them: verbatim, unless JSON cannot carry them (then as text)."""
    try:
        msgspec.json.encode(arguments)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return (
            printable(arguments) if isinstance(arguments, str) else printable(json_text(arguments))
        )
    return arguments


def _check_invalid(
    call: ToolCall,
    event: InvalidToolArgs,
    registry: Registry,
    executed: bool,
    message: ToolMessage | None,
    within: _Pass,
    last: bool,
) -> None:
    assert event.recovery in _INVALID_RECOVERIES, f"unknown recovery in {event!r}"
    assert event.tool_name in registry, f"{event!r} names an unregistered tool"
    # (on an inline resume the host may have approved other arguments: it checks them)
    rewrite = f"rewrite:{event.tool_name}"
    if any(getattr(e, "recovery", None) == rewrite for e in within.events):
        # Arguments written for another tool: every tool's secrets are hidden, as for an
        # unknown call's.
        assert event.arguments == _unknown_shown(call, registry), (
            f"call {call.id!r} rewritten to `{event.tool_name}` sent {call.arguments!r}, "
            f"but InvalidToolArgs reports {event.arguments!r}"
        )
    elif not within.resumed and not getattr(registry[event.tool_name].policy, "redact", None):
        assert event.arguments == _shown(call.arguments), (
            f"invariant 3: call {call.id!r} sent {call.arguments!r}, but the checker saw "
            f"InvalidToolArgs report {event.arguments!r}: something replaced the model's "
            f"arguments before validation ({event!r})"
        )
    assert event.error.strip(), f"invariant 7: {event!r} gives no reason"
    if event.recovery in {"tool_error", "fail"}:
        refused = last and not executed and message is not None and message.status == "error"
        assert refused, (
            f"call {call.id!r} got {event!r}, so it must be answered with an error and never "
            f"run; executed={executed}, message={message!r}"
        )
        return
    if event.recovery == "repaired":
        value, strict = decoded_arguments(call)
        assert not strict, (
            f"invariant 5: call {call.id!r} was 'repaired' but its arguments "
            f"{call.arguments!r} are strictly valid JSON"
        )
        assert isinstance(value, dict), (
            f"call {call.id!r} was 'repaired' but {call.arguments!r} repairs to no object"
        )
    deferred = any(isinstance(e, ToolDeferred) for e in within.events)
    went_on = executed or deferred or not last or message is None
    assert went_on or (message is not None and message.status == "interrupted"), (
        f"call {call.id!r} was {event.recovery} but neither ran, nor was deferred, nor got a "
        f"further recovery event, nor was interrupted by an abort; message={message!r}"
    )


def _check_executed(
    calls: Sequence[ToolCall], result: DispatchResult, passes_of: Mapping[str, list[_Pass]]
) -> None:
    """``executed`` is the calls that ran, in call order, and extras belong to them."""
    started = [c.id for c in calls if any(one.ran for one in passes_of[c.id])]
    never = sorted(set(result.executed) - set(started))
    assert list(result.executed) == started, (
        f"`executed` must list the calls that ran (a ToolStarted that no host's answer "
        f"folds), in call order: {list(result.executed)} != {started}"
        + (f"; {never} never started" if never else "")
    )
    extras = {f.call_id for f in result.follow_ups} | set(result.metadata)
    assert extras <= set(started), f"follow-ups or metadata for calls that never ran: {extras}"


def _check_journal(
    by_id: Mapping[str, ToolCall],
    result: DispatchResult,
    registry: Registry,
    callable_names: frozenset[str],
    ran: list[Entry],
    runs: Sequence[_Run],
    *,
    recorded: bool,
    policy: RunPolicy,
) -> None:
    """Invariants 2, 3 and 4 against what ran: recorded by the tool functions themselves
    (``recorded``), or as the ``ToolStarted`` events of ``runs`` report it."""
    source = "recorded" if recorded else "ToolStarted"
    reported: dict[str, list[tuple[dict[str, object], bool]]] = collections.defaultdict(list)
    for call_id, _, arguments, resumed, _, _ in runs:
        reported[call_id].append((arguments, resumed))
    for entry in ran:
        call = by_id.get(entry.call_id)
        assert call is not None, (
            f"invariant 2: tool {entry.tool!r} ran ({source}) for call id {entry.call_id!r}, "
            "which is not in the batch"
        )
        assert entry.tool in callable_names, (
            f"invariant 2: tool {entry.tool!r} ran ({source}) for call {call.id!r} although it "
            f"is not callable this turn (unknown, hidden, not advertised or not allowed); "
            f"callable: {sorted(callable_names)}"
        )
        assert entry.tool == call.name or call.name not in callable_names, (
            f"invariant 2: call {call.id!r} asked for {call.name!r} but {entry.tool!r} ran"
        )
        assert entry.call_id in result.executed, (
            f"tool {entry.tool!r} ran for call {call.id!r}, which `executed` omits"
        )
        item = registry[entry.tool]
        value, _ = decoded_arguments(call)
        forged = set(value) & set(item.injected) if isinstance(value, dict) else set()
        assert not forged, (
            f"invariant 4: call {call.id!r} set the injected parameters {sorted(forged)} of "
            f"{entry.tool!r}, yet the tool ran"
        )
        if not recorded and _redacts(registry, entry.tool, call.name):
            continue  # the event shows redacted values; only the tool saw the real ones
        problem = _satisfies_schema(entry.arguments, item)
        assert problem is None, (
            f"invariant 3: tool {entry.tool!r} ran ({source}) for call {call.id!r} with "
            f"arguments {entry.arguments!r} that break its schema: {problem}"
        )
        # (what ToolStarted shows of what the tool received: a model as its fields)
        shown = shown_arguments(item, entry.arguments) if recorded else entry.arguments
        matching = [r for a, r in reported[call.id] if a == shown]
        # A run after the host's decision on an inline resume may have the host's edited
        # arguments (approve_with_args), which no call text gives: its schema was checked.
        if not (matching and all(matching)):
            candidates = _candidates(call, item, policy)
            if not recorded:  # (as ToolStarted shows them)
                candidates = [shown_arguments(item, c) for c in candidates]
            assert entry.arguments in candidates, (
                f"invariant 3: tool {entry.tool!r} ran ({source}) for call {call.id!r} with "
                f"{entry.arguments!r}, which its arguments {call.arguments!r} do not decode, "
                f"repair, coerce or normalize to (admissible: {candidates}); malformed JSON "
                "must never become `{}` or anything else"
            )
        if recorded:
            assert matching, (
                f"ToolStarted for {call.id!r} reports "
                f"{[arguments for arguments, _ in reported[call.id]]!r}, but the tool "
                f"received {entry.arguments!r}"
            )
    if not recorded:
        return
    # By id, the first message: a repeat of an id is answered after the call holding it
    # first, and only that call can have run.
    messages: dict[str, ToolMessage] = {}
    for answer in result.messages:
        messages.setdefault(answer.tool_call_id, answer)
    entered = {entry.call_id for entry in ran}
    for call_id in set(result.executed) - entered:
        message = messages.get(call_id)
        abandoned = message is not None and (
            message.status == "interrupted" or "timed out" in message.content
        )
        assert abandoned, (
            f"call {call_id!r} is in `executed`, but its tool never ran and it was not "
            f"abandoned (timed out or interrupted): {message!r}"
        )
