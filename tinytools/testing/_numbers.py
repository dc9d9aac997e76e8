"""Numbers inside (and just outside) bounds, exactly.

JSON numbers have no size or precision limit, and the validators compare them exactly
(fastjsonschema with Python's mixed int/float comparison) or as floats (msgspec reads
a ``float`` field's bound as a float). A bound such as ``2**63 - 1`` or ``1e20`` is
not the float nearest it, and float arithmetic absorbs small steps (``1e20 + 1 ==
1e20``), so bounds are handled here in integers and exact fractions only: a float
inside the bounds satisfies both readings, and a number past a bound breaks both.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

__all__ = [
    "beyond",
    "binary_multiples",
    "decimal_multiples",
    "float_interval",
    "integer_interval",
    "integer_multiples",
]

Number = int | float


def _float(value: Number | Fraction) -> float:
    """``value`` as a float, an infinity when no finite float is that large."""
    try:
        return float(value)
    except OverflowError:
        return -math.inf if value < 0 else math.inf


def _inner(bound: Number, open_: bool, toward: float) -> float | None:
    """The float nearest ``bound`` on the side of ``toward`` that meets the bound both
    exactly and as floats, or None when that is every float (a bound past the range)."""
    rounded = _float(bound)
    if math.isinf(rounded):
        return None if math.copysign(1, rounded) != math.copysign(1, toward) else rounded
    # As floats, an open bound excludes `rounded` itself; exactly, a rounded value past
    # the bound is out too: step one float inward in either case.
    past = rounded > bound if toward < 0 else rounded < bound
    return math.nextafter(rounded, toward) if open_ or past else rounded


def float_interval(
    low: Number | None, low_open: bool, high: Number | None, high_open: bool
) -> tuple[float | None, float | None] | None:
    """The closed float interval inside the bounds (None: no finite float lies inside)."""
    lo = None if low is None else _inner(low, low_open, math.inf)
    hi = None if high is None else _inner(high, high_open, -math.inf)
    if (lo is not None and lo == math.inf) or (hi is not None and hi == -math.inf):
        return None
    if lo is not None and hi is not None and lo > hi:
        return None
    return lo, hi


def integer_interval(
    low: Number | None, low_open: bool, high: Number | None, high_open: bool
) -> tuple[int | None, int | None] | None:
    """The first and last integer inside the bounds (None: no integer lies inside)."""
    first = None if low is None else math.floor(low) + 1 if low_open else math.ceil(low)
    last = None if high is None else math.ceil(high) - 1 if high_open else math.floor(high)
    if first is not None and last is not None and first > last:
        return None
    return first, last


def integer_multiples(step: int, first: int, last: int) -> SearchStrategy[int]:
    """The multiples of a positive integer ``step`` in ``[first, last]`` (by integer division,
    exact at any size), or nothing."""
    low, high = -(-first // step), last // step
    if low > high:
        return st.nothing()
    return st.integers(low, high).map(lambda k: k * step)


def decimal_multiples(step: Number, lo: float | None, hi: float | None) -> SearchStrategy[float]:
    """Floats whose shortest spelling is a multiple of ``step``'s, as fastjsonschema checks
    ``multipleOf`` (``Decimal(repr(value)) / Decimal(repr(step))`` is whole), in ``[lo, hi]``."""
    unit = Decimal(repr(step))
    exact = Fraction(unit)
    first = -(10**15) if lo is None else math.ceil(Fraction(lo) / exact)
    last = 10**15 if hi is None else math.floor(Fraction(hi) / exact)
    if first > last:
        return st.nothing()
    if lo is None:
        first = min(first, last - 10**15)
    if hi is None:
        last = max(last, first + 10**15)
    drawn = st.integers(first, last).map(lambda k: float(k * unit))
    return drawn.filter(
        lambda v: not math.isinf(v) and (lo is None or lo <= v) and (hi is None or v <= hi)
    )


def binary_multiples(step: float, lo: float | None, hi: float | None) -> SearchStrategy[float]:
    """Floats that are exact multiples of ``step``, as msgspec checks ``multiple_of``
    (``fmod(value, step) == 0``), in ``[lo, hi]``.

    ``k * step`` is a float exactly when the odd part of ``k`` times the odd part of
    ``step``'s numerator fits in 53 bits, so each drawn ``k`` keeps only its leading bits.
    """
    numerator, _ = Fraction(step).as_integer_ratio()
    odd = numerator >> ((numerator & -numerator).bit_length() - 1)
    width = ((2**53 - 1) // odd + 1).bit_length() - 1  # bits of k's odd part kept
    first = -(10**15) if lo is None else math.ceil(Fraction(lo) / Fraction(step))
    last = 10**15 if hi is None else math.floor(Fraction(hi) / Fraction(step))
    if first > last:
        return st.nothing()

    def exact(k: int) -> float:
        shift = max(abs(k).bit_length() - width, 0)
        kept = (abs(k) >> shift) << shift
        return _float(Fraction(kept if k >= 0 else -kept) * Fraction(step))

    drawn = st.integers(first, last).map(exact)
    return drawn.filter(
        lambda v: not math.isinf(v) and (lo is None or lo <= v) and (hi is None or v <= hi)
    )


def beyond(bound: Number, *, above: bool, open_: bool) -> int:
    """An integer that breaks the bound, both exactly and as floats: at or past an open
    bound, past a closed one (for any site: an integer is a number too)."""
    rounded = _float(bound)
    if above:
        exact = math.ceil(bound) if open_ else math.floor(bound) + 1
        if math.isinf(rounded):
            return exact
        as_float = rounded if open_ else math.nextafter(rounded, math.inf)
        return max(exact, math.ceil(as_float))
    exact = math.floor(bound) if open_ else math.ceil(bound) - 1
    if math.isinf(rounded):
        return exact
    as_float = rounded if open_ else math.nextafter(rounded, -math.inf)
    return min(exact, math.floor(as_float))
