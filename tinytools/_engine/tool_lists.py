"""Tools handed to ``dispatch`` as a tuple or a list: made into a ``Registry`` once.

A registry is a dict of the tools by name; building one costs time in proportion to
the tools, so a sequence passed again is looked up here (a bounded memo, keyed by
the sequence's identity, which changes nothing but speed) instead of rebuilt.

A tuple cannot change: the one made from it is used as long as it is the same
tuple. A list can, so it is never trusted blindly, and yet checking it must not cost
time in proportion to its length (the issue's limit: a call at 10,000 tools within
1.2x of one at 10). What a dispatch reads from the registry is the tool of each
called name, so that is what is checked, in time proportional to the batch: the list
has the same length, and at the position each called tool had, the list still holds
that same tool object. Appending, inserting, removing or replacing a called tool is
therefore always seen. A call to a name the registry does not hold (unknown, a
case variant), and any list holding discovery's ``tool_search``/``tool_call``
(which reach tools by other names), compares the whole list instead, as before.

The one change this does not see on every dispatch is a slot the batch does not
call replaced, in place, by another tool (``tools[3] = other``); the next call of
that slot's old or new name sees it. Documented on ``dispatch``: pass a new list, or
a ``Registry``, after editing one in place.
"""

from __future__ import annotations

from tinytools._declare.registry import AnyTool, Registry
from tinytools._memo import remember
from tinytools._wire import ToolCall
from tinytools.toolsets._intrinsic import Intrinsic

__all__ = ["registry_of"]


class _Known:
    """A sequence of tools seen before, and the registry made from it."""

    __slots__ = ("index", "registry", "snapshot", "tools")

    def __init__(
        self,
        tools: tuple[AnyTool, ...] | list[AnyTool],
        snapshot: tuple[AnyTool, ...] | list[AnyTool],
        registry: Registry,
        index: dict[str, int] | None,
    ) -> None:
        self.tools = tools
        self.snapshot = snapshot
        self.registry = registry
        self.index = index  # name -> position; None when every check compares the list


_KNOWN: dict[int, _Known] = {}


def registry_of(
    tools: tuple[AnyTool, ...] | list[AnyTool], calls: tuple[ToolCall, ...]
) -> Registry:
    """The registry of ``tools`` for a batch of ``calls`` (see the module's docs)."""
    known = _KNOWN.get(id(tools))
    if (
        known is not None
        and known.tools is tools
        and (type(tools) is tuple or _unchanged(known, tools, calls))  # type: ignore[arg-type]
    ):
        return known.registry
    registry = Registry(tools)
    snapshot = tools if type(tools) is tuple else list(tools)
    index: dict[str, int] | None = {tool.name: at for at, tool in enumerate(snapshot)}
    if any(type(tool.fn) is Intrinsic for tool in snapshot):
        index = None
    remember(_KNOWN, id(tools), _Known(tools, snapshot, registry, index))
    return registry


def _unchanged(known: _Known, tools: list[AnyTool], calls: tuple[ToolCall, ...]) -> bool:
    snapshot = known.snapshot
    if len(tools) != len(snapshot):
        return False
    index = known.index
    if index is not None:
        for call in calls:
            at = index.get(call.name)
            if at is None:
                break  # a name the registry does not hold: compare the whole list
            if tools[at] is not snapshot[at]:
                return False
        else:
            return True
    return snapshot == tools
