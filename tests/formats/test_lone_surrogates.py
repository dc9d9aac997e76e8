"""A lone surrogate escape (``"\\ud800"``) in a call a model wrote: every dialect reads
the call (the surrogate kept, as Python's ``json`` reads it), and dispatch tells the
model the string is not valid text. msgspec reports such JSON as truncated, so the
call was lost to prose (``llama_json``) or answered as JSON that is not valid."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from tinytools import Registry, ToolCall, dispatch_sync, tool
from tinytools.formats import anthropic, deepseek, json_in_tag, llama_json, mistral, xml


@tool
def search(query: str, tags: list[str] | None = None) -> str:
    """Search."""
    return query


TOOLS = Registry.of(search)
LONE = '"\\ud800"'  # JSON text: an escaped high surrogate with no low half

TEXTS = {
    "json_in_tag": (
        json_in_tag,
        f'<tool_call>{{"name": "search", "arguments": {{"query": {LONE}}}}}</tool_call>',
    ),
    "llama_json": (llama_json, f'{{"name": "search", "parameters": {{"query": {LONE}}}}}'),
    "mistral": (mistral, f'[TOOL_CALLS] [{{"name": "search", "arguments": {{"query": {LONE}}}}}]'),
    "mistral-v11": (mistral, f'[TOOL_CALLS]search{{"query": {LONE}}}'),
    "deepseek": (
        deepseek,
        f'{deepseek.CALL_BEGIN}search{deepseek.SEP}{{"query": {LONE}}}{deepseek.CALL_END}',
    ),
    "glm-literal": (
        xml,
        f"<tool_call>search<arg_key>query</arg_key><arg_value>{LONE}</arg_value></tool_call>",
    ),
    "glm-array": (
        xml,
        "<tool_call>search<arg_key>query</arg_key><arg_value>x</arg_value>"
        f"<arg_key>tags</arg_key><arg_value>[{LONE}]</arg_value></tool_call>",
    ),
}


@pytest.mark.parametrize("dialect", list(TEXTS))
def test_a_dialect_reads_the_call_and_dispatch_names_the_surrogate(dialect: str) -> None:
    module, text = TEXTS[dialect]
    parsed: Any = module.parse(text, [search])
    assert parsed.errors == ()
    [call] = parsed.calls
    assert call.name == "search"
    result = dispatch_sync([call], TOOLS)
    [message] = result.messages
    assert message.is_error
    assert "String holds a lone surrogate" in message.content
    msgspec.json.encode(result)


def test_a_streamed_call_is_read_as_the_final_response_reads_it() -> None:
    """Anthropic's streamed ``input_json_delta`` text: its ``invalid`` said "Input data
    was truncated"; it is the call ``parse_calls`` reads from the final message."""
    accumulator = anthropic.ToolCallAccumulator()
    for event in [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "search", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": f'{{"query": {LONE}}}'},
        },
        {"type": "content_block_stop", "index": 0},
    ]:
        accumulator.add(event)
    final = {
        "content": [
            {"type": "tool_use", "id": "t1", "name": "search", "input": {"query": "\ud800"}}
        ]
    }
    assert accumulator.calls() == anthropic.parse_calls(final)


def test_a_call_with_such_text_is_rendered_from_its_raw_text() -> None:
    """Rendering never decodes the escape into a surrogate no prompt text can carry: the
    raw text is written as a JSON string, and reads back as the same call."""
    call = ToolCall("c", "search", f'{{"query": {LONE}}}')
    rendered = json_in_tag.render_call(call)
    rendered.encode()  # no lone surrogate in the text
    [back] = json_in_tag.parse(rendered, [search]).calls
    assert back.arguments == call.arguments
