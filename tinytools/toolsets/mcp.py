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
server sent no content blocks (the spec asks servers to send both); text, image
and resource blocks become content blocks. An answer that is not a
``CallToolResult`` at all (no ``content``, no ``structuredContent``) is the
call's error, never an empty success.

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
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import msgspec

from tinytools._exposure import ExposureExplanation
from tinytools._registry import AnyTool
from tinytools._spec import Tool, check_name
from tinytools._tool_policy import ToolPolicy
from tinytools._validate import preview
from tinytools._wire import ContentBlock, FileBlock, ImageBlock, TextBlock, ToolResult
from tinytools.errors import ToolDefinitionError

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


class _Call:
    """A tool's function: one ``session.call_tool`` under the server's own name."""

    __slots__ = ("name", "session")

    def __init__(self, session: McpSession, name: str) -> None:
        self.session = session
        self.name = name

    async def __call__(self, **arguments: object) -> ToolResult:
        result = await self.session.call_tool(self.name, dict(arguments))
        return _result(result)

    def __repr__(self) -> str:
        return f"<MCP tool {self.name!r}>"


def _base64(data: object) -> bytes | None:
    """A content item's base64 data, decoded strictly (``None`` when there is none).

    Raises:
        ValueError: The data is not valid base64.
    """
    if not isinstance(data, str):
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ValueError(str(error)) from None


def _block(item: object) -> ContentBlock:
    try:
        return _content(item)
    except ValueError as error:
        kind = _field(item, "type")
        return TextBlock(f"[MCP {kind} content whose data is not valid base64: {error}]")


def _content(item: object) -> ContentBlock:
    kind = _field(item, "type")
    if kind == "text":
        return TextBlock(str(_field(item, "text") or ""))
    if kind in ("image", "audio"):
        data = _field(item, "data")
        media = str(_field(item, "mimeType", "mime_type") or "application/octet-stream")
        raw = _base64(data)
        if kind == "image":
            return ImageBlock(media, raw)
        return FileBlock("audio", media, raw)
    if kind == "resource_link":
        uri = str(_field(item, "uri") or "")
        media = str(_field(item, "mimeType", "mime_type") or "application/octet-stream")
        return FileBlock(str(_field(item, "name") or uri), media, None, uri)
    if kind == "resource":
        resource = _field(item, "resource")
        uri = str(_field(resource, "uri") or "")
        text = _field(resource, "text")
        if isinstance(text, str):
            return TextBlock(text)
        blob = _field(resource, "blob")
        media = str(_field(resource, "mimeType", "mime_type") or "application/octet-stream")
        return FileBlock(uri, media, _base64(blob), uri)
    return TextBlock(f"[unsupported MCP content of type {preview(kind, 80)}]")


def _result(result: object) -> ToolResult:
    """An MCP ``CallToolResult`` as a ``ToolResult``."""
    content = _field(result, "content")
    structured = _field(result, "structuredContent", "structured_content")
    is_error = bool(_field(result, "isError", "is_error"))
    if isinstance(content, str):  # off the spec, but seen: the text itself, not its letters
        blocks: tuple[ContentBlock, ...] = (TextBlock(content),)
    elif isinstance(content, Mapping):  # off the spec: one block, not in a list
        blocks = (_block(content),)
    elif isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        blocks = tuple(_block(item) for item in content)
    elif content is None and structured is None and not is_error:
        return ToolResult.error(
            f"The MCP server's answer is not a tool result (found {preview(result, 80)})."
        )
    else:
        blocks = ()
    if not blocks and structured is not None:  # the model reads it as the text
        with contextlib.suppress(TypeError, ValueError, OverflowError, RecursionError):
            blocks = (TextBlock(msgspec.json.encode(structured).decode()),)
    if is_error and not any(isinstance(b, TextBlock) and b.text.strip() for b in blocks):
        blocks = (TextBlock("The MCP server reported an error without a message."), *blocks)
    return ToolResult(content=blocks, structured=structured, is_error=is_error)


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
