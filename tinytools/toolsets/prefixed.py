"""``Prefixed``: every tool's name with a prefix."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from tinytools._declare.spec import check_name
from tinytools.errors import ToolDefinitionError

from ._base import Resolution, Wrapper
from ._rename import renamed

if TYPE_CHECKING:
    from tinytools._inject import Context

__all__ = ["Prefixed"]


def _prefix(_instance: object, _attribute: object, prefix: str) -> None:
    problem = check_name(prefix)
    if problem is not None:
        raise ToolDefinitionError(f"Prefixed({prefix!r})", [f"the prefix: {problem}"])


@attrs.frozen
class Prefixed(Wrapper):
    """The tools of ``toolset``, each named ``prefix + name``.

    The model sees, calls and is answered under the prefixed name, and events
    and the ledger use it too; an MCP tool is still called on its server by its
    own name.

    Args:
        toolset: The toolset whose tools to rename.
        prefix: Put before every name (for example ``"github_"``).

    Raises:
        ToolDefinitionError: The prefix cannot start a tool name (when built),
            or a local tool's prefixed name is too long (when resolved; a remote
            server's tool is left out instead, explained, and reported by each
            dispatch as ``ToolWithheld``).
    """

    prefix: str = attrs.field(validator=_prefix)

    def label(self) -> str:
        return f"Prefixed({self.prefix!r})"

    def _adapt(self, inner: Resolution, context: Context | None) -> Resolution:
        return renamed(self.label(), inner, {t.name: self.prefix + t.name for t in inner.tools})
