"""Folding hostile results: JSON blocks of hostile values, malformed results and parts
become the call's error, and truncation never exceeds the limit."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tinytools
from tests.engine.hostile import _answered
from tinytools import (
    Artifact,
    ImageBlock,
    JsonBlock,
    Registry,
    RunPolicy,
    TextBlock,
    ToolCall,
    ToolResult,
    dispatch_sync,
    tool,
)
from tinytools._engine.fold import truncate


def _nested(depth: int) -> object:
    value: object = []
    for _ in range(depth):
        value = [value]
    return value


_DEEP = _nested(1000)


class TestJsonBlocksOfHostileValues:
    """Defect: a tool returning ``ToolResult(content=[JsonBlock(v), ...])`` with a lone
    surrogate in ``v`` (or ``v`` nested 1,000 deep) aborted the whole dispatch, blamed on
    "the artifact store"; every other call of the batch went unanswered. The surrogate is
    written as its escape, as in returned text; a value too deep to encode is that call's
    error (1,000 levels are too deep for msgspec on Python 3.10 and 3.11, not on 3.12+,
    where the block reads as its JSON); the other call is answered either way."""

    @pytest.mark.parametrize(
        "options",
        [{}, {"middleware": [tinytools.after_tool(lambda c, r, e: r)]}],
        ids=["plain", "hooked"],
    )
    @pytest.mark.parametrize(
        ("value", "is_error"),
        [({"k": "\ud800x"}, False), ({"\udc80": [1]}, False), (_DEEP, None)],
        ids=["surrogate-value", "surrogate-key", "nested-1000"],
    )
    def test_answered_and_encodes(
        self, value: object, is_error: bool | None, options: dict[str, object]
    ) -> None:
        @tool
        def shaped() -> ToolResult:
            """Return a JSON block."""
            return ToolResult(
                content=(JsonBlock(value), TextBlock("t")), follow_up=(JsonBlock(value),)
            )

        @tool
        def other() -> str:
            """Answer."""
            return "fine"

        result = dispatch_sync(
            [ToolCall("a", "shaped", {}), ToolCall("b", "other", {})],
            Registry.of(shaped, other),
            **options,  # type: ignore[arg-type]
        )
        first, second = result.messages
        if is_error is None:  # too deep to encode on this Python, or not
            is_error = first.is_error
            assert is_error or first.content.startswith("[[[")
        assert first.is_error is is_error
        if is_error:
            assert "Tool `shaped` returned a bad value" in first.content
        elif value is not _DEEP:
            assert first.content.endswith("\nt")
            assert "ud" in first.content
        assert (second.content, second.is_error) == ("fine", False)
        msgspec.json.encode(result)


class TestItem5Truncate:
    @given(limit=st.integers(0, 200), text=st.text(max_size=300))
    def test_never_longer_than_the_limit(self, limit: int, text: str) -> None:
        assert len(truncate(text, limit).encode("utf-8", "surrogatepass")) <= limit or (
            len(text.encode("utf-8", "surrogatepass")) <= limit
        )

    def test_tiny_limit_through_dispatch(self) -> None:
        result = _answered(
            [ToolCall("c", "get_weather", {"city": "x" * 100})],
            policy=RunPolicy(max_result_bytes=10),
        )
        assert len(result.messages[0].content.encode()) <= 10


class TestItem9MalformedToolResult:
    @pytest.mark.parametrize(
        "result",
        [ToolResult(content="abc"), ToolResult(content=None), ToolResult(content=("x", 1))],  # type: ignore[arg-type]
    )
    def test_becomes_an_error_message(self, result: ToolResult) -> None:
        @tool
        def bad() -> ToolResult:
            """Bad."""
            return result

        [message] = _answered([ToolCall("c", "bad", {})], Registry.of(bad)).messages
        assert message.is_error
        assert "ToolResult.success" in message.content


class _HostileRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr raised")


class _HostileTuple(tuple):  # type: ignore[type-arg]
    def __iter__(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("iter raised")


class _HostileList(list):  # type: ignore[type-arg]
    def __repr__(self) -> str:
        raise RuntimeError("repr raised")


class TestItem9MalformedParts:
    """A result whose parts are malformed in any other way is that call's error too."""

    @pytest.mark.parametrize(
        "result",
        [
            ToolResult(content=(TextBlock(5),)),  # type: ignore[arg-type]
            ToolResult(content=(TextBlock(["x"]),)),  # type: ignore[arg-type]
            ToolResult(follow_up=(TextBlock(None),)),  # type: ignore[arg-type]
            ToolResult(content=(ImageBlock(media_type=3),)),  # type: ignore[arg-type]
            ToolResult(artifacts=(Artifact("a", "not bytes"),)),  # type: ignore[arg-type]
            ToolResult(content=(_HostileRepr(),)),  # type: ignore[arg-type]
            ToolResult(content=_HostileRepr()),  # type: ignore[arg-type]
            ToolResult(content=_HostileList([1])),
            ToolResult(content=_HostileTuple((TextBlock("a"),))),
        ],
        ids=[
            "int-text",
            "list-text",
            "none-follow-up",
            "int-media-type",
            "str-artifact-data",
            "block-repr-raises",
            "content-repr-raises",
            "list-repr-raises",
            "tuple-iter-raises",
        ],
    )
    @pytest.mark.parametrize("hooked", [False, True])
    def test_becomes_an_error_message(self, result: ToolResult, hooked: bool) -> None:
        @tool
        def bad() -> ToolResult:
            """Bad."""
            return result

        middleware = [tinytools.after_tool(lambda call, given, env: given)] if hooked else []
        calls = [ToolCall("c", "bad", {}), ToolCall("d", "bad", {})]
        for message in _answered(calls, Registry.of(bad), middleware=middleware).messages:
            assert message.is_error
            assert "Tool `bad` returned a bad value" in message.content
