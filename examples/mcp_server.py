"""tinytools tools served over the Model Context Protocol (the ``mcp`` SDK's low-level server).

``tools/list`` answers with ``mcp.declarations`` (input schema, the output
schema of structured return types, and hints from each classified policy);
``tools/call`` hands the ``CallToolRequestParams`` the handler receives to
``mcp.parse_calls``, runs the call through ``dispatch`` (validation, repair,
policies and timeouts all apply before the tool runs) and answers with
``mcp.tool_results``: the text content, ``isError``, and the structured output.

Run it as a stdio server (for a client such as Claude Desktop)::

    python examples/mcp_server.py
"""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server

from tinytools import Registry, ToolPolicy, dispatch, tool
from tinytools.formats import mcp as mcp_format


@dataclasses.dataclass
class Weather:
    """The weather in a city."""

    city: str
    celsius: float
    sky: str


@tool(policy=ToolPolicy.read_only().with_side_effects(network=True))
def get_weather(city: str) -> Weather:
    """Get the current weather for a city.

    Args:
        city: The city, such as "Paris".
    """
    return Weather(city, 21.0, "clear")


TOOLS = Registry.of(get_weather)


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    """``tools/list``: every tool, as tinytools declares it for MCP."""
    tools = [types.Tool.model_validate(d) for d in mcp_format.declarations(TOOLS)]
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    """``tools/call``: one call through dispatch; errors go back as ``isError`` results."""
    result = await dispatch(mcp_format.parse_calls(params), TOOLS)
    [answer] = mcp_format.tool_results(result.messages)
    return types.CallToolResult.model_validate(answer)


server = Server("tinytools-example", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
