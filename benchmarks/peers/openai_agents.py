"""OpenAI Agents SDK (``openai-agents``): ``function_tool(fn)``."""

from __future__ import annotations

from collections.abc import Callable

from agents import function_tool

LABEL = "openai-agents function_tool"


def build(fn: Callable[..., object]) -> object:
    """A tool with its JSON schema (built eagerly by ``function_tool``).

    ``strict_mode=False`` because the SDK's strict mode rejects ``dict[str, str]`` parameters
    (the 20-parameter tool has one); strict mode would only add a pass over the schema.
    """
    return function_tool(fn, strict_mode=False)
