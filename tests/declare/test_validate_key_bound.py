"""The cheap bound behind the refusal of repeated keys: compiled and pure Python alike.

``Tool.validate`` refuses JSON text whose objects repeat a key; an exact scan of every
text would cost as much as decoding it, so a bound decides when to scan. Both bounds
(the C extension's ``keys_may_repeat`` and the colon count used without it) must never
pass a text that repeats a key, and must pass ordinary text, so validation answers the
same either way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import ModuleType

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from json_strategies import json_objects, json_values

from tinytools import ToolArgumentsError, tool
from tinytools._declare.decode import repeats_possible as _repeats_possible
from tinytools._declare.decode import struct_decoder as _struct_decoder
from tinytools._declare.json_values import text_problem

_NOT_BUILT = "the C extension is not built (no C compiler at install time)"


@pytest.fixture(scope="module")
def compiled() -> ModuleType:
    try:
        from tinytools import _relaxed_speedups
    except ImportError:
        pytest.skip(_NOT_BUILT)
    return _relaxed_speedups


@st.composite
def _texts(draw: st.DrawFn) -> str:
    """JSON text of an object, sometimes with a member repeated at some depth, keys
    sometimes escaped, with any JSON whitespace between tokens."""
    value: object = draw(json_objects())
    space = st.sampled_from(["", " ", "\n", "\t ", "\r\n"])

    def write(item: object) -> str:
        if isinstance(item, dict):
            members = [(k, write(v)) for k, v in item.items()]
            if members and draw(st.integers(0, 3)) == 0:  # repeat a member
                key = draw(st.sampled_from([k for k, _ in members]))
                members.insert(draw(st.integers(0, len(members))), (key, write(0)))
            parts = [
                f"{draw(space)}{_key(k, draw(st.booleans()))}{draw(space)}:{draw(space)}{v}"
                for k, v in members
            ]
            return "{" + ",".join(parts) + draw(space) + "}"
        if isinstance(item, list):
            return "[" + ",".join(write(x) for x in item) + "]"
        return msgspec.json.encode(item).decode()

    if draw(st.booleans()):
        value = {"nested": value, "list": [value, draw(json_values())]}
    return write(value)


def _key(key: str, escaped: bool) -> str:
    if escaped and key and ord(key[0]) < 0xD800:  # its first character as a \\u escape
        return '"' + "".join(f"\\u{ord(c):04x}" for c in key[:1]) + _plain(key[1:]) + '"'
    return '"' + _plain(key) + '"'


def _plain(text: str) -> str:
    return msgspec.json.encode(text).decode()[1:-1]


def _repeats(text: str) -> bool:
    problem = text_problem(text)
    return problem is not None and "repeats field" in problem[1]


def _bounds(compiled: ModuleType | None) -> list[Callable[[str], bool]]:
    bounds: list[Callable[[str], bool]] = [
        lambda text: _repeats_possible(text, msgspec.json.decode(text), None)
    ]
    if compiled is not None:
        bounds.append(compiled.keys_may_repeat)
    return bounds


@settings(max_examples=200, deadline=None)
@given(_texts())
def test_no_bound_passes_a_repeat(text: str) -> None:
    try:
        from tinytools import _relaxed_speedups as compiled
    except ImportError:
        compiled = None
    if _repeats(text):
        for bound in _bounds(compiled):
            assert bound(text)


@settings(max_examples=200, deadline=None)
@given(json_objects())
def test_compiled_bound_passes_plain_text(compiled: ModuleType, obj: dict[str, object]) -> None:
    """Text as msgspec writes it (keys without escapes) is passed without a scan."""
    text = msgspec.json.encode(obj).decode()
    if "\\" not in text:
        assert not compiled.keys_may_repeat(text)
        assert not compiled.keys_may_repeat(text.encode())


@pytest.mark.parametrize(
    ("text", "maybe"),
    [
        ('{"a": 1, "b": {"a": 2}, "c": [{"a": 1}, {"a": 2}]}', False),
        ('{"a": 1, "b": {"x": 2, "x" : 3}}', True),
        ('{"a": "k\\":", "a\\"": 1}', True),  # an escaped key: left to the exact scan
        ('{"é": 1, "\U0001f600": 2, "\U0001f600"\n: 3}', True),
        ('["a", "b:", {"c": "d"}]', False),
        ('{"k0": 0, "k1": {}}', False),
        ("{" + ",".join(f'"k{i}": {i}' for i in range(300)) + "}", False),
        ("{" + ",".join(f'"k{i % 150}": {i}' for i in range(300)) + "}", True),
        ('{"a": 1', True),  # not JSON: nothing is promised, the exact scan decides
        ('"a": 1}', True),
    ],
)
def test_compiled_bound_cases(compiled: ModuleType, text: str, maybe: bool) -> None:
    assert compiled.keys_may_repeat(text) is maybe


def test_compiled_bound_refuses_other_types(compiled: ModuleType) -> None:
    with pytest.raises(TypeError, match="str or bytes"):
        compiled.keys_may_repeat(bytearray(b"{}"))


def test_compiled_bound_on_deep_text(compiled: ModuleType) -> None:
    """Nesting far past the scan's first frames grows them; no recursion."""
    deep = '{"a":' * 5000 + "1" + "}" * 5000
    assert not compiled.keys_may_repeat(deep)
    assert compiled.keys_may_repeat('{"a":' * 5000 + '{"b":1,"b":2}' + "}" * 5000)


@tool
def finder(query: str, limit: int = 10, exact: bool = False, tags: list[str] | None = None) -> str:
    """Find things."""
    return query


@pytest.mark.parametrize("bound", ["compiled", "python"])
@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ('{"query": "q", "limit": 5}', False),
        ('{"query": "q", "query": "r"}', True),
        ('{"query": "q", "exact": false, "exact": false}', True),
        ('{"query": "q", "\\u0071uery": "r"}', True),
        ('{"query": "a:b", "tags": ["x:y"]}', False),
    ],
)
def test_typed_decoder_either_bound(bound: str, text: str, refused: bool) -> None:
    if bound == "compiled":
        try:
            from tinytools._relaxed_speedups import keys_may_repeat
        except ImportError:
            pytest.skip(_NOT_BUILT)
        decode = _struct_decoder(finder._validator._struct, keys_may_repeat)  # type: ignore[attr-defined]
    else:
        decode = _struct_decoder(finder._validator._struct, None)  # type: ignore[attr-defined]
    if refused:
        with pytest.raises(msgspec.ValidationError, match="repeats field"):
            decode(text)
    else:
        assert msgspec.structs.asdict(decode(text))["query"] in ("q", "a:b")
        assert finder.validate(text)["query"] in ("q", "a:b")
    if refused:
        with pytest.raises(ToolArgumentsError, match="repeats field"):
            finder.validate(text)


# The compiled scan's exact answers, spelled out in Python: the specification the C code
# (tinytools/_relaxed_speedups.c, keys_may_repeat) is checked against on any text, JSON or
# not. It is deliberately the plainest loop; the C scan is free to be faster, not different.
_SPACE = " \t\r\n"


def _spelled_repeat(text: str | bytes) -> bool:
    """Whether the scan answers "may repeat" for ``text`` (bytes are read byte by byte)."""
    units = text if isinstance(text, str) else text.decode("latin-1")
    size = len(units)
    objects: list[list[str]] = []  # the keys of each open object, innermost last
    at = 0
    while at < size:
        unit = units[at]
        if unit == '"':
            start = at = at + 1
            escaped = False
            while at < size and units[at] != '"':
                if units[at] == "\\":  # the escaped unit is skipped, whatever it is
                    escaped = True
                    at += 1
                at += 1
            if at >= size:
                return True  # a string never closed
            after = at + 1
            while after < size and units[after] in _SPACE:
                after += 1
            if after < size and units[after] == ":":  # a key
                if escaped or not objects:
                    return True  # an escape may spell another key; or a key outside {}
                objects[-1].append(units[start:at])
        elif unit == "{":
            objects.append([])
        elif unit == "}":
            if not objects:
                return True
            keys = objects.pop()
            if len(set(keys)) != len(keys):
                return True
        at += 1
    return bool(objects)


# Pieces of text the scan reacts to, and pieces it must read past: keys that differ only
# after an escape, escaped quotes and backslashes, whitespace before a colon, text of
# every str kind (Latin-1, UCS-2, UCS-4), a lone surrogate, NUL, runs long enough for
# the scan's eight-byte steps to land anywhere in them.
_PIECES = st.sampled_from(
    [
        *'{}[]:,"\\ \n\t\r',
        '"a"',
        '"a":',
        '"a" :',
        '"a"\n\t:',
        '"b":',
        '"a\\"":',
        '"a\\\\":',
        '"\\u0022":',
        '"\\u0061":',
        '"\\\\"',
        '\\"',
        "\\\\",
        "\\u0022",
        '"é":',
        '"\u0100":',
        '"\U0001f600":',
        '"\ud800":',
        "\x00",
        '"\x00":',
        "é",
        "\u20ac",
        "\U0001f600",
        "\ud800",
        "\udfff",
        "1",
        "true",
        "abcdefgh",
        '"' + "x" * 17 + '"',
        '"' + "y" * 9 + '\\"' + "y" * 6 + '"',
        '"k' + "\u0101" * 5 + '":',
        '"k' + "\U0001f601" * 3 + '":',
    ]
)


@st.composite
def _scanner_texts(draw: st.DrawFn) -> str:
    """Any text the scan may meet: JSON with repeats and escapes, JSON cut short, soup."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return "".join(draw(st.lists(_PIECES, max_size=40)))
    text = draw(_texts())
    if kind == 1:  # cut short, or with a piece spliced in somewhere
        at = draw(st.integers(0, len(text)))
        return text[:at] if draw(st.booleans()) else text[:at] + draw(_PIECES) + text[at:]
    if kind == 2:  # beside a long string, so runs cross many eight-byte words
        pad = draw(st.text(alphabet='ab\\"é\u0100\U0001f600 :{}', min_size=9, max_size=40))
        return f'{{"pad": "{_plain(pad)}", "doc": {text}}}'
    return text


def _repeats_exactly(text: str) -> bool | None:
    """Whether JSON ``text`` repeats a key in one of its objects (keys compared decoded),
    or None when it is not JSON: the oracle, from the standard library's own parser."""
    repeated = False

    def pairs(members: list[tuple[str, object]]) -> object:
        nonlocal repeated
        repeated = repeated or len({k for k, _ in members}) != len(members)
        return None

    try:
        json.loads(text, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return None
    return repeated


@settings(max_examples=settings().max_examples * 2, deadline=None)
@given(_scanner_texts())
def test_compiled_scan_is_the_spelled_scan(compiled: ModuleType, text: str) -> None:
    """The C scan gives the specification's answer on any text, as str and as UTF-8."""
    expected = _spelled_repeat(text)
    assert compiled.keys_may_repeat(text) is expected
    raw = text.encode("utf-8", "surrogatepass")  # no ASCII byte inside a longer character
    assert _spelled_repeat(raw) is expected
    assert compiled.keys_may_repeat(raw) is expected


@settings(deadline=None)
@given(_scanner_texts())
def test_spelled_scan_is_sound(text: str) -> None:
    """On JSON text, "no repeat" is never wrong; without a backslash the answer is exact."""
    repeated = _repeats_exactly(text)
    if repeated is None:
        return
    if repeated:
        assert _spelled_repeat(text)
    if "\\" not in text:
        assert _spelled_repeat(text) is repeated


_MB = "x" * (1 << 20)
_HIGH, _LOW = chr(0xD800), chr(0xDC00)  # lone surrogates
_THOUSANDS = ",".join(f'"key{i}": {i}' for i in range(5000))


@pytest.mark.parametrize(
    "text",
    [
        "[" * 1000 + '{"a": 1, "a": 2}' + "]" * 1000,
        '{"a":' * 1000 + "1" + "}" * 1000,
        '{"a":' * 1000 + '{"b": 1, "b": 2}' + "}" * 1000,
        "{" * 1000,  # never closed
        "}" * 1000,
        f'{{"a": "{_MB}", "b": "{_MB}"}}',
        f'{{"{_MB}": 1, "{_MB}": 2}}',
        f'{{"{_MB}a": 1, "{_MB}b": 2}}',
        f'{{"a": "{_MB}\\"", "a": 2}}',
        f'{{"a": "{_MB}',  # a string never closed
        f'{{"a": "{_MB}\\',  # a backslash at the very end
        '{"a": "' + "\\" * 100_001 + '", "a": 1}',  # an odd run: the quote is escaped
        '{"a": "' + "\\" * 100_000 + '", "a": 1}',  # an even run: it ends the string
        '{"a": "' + '\\"' * 100_000 + '", "b": 1}',  # every quote escaped but the last
        '{"a": "\\',
        '{"a\\',
        "\\",
        '"',
        f"{{{_THOUSANDS}}}",
        f'{{{_THOUSANDS}, "key4999": 0}}',
        f'{{"key0": 0, {_THOUSANDS}}}',
        f'{{"{_HIGH}": 1, "{_LOW}": 2}}',
        f'{{"{_HIGH}": 1, "{_HIGH}": 2}}',
        f'{{"{_HIGH}\U0001f600": 1, "{_HIGH}\U0001f601": 2}}',
        '{"\x00": 1, "\x00\x00": 2}',
        '{"a\x00": 1, "a\x00" : 2}',
        '{"a": "\x00"}\x00',
        "\x00" * 100 + '{"a": 1}',
    ],
)
def test_compiled_scan_on_hostile_text(compiled: ModuleType, text: str) -> None:
    """Deep nesting, megabyte strings, thousands of keys, lone surrogates, NUL, a final
    backslash: the specification's answer, as str and as bytes, without a crash."""
    expected = _spelled_repeat(text)
    assert compiled.keys_may_repeat(text) is expected
    assert compiled.keys_may_repeat(text.encode("utf-8", "surrogatepass")) is expected


def test_unrepeated_decoder_calls(compiled: ModuleType) -> None:
    """The compiled checked decoder: decode first (its error stands), refuse only when the
    scan says a key may repeat (its error stands too), else the decoded value."""
    refused: list[str | bytes] = []

    def refuse(text: str | bytes) -> None:
        refused.append(text)
        if b"x" in (text if isinstance(text, bytes) else text.encode()):
            raise ValueError("repeated")

    decode = compiled.unrepeated_decoder(msgspec.json.decode, refuse)
    assert decode('{"a": 1, "b": 2}') == {"a": 1, "b": 2}
    assert decode(b'{"a": {"a": 1}}') == {"a": {"a": 1}}
    assert refused == []
    assert decode('{"a": 1, "a": 2}') == {"a": 2}  # refuse returned: the value stands
    assert refused == ['{"a": 1, "a": 2}']
    with pytest.raises(ValueError, match="repeated"):
        decode(b'{"x": 1, "x": 2}')
    with pytest.raises(msgspec.DecodeError):
        decode('{"a": 1, "a": ')  # not JSON: decode's error, refuse not called
    assert len(refused) == 2
    with pytest.raises(TypeError, match="str or bytes"):
        compiled.unrepeated_decoder(lambda text: text, refuse)(1)
    with pytest.raises(TypeError, match="2 arguments"):
        compiled.unrepeated_decoder(msgspec.json.decode)
