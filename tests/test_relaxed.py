"""Tests for the relaxed-JSON scanner: the compiled one agrees with the pure-Python one.

`tests/test_repair.py` runs every repair test with each scanner; this module compares
the two directly, on any text.
"""

from __future__ import annotations

import os
from types import ModuleType

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from json_strategies import JSONISH_TEXT, relaxed_pairs

from tinytools import _relaxed

_NOT_BUILT = "the compiled scanner is not built (no C compiler at install time)"


@pytest.fixture(scope="module")
def compiled() -> ModuleType:
    """The compiled scanner; its tests skip where it was not built."""
    try:
        from tinytools import _relaxed_speedups
    except ImportError:
        pytest.skip(_NOT_BUILT)
    return _relaxed_speedups


def _answer(result: tuple[str, int] | None) -> tuple[object, int] | None:
    """A scanner's answer: the decoded value (or the decode error's class) and the bits."""
    if result is None:
        return None
    text, bits = result
    try:
        return msgspec.json.decode(text), bits
    except msgspec.DecodeError:
        return msgspec.DecodeError, bits


_PIECES = ['<|"|>', '<|">', "True", "None", "null", "true", "\U0001f600", "//", "/*", "*/"]
# Texts dense in what the scanner decides on: quotes, escapes, template tokens, words
# (Unicode letters and digits, Python literals, reserved words), brackets, commas,
# comments and raw control characters.
_SCANNER_TEXT = st.lists(
    st.sampled_from(
        [*"{}[],: \n'\"\\<|>aé1-$_x\u00b2\u0663\u00a0\x01/*\t\r\x00\x08\x0c\x1f", *_PIECES]
    ),
    max_size=60,
).map("".join)


@pytest.mark.skipif(
    not os.environ.get("TINYTOOLS_REQUIRE_SPEEDUPS"), reason="TINYTOOLS_REQUIRE_SPEEDUPS unset"
)
def test_compiled_scanner_is_built() -> None:
    """Where a C compiler is known to exist (CI sets the variable), the install built it."""
    try:
        from tinytools import _relaxed_speedups  # noqa: F401
    except ImportError:
        pytest.fail(_NOT_BUILT)


@settings(max_examples=1500)
@given(
    st.text()
    | JSONISH_TEXT
    | _SCANNER_TEXT
    | relaxed_pairs().map(lambda pair: pair[1].strip(" \n\t\r\ufeff\u00a0\u3000\x0c`json"))
)
def test_compiled_and_pure_python_agree(compiled: ModuleType, raw: str) -> None:
    """Both scanners refuse the same documents and rewrite the rest to the same value."""
    text = raw if raw.startswith("{") else "{" + raw + "}"
    try:
        text.encode()
    except UnicodeEncodeError:
        # The compiled scanner reads UTF-8: a lone surrogate raises, as str.encode does
        # (repair refuses such text either way).
        with pytest.raises(UnicodeEncodeError):
            compiled.rewrite(text)
        return
    assert _answer(_relaxed.rewrite(text)) == _answer(compiled.rewrite(text))


@settings(max_examples=1500)
@given(_SCANNER_TEXT)
def test_compiled_and_pure_python_write_the_same_text(compiled: ModuleType, raw: str) -> None:
    """Byte for byte: the same rewrite and the same bits, comments and escapes included."""
    text = "{" + raw + "}"
    assert _relaxed.rewrite(text) == compiled.rewrite(text)


def test_compiled_scanner_takes_str(compiled: ModuleType) -> None:
    """Given bytes, the compiled scanner says what it takes (the pure one's signature)."""
    with pytest.raises(TypeError, match="takes str, not bytes"):
        compiled.rewrite(b"{}")


@pytest.mark.parametrize(
    ("text", "expected", "bits"),
    [
        pytest.param(
            "{'a': '" + '"' * 10_000 + "'}",
            {"a": '"' * 10_000},
            _relaxed.SINGLE_QUOTES,
            id="bare-quotes",
        ),
        pytest.param(
            "{'a': '" + "\\'" * 10_000 + "'}",
            {"a": "'" * 10_000},
            _relaxed.SINGLE_QUOTES,
            id="escaped-quotes",
        ),
        pytest.param(
            '{a: <|"|>' + '\x01\\"\n' * 10_000 + '<|">}',
            {"a": '\x01\\"\n' * 10_000},
            _relaxed.KEYS | _relaxed.TEMPLATE_TOKENS,
            id="template-escapes",
        ),
        pytest.param(
            "{" + "k: 1, " * 10_000 + "z: 2}", {"k": 1, "z": 2}, _relaxed.KEYS, id="many-keys"
        ),
    ],
)
def test_output_longer_than_input(
    compiled: ModuleType, text: str, expected: object, bits: int
) -> None:
    """Rewrites that make the text much longer agree, and decode to the value."""
    assert (expected, bits) == _answer(_relaxed.rewrite(text))
    assert (expected, bits) == _answer(compiled.rewrite(text))
