"""Renaming tools (shared by ``Prefixed`` and ``Renamed``)."""

from __future__ import annotations

import attrs

from tinytools._exposure import ExposureExplanation
from tinytools._registry import AnyTool
from tinytools._spec import check_name
from tinytools.errors import ToolDefinitionError

from ._base import Resolution, When

__all__ = ["renamed"]


def renamed(where: str, inner: Resolution, mapping: dict[str, str]) -> Resolution:
    """``inner`` with the tools in ``mapping`` (old → new) renamed, each explained.

    Raises:
        ToolDefinitionError: A new name is invalid or collides with another tool's.
    """
    problems: list[str] = []
    tools: list[AnyTool] = []
    seen: dict[str, str] = {}
    for tool in inner.tools:
        new = mapping.get(tool.name, tool.name)
        if new in seen:
            problems.append(
                f"{tool.name!r} and {seen[new]!r} would both be named {new!r}; "
                "rename one of them differently"
            )
            continue
        seen[new] = tool.name
        if new == tool.name:
            tools.append(tool)
            continue
        problem = check_name(new)
        if problem is not None:
            problems.append(f"{tool.name!r} cannot be renamed: {problem}")
            continue
        tools.append(attrs.evolve(tool, name=new))
    if problems:
        raise ToolDefinitionError(where, problems)
    explained = tuple(
        ExposureExplanation(old, f"renamed: the model sees it as {new!r}", where, new)
        for old, new in mapping.items()
        if old != new
    )
    gates: dict[str, tuple[When, ...]] = {
        mapping.get(name, name): whens for name, whens in inner.gates.items()
    }
    return Resolution(tuple(tools), (*inner.explanations, *explained), gates)
