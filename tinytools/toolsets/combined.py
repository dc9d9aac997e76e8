"""``Combined``: several toolsets as one."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from tinytools.errors import ToolDefinitionError

from ._base import Adaptor, Resolution, Toolset, When, _Memo

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

    Args:
        *toolsets: The members.

    Raises:
        TypeError: A member is not a toolset (when built).
        ToolDefinitionError: Two members have a tool of the same name (when
            resolved); the error names both members.
    """

    toolsets: tuple[Toolset, ...]
    _memo: _Memo = attrs.field(init=False, factory=_Memo, eq=False, hash=False, repr=False)

    def __init__(self, *toolsets: Toolset) -> None:
        self.__attrs_init__(tuple(map(_member, toolsets)))

    def members(self) -> tuple[object, ...]:
        return self.toolsets

    def _apply(self, inputs: tuple[Resolution, ...], context: Context | None) -> Resolution:
        owner: dict[str, int] = {}
        problems: list[str] = []
        for position, resolution in enumerate(inputs):
            for tool in resolution.tools:
                first = owner.setdefault(tool.name, position)
                if first != position:
                    problems.append(
                        f"tool {tool.name!r} is in member {first} ({self.toolsets[first]!r}) "
                        f"and in member {position} ({self.toolsets[position]!r}); "
                        "wrap one in Prefixed or Renamed, or filter one out"
                    )
        if problems:
            raise ToolDefinitionError("Combined", problems)
        gates: dict[str, tuple[When, ...]] = {}
        for resolution in inputs:
            gates.update(resolution.gates)
        return Resolution(
            tuple(tool for r in inputs for tool in r.tools),
            tuple(e for r in inputs for e in r.explanations),
            gates,
        )

    def __repr__(self) -> str:
        return f"Combined({', '.join(map(repr, self.toolsets))})"
