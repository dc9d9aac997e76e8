"""The one-tool batch of the engine's hook, event-handler and limit tests (tests/engine):
``add`` (``b`` defaults to 1), its registry, and one call of it."""

from __future__ import annotations

from tinytools import Registry, ToolCall, tool


@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


TOOLS = Registry([add])

CALLS = [ToolCall("c1", "add", '{"a": 1}')]
