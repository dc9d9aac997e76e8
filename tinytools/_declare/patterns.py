"""Schema patterns matched in time linear in the text: RE2, never Python's backtracking ``re``.

A schema's ``pattern`` and ``patternProperties`` are matched against text the model
chose (a value, a field name). Python's ``re`` backtracks: ``^(a+)+$`` against 27
``a`` and a ``!`` takes seconds, against 40 it takes hours, and the check runs
before any deadline or tool timeout could stop it, so one careless pattern in an
imported schema and one model reply would freeze the host. RE2 (the
``google-re2`` package, a dependency of tinytools) matches any pattern it
accepts in time linear in the text: the same pattern against 10,000 characters
takes about 15 microseconds.

JSON Schema patterns are ECMA-262 regular expressions. :func:`linear` spells the
few ECMA-262 features RE2 writes differently the RE2 way (``\\uXXXX``; ``\\s``,
``\\S`` and ``.`` with ECMA-262's Unicode line terminators and spaces) and runs the
rest as it is: ``\\d``, ``\\w``, ``\\b`` are ASCII in both, ``$`` ends the text in
both. A pattern RE2 cannot run — lookaround (``(?=``, ``(?<!``), backreferences, a
repetition count above 1,000, a construct RE2 reads otherwise (``[]``, ``[^]``,
``[[:alpha:]]``, an escape ECMA-262 reads as a literal letter) — gets no
:class:`Pattern`: it is not enforced locally, like the other constraints
``schema_dialect`` leaves to the tool (the local check is looser than the schema,
never stricter, never slow).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Pattern", "enforceable", "linear"]

#: ECMA-262's white space and line terminators (what its ``\s`` matches), as RE2 spells
#: them inside a character class.
_SPACE = (
    r"\t\n\v\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}"
)
#: ECMA-262's ``.``: any character but a line terminator.
_DOT = r"[^\n\r\x{2028}\x{2029}]"
#: Escapes of a letter or digit that mean the same in ECMA-262 and RE2 (``\x`` is
#: followed by two hex digits in both; ``\u``, ``\c``, ``\0``, ``\s`` are translated).
_SAME = frozenset("dDwWbBtnvfr")
_HEX = frozenset("0123456789abcdefABCDEF")


class Pattern:
    """One compiled pattern; ``search`` and ``match`` answer what fastjsonschema's
    generated code asks (a truthy value when the text matches)."""

    __slots__ = ("_run", "pattern")

    def __init__(
        self, pattern: str, run: Callable[[object, bytes, int, int], list[tuple[int, int]]]
    ) -> None:
        self.pattern = pattern
        self._run = run

    def search(self, text: str) -> bool:
        """Whether the pattern matches somewhere in ``text`` (JSON Schema's rule)."""
        try:
            data = text.encode()
        except UnicodeEncodeError:  # a lone surrogate (refused before any check runs)
            data = text.encode("utf-8", "surrogatepass")
        return self._run(_UNANCHORED, data, 0, len(data))[0][0] >= 0

    match = search  # fastjsonschema calls `match` for formats; patterns carry their anchors

    def __repr__(self) -> str:
        return f"Pattern({self.pattern!r})"


_UNANCHORED: object = None  # RE2's anchor value, set when RE2 is first loaded


def enforceable(pattern: object) -> bool:
    """Whether ``pattern`` is a string RE2 can match locally (see :func:`linear`)."""
    return isinstance(pattern, str) and linear(pattern) is not None


@functools.lru_cache(maxsize=1024)
def linear(pattern: str) -> Pattern | None:
    """``pattern`` (ECMA-262) compiled for RE2, or None when RE2 cannot run it.

    The first call loads RE2 (``import tinytools`` does not).
    """
    global _UNANCHORED
    spelled = _to_re2(pattern)
    if spelled is None:
        return None
    import re2  # type: ignore[import-untyped,unused-ignore]  # on first use
    from re2 import _re2  # type: ignore[import-untyped,unused-ignore]  # 6x cheaper a call

    options = re2.Options()
    options.log_errors = False  # a pattern RE2 refuses is an answer here, not a log line
    options.never_capture = True
    engine = _re2.RE2(spelled.encode(), options)
    if not engine.ok():
        return None
    _UNANCHORED = _re2.RE2.Anchor.UNANCHORED
    return Pattern(pattern, engine.Match)


def _to_re2(pattern: str) -> str | None:
    """``pattern`` in RE2's spelling, or None for ECMA-262 that RE2 would read otherwise."""
    out: list[str] = []
    index, end, in_class = 0, len(pattern), False
    while index < end:
        char = pattern[index]
        if char == "\\":
            piece, size = _escape(pattern, index, in_class)
            if piece is None:
                return None
            out.append(piece)
            index += size
            continue
        if in_class:
            if char == "]":
                in_class = False
            elif char == "[" and pattern[index + 1 : index + 2] in (":", ".", "="):
                return None  # RE2 reads `[[:alpha:]]` as a POSIX class, ECMA-262 as `[`, `:`, …
            out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
            if pattern[index + 1 : index + 2] == "^":
                out.append("^")
                index += 1
            if pattern[index + 1 : index + 2] == "]":
                return None  # `[]` matches nothing and `[^]` anything in ECMA-262
        elif char == ".":
            out.append(_DOT)
        else:
            out.append(char)
        index += 1
    return "".join(out)


def _escape(pattern: str, index: int, in_class: bool) -> tuple[str | None, int]:
    """The RE2 spelling of the escape at ``pattern[index]`` and its length in ``pattern``."""
    letter = pattern[index + 1 : index + 2]
    if not letter:
        return None, 1  # a trailing backslash
    if not letter.isascii() or not letter.isalnum():
        return pattern[index : index + 2], 2  # an escaped symbol is that symbol in both
    if letter in _SAME:
        return pattern[index : index + 2], 2
    if letter == "s":
        return (_SPACE if in_class else f"[{_SPACE}]"), 2
    if letter == "S":
        return (None if in_class else f"[^{_SPACE}]"), 2
    if letter == "x" and set(pattern[index + 2 : index + 4]) <= _HEX:
        digits = pattern[index + 2 : index + 4]
        return (f"\\x{digits}" if len(digits) == 2 else None), 4
    if letter == "u":
        digits = pattern[index + 2 : index + 6]
        if len(digits) == 4 and set(digits) <= _HEX and not 0xD800 <= int(digits, 16) <= 0xDFFF:
            return f"\\x{{{digits}}}", 6
        return None, 2
    if letter == "c":
        control = pattern[index + 2 : index + 3]
        if control.isascii() and control.isalpha():
            return f"\\x{{{ord(control) % 32:02X}}}", 3
        return None, 2
    if letter == "0" and not pattern[index + 2 : index + 3].isdigit():
        return "\\x00", 2
    return None, 2  # a backreference, or a letter RE2 and ECMA-262 read differently
