"""Tests for each provider module's assistant turn (``assistant_message`` / ``assistant_items``)."""

from __future__ import annotations

import pytest

from tinytools import ToolCall, ToolMessage
from tinytools.formats import (
    anthropic,
    coalesce_tool_results,
    gemini,
    mcp,
    openai_chat,
    openai_responses,
    synthetic_id,
)

GOOD = ToolCall("call_1", "get_weather", {"city": "Oslo"})
RAW = ToolCall("call_2", "get_weather", '{"city": "Paris"}')
BROKEN = ToolCall("call_3", "get_weather", '{"city": "Par', "not valid JSON")
SYNTHETIC = ToolCall(synthetic_id("text", 0), "get_weather", {"city": "Rome"})


class TestOpenAIChat:
    def test_shape(self) -> None:
        """Calls become tool_calls with JSON-text arguments; raw text is kept verbatim."""
        expected = {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_3",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Par'},
                },
            ],
        }
        assert expected == openai_chat.assistant_message([GOOD, RAW, BROKEN], "Checking.")

    def test_no_calls(self) -> None:
        """Without calls there is no tool_calls field (the API refuses an empty list)."""
        assert {"role": "assistant", "content": "Hi"} == openai_chat.assistant_message([], "Hi")

    def test_round_trips_through_parse_calls(self) -> None:
        """parse_calls reads back the calls the message holds."""
        message = openai_chat.assistant_message([RAW, BROKEN])
        assert [RAW, ToolCall("call_3", "get_weather", '{"city": "Par')] == (
            openai_chat.parse_calls(message)
        )

    def test_coalesce_takes_it_as_is(self) -> None:
        """The prompt-guided path renders the message's calls as text, dropping tool_calls."""
        result = ToolMessage(tool_call_id="call_1", name="get_weather", content="sunny")
        turns = coalesce_tool_results(
            [
                {"role": "user", "content": "Weather?"},
                openai_chat.assistant_message([GOOD]),
                *openai_chat.tool_results([result]),
            ]
        )
        assert ["user", "assistant", "user"] == [t["role"] for t in turns]
        assert "tool_calls" not in turns[1]
        assert '"city":"Oslo"' in str(turns[1]["content"]).replace(" ", "")

    def test_not_a_call(self) -> None:
        """Something that is not a ToolCall is a TypeError naming what to pass."""
        with pytest.raises(TypeError, match=r"takes tinytools ToolCalls.*not dict"):
            openai_chat.assistant_message([{"id": "x"}])  # type: ignore[list-item]


class TestOpenAIResponses:
    def test_items(self) -> None:
        """The text is an assistant message item; each call a function_call item."""
        expected = [
            {"role": "assistant", "content": "Checking."},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city":"Oslo"}',
            },
            {
                "type": "function_call",
                "call_id": "call_3",
                "name": "get_weather",
                "arguments": '{"city": "Par',
            },
        ]
        assert expected == openai_responses.assistant_items([GOOD, BROKEN], "Checking.")
        assert expected[1:] == openai_responses.assistant_items([GOOD, BROKEN])

    def test_round_trips_through_parse_calls(self) -> None:
        """parse_calls reads the items back."""
        items = openai_responses.assistant_items([RAW])
        assert [RAW] == openai_responses.parse_calls(items)


class TestAnthropic:
    def test_shape(self) -> None:
        """Text first, then tool_use blocks with object inputs; broken text is {}."""
        expected = {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                },
                {
                    "type": "tool_use",
                    "id": "call_2",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {"type": "tool_use", "id": "call_3", "name": "get_weather", "input": {}},
            ],
        }
        assert expected == anthropic.assistant_message([GOOD, RAW, BROKEN], "Checking.")

    def test_round_trips_through_parse_calls(self) -> None:
        """parse_calls reads the calls back (raw JSON text decoded)."""
        message = anthropic.assistant_message([GOOD, RAW])
        assert [GOOD, ToolCall("call_2", "get_weather", {"city": "Paris"})] == (
            anthropic.parse_calls(message)
        )


class TestGemini:
    def test_shape(self) -> None:
        """A model Content: text, then functionCall parts; a synthetic id is not sent."""
        expected = {
            "role": "model",
            "parts": [
                {"text": "Checking."},
                {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}, "id": "call_1"}},
                {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
            ],
        }
        assert expected == gemini.assistant_message([GOOD, SYNTHETIC], "Checking.")

    def test_sdk_accepts_it(self) -> None:
        """google-genai's Content model validates the turn."""
        from google.genai import types

        content = types.Content.model_validate(gemini.assistant_message([GOOD, BROKEN], "x"))
        assert ["get_weather", "get_weather"] == [
            p.function_call.name for p in content.parts or [] if p.function_call
        ]


class TestMcp:
    def test_sampling_message(self) -> None:
        """An assistant SamplingMessage with tool_use content the SDK validates."""
        from mcp import types

        message = mcp.assistant_message([GOOD], "Checking.")
        expected = {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                },
            ],
        }
        assert expected == message
        types.SamplingMessage.model_validate(message)


class _SdkText(str):
    """An SDK's own string type."""


@pytest.mark.parametrize(
    "build",
    [
        openai_chat.assistant_message,
        openai_responses.assistant_items,
        anthropic.assistant_message,
        gemini.assistant_message,
    ],
    ids=["openai_chat", "openai_responses", "anthropic", "gemini"],
)
def test_raw_arguments_of_a_str_subclass_are_their_text(build: object) -> None:
    """Raw arguments of a ``str`` subclass read as the text they hold, as dispatch reads
    them (msgspec raised TypeError building the Anthropic and Gemini turns)."""
    plain = ToolCall("call_2", "get_weather", '{"city": "Paris"}')
    sdk = ToolCall("call_2", "get_weather", _SdkText('{"city": "Paris"}'))
    assert build([plain]) == build([sdk])  # type: ignore[operator]
