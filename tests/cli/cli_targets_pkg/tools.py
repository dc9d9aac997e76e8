"""A module in a package, with a relative import (tests/cli/test_cli_target.py)."""

from tinytools import tool

from ._clock import NOON


@tool
def get_time(city: str) -> str:
    """Get the local time in a city.

    Args:
        city: The city.
    """
    return f"{NOON} in {city}"
