"""Folding: values that would make the result unencodable (a lone surrogate, nesting too
deep, a result or event that cannot encode) become that call's error."""

from __future__ import annotations

import msgspec
import pytest

from tests.engine.calls import add, call
from tinytools import (
    Emit,
    Inject,
    ToolResult,
    after_tool,
    dispatch_sync,
    tool,
)


class TestReturnedText:
    @pytest.mark.parametrize("hooked", [False, True])
    def test_a_lone_surrogate_in_returned_text_still_encodes(self, hooked: bool) -> None:
        @tool
        def broken_text() -> str:
            """Return text holding a lone surrogate."""
            return "ok \udc80 end"

        middleware = [after_tool(lambda c, r, e: r)] if hooked else []
        result = dispatch_sync([call("b", "broken_text", {})], [broken_text], middleware=middleware)
        assert result.messages[0].content == "ok \\udc80 end"
        msgspec.json.encode(result)


def _deep(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"a": value}
    return value


class TestWhatNoResultCanCarry:
    """Found by an attack pass: values that reached the result and made it unencodable."""

    def test_arguments_nested_too_deep_are_refused(self) -> None:
        @tool
        def echo(x: object = None) -> str:
            """Echo nothing."""
            return "ran"

        arguments = {"x": _deep(1000)}
        try:  # whether this Python's msgspec can write it depends on its recursion limits
            msgspec.json.encode(arguments)
            writable = True
        except RecursionError:
            writable = False
        result = dispatch_sync([call("d", "echo", arguments)], [echo])
        msgspec.json.encode(result)  # either way, the result encodes
        if not writable:  # what no event could carry never reaches the tool
            assert result.executed == ()
            assert result.messages[0].is_error

    def test_a_deep_return_value_is_that_calls_error(self) -> None:
        @tool
        def deep() -> object:
            """Return something nested past any encoder."""
            value: object = 1
            for _ in range(2000):
                value = [value]
            return value

        try:  # whether this Python's msgspec can write it depends on its recursion limits
            msgspec.json.encode(deep.fn())  # type: ignore[misc]
            writable = True
        except RecursionError:
            writable = False
        result = dispatch_sync([call("d", "deep", {}), call("a", "add", {"a": 1})], [deep, add])
        assert result.messages[1].content == "1"  # never an abort of the batch
        msgspec.json.encode(result)
        if not writable:
            assert result.messages[0].is_error
            assert "returned a bad value" in result.messages[0].content

    @pytest.mark.parametrize("field", ["structured", "metadata"])
    def test_a_tool_result_that_cannot_encode_is_that_calls_error(self, field: str) -> None:
        @tool
        def odd_result() -> object:
            """Return a ToolResult holding something JSON cannot carry."""
            extra = {"structured": object()} if field == "structured" else {}
            metadata = {"x": object()} if field == "metadata" else {}
            return ToolResult(**extra, metadata=metadata)  # type: ignore[arg-type]

        result = dispatch_sync([call("o", "odd_result", {})], [odd_result])
        assert result.messages[0].is_error
        assert f"`{field}` cannot be encoded" in result.messages[0].content
        msgspec.json.encode(result)

    def test_an_emitted_event_must_encode(self) -> None:
        @tool
        def noisy(emit: Inject[Emit]) -> str:
            """Emit something JSON cannot carry."""
            emit("progress", object())
            return "ran"

        result = dispatch_sync([call("n", "noisy", {})], [noisy])
        assert result.messages[0].is_error
        assert "emit('progress', ...) cannot be recorded" in result.messages[0].content
        msgspec.json.encode(result)
