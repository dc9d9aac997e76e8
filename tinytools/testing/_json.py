"""Strategies for plain JSON values, the building blocks of the other strategies."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

__all__ = ["INTEGERS", "json_objects", "json_values", "keys"]

#: Integers every JSON library round-trips (msgspec reads up to 2**64 - 1).
INTEGERS = st.integers(min_value=-(2**63), max_value=2**64 - 1)


def keys() -> SearchStrategy[str]:
    """Object keys: any text, with identifier-like keys well represented."""
    return st.text(max_size=8) | st.from_regex(r"[A-Za-z_$][A-Za-z0-9_$-]{0,6}", fullmatch=True)


def json_values(max_leaves: int = 12) -> SearchStrategy[object]:
    """Any JSON value msgspec round-trips exactly (no NaN, no infinity, no lone surrogate)."""
    scalars = (
        st.none()
        | st.booleans()
        | INTEGERS
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text()
    )
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=8), children, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def json_objects() -> SearchStrategy[dict[str, object]]:
    """Any JSON object."""
    return st.dictionaries(keys(), json_values(), max_size=5)
