"""Strings in each ``format`` that ``Tool.validate`` enforces, at the lengths a schema asks.

Each format is drawn as its standard spells it (RFC 3339 dates and times, RFC 3986
URIs, RFC 1123 host names, RFC 5321 addresses, RFC 6901 pointers), in ASCII where the
standard is ASCII, so a strict server accepts the value too; the free part of each
(a path, a label, a fraction of a second) is drawn to the length the schema's
``minLength``/``maxLength`` leave. :data:`LENGTHS` holds every length the validator's
own checks accept: only a window outside them is called impossible.
"""

from __future__ import annotations

import datetime
import functools
import string
from collections.abc import Callable

from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from tinytools._declare.spec import Tool
from tinytools.errors import ToolArgumentsError

__all__ = ["BREAKS_EVERY_FORMAT", "LENGTHS", "formatted", "in_format"]

#: Per format ``Tool.validate`` enforces (``ENFORCED_FORMATS``), the shortest and longest
#: text its check accepts (None: no limit).
LENGTHS: dict[str, tuple[int, int | None]] = {
    "date": (10, 10),
    "date-time": (20, None),
    "time": (3, 21),  # `1:2` to `23:59:60.123456+23:59`
    "email": (3, None),
    "hostname": (1, None),
    "ipv4": (7, 15),
    "ipv6": (2, 45),  # `::` to six groups and a dotted quad
    "uri": (3, None),  # `a:b`
    "uri-reference": (0, None),
    "json-pointer": (0, None),
    "uuid": (36, 36),
}
#: Lengths between those that no text in the format has (a fraction needs a digit).
_GAPS: dict[str, frozenset[int]] = {"date-time": frozenset({21})}
#: A string no enforced format accepts (whitespace alone is no date, no address, no
#: reference and no pointer: a non-empty pointer starts with `/`).
BREAKS_EVERY_FORMAT = " "
#: How much longer than its shortest a free-length value is drawn, at most.
_EXTRA = 24
_ALNUM = string.ascii_letters + string.digits
#: RFC 3986 `pchar`s and `/`, `?` (percent escapes left out): what a path and query hold.
_PATH = _ALNUM + "-._~!$&'()*+,;=:@/?"
#: A relative reference's characters: no `:`, so no first segment reads as a scheme.
_RELATIVE = _PATH.replace(":", "")
_ANY_BUT_TILDE = st.characters(codec="utf-8", exclude_characters="~")
#: RFC 5322 `atext`: a dot-atom local part's characters.
_ATEXT = _ALNUM + "!#$%&'*+/=?^_`{|}~-"
_SCHEMES = ("https", "http", "ftp", "wss")
#: Dates from any year, and often from this era (which a pattern such as `^20` wants).
_DATES = st.dates(datetime.date(1900, 1, 1), datetime.date(2100, 12, 31)) | st.dates()
_DATETIMES = st.builds(datetime.datetime.combine, _DATES, st.times())


def formatted(fmt: str, low: int, high: int | None) -> SearchStrategy[str] | None:
    """Strings in ``fmt`` whose length is in ``[low, high]``; None for a format the
    validator does not check (any string then is valid)."""
    if fmt not in LENGTHS:
        return None
    least, most = LENGTHS[fmt]
    if most is not None:
        high = most if high is None else min(high, most)
    low = max(low, least)
    gaps = _GAPS.get(fmt, frozenset())
    if high is not None and high - low < len(gaps) and all(n in gaps for n in range(low, high + 1)):
        return st.nothing()  # no text of those lengths is in this format
    return _BUILDERS[fmt](low, high)


@functools.cache
def in_format(fmt: str) -> Callable[[str], bool]:
    """Whether ``Tool.validate`` reads a string as in ``fmt``: its own check, not a copy."""
    schema = {"type": "object", "properties": {"value": {"type": "string", "format": fmt}}}
    check = Tool.from_schema("format_check", "Checks one format.", schema)

    def accepts(text: str) -> bool:
        try:
            check.validate({"value": text})
        except ToolArgumentsError:
            return False
        return True

    return accepts


def _size(low: int, high: int | None) -> SearchStrategy[int]:
    """A length in ``[low, high]``, near ``low`` (shrinking to it)."""
    return st.integers(low, low + _EXTRA if high is None else min(high, low + _EXTRA))


def _fits(low: int, high: int | None) -> Callable[[str], bool]:
    return lambda text: low <= len(text) and (high is None or len(text) <= high)


def _digits(count: int) -> SearchStrategy[str]:
    return st.text(string.digits, min_size=count, max_size=count)


def _label(size: int) -> SearchStrategy[str]:
    """An RFC 1123 label: letters, digits and inner hyphens."""
    end = st.sampled_from(_ALNUM)
    if size == 1:
        return end
    inner = st.text(_ALNUM + "-", min_size=size - 2, max_size=size - 2)
    return st.tuples(end, inner, end).map("".join)


@st.composite
def _host_of(draw: st.DrawFn, size: int) -> str:
    """A host name of exactly ``size`` characters: labels of 63 at most, joined by dots."""
    labels = []
    left = size
    while left > 63 or (left >= 3 and draw(st.integers(0, 2)) == 0):
        part = draw(st.integers(1, min(63, left - 2)))
        labels.append(draw(_label(part)))
        left -= part + 1
    labels.append(draw(_label(left)))
    return ".".join(labels)


@st.composite
def _uri(draw: st.DrawFn, low: int, high: int | None) -> str:
    size = draw(_size(low, high))
    scheme = draw(st.sampled_from(_SCHEMES))
    head = f"{scheme}://"
    if size > len(head) and draw(st.integers(0, 3)):  # `scheme://host` and a path
        host = draw(st.integers(1, size - len(head)))
        path = size - len(head) - host
        tail = "/" + draw(st.text(_PATH, min_size=path - 1, max_size=path - 1)) if path else ""
        return head + draw(_host_of(host)) + tail
    # `scheme:rest`, as `urn:isbn:...` and `mailto:...` are spelt
    length = draw(st.integers(1, min(size - 2, 8)))
    scheme = draw(st.sampled_from(string.ascii_lowercase)) + draw(
        st.text(string.ascii_lowercase + string.digits, min_size=length - 1, max_size=length - 1)
    )
    rest = size - length - 1
    return f"{scheme}:" + draw(st.text(_PATH, min_size=rest, max_size=rest))


@st.composite
def _relative_reference(draw: st.DrawFn, low: int, high: int | None) -> str:
    size = draw(_size(low, high))
    text = draw(st.text(_RELATIVE, min_size=size, max_size=size))
    if text and draw(st.booleans()):  # a fragment from some point on
        at = draw(st.integers(0, size - 1))
        text = text[:at] + "#" + text[at + 1 :]
    return text


def _uri_reference(low: int, high: int | None) -> SearchStrategy[str]:
    relative = _relative_reference(low, high)
    return relative if high is not None and high < 3 else _uri(max(low, 3), high) | relative


@st.composite
def _json_pointer(draw: st.DrawFn, low: int, high: int | None) -> str:
    size = draw(_size(low, high))
    if size == 0:
        return ""
    # Any characters but `~`, which is spelt `~0` (and `/` inside a token `~1`); each `/`
    # starts a token.
    escapes = draw(st.integers(0, min(2, (size - 1) // 2)))
    plain = size - 1 - 2 * escapes
    chars = draw(st.text(_ANY_BUT_TILDE, min_size=plain, max_size=plain))
    pairs = draw(st.lists(st.sampled_from(["~0", "~1"]), min_size=escapes, max_size=escapes))
    return "/" + "".join(draw(st.permutations([*chars, *pairs])))


@st.composite
def _email(draw: st.DrawFn, low: int, high: int | None) -> str:
    size = draw(_size(low, high))
    domain = draw(st.integers(1, min(size - 2, 20)))
    local = size - 1 - domain
    return draw(st.text(_ATEXT, min_size=local, max_size=local)) + "@" + draw(_host_of(domain))


_OFFSETS = st.tuples(st.sampled_from("+-"), st.integers(0, 23), st.integers(0, 59)).map(
    lambda z: f"{z[0]}{z[1]:02}:{z[2]:02}"
)
_ZONES = st.just("Z") | _OFFSETS


@st.composite
def _date_time(draw: st.DrawFn, low: int, high: int | None) -> str:
    when = draw(_DATETIMES).isoformat(timespec="seconds")  # 19 characters
    zone = draw(_ZONES if high is None or high >= 25 else st.just("Z"))
    used = len(when) + len(zone)
    size = draw(_size(max(low - used, 0), None if high is None else high - used))
    return when + _fraction(draw, size) + zone


def _fraction(draw: st.DrawFn, size: int) -> str:
    """A fraction of a second of ``size`` characters, its point included."""
    if size == 1:
        reject()  # a point needs a digit after it
    return "" if size == 0 else "." + draw(_digits(size - 1))


@st.composite
def _time(draw: st.DrawFn, low: int, high: int | None) -> str:
    size = draw(_size(low, high))
    hour, minute, second = draw(st.times()).isoformat(timespec="seconds").split(":")
    if size < 8:  # the validator's short forms: `H:M`, `HH:MM`, `H:MM:S`, ...
        forms = [
            (h, m, s)
            for h in (1, 2)
            for m in (1, 2)
            for s in (0, 1, 2)
            if h + 1 + m + (s + 1 if s else 0) == size
        ]
        h, m, s = draw(st.sampled_from(forms))
        parts = [hour[-h:], minute[-m:], *([second[-s:]] if s else [])]
        return ":".join(parts)
    clock = f"{hour}:{minute}:{second}"
    # RFC 3339 wants a zone, which the validator leaves optional: a zone where the length
    # leaves room for one (and a fraction of at most six digits, never a bare point).
    zones = {"Z": st.just("Z"), "+hh:mm": _OFFSETS, "": st.just("")}
    fits = [z for z in zones if size - 8 - len(z) == 0 or 2 <= size - 8 - len(z) <= 7]
    zone = draw(zones[draw(st.sampled_from([z for z in fits if z] or fits))])
    return clock + _fraction(draw, size - len(clock) - len(zone)) + zone


def _fixed(strategy: SearchStrategy[str]) -> Callable[[int, int | None], SearchStrategy[str]]:
    return lambda low, high: strategy.filter(_fits(low, high))


@st.composite
def _widths(draw: st.DrawFn, count: int, total: int, least: int, most: int) -> list[int]:
    """``count`` widths in ``[least, most]`` adding up to ``total`` (which they can)."""
    widths = []
    for left in range(count - 1, -1, -1):
        width = draw(st.integers(max(least, total - most * left), min(most, total - least * left)))
        widths.append(width)
        total -= width
    return widths


def _octet(width: int) -> SearchStrategy[str]:
    return st.integers((0, 10, 100)[width - 1], (9, 99, 255)[width - 1]).map(str)


def _hex(width: int) -> SearchStrategy[str]:
    return st.text("0123456789abcdef", min_size=width, max_size=width)


@st.composite
def _ipv4_of(draw: st.DrawFn, size: int) -> str:
    return ".".join(draw(_octet(width)) for width in draw(_widths(4, size - 3, 1, 3)))


@st.composite
def _ipv6_of(draw: st.DrawFn, size: int) -> str:
    """An IPv6 address of ``size`` characters: eight groups, groups around a `::`, or six
    groups and a dotted quad."""
    forms = ["::"] if size <= 36 else []
    forms += ["full"] if 15 <= size <= 39 else []
    forms += ["quad"] if 19 <= size <= 45 else []
    form = draw(st.sampled_from(forms))
    if form == "full":
        return ":".join(draw(_hex(w)) for w in draw(_widths(8, size - 7, 1, 4)))
    if form == "quad":
        quad = draw(st.integers(max(7, size - 30), min(15, size - 12)))
        groups = [draw(_hex(w)) for w in draw(_widths(6, size - 6 - quad, 1, 4))]
        return ":".join([*groups, draw(_ipv4_of(quad))])
    if size == 2:
        return "::"
    # k groups (at most 7) split around `::`; k - 2 separators when both sides have some
    shapes = [
        (left, count - left)
        for count in range(1, 8)
        for left in range(count + 1)
        if count <= size - 2 - max(left - 1, 0) - max(count - left - 1, 0) <= 4 * count
    ]
    left, right = draw(st.sampled_from(shapes))
    digits = size - 2 - max(left - 1, 0) - max(right - 1, 0)
    groups = [draw(_hex(w)) for w in draw(_widths(left + right, digits, 1, 4))]
    return ":".join(groups[:left]) + "::" + ":".join(groups[left:])


def _sized(
    build: Callable[[int], SearchStrategy[str]],
) -> Callable[[int, int | None], SearchStrategy[str]]:
    return lambda low, high: _size(low, high).flatmap(build)


_BUILDERS: dict[str, Callable[[int, int | None], SearchStrategy[str]]] = {
    "date": _fixed(_DATES.map(datetime.date.isoformat)),
    "date-time": _date_time,
    "time": _time,
    "email": _email,
    "hostname": _sized(_host_of),
    "ipv4": _sized(_ipv4_of),
    "ipv6": _sized(_ipv6_of),
    "uri": _uri,
    "uri-reference": _uri_reference,
    "json-pointer": _json_pointer,
    "uuid": _fixed(st.uuids().map(str)),
}
