"""Pydantic AI (``pydantic-ai-slim``): ``Tool(fn)`` and its tool definition."""

from __future__ import annotations

from collections.abc import Callable

from pydantic_ai import Tool

LABEL = "pydantic-ai Tool(fn)"


def build(fn: Callable[..., object]) -> object:
    """A tool with its definition (the schema is built eagerly by ``Tool``)."""
    made = Tool(fn)
    _ = made.tool_def
    return made
