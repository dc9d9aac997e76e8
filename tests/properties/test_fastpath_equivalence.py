"""Property tests for `tinytools._fastpath`: it gives exactly the general path's result."""

from __future__ import annotations

import anyio.lowlevel
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools import (
    DispatchAborted,
    FatalToolError,
    ModelRetry,
    Registry,
    RetryableError,
    RunPolicy,
    ToolCall,
    ToolResult,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools.events import ToolFailed

attempts: dict[str, int] = {}


@tool
def add(a: int, b: int = 1) -> int:
    """Add."""
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case."""
    return text.upper()


@tool
def broken(a: int) -> int:
    """Raise."""
    raise ValueError(f"bad {a}")


@tool
def picky(a: int) -> int:
    """Ask the model to retry."""
    raise ModelRetry("try another")


@tool(max_retries=2)
def flaky(key: str) -> str:
    """Fail once per key, then succeed."""
    attempts[key] = attempts.get(key, 0) + 1
    if attempts[key] == 1:
        raise RetryableError("busy")
    return "ok"


@tool
def rich(a: int) -> ToolResult:
    """Return a full result."""
    return ToolResult.success(f"rich {a}", follow_up="look", metadata={"a": a})


@tool
def opaque(a: int) -> object:
    """Return a value JSON cannot encode."""
    return object()


@tool
def nothing(a: int) -> None:
    """Return None (no structured output)."""


@tool
async def later(a: int) -> int:
    """An async tool."""
    return a * 2


@tool
async def a_broken(a: int) -> int:
    """An async tool that raises."""
    await anyio.lowlevel.checkpoint()
    raise ValueError(f"bad {a}")


@tool(max_retries=2)
async def a_flaky(key: str) -> str:
    """An async tool that fails once per key, then succeeds."""
    await anyio.lowlevel.checkpoint()
    attempts["a" + key] = attempts.get("a" + key, 0) + 1
    if attempts["a" + key] == 1:
        raise RetryableError("busy")
    return "ok"


@tool
async def a_rich(a: int) -> ToolResult:
    """An async tool returning a full result."""
    await anyio.lowlevel.checkpoint()
    return ToolResult.success(f"rich {a}", metadata={"a": a})


@tool
async def a_nothing(a: int) -> None:
    """An async tool returning None."""
    await anyio.lowlevel.checkpoint()


@tool
async def a_fatal(a: int) -> int:
    """An async tool that aborts the batch."""
    raise FatalToolError("stop everything")


TOOLS = Registry.of(
    add,
    shout,
    broken,
    picky,
    flaky,
    rich,
    opaque,
    nothing,
    later,
    a_broken,
    a_flaky,
    a_rich,
    a_nothing,
    a_fatal,
)
POLICY = RunPolicy(retry_base_delay=0)
GENERAL = [before_tool(lambda call, env: call)]  # any middleware forces the general path

ARGS = {
    "add": st.fixed_dictionaries({"a": st.integers(-9, 9)}),
    "shout": st.fixed_dictionaries({"text": st.text(max_size=5)}),
    "broken": st.fixed_dictionaries({"a": st.integers(0, 3)}),
    "picky": st.fixed_dictionaries({"a": st.integers(0, 3)}),
    "flaky": st.fixed_dictionaries({"key": st.sampled_from(["k1", "k2"])}),
    "rich": st.fixed_dictionaries({"a": st.integers(0, 3)}),
    "opaque": st.fixed_dictionaries({"a": st.integers(0, 3)}),
    "nothing": st.fixed_dictionaries({"a": st.integers(0, 3)}),
    "later": st.fixed_dictionaries({"a": st.integers(0, 3)}),
    "a_broken": st.fixed_dictionaries({"a": st.integers(0, 3)}),
    "a_flaky": st.fixed_dictionaries({"key": st.sampled_from(["k1", "k2"])}),
    "a_rich": st.fixed_dictionaries({"a": st.integers(0, 3)}),
    "a_nothing": st.fixed_dictionaries({"a": st.integers(0, 3)}),
}
ASYNC = ["later", "a_broken", "a_flaky", "a_rich", "a_nothing"]


@st.composite
def calls(draw: st.DrawFn, names: list[str]) -> list[ToolCall]:
    """A batch: mostly valid calls, sometimes unknown names, bad arguments or repeated ids."""
    batch = []
    for i in range(draw(st.integers(0, 6))):
        name = draw(st.sampled_from([*names, "nope"]))
        arguments: object = draw(ARGS[name]) if name in ARGS else {}
        if draw(st.integers(0, 9)) == 0:
            arguments = "{not json"
        raw = arguments if isinstance(arguments, str) else msgspec.json.encode(arguments).decode()
        call_id = f"c{i}" if draw(st.integers(0, 19)) else "c0"
        batch.append(ToolCall(call_id, name, raw))
    return batch


def comparable(result: object) -> object:
    """A result with tracebacks removed (their frames differ between the two paths)."""
    events = tuple(
        msgspec.structs.replace(e, traceback=None) if isinstance(e, ToolFailed) else e
        for e in result.events  # type: ignore[attr-defined]
    )
    return (
        result.messages,  # type: ignore[attr-defined]
        events,
        result.deferred,  # type: ignore[attr-defined]
        result.follow_ups,  # type: ignore[attr-defined]
        dict(result.metadata),  # type: ignore[attr-defined]
        result.executed,  # type: ignore[attr-defined]
    )


SYNC = [n for n in ARGS if n not in ASYNC]
CONCURRENT = RunPolicy(retry_base_delay=0, max_concurrency=8)


def unordered(result: object) -> object:
    """A result whose events are compared as a multiset (concurrent order is arbitrary)."""
    messages, events, *rest = comparable(result)  # type: ignore[misc]
    return (messages, sorted(map(repr, events)), *rest)


async def outcome(batch: list[ToolCall], **kwargs: object) -> object:
    """The result of ``dispatch``, or the result its ``DispatchAborted`` carries."""
    try:
        return await dispatch(batch, TOOLS, **kwargs)  # type: ignore[arg-type]
    except DispatchAborted as aborted:
        return aborted.result


class TestFastPathEquivalence:
    @settings(max_examples=300, deadline=None)
    @given(batch=calls(SYNC))
    def test_dispatch_sync(self, batch: list[ToolCall]) -> None:
        """dispatch_sync gives the same result with and without the fast path."""
        attempts.clear()
        fast = dispatch_sync(batch, TOOLS, policy=POLICY)
        attempts.clear()
        general = dispatch_sync(batch, TOOLS, policy=POLICY, middleware=GENERAL)
        assert comparable(general) == comparable(fast)

    @pytest.mark.anyio
    @settings(max_examples=100, deadline=None)
    @given(batch=calls(list(ARGS)))
    async def test_dispatch(self, batch: list[ToolCall]) -> None:
        """await dispatch gives the same result with and without the fast path."""
        attempts.clear()
        fast = await dispatch(batch, TOOLS, policy=POLICY)
        attempts.clear()
        general = await dispatch(batch, TOOLS, policy=POLICY, middleware=GENERAL)
        assert comparable(general) == comparable(fast)

    @pytest.mark.anyio
    @settings(max_examples=150, deadline=None)
    @given(batch=calls(ASYNC), fatal=st.booleans())
    async def test_dispatch_concurrent(self, batch: list[ToolCall], fatal: bool) -> None:
        """A concurrent batch of async tools gives the same answers on both paths."""
        # Concurrent calls must not share a flaky key: which one fails first would then
        # depend on scheduling, on either path.
        batch = [
            msgspec.structs.replace(c, arguments=f'{{"key": "{c.id}"}}')
            if c.name == "a_flaky" and c.arguments != "{not json"
            else c
            for c in batch
        ]
        if fatal and batch:
            batch = [*batch, ToolCall("fatal", "a_fatal", '{"a": 1}')]
        attempts.clear()
        fast = await outcome(batch, policy=CONCURRENT)
        attempts.clear()
        general = await outcome(batch, policy=CONCURRENT, middleware=GENERAL)
        if fatal and batch:
            # Which siblings a fatal call cuts off depends on scheduling: compare the rest.
            assert [m.tool_call_id for m in general.messages] == [  # type: ignore[attr-defined]
                m.tool_call_id
                for m in fast.messages  # type: ignore[attr-defined]
            ]
            assert general.messages[-1] == fast.messages[-1]  # type: ignore[attr-defined]
            return
        assert unordered(general) == unordered(fast)
