"""Tests for the provider loops in ``examples/``, each run through its real SDK.

Every SDK (``openai``, ``anthropic``, ``google-genai``, ``mcp``) is installed
by the test extra; no test here is skipped for a missing one. HTTP goes to a
mock transport that answers with responses written from each provider's API
reference: a turn of tool calls, then a text answer. The tests check the
answer and what the second request carried: the model's turn and the tool
results, in the shape the provider documents.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent / "formats"))
from streams import anthropic_events, gemini_chunks, responses_events, sse

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
WEATHER = {"city": "Paris", "celsius": 21, "sky": "clear"}
ANSWER = "It is 21°C and clear in Paris."


@pytest.fixture(scope="module")
def load() -> Iterator[Callable[[str], ModuleType]]:
    """Loads an example file as a module (``examples/`` is no package)."""
    if not EXAMPLES.is_dir():
        pytest.skip(f"the examples folder is not at {EXAMPLES} (an installed package?)")
    names: list[str] = []

    def load(filename: str) -> ModuleType:
        name = f"_tinytools_loop_{Path(filename).stem}"
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / filename)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # type hints are resolved through the module's name
        names.append(name)
        spec.loader.exec_module(module)
        return module

    yield load
    for name in names:
        sys.modules.pop(name, None)


class Server:
    """A scripted provider: answers each request with the next reply, keeping the bodies."""

    def __init__(self, http: Any, *replies: object, named_events: bool = False) -> None:
        self.http = http
        self.replies = list(replies)
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.named = named_events

    def __call__(self, request: Any) -> Any:
        self.bodies.append(json.loads(request.content))
        self.paths.append(request.url.path)
        reply = self.replies.pop(0)
        if isinstance(reply, list):  # a stream of events
            text = sse(reply, named=self.named, done="chat" in request.url.path)
            return self.http.Response(200, text=text, headers={"content-type": "text/event-stream"})
        return self.http.Response(200, json=reply)

    def client(self) -> Any:
        return self.http.Client(transport=self.http.MockTransport(self))


# --- OpenAI Chat Completions ------------------------------------------------------


def completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


CHAT_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
}


def openai_client(server: Server) -> Any:
    import openai

    return openai.OpenAI(api_key="x", base_url="http://test/v1", http_client=server.client())


class TestOpenAIChat:
    def test_loop(self, load: Callable[[str], ModuleType]) -> None:
        """Calls are answered and sent back after the assistant turn; the answer is returned."""
        server = Server(
            httpx,
            completion(
                {"role": "assistant", "content": None, "tool_calls": [CHAT_CALL]}, "tool_calls"
            ),
            completion({"role": "assistant", "content": ANSWER}, "stop"),
        )
        assert ANSWER == load("loop_openai_chat.py").run(openai_client(server), "Weather?")
        _, assistant, result = server.bodies[1]["messages"]
        assert {"role": "assistant", "content": None, "tool_calls": [CHAT_CALL]} == assistant
        assert "call_1" == result["tool_call_id"]
        assert WEATHER == json.loads(result["content"])

    def test_streamed_loop(self, load: Callable[[str], ModuleType]) -> None:
        """Streamed calls, split over chunks, are accumulated and answered."""
        first = [
            chunk({"role": "assistant", "content": "Checking."}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    ]
                }
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
            chunk({}, "tool_calls"),
        ]
        second = [
            chunk({"role": "assistant", "content": ANSWER[:10]}),
            chunk({"content": ANSWER[10:]}, "stop"),
        ]
        server = Server(httpx, first, second)
        loop = load("loop_openai_chat.py")
        assert ANSWER == loop.run(openai_client(server), "Weather?", stream=True)
        _, assistant, result = server.bodies[1]["messages"]
        assert {"role": "assistant", "content": "Checking.", "tool_calls": [CHAT_CALL]} == assistant
        assert WEATHER == json.loads(result["content"])


# --- OpenAI Responses -------------------------------------------------------------


def response(number: int, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "gpt-4.1-mini",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


FUNCTION_CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": '{"city":"Paris"}',
    "status": "completed",
}
MESSAGE = {
    "type": "message",
    "id": "msg_2",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
}


class TestOpenAIResponses:
    def test_loop(self, load: Callable[[str], ModuleType]) -> None:
        """The results go back with previous_response_id; the output text is the answer."""
        server = Server(httpx, response(1, [FUNCTION_CALL]), response(2, [MESSAGE]))
        assert ANSWER == load("loop_openai_responses.py").run(openai_client(server), "Weather?")
        second = server.bodies[1]
        assert "resp_1" == second["previous_response_id"]
        [output] = second["input"]
        assert ("function_call_output", "call_1") == (output["type"], output["call_id"])
        assert WEATHER == json.loads(output["output"])

    def test_streamed_loop(self, load: Callable[[str], ModuleType]) -> None:
        """Streamed, the turn's items and the results extend a stateless input."""
        first = responses_events([("call_1", "get_weather", '{"city":"Paris"}')], size=4)
        server = Server(httpx, first, responses_events([], ANSWER), named_events=True)
        loop = load("loop_openai_responses.py")
        assert ANSWER == loop.run(openai_client(server), "Weather?", stream=True)
        user, call, output = server.bodies[1]["input"]
        assert {"role": "user", "content": "Weather?"} == user
        assert ("function_call", "call_1", '{"city":"Paris"}') == (
            call["type"],
            call["call_id"],
            call["arguments"],
        )
        assert ("call_1", WEATHER) == (output["call_id"], json.loads(output["output"]))


# --- Anthropic --------------------------------------------------------------------


def anthropic_client(reply: Callable[[Any], Server]) -> tuple[Any, Server]:
    """An ``anthropic.Anthropic`` client on a mock transport (httpx, or httpx2 for new SDKs)."""
    import anthropic

    for module in ("httpx", "httpx2"):
        try:
            http = importlib.import_module(module)
        except ImportError:
            continue
        server = reply(http)
        try:
            client = anthropic.Anthropic(
                api_key="x", base_url="http://test", http_client=server.client()
            )
        except TypeError:
            continue
        return client, server
    raise AssertionError("no HTTP client module this anthropic SDK accepts")


def message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}


# The SDK warns when a model it knows reaches its end of life; which models those are changes
# with SDK releases and the date, not with tinytools.
@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
class TestAnthropic:
    def check_second_request(self, server: Server) -> None:
        _, assistant, results = server.bodies[1]["messages"]
        assert "assistant" == assistant["role"]
        assert [TOOL_USE] == [b for b in assistant["content"] if b["type"] == "tool_use"]
        [block] = results["content"]
        assert ("user", "toolu_1", False) == (
            results["role"],
            block["tool_use_id"],
            block["is_error"],
        )
        assert WEATHER == json.loads(block["content"])

    def test_loop(self, load: Callable[[str], ModuleType]) -> None:
        """The SDK's content goes back as the turn; the results in one user message."""
        text = {"type": "text", "text": "Checking."}
        client, server = anthropic_client(
            lambda http: Server(
                http,
                message([text, TOOL_USE], "tool_use"),
                message([{"type": "text", "text": ANSWER}], "end_turn"),
            )
        )
        assert ANSWER == load("loop_anthropic.py").run(client, "Weather?")
        self.check_second_request(server)

    def test_streamed_loop(self, load: Callable[[str], ModuleType]) -> None:
        """Raw stream events are accumulated into the calls and the assistant turn."""
        first = anthropic_events([("toolu_1", "get_weather", '{"city": "Paris"}')], "Checking.", 3)
        client, server = anthropic_client(
            lambda http: Server(http, first, anthropic_events([], ANSWER), named_events=True)
        )
        assert ANSWER == load("loop_anthropic.py").run(client, "Weather?", stream=True)
        self.check_second_request(server)

    def test_broken_streamed_arguments_reach_the_model(
        self, load: Callable[[str], ModuleType]
    ) -> None:
        """A call whose streamed JSON is broken is answered with an error, not raised."""
        first = anthropic_events([("toolu_1", "get_weather", '{"city": "Par')], size=3)
        client, server = anthropic_client(
            lambda http: Server(http, first, anthropic_events([], ANSWER), named_events=True)
        )
        assert ANSWER == load("loop_anthropic.py").run(client, "Weather?", stream=True)
        [block] = server.bodies[1]["messages"][2]["content"]
        assert (True, "toolu_1") == (block["is_error"], block["tool_use_id"])


# --- Gemini -----------------------------------------------------------------------


def gemini_client(server: Server) -> Any:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(base_url="http://test", httpx_client=server.client())
    return genai.Client(api_key="x", http_options=options)


SIGNATURE = "c2lnbmF0dXJl"


def gemini_response(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5},
        "modelVersion": "gemini-2.5-flash",
    }


class TestGemini:
    def check_second_request(self, server: Server) -> None:
        _, turn, results = server.bodies[1]["contents"]
        [call_part] = [p for p in turn["parts"] if "functionCall" in p]
        assert ("get_weather", {"city": "Paris"}) == (
            call_part["functionCall"]["name"],
            call_part["functionCall"]["args"],
        )
        assert SIGNATURE == call_part["thoughtSignature"]  # sent back as it came
        [part] = results["parts"]
        assert {"name": "get_weather", "response": {"output": WEATHER}, "id": "fc_1"} == (
            part["functionResponse"]
        )

    def test_loop(self, load: Callable[[str], ModuleType]) -> None:
        """The candidate's content goes back as the turn; results carry JSON objects."""
        call = {"functionCall": {"id": "fc_1", "name": "get_weather", "args": {"city": "Paris"}}}
        server = Server(
            httpx,
            gemini_response([{**call, "thoughtSignature": SIGNATURE}]),
            gemini_response([{"text": ANSWER}]),
        )
        assert ANSWER == load("loop_gemini.py").run(gemini_client(server), "Weather?")
        self.check_second_request(server)

    def test_streamed_loop(self, load: Callable[[str], ModuleType]) -> None:
        """Streamed chunks give the calls, and the turn keeps its thought signature."""
        first = gemini_chunks([("fc_1", "get_weather", '{"city": "Paris"}')], "Checking.")
        server = Server(httpx, first, gemini_chunks([], ANSWER))
        loop = load("loop_gemini.py")
        assert ANSWER == loop.run(gemini_client(server), "Weather?", stream=True)
        assert server.paths[0].endswith(":streamGenerateContent")
        self.check_second_request(server)

    def test_malformed_call_says_why(self, load: Callable[[str], ModuleType]) -> None:
        """A MALFORMED_FUNCTION_CALL finish raises ToolCallsFailed, not a silent empty answer."""
        from tinytools.formats import ToolCallsFailed

        malformed = {
            "candidates": [
                {
                    "content": {"role": "model"},
                    "finishReason": "MALFORMED_FUNCTION_CALL",
                    "finishMessage": "Malformed function call: get_weather(city=Paris",
                }
            ]
        }
        server = Server(httpx, malformed)
        with pytest.raises(ToolCallsFailed, match="Retry the request"):
            load("loop_gemini.py").run(gemini_client(server), "Weather?")


# --- Local OpenAI-compatible server (prompt-guided) -------------------------------


class TestLocalServer:
    def test_loop(self, load: Callable[[str], ModuleType]) -> None:
        """Calls written in text are run; the history goes back as plain text turns."""
        call = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
        text = f"Let me look.\n<tool_call>\n{call}\n</tool_call>"
        server = Server(
            httpx,
            completion({"role": "assistant", "content": text}, "stop"),
            completion({"role": "assistant", "content": ANSWER}, "stop"),
        )
        assert ANSWER == load("loop_local_server.py").run(openai_client(server), "Weather?")
        sent = server.bodies[1]["messages"]
        assert ["system", "user", "assistant", "user"] == [m["role"] for m in sent]
        assert all("tool_calls" not in m for m in sent)
        assert "get_weather" in sent[0]["content"]
        assert '"celsius":21' in sent[3]["content"].replace(" ", "")

    def test_broken_call_is_answered(self, load: Callable[[str], ModuleType]) -> None:
        """A call the model wrote badly gets an error result it can correct."""
        text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>'
        server = Server(
            httpx,
            completion({"role": "assistant", "content": text}, "stop"),
            completion({"role": "assistant", "content": ANSWER}, "stop"),
        )
        assert ANSWER == load("loop_local_server.py").run(openai_client(server), "Weather?")
        assert 'status="error"' in server.bodies[1]["messages"][-1]["content"]


# --- MCP --------------------------------------------------------------------------


class TestMcpServer:
    @pytest.mark.anyio
    async def test_served(self, load: Callable[[str], ModuleType]) -> None:
        """An MCP client lists the tools with their schemas and hints and calls them."""
        from mcp import Client

        example = load("mcp_server.py")
        async with Client(example.server) as client:
            [listed] = (await client.list_tools()).tools
            assert "get_weather" == listed.name
            assert listed.output_schema is not None
            assert ["city", "celsius", "sky"] == listed.output_schema["required"]
            assert (True, True) == (
                listed.annotations.read_only_hint,
                listed.annotations.open_world_hint,
            )
            result = await client.call_tool("get_weather", {"city": "Paris"})
            assert not result.is_error
            assert {"city": "Paris", "celsius": 21.0, "sky": "clear"} == result.structured_content
            refused = await client.call_tool("get_weather", {"town": "Paris"})
            assert refused.is_error
            assert "city" in refused.content[0].text
