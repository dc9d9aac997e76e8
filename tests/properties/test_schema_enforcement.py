"""Properties of whole-schema enforcement for `Tool.from_schema` tools.

Random schemas, drawn from the keywords ``enforce="full"`` claims (bounds, lengths,
patterns, formats, applicators, ``$ref``, the 2020-12 spellings), and random JSON
values. For every pair:

* the verdict is the same for the decoded arguments and for their JSON text, and a
  refusal names the same path either way and is a schema error, never ``malformed``;
* ``enforce="subset"`` accepts whatever ``"full"`` accepts (the subset only drops
  keywords; it is the opt-out, never a stricter check);
* a refusal's path leads to a value inside the arguments (``$``, ``$.a``, ``$.a[0]``),
  never msgspec's ``$[...]`` placeholder;
* nothing but ``ToolArgumentsError`` comes out, whatever the value.

Invariant 3 (no tool runs with arguments that fail its schema) holds through dispatch:
a call is executed exactly when ``Tool.validate`` accepts its arguments.
"""

from __future__ import annotations

import json
import re

import msgspec
from hypothesis import given
from hypothesis import strategies as st
from json_strategies import json_values

from tinytools import Registry, Tool, ToolArgumentsError, ToolCall, dispatch_sync

_LEAVES = [
    {"type": "integer", "minimum": 0},
    {"type": "number", "exclusiveMaximum": 10},
    {"type": "integer", "multipleOf": 3},
    {"type": "string", "minLength": 1, "maxLength": 3},
    {"type": "string", "pattern": "^[a-c]+$"},
    {"type": "string", "format": "date"},
    {"type": "string", "format": "email"},
    {"enum": [1, "a", None, True]},
    {"const": {"k": [1]}},
    {"type": "boolean"},
    {"type": "null"},
    {"$ref": "#/$defs/Small"},
    {},
]

_PATH = re.compile(r"\$(?:\.[A-Za-z_]\w*|\[\d+\]|\[\"(?:[^\"\\]|\\.)*\"\])*")


def _schemas(
    children: st.SearchStrategy[dict[str, object]],
) -> st.SearchStrategy[dict[str, object]]:
    names = st.sampled_from(["a", "b", "c"])
    return st.one_of(
        st.builds(
            lambda props, required, closed: {
                "type": "object",
                "properties": props,
                "required": sorted(set(required) & set(props)),
                **({"additionalProperties": False} if closed else {}),
            },
            st.dictionaries(names, children, max_size=3),
            st.lists(names, max_size=3),
            st.booleans(),
        ),
        st.builds(
            lambda items, n: {"type": "array", "items": items, "minItems": n},
            children,
            st.integers(0, 2),
        ),
        st.builds(
            lambda items: {"type": "array", "prefixItems": items},
            st.lists(children, min_size=1, max_size=2),
        ),
        st.builds(lambda a: {"anyOf": a}, st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda a: {"oneOf": a}, st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda a: {"allOf": a}, st.lists(children, min_size=1, max_size=2)),
        st.builds(lambda n: {"not": n}, children),
        st.builds(lambda i, t: {"if": i, "then": t}, children, children),
        st.builds(lambda s: {"type": "array", "uniqueItems": True, "items": s}, children),
        st.builds(lambda s: {"$ref": "#/$defs/Small", "not": s}, children),
    )


schemas = st.recursive(st.sampled_from(_LEAVES), _schemas, max_leaves=6)


def tool_for(schema: dict[str, object], enforce: str = "full") -> Tool[..., object]:
    parameters = {
        "type": "object",
        "properties": {"v": schema},
        "$defs": {"Small": {"type": "integer", "maximum": 5}},
    }
    return Tool.from_schema("t", "", parameters, enforce=enforce)  # type: ignore[arg-type]


def verdict(tool: Tool[..., object], arguments: object) -> str | None:
    """None when ``tool`` accepts ``arguments``, else the refusal's path."""
    try:
        tool.validate(arguments)  # type: ignore[arg-type]
    except ToolArgumentsError as error:
        refused = error
    else:
        return None
    assert not refused.malformed, str(refused)
    assert _PATH.fullmatch(refused.path), refused.path
    return refused.path


values = json_values() | st.integers(min_value=-(2**70), max_value=2**70)


@given(schemas, values)
def test_verdicts_agree_and_subset_is_looser(schema: dict[str, object], value: object) -> None:
    """Both routes give one verdict at one path; the subset accepts what full accepts."""
    full = tool_for(schema)
    arguments = {"v": value}
    as_dict = verdict(full, arguments)
    assert as_dict == verdict(full, msgspec.json.encode(arguments).decode())
    if as_dict is None:
        assert verdict(tool_for(schema, "subset"), arguments) is None


@given(schemas, values)
def test_dispatch_runs_exactly_the_valid(schema: dict[str, object], value: object) -> None:
    """A call runs exactly when its arguments pass the whole schema (invariant 3)."""
    received: list[object] = []

    def run(v: object = None) -> str:
        received.append(v)
        return "ok"

    tool = Tool.from_schema("t", "", tool_for(schema).parameters, run)
    text = json.dumps({"v": value})
    result = dispatch_sync([ToolCall("c1", "t", text)], Registry.of(tool))
    valid = verdict(tool, text) is None
    assert (("c1",) if valid else ()) == result.executed
    assert ([value] if valid else []) == received
