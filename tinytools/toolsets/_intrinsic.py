"""Discovery's intrinsic tools (``tool_search``, ``tool_call``), recognised by their function.

Adaptors leave them as they are (but for their names), and dispatch answers
them itself (see ``tinytools._engine.admit.discovery``).
"""

from __future__ import annotations

from typing import Literal

from tinytools._declare.registry import AnyTool
from tinytools._wire import ToolResult

__all__ = ["Intrinsic", "is_intrinsic"]


class Intrinsic:
    """The function of an intrinsic tool: dispatch answers its calls itself.

    Attributes:
        kind: ``"search"`` or ``"call"``.
        limit: ``tool_search``'s default number of results.
    """

    __slots__ = ("kind", "limit")

    def __init__(self, kind: Literal["search", "call"], limit: int = 5) -> None:
        self.kind = kind
        self.limit = limit

    def __call__(self, **arguments: object) -> ToolResult:
        # Reached only when something renamed another call to this tool after
        # dispatch unwrapped the batch's intrinsic calls (an unknown-tool Rewrite, a
        # middleware): an error, never a success the model would read as one.
        return ToolResult.error(
            "This discovery tool is answered by dispatch itself; call it by its own name."
        )

    def __repr__(self) -> str:
        return f"<discovery intrinsic {self.kind}>"


def is_intrinsic(tool: AnyTool) -> bool:
    """Whether ``tool`` is one of discovery's intrinsic tools."""
    return type(tool.fn) is Intrinsic
