"""Mistral's tool calls: ``[TOOL_CALLS]`` (parse-only, plus :func:`render_call`).

:func:`parse` reads every ``[TOOL_CALLS]`` marker in the text and what follows it:

* **Pre-v11** (Mistral 7B v0.3, Mixtral): a JSON array of call objects,
  ``[TOOL_CALLS] [{"name": "add", "arguments": {"a": 1}}, …]`` (a single object
  is read too), optionally closed by ``[/TOOL_CALLS]``. Each object is read as
  in ``json_in_tag``: ``arguments`` (or ``parameters``, ``args``, ``input``),
  arguments given as a JSON string decoded when they hold a strict object; an
  ``id`` key is allowed and ignored.
* **v11 and later** (Mistral Small 3.1+, Devstral, Magistral):
  ``[TOOL_CALLS]name{json}``, the ``name[ARGS]{json}`` and
  ``name[CALL_ID]id[ARGS]{json}`` token forms, one marker per call
  (``[TOOL_CALLS]a{…}[TOOL_CALLS]b{…}``) or several ``name[ARGS]{json}``
  after one marker.

A marker says a call is meant, so a name not among ``tools`` is returned as
written, for dispatch's unknown-tool policy to answer. JSON that fails the
strict decode is repaired by :func:`tinytools.repair.recover_relaxed_object`
(never guessed at), and where a value ends is read as that repair reads it
(a bracket inside a single-quoted string or a comment closes nothing). JSON
that the text ends inside — a reply cut off mid-call — is a broken fragment,
named when it gives a name, never a call with partial arguments. The ids a
model writes after ``[CALL_ID]`` are not used: calls get synthetic ids like
every text dialect's (see :mod:`tinytools.formats._parsed`).

Text before, between and after the calls is prose; the end-of-sequence token
``</s>`` right after the calls is dropped. Reasoning (``<think>…</think>``,
and Magistral's ``[THINK]…[/THINK]``) is never read for calls: it stays in
``Parsed.text``. Reading is linear in the text: markers are found with
``str.find`` and each value is scanned once, up to the next marker.

:func:`constraint` builds a decoding constraint that holds a model to v11+
calls of the tools as :func:`render_call` writes them (see
docs/how-to/constrained-decoding.md).
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

from tinytools._declare.spec import NAME_PATTERN
from tinytools._relaxed import value_end
from tinytools._text import printable
from tinytools._wire import ToolCall

from ._constraint import CallForm, Constraint, build
from ._dialect import (
    NOTHING,
    Collector,
    Finder,
    Tools,
    arguments_of,
    decode_relaxed,
    decode_strict,
    hide_reasoning,
    skip_space,
)
from ._json_grammar import JsonStyle
from ._jsonscan import NAMED, call_parts, quiet_json, string_end
from ._parsed import Parsed
from ._writable import JSON_DEPTH, refusal, unwritable

__all__ = ["MARKER", "constraint", "parse", "render_call"]

#: The token that starts Mistral tool calls.
MARKER: Final = "[TOOL_CALLS]"
_END_MARKER, _ARGS, _CALL_ID, _EOS = "[/TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "</s>"
_NAME: Final = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_CALL_ID_VALUE: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_CUT_OFF = (
    "this [TOOL_CALLS] call is cut off: its JSON is never closed, so it was not run; "
    "write the whole call again"
)
_NOT_JSON = (
    "the JSON after [TOOL_CALLS] is not valid: write [TOOL_CALLS] then a JSON list of "
    '{"name": "tool_name", "arguments": {...}} objects, or tool_name[ARGS]{...}'
)
_NO_CALL = (
    "[TOOL_CALLS] must be followed by a call: tool_name[ARGS]{...} "
    'or [{"name": "tool_name", "arguments": {...}}]'
)


def render_call(call: ToolCall, tools: Tools = ()) -> str:
    """``[TOOL_CALLS]name[ARGS]{json}``, the v11+ form, which :func:`parse` reads back.

    The arguments are the decoded object when they are one (compact JSON,
    non-ASCII kept; every ``<`` written ``\\u003c`` and the ``[`` of a marker
    ``\\u005b``, so no tag or token is left in a string); arguments that are
    not an object are written as one JSON string, which parses back as
    a call holding that raw text, for admission to repair or answer.
    Where ``tools`` holds the tool, each object's keys are written in its
    schema's order (declared properties, then required keys no property lists,
    then the rest as they came): the one order :func:`constraint` takes.

    It never raises: a name outside the tool-name grammar, or arguments JSON
    cannot carry faithfully (see :mod:`tinytools.formats._writable`), give the
    note ``[tool call not written: <reason>]``, which parses as prose.
    """
    if NAME_PATTERN.fullmatch(call.name) is None:
        return refusal("its tool name cannot be written as a Mistral call")
    arguments = arguments_of(call, tools)
    # (raw text holding a lone surrogate is written with its escape: no text carries it)
    payload: object = printable(str(call.arguments)) if arguments is None else arguments
    if arguments is not None and (problem := unwritable(arguments, JSON_DEPTH)) is not None:
        return refusal(problem)
    return f"{MARKER}{call.name}{_ARGS}{quiet_json(msgspec.json.encode(payload).decode())}"


# The v11+ form render_call writes (compact JSON, every `<` escaped, and the `[` of a
# marker); a string never holds a raw marker parse looks for, nor prose one that starts a
# call or reasoning.
_FORM: Final = CallForm(
    trigger=MARKER,
    begin=lambda name: f"{MARKER}{name}{_ARGS}",
    end="",
    separator="",
    style=JsonStyle(",", ":", quiet_json, {"<": ("",), "[": ("TOOL_CALLS]", "THINK]", "/THINK]")}),
    prose={"[": ("TOOL_CALLS]", "THINK]", "/THINK]"), "<": ("think>", "/think>")},
)


def constraint(
    tools: Tools, *, choice: str = "auto", parallel: bool = True, reasoning: bool = False
) -> Constraint:
    """A decoding constraint that lets a model write only calls of ``tools`` in this dialect.

    Calls are ``[TOOL_CALLS]name[ARGS]{json}`` as :func:`render_call` writes
    them (compact JSON), one marker per call; every call it writes for
    arguments the schema accepts is accepted, and every text accepted reads
    back with :func:`parse` into calls of ``tools`` only. The lazy GBNF grammar
    starts at ``[TOOL_CALLS]`` (a special token for Mistral's tokenizers, which
    llama.cpp matches by its text). See :class:`~tinytools.formats.Constraint`
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
    """Read the calls after each ``[TOOL_CALLS]`` in ``text``; see the module doc.

    Args:
        text: Model output.
        tools: The tools offered (names are not checked here: dispatch does).

    Returns:
        The calls, the remaining prose, and each broken call as an invalid
        ``ToolCall`` holding its raw text. Nothing is executed.
    """
    return _Reader(text).run()


class _Reader:
    def __init__(self, text: str) -> None:
        self.out = Collector(text)
        self.text = hide_reasoning(hide_reasoning(text), ("[THINK]", "[/THINK]"))
        self.finder = Finder(self.text)

    def run(self) -> Parsed:
        text, out, pos = self.text, self.out, 0
        while (start := self.finder.find(MARKER, pos)) != -1 and not out.full:
            out.prose(pos, start)
            following = self.finder.find(MARKER, start + len(MARKER))
            limit = len(text) if following == -1 else following
            pos = self._after(self._calls(start, limit))
        if out.full:
            out.rest(pos)
        else:
            out.prose(pos, len(text))
        return out.parsed()

    def _after(self, pos: int) -> int:
        """Past a ``[/TOOL_CALLS]`` and an end-of-sequence token right after the calls."""
        text = self.text
        for token in (_END_MARKER, _EOS):
            at = skip_space(text, pos)
            if text.startswith(token, at):
                pos = at + len(token)
        return pos

    def _calls(self, start: int, limit: int) -> int:
        """Read what follows the marker at ``start`` (up to ``limit``); where it ends."""
        text, body = self.text, skip_space(self.text, start + len(MARKER))
        if text.startswith(("[", "{"), body) and not text.startswith((_ARGS, _CALL_ID), body):
            return self._listed(start, body, limit)
        pos, last, first = body, body, True
        while not self.out.full:
            name = _NAME.match(text, pos, limit)
            after = -1 if name is None else self._tokens(name.end(), limit)
            if name is None or (not first and after == name.end()):
                # No name, or (after a call) a word not followed by [ARGS]: prose.
                if first:
                    self._error("", start, limit, _NO_CALL)
                    return limit
                return last
            value_at = skip_space(text, after)
            if not text.startswith("{", value_at) and not (
                after > name.end() and text.startswith(("[", '"'), value_at)
            ):
                if first:
                    # A word is a name only when [ARGS] or [CALL_ID] says so: never a guess.
                    named = name.group() if after > name.end() else ""
                    self._error(named, start, limit, _NO_CALL)
                    return limit
                return last
            end = self._value_end(value_at, limit)
            if end == -1:
                self._error(name.group(), start if first else pos, limit, _CUT_OFF)
                return limit
            self._record_args(name.group(), text[value_at:end], start if first else pos, end)
            pos, last, first = skip_space(text, end), end, False
        return last

    def _tokens(self, pos: int, limit: int) -> int:
        """Past ``[CALL_ID]id`` and ``[ARGS]`` tokens after a v11 name."""
        text = self.text
        if text.startswith(_CALL_ID, pos):
            ident = _CALL_ID_VALUE.match(text, pos + len(_CALL_ID), limit)
            pos = pos + len(_CALL_ID) if ident is None else ident.end()
        if text.startswith(_ARGS, pos):
            pos += len(_ARGS)
        return pos

    def _value_end(self, at: int, limit: int) -> int:
        text = self.text
        if text.startswith('"', at):
            return string_end(text, at, limit)
        return value_end(text, at, limit)

    def _listed(self, start: int, body: int, limit: int) -> int:
        end = self._value_end(body, limit)
        if end == -1:
            named = NAMED.search(self.text, body, limit)
            self._error("" if named is None else named.group(1), start, limit, _CUT_OFF)
            return limit
        value = decode_relaxed(self.text[body:end])
        raw = self.out.source[start:end]
        if value is NOTHING:
            named = NAMED.search(self.text, body, end)
            self._error("" if named is None else named.group(1), start, end, _NOT_JSON)
            return end
        for item in value if isinstance(value, list) else [value]:
            if self.out.overflow(raw):
                break
            name, arguments = call_parts(item, dialect="Mistral call")
            if isinstance(arguments, tuple):
                self.out.error(name, raw, arguments[0])
            else:
                self.out.call(name, arguments)
        return end

    def _record_args(self, name: str, raw_args: str, start: int, end: int) -> None:
        value = decode_relaxed(raw_args)
        if value is NOTHING:
            reason = f"the arguments of `{name}` after [TOOL_CALLS] are not valid JSON"
            self._error(name, start, end, reason)
        elif isinstance(value, dict):
            self.out.call(name, value)
        elif isinstance(value, str):
            # Strictly decoded only: relaxed text stays text, for admission to repair.
            decoded = decode_strict(value)
            self.out.call(name, decoded if isinstance(decoded, dict) else value)
        else:
            self.out.call(name, msgspec.json.encode(value).decode())

    def _error(self, name: str, start: int, end: int, reason: str) -> None:
        self.out.error(name, self.out.source[start:end], reason)
