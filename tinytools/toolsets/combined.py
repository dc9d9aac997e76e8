"""``Combined``: several toolsets as one."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from tinytools._declare.exposure import ExposureExplanation
from tinytools._declare.registry import AnyTool
from tinytools.errors import ToolDefinitionError

from ._base import Adaptor, Resolution, Toolset, When, is_remote, withheld

if TYPE_CHECKING:
    from tinytools._inject import Context

__all__ = ["Combined"]


def _member(value: Toolset) -> Toolset:
    if not (callable(getattr(value, "tools", None)) and callable(getattr(value, "explain", None))):
        raise TypeError(
            f"Combined takes toolsets (a Registry, an adaptor, or an object with "
            f"tools(context) and explain(context)), got {value!r}"
        )
    return value


@attrs.frozen(init=False)
class Combined(Adaptor):
    """The tools of every member, in member order.

    A tool that a remote server runs (``McpToolset``'s) whose name another member's tool
    has is left out and explained, and each dispatch reports it (``ToolWithheld``): the
    host's tool keeps the name, or, between remote tools, the first member's.

    Args:
        *toolsets: The members.

    Raises:
        TypeError: A member is not a toolset (when built).
        ToolDefinitionError: Two members have a tool of the same name, neither of them
            remote (when resolved); the error names both members.
    """

    toolsets: tuple[Toolset, ...]

    def __init__(self, *toolsets: Toolset) -> None:
        self.__attrs_init__(tuple(map(_member, toolsets)))

    def members(self) -> tuple[object, ...]:
        return self.toolsets

    def _apply(self, inputs: tuple[Resolution, ...], context: Context | None) -> Resolution:
        # Who keeps each name: the first local tool of that name (two local ones are the
        # host's mistake), else the first remote one; every other remote one is left out.
        keeper: dict[str, tuple[int, AnyTool]] = {}
        problems: list[str] = []
        for position, resolution in enumerate(inputs):
            for tool in resolution.tools:
                kept = keeper.get(tool.name)
                if kept is None or (is_remote(kept[1]) and not is_remote(tool)):
                    keeper[tool.name] = (position, tool)
                elif not is_remote(tool):
                    problems.append(
                        f"tool {tool.name!r} is in member {kept[0]} ({self.toolsets[kept[0]]!r}) "
                        f"and in member {position} ({self.toolsets[position]!r}); "
                        "wrap one in Prefixed or Renamed, or filter one out"
                    )
        if problems:
            raise ToolDefinitionError("Combined", problems)
        tools: list[AnyTool] = []
        left: list[ExposureExplanation] = []
        gates: dict[str, tuple[When, ...]] = {}
        for position, resolution in enumerate(inputs):
            for tool in resolution.tools:
                owner, keeping = keeper[tool.name]
                if owner == position and keeping is tool:
                    tools.append(tool)
                else:
                    member = f"a tool of member {owner} ({self.toolsets[owner]!r})"
                    left.append(withheld(tool.name, member, "Combined"))
            gates.update(
                (name, whens)
                for name, whens in resolution.gates.items()
                if keeper.get(name, (position,))[0] == position
            )
        return Resolution(
            tuple(tools),
            (*(e for r in inputs for e in r.explanations), *left),
            gates,
            tuple(left),
        )

    def __repr__(self) -> str:
        return f"Combined({', '.join(map(repr, self.toolsets))})"
