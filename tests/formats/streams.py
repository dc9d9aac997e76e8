"""Provider stream events for tests, shaped as each provider's API reference documents them.

Each builder takes the calls to stream, as ``(id, name, arguments JSON text)``,
and the size of the argument pieces, and returns the events in order as plain
JSON data; :func:`sse` writes them as a server-sent event stream.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["anthropic_events", "gemini_chunks", "pieces", "responses_events", "sse"]

Call = tuple[str, str, str]


def pieces(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of ``size`` characters (at least one piece)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def sse(events: list[dict[str, Any]], *, named: bool = False, done: bool = False) -> str:
    """The events as a ``text/event-stream`` body (``event:`` lines when ``named``)."""
    out = []
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        out.append(f"{head}data: {json.dumps(event)}\n\n")
    return "".join(out) + ("data: [DONE]\n\n" if done else "")


def anthropic_events(calls: list[Call], text: str = "", size: int = 7) -> list[dict[str, Any]]:
    """A Messages stream: optional text block, then one tool_use block per call."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        }
    ]
    index = 0
    if text:
        events += [
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            *(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": p},
                }
                for p in pieces(text, size)
            ),
            {"type": "content_block_stop", "index": 0},
        ]
        index = 1
    for offset, (call_id, name, arguments) in enumerate(calls):
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        events.append(
            {"type": "content_block_start", "index": index + offset, "content_block": block}
        )
        events += [
            {
                "type": "content_block_delta",
                "index": index + offset,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in pieces(arguments, size)
        ]
        events.append({"type": "content_block_stop", "index": index + offset})
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 40},
        },
        {"type": "message_stop"},
    ]
    return events


def responses_events(calls: list[Call], text: str = "", size: int = 7) -> list[dict[str, Any]]:
    """A Responses stream: optional message item, then one function_call item per call."""
    response = {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-test"}
    events: list[dict[str, Any]] = [
        {
            "type": "response.created",
            "response": {**response, "status": "in_progress", "output": []},
        }
    ]
    output: list[dict[str, Any]] = []
    if text:
        message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed"}
        done = {**message, "content": [{"type": "output_text", "text": text, "annotations": []}]}
        events += [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**message, "content": []},
            },
            *(
                {
                    "type": "response.output_text.delta",
                    "item_id": "msg_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": p,
                }
                for p in pieces(text, size)
            ),
            {"type": "response.output_item.done", "output_index": 0, "item": done},
        ]
        output.append(done)
    for call_id, name, arguments in calls:
        index = len(output)
        item = {"type": "function_call", "id": f"fc_{index}", "call_id": call_id, "name": name}
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "arguments": "", "status": "in_progress"},
            }
        )
        events += [
            {
                "type": "response.function_call_arguments.delta",
                "item_id": f"fc_{index}",
                "output_index": index,
                "delta": p,
            }
            for p in pieces(arguments, size)
        ]
        done = {**item, "arguments": arguments, "status": "completed"}
        events += [
            {
                "type": "response.function_call_arguments.done",
                "item_id": f"fc_{index}",
                "output_index": index,
                "arguments": arguments,
            },
            {"type": "response.output_item.done", "output_index": index, "item": done},
        ]
        output.append(done)
    events.append(
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": output},
        }
    )
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def gemini_chunks(calls: list[Call], text: str = "") -> list[dict[str, Any]]:
    """A ``streamGenerateContent`` stream: text chunks, then the calls whole in the last chunk."""
    chunks: list[dict[str, Any]] = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": p}]}, "index": 0}]}
        for p in (pieces(text, 5) if text else [])
    ]
    parts = [
        {"functionCall": {"id": call_id, "name": name, "args": json.loads(arguments)}}
        for call_id, name, arguments in calls
    ]
    if parts:
        parts[0]["thoughtSignature"] = "c2lnbmF0dXJl"
    chunks.append(
        {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "modelVersion": "gemini-test",
        }
    )
    return chunks


def chat_chunks(calls: list[Call], text: str = "", size: int = 7) -> list[dict[str, Any]]:
    """A Chat Completions stream: text deltas, then each call's id and name, then its pieces."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    chunks = [
        chunk({"role": "assistant", "content": p}) for p in (pieces(text, size) if text else [])
    ]
    for index, (call_id, name, arguments) in enumerate(calls):
        head = {"index": index, "id": call_id, "type": "function"}
        chunks.append(
            chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        )
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]})
            for p in pieces(arguments, size)
        ]
    chunks.append(chunk({}, "tool_calls" if calls else "stop"))
    return chunks
