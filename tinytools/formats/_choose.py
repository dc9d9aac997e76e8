"""Which tools reach the model natively, and which as prompt text: :func:`split_by_format`.

A tool's ``format`` is a rendering preference; whether it can be honoured
depends on the provider. With a native tool channel, ``Json`` tools are
declared natively and ``Xml`` / ``PType`` tools are rendered in the system
prompt by their text dialect. Without one (a local model driven through its
chat template), every tool is rendered as text: ``Json`` tools in the
``json_in_tag`` dialect. Each tool keeps its ``format``, so the parse side
knows which dialect to read back.

Only ``Exposure.Direct`` tools are chosen: hidden tools never reach the
model, and deferred tools reach it only through the ``tool_search`` /
``tool_call`` bridge, which declares them once found.
"""

from __future__ import annotations

import attrs

from tinytools._declare.registry import AnyTool
from tinytools._declare.spec import Exposure
from tinytools._declare.tool_format import Json, PType, ToolFormat, Xml

from ._providers import Tools
from ._tools import all_tools

__all__ = ["Exposed", "split_by_format"]


@attrs.frozen
class Exposed:
    """The tools offered to the model this turn, split by channel.

    Attributes:
        native: Tools to pass to a provider module's ``declarations()``.
        prompted: Tools to render as prompt text, each in its own format's
            dialect (see :meth:`prompted_as`).
    """

    native: tuple[AnyTool, ...] = ()
    prompted: tuple[AnyTool, ...] = ()

    @property
    def advertised(self) -> frozenset[str]:
        """Every offered name: pass it as ``dispatch(advertised=...)``."""
        return frozenset(t.name for t in (*self.native, *self.prompted))

    @property
    def formats(self) -> dict[str, ToolFormat]:
        """Each offered tool's format, by name."""
        return {t.name: t.format for t in (*self.native, *self.prompted)}

    def prompted_as(self, kind: type[Json | Xml | PType]) -> tuple[AnyTool, ...]:
        """The prompted tools of one format, such as ``exposed.prompted_as(Xml)``."""
        return tuple(t for t in self.prompted if isinstance(t.format, kind))


def split_by_format(tools: Tools, *, native_tool_calling: bool) -> Exposed:
    """Choose how each direct tool is shown to a model.

    Args:
        tools: A ``Registry`` (or any toolset with ``tools()``) or an iterable
            of ``Tool``.
        native_tool_calling: The provider (or model profile) has a native
            tool channel.

    Returns:
        ``Json`` tools as ``native`` when there is a native channel; every
        other direct tool as ``prompted``. Order is kept within each part.
    """
    direct = [t for t in all_tools(tools) if t.exposure is Exposure.Direct]
    if not native_tool_calling:
        return Exposed((), tuple(direct))
    return Exposed(
        tuple(t for t in direct if isinstance(t.format, Json)),
        tuple(t for t in direct if not isinstance(t.format, Json)),
    )
