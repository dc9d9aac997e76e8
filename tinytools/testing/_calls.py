"""``tool_calls``: batches of model tool calls against a set of tools."""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping, Sequence

import msgspec
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import SearchStrategy

from tinytools._declare.registry import Registry
from tinytools._declare.spec import Exposure, Tool
from tinytools._wire import ToolCall
from tinytools.toolsets import Toolset

from ._arguments import invalid_arguments, valid_arguments
from ._relaxed import relaxed_json
from ._tools import registry_of

__all__ = ["tool_calls"]

#: Kinds of call, in the order shrinking prefers them (valid calls first).
_KINDS = ("valid", "relaxed", "invalid", "unknown", "malformed")
_NOT_OBJECTS = ("[]", "null", "1", '"text"', "true", "[{}]")
_GARBAGE = st.sampled_from(["", " ", "{", "}", "{}}", "{'a': }", "NaN", '{"x": 1', "```", "\x00"])


def tool_calls(
    tools: Registry | Toolset | Iterable[Tool[..., object]],
    *,
    min_size: int = 0,
    max_size: int = 8,
    unknown: float = 0.1,
    malformed: float = 0.1,
    relaxed: float = 0.1,
    invalid: float = 0.1,
    repeated_ids: float = 0.05,
    as_text: float = 0.5,
) -> SearchStrategy[list[ToolCall]]:
    """Batches of tool calls as a model may emit them against ``tools``.

    Each call is one of: a valid call to a tool that is not hidden; a call
    whose arguments are relaxed JSON (:func:`relaxed_json`) of valid ones, not
    strict JSON; a call breaking its tool's schema (:func:`invalid_arguments`,
    or JSON that is not an object when nothing else can break it); a call to
    an unknown name (a near miss of a real name — case, whitespace, a dash, a
    plural —, a hidden tool's name, or anything); a call whose arguments are
    malformed text (truncated JSON or garbage), sometimes flagged ``invalid``
    as a provider does when it could not parse them. Call ids are ``call_0``,
    ``call_1``, ...; a share of calls reuses an earlier call's id instead.

    The shares are probabilities per call; a valid call takes what they leave.
    A share of 0 means never, and a batch shrinks towards valid calls.

    Args:
        tools: The tools, registry or toolset the calls aim at (a toolset is resolved
            with no context; a ``Discovery`` is refused with a ``TypeError``).
        min_size: The fewest calls in a batch.
        max_size: The most calls in a batch.
        unknown: Share of calls to names that are not a callable tool.
        malformed: Share of calls with malformed argument text.
        relaxed: Share of calls with relaxed-but-repairable argument text.
        invalid: Share of calls whose arguments break the tool's schema.
        repeated_ids: Share of calls reusing an earlier call's id.
        as_text: Share of valid and invalid calls whose arguments are sent as
            JSON text (the others as a dict, as some SDKs hand them over).

    Raises:
        hypothesis.errors.InvalidArgument: A share is outside ``[0, 1]``, the
            kinds' shares add up to more than 1, the sizes are wrong, or no
            tool can be called.

    Example:
        >>> from hypothesis import given
        >>> from tinytools import dispatch_sync, tool
        >>> @tool
        ... def add(a: int, b: int = 0) -> int:
        ...     \"\"\"Add two integers.\"\"\"
        ...     return a + b
        >>> @given(tool_calls([add], unknown=0.2, malformed=0.2))
        ... def test_every_call_answered(calls):
        ...     result = dispatch_sync(calls, [add])
        ...     assert len(result.messages) == len(calls)
        >>> test_every_call_answered()
    """
    registry = registry_of(tools, "tool_calls")
    shares = {"unknown": unknown, "malformed": malformed, "relaxed": relaxed, "invalid": invalid}
    for name, share in {**shares, "repeated_ids": repeated_ids, "as_text": as_text}.items():
        if not 0 <= share <= 1:
            raise InvalidArgument(f"tool_calls({name}={share!r}): a share is between 0 and 1")
    if sum(shares.values()) > 1 + 1e-9:
        raise InvalidArgument(
            f"tool_calls(): the shares of unknown, malformed, relaxed and invalid calls add up "
            f"to {sum(shares.values()):g}; they are probabilities per call, so at most 1"
        )
    if not 0 <= min_size <= max_size:
        raise InvalidArgument(
            f"tool_calls(): need 0 <= min_size <= max_size, got {min_size}, {max_size}"
        )
    targets = [item for item in registry.values() if item.exposure is not Exposure.Hidden]
    if not targets:
        raise InvalidArgument("tool_calls(): every tool given is hidden, so none can be called")
    weights = {"valid": max(0.0, 1 - sum(shares.values())), **shares}
    kinds = st.sampled_from(_slots([(kind, weights[kind]) for kind in _KINDS]))
    hidden = tuple(item for item in registry.values() if item.exposure is Exposure.Hidden)
    callable_names = frozenset(item.name for item in targets)
    flagged = st.sampled_from([None, "the provider could not parse the arguments"])
    per_tool = tuple(
        {kind: _arguments(kind, item, callable_names, hidden) for kind in _KINDS}
        for item in targets
    )
    return _batches(
        tuple(targets),
        per_tool,
        kinds,
        flagged,
        min_size,
        max_size,
        _chance(repeated_ids),
        _chance(as_text),
    )


#: Shares are drawn in steps of 1/_STEPS: hypothesis draws a small index uniformly,
#: where it favours small values and bounds when drawing from a wide integer range.
_STEPS = 40


def _slots(weights: Sequence[tuple[str, float]]) -> list[str]:
    """Each kind repeated in proportion to its share (a share above 0 gets a slot)."""
    slots: list[str] = []
    for kind, weight in weights:
        slots += [kind] * (max(1, round(weight * _STEPS)) if weight > 0 else 0)
    return slots


def _chance(share: float) -> SearchStrategy[bool]:
    """True with probability ``share`` (False first, so examples shrink towards it)."""
    return st.sampled_from(_slots([("", 1 - share), ("yes", share)])).map(bool)


@st.composite
def _batches(
    draw: st.DrawFn,
    targets: Sequence[Tool[..., object]],
    per_tool: Sequence[Mapping[str, SearchStrategy[tuple[str, object]]]],
    kinds: SearchStrategy[str],
    flagged: SearchStrategy[str | None],
    min_size: int,
    max_size: int,
    repeated: SearchStrategy[bool],
    as_text: SearchStrategy[bool],
) -> list[ToolCall]:
    size = draw(st.integers(min_size, max_size))
    calls: list[ToolCall] = []
    for index in range(size):
        kind = draw(kinds)
        which = draw(st.integers(0, len(targets) - 1))
        call_id = f"call_{index}"
        reuse: bool = draw(repeated)
        if calls and reuse:
            call_id = calls[draw(st.integers(0, len(calls) - 1))].id
        name, arguments = draw(per_tool[which][kind])
        invalid = None
        if kind == "malformed":
            invalid = draw(flagged)
        elif isinstance(arguments, dict) and draw(as_text):
            arguments = msgspec.json.encode(arguments).decode()
        calls.append(ToolCall(call_id, name, arguments, invalid))  # type: ignore[arg-type]
    return calls


def _arguments(
    kind: str,
    item: Tool[..., object],
    callable_names: frozenset[str],
    hidden: Sequence[Tool[..., object]],
) -> SearchStrategy[tuple[str, object]]:
    """``(name, arguments)`` of one kind of call aimed at ``item``."""
    name = st.just(item.name)
    if kind == "valid":
        return st.tuples(name, valid_arguments(item))
    if kind == "relaxed":
        return st.tuples(name, valid_arguments(item).flatmap(relaxed_json).filter(_not_strict))
    if kind == "invalid":
        return st.tuples(name, _invalid(item))
    if kind == "unknown":
        names = _unknown_names(item.name).filter(lambda n: n not in callable_names)
        near = st.tuples(names, valid_arguments(item))
        if not hidden:
            return near
        # A hidden tool's own name with arguments it would accept: the worst case.
        return near | st.sampled_from(hidden).flatmap(
            lambda h: st.tuples(st.just(h.name), valid_arguments(h))
        )
    return st.tuples(name, _malformed(item))


def _not_strict(text: str) -> bool:
    try:
        msgspec.json.decode(text)
    except msgspec.DecodeError:
        return True
    return False


def _invalid(item: Tool[..., object]) -> SearchStrategy[object]:
    try:
        return invalid_arguments(item)
    except InvalidArgument:  # nothing in the schema to break: arguments must be an object
        return st.sampled_from(_NOT_OBJECTS)


def _unknown_names(name: str) -> SearchStrategy[str]:
    near = [name.upper(), name.capitalize(), f"{name} ", f" {name}", f"{name}\n"]
    near += [name.replace("_", "-"), f"{name}s", name[:-1], ""]
    options: SearchStrategy[str] = st.sampled_from([n for n in near if n != name])
    return options | st.text(string.ascii_letters + "_- ", max_size=10) | st.text(max_size=6)


def _malformed(item: Tool[..., object]) -> SearchStrategy[str]:
    truncated = valid_arguments(item).flatmap(
        lambda a: st.integers(0, max(0, len(msgspec.json.encode(a)) - 1)).map(
            lambda cut: msgspec.json.encode(a).decode("utf-8", "ignore")[:cut]
        )
    )
    return truncated.filter(_not_strict) | _GARBAGE
