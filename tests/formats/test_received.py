"""Tests for `tinytools.formats._received`: no provider parser answers "no calls" silently.

Every ``parse_calls`` returns the calls, or says why there are none when the
response reports a failed call, or refuses (``TypeError``, naming what to
pass) an object it does not understand.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from tinytools import Tool, ToolCall, dispatch_sync
from tinytools.formats import (
    ToolCallsFailed,
    anthropic,
    gemini,
    mcp,
    openai_chat,
    openai_responses,
)

PROVIDERS = pytest.mark.parametrize(
    "module",
    [openai_chat, openai_responses, anthropic, gemini, mcp],
    ids=lambda m: m.__name__.rsplit(".", 1)[-1],
)
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}
weather = Tool.from_schema("get_weather", "Weather.", SCHEMA, fn=lambda city="": f"sunny in {city}")


def events() -> Iterator[dict[str, object]]:
    yield {"type": "ping"}


class TestNotAResponse:
    @PROVIDERS
    @pytest.mark.parametrize("value", [42, None, object(), 1.5])
    def test_type_error_names_what_to_pass(self, module: ModuleType, value: object) -> None:
        """An object that is no response is a TypeError naming the function and its input."""
        name = module.__name__.rsplit(".", 1)[-1]
        with pytest.raises(TypeError, match=rf"{name}\.parse_calls takes .+, not "):
            module.parse_calls(value)

    @PROVIDERS
    @pytest.mark.parametrize("value", ["<tool_call>{}</tool_call>", b"{}"])
    def test_text_points_to_the_text_parsers(self, module: ModuleType, value: object) -> None:
        """Model text is refused with a pointer to the text dialects."""
        with pytest.raises(TypeError, match=r"text dialect's parse\(text, tools\)"):
            module.parse_calls(value)

    @pytest.mark.parametrize("module", [openai_chat, openai_responses, anthropic, gemini])
    def test_stream_points_to_the_accumulator(self, module: ModuleType) -> None:
        """A stream (any iterator of events) is refused with the accumulator to use."""
        with pytest.raises(TypeError, match=r"stream: feed each event to .*ToolCallAccumulator"):
            module.parse_calls(events())


class TestStreamEvents:
    def test_openai_chat_chunk(self) -> None:
        """A streamed chunk is not a completion with no calls."""
        chunk = {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c"}]}}],
        }
        with pytest.raises(TypeError, match=r"streamed chunk.*ToolCallAccumulator"):
            openai_chat.parse_calls(chunk)
        with pytest.raises(TypeError, match=r"streamed chunk"):
            openai_chat.parse_calls({"object": "chat.completion.chunk", "choices": []})

    @pytest.mark.parametrize(
        "kind", ["response.function_call_arguments.delta", "response.output_item.added"]
    )
    def test_responses_event(self, kind: str) -> None:
        """A Responses stream event is refused, naming the accumulator."""
        event = {"type": kind, "item_id": "fc_1", "output_index": 0, "delta": "{"}
        with pytest.raises(TypeError, match=rf"stream event \('{kind}'\).*ToolCallAccumulator"):
            openai_responses.parse_calls(event)

    @pytest.mark.parametrize("kind", ["response.completed", "response.incomplete"])
    def test_responses_final_event_is_its_response(self, kind: str) -> None:
        """The event that carries the finished response is read as that response."""
        item = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
        event = {"type": kind, "response": {"id": "resp_1", "output": [item]}}
        assert [ToolCall("c1", "f", "{}")] == openai_responses.parse_calls(event)

    @pytest.mark.parametrize("kind", ["message_start", "content_block_delta", "message_stop"])
    def test_anthropic_event(self, kind: str) -> None:
        """A Messages stream event is refused with the supported way to stream."""
        with pytest.raises(TypeError, match=r"stream=True.*ToolCallAccumulator"):
            anthropic.parse_calls({"type": kind, "index": 0})


def gemini_response(reason: str, message: str | None = None) -> dict[str, object]:
    candidate: dict[str, object] = {"content": {"role": "model"}, "finishReason": reason}
    if message is not None:
        candidate["finishMessage"] = message
    return {"candidates": [candidate]}


class TestGeminiFailedCalls:
    @pytest.mark.parametrize("reason", sorted(gemini.FAILED_CALLS))
    def test_failed_call_says_why(self, reason: str) -> None:
        """A candidate that finished because a call failed raises, with reason and advice."""
        with pytest.raises(ToolCallsFailed) as caught:
            gemini.parse_calls(gemini_response(reason))
        assert (reason, None) == (caught.value.reason, caught.value.detail)
        assert gemini.FAILED_CALLS[reason] in str(caught.value)

    def test_finish_message_kept(self) -> None:
        """Gemini's own finish message is part of the error."""
        text = "Malformed function call: print(default_api.get_weather(city=Paris))"
        with pytest.raises(ToolCallsFailed, match="gemini said: Malformed") as caught:
            gemini.parse_calls(gemini_response("MALFORMED_FUNCTION_CALL", text))
        assert ("gemini", text) == (caught.value.provider, caught.value.detail)

    def test_sdk_response(self) -> None:
        """The SDK's response model (an enum finish reason, snake_case keys) says it too."""
        from google.genai import types

        response = types.GenerateContentResponse.model_validate(
            gemini_response("MALFORMED_FUNCTION_CALL", "bad")
        )
        with pytest.raises(ToolCallsFailed, match="MALFORMED_FUNCTION_CALL"):
            gemini.parse_calls(response)

    @pytest.mark.parametrize("reason", ["STOP", "MAX_TOKENS", "SAFETY"])
    def test_other_reasons_have_no_calls(self, reason: str) -> None:
        """Finishing for any other reason with no call is an ordinary empty list."""
        assert [] == gemini.parse_calls(gemini_response(reason))

    def test_calls_win(self) -> None:
        """Calls that did arrive are returned whatever the finish reason."""
        response = gemini_response("MALFORMED_FUNCTION_CALL")
        part = {"functionCall": {"id": "fc1", "name": "get_weather", "args": {}}}
        response["candidates"][0]["content"] = {"parts": [part]}  # type: ignore[index]
        assert [ToolCall("fc1", "get_weather", {})] == gemini.parse_calls(response)

    def test_is_a_value_error(self) -> None:
        """Code that catches ValueError for a bad response catches this too."""
        assert issubclass(ToolCallsFailed, ValueError)


class TestResponsesFailed:
    def test_failed_response_says_why(self) -> None:
        """A failed response (as response.failed carries it) is not a turn without calls."""
        error = {"code": "server_error", "message": "The model failed to respond."}
        event = {
            "type": "response.failed",
            "response": {"id": "r", "status": "failed", "error": error, "output": []},
        }
        with pytest.raises(ToolCallsFailed, match=r"server_error.*failed to respond") as caught:
            openai_responses.parse_calls(event)
        assert "openai_responses" == caught.value.provider


class TestCutOff:
    def test_openai_chat_length(self) -> None:
        """The last call of a completion cut at the token limit is invalid, text kept."""
        calls = [
            {"id": "a", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
            {"id": "b", "function": {"name": "get_weather", "arguments": '{"city": "Par'}},
        ]
        response = {
            "choices": [
                {"finish_reason": "length", "message": {"role": "assistant", "tool_calls": calls}}
            ]
        }
        first, last = openai_chat.parse_calls(response)
        assert (None, '{"city": "Par') == (first.invalid, last.arguments)
        assert "token limit" in str(last.invalid)

    def test_openai_chat_length_dispatch(self) -> None:
        """A cut-off call is answered with the reason; one whose JSON arrived whole runs."""
        calls = [
            {"id": "a", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
            {"id": "b", "function": {"name": "get_weather", "arguments": '{"city": "Par'}},
        ]

        def at_limit(written: list[dict[str, object]]) -> list[ToolCall]:
            message = {"role": "assistant", "tool_calls": written}
            return openai_chat.parse_calls(
                {"choices": [{"finish_reason": "length", "message": message}]}
            )

        cut = dispatch_sync(at_limit(calls), [weather])
        assert (("a",), "error") == (cut.executed, cut.messages[1].status)
        assert "token limit" in cut.messages[1].content
        whole = dispatch_sync(at_limit(calls[:1]), [weather])
        assert (("a",), "ok") == (whole.executed, whole.messages[0].status)

    def test_anthropic_max_tokens_is_not_run(self) -> None:
        """A tool_use cut by max_tokens is answered with the reason and never run."""
        message = {
            "stop_reason": "max_tokens",
            "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}],
        }
        [call] = anthropic.parse_calls(message)
        assert "max_tokens" in str(call.invalid)
        result = dispatch_sync([call], [weather])
        assert ([], "error") == (list(result.executed), result.messages[0].status)
        assert "max_tokens" in result.messages[0].content

    def test_anthropic_complete_tool_use_kept(self) -> None:
        """Only a tool_use that is the message's last block was cut."""
        message = {
            "stop_reason": "max_tokens",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}},
                {"type": "text", "text": "and then"},
            ],
        }
        assert [ToolCall("t1", "get_weather", {})] == anthropic.parse_calls(message)

    def test_responses_incomplete_item(self) -> None:
        """A function_call item with status incomplete is invalid, its text kept."""
        output = [
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {
                "type": "function_call",
                "call_id": "c2",
                "name": "f",
                "arguments": '{"a',
                "status": "incomplete",
            },
        ]
        first, second = openai_responses.parse_calls({"output": output})
        assert first.invalid is None
        assert ('{"a', True) == (second.arguments, "output limit" in str(second.invalid))


class TestMcpParams:
    def test_params_dict(self) -> None:
        """The params a server handler receives are one call, under a synthetic id."""
        [call] = mcp.parse_calls({"name": "get_weather", "arguments": {"city": "Oslo"}})
        assert ("get_weather", {"city": "Oslo"}, None) == (call.name, call.arguments, call.invalid)
        assert call.id.startswith("call_")

    def test_params_sdk_object(self) -> None:
        """The SDK's CallToolRequestParams is accepted as it is."""
        from mcp import types

        params = types.CallToolRequestParams(name="get_weather", arguments={"city": "Oslo"})
        [call] = mcp.parse_calls(params)
        assert ("get_weather", {"city": "Oslo"}) == (call.name, call.arguments)

    def test_params_without_arguments(self) -> None:
        """Params without arguments read as no arguments, as a request's do."""
        [call] = mcp.parse_calls({"name": "ping"})
        assert ("ping", {}, None) == (call.name, call.arguments, call.invalid)

    def test_other_single_request(self) -> None:
        """A single request of another method is refused, not read as no calls."""
        with pytest.raises(ValueError, match=r'got a "tools/list" request'):
            mcp.parse_calls({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
