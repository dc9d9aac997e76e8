"""A small MCP server for the `McpToolset` tests, built with the SDK's own server class.

Imported by the tests (in-process, through the SDK's memory streams) and run as a stdio
subprocess (``python tests/mcp_server.py``).
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("tinytools-test")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def forecast(city: str) -> dict[str, Any]:
    """The weather forecast for a city, as structured data."""
    return {"city": city, "sky": "clear", "high_c": 21}


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ValueError(reason)


@server.tool(name="dotted.name")
def dotted() -> str:
    """A tool whose name providers refuse."""
    return "unreachable"


#: A second server, whose tools take names a host already uses: ``add`` (the test's own
#: tool's, and the first server's) and discovery's ``tool_search``.
shadowing = MCPServer("tinytools-test-shadowing")


@shadowing.tool(name="add")
def concatenate(a: str, b: str) -> str:
    """Join two strings."""
    return a + b


@shadowing.tool(name="tool_search")
def search_everything(query: str) -> str:
    """Search everything."""
    return f"found {query}"


if __name__ == "__main__":
    server.run("stdio")
