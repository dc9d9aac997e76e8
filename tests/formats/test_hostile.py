"""Regression tests for the hostile-input audit of the formats (issue 10).

Model-chosen values that Python cannot turn into text as they stand (an
integer beyond the int-to-str digit limit, nesting near the recursion limit),
names and keys that read as envelope tags, calls inside reasoning, and blocks
cut off before their closing tag.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tinytools.formats import anthropic, gemini, mcp, openai_chat, openai_responses

# 5,000 hex digits: about 6,000 decimal digits, beyond Python's default limit of 4,300.
HUGE = int("f" * 5000, 16)


def nested(depth: int) -> dict[str, object]:
    """``{"a": {"a": … {}}}``, ``depth`` objects deep, built without recursion."""
    root: dict[str, object] = {}
    node = root
    for _ in range(depth - 1):
        child: dict[str, object] = {}
        node["a"] = child
        node = child
    return root


class Sdk:
    """An SDK response object: plain data behind ``model_dump()``."""

    def __init__(self, data: object) -> None:
        self._data = data

    def model_dump(self) -> object:
        return self._data


# Each builds a one-call response (no call id, so a synthetic one is derived
# from the whole response) whose arguments are already decoded.
RESPONSES: dict[str, Callable[[object], object]] = {
    "openai_chat": lambda args: {
        "choices": [{"message": {"tool_calls": [{"function": {"name": "f", "arguments": args}}]}}]
    },
    "openai_responses": lambda args: {
        "output": [{"type": "function_call", "name": "f", "arguments": args}]
    },
    "anthropic": lambda args: {"content": [{"type": "tool_use", "name": "f", "input": args}]},
    "gemini": lambda args: {
        "candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": args}}]}}]
    },
    "mcp": lambda args: {"method": "tools/call", "params": {"name": "f", "arguments": args}},
}
MODULES = {
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "anthropic": anthropic,
    "gemini": gemini,
    "mcp": mcp,
}


class TestProviderArguments:
    """Item 2: decoded arguments that are huge or deep still give one call each."""

    @pytest.mark.parametrize("provider", sorted(RESPONSES))
    @pytest.mark.parametrize("wrap", [lambda d: d, Sdk], ids=["dict", "sdk"])
    @pytest.mark.parametrize(
        "arguments",
        [{"n": HUGE}, nested(990), {"a": [HUGE, nested(990)]}],
        ids=["huge-int", "deep", "both"],
    )
    def test_object_arguments_come_out(
        self, provider: str, wrap: Callable[[object], object], arguments: object
    ) -> None:
        """The call comes out as it was sent, under a deterministic synthetic id."""
        response = wrap(RESPONSES[provider](arguments))
        calls = MODULES[provider].parse_calls(response)
        assert [("f", None)] == [(call.name, call.invalid) for call in calls]
        assert calls[0].arguments is not arguments  # a copy, but the same values
        assert calls[0].arguments == arguments
        assert calls[0].id == MODULES[provider].parse_calls(response)[0].id

    @pytest.mark.parametrize("provider", sorted(set(RESPONSES) - {"openai_chat"}))
    @pytest.mark.parametrize("arguments", [[HUGE], [nested(990)]], ids=["huge-int", "deep"])
    def test_arguments_not_an_object_fail_closed(self, provider: str, arguments: object) -> None:
        """Arguments that are no object are refused with a reason, the raw value kept as text."""
        if provider == "openai_responses":
            arguments = {1: arguments}  # JSON text or an object with string keys is expected
        calls = MODULES[provider].parse_calls(RESPONSES[provider](arguments))
        assert 1 == len(calls)
        assert calls[0].invalid is not None
        assert calls[0].invalid.startswith("the arguments must be")
        assert isinstance(calls[0].arguments, str)

    def test_huge_int_is_kept_as_hex(self) -> None:
        """The kept text writes a huge integer in hexadecimal, exactly, in linear time."""
        calls = anthropic.parse_calls(RESPONSES["anthropic"]([HUGE]))
        assert f"[{hex(HUGE)}]" == calls[0].arguments

    def test_non_string_keys_are_named(self) -> None:
        """An object whose keys are not strings is refused as such, not as "not an object"."""
        calls = openai_chat.parse_calls(RESPONSES["openai_chat"]({1: "x"}))
        assert calls[0].invalid == (
            "the arguments must be JSON text or an object, "
            "not an object with keys that are not strings"
        )
