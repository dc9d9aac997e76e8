"""Tools that pass ``tinytools check`` cleanly (tests/cli/test_cli_check.py)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from tinytools import Registry, ToolPolicy, tool


@tool(policy=ToolPolicy.read_only())
def get_forecast(city: str, days: Annotated[int, msgspec.Meta(ge=1, le=10)] = 1) -> list[int]:
    """Get the daily high temperatures for a city, today first.

    Args:
        city: The city, such as "Paris, FR".
        days: How many days to forecast.
    """
    return [18 + day for day in range(days)]


@tool(policy=ToolPolicy.classified().with_side_effects(network=True))
def send_alert(city: str, message: str) -> str:
    """Send a weather alert to everyone subscribed to a city.

    Args:
        city: The city whose subscribers get the alert.
        message: The alert, in one sentence.
    """
    return f"sent to {city}: {message}"


registry = Registry.of(get_forecast, send_alert)
