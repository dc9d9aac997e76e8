"""Llama 3.x JSON tool calls: parse-only, plus :func:`render_call`.

:func:`parse` reads three forms, freely mixed in one text:

* **Bare JSON** — ``{"name": "search", "parameters": {"query": "x"}}``
  anywhere in the text (Llama 3.1/3.2/3.3 with the JSON tool template), one or
  several, separated by ``;`` or whitespace; a JSON array of such objects is
  several calls. Prose holds JSON too, so an object is read as a call only
  when it names a tool of ``tools`` and its keys are exactly the call shape:
  ``name``, one of ``parameters`` or ``arguments``, and optionally ``"type":
  "function"``; it must start with a double-quoted key. Any other JSON stays
  prose, and so does a call-shaped object written as a value inside other
  JSON (after a key's colon or a value's comma: JSON nested in JSON is data).
* **After** ``<|python_tag|>`` (Llama 3.1): the same objects, up to
  ``<|eom_id|>``, ``<|eot_id|>`` or the end of the text. The tag says a call
  is meant, so any name is read (an unknown one is left for dispatch's
  unknown-tool policy), and an object that does not have the call shape is
  an error. Llama 3.1's built-in form, ``<|python_tag|>brave_search.call(query="x")``,
  is the call ``brave_search`` with those arguments (keyword literals, read
  as the ``ptype`` dialect reads them); other text after the tag (code for
  the interpreter) is prose.
* **Function tags** — ``<function=search>{"query": "x"}</function>``
  (Llama 3.1's custom-tool form): the arguments object in a tag; any name.

Arguments given as a JSON string holding a strict object are decoded; any
other non-object arguments are passed on as raw text for admission to
repair or answer. JSON that fails the strict decode is repaired by
:func:`tinytools.repair.recover_relaxed_object` (never guessed at); after
``<|python_tag|>`` and in a function tag, where a value ends is read as that
repair reads it (a bracket inside a single-quoted string or a comment closes
nothing), while bare JSON in prose must show its end as strict JSON does. A call
the text ends inside (a reply cut off) is a broken fragment, named when it
gives a name: after ``<|python_tag|>``, in a function tag, or in bare JSON
naming a known tool. ``<|eom_id|>`` and ``<|eot_id|>`` right after the calls
are dropped. Reasoning (``<think>…</think>``) is never read for calls.

Reading is linear in the text: every candidate bracket is scanned by one
:class:`~tinytools.formats._jsonscan.Spans`, which remembers where each
value it passed ends, so no part of the text is scanned twice for the same
bracket.

:func:`constraint` builds a decoding constraint that holds a model to bare
JSON calls of the tools as :func:`render_call` writes them (see
docs/how-to/constrained-decoding.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Container
from typing import Final

from tinytools._declare.spec import NAME_PATTERN
from tinytools._relaxed import value_end
from tinytools._text import printable
from tinytools._wire import ToolCall

from . import ptype
from ._constraint import CallForm, Constraint, build
from ._dialect import (
    NOTHING,
    Collector,
    Finder,
    Tools,
    arguments_of,
    decode_relaxed,
    hide_reasoning,
    skip_space,
    tool_map,
)
from ._json_grammar import JsonStyle
from ._jsonscan import NAMED, Spans, call_parts, quiet_json
from ._parsed import Parsed
from ._pyscan import Scan, scan_fragment
from ._writable import JSON_DEPTH, refusal, unwritable

__all__ = ["PYTHON_TAG", "constraint", "parse", "render_call"]

#: The token after which Llama 3.1 writes a tool call.
PYTHON_TAG: Final = "<|python_tag|>"
_END_TOKENS: Final = ("<|eom_id|>", "<|eot_id|>")
_FUNCTION, _FUNCTION_CLOSE = "<function=", "</function>"
_FUNCTION_NAME: Final = re.compile(r"<function=([^<>\n]{1,256})>")
# Where a candidate starts: a function tag, the python tag, or a bracket that opens JSON.
_CALL_START: Final = re.compile(
    r'(?:\[[ \t\r\n]*)?\{[ \t\r\n]*"(?:name|parameters|arguments|type)"[ \t\r\n]*:'
)
_CANDIDATE: Final = re.compile(r"<function=|<\|python_tag\|>|" + _CALL_START.pattern)
_SPACE: Final = " \t\r\n"
# Llama 3.1's built-in tools (brave_search, wolfram_alpha) are called as `name.call(...)`.
_BUILTIN: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_]{0,63})\.call\(")
# The last characters of a JSON value (a string, object, array, number, true/false/null).
_VALUE_ENDS: Final = frozenset('"}]0123456789el')
# The name of a call object that gives it first (after an optional "type"), anchored.
_NAME_FIRST: Final = re.compile(
    r'(?:\[[ \t\r\n]*)?\{[ \t\r\n]*(?:"type"[ \t\r\n]*:[ \t\r\n]*"function"[ \t\r\n]*,[ \t\r\n]*)?'
    r'"name"[ \t\r\n]*:[ \t\r\n]*"([A-Za-z_][A-Za-z0-9_.-]{0,63})"'
)
_CALL_KEYS: Final = frozenset({"name", "parameters", "arguments", "type"})
_CUT_OFF = (
    "this tool call is cut off: it is never closed, so it was not run; write the whole call again"
)
_SHAPE = (
    'a tool call must be one JSON object, {"name": "tool_name", "parameters": {...}}, '
    "or a list of them"
)


def render_call(call: ToolCall, tools: Tools = ()) -> str:
    """``{"name": …, "parameters": …}``, the form Llama's JSON tool template teaches.

    The arguments are the decoded object when they are one, else the raw
    string (which parses back as a call holding that text, for admission to
    answer). Every ``<`` in a string is written ``\\u003c``, so no tag or
    token is left in one. :func:`parse` reads the text back as this call when
    ``tools`` holds a tool of that name; each object's keys are then written in
    its schema's order (declared properties, then required keys no property
    lists, then the rest as they came): the one order :func:`constraint` takes.

    It never raises: a name outside the tool-name grammar, or arguments JSON
    cannot carry faithfully, give the note ``[tool call not written:
    <reason>]``, which parses as prose.
    """
    if NAME_PATTERN.fullmatch(call.name) is None:
        return refusal("its tool name cannot be written as a Llama JSON call")
    arguments = arguments_of(call, tools)
    # (raw text holding a lone surrogate is written with its escape: no text carries it)
    payload: object = printable(str(call.arguments)) if arguments is None else arguments
    if arguments is not None and (problem := unwritable(arguments, JSON_DEPTH)) is not None:
        return refusal(problem)
    return quiet_json(json.dumps({"name": call.name, "parameters": payload}, ensure_ascii=False))


# The form render_call writes (every `<` in a string escaped). Prose holds no `{` or `[`
# (bare JSON naming a tool is a call anywhere) and no python tag or function tag.
_FORM: Final = CallForm(
    trigger='{"name": ',
    begin=lambda name: f'{{"name": {json.dumps(name)}, "parameters": ',
    end="}",
    separator="; ",
    style=JsonStyle(", ", ": ", quiet_json, {"<": ("",)}),
    prose={"{": ("",), "[": ("",), "<": ("|python_tag|>", "function=", "think>", "/think>")},
)


def constraint(
    tools: Tools, *, choice: str = "auto", parallel: bool = True, reasoning: bool = False
) -> Constraint:
    """A decoding constraint that lets a model write only calls of ``tools`` in this dialect.

    Calls are bare JSON as :func:`render_call` writes them, ``{"name": …,
    "parameters": …}`` (``json.dumps`` spacing), several separated by ``"; "``;
    every call it writes for arguments the schema accepts is accepted, and
    every text accepted reads back with :func:`parse` into calls of ``tools``
    only. In ``"auto"`` prose holds no ``{`` or ``[``. The lazy GBNF grammar
    starts at ``{"name": ``. See :class:`~tinytools.formats.Constraint` and
    docs/how-to/constrained-decoding.md.

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
    """Read the Llama JSON calls in ``text``; see the module doc.

    Args:
        text: Model output.
        tools: The tools offered; only their names make bare JSON a call.

    Returns:
        The calls, the remaining prose, and each broken call as an invalid
        ``ToolCall`` holding its raw text. Nothing is executed.
    """
    return _Reader(text, tool_map(tools)).run()


class _Reader:
    def __init__(self, text: str, names: Container[str]) -> None:
        self.out = Collector(text)
        self.text = hide_reasoning(text)
        self.names = names
        self.spans = Spans(self.text)
        self.finder = Finder(self.text)

    def run(self) -> Parsed:
        text, out, pos, scan = self.text, self.out, 0, 0
        while not out.full and (found := _CANDIDATE.search(text, scan)) is not None:
            start = found.start()
            self.spans.steps += 1
            if found.group() == PYTHON_TAG:
                end = self._tagged(start, pos)
            elif found.group() == _FUNCTION:
                end = self._function(start, pos)
            else:
                end = None if _nested(text, start) else self._bare(start, pos)
                if end is None:
                    # JSON that begins like a call but is not one: nothing inside it is a
                    # call either, so each character is decoded at most once.
                    closed = self.spans.end(start)
                    scan = start + 1 if closed == -1 else closed
                    continue
            if end is None:
                scan = start + 1
                continue
            pos = scan = self._after(end)
        if out.full:
            out.rest(pos)
        else:
            out.prose(pos, len(text))
        return out.parsed()

    def _after(self, pos: int) -> int:
        """Past an end-of-turn token right after the calls."""
        at = skip_space(self.text, pos)
        return at + len(_END_TOKENS[0]) if self.text.startswith(_END_TOKENS, at) else pos

    # --- bare JSON -----------------------------------------------------------

    def _bare(self, start: int, prose: int) -> int | None:
        """A run of calls starting at ``start``; its end, or ``None`` for prose."""
        values = self._values(start, len(self.text), known=True)
        if values is None:
            return None
        self.out.prose(prose, start)
        return self._record(values, start)

    def _values(
        self, start: int, limit: int, *, known: bool
    ) -> list[tuple[int, int, object]] | None:
        """The values of a run of calls from ``start``: ``(start, end, value)`` each.

        Values follow each other, separated by ``;`` or whitespace. With
        ``known`` (bare JSON) each must be a call to a known tool, and reading
        stops at the first that is not; a cut-off one counts only when it
        names a known tool. Without, every value up to ``limit`` is kept (one
        that is not a call becomes an error).
        """
        text, pos = self.text, start
        values: list[tuple[int, int, object]] = []
        while True:
            end = self.spans.end(pos, limit) if known else value_end(text, pos, limit)
            if end == -1:
                named = _NAME_FIRST.match(text, pos, limit)
                name = "" if named is None else named.group(1)
                if not known or name in self.names:
                    values.append((pos, limit, (_CUT, name)))
                break
            value = decode_relaxed(text[pos:end])
            if known and not self._is_call(value):
                break
            values.append((pos, end, value))
            after = skip_space(text, end)
            if text.startswith(";", after):
                after = skip_space(text, after + 1)
            if after >= limit or _CALL_START.match(text, after) is None:
                break
            pos = after
        return values or None

    def _is_call(self, value: object) -> bool:
        """Whether ``value`` is a call to a known tool, or a list of them."""
        items = value if isinstance(value, list) and value else [value]
        return all(_call_like(item) and item["name"] in self.names for item in items)  # type: ignore[index]

    def _record(self, values: list[tuple[int, int, object]], start: int) -> int:
        end = start
        for at, end, value in values:
            raw = self.out.source[at:end]
            if isinstance(value, tuple) and len(value) == 2 and value[0] is _CUT:
                self.out.error(str(value[1]), raw, _CUT_OFF)
                continue
            if value is NOTHING:
                named = NAMED.search(raw)
                self.out.error(
                    "" if named is None else named.group(1), raw, f"not valid JSON: {_SHAPE}"
                )
                continue
            for item in value if isinstance(value, list) else [value]:
                if self.out.overflow(raw):
                    break
                if not _call_like(item):
                    self.out.error("", raw, _SHAPE)
                    continue
                name, arguments = call_parts(item, keys=("parameters", "arguments"))
                if isinstance(arguments, tuple):
                    self.out.error(name, raw, arguments[0])
                else:
                    self.out.call(name, arguments)
        return end

    # --- <|python_tag|> --------------------------------------------------------

    def _tagged(self, start: int, prose: int) -> int | None:
        text = self.text
        body = skip_space(text, start + len(PYTHON_TAG))
        # The calls after the tag end at an end-of-turn token or the next tag.
        ends = [
            at
            for token in (*_END_TOKENS, PYTHON_TAG)
            if (at := self.finder.find(token, body)) != -1
        ]
        limit = min(ends, default=len(text))
        builtin = _BUILTIN.match(text, body, limit)
        if builtin is not None:
            return self._builtin(start, prose, builtin, limit)
        if not text.startswith(("{", "["), body):
            return None  # code for the interpreter, not a call: prose
        values = self._values(body, limit, known=False)
        if values is None:  # pragma: no cover - every value is kept after the tag
            return None
        self.out.prose(prose, start)
        values[0] = (start, *values[0][1:])
        return self._record(values, start)

    def _builtin(self, start: int, prose: int, head: re.Match[str], limit: int) -> int | None:
        """``<|python_tag|>name.call(key=value, …)``, Llama 3.1's built-in tool form: read
        by the ``ptype`` dialect as the call ``name(key=value, …)``."""
        name = head.group(1)
        stop = _source_end(self.text, head.end() - 1, limit)
        if stop is None:
            self.out.prose(prose, start)
            self.out.error(name, self.out.source[start:limit], _CUT_OFF)
            return limit
        if self.text[stop:limit].strip():
            return None  # more code follows: a program for the interpreter, not one call
        parsed = ptype.parse(name + self.text[head.end() - 1 : stop])
        if len(parsed.calls) + len(parsed.errors) != 1 or parsed.text.strip():
            return None
        self.out.prose(prose, start)
        raw = self.out.source[start:stop]
        if parsed.calls:
            self.out.call(name, parsed.calls[0].arguments)
        else:
            self.out.error(name, raw, str(parsed.errors[0].invalid))
        return stop

    # --- <function=name>{json}</function> --------------------------------------

    def _function(self, start: int, prose: int) -> int | None:
        text = self.text
        head = _FUNCTION_NAME.match(text, start)
        if head is None:
            return None
        name, body = head.group(1), skip_space(text, head.end())
        if not text.startswith("{", body):
            return None  # Qwen3-Coder's <parameter=…> form or prose, not this dialect
        close = self.finder.find(_FUNCTION_CLOSE, body)
        end = value_end(text, body, len(text) if close == -1 else close)
        self.out.prose(prose, start)
        if end == -1:
            stop = len(text) if close == -1 else close + len(_FUNCTION_CLOSE)
            reason = _CUT_OFF if close == -1 else f"the arguments of `{name}` are not valid JSON"
            self.out.error(name, self.out.source[start:stop], reason)
            return stop
        after = skip_space(text, end)
        stop = after + len(_FUNCTION_CLOSE) if text.startswith(_FUNCTION_CLOSE, after) else end
        value = decode_relaxed(text[body:end])
        raw = self.out.source[start:stop]
        if not isinstance(value, dict):
            self.out.error(name, raw, f"the arguments of `{name}` must be one JSON object")
        else:
            self.out.call(name, value)
        return stop


#: Marks a cut-off value in :meth:`_Reader._values`.
_CUT: Final = object()


def _source_end(text: str, start: int, limit: int) -> int | None:
    """Where the call whose ``(`` is at ``start`` ends (its closing ``)``), read by the
    ``ptype`` scanner; ``None`` when it does not close before ``limit``."""
    scan = Scan("name", -1)
    stop, _ = scan_fragment(text, start, limit, scan)
    return None if scan.problem is not None and "never closed" in scan.problem else stop


def _nested(text: str, start: int) -> bool:
    """Whether the object at ``start`` is a value inside other JSON (a key's value or a
    list item after a comma): JSON nested in JSON is data, never a call."""
    before = text[max(0, start - 64) : start].rstrip(_SPACE)
    if before.endswith(":"):
        return before[:-1].rstrip(_SPACE).endswith('"')
    return before.endswith(",") and before[:-1].rstrip(_SPACE)[-1:] in _VALUE_ENDS


def _call_like(item: object) -> bool:
    """Whether ``item`` has exactly the call shape (see the module doc)."""
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return False
    if not set(item) <= _CALL_KEYS or ("parameters" in item) == ("arguments" in item):
        return False
    return bool(item.get("type", "function") == "function")
