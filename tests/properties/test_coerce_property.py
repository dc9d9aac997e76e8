"""Property tests: opt-in scalar coercion is meaning-preserving and only ever opt-in.

Random schemas (every applicator ``enforce="full"`` claims, from the schema-enforcement
properties) and random JSON values rich in strings that spell numbers and booleans:

* arguments that already validate are never changed;
* what coercion changes is a string, read as the JSON it spells, nothing else;
* under ``Coerce()`` a call runs exactly when its arguments, or their coercion,
  validate; the tool gets the coerced values, and the event says ``coerced``;
* under any other policy (the default included) nothing is coerced: a call runs
  exactly when its arguments validate as sent.

And for a typed tool: quoting its numbers and booleans changes nothing it receives.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_schema_enforcement import schemas, tool_for

from tinytools import (
    DispatchAborted,
    Registry,
    Tool,
    ToolArgumentsError,
    ToolCall,
    dispatch_sync,
    tool,
)
from tinytools._declare.coerce import coerce_scalars
from tinytools.events import InvalidToolArgs
from tinytools.policies import Coerce, Fail, NormalizeThenReturnToolError, RunPolicy
from tinytools.testing import check_dispatch_invariants, valid_arguments

#: Strings that spell numbers and booleans (JSON's way or nearly).
spelled = st.from_regex(r"\A-?(0|[1-9][0-9]{0,3})(\.[0-9]{1,3})?([eE][+-]?[0-9]{1,3})?\Z") | (
    st.sampled_from(["true", "false", "True", "1e999", "-0", " 1", "+1", "0x1", "1.", "NaN"])
)
leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4)
    | spelled
)
#: Schemas around scalars: where a string may or may not be taken as it is.
_SCALARS = [
    {"type": "integer"},
    {"type": "number", "maximum": 10},
    {"type": "boolean"},
    {"type": "string"},
    {"type": "string", "pattern": "^[0-9]+$"},
    {"type": ["string", "integer"]},
    {"type": ["integer", "null"]},
    {"enum": [1, "2", True]},
    {"enum": [1, 2.5]},
    {"const": "5"},
    {"type": "null"},
    {},
    {"$ref": "#/$defs/Small"},
]
scalar_schemas = st.recursive(
    st.sampled_from(_SCALARS),
    lambda children: (
        st.builds(lambda a: {"anyOf": a}, st.lists(children, min_size=1, max_size=3))
        | st.builds(lambda a: {"oneOf": a}, st.lists(children, min_size=1, max_size=3))
        | st.builds(lambda a: {"allOf": a}, st.lists(children, min_size=1, max_size=2))
        | st.builds(lambda n: {"not": n}, children)
        | st.builds(lambda i, t: {"if": i, "then": t}, children, children)
        | st.builds(lambda p: {"type": "object", "properties": {"a": p}}, children)
        | st.builds(lambda i: {"type": "array", "items": i}, children)
    ),
    max_leaves=4,
)
#: Unions of scalars, flat: where a branch taking the string must stop coercion.
unions = st.builds(
    lambda kind, branches: {kind: branches},
    st.sampled_from(["anyOf", "oneOf"]),
    st.lists(st.sampled_from(_SCALARS), min_size=2, max_size=3),
)
#: Unions of objects or arrays around scalars, with a value of that shape: entered only
#: through a branch known to apply.
_SHAPES = [
    (lambda s: {"type": "object", "properties": {"a": s}}, lambda v: {"a": v}),
    (lambda s: {"properties": {"a": s}}, lambda v: {"a": v}),
    (lambda s: {"type": "array", "items": s}, lambda v: [v]),
]
container_unions = st.builds(
    lambda kind, shape, branches, value: (
        {kind: [shape[0](branch) for branch in branches]},
        shape[1](value),
    ),
    st.sampled_from(["anyOf", "oneOf"]),
    st.sampled_from(_SHAPES),
    st.lists(st.sampled_from(_SCALARS), min_size=2, max_size=3),
    spelled,
)
any_schemas = schemas | scalar_schemas | unions
values = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "c", "size"]), children, max_size=3)
    ),
    max_leaves=8,
)
#: Values for scalar schemas: mostly spelled strings, a few containers around them.
scalar_values = spelled | st.lists(spelled, max_size=2) | st.fixed_dictionaries({"a": spelled})
any_values = values | scalar_values


def _valid(item: Tool[..., object], arguments: object) -> bool:
    try:
        item.validate(arguments)  # type: ignore[arg-type]
    except ToolArgumentsError:
        return False
    return True


def _only_spelled_strings_changed(before: object, after: object) -> None:
    """``after`` is ``before`` but for strings read as the JSON they spell."""
    if isinstance(before, str) and before != after:
        assert json.loads(before) == after
        assert type(json.loads(before)) is type(after)
        assert before == before.strip()
        return
    assert type(before) is type(after)
    if isinstance(before, Mapping):
        assert list(before) == list(after)  # type: ignore[arg-type]
        for key in before:
            _only_spelled_strings_changed(before[key], after[key])  # type: ignore[index]
    elif isinstance(before, list):
        assert len(before) == len(after)  # type: ignore[arg-type]
        for old, new in zip(before, after, strict=True):  # type: ignore[call-overload]
            _only_spelled_strings_changed(old, new)
    else:
        assert before == after or before != before  # (nothing else changes)


def _unchanged_when_valid(schema: dict[str, object], value: object) -> None:
    item = tool_for(schema)
    arguments = {"v": value}
    if _valid(item, arguments):
        assert coerce_scalars(item.parameters, arguments) is None


@settings(max_examples=4 * settings().max_examples)  # (cheap: no dispatch)
@given(unions | any_schemas, scalar_values | any_values)
@example({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "5")
@example({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "5")
def test_valid_arguments_are_never_changed(schema: dict[str, object], value: object) -> None:
    """Every string in arguments that validate stays as it is."""
    _unchanged_when_valid(schema, value)


@given(container_unions)
def test_unions_are_entered_only_where_known(pair: tuple[dict[str, object], object]) -> None:
    """Inside a union of objects or arrays, valid arguments are never changed either."""
    _unchanged_when_valid(*pair)


@given(any_schemas, any_values)
def test_only_spelled_strings_change(schema: dict[str, object], value: object) -> None:
    arguments = {"v": value}
    found = coerce_scalars(tool_for(schema).parameters, arguments)
    if found is not None:
        _only_spelled_strings_changed(arguments, found)


@given(any_schemas, any_values)
def test_coerce_runs_what_coercion_makes_valid(schema: dict[str, object], value: object) -> None:
    """Under ``Coerce()``: run exactly when the arguments or their coercion validate, with
    the validated coercion; ``coerced`` only then."""
    received: list[dict[str, object]] = []

    def run(**arguments: object) -> str:
        received.append(arguments)
        return "ok"

    item = Tool.from_schema("t", "", tool_for(schema).parameters, run)
    arguments = {"v": value}
    text = json.dumps(arguments)
    policy = RunPolicy(invalid_args=Coerce())
    calls = [ToolCall("c", "t", text)]
    result = dispatch_sync(calls, Registry.of(item), policy=policy)
    check_dispatch_invariants(calls, result, [item], policy=policy)
    recoveries = [e.recovery for e in result.events if isinstance(e, InvalidToolArgs)]
    coerced = coerce_scalars(item.parameters, arguments)
    if _valid(item, arguments):
        assert ([arguments], []) == (received, recoveries)
    elif coerced is not None and _valid(item, coerced):
        assert ([item.validate(coerced)], ["coerced"]) == (received, recoveries)  # type: ignore[arg-type]
    else:
        assert ([], ["tool_error"]) == (received, recoveries)


@given(
    any_schemas, any_values, st.sampled_from([RunPolicy(), NormalizeThenReturnToolError(), Fail()])
)
def test_never_without_the_policy(schema: dict[str, object], value: object, choice: object) -> None:
    """Under every other policy a call runs exactly when its arguments validate as sent."""
    policy = choice if isinstance(choice, RunPolicy) else RunPolicy(invalid_args=choice)  # type: ignore[arg-type]
    received: list[object] = []
    item = Tool.from_schema("t", "", tool_for(schema).parameters, lambda **kw: received.append(kw))
    arguments = {"v": value}
    calls = [ToolCall("c", "t", json.dumps(arguments))]
    try:
        result = dispatch_sync(calls, Registry.of(item), policy=policy)
    except DispatchAborted as aborted:  # (Fail)
        result = aborted.result
    check_dispatch_invariants(calls, result, [item], policy=policy)
    assert "coerced" not in [e.recovery for e in result.events if isinstance(e, InvalidToolArgs)]
    assert ([arguments] if _valid(item, arguments) else []) == received


@tool
def typed(count: int, ratio: float, on: bool, name: str = "", either: int | str = 0) -> str:
    """Record."""
    return json.dumps([count, ratio, on, name, either])


@given(valid_arguments(typed), st.sets(st.sampled_from(["count", "ratio", "on"])))
def test_quoting_scalars_changes_nothing_the_tool_gets(
    arguments: dict[str, object], quoted: set[str]
) -> None:
    """Valid arguments are left as they are; with some numbers and booleans quoted the tool
    gets the same values under ``Coerce()``, and nothing runs without it."""
    assert coerce_scalars(typed.parameters, arguments) is None
    sent = {k: json.dumps(v) if k in quoted else v for k, v in arguments.items()}
    policy = RunPolicy(invalid_args=Coerce())
    expected = dispatch_sync([ToolCall("c", "typed", arguments)], [typed]).messages[0].content
    got = dispatch_sync([ToolCall("c", "typed", sent)], [typed], policy=policy).messages[0]
    assert expected == got.content
    if quoted:
        assert dispatch_sync([ToolCall("c", "typed", sent)], [typed]).messages[0].is_error
