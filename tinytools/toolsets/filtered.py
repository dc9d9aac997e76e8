"""``Filtered``: only the tools a predicate keeps."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from tinytools._declare.exposure import ExposureExplanation
from tinytools._declare.registry import AnyTool
from tinytools.errors import ToolDefinitionError

from ._base import Resolution, Wrapper, label

if TYPE_CHECKING:
    from tinytools._inject import Context

__all__ = ["Filtered"]


@attrs.frozen
class Filtered(Wrapper):
    """The tools of ``toolset`` that ``keep(tool, context)`` keeps.

    ``keep`` should be a pure function of the tool and the context: a
    composition's resolution is cached per context object.

    Args:
        toolset: The toolset to filter.
        keep: ``keep(tool, context) -> bool``; ``context`` is the dispatch's (or
            ``None``).

    Raises:
        ToolDefinitionError: ``keep`` raised (when resolved), naming the tool.
    """

    keep: Callable[[AnyTool, Context | None], bool] = attrs.field(
        validator=attrs.validators.is_callable()
    )

    reads_context = True

    def label(self) -> str:
        return f"Filtered({label(self.keep)})"

    def _adapt(self, inner: Resolution, context: Context | None) -> Resolution:
        kept: list[AnyTool] = []
        left: list[ExposureExplanation] = []
        where = self.label()
        for tool in inner.tools:
            try:
                keeping = self.keep(tool, context)
            except Exception as error:
                raise ToolDefinitionError(
                    where, [f"keep({tool.name!r}, context) raised {error!r}"]
                ) from error
            if keeping:
                kept.append(tool)
            else:
                reason = f"left out: {label(self.keep)}(tool, context) returned {keeping!r}"
                left.append(ExposureExplanation(tool.name, reason, where))
        if not left:
            return inner
        names = {tool.name for tool in kept}
        gates = {n: w for n, w in inner.gates.items() if n in names}
        return Resolution(tuple(kept), (*inner.explanations, *left), gates)
