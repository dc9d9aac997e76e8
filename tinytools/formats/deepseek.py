"""DeepSeek's tool-call blocks (V3, R1, V3.1): parse-only, plus :func:`render_call`.

DeepSeek writes calls between special tokens::

    <|tool▁calls▁begin|><|tool▁call▁begin|>function<|tool▁sep|>get_weather
    ```json
    {"city": "Tokyo"}
    ```<|tool▁call▁end|><|tool▁calls▁end|>

(V3 and R1: the call type, the separator, the name, then the arguments in a
JSON code fence), or, from V3.1 on,
``<|tool▁call▁begin|>get_weather<|tool▁sep|>{"city": "Tokyo"}<|tool▁call▁end|>``.

:func:`parse` reads each ``<|tool▁call▁begin|>…<|tool▁call▁end|>`` in either
form, inside a ``<|tool▁calls▁begin|>`` block or not. The bars in the tokens
are the fullwidth vertical line (U+FF5C) the tokenizer uses, shown here as
``|``; an ASCII ``|`` is read too (as some servers print them), and the
``▁`` is U+2581. The arguments are JSON, with or without the fence; JSON that fails the
strict decode is repaired by :func:`tinytools.repair.recover_relaxed_object`
(never guessed at). The tokens say a call is meant, so a name not among
``tools`` is returned as written, for dispatch's unknown-tool policy to answer.

A call whose ``<|tool▁call▁end|>`` never comes (a reply cut off mid-call) is a
broken fragment, named when its name was read, never a call with partial
arguments. ``<|tool▁calls▁end|>`` and an ``<|end▁of▁sentence|>`` after the
calls are dropped; other text is prose. Reasoning (``<think>…</think>``, or
everything before a ``</think>`` that has no ``<think>``, as R1's template
opens it) is never read for calls: it stays in ``Parsed.text``. Reading is
linear: tokens are found by one regular expression anchored on ``<``, from
positions that only move forward.

:func:`constraint` builds a decoding constraint that holds a model to V3.1
calls of the tools, in one block, as :func:`render_call` writes them (see
docs/how-to/constrained-decoding.md).
"""

from __future__ import annotations

import re
from typing import Final, Literal

import msgspec

from tinytools._declare.spec import NAME_PATTERN
from tinytools._text import printable
from tinytools._wire import ToolCall

from ._constraint import CallForm, Constraint, build
from ._dialect import (
    NOTHING,
    Collector,
    Tools,
    arguments_of,
    decode_relaxed,
    decode_strict,
    hide_reasoning,
)
from ._json_grammar import JsonStyle
from ._jsonscan import quiet_json
from ._parsed import Parsed
from ._writable import JSON_DEPTH, refusal, unwritable

__all__ = [
    "CALLS_BEGIN",
    "CALLS_END",
    "CALL_BEGIN",
    "CALL_END",
    "SEP",
    "constraint",
    "parse",
    "render_call",
]

_BAR: Final = "\uff5c"  # the fullwidth vertical line of DeepSeek's special tokens
#: The special tokens, as DeepSeek's tokenizer writes them.
CALLS_BEGIN: Final = f"<{_BAR}tool▁calls▁begin{_BAR}>"
CALLS_END: Final = f"<{_BAR}tool▁calls▁end{_BAR}>"
CALL_BEGIN: Final = f"<{_BAR}tool▁call▁begin{_BAR}>"
CALL_END: Final = f"<{_BAR}tool▁call▁end{_BAR}>"
SEP: Final = f"<{_BAR}tool▁sep{_BAR}>"

# Any DeepSeek token, fullwidth or ASCII bars; group 1 is its name.
_TOKEN: Final = re.compile(
    r"<[|\uff5c](tool▁calls▁begin|tool▁calls▁end|tool▁call▁begin|tool▁call▁end|tool▁sep"
    r"|end▁of▁sentence)[|\uff5c]>"
)
_CUT_OFF = (
    f"this tool call has no {CALL_END}: it looks cut off, so it was not run; "
    "write the whole call again"
)
_NO_NAME = f"expected name{SEP}{{arguments}} inside {CALL_BEGIN}"


def render_call(call: ToolCall, tools: Tools = (), *, style: Literal["v3", "v3.1"] = "v3.1") -> str:
    """One call as a whole ``<|tool▁calls▁begin|>…<|tool▁calls▁end|>`` block.

    ``style="v3.1"`` (the default) writes ``name<|tool▁sep|>{json}``; ``"v3"``
    writes ``function<|tool▁sep|>name`` and the arguments in a ```` ```json ````
    fence, as the V3 and R1 templates do. :func:`parse` reads both back.
    Every ``<`` in a string is written ``\\u003c``, so no token is left in one.
    Arguments that are not an object are written as one JSON string, which
    parses back as a call holding that raw text, for admission to answer.
    Where ``tools`` holds the tool, each object's keys are written in its
    schema's order (declared properties, then required keys no property lists,
    then the rest as they came): the one order :func:`constraint` takes.

    It never raises: a name outside the tool-name grammar, or arguments JSON
    cannot carry faithfully, give the note ``[tool call not written:
    <reason>]``, which parses as prose.
    """
    if NAME_PATTERN.fullmatch(call.name) is None:
        return refusal("its tool name cannot be written as a DeepSeek call")
    arguments = arguments_of(call, tools)
    # (raw text holding a lone surrogate is written with its escape: no text carries it)
    payload: object = printable(str(call.arguments)) if arguments is None else arguments
    if arguments is not None and (problem := unwritable(arguments, JSON_DEPTH)) is not None:
        return refusal(problem)
    body = quiet_json(msgspec.json.encode(payload).decode())
    if style == "v3":
        inner = f"function{SEP}{call.name}\n```json\n{body}\n```"
    else:
        inner = f"{call.name}{SEP}{body}"
    return f"{CALLS_BEGIN}{CALL_BEGIN}{inner}{CALL_END}{CALLS_END}"


# The V3.1 form render_call writes, the calls in one block (compact JSON, every `<`
# escaped); prose holds no `<` followed by a bar, ASCII or fullwidth (DeepSeek's tokens),
# and no reasoning tag.
_FORM: Final = CallForm(
    trigger=CALLS_BEGIN,
    begin=lambda name: f"{CALL_BEGIN}{name}{SEP}",
    end=CALL_END,
    separator="",
    style=JsonStyle(",", ":", quiet_json, {"<": ("",)}),
    prose={"<": ("|", _BAR, "think>", "/think>")},
    open=CALLS_BEGIN,
    close=CALLS_END,
)


def constraint(
    tools: Tools, *, choice: str = "auto", parallel: bool = True, reasoning: bool = False
) -> Constraint:
    """A decoding constraint that lets a model write only calls of ``tools`` in this dialect.

    Calls are DeepSeek V3.1's, ``<|tool▁calls▁begin|>`` then one
    ``<|tool▁call▁begin|>name<|tool▁sep|>{json}<|tool▁call▁end|>`` per call
    then ``<|tool▁calls▁end|>``, as :func:`render_call` writes one call
    (compact JSON); every call it writes for arguments the schema accepts is
    accepted, and every text accepted reads back with :func:`parse` into calls
    of ``tools`` only. The lazy GBNF grammar starts at ``<|tool▁calls▁begin|>``.
    See :class:`~tinytools.formats.Constraint` and
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
    """Read DeepSeek's tool calls in ``text``; see the module doc.

    Args:
        text: Model output.
        tools: The tools offered (names are not checked here: dispatch does).

    Returns:
        The calls, the remaining prose, and each broken call as an invalid
        ``ToolCall`` holding its raw text. Nothing is executed.
    """
    out = Collector(text)
    text = hide_reasoning(text)
    pos, scan, in_block, after_call = 0, 0, False, False
    while (token := _TOKEN.search(text, scan)) is not None and not out.full:
        kind, start = token.group(1), token.start()
        if kind == "tool▁call▁begin":
            out.prose(pos, start)
            pos = scan = _call(out, text, token.end(), start)
            in_block = after_call = True
            continue
        if kind == "tool▁calls▁begin" or (kind == "tool▁calls▁end" and in_block):
            out.prose(pos, start)
            pos = token.end()
            in_block = kind == "tool▁calls▁begin"
        elif kind == "end▁of▁sentence" and after_call and not text[pos:start].strip():
            pos = token.end()
        scan = token.end()
    if out.full:
        out.rest(pos)
    else:
        out.prose(pos, len(text))
    return out.parsed()


def _call(out: Collector, text: str, head: int, start: int) -> int:
    """Record the call whose ``<|tool▁call▁begin|>`` is at ``start``; where it ends."""
    sep = _TOKEN.search(text, head)
    end = sep
    while end is not None and end.group(1) not in (
        "tool▁call▁end",
        "tool▁call▁begin",
        "tool▁calls▁end",
    ):
        end = _TOKEN.search(text, end.end())
    stop = len(text) if end is None else end.start()
    closed = end is not None and end.group(1) == "tool▁call▁end"
    after = stop if not closed or end is None else end.end()
    name, body = "", ""
    if sep is not None and sep.group(1) == "tool▁sep" and sep.start() < stop:
        head_text, rest = text[head : sep.start()].strip(), text[sep.end() : stop]
        if head_text == "function":  # V3/R1: the name follows the separator, up to a newline
            line, _, body = rest.lstrip(" \t").partition("\n")
            name = line.strip()
        else:
            name, body = head_text, rest
    raw = out.source[start:after]
    if not closed:
        out.error(name if _plain(name) else "", raw, _CUT_OFF)
        return after
    if not name:
        out.error("", raw, _NO_NAME)
        return after
    value = decode_relaxed(body.strip())
    if value is NOTHING:
        out.error(name, raw, f"the arguments of `{name}` are not valid JSON")
    elif isinstance(value, dict):
        out.call(name, value)
    elif isinstance(value, str):
        decoded = decode_strict(value)  # relaxed text stays text, for admission to repair
        out.call(name, decoded if isinstance(decoded, dict) else value)
    else:
        out.call(name, msgspec.json.encode(value).decode())
    return after


def _plain(name: str) -> bool:
    return 0 < len(name) <= 256 and "\n" not in name
