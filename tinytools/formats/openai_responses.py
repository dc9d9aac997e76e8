"""OpenAI Responses API: tools in, ``function_call`` items out, ``function_call_output`` back.

* :func:`declarations` — ``tools=[{"type": "function", "name", "description",
  "parameters", "strict"}]``. The Responses API makes function tools strict
  unless told otherwise, so ``"strict": false`` is always sent explicitly;
  ``strict=True`` applies :func:`tinytools.formats.openai_chat.strict_schema`.
* :func:`parse_calls` — the ``function_call`` items of a response's
  ``output``, with ``call_id`` as the call id and ``arguments`` kept verbatim.
  Other items (messages, reasoning, hosted tools, custom tool calls, which
  need an answer of another type) are not function calls and are skipped.
* :func:`tool_results` — ``{"type": "function_call_output", "call_id",
  "output"}`` input items.

Calls fail closed as in ``openai_chat``; a response may be the SDK's
``Response`` or a plain dict, or just its ``output`` list.
"""

from __future__ import annotations

from collections.abc import Iterable

from tinytools._inject import Context
from tinytools._wire import ToolCall, ToolMessage

from ._providers import (
    Tools,
    exposed_tools,
    openai_function,
    typed_calls,
)

__all__ = ["declarations", "parse_calls", "tool_results"]


def declarations(
    tools: Tools, *, strict: bool = False, context: Context | None = None
) -> list[dict[str, object]]:
    """The ``tools`` list of a Responses request.

    Args:
        tools: A ``Registry`` (or any toolset with ``tools()``) or an iterable
            of ``Tool``; hidden tools are skipped.
        strict: Project each schema for strict mode (a tool whose schema
            strict mode cannot express stays ``"strict": false``, unchanged).
        context: The context a toolset is resolved with (pass the dispatch's, so
            that what is declared is what dispatch will admit).

    Returns:
        New dicts, ``{"type": "function", "name", "description",
        "parameters", "strict"}``.
    """
    return [
        {"type": "function", **openai_function(t, strict=strict)}
        for t in exposed_tools(tools, context)
    ]


def parse_calls(response: object) -> list[ToolCall]:
    """The function calls of a response, in output order.

    Args:
        response: A ``Response`` (SDK object or dict) or its ``output`` list.

    Raises:
        ValueError: ``response`` has no ``output`` list.
    """
    return typed_calls(
        response,
        list_key="output",
        what="a Responses response",
        kind="function_call",
        id_key="call_id",
        arguments_key="arguments",
        raw_string=True,
    )


def tool_results(messages: Iterable[ToolMessage]) -> list[dict[str, object]]:
    """One ``function_call_output`` item per ``ToolMessage``, in order.

    The API has no error flag: an error's content is sent as it is (it
    already says what failed).
    """
    return [
        {"type": "function_call_output", "call_id": m.tool_call_id, "output": m.content}
        for m in messages
    ]
