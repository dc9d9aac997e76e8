"""Scripted provider servers for the documentation's examples (tests/test_docs.py).

Each fake is the provider's real SDK client over an ``httpx.MockTransport``: the
docs' code runs unchanged, request and response shapes included, and only the
model's side of the conversation is scripted. The model calls the first tool it
is offered, with the arguments :data:`ARGUMENTS` gives for that tool's name, and
answers in text once the request carries a tool result.
"""

from __future__ import annotations

import importlib
import json
from types import ModuleType

__all__ = ["ARGUMENTS", "anthropic_client", "openai_client"]

#: What the scripted model sends to each tool the docs define.
ARGUMENTS: dict[str, dict[str, object]] = {
    "get_weather": {"city": "Paris"},
    "delete_file": {"path": "notes.txt"},
}


def _http(sdk: str) -> ModuleType:
    """The HTTP library ``sdk`` is built on: newer SDKs moved from ``httpx`` to ``httpx2``."""
    base = vars(importlib.import_module(f"{sdk}._base_client"))
    found = base.get("httpx2", base.get("httpx"))
    return found if isinstance(found, ModuleType) else importlib.import_module("httpx")


def _reply_text(results: list[str]) -> str:
    return f"Here is what the tools said: {' | '.join(results)}"


#: The keys an assistant message may have in a Chat Completions request. A response's
#: message has more (``annotations``), which strict OpenAI-compatible servers refuse in a
#: request: the fake refuses them too.
_ASSISTANT_KEYS = frozenset({"role", "content", "tool_calls", "name", "refusal", "audio"})


def _refused_turn(messages: list[dict[str, object]]) -> str | None:
    """Why a strict server would refuse the request's messages, or None."""
    for message in messages:
        if message.get("role") == "assistant" and (extra := message.keys() - _ASSISTANT_KEYS):
            return f"assistant message: unknown field(s) {sorted(extra)} (extra_forbidden)"
    return None


def _openai_chat(body: dict[str, object]) -> dict[str, object]:
    messages = body["messages"]
    assert isinstance(messages, list)
    results = [str(m["content"]) for m in messages if m.get("role") == "tool"]
    tools = body.get("tools") or []
    assert isinstance(tools, list)
    if results or not tools:
        message: dict[str, object] = {"role": "assistant", "content": _reply_text(results)}
        finish = "stop"
    else:
        name = tools[0]["function"]["name"]
        arguments = json.dumps(ARGUMENTS.get(name, {}))
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        # (as the real API answers: with the response-only `annotations`)
        message = {"role": "assistant", "content": None, "tool_calls": [call], "annotations": []}
        finish = "tool_calls"
    return {
        "id": "chatcmpl-docs",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _openai_responses(body: dict[str, object]) -> dict[str, object]:
    items = body["input"]
    assert isinstance(items, list)
    results = [str(i["output"]) for i in items if i.get("type") == "function_call_output"]
    tools = body.get("tools") or []
    assert isinstance(tools, list)
    if results or not tools:
        text = {"type": "output_text", "text": _reply_text(results), "annotations": []}
        output: list[object] = [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            }
        ]
    else:
        name = tools[0]["name"]
        output = [
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": name,
                "arguments": json.dumps(ARGUMENTS.get(name, {})),
                "status": "completed",
            }
        ]
    return {
        "id": "resp_docs",
        "object": "response",
        "created_at": 0,
        "model": body["model"],
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": tools,
    }


def openai_client() -> object:
    """``openai.OpenAI`` answering Chat Completions and Responses requests from the script."""
    from openai import OpenAI

    httpx = _http("openai")

    def handle(request: object) -> object:
        body = json.loads(request.content)
        if request.url.path.endswith("/chat/completions"):
            if (refused := _refused_turn(body["messages"])) is not None:
                return httpx.Response(400, json={"error": {"message": refused}})
            return httpx.Response(200, json=_openai_chat(body))
        if request.url.path.endswith("/responses"):
            return httpx.Response(200, json=_openai_responses(body))
        return httpx.Response(404, json={"error": {"message": f"no fake for {request.url}"}})

    return OpenAI(
        api_key="sk-docs",
        base_url="https://api.openai.test/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(handle)),
    )


def _anthropic_messages(body: dict[str, object]) -> dict[str, object]:
    messages = body["messages"]
    assert isinstance(messages, list)
    results = [
        str(block.get("content"))
        for m in messages
        if isinstance(m.get("content"), list)
        for block in m["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    tools = body.get("tools") or []
    assert isinstance(tools, list)
    if results or not tools:
        content: list[object] = [{"type": "text", "text": _reply_text(results)}]
        stop = "end_turn"
    else:
        name = tools[0]["name"]
        content = [
            {"type": "tool_use", "id": "toolu_1", "name": name, "input": ARGUMENTS.get(name, {})}
        ]
        stop = "tool_use"
    return {
        "id": "msg_docs",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def anthropic_client() -> object:
    """``anthropic.Anthropic`` answering Messages requests from the script."""
    from anthropic import Anthropic

    httpx = _http("anthropic")

    def handle(request: object) -> object:
        return httpx.Response(200, json=_anthropic_messages(json.loads(request.content)))

    return Anthropic(
        api_key="sk-ant-docs",
        base_url="https://api.anthropic.test",
        http_client=httpx.Client(transport=httpx.MockTransport(handle)),
    )


def observability_modules() -> dict[str, object]:
    """Stand-ins for the packages docs/how-to/observability.md configures but the tests do
    not install: the OTLP exporter (keeps the spans in memory: nothing goes over the
    network) and ``logfire`` (``configure`` must be told not to send; its spans are the
    global provider's)."""
    import contextlib
    import types as module_types

    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class OTLPSpanExporter(SpanExporter):
        def __init__(self, **options: object) -> None:
            self.options = options
            self.spans: list[object] = []

        def export(self, spans: object) -> SpanExportResult:
            self.spans.extend(spans)  # type: ignore[call-overload]
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            pass

    exporter = module_types.ModuleType("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    exporter.OTLPSpanExporter = OTLPSpanExporter  # type: ignore[attr-defined]

    def configure(**options: object) -> None:
        assert options.get("send_to_logfire") is False, "the docs test sends nothing"

    def span(name: str, **attributes: object) -> contextlib.AbstractContextManager[object]:
        return trace.get_tracer("logfire").start_as_current_span(name, attributes=attributes)  # type: ignore[arg-type]

    logfire = module_types.ModuleType("logfire")
    logfire.configure = configure  # type: ignore[attr-defined]
    logfire.span = span  # type: ignore[attr-defined]
    modules: dict[str, object] = {exporter.__name__: exporter, "logfire": logfire}
    parts = exporter.__name__.split(".")
    for cut in range(2, len(parts)):  # the packages above it, each an empty package
        package = module_types.ModuleType(".".join(parts[:cut]))
        package.__path__ = []  # type: ignore[attr-defined]
        modules[package.__name__] = package
    return modules
