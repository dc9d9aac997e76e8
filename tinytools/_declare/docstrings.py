"""Split a docstring into a description and one description per parameter.

Google, NumPy and Sphinx (reST field list) styles are recognised line by line, so one docstring
may mix them (a Google summary followed by Sphinx fields, say). After :func:`inspect.cleandoc`,
only a line at column 0 can open a section; indented text is always body or entry text:

* a Google header is a known name alone on its line, ``Args:``, whose next non-blank line is
  indented; a prose line ending in a colon stays in the description;
* a NumPy header is a known name underlined with dashes; its section runs to the next one;
* a Sphinx field is ``:name args: text``; its indented continuation lines belong to it;
* once any of these has been seen, a doctest block (``>>>``) at column 0 is an example and is
  dropped too.

Parameter sections and ``:param:``-like fields feed ``params``; every other section and field is
dropped. Types written beside a name (``x (int):``, ``x : int``, ``:param int x:``) are dropped,
because the schema takes types from the hints. When a parameter is documented twice, the first
description wins: it is the one a reader of the docstring meets first.

Parsing never raises and takes time linear in the docstring's length: the few regexes are anchored
and cannot backtrack badly.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from types import MappingProxyType

import attrs

__all__ = ["ParsedDocstring", "parse_docstring"]

# Known section names, compared after lower-casing and collapsing spaces. Kept compact by hand:
# one name a line would make these lists a fifth of the module.
# fmt: off
_PARAM_SECTIONS = frozenset({
    "args", "arguments", "keyword args", "keyword arguments", "other parameters", "parameters",
    "params",
})
_SECTIONS = _PARAM_SECTIONS | frozenset({
    "attention", "attributes", "caution", "danger", "error", "example", "examples", "hint",
    "important", "methods", "note", "notes", "raise", "raises", "receives", "references",
    "return", "returns", "see also", "tip", "todo", "warning", "warnings", "warns", "yield",
    "yields",
})
# fmt: on
_PARAM_FIELDS = frozenset({"arg", "argument", "key", "keyword", "param", "parameter"})

# `(\s[^:]*)?` starts with whitespace so that it cannot trade characters with the field name when
# a match fails (as on ":class:`X`"), which keeps failing linear.
_FIELD = re.compile(r":([^\W\d][\w-]*)(\s[^:]*)?:(?!\S)(.*)")
# A type in brackets may nest one level, as in `(dict(str, int))`; the alternatives start with
# different characters, so the regex never has two ways to match the same text.
_GOOGLE_ENTRY = re.compile(r"(?:\\?\*){0,2}(\w+)\s*(?:\((?:[^()]|\([^()]*\))*\)\s*)?:(.*)")


def _freeze(params: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(params))


@attrs.frozen
class ParsedDocstring:
    """What a docstring says about a function, with its sections taken apart.

    Attributes:
        description: The summary and body paragraphs, without any section.
        params: Each documented parameter's description, in docstring order.
    """

    description: str
    # Left out of the hash only because a mapping proxy is unhashable; equality still uses it.
    params: Mapping[str, str] = attrs.field(factory=dict, converter=_freeze, hash=False)


_EMPTY = ParsedDocstring("")


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Parse a Google, NumPy or Sphinx docstring.

    Args:
        doc: The docstring, raw or already cleaned; ``None`` means there is none.

    Returns:
        The description and parameter descriptions; both empty when there is no docstring.
    """
    lines = _clean_lines(doc) if doc else []
    if not lines:
        return _EMPTY
    # Lines are right-stripped, so blank lines are empty; -1 marks them.
    indents = [len(line) - len(line.lstrip()) if line else -1 for line in lines]
    kept: list[str] = []
    params: dict[str, str] = {}
    seen_section = False
    i = 0
    while i < len(lines):
        end = _consume(lines, indents, i, params, seen_section) if indents[i] == 0 else i
        if end > i:
            seen_section = True
            i = end
            continue
        # Runs of blank lines (some left where a section was) shrink to one paragraph break.
        if lines[i] or (kept and kept[-1]):
            kept.append(lines[i])
        i += 1
    if kept and not kept[-1]:
        kept.pop()
    return ParsedDocstring("\n".join(kept), params)


def _clean_lines(doc: str) -> list[str]:
    """The cleaned, right-stripped lines, from the first non-blank one."""
    lines = [line.rstrip() for line in inspect.cleandoc(doc).split("\n")]
    # cleandoc keeps leading lines of stray whitespace and, on 3.13, strips only spaces from the
    # first line; the first real line must start at column 0 for sections to be found.
    start = 0
    while start < len(lines) and not lines[start]:
        start += 1
    lines = lines[start:]
    if lines:
        lines[0] = lines[0].lstrip()
    return lines


def _consume(
    lines: list[str], indents: list[int], i: int, params: dict[str, str], seen: bool
) -> int:
    """Take the section, field or doctest at line ``i``; return where it ends, or ``i`` if none."""
    line = lines[i]
    if line[0] == ":":
        return _consume_field(lines, indents, i, params)
    if seen and line.startswith(">>>"):
        return _doctest_end(lines, indents, i)
    key = _numpy_key(lines, i)
    if key is not None:
        end = _numpy_end(lines, i + 2)
        if key in _PARAM_SECTIONS:
            _add_numpy(lines, indents, range(i + 2, end), params)
        return end
    key = _google_key(lines, indents, i)
    if key is not None:
        end = _indented_end(indents, i)
        if key in _PARAM_SECTIONS:
            _add_google(lines, indents, range(i + 1, end), params)
        return end
    return i


def _consume_field(lines: list[str], indents: list[int], i: int, params: dict[str, str]) -> int:
    """Take a reST field and its indented lines; record it if it documents a parameter."""
    match = _FIELD.match(lines[i])
    if match is None:
        return i
    end = _indented_end(indents, i)
    if match[1] in _PARAM_FIELDS:
        # In `:param dict(str, int) x:` the name is the last word; the words before are a type.
        words = (match[2] or "").split()
        name = _name(words[-1]) if words else ""
        if name:
            _add(params, (name,), [match[3], *[line.lstrip() for line in lines[i + 1 : end]]])
    return end


def _section_key(text: str) -> str:
    return " ".join(text.split()).lower()


def _numpy_key(lines: list[str], i: int) -> str | None:
    """The section name if line ``i`` is a known title underlined with dashes."""
    if i + 1 >= len(lines) or not lines[i + 1].startswith("---") or lines[i + 1].strip("-"):
        return None
    key = _section_key(lines[i].rstrip(":"))
    return key if key in _SECTIONS else None


def _numpy_end(lines: list[str], start: int) -> int:
    """Where a NumPy section ends: at the next NumPy header, since its entries sit at column 0."""
    for j in range(start, len(lines) - 1):
        if lines[j + 1].startswith("---") and lines[j][:1].isalpha() and _numpy_key(lines, j):
            return j
    return len(lines)


def _google_key(lines: list[str], indents: list[int], i: int) -> str | None:
    """The section name if line ``i`` is a known ``Name:`` followed by indented text."""
    line = lines[i]
    if line[-1] != ":":
        return None
    key = _section_key(line[:-1])
    if key not in _SECTIONS:
        return None
    j = i + 1
    while j < len(indents) and indents[j] < 0:
        j += 1
    return key if j < len(indents) and indents[j] > 0 else None


def _indented_end(indents: list[int], i: int) -> int:
    """Where the indented block under line ``i`` ends; trailing blank lines stay outside it."""
    end = i + 1
    for j in range(i + 1, len(indents)):
        if indents[j] == 0:
            break
        if indents[j] > 0:
            end = j + 1
    return end


def _doctest_end(lines: list[str], indents: list[int], i: int) -> int:
    """Where a doctest block ends: at a blank line before unindented text that is not a prompt.

    Indented text after a blank line counts as part of the example, so that dropping the block
    never leaves a section header right above indented text.
    """
    j = i + 1
    while j < len(lines):
        if indents[j] >= 0:
            j += 1
            continue
        k = j + 1
        while k < len(lines) and indents[k] < 0:
            k += 1
        if k == len(lines) or (indents[k] == 0 and not lines[k].startswith(">>>")):
            return j
        j = k
    return j


def _add_google(lines: list[str], indents: list[int], body: range, params: dict[str, str]) -> None:
    """Record ``name (type): text`` entries; other lines continue the entry above them."""
    base = _first_indent(indents, body)
    names: tuple[str, ...] = ()
    parts: list[str] = []
    for j in body:
        text = lines[j][indents[j] :] if indents[j] >= 0 else ""
        match = _GOOGLE_ENTRY.match(text) if 0 <= indents[j] <= base else None
        if match is None or not match[1].isidentifier():
            parts.append(text)
            continue
        _add(params, names, parts)
        names, parts = (match[1],), [match[2]]
    _add(params, names, parts)


def _first_indent(indents: list[int], body: range) -> int:
    """The indent of the first non-blank line: where a section's entries start."""
    for j in body:
        if indents[j] >= 0:
            return indents[j]
    return 0


def _add_numpy(lines: list[str], indents: list[int], body: range, params: dict[str, str]) -> None:
    """Record ``name : type`` entries, each described by the indented lines beneath it."""
    base = _first_indent(indents, body)
    names: tuple[str, ...] = ()
    parts: list[str] = []
    for j in body:
        text = lines[j][indents[j] :] if indents[j] >= 0 else ""
        if 0 <= indents[j] <= base:
            _add(params, names, parts)
            names, parts = tuple(filter(None, map(_name, text.partition(":")[0].split(",")))), []
        else:
            parts.append(text)
    _add(params, names, parts)


def _name(word: str) -> str:
    """The identifier in ``word`` once stripped of ``*`` and ``\\*`` prefixes, else ``""``."""
    name = word.strip().lstrip("\\*")
    return name if name.isidentifier() else ""


def _add(params: dict[str, str], names: tuple[str, ...], parts: list[str]) -> None:
    """Record the text for each name not documented yet: the first description wins."""
    if not names:
        return
    text = _join_wrapped(parts)
    for name in names:
        params.setdefault(name, text)


def _join_wrapped(parts: list[str]) -> str:
    """Join wrapped lines with spaces and paragraphs with a blank line."""
    if "" not in parts:
        # The common case: one paragraph, whose lines are already stripped but for the first.
        return " ".join(parts).strip()
    paragraphs: list[str] = []
    current: list[str] = []
    for part in parts:
        if part.strip():
            current.append(part.strip())
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(paragraphs)
