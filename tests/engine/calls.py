"""Tools and helpers shared by the engine's stage tests (tests/engine)."""

from __future__ import annotations

from tinytools import ToolCall, tool


@tool
def add(a: int, b: int = 0) -> int:
    """Add two numbers."""
    return a + b


@tool(approval_required=True)
def transfer(amount: int) -> str:
    """Move money (needs approval)."""
    return f"moved {amount}"


def call(call_id: str, name: str, arguments: object) -> ToolCall:
    return ToolCall(call_id, name, arguments)  # type: ignore[arg-type]


def ids(result: object) -> list[str]:
    return [m.tool_call_id for m in result.messages]  # type: ignore[attr-defined]
