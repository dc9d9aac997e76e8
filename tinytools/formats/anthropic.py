"""Anthropic Messages API: tools in, ``tool_use`` blocks out, ``tool_result`` blocks back.

* :func:`declarations` — ``tools=[{"name", "description", "input_schema"}]``;
  the schema goes as it is (Anthropic takes full JSON Schema).
* :func:`parse_calls` — the ``tool_use`` blocks of a message's ``content``.
  ``input`` arrives decoded; one that is not an object fails closed: the call
  keeps it as JSON text, with ``invalid`` saying why. Server-side tool blocks
  (``server_tool_use``, ``mcp_tool_use``) are run by Anthropic and skipped.
* :func:`tool_results` — Anthropic wants every result of a turn in *one*
  user message, so the list has one message (or none, for no results):
  ``[{"role": "user", "content": [{"type": "tool_result", "tool_use_id",
  "content", "is_error"}, ...]}]``. Add any text for the model after the
  results, in the same message's ``content``.

A message may be the SDK's ``Message`` or a plain dict, or just its
``content`` list.
"""

from __future__ import annotations

from collections.abc import Iterable

from tinytools._inject import Context
from tinytools._wire import ToolCall, ToolMessage

from ._providers import (
    Tools,
    copy_schema,
    exposed_tools,
    typed_calls,
)

__all__ = ["declarations", "parse_calls", "tool_results"]


def declarations(tools: Tools, *, context: Context | None = None) -> list[dict[str, object]]:
    """The ``tools`` list of a Messages request (new dicts; only ``Direct`` tools: hidden
    and deferred ones are skipped). A toolset is resolved with ``context``."""
    return [
        {"name": t.name, "description": t.description, "input_schema": copy_schema(t.parameters)}
        for t in exposed_tools(tools, context)
    ]


def parse_calls(response: object) -> list[ToolCall]:
    """The ``tool_use`` blocks of a message, in order.

    Args:
        response: A ``Message`` (SDK object or dict) or its ``content`` list.

    Raises:
        ValueError: ``response`` has no ``content`` list.
    """
    return typed_calls(
        response,
        list_key="content",
        what="an Anthropic message",
        kind="tool_use",
        id_key="id",
        arguments_key="input",
    )


def tool_results(messages: Iterable[ToolMessage]) -> list[dict[str, object]]:
    """Every ``ToolMessage`` as a ``tool_result`` block of one user message.

    Returns:
        ``[]`` when there are no messages, else a list of one message dict.
    """
    blocks: list[object] = [
        {
            "type": "tool_result",
            "tool_use_id": m.tool_call_id,
            "content": m.content,
            "is_error": m.is_error,
        }
        for m in messages
    ]
    return [{"role": "user", "content": blocks}] if blocks else []
