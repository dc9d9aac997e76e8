"""Repair of relaxed-JSON tool-call arguments, and normalisation of argument shapes.

Small local models (Ollama, LM Studio, llama.cpp, vLLM) often emit arguments that are
almost JSON. `recover_relaxed_object` repairs what can be repaired without changing
meaning and refuses the rest; `repair_relaxed_object` also reports what it changed.
Both are meant for text that failed a strict decode, and both only ever return an object.

Repairs, composed freely and at any depth (`RepairKind` labels, reported in this order):

- ``unquoted_keys``: a bare identifier after ``{`` or ``,`` and before ``:`` becomes a
  key. An identifier is a run of word characters (what ``str.isalnum()`` accepts, ``_``,
  ``$``, ``-``) that does not start with ``-`` or a decimal digit (``str.isdecimal()``):
  ``{a-b: 1}``, ``{$ref: 1}``, ``{città: 1}`` and ``{²: 1}`` are repaired, ``{1a: 1}``
  and ``{-a: 1}`` refused. ``true``, ``false``, ``null``, ``True``, ``False`` and
  ``None`` are refused as keys: JavaScript reads ``{true: 1}`` as the key ``"true"``,
  Python as a boolean.
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
- ``control_characters``: a raw control character (newline, tab…) inside a string is
  written as its JSON escape; it can only have meant itself. One right after a backslash
  is left for the strict decode to refuse.
- ``comments``: ``//`` line comments and ``/* */`` block comments outside strings are
  dropped (JSONC); an unclosed block comment is refused.
- ``markdown_fence``, ``bom``: one code fence (any info string) around the whole document;
  a byte-order mark before it.
- ``whitespace``: surrounding whitespace JSON does not allow (no-break space, form feed,
  line separator...); JSON's own whitespace changes nothing and is not reported.
- ``fence_language``: a fence's language word left without its fence (``json`` and a
  newline before the document; ``json5`` and ``jsonc`` too, in any case).
- ``leaked_tokens``: chat-template tokens after the document (``<|call|>``,
  ``<|im_end|>``, ``<|eot_id|>``, DeepSeek's fullwidth-bar tokens, ``</s>``, ``<eos>``,
  ``<end_of_turn>``, ``</tool_call>``), any number of them; text after the document that
  is anything else is still prose, and refused.
- ``repeated_object``: the same object written several times back to back (after the
  other repairs the copies must be identical, character for character, with only
  whitespace between them) is that object once. Different objects are refused: which
  one was meant would be a guess.

Text inside a string is never rewritten. A bare word that is neither a key nor a Python
literal (an unquoted value) is left for the strict decode to refuse; since JSON allows a
colon only after an object key, a "key" found in array or value position always yields
a refused document. The result is accepted only if `msgspec.json.decode` decodes it to
an object: truncated documents, several top-level values, non-objects, prose around the
document, Python tuples, ``1_000`` and other guesses give ``None``.

The repair is one linear pass that never recurses: a scanner reads the document token by
token, keeps one flag per open brace on an explicit stack, and copies everything it does
not change (``tinytools._relaxed`` documents the state machine). It is compiled from C
when the package is installed, so repairing costs about twice a strict decode of the
result (1 MB in under 10 ms); without a C compiler the same scanner runs in pure Python,
with the same answers (a property test checks both) and about thirty times slower on
input dense with repairs (1 MB in about 0.2 s, still far faster than ``json_repair``).

`normalize_arguments` reshapes decoded arguments that are not an object, for object
schemas only (top-level ``type`` is ``"object"`` or ``["object"]``, not ``nullable``).
Schemas whose top level may accept a primitive or an array (no ``type``, a list of
several types, a bare ``anyOf``...) are left untouched. The rules, in order:

1. ``json_string``: a string whose content (inside whitespace, a BOM, a markdown fence)
   strictly decodes to an object becomes that object.
2. ``single_item_array``: a list holding exactly one object becomes that object (the
   model wrapped its arguments in an array; with two or more there is no one answer).
3. ``empty_value``: ``None``, ``[]`` or a blank string becomes ``{}`` when ``{}`` meets the
   schema's top level (no ``required`` names, no ``minProperties``, no ``anyOf``,
   ``oneOf``, ``allOf``, ``not``, ``if``, ``enum``, ``const`` or ``$ref``).
4. ``ignored_value``: any other non-object (``"Paris"``, ``0``, ``false``, ``[1]``) becomes
   ``{}`` only if, besides, the schema declares no properties at all (no ``properties``,
   no ``patternProperties``, ``additionalProperties`` absent or false): the tool takes
   no arguments, so nothing is lost. Otherwise the value is left for validation to
   reject, since dropping it would lose what the model meant.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Final, Literal, get_args

import attrs
import msgspec

from . import _relaxed

#: A relaxed-JSON scanner: the unwrapped document in, strict JSON and the bits of what
#: changed out, or None when the document is refused.
_Scanner = Callable[[str], tuple[str, int] | None]

try:
    #: The scanner `repair_relaxed_object` uses: compiled when built, else pure Python
    #: (the same signature and answers; the compiled one raises UnicodeEncodeError on a
    #: lone surrogate, which it reads as UTF-8).
    from ._relaxed_speedups import rewrite as _scan
except ImportError:  # pragma: no cover - installed without a C compiler
    _scan = _relaxed.rewrite

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
    "control_characters",
    "comments",
    "markdown_fence",
    "bom",
    "whitespace",
    "fence_language",
    "leaked_tokens",
    "repeated_object",
]
#: Every `RepairKind`, in the documented order.
REPAIR_KINDS: Final[tuple[RepairKind, ...]] = get_args(RepairKind)

#: How `normalize_arguments` changed a value (see the module docstring).
NormalizeKind = Literal["json_string", "single_item_array", "empty_value", "ignored_value"]


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
    return _repair(raw, _scan)


def rewrite_relaxed_text(
    raw: str, scan: _Scanner | None = None, found: set[RepairKind] | None = None
) -> tuple[str, int] | None:
    """For dispatch (not public API): unwrap ``raw`` (noting in ``found`` the kinds found
    around it) and scan it: the strict JSON text the repair decodes and the scanner's
    bits, or ``None`` when it is refused before decoding; :func:`decode_rewritten`
    finishes the repair.

    Dispatch validates the text rather than the object, so what the text alone shows
    (a repeated field) is refused as on every other route; text the tool's typed decoder
    reads is an object already, so the generic decode is made only when its object is
    wanted. What was repaired is not reported (nothing in dispatch reads it).
    """
    text = raw
    if raw[:1] != "{" or raw[-1:] != "}":  # else the text is its object alone: the common case
        text = _unwrap_document(raw, set() if found is None else found)
        # An object starts with "{" and ends with "}"; checking first refuses prose,
        # arrays, scalars and most truncations before any scan.
        if not (text.startswith("{") and text.endswith("}")):
            return None
    try:
        return (_scan if scan is None else scan)(text)  # the module's scanner, by default
    except (msgspec.MsgspecError, UnicodeError, RecursionError):
        return None  # a lone surrogate (which the compiled scanner cannot read): refused


def decode_rewritten(strict: str) -> tuple[str, dict[str, object]] | None:
    """The rest of the repair after :func:`rewrite_relaxed_text`: the strict JSON text
    (the one object of a repeated one) and its object, or ``None`` when refused."""
    return _decode_document(strict, set())


def _repair(raw: str, scan: _Scanner) -> Repaired | None:
    """`repair_relaxed_object` with a given scanner (the benchmarks time both)."""
    found: set[RepairKind] = set()
    rewritten = rewrite_relaxed_text(raw, scan, found)
    if rewritten is None:
        return None
    strict, bits = rewritten
    decoded = _decode_document(strict, found)
    if decoded is None:
        return None
    kinds = _SCANNED[bits & _ALL_SCANNED]
    if found:
        kinds += tuple(kind for kind in _LAYER_KINDS if kind in found)
    return Repaired(decoded[1], kinds)


def _decode_document(strict: str, found: set[RepairKind]) -> tuple[str, dict[str, object]] | None:
    """Strict JSON text decoded: the text of the one object (of a repeated one, noted in
    ``found``) and the object, or None when it is not one object."""
    try:
        try:
            value = msgspec.json.decode(strict)
        except msgspec.DecodeError:
            once = _repeated(strict)
            if once is None:
                raise
            found.add("repeated_object")
            strict, value = once, msgspec.json.decode(once)
    except (msgspec.MsgspecError, UnicodeError, RecursionError):
        # Lone surrogates cannot be decoded; nesting deeper than msgspec allows cannot be
        # either. Both are refusals, never crashes.
        return None
    return (strict, value) if isinstance(value, dict) else None


# The scanner's bits, in REPAIR_KINDS order, then the kinds found around the document.
_SCANNED_KINDS: Final[tuple[tuple[int, RepairKind], ...]] = (
    (_relaxed.KEYS, "unquoted_keys"),
    (_relaxed.BRACES, "redundant_braces"),
    (_relaxed.TEMPLATE_TOKENS, "template_quote_tokens"),
    (_relaxed.COMMAS, "trailing_commas"),
    (_relaxed.SINGLE_QUOTES, "single_quotes"),
    (_relaxed.LITERALS, "python_literals"),
    (_relaxed.CONTROL, "control_characters"),
    (_relaxed.COMMENTS, "comments"),
)
#: The kinds found around the document: every other kind, in REPAIR_KINDS order.
_LAYER_KINDS: Final[tuple[RepairKind, ...]] = tuple(
    kind for kind in REPAIR_KINDS if kind not in {k for _, k in _SCANNED_KINDS}
)
_ALL_SCANNED: Final = sum(bit for bit, _ in _SCANNED_KINDS)
#: The scanned kinds for each combination of the scanner's bits, in REPAIR_KINDS order.
_SCANNED: Final[tuple[tuple[RepairKind, ...], ...]] = tuple(
    tuple(kind for bit, kind in _SCANNED_KINDS if bits & bit) for bits in range(_ALL_SCANNED + 1)
)


# --- Layers around the document ---------------------------------------------------------

_JSON_WHITESPACE: Final = " \t\r\n"
# Finds where the first of several JSON values ends (msgspec decodes whole documents only).
_FIRST_VALUE: Final = json.JSONDecoder()
_SPACE_RUN: Final = re.compile(r"[ \t\r\n]*")
# Three or more backticks and an optional info string, then the document; the info
# string cannot contain "{", so a one-line fence (```json {...}```) also matches.
_FENCE_OPEN: Final = re.compile(r"(`{3,})[ \t]*(?:[A-Za-z][\w+.-]*)?")


# A chat-template token a model leaked after its arguments: <|im_end|>, <|call|>,
# DeepSeek's fullwidth-bar tokens, and the few named end tokens without bars.
_LEAKED_TOKEN: Final = re.compile(
    r"<[|\uff5c][A-Za-z0-9_\u2581]{1,40}[|\uff5c]>|</s>|<eos>|<end_of_turn>|</tool_call>"
)
# A fence's language word left without its fence, before the document.
_FENCE_LANGUAGE: Final = re.compile(r"(?i:json5?|jsonc)[ \t]*\r?\n[ \t\r\n]*(?=\{)")


def _unwrap_document(raw: str, found: set[RepairKind]) -> str:
    """Remove surrounding whitespace, a byte-order mark, a markdown fence (or its
    language word alone) and chat-template tokens leaked after the document."""
    text = _strip(raw, found)
    if text.startswith("\ufeff"):
        found.add("bom")
        text = _strip(text[1:], found)
    text = _leaked_tail(text, found)
    fence = _FENCE_OPEN.match(text)
    if fence is not None:
        ticks = fence.group(1)
        if text.endswith(ticks):
            found.add("markdown_fence")
            text = _leaked_tail(_strip(text[fence.end() : len(text) - len(ticks)], found), found)
    language = _FENCE_LANGUAGE.match(text)
    if language is not None:
        found.add("fence_language")
        text = text[language.end() :]
    return text


def _leaked_tail(text: str, found: set[RepairKind]) -> str:
    """``text`` without the chat-template tokens after its closing ``}`` (read from the
    end, one token at a time: linear)."""
    end = len(text)
    while end and text[end - 1] == ">":
        start = text.rfind("<", max(0, end - 48), end)
        if start == -1 or _LEAKED_TOKEN.fullmatch(text, start, end) is None:
            break
        end = len(text[:start].rstrip())
    if end == len(text) or not text[:end].endswith("}"):
        return text
    found.add("leaked_tokens")
    return text[:end]


def _repeated(strict: str) -> str | None:
    """The one object of a document that is the same object written several times,
    back to back (byte-identical copies, whitespace between them); else ``None``."""
    start = _SPACE_RUN.match(strict).end()  # type: ignore[union-attr]  # matches ""
    try:
        _, end = _FIRST_VALUE.raw_decode(strict, start)
    except (ValueError, RecursionError):
        return None
    first, copies = strict[start:end], 1
    while (pos := _SPACE_RUN.match(strict, end).end()) < len(strict):  # type: ignore[union-attr]
        if not strict.startswith(first, pos):
            return None
        end = pos + len(first)
        copies += 1
    return first if copies > 1 else None


def _strip(text: str, found: set[RepairKind]) -> str:
    """Strip whitespace, noting whitespace that JSON itself would have rejected."""
    stripped = text.strip()
    if len(stripped) != len(text.strip(_JSON_WHITESPACE)):
        found.add("whitespace")
    return stripped


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
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], Mapping):
        return Normalized(dict(value[0]), "single_item_array")
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
