"""Tests for `tinytools.formats.openai_responses`."""

from __future__ import annotations

import pytest
from recorded import recorded

from tinytools import Tool, ToolCall, ToolMessage
from tinytools.formats import openai_responses

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"], "default": "c"}},
    "required": ["city"],
}
weather = Tool.from_schema("get_weather", "Weather for a city.", SCHEMA)


class TestDeclarations:
    def test_shape(self) -> None:
        """A flat function tool, with strict turned off explicitly (the API's default is on)."""
        expected = [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": SCHEMA,
                "strict": False,
            }
        ]
        assert expected == openai_responses.declarations([weather])

    def test_strict(self) -> None:
        """Strict mode projects the schema as Chat Completions does."""
        (declaration,) = openai_responses.declarations([weather], strict=True)
        parameters = {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"enum": ["c", "f"], "description": 'default="c"'},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        }
        assert (True, parameters) == (declaration["strict"], declaration["parameters"])


class TestParseCalls:
    def test_recorded_response(self) -> None:
        """Function-call items become calls keyed by call_id; other items are skipped."""
        response = recorded("openai_response.json")
        expected = [
            ToolCall("call_unLAR8MvFNptuiZK6K6HCy5k", "get_weather", '{"city":"Paris"}'),
            ToolCall("call_8rCz3oEHh5k9qS0mCkWQvQ1f", "plot", '{"points":[{"x":1,"y":2}]'),
        ]
        assert expected == openai_responses.parse_calls(response)
        assert expected == openai_responses.parse_calls(response["output"])

    def test_no_calls(self) -> None:
        """A response with only a message has no calls."""
        message = {"type": "message", "role": "assistant", "content": []}
        assert [] == openai_responses.parse_calls({"output": [message]})

    def test_fails_closed(self) -> None:
        """A function call without a name or with non-text arguments is kept as invalid."""
        items = [
            {"type": "function_call", "call_id": "c1", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "f", "arguments": 3},
        ]
        expected = [
            ToolCall("c1", "", "{}", "the call has no tool name (found null)"),
            ToolCall("c2", "f", "3", "the arguments must be JSON text or an object, not a number"),
        ]
        assert expected == openai_responses.parse_calls(items)

    def test_not_a_response(self) -> None:
        """A dict without an output list is a ValueError; a non-response a TypeError."""
        with pytest.raises(ValueError, match="expected a Responses response"):
            openai_responses.parse_calls({"id": "resp_1"})
        for response in (None, "output"):
            with pytest.raises(TypeError, match="takes a Response or its output list"):
                openai_responses.parse_calls(response)


class TestToolResults:
    def test_shape(self) -> None:
        """Each message becomes a function_call_output item with the call's id."""
        messages = [
            ToolMessage(tool_call_id="c1", name="f", content="ok"),
            ToolMessage(tool_call_id="c2", name="g", content="failed", is_error=True),
        ]
        expected = [
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            {"type": "function_call_output", "call_id": "c2", "output": "failed"},
        ]
        assert expected == openai_responses.tool_results(messages)
