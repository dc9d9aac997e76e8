"""The relaxed-JSON scanner: one left-to-right pass that rewrites a document into strict JSON.

`tinytools.repair` unwraps the document (fence, BOM, whitespace) and decodes the result;
this module does the pass in between. `rewrite` is the reference implementation, in pure
Python. ``_relaxed_speedups.c`` is the same state machine over the UTF-8 bytes, compiled
when the package is installed; `repair` uses it when it is there, and a property test
checks that both give the same answer on any text.

The scanner reads one token at a time (whitespace, a string in one of its three
syntaxes, a word, a punctuation character, anything else) and keeps:

- the last significant token, which tells a key position (after ``{`` or ``,``) and a
  trailing comma's predecessor;
- a stack with one flag per open ``{``: whether it wraps exactly one object;
- whether the next significant token must be a wrapper's closing ``}``.

A decision that depends on what follows (is this word a key, is this comma trailing,
does this brace wrap an object) peeks past whitespace at the next character. Each
whitespace run is therefore read at most twice, every other character once: the pass
is linear, and it never recurses. A document that cannot be rewritten without guessing
is refused there and then (``None``); everything the scanner leaves alone, such as an
unquoted value, a number in a strange form or prose, is left for the strict decode to
refuse.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

__all__ = [
    "BRACES",
    "COMMAS",
    "KEYS",
    "LITERALS",
    "SINGLE_QUOTES",
    "TEMPLATE_TOKENS",
    "rewrite",
]

# What a rewrite changed, as bits (the compiled scanner uses the same values).
KEYS: Final = 1
BRACES: Final = 2
TEMPLATE_TOKENS: Final = 4
COMMAS: Final = 8
SINGLE_QUOTES: Final = 16
LITERALS: Final = 32

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
    | (?P<other>.)
    """,
    re.DOTALL | re.VERBOSE,
)
# Each string syntax and the group that holds its closing quote.
_STRINGS: Final = {"double": "double_end", "single": "single_end", "template": "template_end"}
_SPACE: Final = re.compile(r"[ \t\r\n]*")
# Inside single quotes: an escape (kept, except \' which becomes ') or a bare ".
_SINGLE_QUOTED_ESCAPE: Final = re.compile(r'\\(.)|"', re.DOTALL)
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
        elif kind == "single":
            found |= SINGLE_QUOTES
            out.append(_single_quoted(token))
        elif kind == "template":
            found |= TEMPLATE_TOKENS
            out.append(_template_quoted(token))
        else:
            out.append(token)
    if wrappers:
        return None
    return "".join(out), found


def _next_character(text: str, at: int) -> str:
    """The first character at or after ``at`` that is not JSON whitespace, or ''."""
    space = _SPACE.match(text, at)
    start = space.end() if space else at  # it always matches, if only the empty string
    return text[start : start + 1]


def _single_quoted(token: str) -> str:
    """A single-quoted string as a JSON string: \\' becomes ', a bare " is escaped."""
    body = token[1:-1]
    if "\\" in body or '"' in body:
        body = _SINGLE_QUOTED_ESCAPE.sub(_requote, body)
    return f'"{body}"'


def _requote(match: re.Match[str]) -> str:
    """Rewrite one escape or bare double quote from a single-quoted string body."""
    escaped = match.group(1)
    if escaped is None:
        return '\\"'
    return "'" if escaped == "'" else match.group(0)


def _template_quoted(token: str) -> str:
    """A template-token string as a JSON string; its body is verbatim text."""
    start = 5 if token.startswith(_TEMPLATE_OPENERS[0]) else 4
    end = len(token) - (5 if token.endswith(_TEMPLATE_OPENERS[0]) else 4)
    return msgspec.json.encode(token[start:end]).decode()
