"""The JSON-in-tag text dialect: ``<tool_call>{"name": …, "arguments": …}</tool_call>``.

The form most open models emit (Hermes, Qwen 2.5/3). :func:`parse` reads
each ``<tool_call>`` block:

* The body is one JSON object with a ``name``, or several such objects one
  after another (separated by whitespace, ``,`` or ``;``), or a JSON array of
  them: several objects are several calls. A body that fails the strict decode is
  repaired through :func:`tinytools.repair.recover_relaxed_object`
  (single quotes, trailing commas, Python literals, a code fence…), never
  guessed at.
* The arguments are under ``arguments``, or under one of the aliases
  ``parameters``, ``args`` or ``input`` — accepted only here, inside the tag:
  JSON in prose is never read as a call. Two of them at once is an error;
  none means no arguments. Arguments given as a JSON string holding a
  strictly valid object are decoded; any other string (relaxed JSON
  included), and any other JSON value (``null``, an array…, as JSON text), is
  passed on as the raw arguments, for admission to repair (with an event),
  normalise or reject under its policies.
* A block ends at its closing tag, or, when it has none before the next
  block (the final block of a reply, one cut short by the next, or one whose
  tag a server that stops on ``</tool_call>`` left out), right after its
  value: a complete value shows the call complete. Completeness is read as
  relaxed repair reads the text, so ``{"name": "f", "arguments": {city:
  'Oslo'}}`` is complete and a bracket inside a single-quoted string or a
  comment closes nothing. Text after the value stays prose, and a
  ``<tool_call>`` inside a strict JSON string ends nothing (relaxed JSON is
  read up to the next tag). A block never closed whose value is not
  complete (a reply cut off mid-call) is a broken fragment, ending at the
  next ``<tool_call>`` or the end of the text, named when it gives a
  ``"name"``: it is never repaired into a call with partial arguments. An
  unclosed tag not followed by ``{`` or ``[`` is prose, so ``use
  <tool_call> tags`` stays text.
* **Gemma 4** writes ``<|tool_call>call:name{key:<|"|>text<|"|>,n:1}<tool_call|>``:
  a name, then an object in Gemma's own notation (bare keys, strings between
  ``<|"|>`` quote tokens, kept verbatim), read through the same relaxed
  repair. A block missing ``<tool_call|>`` is read only when its object is
  complete, and ends right after it; else it is a broken fragment.
* A broken block's error keeps the decoder's reason (``Expecting ',' delimiter
  at line 1, column 30``) and the tool name the block gives, when it gives one.
* The name is taken as written: a name not among ``tools`` is returned as a
  call, for dispatch's unknown-tool policy to answer.
* Reasoning (``<think>…</think>``, an unclosed ``<think>`` to the end of the
  text, or everything before a ``</think>`` that has no ``<think>``) is never
  read for calls: it stays in ``Parsed.text``, tags and all.

Reading is linear in the text: blocks are found with memoised ``str.find``,
and each is decoded from its start to where its JSON ends or breaks.

:func:`constraint` builds a decoding constraint that holds a model to calls of
the tools in exactly the form :func:`render_call` writes (see
docs/how-to/constrained-decoding.md).
"""

from __future__ import annotations

import json
import re
from typing import Final

from tinytools._relaxed import value_end
from tinytools._wire import ToolCall

from ._constraint import CallForm, Constraint, build
from ._dialect import (
    NOTHING,
    Collector,
    Finder,
    Tools,
    arguments_of,
    catalogue,
    decode_relaxed,
    decode_strict,
    hide_reasoning,
    skip_space,
)
from ._envelope import escape_json, json_call_block
from ._json_grammar import JsonStyle
from ._jsonscan import ARGUMENT_KEYS, call_parts
from ._parsed import Parsed

__all__ = ["ARGUMENT_KEYS", "PROTOCOL", "constraint", "parse", "render", "render_call"]

#: How to call a tool in this dialect; the first part of :func:`render`.
PROTOCOL: Final = (
    "To call a tool, write a <tool_call> block holding one JSON object with the tool's "
    '"name" and its "arguments" object:\n'
    "<tool_call>\n"
    '{"name": "tool_name", "arguments": {"parameter_name": "value"}}\n'
    "</tool_call>\n"
    "Write one block per call; you may make several calls in one reply."
)

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_GEMMA_OPEN, _GEMMA_CLOSE = "<|tool_call>", "<tool_call|>"
_GEMMA_HEAD: Final = re.compile(r"[ \t\r\n]*call:([A-Za-z0-9_.:-]{1,64})[ \t\r\n]*(?=\{)")
# Between several values in one block.
_BETWEEN: Final = re.compile(r"[ \t\r\n]*[,;]?[ \t\r\n]*")


def _not_json(word: str) -> object:
    raise ValueError(f"{word} is not JSON")


# The stdlib decoder finds where a JSON value ends (msgspec only decodes whole
# documents); NaN and Infinity are refused, as JSON does.
_STRICT: Final = json.JSONDecoder(parse_constant=_not_json)
_BROKEN = (
    'a <tool_call> block must hold one JSON object, {"name": "tool_name", '
    '"arguments": {...}}; this one is empty or not valid JSON'
)


class _Broken:
    """The value of a block that holds no readable JSON, with the decoder's reason."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class _Gemma:
    """The value of a Gemma 4 block: its name and its arguments (``NOTHING`` when broken)."""

    __slots__ = ("arguments", "name")

    def __init__(self, name: str, arguments: object) -> None:
        self.name, self.arguments = name, arguments


#: The value of a block that is never closed and holds no complete value.
_CUT: Final = object()
_CUT_OFF = (
    "this <tool_call> block is never closed and its JSON is incomplete: the call looks "
    "cut off, so it was not run; write the whole call again"
)
_SHAPE = 'write <tool_call>{"name": "tool_name", "arguments": {...}}</tool_call>'
_GEMMA_CUT_OFF = (
    "this <|tool_call> block is never closed with <tool_call|> and its arguments are "
    "incomplete: the call looks cut off, so it was not run; write the whole call again"
)
_GEMMA_BROKEN = (
    "the arguments in this <|tool_call> block cannot be read: write "
    '<|tool_call>call:tool_name{key:<|"|>text<|"|>,number:1}<tool_call|>'
)
# The name a cut-off block gives, for its error (only a name a tool could have).
_NAMED: Final = re.compile(
    r"""["']name["'][ \t\r\n]*:[ \t\r\n]*["']([A-Za-z_][A-Za-z0-9_-]{0,63})["']"""
)


def render(tools: Tools) -> str:
    """The catalogue for the system prompt: :data:`PROTOCOL`, then each tool.

    Each tool is its name and description, then one line per parameter with
    its type, whether it is required, its default and its description.
    Hidden tools are left out; with no tool left the result is ``""``.
    """
    return catalogue(PROTOCOL, tools, lambda tool: f"- {tool.name}", "{}")


def render_call(call: ToolCall, tools: Tools = ()) -> str:
    """``<tool_call>``, a newline, ``{"name": …, "arguments": …}``, a newline, ``</tool_call>``.

    Arguments are the decoded object when they are one, else the raw string.
    Envelope tags inside strings are written as ``\\u003c…``, so the block
    cannot be closed or forged from inside. Where ``tools`` holds the tool,
    each object's keys are written in its schema's order (declared properties,
    then required keys no property lists, then the rest as they came): the one
    order :func:`constraint` takes.

    Arguments holding a value JSON cannot carry faithfully (an integer past
    Python's digit limit, nesting deeper than
    :data:`~tinytools.formats._writable.JSON_DEPTH`, a non-finite number)
    are not written: the result is the note ``[tool call not written:
    <reason>]``, which :func:`parse` reads as prose. It never raises.
    """
    arguments = arguments_of(call, tools)
    return json_call_block(call if arguments is None else ToolCall(call.id, call.name, arguments))


# The form render_call writes; a string never holds a raw reasoning tag (parse would
# read it as reasoning), and prose never holds a call's opening tag.
_FORM: Final = CallForm(
    trigger=_OPEN,
    begin=lambda name: f'{_OPEN}\n{{"name": {json.dumps(name)}, "arguments": ',
    end=f"}}\n{_CLOSE}",
    separator="",  # (a newline between calls made a small model repeat its call: see _constraint)
    style=JsonStyle(", ", ": ", escape_json, {"<": ("think>", "/think>")}),
    prose={"<": ("tool_call>", "|tool_call>", "think>", "/think>")},
)


def constraint(
    tools: Tools, *, choice: str = "auto", parallel: bool = True, reasoning: bool = False
) -> Constraint:
    """A decoding constraint that lets a model write only calls of ``tools`` in this dialect.

    Every call :func:`render_call` writes for arguments the tool's schema accepts
    is accepted (byte for byte: ``<tool_call>``, a newline, ``{"name": …,
    "arguments": …}`` with ``json.dumps`` spacing, a newline, ``</tool_call>``),
    and every text accepted reads back with :func:`parse` into calls of
    ``tools`` only. See :class:`~tinytools.formats.Constraint` for the backends,
    and docs/how-to/constrained-decoding.md.

    Args:
        tools: The tools offered (hidden and deferred ones are left out).
        choice: ``"auto"`` (prose alone, or prose then calls), ``"required"``
            (at least one call, nothing before it) or a tool's name (one call of
            that tool).
        parallel: Whether several calls may follow one another (up to
            :data:`~tinytools.formats.MAX_PARALLEL_CALLS`, in every backend's form).
        reasoning: Whether a ``<think>…</think>`` may come first.

    Raises:
        ValueError: ``choice`` names no tool offered, or is ``"required"`` with none.
    """
    return build(tools, _FORM, choice=choice, parallel=parallel, reasoning=reasoning)


def parse(text: str, tools: Tools = ()) -> Parsed:
    """Read the ``<tool_call>`` blocks in ``text``; see the module doc.

    Args:
        text: Model output.
        tools: The tools offered (names are not checked here: dispatch does).

    Returns:
        The calls, the remaining prose, and each broken block as an invalid
        ``ToolCall`` holding its raw text. Nothing is executed.
    """
    out, pos = Collector(text), 0
    text = hide_reasoning(text)
    finder = Finder(text)
    while (start := _next_block(finder, pos)) != -1 and not out.full:
        gemma = text.startswith(_GEMMA_OPEN, start)
        block = _read_gemma(text, finder, start) if gemma else _read(text, finder, start)
        if block is None:
            skip = start + len(_GEMMA_OPEN if gemma else _OPEN)
            out.prose(pos, skip)  # a mention of the tag, not a call
            pos = skip
            continue
        out.prose(pos, start)
        _record(out, out.source[start : block[0]], block[1])
        pos = block[0]
    if out.full:
        out.rest(pos)
    else:
        out.prose(pos, len(text))
    return out.parsed()


def _next_block(finder: Finder, pos: int) -> int:
    """Where the next ``<tool_call>`` or ``<|tool_call>`` is, or -1."""
    found = [at for tag in (_OPEN, _GEMMA_OPEN) if (at := finder.find(tag, pos)) != -1]
    return min(found, default=-1)


def _read_gemma(text: str, finder: Finder, start: int) -> tuple[int, object] | None:
    """A Gemma 4 block at ``start``: where it ends and its :class:`_Gemma` value.

    ``None`` when the tag is a mention (no ``call:name{`` follows it).
    """
    head = _GEMMA_HEAD.match(text, start + len(_GEMMA_OPEN))
    if head is None:
        return None
    close, after = finder.find(_GEMMA_CLOSE, head.end()), _next_block(finder, head.end())
    if close != -1 and (after == -1 or close < after):
        body = text[head.end() : close].strip()
        return close + len(_GEMMA_CLOSE), _Gemma(head.group(1), _gemma_arguments(body))
    limit = len(text) if after == -1 else after
    end = value_end(text, head.end(), limit)
    if end == -1:
        return limit, _Gemma(head.group(1), _CUT)
    return end, _Gemma(head.group(1), _gemma_arguments(text[head.end() : end]))


def _gemma_arguments(body: str) -> object:
    """Gemma's object notation, read by relaxed repair (strict JSON first)."""
    value = decode_relaxed(body)
    return value if isinstance(value, dict) else NOTHING


def _read(text: str, finder: Finder, start: int) -> tuple[int, object] | None:
    """Where the block at ``start`` ends and its value (``NOTHING`` when broken).

    ``None`` when the tag is a mention: not closed, and no JSON follows it.
    """
    body = start + len(_OPEN)
    close, after = finder.find(_CLOSE, body), _next_block(finder, body)
    limit = min(at for at in (close, after, len(text)) if at != -1)
    first = skip_space(text, body)
    value, end = _strict_prefix(text, first)
    if end != -1:  # strict JSON: the block ends at its closing tag, or right after it
        tail = skip_space(text, end)
        if text.startswith(_CLOSE, tail):
            return tail + len(_CLOSE), value
        if limit != close:
            return end, value
    if limit == close:
        return close + len(_CLOSE), _body_value(text, first, close)
    if not text.startswith(("{", "["), first):
        return None
    # Never closed: complete when its value is, as relaxed repair reads it (its own
    # decode, or the decoder's reason, comes from the value alone).
    end = value_end(text, first, limit)
    return (limit, _CUT) if end == -1 else (end, _body_value(text, first, end))


def _body_value(text: str, first: int, close: int) -> object:
    """The value of a closed block's body: one value, several in a row (as a list of
    them), or a :class:`_Broken` with the decoder's reason."""
    body = text[first:close]
    value = decode_strict(body)
    if value is not NOTHING:
        return value
    values, pos = [], first
    while pos < close and text.startswith("{", pos):
        end = value_end(text, pos, close)
        item = NOTHING if end == -1 else decode_relaxed(text[pos:end])
        if item is NOTHING or isinstance(item, list):
            break
        values.append(item)
        gap = _BETWEEN.match(text, end, close)
        pos = close if gap is None else gap.end()
    if len(values) > 1 and pos >= close:
        return values  # several calls, identical ones too (never merged by repair)
    value = decode_relaxed(body)
    return _Broken(_reason(body)) if value is NOTHING else value


def _reason(body: str) -> str:
    """Why ``body`` is not JSON, in the decoder's words."""
    if not body.strip():
        return "the <tool_call> block is empty"
    try:
        _STRICT.decode(body.strip())
    except ValueError as error:  # JSONDecodeError, or NaN/Infinity
        detail = getattr(error, "msg", str(error))
        line, column = getattr(error, "lineno", 0), getattr(error, "colno", 0)
        where = f" at line {line}, column {column}" if line else ""
        return f"the JSON in this <tool_call> block is not valid: {detail}{where}"
    except RecursionError:
        return "the JSON in this <tool_call> block is nested too deeply"
    return "the <tool_call> block must hold one JSON object, not a list of calls"


def _strict_prefix(text: str, pos: int) -> tuple[object, int]:
    """The strict JSON value starting at ``pos`` and where it ends; ``-1`` when there is none."""
    if not text.startswith(("{", "["), pos):
        return NOTHING, -1
    try:
        return _STRICT.raw_decode(text, pos)
    except (ValueError, RecursionError):
        return NOTHING, -1


def _record(out: Collector, raw: str, value: object) -> None:
    """Record the calls of one block, or its ``raw`` text as an error."""
    if isinstance(value, _Gemma):
        if value.arguments is _CUT:
            out.error(value.name, raw, _GEMMA_CUT_OFF)
        elif value.arguments is NOTHING:
            out.error(value.name, raw, _GEMMA_BROKEN)
        else:
            out.call(value.name, value.arguments)  # type: ignore[arg-type]  # a dict
        return
    if value is NOTHING or isinstance(value, _Broken):
        named = _NAMED.search(raw)
        reason = value.reason if isinstance(value, _Broken) else _BROKEN
        out.error("" if named is None else named.group(1), raw, f"{reason}; {_SHAPE}")
        return
    if value is _CUT:
        named = _NAMED.search(raw)
        out.error("" if named is None else named.group(1), raw, _CUT_OFF)
        return
    for item in value if isinstance(value, list) else [value]:
        if out.overflow(raw):
            break
        name, arguments = call_parts(item)
        if isinstance(arguments, tuple):
            out.error(name, raw, arguments[0])
        else:
            out.call(name, arguments)
