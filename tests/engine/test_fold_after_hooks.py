"""Folding through ``after_tool`` hooks: a hook returning its result unchanged changes
nothing, and a malformed result from a hook is that call's error."""

from __future__ import annotations

import enum
from collections.abc import Callable

import msgspec
import pytest

from tests.engine.one_add import CALLS, TOOLS
from tinytools import (
    Artifact,
    DispatchAborted,
    Registry,
    RunPolicy,
    TextBlock,
    ToolCall,
    ToolResult,
    after_tool,
    dispatch_sync,
    tool,
)
from tinytools.events import ToolCompleted


class Colour(str, enum.Enum):
    RED = "red"


class PosingAsStr:
    """A value whose ``__class__`` says ``str`` (as a proxy's may): ``isinstance`` is
    fooled, but it is no string."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return str

    def __repr__(self) -> str:
        return "PosingAsStr()"


class _Posing:
    """A value whose ``__class__`` says it is of ``kind``, which it is not."""

    def __init__(self, kind: type) -> None:
        self._kind = kind

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return self._kind

    def __repr__(self) -> str:
        return f"_Posing({self._kind.__name__})"


RETURNS: list[object] = [
    "plain text",
    "caf\u00e9 \u2603",
    "lone \udc80 surrogate",
    Colour.RED,
    ["a", 1, None],
    {"k": [1.5, True]},
    None,
    0,
    "x" * 500,
    float("nan"),
    {1, 2},
    PosingAsStr(),
]


def _returning(value: object) -> Registry:
    def give() -> object:
        return value

    return Registry([tool(give)])


def _copy(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
    return msgspec.structs.replace(result)


def _same(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
    return result


class TestAfterHookPassThrough:
    """An ``after_tool`` hook that hands the result back changes nothing in the answer."""

    @pytest.mark.parametrize("value", RETURNS, ids=repr)
    @pytest.mark.parametrize("hook", [_same, _copy], ids=["same", "copy"])
    @pytest.mark.parametrize("limit", [None, 60])
    def test_answer_as_without_hooks(
        self,
        value: object,
        hook: Callable[[ToolCall, ToolResult, object], ToolResult],
        limit: int | None,
    ) -> None:
        """Message and events are those of the same call without middleware."""
        registry = _returning(value)
        calls = [ToolCall("c1", "give", "{}")]
        policy = RunPolicy(max_result_bytes=limit)
        bare = dispatch_sync(calls, registry, policy=policy)
        hooked = dispatch_sync(calls, registry, policy=policy, middleware=[after_tool(hook)])
        assert hooked.messages == bare.messages
        assert hooked.events == bare.events
        assert msgspec.json.encode(hooked.events)

    @pytest.mark.parametrize("hooked", [False, True])
    def test_a_value_posing_as_a_str_is_that_calls_error(self, hooked: bool) -> None:
        """It is answered as the bad value it is: the batch is not aborted (nor the
        artifact store blamed), and no exception escapes dispatch."""
        middleware = [after_tool(_same)] if hooked else []
        result = dispatch_sync(
            [ToolCall("c1", "give", "{}")], _returning(PosingAsStr()), middleware=middleware
        )
        (message,) = result.messages
        assert message.is_error
        assert "Tool `give` returned a bad value" in message.content
        assert msgspec.json.encode(result)

    @pytest.mark.parametrize(
        "value",
        [
            _Posing(ToolResult),
            ToolResult(content=(_Posing(TextBlock),)),  # type: ignore[arg-type]
            ToolResult(follow_up=(_Posing(TextBlock),)),  # type: ignore[arg-type]
            ToolResult(artifacts=(_Posing(Artifact),)),  # type: ignore[arg-type]
        ],
        ids=["result", "content", "follow_up", "artifacts"],
    )
    @pytest.mark.parametrize("hooked", [False, True])
    def test_a_value_posing_as_a_result_or_its_parts_is_that_calls_error(
        self, value: object, hooked: bool
    ) -> None:
        """A value (or a result's block or artifact) whose ``__class__`` says
        ``ToolResult``, ``TextBlock`` or ``Artifact`` is no such thing: the call is
        answered as the bad value it is, the batch goes on, and the result encodes."""
        middleware = [after_tool(_same)] if hooked else []
        calls = [ToolCall("c1", "give", "{}"), ToolCall("c2", "give", "{}")]
        result = dispatch_sync(calls, _returning(value), middleware=middleware)
        assert [m.tool_call_id for m in result.messages] == ["c1", "c2"]
        for message in result.messages:
            assert message.is_error
            assert "Tool `give` returned a bad value" in message.content
        assert msgspec.json.encode(result)

    def test_hook_sees_the_wrapped_value(self) -> None:
        """The hook receives the text and the structured value, as ``wrap_return`` makes them."""
        seen: list[ToolResult] = []

        def look(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
            seen.append(result)
            return result

        dispatch_sync(CALLS, TOOLS, middleware=[after_tool(look)])
        assert seen == [ToolResult(content=(TextBlock("2"),), structured=2)]

    def test_metadata_added_in_place(self) -> None:
        """Metadata a hook writes into the result it hands back reaches the result and event."""

        def tag(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
            result.metadata["seen"] = True
            return result

        result = dispatch_sync(CALLS, TOOLS, middleware=[after_tool(tag)])
        assert result.metadata == {"c1": {"seen": True}}
        assert isinstance(result.events[-1], ToolCompleted)
        assert result.events[-1].metadata == {"seen": True}

    def test_rewritten_result(self) -> None:
        """A hook's new result is what the model reads."""

        def shout(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
            return ToolResult.success("LOUD", follow_up="later")

        result = dispatch_sync(CALLS, TOOLS, middleware=[after_tool(shout)])
        assert result.messages[0].content == "LOUD"
        assert result.messages[0].artifact is None
        assert result.follow_ups[0].content == (TextBlock("later"),)


def _bad_content(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
    return ToolResult(content="abc")  # type: ignore[arg-type]


def _bad_structured(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
    return ToolResult(content=(TextBlock("ok"),), structured=object())


def _bad_metadata_in_place(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
    result.metadata["when"] = object()
    return result


class TestMalformedHookResults:
    """A malformed ``ToolResult`` from an ``after_tool`` hook aborts the batch naming the
    hook (a host bug), every call still answered and the result still encodable."""

    @pytest.mark.parametrize(
        ("hook", "field"),
        [
            (_bad_content, "content"),
            (_bad_structured, "structured"),
            (_bad_metadata_in_place, "metadata"),
        ],
    )
    def test_aborts_naming_the_hook(
        self, hook: Callable[[ToolCall, ToolResult, object], ToolResult], field: str
    ) -> None:
        """DispatchAborted says an after_tool hook returned the bad field."""
        with pytest.raises(DispatchAborted) as raised:
            dispatch_sync(CALLS, TOOLS, middleware=[after_tool(hook)])
        assert "after_tool" in raised.value.reason
        assert f"an after_tool hook returned a ToolResult whose `{field}`" in raised.value.reason
        result = raised.value.result
        assert [m.tool_call_id for m in result.messages] == ["c1"]
        assert result.messages[0].is_error
        assert msgspec.json.encode(result.messages)

    @pytest.mark.parametrize(
        ("returned", "says"),
        [
            (_Posing(ToolResult), "after_tool hooks return a ToolResult, got _Posing"),
            (ToolResult(content=(TextBlock(5),)), "malformed block or artifact"),  # type: ignore[arg-type]
            (ToolResult(content=(_Posing(TextBlock),)), "whose `content` is (_Posing(TextBlock),)"),  # type: ignore[arg-type]
        ],
        ids=["posing-result", "int-text", "posing-block"],
    )
    def test_aborts_naming_the_hook_whatever_is_malformed(
        self, returned: object, says: str
    ) -> None:
        """A hook's result posing as a ``ToolResult``, or holding a malformed or posing
        block, is the hook's fault (not the artifact store's)."""
        with pytest.raises(DispatchAborted) as raised:
            dispatch_sync(CALLS, TOOLS, middleware=[after_tool(lambda call, result, env: returned)])
        assert "after_tool hook" in raised.value.reason
        assert says in raised.value.reason
        assert "artifact store" not in raised.value.reason
        result = raised.value.result
        assert [m.tool_call_id for m in result.messages] == ["c1"]
        assert msgspec.json.encode(result)
