"""What the formats accept as ``tools``, and how they read it (shared by all of them)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol, TypeAlias, cast

from tinytools._declare.registry import AnyTool, tool_items
from tinytools._declare.spec import Exposure, Tool

if TYPE_CHECKING:
    from tinytools._inject import Context

__all__ = ["Tools", "all_tools", "exposed_tools"]


class _HasTools(Protocol):
    def tools(self) -> Iterable[AnyTool]: ...


#: A ``Registry`` or any toolset (resolved with no context), or any iterable of ``Tool``.
Tools: TypeAlias = _HasTools | Iterable[AnyTool]


def all_tools(tools: Tools, context: Context | None = None) -> list[AnyTool]:
    """Every tool, in order, hidden ones included; a toolset is resolved with ``context``
    (cached, as for a dispatch).

    Raises:
        TypeError: ``tools`` is not iterable, or an item is not a ``Tool``.
        ToolDefinitionError: The toolset cannot be resolved; an object that only lists
            tools (``tools()``, no ``explain``) raised, answered with no tools or with
            a non-tool (said as dispatch says it for a toolset of the host's own).
    """
    if callable(getattr(tools, "explain", None)) and callable(getattr(tools, "tools", None)):
        from tinytools.toolsets._base import resolve

        return list(resolve(tools, context).tools)
    method = getattr(tools, "tools", None)
    if callable(method):  # an object that only lists tools: read as dispatch reads a toolset
        from tinytools.toolsets._base import host_tools

        # (asked as `tools()`, as `_HasTools` declares it, when no context was given)
        ask = method if context is not None else lambda _none: method()
        return list(host_tools(tools, ask, context))
    source = cast("Iterable[object]", tools)
    found: list[AnyTool] = []
    for item in tool_items(source):
        if not isinstance(item, Tool):
            raise TypeError(f"{item!r} is not a Tool; decorate it with @tool first")
        found.append(item)
    return found


def exposed_tools(tools: Tools, context: Context | None = None) -> tuple[AnyTool, ...]:
    """The tools to declare, in order: the ``Direct`` ones. Hidden tools are never shown
    to a model; ``Deferred`` ones are found through discovery's ``tool_search``
    (``tinytools.discovery``) rather than declared.

    Raises:
        TypeError: An item is not a ``Tool``.
    """
    return tuple(tool for tool in all_tools(tools, context) if tool.exposure is Exposure.Direct)
