"""Tests for `tinytools.formats.gemini`."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, Literal

import pytest
from recorded import recorded

from tinytools import Tool, ToolCall, ToolMessage, tool
from tinytools.formats import gemini, synthetic_id


@dataclasses.dataclass
class Node:
    value: int
    children: list[Node]


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


@tool
def plot(points: list[Point], level: Literal[1, 2] = 1, tree: Node | None = None) -> None:
    """Plot points.

    Args:
        points: The points.
        level: Detail.
        tree: A tree.
    """


@tool
def ping() -> str:
    """Check the service is up."""
    return "pong"


weather = Tool.from_schema(
    "get_weather",
    "Weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def project(node: Mapping[str, object], **defs: object) -> object:
    """The projection of one property schema."""
    schema = {"type": "object", "properties": {"v": node}, "$defs": defs}
    return gemini.subset_schema(schema)["properties"]["v"]  # type: ignore[index]


def declared(tools: list[Any], *, json_schema: bool = False) -> list[Any]:
    """The function declarations of the one Gemini tool."""
    (gemini_tool,) = gemini.declarations(tools, json_schema=json_schema)
    return gemini_tool["functionDeclarations"]  # type: ignore[return-value]


class TestDeclarations:
    def test_one_tool_of_declarations(self) -> None:
        """All declarations go in one Gemini tool, with the REST spelling."""
        expected = [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Weather for a city.",
                        "parameters": weather.parameters,
                    },
                    {"name": "ping", "description": "Check the service is up."},
                ]
            }
        ]
        assert expected == gemini.declarations([weather, ping])
        assert [] == gemini.declarations([])

    def test_json_schema(self) -> None:
        """With json_schema the schema goes unchanged as parametersJsonSchema."""
        (declaration,) = declared([plot], json_schema=True)
        assert plot.parameters == declaration["parametersJsonSchema"]

    def test_plot(self) -> None:
        """References are inlined, recursion is cut, non-string enums and defaults are noted."""
        (declaration,) = declared([plot])
        properties = declaration["parameters"]["properties"]
        point = {
            "type": "object",
            "properties": {
                "x": {"type": "number"},
                "y": {"type": "number", "description": "default=0.0"},
            },
            "required": ["x"],
        }
        assert {"description": "The points.", "type": "array", "items": point} == properties[
            "points"
        ]
        assert {"description": "Detail. (default=1, enum=[1,2])", "type": "integer"} == (
            properties["level"]
        )
        children = properties["tree"]["properties"]["children"]
        cut = {
            "type": "object",
            "description": "Same shape as the enclosing Node; not expanded again",
        }
        assert {"type": "array", "items": cut} == children
        assert True is properties["tree"]["nullable"]


class TestSubsetSchema:
    @pytest.mark.parametrize(
        ("node", "expected"),
        [
            (
                {"anyOf": [{"type": "string"}, {"type": "null"}]},
                {"type": "string", "nullable": True},
            ),
            ({"type": ["integer", "null"]}, {"type": "integer", "nullable": True}),
            (
                {"type": ["integer", "string"]},
                {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            ),
            (
                {"oneOf": [{"type": "integer"}, {"type": "string"}]},
                {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            ),
            (
                {"allOf": [{"type": "string"}], "description": "D."},
                {"type": "string", "description": "D."},
            ),
            ({"const": "fixed"}, {"enum": ["fixed"], "type": "string"}),
            ({"const": 3, "type": "integer"}, {"type": "integer", "description": "enum=[3]"}),
            ({"enum": [1, "a"]}, {"description": 'enum=[1,"a"]'}),
            ({"enum": [True]}, {"type": "boolean", "description": "enum=[true]"}),
            ({"type": "string", "format": "date-time"}, {"type": "string", "format": "date-time"}),
            (
                {"type": "string", "format": "uuid"},
                {"type": "string", "description": 'format="uuid"'},
            ),
            ({"type": "integer", "format": "int64"}, {"type": "integer", "format": "int64"}),
            (
                {"type": "object", "additionalProperties": {"type": "string"}, "title": "Map"},
                {"type": "object"},
            ),
            (
                {"type": "number", "exclusiveMinimum": 0, "maximum": 9},
                {"type": "number", "maximum": 9, "description": "exclusiveMinimum=0"},
            ),
            (
                {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
                {
                    "type": "array",
                    "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                    "minItems": 2,
                    "maxItems": 2,
                    "description": 'in order: {"type":"string"}, {"type":"integer"}',
                },
            ),
            ({"$ref": "#/nowhere"}, {"description": '$ref="#/nowhere" cannot be followed'}),
        ],
    )
    def test_keywords(self, node: dict[str, object], expected: object) -> None:
        """Each construct is rewritten into the subset, or stated in the description."""
        assert expected == project(node)

    def test_ref_siblings_win(self) -> None:
        """A reference's own description replaces the definition's."""
        expected = {"type": "string", "description": "Here."}
        assert expected == project(
            {"$ref": "#/$defs/S", "description": "Here."},
            S={"type": "string", "description": "There."},
        )

    def test_nullable_ref_keeps_both_descriptions(self) -> None:
        """A nullable reference merges the definition in, keeping both descriptions."""
        node = {"anyOf": [{"$ref": "#/$defs/S"}, {"type": "null"}], "description": "Outer."}
        expected = {"type": "string", "description": "Outer. (Inner.)", "nullable": True}
        assert expected == project(node, S={"type": "string", "description": "Inner."})

    def test_root_recursion(self) -> None:
        """A reference to the root is cut like any recursion."""
        schema = {"type": "object", "properties": {"again": {"$ref": "#"}}}
        expected = {
            "type": "object",
            "description": "Same shape as the enclosing arguments object; not expanded again",
        }
        assert expected == gemini.subset_schema(schema)["properties"]["again"]  # type: ignore[index]

    def test_required_follows_properties(self) -> None:
        """Required names without a property are dropped."""
        schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]}
        assert ["a"] == gemini.subset_schema(schema)["required"]


class TestParseCalls:
    def test_recorded_response(self) -> None:
        """Function-call parts become calls with synthetic ids derived from the response."""
        response = recorded("gemini_response.json")
        source = json.dumps(response, separators=(",", ":"), ensure_ascii=False)
        expected = [
            ToolCall(synthetic_id(source, 0), "get_weather", {"city": "Paris"}),
            ToolCall(synthetic_id(source, 1), "get_weather", {"city": "Oslo", "unit": "c"}),
        ]
        assert expected == gemini.parse_calls(response)

    @pytest.mark.parametrize(
        "shape",
        [
            lambda parts: {"candidates": [{"content": {"parts": parts}}]},
            lambda parts: {"content": {"parts": parts}},
            lambda parts: {"role": "model", "parts": parts},
            lambda parts: parts,
        ],
    )
    def test_shapes_and_ids(self, shape: object) -> None:
        """A response, candidate, content or parts list is read; a sent id is kept."""
        parts = [{"function_call": {"id": "fc-1", "name": "ping", "args": None}}, {"text": "x"}]
        assert [ToolCall("fc-1", "ping", {})] == gemini.parse_calls(shape(parts))  # type: ignore[operator]

    def test_no_candidates(self) -> None:
        """A response without candidates (blocked prompt) has no calls."""
        assert [] == gemini.parse_calls({"candidates": [], "promptFeedback": {}})

    def test_non_object_args_fail_closed(self) -> None:
        """Arguments that are not an object are kept as JSON text, with the reason."""
        parts = [{"functionCall": {"id": "fc-1", "name": "ping", "args": [1]}}]
        reason = "the arguments must be a JSON object, not an array"
        assert [ToolCall("fc-1", "ping", "[1]", reason)] == gemini.parse_calls(parts)

    def test_not_a_response(self) -> None:
        """A wrong shape is a ValueError; text is a TypeError naming the text parsers."""
        with pytest.raises(ValueError, match="expected a Gemini response"):
            gemini.parse_calls({"candidates": [{"content": {"parts": "x"}}]})
        with pytest.raises(TypeError, match=r"not str; .*json_in_tag\.parse"):
            gemini.parse_calls("text")


class TestToolResults:
    def test_one_content(self) -> None:
        """Results go as one user content; errors under `error`; real ids are echoed."""
        messages = [
            ToolMessage(tool_call_id="fc-1", name="ping", content="pong"),
            ToolMessage(tool_call_id=synthetic_id("x", 0), name="f", content="bad", is_error=True),
        ]
        expected = [
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "ping",
                            "response": {"output": "pong"},
                            "id": "fc-1",
                        }
                    },
                    {"functionResponse": {"name": "f", "response": {"error": "bad"}}},
                ],
            }
        ]
        assert expected == gemini.tool_results(messages)
        assert [] == gemini.tool_results([])


class TestFunctionResponseValues:
    def test_objects_not_strings(self) -> None:
        """A tool's dict or list result is sent as JSON, not as JSON-encoded text."""
        from google.genai import types

        from tinytools import ToolCall, dispatch_sync, tool

        @tool
        def forecast(city: str) -> dict[str, object]:
            """Forecast."""
            return {"city": city, "days": [1, 2]}

        @tool
        def note() -> str:
            """A note."""
            return '{"looks": "like JSON"'

        calls = [ToolCall("a", "forecast", {"city": "Oslo"}), ToolCall("b", "note", {})]
        [content] = gemini.tool_results(dispatch_sync(calls, [forecast, note]).messages)
        responses = [p["functionResponse"]["response"] for p in content["parts"]]
        assert [
            {"output": {"city": "Oslo", "days": [1, 2]}},
            {"output": '{"looks": "like JSON"'},
        ] == responses
        types.Content.model_validate(content)

    def test_errors_stay_text(self) -> None:
        """An error result is the error text."""
        message = ToolMessage(tool_call_id="a", name="f", content='{"x": 1}', is_error=True)
        [content] = gemini.tool_results([message])
        assert {"error": '{"x": 1}'} == content["parts"][0]["functionResponse"]["response"]
