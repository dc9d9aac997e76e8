"""``McpToolset``: the tools of a live MCP client session as a toolset (extra ``mcp``).

The session is the official SDK's ``mcp.ClientSession`` (or its ``mcp.Client``,
or anything with the same ``list_tools`` / ``call_tool`` methods). Listing tools
is asynchronous and a toolset's ``tools()`` is not, so the toolset keeps a
snapshot: ``await toolset.refresh()`` (re)lists the server's tools — call it once
after the session is initialised, and again when the server says its tools
changed. Each MCP tool becomes a schema-built ``Tool`` whose arguments are
validated locally against the server's ``inputSchema`` (all of JSON Schema draft
7) before anything is sent; its calls go to ``session.call_tool`` under the
server's own name, whatever ``Prefixed`` or ``Renamed`` made of it. An MCP
result with ``isError`` is answered as an error message (one with no text says
the server gave none); structured content is kept as the result's
``structured`` value, and is also the model's text, as compact JSON, when the
server sent no content blocks (the spec asks servers to send both); text, image,
audio and resource blocks become content blocks. An answer that is no valid
``CallToolResult`` — ``content`` that is no list of content blocks (a number,
a bool, bytes, text, one block on its own, none), a block of a type MCP does not
define or without the fields its type needs, an ``isError`` that is no boolean,
``structuredContent`` that is no object — is the call's error, naming what the
server sent wrong: never an empty success.

The tools are async: dispatch them with ``await dispatch(...)`` on the event
loop the session runs on (``dispatch_sync`` would run them on another loop).

This module imports nothing from ``mcp`` itself, so the session may come from
either major version of the SDK; the extra ``mcp`` installs it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import importlib
import inspect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import msgspec

from tinytools._declare.exposure import ExposureExplanation
from tinytools._declare.registry import AnyTool
from tinytools._declare.spec import Tool, check_name
from tinytools._declare.tool_policy import ToolPolicy
from tinytools._text import preview
from tinytools._trace_context import outgoing
from tinytools._wire import ContentBlock, FileBlock, ImageBlock, TextBlock, ToolResult
from tinytools.errors import ToolDefinitionError
from tinytools.toolsets._base import Remote

if TYPE_CHECKING:
    from tinytools._inject import Context

__all__ = ["McpSession", "McpToolset"]

_PAGES = 1000  # at most this many pages of tools (a server that never stops paging)


class McpSession(Protocol):
    """What the toolset uses of an MCP client session."""

    async def list_tools(self, *args: object, **kwargs: object) -> object: ...

    async def call_tool(self, name: str, arguments: dict[str, object] | None = None) -> object: ...


def _field(value: object, *names: str) -> object:
    """The first of ``names`` that ``value`` has (SDK 1.x spells fields in camelCase, 2.x in
    snake_case)."""
    for name in names:
        found = getattr(value, name, None)
        if found is not None:
            return found
        if isinstance(value, Mapping) and name in value:
            return value[name]
    return None


class _Call(Remote):
    """A tool's function: one ``session.call_tool`` under the server's own name."""

    __slots__ = ("name", "session")

    def __init__(self, session: McpSession, name: str) -> None:
        self.session = session
        self.name = name

    async def __call__(self, **arguments: object) -> ToolResult:
        meta = outgoing()  # the current span (the call's own, under tinytools.otel)
        if meta is None or not _takes_meta(self.session):
            result = await self.session.call_tool(self.name, dict(arguments))
        else:  # (its W3C trace context, so the server's spans join the host's trace)
            result = await self.session.call_tool(self.name, dict(arguments), meta=meta)  # type: ignore[call-arg]
        return _result(result)

    def __repr__(self) -> str:
        return f"<MCP tool {self.name!r}>"


#: Whether a session type's ``call_tool`` takes ``meta=`` (the SDK's since 1.x; a
#: hand-made session may not), by type.
_META: dict[type, bool] = {}


def _takes_meta(session: object) -> bool:
    kind = type(session)
    known = _META.get(kind)
    if known is None:
        try:
            parameters = inspect.signature(session.call_tool).parameters  # type: ignore[attr-defined]
        except (TypeError, ValueError):
            parameters = {}  # type: ignore[assignment]
        known = _META[kind] = "meta" in parameters or any(
            p.kind is p.VAR_KEYWORD for p in parameters.values()
        )
    return known


class _Wrong(str):
    """What is wrong with a part of a server's answer (a type of its own, so that it is
    never taken for the text that part holds)."""

    __slots__ = ()


#: JSON values that are no object, nor text (an SDK's URL type is not among them).
_NOT_OBJECTS = (bool, int, float, bytes, bytearray, list, tuple, Mapping)


def _text(value: object) -> str | None:
    """A field that must hold text (a URI, a name), as text; ``None`` when it holds none."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, _NOT_OBJECTS):
        return None
    return str(value)  # (SDK 1.x spells a URI as its ``AnyUrl``)


def _base64(data: object, what: str) -> bytes | _Wrong:
    """``data`` decoded strictly from base64, or what is wrong with it."""
    if not isinstance(data, str):
        return _Wrong(f"has no base64 {what}")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as error:
        return _Wrong(f"{what} is not valid base64 ({error})")


def _media(part: object, required: bool) -> str | _Wrong:
    """A part's media type (``application/octet-stream`` when an optional one is missing)."""
    media = _field(part, "mimeType", "mime_type")
    if isinstance(media, str):
        return media
    if media is None and not required:
        return "application/octet-stream"
    return _Wrong("has no mimeType" if media is None else "has a mimeType that is no text")


def _text_block(item: object) -> ContentBlock | _Wrong:
    text = _field(item, "text")
    return TextBlock(text) if isinstance(text, str) else _Wrong("has no text")


def _media_block(item: object) -> ContentBlock | _Wrong:
    data = _base64(_field(item, "data"), "data")
    if isinstance(data, _Wrong):
        return data
    media = _media(item, required=True)
    if isinstance(media, _Wrong):
        return media
    if _field(item, "type") == "image":
        return ImageBlock(media, data)
    return FileBlock("audio", media, data)


def _link_block(item: object) -> ContentBlock | _Wrong:
    uri, name = _text(_field(item, "uri")), _text(_field(item, "name"))
    if uri is None or name is None:
        return _Wrong("has no uri" if uri is None else "has no name")
    media = _media(item, required=False)
    return media if isinstance(media, _Wrong) else FileBlock(name, media, None, uri)


def _resource_block(item: object) -> ContentBlock | _Wrong:
    resource = _field(item, "resource")
    uri = _text(_field(resource, "uri"))
    if uri is None:
        return _Wrong("has no resource with a uri")
    text = _field(resource, "text")
    if isinstance(text, str):
        return TextBlock(text)
    blob = _field(resource, "blob")
    if blob is None and text is None:
        return _Wrong("has neither text nor a base64 blob")
    data = _base64(blob, "blob")
    if isinstance(data, _Wrong):
        return data
    media = _media(resource, required=False)
    return media if isinstance(media, _Wrong) else FileBlock(uri, media, data, uri)


#: How each MCP content type is read (every type the specification defines).
_READERS = {
    "text": _text_block,
    "image": _media_block,
    "audio": _media_block,
    "resource_link": _link_block,
    "resource": _resource_block,
}


def _content(item: object) -> ContentBlock | _Wrong:
    """One item of an MCP result's ``content`` as a block, or what is wrong with it."""
    kind = _field(item, "type")
    if not isinstance(kind, str):
        return _Wrong(f"is not a content block ({preview(item, 60)})")
    read = _READERS.get(kind)
    if read is None:
        known = ", ".join(_READERS)
        return _Wrong(f"has a type tinytools does not read ({preview(kind, 40)}; it reads {known})")
    block = read(item)
    return _Wrong(f"({kind}) {block}") if isinstance(block, _Wrong) else block


def _read(result: object) -> ToolResult | _Wrong:
    """An MCP ``CallToolResult`` as a ``ToolResult``, or what is wrong with it."""
    content = _field(result, "content")
    if content is None:
        return _Wrong(f"it has no content list (it sent {preview(result, 80)})")
    if not isinstance(content, Sequence) or isinstance(content, (str, bytes, bytearray)):
        return _Wrong(f"its content must be a list of content blocks, not {preview(content, 60)}")
    is_error = _field(result, "isError", "is_error")
    if is_error is not None and not isinstance(is_error, bool):
        return _Wrong(f"its isError must be true or false, not {preview(is_error, 40)}")
    structured = _field(result, "structuredContent", "structured_content")
    if structured is not None and not isinstance(structured, Mapping):
        return _Wrong(f"its structuredContent must be a JSON object, not {preview(structured, 60)}")
    blocks: list[ContentBlock] = []
    for index, item in enumerate(content):
        block = _content(item)
        if isinstance(block, _Wrong):
            return _Wrong(f"its content[{index}] {block}")
        blocks.append(block)
    if not blocks and structured is not None:  # the model reads it as the text
        with contextlib.suppress(TypeError, ValueError, OverflowError, RecursionError):
            blocks = [TextBlock(msgspec.json.encode(structured).decode())]
    if is_error and not any(isinstance(b, TextBlock) and b.text.strip() for b in blocks):
        blocks.insert(0, TextBlock("The MCP server reported an error without a message."))
    return ToolResult(content=tuple(blocks), structured=structured, is_error=bool(is_error))


def _result(result: object) -> ToolResult:
    """An MCP ``CallToolResult`` as a ``ToolResult``; a malformed one is the call's error,
    naming what the server sent wrong."""
    read = _read(result)
    if isinstance(read, _Wrong):
        return ToolResult.error(f"The MCP server's answer is not a valid tool result: {read}.")
    return read


def _description(value: object) -> str:
    """A listed tool's description: its text, else none (a server may send anything)."""
    return value if isinstance(value, str) else ""


def _policy(annotations: object) -> ToolPolicy:
    """The server's hints, as an unclassified policy (a remote server's claims are
    not a review: ``ToolPolicyMiddleware`` still treats the tool as unclassified)."""
    effects: dict[str, bool] = {"external_service": True}
    if _field(annotations, "readOnlyHint", "read_only_hint") is True:
        effects["read_only"] = True
    if _field(annotations, "destructiveHint", "destructive_hint") is True:
        effects["destructive"] = True
    return ToolPolicy().with_side_effects(**effects)


class McpToolset:
    """The tools of a live MCP client session (see the module docstring).

    Args:
        session: An initialised ``mcp.ClientSession`` (or ``mcp.Client``).

    Raises:
        ToolDefinitionError: :meth:`tools` before the first :meth:`refresh`.
    """

    def __init__(self, session: McpSession) -> None:
        self.session = session
        self._tools: tuple[AnyTool, ...] | None = None
        self._explained: tuple[ExposureExplanation, ...] = ()

    async def refresh(self) -> McpToolset:
        """List the server's tools (every page) and keep them; returns this toolset.

        Raises:
            Exception: Whatever the session raises (a closed session, a server error).
        """
        listed: list[object] = []
        cursor: object = None
        for _ in range(_PAGES):
            page = await self._page(cursor)
            found = _field(page, "tools")
            if isinstance(found, Sequence) and not isinstance(found, (str, bytes, bytearray)):
                listed += list(found)
            cursor = _field(page, "nextCursor", "next_cursor")
            if not cursor:
                break
        self.load(listed)
        return self

    async def _page(self, cursor: object) -> object:
        if cursor is None:
            return await self.session.list_tools()
        try:
            return await self.session.list_tools(cursor=cursor)
        except TypeError:  # SDK 2.x ClientSession pages through request params
            types = importlib.import_module("mcp.types")  # the extra's SDK, loaded on need
            params = types.PaginatedRequestParams(cursor=cursor)
            return await self.session.list_tools(params=params)

    def load(self, listed: Sequence[object]) -> None:
        """Keep ``listed`` (MCP ``Tool`` values, or dicts in their JSON shape) as the
        toolset's tools; a tool that cannot be used is left out and explained.

        A tool without an ``inputSchema`` (or with the schema ``true``) takes any
        arguments object; one whose schema is no JSON object schema is left out,
        never given a schema that accepts anything. An explanation names a
        left-out tool by a short printable preview of what the server sent.
        """
        tools: list[AnyTool] = []
        explained: list[ExposureExplanation] = []
        seen: set[str] = set()
        for item in listed:
            name = _field(item, "name")
            problem = check_name(name)
            # (a name the server sent may be anything: huge, nested, a lone surrogate)
            label = (
                name
                if isinstance(name, str) and problem is None
                else preview(name, 80, raw_text=True)
            )
            if problem is None and label in seen:
                problem = "the server listed two tools of this name"
            schema = _field(item, "inputSchema", "input_schema")
            if schema is None or schema is True:
                schema = {"type": "object"}
            if problem is None and not isinstance(schema, Mapping):
                problem = f"its input schema is not a JSON object schema: {preview(schema, 60)}"
            if problem is not None:
                reason = f"left out: {problem}"
                explained.append(ExposureExplanation(label, reason, "McpToolset"))
                continue
            assert isinstance(schema, Mapping)
            seen.add(label)
            try:
                tools.append(
                    Tool.from_schema(
                        label,
                        _description(_field(item, "description")),
                        schema,
                        _Call(self.session, label),
                        policy=_policy(_field(item, "annotations")),
                    )
                )
            except ToolDefinitionError as error:
                reason = f"left out: its input schema cannot be used ({error})"
                explained.append(ExposureExplanation(label, reason, "McpToolset"))
        self._tools = tuple(tools)
        self._explained = tuple(explained)

    def tools(self, context: Context | None = None) -> tuple[AnyTool, ...]:
        """The session's tools as last listed.

        Raises:
            ToolDefinitionError: The tools were never listed.
        """
        if self._tools is None:
            raise ToolDefinitionError(
                "McpToolset",
                ["the session's tools were never listed; `await toolset.refresh()` first"],
            )
        return self._tools

    def explain(self, context: Context | None = None) -> tuple[ExposureExplanation, ...]:
        """The server's tools that could not be used, and why."""
        return self._explained

    def __repr__(self) -> str:
        count = "unlisted" if self._tools is None else f"{len(self._tools)} tools"
        return f"McpToolset({count})"
