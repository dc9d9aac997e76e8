"""Tests for `tinytools._declare.validate`, through `Tool.validate`."""

from __future__ import annotations

import dataclasses
import datetime
import enum
from typing import TypedDict

import msgspec
import pytest

from tinytools import (
    CallId,
    Inject,
    Tool,
    ToolArgumentsError,
    ToolCall,
    ToolDefinitionError,
    dispatch_sync,
    tool,
)
from tinytools._declare.schema_dialect import Enforce
from tinytools.repair import recover_relaxed_object


class Size(enum.Enum):
    S = "s"
    L = "l"


@dataclasses.dataclass
class Line:
    sku: str
    qty: int


class Address(TypedDict):
    city: str


class Point(msgspec.Struct):
    x: int
    y: int


@tool
def order(
    lines: list[Line],
    ship_to: Address,
    size: Size,
    when: datetime.date,
    at: Point,
    note: str = "",
) -> None:
    """Place an order."""


def error_of(t: Tool[..., object], arguments: object) -> ToolArgumentsError:
    """The validation error ``arguments`` raise for ``t``."""
    with pytest.raises(ToolArgumentsError) as info:
        t.validate(arguments)  # type: ignore[arg-type]
    return info.value


GOOD = (
    '{"lines": [{"sku": "a", "qty": 2}], "ship_to": {"city": "Paris"}, "size": "l",'
    ' "when": "2024-05-01", "at": {"x": 1, "y": 2}}'
)


class TestStructValidator:
    def test_converts_to_parameter_types(self) -> None:
        """Raw JSON arrives as the parameters' Python types, defaults filled."""
        expected = {
            "lines": [Line("a", 2)],
            "ship_to": {"city": "Paris"},
            "size": Size.L,
            "when": datetime.date(2024, 5, 1),
            "at": Point(1, 2),
            "note": "",
        }
        assert expected == order.validate(GOOD)
        assert expected == order.validate(GOOD.encode())
        assert expected == order.validate(msgspec.json.decode(GOOD))

    def test_no_silent_coercion(self) -> None:
        """A string is never coerced to a number, nor a number to a string."""
        error = error_of(order, GOOD.replace('"qty": 2', '"qty": "2"'))
        assert (error.path, error.detail) == ("$.lines[0].qty", "Expected `integer`, got `string`")
        assert (
            error_of(order, GOOD.replace('"a"', "1")).detail == "Expected `string`, got `integer`"
        )

    def test_integral_float_is_an_integer(self) -> None:
        """`2.0` is accepted for an integer, as JSON Schema defines it; `2.5` is not."""
        assert [Line("a", 2)] == order.validate(GOOD.replace('"qty": 2', '"qty": 2.0'))["lines"]
        error = error_of(order, GOOD.replace('"qty": 2', '"qty": 2.5'))
        assert (error.path, error.detail) == ("$.lines[0].qty", "Expected `integer`, got `number`")

    def test_message_for_the_model(self) -> None:
        """The message names the tool, the JSON path, what was expected and what was found."""
        error = error_of(order, GOOD.replace('"city": "Paris"', '"city": null'))
        expected = (
            "Invalid arguments for tool `order` at `$.ship_to.city`: Expected `string`, got `null`."
        )
        assert str(error) == expected
        assert not error.malformed

    def test_missing_and_unknown_fields(self) -> None:
        """Missing required and unknown fields are reported by name."""
        assert (
            error_of(order, GOOD.replace('"size": "l",', "")).detail
            == "Object missing required field `size`"
        )
        unknown = error_of(order, GOOD[:-1] + ', "extra": 1}')
        assert (unknown.path, unknown.detail) == ("$", "Object contains unknown field `extra`")

    def test_malformed_json(self) -> None:
        """Text that is not JSON is reported as malformed, never replaced by `{}`."""
        error = error_of(order, '{"lines": [')
        assert error.malformed
        assert "are not valid JSON" in str(error)

    def test_non_object(self) -> None:
        """A JSON value that is not an object is a schema violation at `$`."""
        assert error_of(order, "[]").detail == "Expected `object`, got `array`"


SCHEMA = {
    "type": "object",
    "properties": {
        "q": {"type": "string", "minLength": 3},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
        "mode": {"const": "fast"},
        "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
    },
    "required": ["q"],
    "additionalProperties": False,
}


class TestSchemaValidator:
    def test_subset_enforced(self) -> None:
        """type, properties, required, additionalProperties, items, enum and const are enforced."""
        t = Tool.from_schema("t", "", SCHEMA, enforce="subset")
        assert t.validate('{"q": "x", "tags": ["a"]}') == {"q": "x", "tags": ["a"]}
        assert (
            error_of(t, {"q": 1}).path,
            error_of(t, {"q": 1}).detail,
        ) == ("$.q", "Expected `string`, got `integer`")
        assert error_of(t, {}).detail == "Object missing required field `q`"
        assert error_of(t, {"q": "x", "z": 1}).detail == "Object contains unknown field `z`"
        assert error_of(t, {"q": "x", "tags": ["a", "c"]}).path == "$.tags[1]"
        assert error_of(t, {"q": "x", "mode": "slow"}).detail == 'Expected "fast", got "slow"'

    def test_other_keywords_not_enforced(self) -> None:
        """Under the subset, other keywords stay in the schema for providers, not enforced."""
        t = Tool.from_schema("t", "", SCHEMA, enforce="subset")
        assert t.validate({"q": "x"}) == {"q": "x"}
        assert t.parameters["properties"]["q"]["minLength"] == 3  # type: ignore[index]

    def test_draft7_enforces_everything(self) -> None:
        """`enforce="draft7"` enforces every draft-7 keyword."""
        t = Tool.from_schema("t", "", SCHEMA, enforce="draft7")
        assert error_of(t, {"q": "x"}).path == "$.q"

    @pytest.mark.parametrize("enforce", ["full", "subset"])
    def test_prefix_items_mean_tuples(self, enforce: Enforce) -> None:
        """2020-12 `prefixItems` (the default dialect) are enforced as positions."""
        t = Tool.from_schema("t", "", SCHEMA, enforce=enforce)
        assert t.validate({"q": "xyz", "pair": [1, "a"]}) == {"q": "xyz", "pair": [1, "a"]}
        assert error_of(t, {"q": "xyz", "pair": [1, 2]}).path == "$.pair[1]"

    def test_prefix_items_mean_nothing_in_draft7(self) -> None:
        """Draft 7 has no `prefixItems`: like any unknown keyword, it is ignored there."""
        t = Tool.from_schema("t", "", SCHEMA, enforce="draft7")
        assert {"q": "xyz", "pair": [1, 2]} == t.validate({"q": "xyz", "pair": [1, 2]})

    def test_returns_a_copy(self) -> None:
        """The caller's mapping is never modified or returned."""
        given = {"q": "xyz"}
        result = Tool.from_schema("t", "", SCHEMA).validate(given)
        assert given == result
        assert given is not result

    def test_malformed_and_non_object(self) -> None:
        """Malformed JSON and non-objects are refused with model-ready messages."""
        t = Tool.from_schema("t", "", SCHEMA)
        assert error_of(t, "{q:").malformed
        assert error_of(t, '"q"').detail == "Expected `object`, got `string`"

    @pytest.mark.parametrize("enforce", ["full", "subset", "draft7", "draft2020-12"])
    def test_bad_schema_is_a_definition_error(self, enforce: Enforce) -> None:
        """A schema that is not JSON Schema is refused when the tool is built, naming the path."""
        schema = {"type": "object", "properties": {"a": {"type": "nope"}}}
        with pytest.raises(ToolDefinitionError, match=r"at `\$\.properties\.a\.type`: \"nope\""):
            Tool.from_schema("t", "", schema, enforce=enforce)

    def test_schema_is_copied(self) -> None:
        """Editing the caller's schema afterwards does not change the tool."""
        schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
        t = Tool.from_schema("t", "", schema)
        schema["properties"]["a"]["type"] = "string"  # type: ignore[index]
        assert t.validate({"a": 1}) == {"a": 1}
        assert t.parameters["properties"]["a"]["type"] == "integer"  # type: ignore[index]

    def test_open_schema_cannot_set_an_injected_parameter(self) -> None:
        """An open schema still refuses the name of an injected parameter, as a violation."""

        def fn(q: str, cid: Inject[CallId]) -> str:
            return f"{q} {cid}"

        t = Tool.from_schema(
            "t", "", {"type": "object", "properties": {"q": {"type": "string"}}}, fn
        )
        assert {"q": "a", "other": 1} == t.validate({"q": "a", "other": 1})
        error = error_of(t, {"q": "a", "cid": "forged"})
        assert ("$", "Object contains unknown field `cid`") == (error.path, error.detail)
        result = dispatch_sync([ToolCall("1", "t", {"q": "a", "cid": "forged"})], [t])
        assert ["error"] == [message.status for message in result.messages]
        assert () == result.executed

    def test_hints_of_schema_described_parameters_are_not_needed(self) -> None:
        """The schema types the model's parameters: their hints need not resolve; an
        unreadable hint on a parameter the schema does not describe is still refused."""

        def fn(q: NotDefinedAnywhere, cid: Inject[CallId]) -> str:  # type: ignore[name-defined]  # noqa: F821
            return f"{q} {cid}"

        def hidden(q: str, extra: NotDefinedAnywhere) -> str:  # type: ignore[name-defined]  # noqa: F821
            return q

        schema = {"type": "object", "properties": {"q": {"type": "string"}}}
        t = Tool.from_schema("t", "", schema, fn)
        assert ("cid",) == t.injected
        with pytest.raises(ToolDefinitionError, match="parameter `extra`: its type hint"):
            Tool.from_schema("t", "", schema, hidden)

    def test_top_level_must_be_object(self) -> None:
        """A schema whose top level is not an object schema is refused."""
        with pytest.raises(ToolDefinitionError, match="object schema"):
            Tool.from_schema("t", "", {"type": "array"})


@tool
def anything(x: object = None) -> None:
    """Take any JSON value."""


class TestDepth:
    @pytest.mark.parametrize(
        "t", [anything, Tool.from_schema("t", "", {"type": "object"})], ids=["struct", "schema"]
    )
    def test_deep_nesting_is_an_error_value(self, t: Tool[..., object]) -> None:
        """Strictly valid but absurdly deep JSON is a clear error, never a RecursionError."""
        raw = '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"
        error = error_of(t, raw)
        assert error.malformed
        assert "nested too deeply" in str(error)


@tool
def search(q: str = "", limit: int = 10) -> None:
    """Search; every parameter optional, so `{}` is valid (malformed text must not become it)."""


SEARCH = Tool.from_schema(
    "search",
    "Search; every parameter optional.",
    {"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}}},
)
#: Text that is not one JSON value: cut off, followed by more, or no JSON at all.
NOT_JSON = {
    "truncated": '{"q": "abc"',
    "truncated in a string": '{"q": "ab',
    "truncated bytes": b'{"q": "abc"',
    "trailing garbage": '{"q": "abc"} and more',
    "two objects": '{"q": "abc"}{"q": "abd"}',
    "a closing brace too many": '{"q": "abc"}}',
    "bare word": "abc",
    "bare words": "search for abc",
    "empty": "",
    "only whitespace": " \n\t",
    "NaN": '{"limit": NaN}',
    "a byte order mark": '\ufeff{"q": "abc"}',
}
#: Relaxed JSON: what a model writes and `tinytools.repair` recovers, which only dispatch
#: repairs (and reports as repaired); `Tool.validate` takes strict JSON.
RELAXED = {
    "unquoted key": "{q: 'abc'}",
    "single quotes": "{'q': 'abc'}",
    "trailing comma": '{"q": "abc",}',
    "fenced": '```json\n{"q": "abc"}\n```',
    "Python literal": "{'q': 'abc', 'limit': None}",
}
BOTH = pytest.mark.parametrize("t", [search, SEARCH], ids=["function", "schema"])


class TestMalformedText:
    """Text that is not JSON is refused with a ``malformed`` ToolArgumentsError naming the
    tool, by the validator itself, for a function tool and a schema tool alike (only
    dispatch's tests caught a validator that read malformed text as ``{}``)."""

    @BOTH
    @pytest.mark.parametrize("text", list(NOT_JSON.values()), ids=list(NOT_JSON))
    def test_not_json_is_refused(self, t: Tool[..., object], text: str | bytes) -> None:
        error = error_of(t, text)
        assert error.malformed
        assert str(error).startswith(f"Arguments for tool `{t.name}` are not valid JSON")

    @BOTH
    @pytest.mark.parametrize("text", list(RELAXED.values()), ids=list(RELAXED))
    def test_relaxed_json_is_refused(self, t: Tool[..., object], text: str) -> None:
        """Relaxed JSON is repair's to recover (in dispatch), never the validator's."""
        assert recover_relaxed_object(text) is not None  # (it is relaxed JSON)
        error = error_of(t, text)
        assert error.malformed
        assert str(error).startswith(f"Arguments for tool `{t.name}` are not valid JSON")

    @BOTH
    @pytest.mark.parametrize("text", ["null", "true", "3", '"abc"', '["abc"]'])
    def test_json_that_is_no_object_is_refused(self, t: Tool[..., object], text: str) -> None:
        """JSON, but not an object: a schema error at `$`, not malformed text."""
        error = error_of(t, text)
        assert not error.malformed
        assert error.path == "$"
        assert error.detail.startswith("Expected `object`, got `")

    @BOTH
    def test_strict_json_reads_as_its_object(self, t: Tool[..., object]) -> None:
        assert t.validate({"q": "abc"}) == t.validate('{"q": "abc"}')
        assert t.validate({}) == t.validate(" {} \n")
