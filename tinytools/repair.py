"""Repair of relaxed-JSON tool-call arguments, and normalisation of argument shapes.

Small local models (Ollama, LM Studio, llama.cpp, vLLM) often emit arguments that are
almost JSON. `recover_relaxed_object` repairs what can be repaired without changing
meaning and refuses the rest; `repair_relaxed_object` also reports what it changed.
Both are meant for text that failed a strict decode, and both only ever return an object.

Repairs, composed freely and at any depth (`RepairKind` labels, reported in this order):

- ``unquoted_keys``: a bare identifier (letters, digits, ``_``, ``$``, ``-``; no leading
  digit) after ``{`` or ``,`` and before ``:`` becomes a key. ``true``, ``false``,
  ``null``, ``True``, ``False`` and ``None`` are refused as keys: JavaScript reads
  ``{true: 1}`` as the key ``"true"``, Python as a boolean.
- ``redundant_braces``: a brace pair that wraps exactly one object (``{{...}}``) is
  dropped, layer by layer; a pair that wraps anything else is refused.
- ``template_quote_tokens``: a string delimited by a leaked chat-template quote token
  (``<|"|>`` or ``<|">``, as Gemma emits) becomes a JSON string. Its content is verbatim,
  as those templates write it: ``c:\\Users`` keeps its backslash.
- ``trailing_commas``: a comma before ``}`` or ``]`` is dropped; one right after ``{`` or
  ``[`` is refused (``[,]`` is a one-hole array in JavaScript).
- ``single_quotes``: a single-quoted string becomes a JSON string (``\\'`` becomes ``'``,
  a bare ``"`` is escaped). It ends at its first unescaped ``'``, so an apostrophe inside
  it breaks the document, which is then refused rather than guessed at.
- ``python_literals``: ``True``, ``False``, ``None`` outside strings become ``true``,
  ``false``, ``null``.
- ``markdown_fence``, ``bom``: one code fence (any info string) around the whole document;
  a byte-order mark before it.
- ``whitespace``: surrounding whitespace JSON does not allow (no-break space, form feed,
  line separator...); JSON's own whitespace changes nothing and is not reported.

Text inside a string is never rewritten. A bare word that is neither a key nor a Python
literal (an unquoted value) is left for the strict decode to refuse; since JSON allows a
colon only after an object key, a "key" found in array or value position always yields
a refused document. The result is accepted only if `msgspec.json.decode` decodes it to
an object: truncated documents, several top-level values, non-objects, prose around the
document, Python tuples, ``1_000`` and other guesses give ``None``.

The work is linear and cannot recurse: one regular-expression split finds every string,
then a few passes in C rewrite the text between strings. Each expression starts with a
fixed character and backtracks over at most one word or run of whitespace; brace
matching for wrappers uses an explicit stack.

`normalize_arguments` reshapes decoded arguments that are not an object, for object
schemas only (top-level ``type`` is ``"object"`` or ``["object"]``, not ``nullable``).
Schemas whose top level may accept a primitive or an array (no ``type``, a list of
several types, a bare ``anyOf``...) are left untouched. The rules, in order:

1. ``json_string``: a string whose content (inside whitespace, a BOM, a markdown fence)
   strictly decodes to an object becomes that object.
2. ``empty_value``: ``None``, ``[]`` or a blank string becomes ``{}`` when ``{}`` meets the
   schema's top level (no ``required`` names, no ``minProperties``, no ``anyOf``,
   ``oneOf``, ``allOf``, ``not``, ``if``, ``enum``, ``const`` or ``$ref``).
3. ``ignored_value``: any other non-object (``"Paris"``, ``0``, ``false``, ``[1]``) becomes
   ``{}`` only if, besides, the schema declares no properties at all (no ``properties``,
   no ``patternProperties``, ``additionalProperties`` absent or false): the tool takes
   no arguments, so nothing is lost. Otherwise the value is left for validation to
   reject, since dropping it would lose what the model meant.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from operator import itemgetter
from typing import Final, Literal, get_args

import attrs
import msgspec

__all__ = [
    "NormalizeKind",
    "Normalized",
    "REPAIR_KINDS",
    "RepairKind",
    "Repaired",
    "normalize_arguments",
    "recover_relaxed_object",
    "repair_relaxed_object",
]

#: What a repair changed; `Repaired.kinds` lists them in this order.
RepairKind = Literal[
    "unquoted_keys",
    "redundant_braces",
    "template_quote_tokens",
    "trailing_commas",
    "single_quotes",
    "python_literals",
    "markdown_fence",
    "bom",
    "whitespace",
]
#: Every `RepairKind`, in the documented order.
REPAIR_KINDS: Final[tuple[RepairKind, ...]] = get_args(RepairKind)

#: How `normalize_arguments` changed a value (see the module docstring).
NormalizeKind = Literal["json_string", "empty_value", "ignored_value"]


@attrs.frozen
class Repaired:
    """A repaired argument object and what was repaired, for events.

    A frozen attrs class rather than a NamedTuple, so it never compares equal to a
    plain tuple and cannot be unpacked by position by mistake.

    Attributes:
        value: The decoded object.
        kinds: The repairs made, in `REPAIR_KINDS` order; empty when the text was
            already strict JSON.
    """

    value: dict[str, object]
    kinds: tuple[RepairKind, ...]


@attrs.frozen
class Normalized:
    """Arguments reshaped into an object by `normalize_arguments`.

    Attributes:
        value: The object to validate in place of the original value.
        kind: Which normalisation applied.
    """

    value: dict[str, object]
    kind: NormalizeKind


def recover_relaxed_object(raw: str) -> dict[str, object] | None:
    """Repair relaxed-JSON arguments into an object, or refuse.

    Args:
        raw: Argument text that failed a strict decode.

    Returns:
        The object, or ``None`` when the text cannot be repaired without guessing.
    """
    repaired = repair_relaxed_object(raw)
    return None if repaired is None else repaired.value


def repair_relaxed_object(raw: str) -> Repaired | None:
    """Repair relaxed-JSON arguments into an object and report what was repaired.

    Args:
        raw: Argument text that failed a strict decode.

    Returns:
        The object with its repair kinds, or ``None`` when the text cannot be repaired
        without guessing.
    """
    found: set[RepairKind] = set()
    text = _unwrap_document(raw, found)
    # An object starts with "{" and ends with "}"; checking first refuses prose,
    # arrays, scalars and most truncations before any scan.
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        strict = _rewrite(text, found)
        value = None if strict is None else msgspec.json.decode(strict)
    except (msgspec.MsgspecError, UnicodeError, RecursionError):
        # Lone surrogates cannot be encoded; nesting deeper than the interpreter's
        # recursion limit cannot be decoded. Both are refusals, never crashes.
        return None
    if not isinstance(value, dict):
        return None
    return Repaired(value, tuple(kind for kind in REPAIR_KINDS if kind in found))


# --- Layers around the document ---------------------------------------------------------

_JSON_WHITESPACE: Final = " \t\r\n"
# Three or more backticks and an optional info string, then the document; the info
# string cannot contain "{", so a one-line fence (```json {...}```) also matches.
_FENCE_OPEN: Final = re.compile(r"(`{3,})[ \t]*(?:[A-Za-z][\w+.-]*)?")


def _unwrap_document(raw: str, found: set[RepairKind]) -> str:
    """Remove surrounding whitespace, a byte-order mark and a markdown fence."""
    text = _strip(raw, found)
    if text.startswith("\ufeff"):
        found.add("bom")
        text = _strip(text[1:], found)
    fence = _FENCE_OPEN.match(text)
    if fence is not None:
        ticks = fence.group(1)
        if text.endswith(ticks):
            found.add("markdown_fence")
            text = _strip(text[fence.end() : len(text) - len(ticks)], found)
    return text


def _strip(text: str, found: set[RepairKind]) -> str:
    """Strip whitespace, noting whitespace that JSON itself would have rejected."""
    stripped = text.strip()
    if len(stripped) != len(text.strip(_JSON_WHITESPACE)):
        found.add("whitespace")
    return stripped


# --- Strings ------------------------------------------------------------------------------

# One alternative per string syntax, each starting with its quote, so the engine skips
# the text between strings at C speed. Each stops at its closing quote or, when there is
# none, runs to the end: a search therefore never restarts inside an unclosed string
# (which would make the scan quadratic), and an unclosed string shows up as a string
# that swallowed the document's final "}".
_STRING: Final = re.compile(
    r"""(
        "[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)
      | '[^'\\]*(?:\\.[^'\\]*)*(?:'|\\?\Z)
      | <\|"\|?>[^<]*(?:<(?!\|"\|?>)[^<]*)*(?:<\|"\|?>|\Z)
    )""",
    re.DOTALL | re.VERBOSE,
)
# Inside single quotes: an escape (kept, except \' which becomes ') or a bare ".
_SINGLE_QUOTED_ESCAPE: Final = re.compile(r'\\(.)|"', re.DOTALL)
# Stands for each string while the text between strings is rewritten. It cannot occur
# there: outside a string, a ' always starts one.
_PLACEHOLDER: Final = "'"
# What each opening character other than '"' says about the repair.
_QUOTE_KINDS: Final[dict[str, RepairKind]] = {"'": "single_quotes", "<": "template_quote_tokens"}


def _rewrite(text: str, found: set[RepairKind]) -> str | None:
    """Rewrite a relaxed object document into strict JSON, or None when it is refused."""
    if "'" in text and '"' not in text and "\\" not in text and "<|" not in text:
        # With no other kind of string and no escapes, every ' delimits a single-quoted
        # string (outside a string a ' opens one; inside, the next ' closes it): swap them
        # all at C speed — the shape of a Python repr — and scan the result as JSON strings.
        text = text.replace("'", '"')
        found.add("single_quotes")
    parts = _STRING.split(text)
    if not parts[-1]:
        return None  # a string never closed and ran over the final "}"
    openers = set(map(itemgetter(0), parts[1::2]))
    quotes = openers - {'"'}  # which other syntaxes occur
    if openers == {"'"}:
        found.add("single_quotes")
        converted = _convert_single_quoted(parts[1::2])
        if converted is not None:
            parts[1::2] = converted
            quotes = set()
    if quotes:
        found.update(_QUOTE_KINDS[quote] for quote in quotes)
        # Inlined for the two common cases: a JSON string, and a single-quoted string
        # without escapes, whose only quote characters are its delimiters and bare ".
        parts[1::2] = [
            token
            if token[0] == '"'
            else token.replace('"', '\\"').replace("'", '"')
            if token[0] == "'" and "\\" not in token
            else _convert_string(token)
            for token in parts[1::2]
        ]
    between = _rewrite_between(_PLACEHOLDER.join(parts[0::2]), found)
    if between is None:
        return None
    parts[0::2] = between.split(_PLACEHOLDER)
    return "".join(parts)


# Stand-ins for the bulk conversion; raw control characters cannot occur in a string a
# strict decode accepts, and a text holding one takes the token-by-token way instead.
_BULK_MARKS: Final = "\x00\x01\x03"
_BULK_SEPARATOR: Final = "\x02"


def _convert_single_quoted(tokens: list[str]) -> list[str] | None:
    """Every token single-quoted: convert them all with a few C-speed replaces, or None.

    Equivalent to :func:`_convert_string` token by token: an escaped backslash stays, an
    escaped ' becomes ', an escaped or bare " ends up escaped, other escapes stay as they
    are for the strict decode to judge, and the delimiters become ". In a single-quoted
    token every unescaped ' is a delimiter (the first one closes it).
    """
    joined = _BULK_SEPARATOR.join(tokens)
    if (
        any(mark in joined for mark in _BULK_MARKS)
        or joined.count(_BULK_SEPARATOR) != len(tokens) - 1
    ):
        return None
    converted = (
        joined.replace("\\\\", "\x00")
        .replace("\\'", "\x01")
        .replace('\\"', "\x03")
        .replace('"', '\\"')
        .replace("\x03", '\\"')
        .replace("'", '"')
        .replace("\x01", "'")
        .replace("\x00", "\\\\")
    )
    return converted.split(_BULK_SEPARATOR)


def _convert_string(token: str) -> str:
    """Turn a single-quoted (with escapes) or template-token string into a JSON string."""
    if token[0] == "'":
        return f'"{_SINGLE_QUOTED_ESCAPE.sub(_requote_escape, token[1:-1])}"'
    start = 5 if token.startswith('<|"|>') else 4
    body = token[start : len(token) - (5 if token.endswith('<|"|>') else 4)]
    if '"' in body or "\\" in body or not body.isprintable():
        # Template strings are verbatim text: let msgspec escape what JSON needs.
        return msgspec.json.encode(body).decode()
    return f'"{body}"'


def _requote_escape(match: re.Match[str]) -> str:
    """Rewrite one escape or bare double quote from a single-quoted string body."""
    escaped = match.group(1)
    if escaped is None:
        return '\\"'
    return "'" if escaped == "'" else match.group(0)


# --- Between strings ------------------------------------------------------------------------

# A key is a bare identifier right after "{" or "," and before ":". It is searched for on
# the reversed text, where it starts with a colon: the engine then jumps from colon to
# colon instead of trying every comma and brace (1.6 times faster on key-dense input).
# The word and the whitespace lookahead each scan one run, once: the search is linear.
_REVERSED_KEY: Final = re.compile(r"(:[ \t\r\n]*)([\w$-]*(?:[^\W\d]|\$))(?=[ \t\r\n]*[{,])")
# The same for ASCII text, with explicit classes (a quarter faster than Unicode's \w).
_REVERSED_ASCII_KEY: Final = re.compile(
    r"(:[ \t\r\n]*)([A-Za-z0-9_$-]*[A-Za-z_$])(?=[ \t\r\n]*[{,])"
)
_RESERVED_REVERSED: Final = frozenset(
    word[::-1] for word in ("true", "false", "null", "True", "False", "None")
)
# A Python literal as a whole word: each pattern starts with its literal (fast search)
# and checks the character before it with a fixed-width lookbehind.
_PYTHON_LITERALS: Final = tuple(
    (re.compile(rf"{word}(?<![\w$-]{word})(?![\w$-])"), json)
    for word, json in (("True", "true"), ("False", "false"), ("None", "null"))
)
_TRAILING_COMMA: Final = re.compile(r",(?=[ \t\r\n]*[\]}])")
_WRAPPER: Final = re.compile(r"\{[ \t\r\n]*\{")


def _rewrite_between(text: str, found: set[RepairKind]) -> str | None:
    """Rewrite the text between strings (each string replaced by a placeholder)."""
    text = _quote_keys(text, found)
    for literal, json in _PYTHON_LITERALS:
        text, count = literal.subn(json, text)
        if count:
            found.add("python_literals")
    pieces = _TRAILING_COMMA.split(text)
    if len(pieces) > 1:
        # Only a value can precede a trailing comma; "[,]" is not an empty array.
        if any(piece.rstrip(_JSON_WHITESPACE)[-1:] in "{[" for piece in pieces[:-1]):
            return None
        found.add("trailing_commas")
        text = "".join(pieces)
    if _WRAPPER.search(text) is None:
        return text
    found.add("redundant_braces")
    return _peel_wrappers(text)


def _quote_keys(text: str, found: set[RepairKind]) -> str:
    """Quote bare keys; reserved words stay bare, so the strict decode refuses them."""
    if text.count(":") == text.count(_PLACEHOLDER + ":"):
        return text  # every colon follows a string: no bare key (a fast path)
    pattern = _REVERSED_ASCII_KEY if text.isascii() else _REVERSED_KEY
    pieces = pattern.split(text[::-1])
    if len(pieces) == 1:
        return text
    found.add("unquoted_keys")
    # The words are reversed, which quoting does not mind.
    pieces[2::3] = [word if word in _RESERVED_REVERSED else f'"{word}"' for word in pieces[2::3]]
    return "".join(pieces)[::-1]


_BRACE: Final = re.compile(r"[{}]")
_OPENS_OBJECT: Final = re.compile(r"[ \t\r\n]*\{")
_BLANK: Final = re.compile(r"[ \t\r\n]*")


def _peel_wrappers(text: str) -> str | None:
    """Drop every brace pair that wraps exactly one object, or None if one wraps more.

    Strings are placeholders here, so every brace is structural. A wrapper is a "{" whose
    next non-blank character is "{"; once the object inside it closes, only whitespace
    may come before the wrapper's own "}". The stack holds, per open brace, whether it
    is a wrapper.
    """
    kept: list[str] = []
    copied = 0  # text[copied:] is not yet in kept
    stack: list[bool] = []
    closing = False  # the next "}" must be the wrapper's
    after = 0  # where the last "}" ended
    for match in _BRACE.finditer(text):
        at = match.start()
        if text[at] == "{":
            wraps = _OPENS_OBJECT.match(text, at + 1) is not None
            stack.append(wraps)
            if wraps:
                kept.append(text[copied:at])
                copied = at + 1
            continue
        if not stack:
            return None
        if closing:
            if _BLANK.fullmatch(text, after, at) is None:
                return None
            kept.append(text[copied:at])
            copied = at + 1
        stack.pop()
        closing = bool(stack) and stack[-1]
        after = at + 1
    if stack:
        return None
    kept.append(text[copied:])
    return "".join(kept)


# --- Normalisation ------------------------------------------------------------------------

# Top-level keywords that can make {} invalid, so an empty object would not be a
# harmless stand-in.
_REJECTS_EMPTY_OBJECT: Final = frozenset(
    {"anyOf", "oneOf", "allOf", "not", "if", "enum", "const", "$ref", "$dynamicRef"}
)


def normalize_arguments(value: object, schema: Mapping[str, object]) -> Normalized | None:
    """Reshape decoded arguments that are not an object, for an object schema.

    Args:
        value: The decoded arguments, already known to fail the schema.
        schema: The tool's parameters schema.

    Returns:
        The object to validate instead, with how it was obtained, or ``None`` when the
        value is left as it is (see the module docstring for the rules).
    """
    if isinstance(value, Mapping) or not _is_object_schema(schema):
        return None
    if isinstance(value, str):
        decoded = _decode_embedded_object(value)
        if decoded is not None:
            return Normalized(decoded, "json_string")
    if not _accepts_empty_object(schema):
        return None
    if value is None or value == [] or (isinstance(value, str) and not value.strip()):
        return Normalized({}, "empty_value")
    if _declares_no_properties(schema):
        return Normalized({}, "ignored_value")
    return None


def _is_object_schema(schema: Mapping[str, object]) -> bool:
    """Whether the schema's top level accepts objects and nothing else."""
    kind = schema.get("type")
    only_object = kind == "object" or (isinstance(kind, list | tuple) and list(kind) == ["object"])
    return only_object and schema.get("nullable") is not True


def _decode_embedded_object(text: str) -> dict[str, object] | None:
    """The object a string strictly encodes, inside a fence or not, or None."""
    document = _unwrap_document(text, set())
    if not document.startswith("{"):
        return None
    try:
        decoded = msgspec.json.decode(document)
    except (msgspec.MsgspecError, UnicodeError, RecursionError):
        return None
    return decoded if isinstance(decoded, dict) else None


def _accepts_empty_object(schema: Mapping[str, object]) -> bool:
    """Whether ``{}`` satisfies the schema's top level, judged conservatively."""
    min_properties = schema.get("minProperties", 0)
    return (
        not schema.get("required")
        and (isinstance(min_properties, int) and min_properties <= 0)
        and _REJECTS_EMPTY_OBJECT.isdisjoint(schema)
    )


def _declares_no_properties(schema: Mapping[str, object]) -> bool:
    """Whether the schema lets an object carry no property at all."""
    additional = schema.get("additionalProperties")
    return (
        not schema.get("properties")
        and not schema.get("patternProperties")
        and (additional is None or additional is False)
    )
