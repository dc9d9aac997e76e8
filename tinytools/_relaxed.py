"""The relaxed-JSON scanner: one left-to-right pass that rewrites a document into strict JSON.

`tinytools.repair` unwraps the document (fence, BOM, whitespace) and decodes the result;
this module does the pass in between. `rewrite` is the reference implementation, in pure
Python. ``_relaxed_speedups.c`` is the same state machine over the UTF-8 bytes, compiled
when the package is installed; `repair` uses it when it is there, and a property test
checks that both give the same answer on any text.

The scanner reads one token at a time (whitespace, a comment, a string in one of its
three syntaxes, a word, a punctuation character, anything else) and keeps:

- the last significant token, which tells a key position (after ``{`` or ``,``) and a
  trailing comma's predecessor;
- a stack with one flag per open ``{``: whether it wraps exactly one object;
- whether the next significant token must be a wrapper's closing ``}``.

A comment (``//`` to the end of the line, ``/* … */``) outside a string is dropped, a
space in its place, and changes none of that state. A raw control character inside a
string (not right after a backslash) is written as its JSON escape.

A decision that depends on what follows (is this word a key, is this comma trailing,
does this brace wrap an object) peeks past whitespace and comments at the next
character. Each whitespace run and comment is therefore read at most twice, every
other character once: the pass is linear, and it never recurses. A document that
cannot be rewritten without guessing is refused there and then (``None``); everything
the scanner leaves alone, such as an unquoted value, a number in a strange form or
prose, is left for the strict decode to refuse.

`value_end` reads text with the same tokens to say where a value ends, for the text
dialects: a call whose closing tag never came is complete when its relaxed value is.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

__all__ = [
    "BRACES",
    "COMMAS",
    "COMMENTS",
    "CONTROL",
    "KEYS",
    "LITERALS",
    "SINGLE_QUOTES",
    "TEMPLATE_TOKENS",
    "rewrite",
    "value_end",
]

# What a rewrite changed, as bits (the compiled scanner uses the same values).
KEYS: Final = 1
BRACES: Final = 2
TEMPLATE_TOKENS: Final = 4
COMMAS: Final = 8
SINGLE_QUOTES: Final = 16
LITERALS: Final = 32
CONTROL: Final = 64
COMMENTS: Final = 128

# One token per match; the alternatives are tried in order and the last one takes any
# character, so consecutive matches cover the whole text. A string's match cannot fail
# once its opening quote matched, so the engine never backtracks over a string: it runs
# to its closing quote, which an optional group takes, or to the end of the text, where
# that group is empty and the string is known to be unclosed. The only alternative that
# can fail part-way is a template token's opening (at most five characters: "<|"x").
_TOKEN: Final = re.compile(
    r"""
      (?P<space>[ \t\r\n]+)
    | (?P<double>"[^"\\]*(?:\\.[^"\\]*)*(?P<double_end>")?)
    | (?P<single>'[^'\\]*(?:\\.[^'\\]*)*(?P<single_end>')?)
    | (?P<template><\|"\|?>[^<]*(?:<(?!\|"\|?>)[^<]*)*(?P<template_end><\|"\|?>)?)
    | (?P<word>[\w$-]+)
    | (?P<punctuation>[{}\[\],:])
    | (?P<comment>//[^\n]*|/\*[^*]*(?:\*+[^*/][^*]*)*(?P<comment_end>\*+/)?)
    | (?P<other>.)
    """,
    re.DOTALL | re.VERBOSE,
)
# Each string syntax and the group that holds its closing quote.
_STRINGS: Final = {"double": "double_end", "single": "single_end", "template": "template_end"}
# Whitespace and comments: what a peek skips to find the next significant character. An
# unclosed block comment is not skipped (the scan refuses it when it gets there).
_SPACE: Final = re.compile(r"(?:[ \t\r\n]+|//[^\n]*|/\*[^*]*(?:\*+[^*/][^*]*)*\*+/)*")
# Inside single quotes: an escape (kept, except \' which becomes '), a bare ", or a raw
# control character.
_SINGLE_QUOTED_ESCAPE: Final = re.compile(r'\\(.)|"|[\x00-\x1f]', re.DOTALL)
# Inside double quotes: an escape (kept as it is) or a raw control character.
_DOUBLE_QUOTED_ESCAPE: Final = re.compile(r"\\.|[\x00-\x1f]", re.DOTALL)
_CONTROL_CHARACTER: Final = re.compile(r"[\x00-\x1f]")
# How JSON writes a control character (the compiled scanner uses the same spellings).
_CONTROL_ESCAPES: Final = {
    chr(c): {8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}.get(c, f"\\u{c:04x}")
    for c in range(32)
}
_TEMPLATE_OPENERS: Final = ('<|"|>', '<|">')
_PYTHON_LITERALS: Final = {"True": "true", "False": "false", "None": "null"}
# Words that must not become keys: JavaScript reads {true: 1} as the key "true", Python
# as a boolean, so either reading would be a guess.
_RESERVED: Final = frozenset({"true", "false", "null", *_PYTHON_LITERALS})


def rewrite(text: str) -> tuple[str, int] | None:
    """Rewrite a relaxed object document into strict JSON.

    Args:
        text: The document, already unwrapped (it starts with ``{`` and ends with ``}``).

    Returns:
        The rewritten text and the bits of what changed, or ``None`` when the document
        is refused.
    """
    out: list[str] = []
    found = 0
    last = ""  # the last significant token: a punctuation character, or "v" for a value
    wrappers: list[bool] = []  # per open "{": does it wrap exactly one object
    closing = False  # the next significant token must be a wrapper's "}"
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        token = match.group()
        if kind == "space":
            out.append(token)
            continue
        if kind == "comment":
            if token.startswith("/*") and match.group("comment_end") is None:
                return None  # a block comment that is never closed
            found |= COMMENTS
            out.append(" ")
            continue
        if token == "," and _next_character(text, match.end()) in ("}", "]"):
            # A trailing comma is dropped, after a wrapped object too: "{{a: 1},}".
            if last in ("{", "["):
                return None  # "[,]" is a one-hole array in JavaScript, not []
            found |= COMMAS
            last = ","
            continue
        if closing and token != "}":
            return None  # a wrapper around more than one object
        if kind == "punctuation":
            if token == "{":
                wraps = _next_character(text, match.end()) == "{"
                wrappers.append(wraps)
                if wraps:
                    found |= BRACES
                    last = "{"
                    continue  # dropped
            elif token == "}":
                if not wrappers:
                    return None
                wrappers.pop()
                wrapper_closed, closing = closing, bool(wrappers) and wrappers[-1]
                if wrapper_closed:
                    last = "}"
                    continue  # dropped
            out.append(token)
            last = token
            continue
        previous, last = last, "v"
        if kind in _STRINGS and match.group(_STRINGS[kind]) is None:
            return None  # a string that is never closed
        if kind == "word":
            if previous in ("{", ",") and _next_character(text, match.end()) == ":":
                if token in _RESERVED or token[0] == "-" or token[0].isdecimal():
                    return None
                found |= KEYS
                out.append(f'"{token}"')
            elif token in _PYTHON_LITERALS:
                found |= LITERALS
                out.append(_PYTHON_LITERALS[token])
            else:
                out.append(token)
        elif kind == "double" and _CONTROL_CHARACTER.search(token) is not None:
            escaped = _DOUBLE_QUOTED_ESCAPE.sub(_escape_control, token)
            found |= CONTROL if escaped != token else 0
            out.append(escaped)
        elif kind == "single":
            found |= SINGLE_QUOTES
            quoted, control = _single_quoted(token)
            found |= CONTROL if control else 0
            out.append(quoted)
        elif kind == "template":
            found |= TEMPLATE_TOKENS
            out.append(_template_quoted(token))
        else:
            out.append(token)
    if wrappers:
        return None
    return "".join(out), found


# Where a bracket, a string (in any of its three syntaxes) or a comment starts.
_VALUE_PART: Final = re.compile(r"""[{}\[\]"']|/[/*]|<\|"\|?>""")
# The group holding the end of each token that can be left open.
_ENDS: Final = {**_STRINGS, "comment": "comment_end"}


def value_end(text: str, start: int, limit: int) -> int:
    """Where the value whose ``{`` or ``[`` is at ``start`` ends, as :func:`rewrite` reads it.

    A bracket inside a string (double-quoted, single-quoted or between template quote
    tokens) or a comment does not count. Whether the value is one a decode accepts is not
    judged here, only that the text holds all of it.

    Args:
        text: The text.
        start: Where the value's opening bracket is.
        limit: Where to stop reading.

    Returns:
        The index just past the bracket that closes the value, or -1 when ``text[:limit]``
        ends first: inside the value, one of its strings or a block comment.
    """
    depth, pos = 0, start
    while (found := _VALUE_PART.search(text, pos, limit)) is not None:
        part = found.group()
        if part in ("{", "["):
            depth += 1
        elif part in ("}", "]"):
            depth -= 1
            if depth == 0:
                return found.end()
        else:  # a string or a comment: skipped whole, as the scanner reads it
            token = _TOKEN.match(text, found.start(), limit)
            assert token is not None  # the alternative for what was found matches it
            kind = str(token.lastgroup)
            if token.group(_ENDS[kind]) is None and not token.group().startswith("//"):
                return -1  # the text ends inside it
            pos = token.end()
            continue
        pos = found.end()
    return -1


def _next_character(text: str, at: int) -> str:
    """The first character at or after ``at`` that is not JSON whitespace, or ''."""
    space = _SPACE.match(text, at)
    start = space.end() if space else at  # it always matches, if only the empty string
    return text[start : start + 1]


def _escape_control(match: re.Match[str]) -> str:
    """A raw control character as its JSON escape; an escape sequence as it is."""
    token = match.group()
    return _CONTROL_ESCAPES[token] if len(token) == 1 else token


def _single_quoted(token: str) -> tuple[str, bool]:
    """A single-quoted string as a JSON string (\\' becomes ', a bare " is escaped, a raw
    control character is written as its escape), and whether it held a raw control
    character."""
    body = token[1:-1]
    control = False
    if "\\" in body or '"' in body or _CONTROL_CHARACTER.search(body) is not None:
        rewritten = _SINGLE_QUOTED_ESCAPE.sub(_requote, body)
        control = (
            _CONTROL_CHARACTER.search(_SINGLE_QUOTED_ESCAPE.sub(_kept_escape, body)) is not None
        )
        body = rewritten
    return f'"{body}"', control


def _kept_escape(match: re.Match[str]) -> str:
    """An escape sequence removed, to tell raw control characters from escaped ones."""
    return "" if match.group(1) is not None else match.group()


def _requote(match: re.Match[str]) -> str:
    """Rewrite one escape, bare double quote or raw control character from a
    single-quoted string body."""
    escaped = match.group(1)
    if escaped is None:
        token = match.group()
        return '\\"' if token == '"' else _CONTROL_ESCAPES[token]
    return "'" if escaped == "'" else match.group(0)


def _template_quoted(token: str) -> str:
    """A template-token string as a JSON string; its body is verbatim text."""
    start = 5 if token.startswith(_TEMPLATE_OPENERS[0]) else 4
    end = len(token) - (5 if token.endswith(_TEMPLATE_OPENERS[0]) else 4)
    return msgspec.json.encode(token[start:end]).decode()
