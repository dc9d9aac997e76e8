"""Tests for `tinytools.formats.mcp`."""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Literal, TypedDict

import attrs
import msgspec
import pytest
from recorded import recorded

from tinytools import Tool, ToolCall, ToolMessage, ToolPolicy, ToolResult, dispatch_sync, tool
from tinytools.formats import mcp, synthetic_id

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
weather = Tool.from_schema("get_weather", "Weather for a city.", SCHEMA)


class TestDeclarations:
    def test_unclassified_has_no_annotations(self) -> None:
        """An unclassified tool is declared without hints (clients assume the worst)."""
        expected = [
            {"name": "get_weather", "description": "Weather for a city.", "inputSchema": SCHEMA}
        ]
        assert expected == mcp.declarations([weather])

    def test_read_only(self) -> None:
        """A read-only tool says so, and whether it reaches the outside world."""
        policy = ToolPolicy.read_only().with_side_effects(network=True)
        (declaration,) = mcp.declarations([attrs.evolve(weather, policy=policy)])
        assert {"readOnlyHint": True, "openWorldHint": True} == declaration["annotations"]

    def test_writing_tool(self) -> None:
        """A writing tool states whether it is destructive and idempotent."""
        policy = (
            ToolPolicy.classified()
            .with_side_effects(destructive=True, writes_files=True)
            .with_runtime(idempotent=True)
        )
        expected = {
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": True,
            "openWorldHint": False,
        }
        assert expected == mcp.hints(attrs.evolve(weather, policy=policy))


class TestParseCalls:
    def test_recorded_batch(self) -> None:
        """tools/call requests become calls keyed by their JSON-RPC id; others are skipped."""
        batch = recorded("mcp_tools_call.json")
        expected = [
            ToolCall("7", "get_weather", {"city": "Paris"}),
            ToolCall("req-8", "plot", {"points": [{"x": 1, "y": 2}]}),
        ]
        assert expected == mcp.parse_calls(batch)
        assert expected[:1] == mcp.parse_calls(batch[0])

    def test_arguments_optional(self) -> None:
        """MCP lets a call omit its arguments: that reads as no arguments."""
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping"}}
        assert [ToolCall("1", "ping", {})] == mcp.parse_calls(request)

    def test_fails_closed(self) -> None:
        """Non-object arguments, or no params at all, give invalid calls."""
        requests = [
            {"id": 1, "method": "tools/call", "params": {"name": "ping", "arguments": "x=1"}},
            {"method": "tools/call"},
        ]
        first, second = mcp.parse_calls(requests)
        reason = "the arguments must be a JSON object, not a string"
        assert ToolCall("1", "ping", '"x=1"', reason) == first
        assert synthetic_id(json.dumps(requests[1], separators=(",", ":")), 1) == second.id
        assert ("", "null") == (second.name, second.arguments)
        assert "no tool name" in str(second.invalid)

    def test_not_a_request(self) -> None:
        """Something that is not a request is a clear ValueError."""
        with pytest.raises(ValueError, match="expected a JSON-RPC request"):
            mcp.parse_calls([1])


class TestToolResults:
    def test_results(self) -> None:
        """Each message is a CallToolResult; an object artifact is the structured content."""
        messages = [
            ToolMessage(tool_call_id="7", name="f", content='{"t":21}', artifact={"t": 21}),
            ToolMessage(tool_call_id="8", name="g", content="boom", is_error=True, artifact=[1]),
        ]
        expected = [
            {
                "content": [{"type": "text", "text": '{"t":21}'}],
                "isError": False,
                "structuredContent": {"t": 21},
            },
            {"content": [{"type": "text", "text": "boom"}], "isError": True},
        ]
        assert expected == mcp.tool_results(messages)

    def test_other_values_wrapped(self) -> None:
        """A value that is no object is sent as ``{"result": value}`` (what output_schema
        declares for its type); an error's never is."""
        messages = [
            ToolMessage(tool_call_id="7", name="f", content="[1]", artifact=[1]),
            ToolMessage(tool_call_id="8", name="f", content="0", artifact=0),
            ToolMessage(tool_call_id="9", name="f", content="no", is_error=True, artifact=[1]),
        ]
        got = [answer.get("structuredContent") for answer in mcp.tool_results(messages)]
        assert [{"result": [1]}, {"result": 0}, None] == got

    def test_structured_off(self) -> None:
        """structured=False keeps every artifact on the host."""
        message = ToolMessage(tool_call_id="7", name="f", content="{}", artifact={"secret": 1})
        assert "structuredContent" not in mcp.tool_results([message], structured=False)[0]

    def test_unencodable_artifact_stays(self) -> None:
        """An artifact that is not JSON is never sent."""
        message = ToolMessage(tool_call_id="7", name="f", content="x", artifact={"f": object()})
        assert "structuredContent" not in mcp.tool_results([message])[0]


class TestResultsFromDispatch:
    def test_structured_output_of_a_dispatched_call(self) -> None:
        """A dict a tool returned through dispatch becomes the result's structuredContent."""
        from tinytools import ToolCall, dispatch_sync, tool
        from tinytools.formats import mcp as mcp_format

        @tool
        def weather(city: str) -> dict[str, object]:
            """Weather."""
            return {"city": city, "t": 21}

        result = dispatch_sync([ToolCall("1", "weather", '{"city": "Oslo"}')], [weather])
        [answer] = mcp_format.tool_results(result.messages)
        assert {"city": "Oslo", "t": 21} == answer["structuredContent"]


@dataclasses.dataclass
class Forecast:
    city: str
    days: list[int]


class Reading(TypedDict):
    value: int


class Point(msgspec.Struct):
    x: int


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class TestOutputSchema:
    """`mcp.output_schema` and the ``outputSchema`` of declarations."""

    def test_structured_returns(self) -> None:
        """Dataclasses, TypedDicts, Structs and dicts declare an object output schema."""

        @tool
        def forecast(city: str) -> Forecast:
            """Forecast."""
            return Forecast(city, [])

        @tool
        async def reading() -> Reading:
            """Reading."""
            return {"value": 1}

        @tool
        def point() -> Point:
            """Point."""
            return Point(1)

        @tool
        def counts() -> dict[str, int]:
            """Counts."""
            return {}

        schema = mcp.output_schema(forecast)
        assert schema is not None
        assert ("object", ["city", "days"]) == (schema["type"], schema["required"])
        for structured in (reading, point, counts):
            assert "object" == (mcp.output_schema(structured) or {}).get("type")

    def test_unstructured_returns(self) -> None:
        """Text, optional values, values that may or may not be objects, ToolResult and
        schema-only tools declare none."""

        @tool
        def text() -> str:
            """Text."""
            return ""

        @tool
        def maybe() -> dict[str, int] | None:
            """Maybe."""
            return None

        @tool
        def maybe_count() -> int | None:
            """Maybe a count."""
            return None

        @tool
        def mixed() -> int | dict[str, int]:
            """A number or an object."""
            return 1

        @tool
        def word() -> Literal["yes", "no"]:
            """A word."""
            return "yes"

        @tool
        def full() -> ToolResult:
            """Full."""
            return ToolResult.success("x")

        @tool
        def nothing() -> None:
            """Nothing."""

        for unstructured in (text, maybe, maybe_count, mixed, word, full, nothing, weather):
            assert mcp.output_schema(unstructured) is None, unstructured.name

    def test_other_values_wrapped(self) -> None:
        """Defect: a tool returning a list (a number, a boolean) had no outputSchema, as
        MCP's must describe an object. It declares ``{"result": <the type>}``, and each
        result's structuredContent is the value so wrapped, valid in MCP's default
        dialect (2020-12), as the SDK's client checks it."""
        from jsonschema import Draft202012Validator

        @tool
        def items(n: int) -> list[int]:
            """Items."""
            return list(range(n))

        @tool
        def points() -> list[Point]:
            """Points."""
            return [Point(1), Point(2)]

        @tool
        def pair() -> tuple[int, float]:
            """A pair."""
            return (1, 2.5)

        @tool
        def count() -> int:
            """A count."""
            return 3

        @tool
        def level() -> Level:
            """A level."""
            return Level.HIGH

        @tool
        def flag() -> bool:
            """A flag."""
            return False

        expected = {
            "type": "object",
            "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
            "required": ["result"],
        }
        assert expected == mcp.output_schema(items)
        tools = [items, points, pair, count, level, flag]
        calls = [
            ToolCall(str(i), t.name, {"n": 2} if t is items else {}) for i, t in enumerate(tools)
        ]
        answers = mcp.tool_results(dispatch_sync(calls, tools).messages)
        values = [[0, 1], [{"x": 1}, {"x": 2}], [1, 2.5], 3, 2, False]
        for each, answer, value in zip(tools, answers, values, strict=True):
            schema = mcp.output_schema(each)
            assert schema is not None, each.name
            assert {"result": value} == answer["structuredContent"]
            Draft202012Validator(schema).validate(answer["structuredContent"])

    def test_declared_and_honoured(self) -> None:
        """The declaration carries the schema, the SDK accepts it, and results conform."""
        import fastjsonschema
        from mcp import types

        @tool(policy=ToolPolicy.read_only())
        def forecast(city: str) -> Forecast:
            """Forecast."""
            return Forecast(city, [1, 2])

        [declaration] = mcp.declarations([forecast])
        types.Tool.model_validate(declaration)
        result = dispatch_sync([ToolCall("1", "forecast", {"city": "Oslo"})], [forecast])
        [answer] = mcp.tool_results(result.messages)
        assert {"city": "Oslo", "days": [1, 2]} == answer["structuredContent"]
        fastjsonschema.compile(declaration["outputSchema"])(answer["structuredContent"])

    def test_every_classified_policy_is_annotated(self) -> None:
        """A classified policy, even with nothing declared, states all its hints."""
        from mcp import types

        tool = attrs.evolve(weather, policy=ToolPolicy.classified())
        [declaration] = mcp.declarations([tool])
        expected = {
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": False,
            "openWorldHint": False,
        }
        assert expected == declaration["annotations"]
        types.ToolAnnotations.model_validate(declaration["annotations"])
