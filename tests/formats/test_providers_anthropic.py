"""Tests for `tinytools.formats.anthropic`."""

from __future__ import annotations

import pytest
from recorded import recorded

from tinytools import Tool, ToolCall, ToolMessage
from tinytools.formats import anthropic

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "$defs": {"Unused": {"type": "string"}},
}
weather = Tool.from_schema("get_weather", "Weather for a city.", SCHEMA)


class TestDeclarations:
    def test_shape(self) -> None:
        """Each tool is name, description and its schema unchanged as input_schema."""
        expected = [
            {"name": "get_weather", "description": "Weather for a city.", "input_schema": SCHEMA}
        ]
        assert expected == anthropic.declarations([weather])


class TestParseCalls:
    def test_recorded_message(self) -> None:
        """Each tool_use block becomes a call with its decoded input; text is skipped."""
        message = recorded("anthropic_message.json")
        expected = [
            ToolCall("toolu_01A09q90qw90lq917835lq9", "get_weather", {"city": "Paris"}),
            ToolCall(
                "toolu_01B7sTSkWvXgRZ6tS8EdTn3d", "get_weather", {"city": "Oslo", "unit": "c"}
            ),
        ]
        assert expected == anthropic.parse_calls(message)
        assert expected == anthropic.parse_calls(message["content"])

    def test_server_tools_skipped(self) -> None:
        """Blocks of tools Anthropic runs itself are not calls for us."""
        block = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
        assert [] == anthropic.parse_calls({"content": [block]})

    @pytest.mark.parametrize(
        ("value", "text", "kind"),
        [('{"city": "Paris"}', '"{\\"city\\": \\"Paris\\"}"', "a string"), (None, "null", "null")],
    )
    def test_non_object_input_fails_closed(self, value: object, text: str, kind: str) -> None:
        """An input that is not an object is kept as JSON text, with the reason."""
        block = {"type": "tool_use", "id": "t1", "name": "get_weather", "input": value}
        reason = f"the arguments must be a JSON object, not {kind}"
        assert [ToolCall("t1", "get_weather", text, reason)] == anthropic.parse_calls([block])

    def test_not_a_message(self) -> None:
        """Something without a content list is a clear ValueError."""
        with pytest.raises(ValueError, match="expected an Anthropic message"):
            anthropic.parse_calls({"content": "hello"})


class TestToolResults:
    def test_one_user_message(self) -> None:
        """All results of a turn go in one user message, errors flagged."""
        messages = [
            ToolMessage(tool_call_id="t1", name="f", content="21°C"),
            ToolMessage(tool_call_id="t2", name="f", content="city not found", is_error=True),
        ]
        expected = [
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": "21°C",
                        "is_error": False,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "t2",
                        "content": "city not found",
                        "is_error": True,
                    },
                ],
            }
        ]
        assert expected == anthropic.tool_results(messages)

    def test_none(self) -> None:
        """No results give no message."""
        assert [] == anthropic.tool_results([])
