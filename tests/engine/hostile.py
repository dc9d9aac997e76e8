"""Tools and a checked dispatch shared by the engine's hostile-input tests (tests/engine)."""

from __future__ import annotations

import msgspec

from tinytools import Registry, Tool, ToolCall, ToolPolicy, dispatch_sync, tool


@tool
def get_weather(city: str, temp: float = 0.0) -> str:
    """Weather for a city."""
    return city


@tool(policy=ToolPolicy(redact=("password",)))
def login(user: str, password: str) -> str:
    """Log in."""
    return user


SCHEMA_TOOL = Tool.from_schema(
    "measure",
    "Measure.",
    {"type": "object", "properties": {"x": {"type": "number"}}},
    fn=lambda x=0: x,
)


TOOLS = Registry.of(get_weather, login, SCHEMA_TOOL)


def _answered(calls: list[ToolCall], tools: Registry = TOOLS, **options: object):  # type: ignore[no-untyped-def]
    result = dispatch_sync(calls, tools, **options)  # type: ignore[arg-type]
    assert [m.tool_call_id for m in result.messages] == [c.id for c in calls]
    msgspec.json.encode(result)  # every result encodes
    return result
