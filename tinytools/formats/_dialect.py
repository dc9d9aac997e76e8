"""Machinery shared by the text dialects (``xml``, ``ptype``, ``json_in_tag``).

* :func:`tool_map` reads the ``tools`` argument.
* :class:`Collector` gathers prose, calls and broken fragments in the order
  they appear and numbers them into a :class:`~tinytools.formats.Parsed`;
  past :data:`MAX_CALLS` of them the rest of the text is one more error.
* :func:`hide_reasoning` blanks out a model's reasoning, so no call is read
  from it (see the function for what counts as reasoning).
* :class:`Finder` is ``str.find`` with a memory per needle, so scanners that
  ask for the same closing tag again and again stay linear in the input.
* :func:`convert_text` reads a text value by its JSON schema (for the XML
  forms, whose values carry no types of their own).
* :func:`catalogue`, :func:`parameter_lines` and :func:`describe` render the
  tools for a system prompt, compactly and deterministically.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Final, cast

import msgspec

from tinytools._declare.registry import AnyTool
from tinytools._text import json_type, printable
from tinytools._wire import ToolCall
from tinytools.errors import ToolDefinitionError
from tinytools.repair import recover_relaxed_object

from ._json_grammar import in_schema_order
from ._parsed import Parsed, SyntheticIds
from ._providers import json_text
from ._tools import Tools, all_tools, exposed_tools

__all__ = [
    "MAX_CALLS",
    "NOTHING",
    "Collector",
    "Finder",
    "Tools",
    "arguments_of",
    "catalogue",
    "convert_text",
    "decode_relaxed",
    "decode_strict",
    "decode_written",
    "describe",
    "hide_reasoning",
    "json_string_literal",
    "key_text",
    "one_line",
    "parameter_lines",
    "properties",
    "required",
    "schema_types",
    "skip_space",
    "tool_map",
]


# Type names some schemas use in place of JSON Schema's (vLLM reads them the same way).
_TYPE_ALIASES: Final = {
    "float": "number",
    "double": "number",
    "int": "integer",
    "bool": "boolean",
    "dict": "object",
    "list": "array",
    "str": "string",
}
#: What the decoders return for text that holds no value they accept.
NOTHING: Final = object()


def decode_strict(text: str) -> object:
    """The text's JSON value, or :data:`NOTHING` (never raises, whatever the text)."""
    try:
        return msgspec.json.decode(text)
    except (msgspec.MsgspecError, RecursionError, UnicodeError):
        return NOTHING


_SPACE: Final = re.compile(r"[ \t\r\n]*")


def skip_space(text: str, pos: int) -> int:
    """The first position at or after ``pos`` that is not JSON whitespace."""
    match = _SPACE.match(text, pos)
    assert match is not None  # the pattern matches the empty string too
    return match.end()


def _not_a_json_number(word: str) -> object:
    raise ValueError(f"{word} is not JSON")


#: Python's decoder, which reads a lone surrogate escape as the surrogate (NaN refused).
_KEEPS_SURROGATES: Final = json.JSONDecoder(parse_constant=_not_a_json_number)


def decode_written(text: str) -> object:
    """:func:`decode_strict` for text a model wrote as a call or its arguments.

    JSON that msgspec refuses for a lone surrogate escape (``"\\ud800"``, which it
    reports as truncated input) is read as Python's ``json`` reads it, the surrogate
    kept (as ``json_in_tag``'s decoder always did): the call reaches dispatch, which
    tells the model the string at that path is not valid text, instead of the call
    being lost to prose or answered as JSON that is not valid. Only failing text with
    an escape pays for the second decoder.
    """
    value = decode_strict(text)
    if value is NOTHING and "\\u" in text:
        try:
            return _KEEPS_SURROGATES.decode(text)
        except (ValueError, RecursionError):
            return NOTHING
    return value


def decode_relaxed(text: str) -> object:
    """The text's JSON value (a model's: see :func:`decode_written`), else the object
    relaxed repair makes of it, else :data:`NOTHING`."""
    value = decode_written(text)
    if value is NOTHING:
        repaired = recover_relaxed_object(text)
        return NOTHING if repaired is None else repaired
    return value


_THINK, _THINK_END = "<think>", "</think>"


def hide_reasoning(text: str, tags: tuple[str, str] = (_THINK, _THINK_END)) -> str:
    """``text`` with its reasoning replaced by as many spaces; positions are kept.

    Reasoning is never a call: the parsers read this text for calls and take
    prose (reasoning included, tags and all) and broken fragments from the
    original. Reasoning is what lies inside ``<think>…</think>``; a
    ``<think>`` never closed runs to the end of the text (a reply cut off
    while thinking); and a ``</think>`` before any ``<think>`` closes
    reasoning the chat template opened, so everything before it is reasoning
    (Qwen 3, DeepSeek R1). Tags do not nest: reasoning ends at the first
    closing tag after its opening one, as the serving engines' reasoning
    parsers end it (a ``<think>`` inside reasoning is text, and a call after
    that first ``</think>`` is a call). ``tags`` gives another pair of reasoning tags
    (Magistral's ``[THINK]``, ``[/THINK]``). Linear: one forward scan with
    ``str.find``.
    """
    opening, closing = tags
    if closing not in text and opening not in text:
        return text
    parts: list[str] = []
    pos = 0
    first_end = text.find(closing)
    first_open = text.find(opening)
    if first_end != -1 and (first_open == -1 or first_end < first_open):
        pos = first_end + len(closing)
        parts.append(" " * pos)
    while (start := text.find(opening, pos)) != -1:
        end = text.find(closing, start + len(opening))
        stop = len(text) if end == -1 else end + len(closing)
        parts += [text[pos:start], " " * (stop - start)]
        pos = stop
    parts.append(text[pos:])
    return "".join(parts)


def tool_map(tools: Tools) -> dict[str, AnyTool]:
    """Every tool by name (hidden ones too: dispatch decides what may run).

    Raises:
        TypeError: An item is not a ``Tool``.
    """
    return {tool.name: tool for tool in all_tools(tools)}


#: The most calls and broken fragments one parse returns; the text after the
#: last of them becomes one more error (a bound on work, far above real replies).
MAX_CALLS: Final = 1024


class Collector:
    """Prose, calls and broken fragments of one text, in order of appearance."""

    def __init__(self, text: str) -> None:
        #: The original text: prose and broken fragments are cut from it.
        self.source = text
        self._text = text
        self._prose: list[str] = []
        self._calls: list[ToolCall] = []
        self._errors: list[ToolCall] = []
        self._count = 0
        self._overflowed = False
        self._ids = SyntheticIds(text)

    @property
    def full(self) -> bool:
        """True once :data:`MAX_CALLS` calls and errors are recorded."""
        return self._count >= MAX_CALLS

    def prose(self, start: int, end: int) -> None:
        """Keep ``text[start:end]`` as prose."""
        if start < end:
            self._prose.append(self._text[start:end])

    def _next_id(self) -> str:
        self._count += 1
        return self._ids(self._count - 1)

    def call(self, name: str, arguments: dict[str, object] | str) -> None:
        """Record a well-formed call."""
        self._calls.append(ToolCall(self._next_id(), name, arguments))

    def error(self, name: str, raw: str, reason: str) -> None:
        """Record a broken fragment: ``raw`` is kept as the arguments."""
        self._errors.append(ToolCall(self._next_id(), name, raw, invalid=reason))

    def overflow(self, raw: str) -> bool:
        """True once :attr:`full`; the first time, ``raw`` (the fragment holding the calls
        not read, such as one block listing too many) becomes one more error."""
        if not self.full:
            return False
        if not self._overflowed:
            self._overflowed = True
            reason = f"more than {MAX_CALLS} calls in one text; the rest was not read"
            self._errors.append(ToolCall(self._next_id(), "", raw, invalid=reason))
        return True

    def rest(self, start: int) -> None:
        """Record the unread ``text[start:]`` (after :attr:`full`) as one error."""
        rest = self._text[start:]
        if self._overflowed:  # already said that the calls past the limit were not read
            self.prose(start, len(self._text))
        elif rest.strip():
            at = start + len(rest) - len(rest.lstrip())
            self.prose(start, at)
            reason = f"more than {MAX_CALLS} calls in one text; the rest was not read"
            self.error("", self._text[at:], reason)

    def parsed(self) -> Parsed:
        """The result; prose that is only whitespace becomes ``""``."""
        text = "".join(self._prose)
        return Parsed(tuple(self._calls), text if text.strip() else "", tuple(self._errors))


class Finder:
    """``str.find`` over one text, remembering the last answer for each needle.

    Knowing that ``needle`` next occurs at ``q`` when searching from ``p``
    answers every later search from ``p..q`` without scanning again, so a
    scanner whose start positions only grow pays once per needle occurrence.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._memo: dict[str, tuple[int, int]] = {}

    def find(self, needle: str, start: int) -> int:
        """The index of ``needle`` at or after ``start``, or -1."""
        memo = self._memo.get(needle)
        if memo is not None and memo[0] <= start and (memo[1] == -1 or start <= memo[1]):
            return memo[1]
        found = self.text.find(needle, start)
        self._memo[needle] = (start, found)
        return found


def properties(tool: AnyTool | None) -> dict[str, Mapping[str, object]]:
    """The tool's ``properties`` schemas, in declaration order (empty when unknown)."""
    if tool is None:
        return {}
    found = tool.parameters.get("properties")
    if not isinstance(found, Mapping):
        return {}
    return {
        str(name): cast("Mapping[str, object]", schema) if isinstance(schema, Mapping) else {}
        for name, schema in found.items()
    }


def required(tool: AnyTool) -> frozenset[str]:
    """The tool's required parameter names."""
    names = tool.parameters.get("required")
    return (
        frozenset(n for n in names if isinstance(n, str))
        if isinstance(names, list)
        else frozenset()
    )


def schema_types(schema: object, depth: int = 0) -> frozenset[str]:
    """The JSON types a schema admits, read from ``type``, ``anyOf``/``oneOf``,
    ``enum``, ``const`` and ``nullable``; empty when it says nothing."""
    if not isinstance(schema, Mapping) or depth > 4:
        return frozenset()
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else declared
    found = (
        {_TYPE_ALIASES.get(n, n) for n in names if isinstance(n, str)}
        if isinstance(names, list)
        else set()
    )
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for option in options:
                found |= schema_types(option, depth + 1)
    if not found and isinstance(schema.get("enum"), list):
        found = {json_type(v) for v in cast("list[object]", schema["enum"])}
    if not found and "const" in schema:
        found = {json_type(schema["const"])}
    if schema.get("nullable") is True:
        found.add("null")
    return frozenset(found - {""})


def _decode(text: str, types: frozenset[str]) -> object:
    value = decode_written(text)
    if value is not NOTHING:
        return value
    words: dict[str, object] = {"True": True, "False": False, "None": None}
    if text in words:
        return words[text]
    if "object" in types and (repaired := recover_relaxed_object(text)) is not None:
        return repaired
    return NOTHING


def json_string_literal(text: str) -> str | None:
    """The string a text that is exactly one JSON string literal (``"…"``, surrounding
    whitespace allowed) stands for, else ``None``."""
    stripped = text.strip(" \t\r\n")
    if len(stripped) < 2 or stripped[0] != '"' or stripped[-1] != '"':
        return None
    value = decode_written(stripped)
    return value if isinstance(value, str) else None


def convert_text(raw: str, schema: object) -> object:
    """Read a text value by its schema.

    A value the schema lets be a string (or whose schema gives no type) is
    the text itself, verbatim — except text that is exactly one JSON string
    literal (``"Paris"``, as GLM and other models often quote a string),
    which is that string, decoded, when the schema says it is a string.
    Otherwise the stripped text is read as JSON
    (``True``/``False``/``None`` too, and relaxed JSON for an object); when
    that fails or gives a value of a type the schema does not admit, the
    text is returned unchanged, so validation reports the mismatch.
    """
    types = schema_types(schema)
    if "string" in types and (literal := json_string_literal(raw)) is not None:
        return literal
    if not types or "string" in types:
        return raw
    value = _decode(raw.strip(), types)
    if isinstance(value, float) and "integer" in types and "number" not in types:
        value = int(value) if value.is_integer() else value
    kind = json_type(value)
    if value is not NOTHING and (kind in types or (kind == "integer" and "number" in types)):
        return value
    return raw


def arguments_of(call: ToolCall, tools: Tools = ()) -> dict[str, object] | None:
    """The call's arguments as an object, decoding raw JSON text; ``None`` if not an object.

    Where ``tools`` holds the called tool, each object's keys come in its schema's order
    (:func:`~tinytools.formats._json_grammar.in_schema_order`), the one order a decoding
    constraint takes: a call written from a dict in another order is still accepted.
    """
    value = _decoded(call)
    if value is None:
        return None
    schema = _parameters(call.name, tools)
    return value if schema is None else cast("dict[str, object]", in_schema_order(value, schema))


def _parameters(name: str, tools: Tools) -> Mapping[str, object] | None:
    """The parameters schema of the tool called ``name`` in ``tools``, if there is one (a
    ``tools`` that cannot be read has none: rendering a call never raises)."""
    try:
        found = all_tools(tools)
    except (TypeError, ToolDefinitionError):
        return None
    return next((tool.parameters for tool in found if tool.name == name), None)


def _decoded(call: ToolCall) -> dict[str, object] | None:
    if isinstance(call.arguments, dict):
        return call.arguments
    # (strictly, then repaired: a lone surrogate escape stays in the raw text, which a
    # prompt can carry, and is never decoded into a surrogate no text can)
    value = decode_strict(call.arguments)
    # (bytes, which the type does not admit but dispatch reads, are read strictly only:
    # relaxed repair reads text)
    if value is NOTHING and isinstance(call.arguments, str):
        value = recover_relaxed_object(call.arguments)
    return value if isinstance(value, dict) else None


def one_line(text: str) -> str:
    """``text`` with every run of whitespace made one space."""
    return " ".join(text.split())


#: What starts a new line (``str.splitlines``), each as a JSON string writes it.
_LINE_BREAKS: Final = str.maketrans(
    {c: json.dumps(c)[1:-1] for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}
)


def key_text(key: str) -> str:
    """A property name as the catalogue writes it: its line breaks as JSON escapes (the
    way a call writes the name), so a schema's name never starts a line of its own."""
    return key.translate(_LINE_BREAKS)


def catalogue(protocol: str, tools: Tools, head: Callable[[AnyTool], str], label: str) -> str:
    """``protocol``, ``Available tools:``, then per visible tool its head line
    (and ``: description``) and :func:`parameter_lines`; ``""`` with no tool."""
    entries = []
    for tool in exposed_tools(tools):
        about = one_line(printable(tool.description))  # a lone surrogate: its escape
        lines = [f"{head(tool)}: {about}" if about else head(tool), *parameter_lines(tool, label)]
        entries.append("\n".join(lines))
    return f"{protocol}\n\nAvailable tools:\n" + "\n".join(entries) if entries else ""


def describe(schema: object, depth: int = 0) -> str:
    """A short type label for a schema, in words: ``string``, ``array of integer``,
    ``integer or null``, ``string, one of "a" or "b"``, ``object with keys city
    (string), days (integer, optional)``.

    A small model copies what it sees into its call, so a label never looks like
    a value or like JSON syntax: no ``|`` between types, no ``{key?: …}``, and
    enum members (written as JSON, so ``"a"`` is a string and ``1`` a number)
    are joined with words.
    """
    if not isinstance(schema, Mapping) or depth > 3:
        return "any value"
    if isinstance(schema.get("enum"), list):
        members = cast("list[object]", schema["enum"])
        kinds = _or(sorted({json_type(v) or "value" for v in members}))
        return f"{kinds}, one of {_or([json_text(v) for v in members])}"
    if "const" in schema:
        return f"{json_type(schema['const']) or 'value'}, exactly {json_text(schema['const'])}"
    options = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(options, list) and "type" not in schema:
        return _or([describe(option, depth + 1) for option in options])
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not names:
        return "any value"
    return _or([_describe_type(str(name), schema, depth) for name in names])


def _or(labels: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    unique = list(dict.fromkeys(labels))
    return unique[0] if len(unique) == 1 else ", ".join(unique[:-1]) + " or " + unique[-1]


def _describe_type(name: str, schema: Mapping[str, object], depth: int) -> str:
    items = schema.get("items")
    if name == "array" and isinstance(items, Mapping):
        return f"array of {describe(items, depth + 1)}"
    fields = schema.get("properties")
    if name == "object" and isinstance(fields, Mapping) and fields:
        needed = schema.get("required")
        needed = needed if isinstance(needed, list) else []
        inner = ", ".join(
            f"{key_text(key)} ({describe(value, depth + 1)}{'' if key in needed else ', optional'})"
            for key, value in fields.items()
        )
        return f"object with keys {inner}"
    return name


def parameter_lines(tool: AnyTool, label: str = "{}") -> list[str]:
    """One line per parameter: label, type, required or optional, default, description.

    Args:
        tool: The tool.
        label: How to write a parameter name (``"<{}>"`` for XML).
    """
    needed = required(tool)
    lines: list[str] = []
    for name, schema in properties(tool).items():
        facts = [describe(schema), "required" if name in needed else "optional"]
        if "default" in schema:
            facts.append(f"default {json_text(schema['default'])}")
        line = f"  {label.format(key_text(name))} ({', '.join(facts)})"
        note = schema.get("description")
        lines.append(f"{line}: {one_line(note)}" if isinstance(note, str) and note else line)
    return lines or ["  (no parameters)"]
