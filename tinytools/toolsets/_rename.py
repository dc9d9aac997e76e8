"""Renaming tools (shared by ``Prefixed`` and ``Renamed``)."""

from __future__ import annotations

import attrs

from tinytools._declare.exposure import ExposureExplanation
from tinytools._declare.registry import AnyTool
from tinytools._declare.spec import check_name
from tinytools.errors import ToolDefinitionError

from ._base import Resolution, When, is_remote, unnamable, withheld

__all__ = ["renamed"]


def _named(old: str, new: str) -> str:
    return f"the tool {old!r}" if old == new else f"the tool {old!r} (renamed {new!r})"


def renamed(where: str, inner: Resolution, mapping: dict[str, str]) -> Resolution:
    """``inner`` with the tools in ``mapping`` (old → new) renamed, each explained.

    Where two tools would have one name and one of them is remote (``McpToolset``'s),
    that one is left out and explained (the first of two remote ones keeps the name); so
    is a remote tool whose new name is invalid (a server's 60-character name, prefixed).

    Raises:
        ToolDefinitionError: A local tool's new name is invalid, or a new name collides
            with another tool's (neither of them remote).
    """
    problems: list[str] = []
    tools: list[AnyTool] = []
    seen: dict[str, tuple[int, str]] = {}  # new name -> (position in tools, old name)
    left: list[ExposureExplanation] = []
    dropped: set[str] = set()  # old names of the tools left out
    for tool in inner.tools:
        new = mapping.get(tool.name, tool.name)
        if new != tool.name:
            problem = check_name(new)
            if problem is not None and is_remote(tool):  # (a server may list any name)
                left.append(unnamable(tool.name, problem, where))
                dropped.add(tool.name)
                continue
            if problem is not None:
                problems.append(f"{tool.name!r} cannot be renamed: {problem}")
                continue
        if new in seen:
            at, old = seen[new]
            if not is_remote(tool):
                if not is_remote(tools[at]):
                    problems.append(
                        f"{tool.name!r} and {old!r} would both be named {new!r}; "
                        "rename one of them differently"
                    )
                    continue
                left.append(withheld(old, _named(tool.name, new), where))
                dropped.add(old)
                seen[new] = (at, tool.name)
                tools[at] = tool if new == tool.name else attrs.evolve(tool, name=new)
                continue
            left.append(withheld(tool.name, _named(old, new), where))
            dropped.add(tool.name)
            continue
        seen[new] = (len(tools), tool.name)
        tools.append(tool if new == tool.name else attrs.evolve(tool, name=new))
    if problems:
        raise ToolDefinitionError(where, problems)
    explained = tuple(
        ExposureExplanation(old, f"renamed: the model sees it as {new!r}", where, new)
        for old, new in mapping.items()
        if old != new and old not in dropped
    )
    gates: dict[str, tuple[When, ...]] = {
        mapping.get(name, name): whens for name, whens in inner.gates.items() if name not in dropped
    }
    return Resolution(tuple(tools), (*inner.explanations, *explained, *left), gates, tuple(left))
