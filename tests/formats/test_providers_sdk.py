"""Tests for the `tinytools.formats` provider modules against the real SDKs.

The SDKs are ``openai``, ``anthropic``, ``google-genai`` and ``mcp``. Each
sends its request through a mock transport (no network): the tests
check that the JSON body carries our declarations and tool results as we
built them, and that the SDK's own response objects parse to the same calls
as the recorded JSON. Every SDK is installed by the test extra: none is skipped.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from media import PDF, PNG
from recorded import recorded

from tinytools import (
    FileBlock,
    ImageBlock,
    Registry,
    TextBlock,
    Tool,
    ToolCall,
    ToolMessage,
    ToolPolicy,
    ToolResult,
    dispatch_sync,
    tool,
)
from tinytools.formats import anthropic, gemini, mcp, openai_chat, openai_responses
from tinytools.formats.openai_chat import ToolCallAccumulator


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


@tool(policy=ToolPolicy.read_only())
def plot(points: list[Point], label: str | None = None) -> str:
    """Plot points.

    Args:
        points: The points to plot.
        label: A caption.
    """
    return "ok"


weather = Tool.from_schema(
    "get_weather",
    "Weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
REGISTRY = Registry.of(weather, plot)
RESULTS = [
    ToolMessage(tool_call_id="call_1", name="get_weather", content="21°C"),
    ToolMessage(tool_call_id="call_2", name="plot", content="bad points", is_error=True),
]


@tool
def chart() -> ToolResult:
    """Draw the chart and write the report."""
    return ToolResult.success(
        [
            TextBlock("here they are"),
            ImageBlock("image/png", PNG),
            FileBlock("r.pdf", "application/pdf", PDF),
        ]
    )


#: The model's call of ``chart``, and dispatch's answer: text, a PNG and a PDF.
CHART_CALL = ToolCall("call_9", "chart", {})
ATTACHED = dispatch_sync([CHART_CALL], Registry.of(chart)).messages


def unbase64(text: str) -> bytes:
    """The bytes of base64 text or of a ``data:`` URL."""
    return base64.b64decode(text.partition(";base64,")[2] or text)


Handler = Callable[[Any], Any]


def recorder(http: Any, reply: Callable[[], Any]) -> tuple[list[dict[str, Any]], Handler]:
    """A mock-transport handler answering with ``reply()`` and keeping each JSON body sent."""
    bodies: list[dict[str, Any]] = []

    def handle(request: Any) -> Any:
        bodies.append(json.loads(request.content))
        answer = reply()
        if isinstance(answer, str):
            return http.Response(200, text=answer, headers={"content-type": "text/event-stream"})
        return http.Response(200, json=answer)

    return bodies, handle


class TestOpenAIChat:
    def client(self, reply: Callable[[], Any]) -> tuple[Any, list[dict[str, Any]]]:
        import openai

        bodies, handle = recorder(httpx, reply)
        http_client = httpx.Client(transport=httpx.MockTransport(handle))
        return openai.OpenAI(api_key="x", base_url="http://test", http_client=http_client), bodies

    @pytest.mark.parametrize("strict", [False, True])
    def test_round_trip(self, strict: bool) -> None:
        """The SDK sends our declarations and results unchanged, and its response parses."""
        client, bodies = self.client(lambda: recorded("openai_chat_completion.json"))
        tools = openai_chat.declarations(REGISTRY, strict=strict)
        completion = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Go"}], tools=tools
        )
        assert tools == bodies[0]["tools"]
        assert openai_chat.parse_calls(recorded("openai_chat_completion.json")) == (
            openai_chat.parse_calls(completion)
        )
        assert openai_chat.parse_calls(completion.choices[0].message) == (
            openai_chat.parse_calls(completion)
        )
        assistant = completion.choices[0].message.model_dump(exclude_none=True)
        results = openai_chat.tool_results(RESULTS)
        client.chat.completions.create(model="gpt-4o", messages=[assistant, *results], tools=tools)
        assert results == bodies[1]["messages"][1:]

    def test_attachments_arrive(self) -> None:
        """A result's image and PDF reach the request body, with their bytes, in the user
        message after the tool message (which takes text only)."""
        client, bodies = self.client(lambda: recorded("openai_chat_completion.json"))
        results = openai_chat.tool_results(ATTACHED)
        turn = openai_chat.assistant_message([CHART_CALL])
        client.chat.completions.create(model="gpt-4o", messages=[turn, *results])
        assert results == bodies[0]["messages"][1:]
        tool_message, carried = bodies[0]["messages"][1:]
        assert tool_message["content"].endswith("[the next user message holds attachments 1, 2]")
        _, image, _, document = carried["content"]
        assert PNG == unbase64(image["image_url"]["url"])
        assert PDF == unbase64(document["file"]["file_data"])

    def test_stream(self) -> None:
        """Chunks the SDK parses from a server-sent stream accumulate to complete calls."""
        events = "".join(f"data: {json.dumps(c)}\n\n" for c in recorded("openai_chat_stream.json"))
        client, _ = self.client(lambda: events + "data: [DONE]\n\n")
        accumulator = ToolCallAccumulator()
        for chunk in client.chat.completions.create(model="gpt-4o", messages=[], stream=True):
            accumulator.add(chunk)
        expected = [
            ToolCall("call_DdmO9pD3xa9XTPNJ32zg2hcA", "get_weather", '{"city": "Paris"}'),
            ToolCall("call_m5Yk0KXb8kRJjWpKTxEGyQmN", "get_weather", '{"city": "Oslo"}'),
        ]
        assert expected == accumulator.calls()

    def test_model_validate(self) -> None:
        """A recorded completion validated by the SDK's model parses like the raw JSON."""
        import openai

        raw = recorded("openai_chat_completion.json")
        completion = openai.types.chat.ChatCompletion.model_validate(raw)
        assert openai_chat.parse_calls(raw) == openai_chat.parse_calls(completion)


class TestOpenAIResponses:
    @pytest.mark.parametrize("strict", [False, True])
    def test_round_trip(self, strict: bool) -> None:
        """The SDK sends our function tools and outputs unchanged, and its Response parses."""
        import openai

        bodies, handle = recorder(httpx, lambda: recorded("openai_response.json"))
        http_client = httpx.Client(transport=httpx.MockTransport(handle))
        client = openai.OpenAI(api_key="x", base_url="http://test", http_client=http_client)
        tools = openai_responses.declarations(REGISTRY, strict=strict)
        response = client.responses.create(model="gpt-4.1", input="Go", tools=tools)
        assert tools == bodies[0]["tools"]
        calls = openai_responses.parse_calls(response)
        assert openai_responses.parse_calls(recorded("openai_response.json")) == calls
        assert openai_responses.parse_calls(response.output) == calls
        outputs = openai_responses.tool_results(RESULTS)
        client.responses.create(model="gpt-4.1", input=outputs, previous_response_id=response.id)
        assert outputs == bodies[1]["input"]

    def test_attachments_arrive(self) -> None:
        """A result's image and PDF reach the request body, with their bytes, as content of
        its ``function_call_output``."""
        import openai

        bodies, handle = recorder(httpx, lambda: recorded("openai_response.json"))
        http_client = httpx.Client(transport=httpx.MockTransport(handle))
        client = openai.OpenAI(api_key="x", base_url="http://test", http_client=http_client)
        items = [
            *openai_responses.assistant_items([CHART_CALL]),
            *openai_responses.tool_results(ATTACHED),
        ]
        client.responses.create(model="gpt-4.1", input=items)
        assert items == bodies[0]["input"]
        _, image, document = bodies[0]["input"][-1]["output"]
        assert PNG == unbase64(image["image_url"])
        assert PDF == unbase64(document["file_data"])


class TestAnthropic:
    def client(self, reply: Callable[[], Any]) -> tuple[Any, list[dict[str, Any]]]:
        import anthropic as sdk

        for module in ("httpx", "httpx2"):  # recent SDKs are built on httpx2
            try:
                http = importlib.import_module(module)
            except ImportError:
                continue
            bodies, handle = recorder(http, reply)
            try:
                client = sdk.Anthropic(
                    api_key="x",
                    base_url="http://test",
                    http_client=http.Client(transport=http.MockTransport(handle)),
                )
            except TypeError:
                continue
            return client, bodies
        raise AssertionError("no HTTP client module this anthropic SDK accepts")

    def test_round_trip(self) -> None:
        """The SDK sends our tools and tool results unchanged, and its Message parses."""
        client, bodies = self.client(lambda: recorded("anthropic_message.json"))
        tools = anthropic.declarations(REGISTRY)
        message = client.messages.create(
            model="test-model",
            max_tokens=100,
            messages=[{"role": "user", "content": "Go"}],
            tools=tools,
        )
        assert tools == bodies[0]["tools"]
        assert anthropic.parse_calls(recorded("anthropic_message.json")) == (
            anthropic.parse_calls(message)
        )
        assert anthropic.parse_calls(message.content) == anthropic.parse_calls(message)
        results = anthropic.tool_results(RESULTS)
        turn = {"role": "assistant", "content": [b.model_dump() for b in message.content]}
        client.messages.create(
            model="test-model", max_tokens=100, messages=[turn, *results], tools=tools
        )
        assert results == bodies[1]["messages"][1:]

    def test_attachments_arrive(self) -> None:
        """A result's image and PDF reach the request body, with their bytes, as blocks of
        its ``tool_result``."""
        client, bodies = self.client(lambda: recorded("anthropic_message.json"))
        results = anthropic.tool_results(ATTACHED)
        turn = anthropic.assistant_message([CHART_CALL])
        client.messages.create(model="test-model", max_tokens=100, messages=[turn, *results])
        assert results == bodies[0]["messages"][1:]
        [block] = bodies[0]["messages"][1]["content"]
        _, image, document = block["content"]
        assert PNG == unbase64(image["source"]["data"])
        assert PDF == unbase64(document["source"]["data"])


def upper_types(node: Any) -> Any:
    """``node`` with every ``type`` upper-cased, as google-genai sends it."""
    if isinstance(node, dict):
        return {k: v.upper() if k == "type" else upper_types(v) for k, v in node.items()}
    if isinstance(node, list):
        return [upper_types(v) for v in node]
    return node


class TestGemini:
    def client(self, reply: Callable[[], Any]) -> tuple[Any, Any, list[dict[str, Any]]]:
        from google import genai
        from google.genai import types

        bodies, handle = recorder(httpx, reply)
        options = types.HttpOptions(
            base_url="http://test", httpx_client=httpx.Client(transport=httpx.MockTransport(handle))
        )
        return genai.Client(api_key="x", http_options=options), types, bodies

    @pytest.mark.parametrize("json_schema", [False, True])
    def test_round_trip(self, json_schema: bool) -> None:
        """The SDK sends our declarations and responses, and its response parses.

        The SDK upper-cases schema types and spells ``parametersJsonSchema`` in
        snake case; both spellings are valid REST JSON.
        """
        client, types, bodies = self.client(lambda: recorded("gemini_response.json"))
        tools = gemini.declarations(REGISTRY, json_schema=json_schema)
        config = types.GenerateContentConfig(tools=tools)
        response = client.models.generate_content(
            model="gemini-2.5-flash", contents="Go", config=config
        )
        sent = json.loads(
            json.dumps(bodies[0]["tools"]).replace(
                '"parameters_json_schema"', '"parametersJsonSchema"'
            )
        )
        assert (tools if json_schema else upper_types(tools)) == sent
        calls = gemini.parse_calls(response)
        expected = [
            ("get_weather", {"city": "Paris"}),
            ("get_weather", {"city": "Oslo", "unit": "c"}),
        ]
        assert expected == [(c.name, c.arguments) for c in calls]
        assert calls == gemini.parse_calls(response)
        parts = response.candidates[0].content.parts
        assert expected == [(c.name, c.arguments) for c in gemini.parse_calls(parts)]
        replies = gemini.tool_results(RESULTS)
        contents = [response.candidates[0].content, *replies]
        client.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
        assert replies == bodies[1]["contents"][1:]

    def test_attachments_arrive(self) -> None:
        """A result's image and PDF reach the request body, with their bytes, as parts of
        its function response. The SDK reads our dicts into its models and writes them
        back: the media parts' keys in snake case and their data in URL-safe base64, both
        valid REST JSON."""
        client, _, bodies = self.client(lambda: recorded("gemini_response.json"))
        [reply] = gemini.tool_results(ATTACHED)
        contents = [gemini.assistant_message([CHART_CALL]), reply]
        client.models.generate_content(model="gemini-3-flash", contents=contents)
        [part] = bodies[0]["contents"][1]["parts"]
        sent = part["functionResponse"]
        [ours] = reply["parts"]
        assert ours["functionResponse"]["response"] == sent["response"]
        found = [
            (
                media["inline_data"]["mime_type"],
                base64.urlsafe_b64decode(media["inline_data"]["data"]),
            )
            for media in sent["parts"]
        ]
        assert [("image/png", PNG), ("application/pdf", PDF)] == found

    def test_call_ids_kept(self) -> None:
        """Ids the model sends survive the SDK's models."""
        _, types, _ = self.client(dict)
        part = types.Part(
            function_call=types.FunctionCall(id="fc-9", name="plot", args={"points": []})
        )
        assert [ToolCall("fc-9", "plot", {"points": []})] == gemini.parse_calls([part])


class TestMCP:
    def test_types(self) -> None:
        """The MCP SDK's models accept our tools and results and give back calls."""
        from mcp import types

        for declaration in mcp.declarations(REGISTRY):
            sdk_tool = types.Tool.model_validate(declaration)
            assert declaration == sdk_tool.model_dump(by_alias=True, exclude_none=True)
        for result in mcp.tool_results(
            [*RESULTS, ToolMessage(tool_call_id="3", name="f", content="{}", artifact={})]
        ):
            types.CallToolResult.model_validate(result)
        request = types.JSONRPCRequest(
            jsonrpc="2.0",
            id=3,
            method="tools/call",
            params={"name": "plot", "arguments": {"points": []}},
        )
        bare = types.CallToolRequest(params=types.CallToolRequestParams(name="plot", arguments={}))
        first, second = mcp.parse_calls([request, bare])
        assert ToolCall("3", "plot", {"points": []}) == first
        assert ("plot", {}, None) == (second.name, second.arguments, second.invalid)

    @pytest.mark.anyio
    async def test_attachments_arrive(self) -> None:
        """A tinytools tool returning an image, served over MCP, reaches the SDK's client as
        image and resource content with its bytes; read back through ``McpToolset``, the
        image reaches the next provider's request too."""
        from mcp import Client, types
        from mcp.server.lowlevel import Server

        from tinytools import dispatch
        from tinytools.toolsets.mcp import McpToolset

        tools = Registry.of(chart)

        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            listed = [types.Tool.model_validate(d) for d in mcp.declarations(tools)]
            return types.ListToolsResult(tools=listed)

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
            result = await dispatch(mcp.parse_calls(params), tools)
            [answer] = mcp.tool_results(result.messages)
            return types.CallToolResult.model_validate(answer)

        server = Server("attachments", on_list_tools=list_tools, on_call_tool=call_tool)
        async with Client(server) as client:
            answer = await client.call_tool("chart", {})
            _, image, document = answer.content
            assert (PNG, "image/png") == (base64.b64decode(image.data), image.mime_type)
            assert PDF == base64.b64decode(document.resource.blob)
            remote = McpToolset(client.session)
            await remote.refresh()
            relayed = await dispatch([CHART_CALL], remote)
        [result] = anthropic.tool_results(relayed.messages)
        [block] = result["content"]
        assert PNG == unbase64(block["content"][1]["source"]["data"])
