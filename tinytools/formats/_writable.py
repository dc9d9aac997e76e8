"""What the text dialects' ``render_call`` cannot write, and what they write instead.

A call's arguments come from a model, so they may hold values a dialect
cannot write in a form its own parser reads back as the same value: an
integer longer than Python's int-to-str digit limit
(:func:`sys.get_int_max_str_digits`; JSON has no other way to write it, and
converting it would take quadratic time), nesting deeper than the dialect
reads, a float that is not finite, or something that is not JSON at all.
:func:`unwritable` finds the first such value without recursion, in linear
time.

Such a call is not written at all: ``render_call`` returns :func:`refusal`,
``[tool call not written: <reason>]``. That note is inert in every dialect
(no ``<``, no parenthesis), so parsing it back gives prose, never a call, and
the reason names no model-chosen text. Writing something close to the call
instead would put a call the model never made into the transcript.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Final

from tinytools._text import printable

__all__ = ["JSON_DEPTH", "REFUSAL_PREFIX", "refusal", "unwritable"]

#: How deep the JSON-based dialects (``xml``, ``json_in_tag``) write arguments:
#: the arguments object is level 1, each object or array inside one more.
JSON_DEPTH: Final = 128

#: How every refusal starts (see :func:`refusal`).
REFUSAL_PREFIX: Final = "[tool call not written: "


def refusal(reason: str) -> str:
    """The text ``render_call`` returns for a call it cannot write: a note, not a call."""
    return f"{REFUSAL_PREFIX}{reason}]"


def _digit_limit() -> int:
    return int(getattr(sys, "get_int_max_str_digits", lambda: 0)())


def _too_long(value: int) -> bool:
    """Whether ``str(value)`` would pass the interpreter's digit limit."""
    limit = _digit_limit()
    # Fewer than 3 bits per digit never reach the limit; only then convert (bounded cost).
    if limit <= 0 or value.bit_length() <= 3 * limit:
        return False
    try:
        str(value)
    except ValueError:
        return True
    return False


_SURROGATE: Final = "a string in its arguments holds a lone surrogate, which text cannot carry"


def _leaf_problem(value: object, huge_ints: bool) -> str | None:
    if isinstance(value, str):
        return None if printable(value) is value else _SURROGATE
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        if not huge_ints and _too_long(value):
            return f"an integer in its arguments has more than {_digit_limit()} digits"
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "a number in its arguments is not finite"
    return f"its arguments hold a value that is not JSON, a {type(value).__name__}"


def unwritable(
    arguments: Mapping[str, object], max_depth: int, *, huge_ints: bool = False
) -> str | None:
    """Why ``arguments`` cannot be written faithfully, or ``None`` when they can.

    Args:
        arguments: The call's arguments object (level 1).
        max_depth: The deepest level of objects and arrays the dialect writes.
        huge_ints: The dialect can write integers of any length (``ptype``, in hex).
    """
    todo: list[tuple[object, int]] = [(arguments, 1)]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, (Mapping, list, tuple)):
            if depth > max_depth:
                return f"its arguments are nested more than {max_depth} levels deep"
            if isinstance(value, Mapping):
                if not all(isinstance(key, str) for key in value):
                    return "its arguments hold an object key that is not a string"
                if not all(printable(key) is key for key in value):
                    return _SURROGATE
                todo += [(child, depth + 1) for child in value.values()]
            else:
                todo += [(child, depth + 1) for child in value]
        elif (problem := _leaf_problem(value, huge_ints)) is not None:
            return problem
    return None
