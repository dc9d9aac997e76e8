"""``Renamed``: some tools under other names."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

import attrs

from tinytools._declare.spec import check_name
from tinytools.errors import ToolDefinitionError

from ._base import Resolution, Wrapper
from ._rename import renamed

if TYPE_CHECKING:
    from tinytools._inject import Context

__all__ = ["Renamed"]


def _names(value: Mapping[str, str]) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        raise TypeError(f"Renamed takes a mapping of old name to new name, got {value!r}")
    problems = [
        f"{new!r} (for {old!r}): {problem}"
        for old, new in value.items()
        if (problem := check_name(new)) is not None
    ]
    if problems:
        raise ToolDefinitionError("Renamed", problems)
    return MappingProxyType(dict(value))


@attrs.frozen
class Renamed(Wrapper):
    """The tools of ``toolset``, those named in ``names`` under their new names.

    Names in ``names`` that ``toolset`` does not have (this run) are ignored.
    Swapping two names is allowed.

    Args:
        toolset: The toolset whose tools to rename.
        names: Old name → new name.

    Raises:
        ToolDefinitionError: A new name is not a valid tool name (when built), or
            collides with another tool's name (when resolved).
    """

    names: Mapping[str, str] = attrs.field(converter=_names)

    def label(self) -> str:
        return f"Renamed({dict(self.names)!r})"

    def _adapt(self, inner: Resolution, context: Context | None) -> Resolution:
        names = self.names
        mapping = {t.name: names[t.name] for t in inner.tools if t.name in names}
        return renamed(self.label(), inner, mapping) if mapping else inner
