"""What the kit's ``tools`` argument may be: a ``Registry``, tools, or a toolset."""

from __future__ import annotations

from collections.abc import Iterable

from tinytools._declare.registry import Registry
from tinytools._declare.spec import Tool
from tinytools.toolsets import Toolset
from tinytools.toolsets._base import registry_for
from tinytools.toolsets._intrinsic import Intrinsic

__all__ = ["registry_of"]


def registry_of(tools: Registry | Toolset | Iterable[Tool[..., object]], who: str) -> Registry:
    """The registry ``tools`` stands for; a toolset is resolved as dispatch resolves it
    with no context (calls and answers then carry the names the model sees).

    Raises:
        TypeError: ``tools`` is (or holds) a ``Discovery``: its ``tool_call`` is unwrapped
            into another tool's call before admission, which the kit does not model.
    """
    registry = registry_for(tools, None)
    intrinsic = [t.name for t in registry.values() if isinstance(t.fn, Intrinsic)]
    if intrinsic:
        raise TypeError(
            f"{who}() cannot model discovery: {', '.join(sorted(intrinsic))} "
            "(from a Discovery) stand for calls of other tools. Pass the toolset the "
            "Discovery wraps instead; a tool_call and the same call made directly get the "
            "same answer (tests/properties/test_toolsets_properties.py checks it)."
        )
    return registry
