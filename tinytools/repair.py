"""Repair of relaxed-JSON tool-call arguments, and normalisation of argument shapes.

Small local models (served by Ollama, LM Studio, llama.cpp, vLLM) often emit arguments
that are almost JSON. `recover_relaxed_object` repairs what can be repaired without
changing meaning and refuses everything else; `repair_relaxed_object` also reports what it
changed. Both run only after a strict decode failed, and both only ever return an object.

Repairs, composed freely and at any depth (the labels are `RepairKind`, in this order):

- ``unquoted_keys``: a bare identifier before a colon becomes a string key. Identifiers
  are letters, digits, ``_``, ``$`` and ``-``, not starting with a digit. ``true``,
  ``false``, ``null``, ``True``, ``False`` and ``None`` are refused as keys: JavaScript
  reads ``{true: 1}`` as the key ``"true"``, Python as the boolean.
- ``redundant_braces``: a brace pair that wraps exactly one object (``{{...}}``) is
  dropped, layer by layer. A layer holding anything else is refused.
- ``template_quote_tokens``: a string delimited by a leaked chat-template quote token
  (``<|"|>`` or ``<|">``, as Gemma emits) becomes a JSON string. Its content is taken
  verbatim, as those templates write it: no escapes, so ``c:\\Users`` keeps its backslash.
- ``trailing_commas``: a comma directly before ``}`` or ``]`` is dropped; a comma directly
  after ``{`` or ``[`` is refused (``[,]`` is a one-hole array in JavaScript).
- ``single_quotes``: a single-quoted string becomes a JSON string (``\\'`` becomes ``'``
  and a bare ``"`` is escaped). It ends at its first unescaped ``'``, so an apostrophe
  inside one breaks the document and it is refused rather than guessed at.
- ``python_literals``: ``True``, ``False`` and ``None`` outside strings become ``true``,
  ``false`` and ``null``.
- ``markdown_fence``: one code fence around the whole document (any info string).
- ``bom``: a byte-order mark before the document.
- ``whitespace``: surrounding whitespace that JSON does not allow (no-break space, form
  feed, line separator...); JSON's own whitespace changes nothing and is not reported.

Text inside any string is never rewritten. A bare word that is not a key and not a
Python literal (an unquoted value) is left alone, so the strict decode refuses it. A
word is a key only when a colon follows; JSON allows a colon only after an object key,
so a word rewritten in array or value position always yields a document that is
refused. The result is accepted only if `msgspec.json.decode` decodes it and it is an
object: truncated documents, several top-level values, non-objects, prose around the
document, unquoted values, Python tuples and other guesses are refused with ``None``.

Speed and safety: one regular-expression split finds every string, then a few passes
rewrite the text between strings (keys, literals, commas), each in C. Every expression
starts with a fixed character and cannot backtrack beyond one run of whitespace or one
word, so the work is linear in the input; the brace matching for wrappers uses an
explicit stack, so no input can exhaust recursion.

`normalize_arguments` fixes transport shapes that decoded fine but are not an object,
for an object schema only (top-level ``type`` is ``"object"`` and not ``nullable``).
Schemas whose top level may accept a primitive or an array (``type`` absent, a list
of types, ``anyOf`` without ``type``...) are left untouched. In order:

1. ``json_string``: a string whose content (inside a markdown fence, a BOM, whitespace)
   strictly decodes to an object becomes that object.
2. ``empty_value``: ``None``, ``""``, a blank string or an empty list becomes ``{}`` when
   ``{}`` satisfies the schema's top level (no ``required`` names, no ``minProperties``,
   no ``anyOf``/``oneOf``/``allOf``/``not``/``if``/``enum``/``const``/``$ref``).
3. ``ignored_value``: any other non-object (``"Paris"``, ``0``, ``false``, ``[1]``) becomes
   ``{}`` only when, besides the above, the schema declares no properties at all (no
   ``properties``, no ``patternProperties``, ``additionalProperties`` absent or false): the
   tool takes no arguments, so nothing is lost. Otherwise the value is left for
   validation to reject, since dropping it would lose what the model meant.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, Literal, get_args

import attrs
import msgspec

__all__ = [
    "REPAIR_KINDS",
    "NormalizeKind",
    "Normalized",
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
        end = len(text) - len(ticks)
        if fence.end() <= end and text.endswith(ticks):
            found.add("markdown_fence")
            text = _strip(text[fence.end() : end], found)
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
_SINGLE_QUOTED_ESCAPE: Final = re.compile(r"""\\(.)|\"""", re.DOTALL)
# Stands for each string while the text between strings is rewritten. It cannot occur
# there: outside a string, a ' always starts one.
_PLACEHOLDER: Final = "'"


def _rewrite(text: str, found: set[RepairKind]) -> str | None:
    """Rewrite a relaxed object document into strict JSON, or None when it is refused."""
    parts = _STRING.split(text)
    if not parts[-1]:
        return None  # a string never closed and ran over the final "}"
    parts[1::2] = [
        token if token[0] == '"' else _convert_string(token, found) for token in parts[1::2]
    ]
    between = _rewrite_between(_PLACEHOLDER.join(parts[0::2]), found)
    if between is None:
        return None
    parts[0::2] = between.split(_PLACEHOLDER)
    return "".join(parts)


def _convert_string(token: str, found: set[RepairKind]) -> str:
    """Turn a single-quoted or template-token-quoted string into a JSON string."""
    if token[0] == "'":
        found.add("single_quotes")
        body = token[1:-1]
        if "\\" not in body:
            return '"' + body.replace('"', '\\"') + '"'
        return '"' + _SINGLE_QUOTED_ESCAPE.sub(_requote_escape, body) + '"'
    found.add("template_quote_tokens")
    start = 5 if token.startswith('<|"|>') else 4
    end = len(token) - (5 if token.endswith('<|"|>') else 4)
    # Template strings are verbatim text, so msgspec escapes them as it encodes.
    return msgspec.json.encode(token[start:end]).decode()


def _requote_escape(match: re.Match[str]) -> str:
    """Rewrite one escape or bare double quote from a single-quoted string body."""
    escaped = match.group(1)
    if escaped is None:
        return '\\"'
    return "'" if escaped == "'" else match.group(0)


# --- Between strings ------------------------------------------------------------------------

# A key: a bare identifier right after "{" or "," and before ":". The leading class lets
# the engine skip ahead; the word and the colon lookahead scan one word and one run of
# whitespace, once.
_KEY: Final = re.compile(r"([{,][ \t\r\n]*)((?:[^\W\d]|\$)[\w$-]*)(?=[ \t\r\n]*:)")
_RESERVED_KEYS: Final = frozenset({"true", "false", "null", "True", "False", "None"})
# A Python literal as a whole word. Each alternative starts with its literal (fast
# search) and checks the character before it with a fixed-width lookbehind.
_PYTHON_LITERAL: Final = re.compile(
    r"(True(?<![\w$-]True)|False(?<![\w$-]False)|None(?<![\w$-]None))(?![\w$-])"
)
_JSON_LITERALS: Final = {"True": "true", "False": "false", "None": "null"}
_COMMA_AFTER_OPENER: Final = re.compile(r"[{\[][ \t\r\n]*,")
_TRAILING_COMMA: Final = re.compile(r",(?=[ \t\r\n]*[\]}])")
_WRAPPER: Final = re.compile(r"\{[ \t\r\n]*\{")


def _rewrite_between(text: str, found: set[RepairKind]) -> str | None:
    """Rewrite the text between strings (strings replaced by a placeholder)."""
    pieces = _KEY.split(text)
    if len(pieces) > 1:
        words = pieces[2::3]
        if not _RESERVED_KEYS.isdisjoint(words):
            return None
        found.add("unquoted_keys")
        pieces[2::3] = ['"' + word + '"' for word in words]
        text = "".join(pieces)
    pieces = _PYTHON_LITERAL.split(text)
    if len(pieces) > 1:
        found.add("python_literals")
        pieces[1::2] = [_JSON_LITERALS[word] for word in pieces[1::2]]
        text = "".join(pieces)
    if _COMMA_AFTER_OPENER.search(text) is not None:
        return None
    text, commas = _TRAILING_COMMA.subn("", text)
    if commas:
        found.add("trailing_commas")
    if _WRAPPER.search(text) is None:
        return text
    found.add("redundant_braces")
    return _peel_wrappers(text)


_BRACE: Final = re.compile(r"[{}]")
_OPENS_OBJECT: Final = re.compile(r"[ \t\r\n]*\{")
_BLANK: Final = re.compile(r"[ \t\r\n]*")


def _peel_wrappers(text: str) -> str | None:
    """Drop every brace pair that wraps exactly one object, or None if one wraps more.

    Strings are placeholders here, so every brace is structural. The stack holds one
    flag per open brace: whether it is a wrapper layer.
    """
    kept: list[str] = []
    copied = 0  # text[copied:] is not yet in kept
    stack: list[bool] = []
    closing = False  # the last "}" closed the only thing its wrapper may hold
    after = 0  # where the last "}" ended
    for match in _BRACE.finditer(text):
        at = match.start()
        if text[at] == "{":
            if closing:
                return None
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
