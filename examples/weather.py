"""A weather tool: the everyday ``@tool``.

Shows how one decorated function becomes a tool:

* the Google-style docstring gives the description (its summary and body) and
  each parameter's description (its ``Args:`` section);
* ``Literal`` becomes an ``enum`` of the allowed values;
* a default makes a parameter optional, and the schema advertises it;
* ``Annotated[int, msgspec.Meta(ge=1, le=10)]`` becomes ``minimum``/``maximum``,
  and the range is enforced on every call.

``tinytools demo`` prints this tool's schema and validates a few calls to it.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from tinytools import tool


@tool
def get_weather(
    city: str,
    units: Literal["celsius", "fahrenheit"] = "celsius",
    days: Annotated[int, msgspec.Meta(ge=1, le=10)] = 1,
) -> dict[str, object]:
    """Get the current weather and a daily forecast for a city.

    Args:
        city: The city, optionally with a country code, such as "Paris, FR".
        units: The temperature units.
        days: How many days of forecast to include, today first.
    """
    # A real tool would call a weather service; this one makes up a mild week.
    highs = [18 + day % 3 for day in range(days)]
    if units == "fahrenheit":
        highs = [round(high * 9 / 5 + 32) for high in highs]
    return {"city": city, "units": units, "daily_highs": highs}
