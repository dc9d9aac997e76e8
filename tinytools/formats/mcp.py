"""Model Context Protocol: serving tinytools tools from an MCP server.

* :func:`declarations` — the ``tools`` of a ``tools/list`` result:
  ``{"name", "description", "inputSchema"}``, plus ``outputSchema`` when
  the tool's return type is structured (:func:`output_schema`), and
  ``annotations`` when the tool's policy is classified (an unclassified
  tool says nothing, and clients then assume the worst, as the spec's
  defaults do):

  - ``readOnlyHint`` — ``policy.side_effects.read_only``;
  - ``destructiveHint`` — ``side_effects.destructive`` and ``idempotentHint``
    — ``policy.runtime.idempotent``, both only for a tool that is not
    read-only (the spec gives them no meaning otherwise);
  - ``openWorldHint`` — the tool uses the network, an external service or
    makes payments.

* :func:`parse_calls` — ``tools/call`` JSON-RPC requests (one, or a batch
  list), or the ``CallToolRequestParams`` a server handler receives, as
  ``ToolCall``s: the request ``id`` becomes the call id (as text:
  answer with the original JSON-RPC id), ``params.name`` the name,
  ``params.arguments`` the arguments (optional in MCP: absent reads as
  ``{}``; not an object fails closed). In a batch, requests with another
  method are skipped; a single one is a ``ValueError``.
* :func:`assistant_message` — MCP's equivalent of an assistant turn: the
  assistant ``SamplingMessage`` of sampling with tools (spec 2025-11-25),
  ``{"role": "assistant", "content": [{"type": "tool_use", ...}]}``, for a
  client that answers ``sampling/createMessage`` with the model's calls.
* :func:`tool_results` — one ``CallToolResult`` per ``ToolMessage``:
  ``{"content": [{"type": "text", "text"}], "isError"}``, plus
  ``structuredContent`` when ``structured`` is on and the tool has a
  structured output that JSON can carry: an object (a dict, dataclass,
  ``TypedDict`` or ``msgspec.Struct``) as itself, any other value of a
  successful call as ``{"result": value}``, as :func:`output_schema` declares
  it; and the result's images and files as ``image``, ``audio``, ``resource``
  and ``resource_link`` content. Wrap each in the JSON-RPC response for its
  request.
* :func:`server` — all of the above as an ``mcp`` SDK low-level ``Server``,
  every call through ``dispatch``, with progress notifications (extra ``mcp``).

Requests and results may be the ``mcp`` SDK's objects or plain dicts.
"""

from __future__ import annotations

import contextlib
import typing
import urllib.parse
from collections.abc import Iterable, Mapping
from functools import partial

import msgspec

from tinytools._artifacts import ToolOutput
from tinytools._declare.registry import AnyTool
from tinytools._inject import Context
from tinytools._text import printable
from tinytools._wire import ToolCall, ToolMessage

from ._attachments import ATTACHMENT_BYTES, Attached, attach, encoded
from ._mcp_server import server as server
from ._parsed import SyntheticIds
from ._providers import Tools, as_data, copy_schema, exposed_tools, json_text, make_call
from ._received import received
from ._turns import arguments_object, checked_calls

__all__ = [
    "assistant_message",
    "declarations",
    "hints",
    "output_schema",
    "parse_calls",
    "server",
    "tool_results",
]


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


def output_schema(tool: AnyTool) -> dict[str, object] | None:
    """The JSON schema of the tool's structured output, or ``None`` when it has none.

    MCP requires an output schema to describe a JSON object. A tool whose return
    annotation is a type whose values are always objects (a dataclass,
    ``TypedDict``, ``msgspec.Struct``, attrs class or ``dict``) declares that
    type's schema, and its ``structuredContent`` is the value itself. A tool whose
    values are never objects, text or ``None`` (lists, tuples and sets, numbers,
    booleans, numeric enums) declares an object with one required property,
    ``result``, of that type, and :func:`tool_results` sends its value as
    ``{"result": value}``. Other return types declare none: ``str`` (a text
    result carries no structured value), optional values (``None`` carries none
    either), types that mix objects with other values, ``ToolResult``, and
    schema-only tools.
    """
    fn = tool.fn
    if fn is None:
        return None
    try:
        returned = typing.get_type_hints(fn).get("return")
        if returned is None or returned is type(None):
            return None
        schema = msgspec.json.schema(returned)
    except Exception:  # unresolvable hints or a type msgspec cannot describe: no schema
        return None
    defs = schema.get("$defs")
    defs = defs if isinstance(defs, dict) else {}
    kinds = _kinds(schema, defs, 0)
    if kinds == {"object"}:
        ref = schema.get("$ref")
        if isinstance(ref, str) and len(schema) == 2:  # the one $ref msgspec writes for a class
            target = defs.get(ref.rsplit("/", 1)[-1])
            schema = {**target, "$defs": defs} if isinstance(target, dict) else schema
        return copy_schema(schema) if schema.get("type") == "object" else None
    if not kinds or not kinds <= _WRAPPED:
        return None
    inner = {key: value for key, value in schema.items() if key != "$defs"}
    wrapped: dict[str, object] = {
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
    }
    if defs:  # (its references are rooted at the document: they stay at its root)
        wrapped["$defs"] = defs
    return copy_schema(wrapped)


#: Every JSON type.
_ANY_KIND = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
#: The JSON types of values sent as ``{"result": value}``: no object (sent as itself),
#: no text and no null (a tool returning ``str`` or ``None`` has no structured value).
_WRAPPED = frozenset({"array", "boolean", "integer", "number"})
#: The JSON type of each Python value a schema's ``enum`` lists.
_KIND_OF = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}


def _kinds(schema: object, defs: Mapping[str, object], depth: int) -> frozenset[str]:
    """The JSON types a value of ``schema`` (as msgspec writes one) may have: every type
    where it does not say."""
    if not isinstance(schema, Mapping) or depth > 64:  # (a reference cycle: say nothing)
        return _ANY_KIND
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _kinds(defs.get(ref.rsplit("/", 1)[-1]), defs, depth + 1)
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        return frozenset().union(*(_kinds(branch, defs, depth + 1) for branch in branches))
    kind = schema.get("type")
    if isinstance(kind, str):
        return frozenset({kind})
    values = schema.get("enum")
    if isinstance(values, list):
        return frozenset(_KIND_OF.get(type(value), "object") for value in values)
    return _ANY_KIND


def declarations(tools: Tools, *, context: Context | None = None) -> list[dict[str, object]]:
    """The ``tools`` of a ``tools/list`` result (new dicts; only ``Direct`` tools: hidden
    and deferred ones are skipped). A toolset is resolved with ``context``."""
    out: list[dict[str, object]] = []
    for tool in exposed_tools(tools, context):
        declaration: dict[str, object] = {
            "name": tool.name,
            "description": printable(tool.description),  # a lone surrogate: its escape
            "inputSchema": copy_schema(tool.parameters),
        }
        if (schema := output_schema(tool)) is not None:
            declaration["outputSchema"] = schema
        if annotations := hints(tool):
            declaration["annotations"] = annotations
        out.append(declaration)
    return out


def parse_calls(request: object) -> list[ToolCall]:
    """The ``tools/call`` requests among one JSON-RPC request or a batch, in order.

    Args:
        request: A request (SDK object or dict), a list of them, or the
            ``CallToolRequestParams`` (``{"name", "arguments"}``) a server
            handler receives — that call has no request id, so it gets a
            synthetic one (answer the request the params came in).

    Raises:
        TypeError: ``request`` is text or another object that is not a request.
        ValueError: A single request is not a ``tools/call`` request (in a
            batch, other requests are skipped), or a batch holds something
            that is not a request.
    """
    data = received(
        request,
        module="mcp",
        expects="a tools/call request, a batch of requests or CallToolRequestParams",
        accumulator=None,
    )
    if isinstance(data, Mapping) and "method" not in data and "name" in data:
        data = {"method": "tools/call", "params": data}  # CallToolRequestParams
    elif isinstance(data, Mapping) and data.get("method") != "tools/call":
        method = data.get("method")
        said = f"a {json_text(method)} request" if method is not None else "no request"
        raise ValueError(
            f"expected a tools/call request or its params, got {said}; "
            "pass the tools/call request (or the CallToolRequestParams of one)"
        )
    items = data if isinstance(data, list) else [data]
    calls: list[ToolCall] = []
    for item in items:
        item = as_data(item)
        if not isinstance(item, Mapping):
            raise ValueError(f"expected a JSON-RPC request, not {type(item).__name__}")
        if item.get("method") != "tools/call":
            continue
        params = as_data(item.get("params"))
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


def assistant_message(calls: Iterable[ToolCall], text: str | None = None) -> dict[str, object]:
    """The assistant ``SamplingMessage`` holding ``calls`` as ``tool_use`` content.

    MCP has no assistant turn of its own: a server that samples with tools
    (spec 2025-11-25, ``sampling/createMessage`` with ``tools``) receives the
    model's calls in this message, and replays it in its next request. Its
    ``input`` must be an object: a call whose raw text is not a JSON object is
    written with ``{}``.

    Args:
        calls: The calls, as a provider module's ``parse_calls`` gave them.
        text: The text the model wrote before them, if any.
    """
    content: list[object] = [{"type": "text", "text": text}] if text else []
    content += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments_object(call)}
        for call in checked_calls(calls, "mcp.assistant_message")
    ]
    return {"role": "assistant", "content": content}


def tool_results(
    messages: Iterable[ToolMessage],
    *,
    structured: bool = True,
    max_attachment_bytes: int | None = ATTACHMENT_BYTES,
) -> list[dict[str, object]]:
    """One ``CallToolResult`` dict per ``ToolMessage``, in order.

    A message's attachments (a result's ``ImageBlock`` and ``FileBlock``) follow its
    text content: an image as ``image`` content and audio as ``audio`` content
    (base64 ``data`` and ``mimeType``), another file as an embedded ``resource``
    (its ``uri``, else ``attachment:`` and its name, with the ``blob``), and one given
    by reference only as a ``resource_link``. One with data that is not what its
    media type says, or more than ``max_attachment_bytes``, is left out, and a line
    of the text tells the client which and why.

    Args:
        messages: The messages, such as ``dispatch(...).messages``.
        structured: Add ``structuredContent`` when the tool's structured output
            (``ToolOutput.structured`` on the message's ``artifact``, as dispatch
            makes it, or the ``artifact`` itself) encodes as JSON: an object — a
            dict, dataclass, ``TypedDict`` or ``msgspec.Struct`` — as itself, any
            other value as ``{"result": value}`` (not for an error), as
            :func:`output_schema` declares; turn off to keep it on the host.
        max_attachment_bytes: The most bytes of data one attachment may have (None:
            no limit; the default is 3,932,160, 5 MiB in base64).
    """
    results: list[dict[str, object]] = []
    for m in messages:
        text, sent = attach(m, _content, max_attachment_bytes)
        result: dict[str, object] = {
            "content": [{"type": "text", "text": text}, *(part for _, part in sent)],
            "isError": m.is_error,
        }
        output = m.artifact.structured if isinstance(m.artifact, ToolOutput) else m.artifact
        if structured and output is not None:
            with contextlib.suppress(TypeError, ValueError, OverflowError, RecursionError):
                # A JSON deep copy; what JSON cannot carry is kept on the host.
                value = msgspec.json.decode(msgspec.json.encode(output))
                if isinstance(value, dict):  # a dataclass or Struct is an object too
                    result["structuredContent"] = value
                elif not m.is_error:  # as output_schema declares other values
                    result["structuredContent"] = {"result": value}
        results.append(result)
    return results


def _content(attached: Attached) -> dict[str, object]:
    """An attachment as MCP content (MCP takes every kind)."""
    media = attached.media
    if attached.data is None:  # (a url or uri: the block is refused without one)
        name = attached.name or attached.kind
        return {"type": "resource_link", "uri": attached.url, "name": name, "mimeType": media}
    if media.startswith(("image/", "audio/")):
        kind = media.partition("/")[0]
        return {"type": kind, "data": encoded(attached), "mimeType": media}
    uri = attached.url or "attachment:" + urllib.parse.quote(attached.name)
    resource = {"uri": uri, "mimeType": media, "blob": encoded(attached)}
    return {"type": "resource", "resource": resource}
