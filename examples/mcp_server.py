"""tinytools tools served over the Model Context Protocol, with ``mcp.server``.

``tools/list`` lists each tool with its input schema, the output schema of its
return type and the hints of its classified policy; every ``tools/call`` runs
through ``dispatch`` (validation, repair, policies and timeouts all apply before
the tool runs) and is answered with the text content, ``isError``, and the
structured output. A call of a tool the server does not have is a protocol error.

Run it as a stdio server (for a client such as Claude Desktop)::

    python examples/mcp_server.py
"""

from __future__ import annotations

import dataclasses

import anyio

from tinytools import ToolPolicy, tool
from tinytools.formats import mcp


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


server = mcp.server([get_weather], name="tinytools-example")


async def main() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
