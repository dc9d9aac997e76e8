"""Bad input for every text dialect: random bytes, truncated replies, and a megabyte
of adversarial text read in linear work.

Linear work is asserted by counting, never by a clock: a meter wraps every
regular expression, memoised ``str.find`` (:class:`~tinytools.formats._dialect.Finder`),
strict ``raw_decode`` and relaxed or strict decode the parsers use, and adds
up the characters each one passes over (a search: from its start to its
match or its end; a decode: its input). A parse whose total stays within a
small multiple of the text's length did not rescan the text from many
places. (Plain ``str.find`` calls whose starts only move forward are not
metered; they are linear by construction.)
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools import Tool, ToolCall, _relaxed
from tinytools.formats import (
    _dialect,
    _jsonscan,
    _pyscan,
    deepseek,
    json_in_tag,
    llama_json,
    mistral,
    ptype,
    xml,
)
from tinytools.formats._dialect import MAX_CALLS
from tinytools.formats._parsed import Parsed

DIALECTS = [deepseek, json_in_tag, llama_json, mistral, ptype, xml]
BY_DIALECT = pytest.mark.parametrize("dialect", DIALECTS, ids=lambda m: m.__name__)
SCANNED = [_dialect, _jsonscan, _pyscan, _relaxed, *DIALECTS]

TOOLS = [
    Tool.from_schema(
        "search",
        "",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
        },
    ),
    Tool.from_schema(
        "f",
        "",
        {"type": "object", "properties": {"x": {"type": "array"}, "s": {"type": "string"}}},
    ),
]
CALLS = [
    ToolCall("1", "search", {"query": "rust {agents}", "limit": 123, "tags": ["a", "b"]}),
    ToolCall("2", "f", {"x": [1, {"y": None}], "s": '<tag> "q" \\ end'}),
]
#: Patterns a failed match may have scanned far for (an unterminated string).
LONG_FAILURES = {id(_jsonscan._STRING_REST)}


class Meter:
    """Characters passed over by the metered operations."""

    def __init__(self) -> None:
        self.chars = 0


class MeteredPattern:
    def __init__(self, pattern: re.Pattern[str], meter: Meter) -> None:
        self._pattern, self._meter = pattern, meter
        self._long = id(pattern) in LONG_FAILURES

    def _count(
        self, found: re.Match[str] | None, string: str, pos: int, endpos: int, scan: bool
    ) -> None:
        stop = min(endpos, len(string))
        if found is not None:
            stop = found.end()
        elif not (scan or self._long):
            stop = pos + 1
        self._meter.chars += max(1, stop - pos)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        found = self._pattern.search(string, pos, endpos)
        self._count(found, string, pos, endpos, scan=True)
        return found

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        found = self._pattern.match(string, pos, endpos)
        self._count(found, string, pos, endpos, scan=False)
        return found

    def fullmatch(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[str] | None:
        found = self._pattern.fullmatch(string, pos, endpos)
        self._count(found, string, pos, endpos, scan=False)
        return found

    def __getattr__(self, name: str) -> object:
        return getattr(self._pattern, name)


class MeteredDecoder:
    def __init__(self, decoder: json.JSONDecoder, meter: Meter) -> None:
        self._decoder, self._meter = decoder, meter

    def raw_decode(self, text: str, pos: int = 0) -> tuple[object, int]:
        try:
            value, end = self._decoder.raw_decode(text, pos)
        except json.JSONDecodeError as error:
            far = error.msg.startswith("Unterminated string")
            self._meter.chars += max(1, (len(text) if far else error.pos) - pos)
            raise
        except RecursionError:
            self._meter.chars += len(text) - pos
            raise
        self._meter.chars += max(1, end - pos)
        return value, end

    def __getattr__(self, name: str) -> object:
        return getattr(self._decoder, name)


def metered_text_function(function: Callable[..., object], meter: Meter) -> Callable[..., object]:
    def wrapper(text: str, *rest: object) -> object:
        meter.chars += max(1, len(text))
        return function(text, *rest)

    return wrapper


@contextmanager
def metering(monkeypatch: pytest.MonkeyPatch) -> Iterator[Meter]:
    meter = Meter()
    decoders = ("decode_strict", "decode_relaxed", "recover_relaxed_object", "convert_text")
    for module in SCANNED:
        for name, value in list(vars(module).items()):
            if isinstance(value, re.Pattern):
                monkeypatch.setattr(module, name, MeteredPattern(value, meter))
            elif isinstance(value, json.JSONDecoder):
                monkeypatch.setattr(module, name, MeteredDecoder(value, meter))
            elif name in decoders and callable(value):
                monkeypatch.setattr(module, name, metered_text_function(value, meter))
    original = _dialect.Finder.find

    def find(self: _dialect.Finder, needle: str, start: int) -> int:
        before = self._memo.get(needle)
        found = original(self, needle, start)
        if self._memo.get(needle) is not before:  # searched, not answered from memory
            meter.chars += max(1, (len(self.text) if found == -1 else found) - start)
        else:
            meter.chars += 1
        return found

    monkeypatch.setattr(_dialect.Finder, "find", find)
    yield meter


MB = 1 << 20


def repeat(unit: str) -> str:
    return unit * (MB // len(unit))


ADVERSARIAL = {
    "open braces": repeat("{"),
    "open brackets": repeat("["),
    "call starts": repeat('{"name": "search", "parameters": '),
    "nested call starts": repeat('{"name":'),
    "unterminated string": '{"name": "search", "parameters": {"query": "' + repeat("x"),
    "quotes": repeat('{"'),
    "escapes": repeat('"\\'),
    "deep JSON": repeat('{"a":[') + repeat("]}"),
    "closed prose braces": repeat("{x} "),
    "python tags": repeat("<|python_tag|>{"),
    "python tag calls": repeat('<|python_tag|>a.call("'),
    "python tag calls closed": repeat("<|python_tag|>a.call(q=[1, 2]) "),
    "function tags": repeat("<function=search>{"),
    "mistral markers": repeat("[TOOL_CALLS]"),
    "mistral open": repeat("[TOOL_CALLS]search[ARGS]{"),
    "mistral list": repeat("[TOOL_CALLS] [{"),
    "mistral relaxed open": repeat("[TOOL_CALLS]search[ARGS]{'q': '{"),
    "python tags relaxed": repeat("<|python_tag|>{'q': /* { */ {"),
    "function tags relaxed": repeat("<function=search>{'q': '{"),
    "deepseek begins": repeat(deepseek.CALL_BEGIN),
    "deepseek heads": repeat(f"{deepseek.CALL_BEGIN}search{deepseek.SEP}{{"),
    "deepseek ascii": repeat("<|tool▁call▁begin|>f<|tool▁sep|>"),
    "tool_call open": repeat("<tool_call>{"),
    "tool_call strings": repeat('<tool_call>{"k": "'),
    "tool_call relaxed strings": repeat("<tool_call>{'k': '{"),
    "tool_call comments": repeat("<tool_call>{k: /* { */ {"),
    "tool_call relaxed closed": repeat("<tool_call>{'name': 'f', 'arguments': {k: 1}} "),
    "gemma open": repeat("<|tool_call>call:f{"),
    "gemma quotes": repeat('<|tool_call>call:f{a:<|"|>'),
    "several objects": "<tool_call>" + repeat('{"name": "f", "arguments": {}}\n') + "</tool_call>",
    "xml open": repeat("<search><query>"),
    "ptype calls": repeat("search("),
    "ptype unclosed wrappers": repeat("<|python_start|>x ") + "f(1)",
    "ptype unclosed wrapper calls": repeat("<|python_start|>f(1) x "),
    "think": repeat("<think>[TOOL_CALLS]"),
}


class TestLinearWork:
    @BY_DIALECT
    @pytest.mark.parametrize("name", sorted(ADVERSARIAL))
    def test_megabyte(
        self, monkeypatch: pytest.MonkeyPatch, dialect: ModuleType, name: str
    ) -> None:
        """A megabyte of adversarial text is read with metered work linear in its size."""
        text = ADVERSARIAL[name]
        with metering(monkeypatch) as meter:
            parsed = dialect.parse(text, TOOLS)
        assert isinstance(parsed, Parsed)
        assert len(parsed.calls) + len(parsed.errors) <= MAX_CALLS + 1
        assert meter.chars <= 12 * len(text), f"{meter.chars / len(text):.1f} passes"

    def test_meter_sees_quadratic_work(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The meter is not blind: scans restarted from many brackets count as such, and
        the memory of :class:`Spans` is what keeps them to one."""
        text = "[" * 100 + "x" * 20_000
        with metering(monkeypatch) as meter:
            spans = _jsonscan.Spans(text)
            for start in range(100):
                spans.end(start)  # remembered: one scan in all
            remembered = meter.chars
            for start in range(100):
                spans.end(start, len(text) - 1)  # a limit: nothing is remembered
        assert remembered < 2 * len(text)
        assert meter.chars - remembered > 90 * len(text)


FRAGMENTS = st.sampled_from(
    [
        "[TOOL_CALLS]",
        "[/TOOL_CALLS]",
        "[ARGS]",
        "[CALL_ID]",
        "[THINK]",
        "[/THINK]",
        "<|python_tag|>",
        "<|eom_id|>",
        "<function=search>",
        "</function>",
        deepseek.CALLS_BEGIN,
        deepseek.CALL_BEGIN,
        deepseek.SEP,
        deepseek.CALL_END,
        "<|tool▁call▁begin|>",
        "<tool_call>",
        "</tool_call>",
        "<|tool_call>call:f",
        "<tool_call|>",
        '<|"|>',
        "<think>",
        "</think>",
        "```tool_code\n",
        "```",
        "default_api.",
        "print(",
        "search",
        '"name"',
        '"parameters"',
        '"arguments"',
        '"search"',
        "function",
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        ";",
        '"',
        "\\",
        "\n",
        " ",
        "(",
        ")",
        "=",
        "1",
        "<search>",
        "</search>",
        "<query>",
        "</query>",
    ]
)


class TestTotal:
    @BY_DIALECT
    @settings(deadline=None, max_examples=60)
    @given(data=st.binary(max_size=300))
    def test_random_bytes(self, dialect: ModuleType, data: bytes) -> None:
        """Random bytes, read as text, parse to a value: never an exception."""
        for text in (data.decode("latin-1"), data.decode("utf-8", "surrogateescape")):
            parsed = dialect.parse(text, TOOLS)
            assert isinstance(parsed, Parsed)
            assert all(error.invalid for error in parsed.errors)
            assert len(parsed.text) <= len(text)

    @BY_DIALECT
    @settings(deadline=None, max_examples=150)
    @given(text=st.lists(FRAGMENTS | st.text(max_size=3), max_size=30).map("".join))
    def test_fragment_soup(self, dialect: ModuleType, text: str) -> None:
        """Text dense in every dialect's markers parses to a value: calls with object or
        raw-text arguments, errors with a reason and their text, and no more prose than
        there was text."""
        parsed = dialect.parse(text, TOOLS)
        assert all(isinstance(call.arguments, (dict, str)) for call in parsed.calls)
        assert all(error.invalid and isinstance(error.arguments, str) for error in parsed.errors)
        assert all(error.arguments in text for error in parsed.errors)
        assert len(parsed.text) <= len(text)

    @BY_DIALECT
    def test_truncated_reply_never_gives_a_partial_call(self, dialect: ModuleType) -> None:
        """Every prefix of a two-call reply parses to a prefix of its calls, whole: a call
        the text ends inside is an error or prose, never a call with partial arguments."""
        text = "Sure.\n" + "\n".join(dialect.render_call(call, TOOLS) for call in CALLS)
        expected = [(call.name, call.arguments) for call in CALLS]
        for end in range(len(text) + 1):
            parsed = dialect.parse(text[:end], TOOLS)
            found = [(call.name, call.arguments) for call in parsed.calls]
            assert found == expected[: len(found)], (dialect.__name__, text[:end])
        assert expected == [(c.name, c.arguments) for c in dialect.parse(text, TOOLS).calls]


@pytest.mark.parametrize(
    ("dialect", "template"),
    [
        (json_in_tag, "<tool_call>[{calls}]</tool_call>"),
        (mistral, "[TOOL_CALLS] [{calls}]"),
        (llama_json, "[{calls}]"),
    ],
    ids=["json_in_tag", "mistral", "llama_json"],
)
def test_one_list_past_the_call_limit(dialect: ModuleType, template: str) -> None:
    """A single list of more calls than MAX_CALLS gives MAX_CALLS calls and one error
    saying the rest was not read."""
    one = (
        '{"name": "f", "arguments": {}}'
        if dialect is not llama_json
        else ('{"name": "f", "parameters": {}}')
    )
    parsed = dialect.parse(template.format(calls=", ".join([one] * (MAX_CALLS + 5))), TOOLS)
    assert MAX_CALLS == len(parsed.calls)
    assert 1 == len(parsed.errors)
    assert "the rest was not read" in str(parsed.errors[0].invalid)
