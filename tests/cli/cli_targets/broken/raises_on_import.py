"""A module that fails while being imported (tests/cli/test_cli_check.py)."""

from tinytools import tool


@tool
def fine(x: int) -> int:
    """Return the number it was given, unchanged.

    Args:
        x: Any integer.
    """
    return x


raise RuntimeError("this module cannot be imported")
