"""Model Context Protocol: serving tinytools tools from an MCP server.

* :func:`declarations` — the ``tools`` of a ``tools/list`` result:
  ``{"name", "description", "inputSchema"}``, plus ``annotations`` when the
  tool's policy is classified (an unclassified tool says nothing, and clients
  then assume the worst, as the spec's defaults do):

  - ``readOnlyHint`` — ``policy.side_effects.read_only``;
  - ``destructiveHint`` — ``side_effects.destructive`` and ``idempotentHint``
    — ``policy.runtime.idempotent``, both only for a tool that is not
    read-only (the spec gives them no meaning otherwise);
  - ``openWorldHint`` — the tool uses the network, an external service or
    makes payments.

* :func:`parse_calls` — ``tools/call`` JSON-RPC requests (one, or a batch
  list) as ``ToolCall``s: the request ``id`` becomes the call id (as text:
  answer with the original JSON-RPC id), ``params.name`` the name,
  ``params.arguments`` the arguments (optional in MCP: absent reads as
  ``{}``; not an object fails closed). Requests with another method are
  skipped.
* :func:`tool_results` — one ``CallToolResult`` per ``ToolMessage``:
  ``{"content": [{"type": "text", "text"}], "isError"}``, plus
  ``structuredContent`` when ``structured`` is on and the message's
  ``artifact`` is a JSON object (the tool's structured output). Wrap each
  in the JSON-RPC response for its request.

Requests and results may be the ``mcp`` SDK's objects or plain dicts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from functools import partial

from tinytools._artifacts import ToolOutput
from tinytools._inject import Context
from tinytools._registry import AnyTool
from tinytools._wire import ToolCall, ToolMessage

from ._parsed import SyntheticIds
from ._providers import Tools, as_data, copy_schema, exposed_tools, json_text, make_call

__all__ = ["declarations", "hints", "parse_calls", "tool_results"]


def hints(tool: AnyTool) -> dict[str, bool]:
    """The MCP ``ToolAnnotations`` hints stated by the tool's policy (``{}`` if unclassified)."""
    policy = tool.policy
    if not policy.classified:
        return {}
    effects = policy.side_effects
    found = {"readOnlyHint": effects.read_only}
    if not effects.read_only:
        found["destructiveHint"] = effects.destructive
        found["idempotentHint"] = policy.runtime.idempotent
    found["openWorldHint"] = effects.network or effects.external_service or effects.payment
    return found


def declarations(tools: Tools, *, context: Context | None = None) -> list[dict[str, object]]:
    """The ``tools`` of a ``tools/list`` result (new dicts; only ``Direct`` tools: hidden
    and deferred ones are skipped). A toolset is resolved with ``context``."""
    out: list[dict[str, object]] = []
    for tool in exposed_tools(tools, context):
        declaration: dict[str, object] = {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": copy_schema(tool.parameters),
        }
        if annotations := hints(tool):
            declaration["annotations"] = annotations
        out.append(declaration)
    return out


def parse_calls(request: object) -> list[ToolCall]:
    """The ``tools/call`` requests among one JSON-RPC request or a batch, in order.

    Args:
        request: A request (SDK object or dict) or a list of them.

    Raises:
        ValueError: ``request`` is neither a request nor a list.
    """
    data = as_data(request)
    items = data if isinstance(data, list) else [data]
    calls: list[ToolCall] = []
    for item in items:
        item = as_data(item)
        if not isinstance(item, Mapping):
            raise ValueError(f"expected a JSON-RPC request, not {type(item).__name__}")
        if item.get("method") != "tools/call":
            continue
        params = item.get("params")
        params = params if isinstance(params, Mapping) else {"arguments": params}
        arguments = params.get("arguments")
        calls.append(
            make_call(
                item.get("id"),
                params.get("name"),
                {} if arguments is None and "params" in item else arguments,
                ids=SyntheticIds(partial(json_text, item)),
                index=len(calls),
            )
        )
    return calls


def tool_results(
    messages: Iterable[ToolMessage], *, structured: bool = True
) -> list[dict[str, object]]:
    """One ``CallToolResult`` dict per ``ToolMessage``, in order.

    Args:
        messages: The messages, such as ``dispatch(...).messages``.
        structured: Add ``structuredContent`` when the tool's structured output
            (``ToolOutput.structured`` on the message's ``artifact``, as dispatch
            makes it, or an ``artifact`` that is itself a mapping) is a JSON
            object; turn off to keep it on the host.
    """
    results: list[dict[str, object]] = []
    for m in messages:
        result: dict[str, object] = {
            "content": [{"type": "text", "text": m.content}],
            "isError": m.is_error,
        }
        output = m.artifact.structured if isinstance(m.artifact, ToolOutput) else m.artifact
        if structured and isinstance(output, Mapping):
            with contextlib.suppress(TypeError, ValueError, OverflowError):  # else kept on the host
                result["structuredContent"] = copy_schema(output)  # a JSON deep copy
        results.append(result)
    return results
