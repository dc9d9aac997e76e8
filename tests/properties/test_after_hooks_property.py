"""Property: an ``after_tool`` hook that hands the result back (the same object, or an
equal copy) changes nothing in a dispatch's answer, whatever the tool returned.

The fold makes the message of a plain return value directly and, when hooks see the
value, reads the hooks' result back only when they changed it: the two ways must agree
with each other and with a dispatch without middleware — text, structured output,
byte limit, lone surrogates and values JSON cannot carry (answered as errors) included.
"""

from __future__ import annotations

import enum

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from tests.json_strategies import json_values
from tinytools import (
    Registry,
    RunPolicy,
    ToolCall,
    ToolResult,
    after_tool,
    dispatch_sync,
    tool,
)


class Mood(str, enum.Enum):
    CALM = "calm"


RETURNS = st.one_of(
    json_values(),
    st.text(),
    st.sampled_from(["caf\u00e9", "lone \udc80", Mood.CALM, float("nan"), float("inf"), {1}]),
)


def _same(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
    return result


def _copy(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
    return msgspec.structs.replace(result)


@given(value=RETURNS, limit=st.none() | st.integers(min_value=1, max_value=120))
def test_pass_through_hooks_change_nothing(value: object, limit: int | None) -> None:
    """Without hooks, with a hook returning the result, with one returning a copy: the
    same messages and events, and the result encodes."""

    def give() -> object:
        return value

    registry = Registry([tool(give)])
    calls = [ToolCall("c1", "give", "{}")]
    policy = RunPolicy(max_result_bytes=limit)
    bare = dispatch_sync(calls, registry, policy=policy)
    for hook in (_same, _copy):
        hooked = dispatch_sync(calls, registry, policy=policy, middleware=[after_tool(hook)])
        assert hooked.messages == bare.messages
        assert hooked.events == bare.events
    assert msgspec.json.encode(bare.messages)
    if limit is not None:
        assert len(bare.messages[0].content.encode("utf-8", "surrogatepass")) <= limit
