"""The cheap bound behind the refusal of repeated keys: compiled and pure Python alike.

``Tool.validate`` refuses JSON text whose objects repeat a key; an exact scan of every
text would cost as much as decoding it, so a bound decides when to scan. Both bounds
(the C extension's ``keys_may_repeat`` and the colon count used without it) must never
pass a text that repeats a key, and must pass ordinary text, so validation answers the
same either way.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from json_strategies import json_objects, json_values

from tinytools import ToolArgumentsError, tool
from tinytools._validate import _repeats_possible, _struct_decoder, text_problem

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
