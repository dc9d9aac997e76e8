"""A dispatch leaves no reference cycle behind: its state is freed when the result is.

Every object a cycle holds waits for the cyclic garbage collector, which then walks it:
under load that costs more than the dispatch itself (each dispatch with an ``on_event``
handler once left its whole state in one).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tinytools import Registry, RunPolicy, ToolCall, after_tool, before_tool, dispatch_sync, tool
from tinytools.events import Event


@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


@tool
def broken(a: int) -> int:
    """Always fails."""
    raise ValueError("no")


REGISTRY = Registry([add, broken])
SEEN: list[Event] = []


def _keep(call: ToolCall, env: object) -> ToolCall:
    return call


def _same(call: ToolCall, result: object, env: object) -> object:
    return result


@pytest.fixture
def no_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize(
    "keywords",
    [
        {},
        {"on_event": SEEN.append},
        {"middleware": [before_tool(_keep), after_tool(_same)]},
        {"policy": RunPolicy(max_tool_calls=8, allowlist={"add"})},
        {"advertised": {"add"}},
    ],
    ids=["plain", "on_event", "middleware", "policy", "advertised"],
)
@pytest.mark.usefixtures("no_collector")
def test_dispatch_leaves_no_cycle(keywords: dict[str, object]) -> None:
    calls = [ToolCall("c1", "add", '{"a": 1}'), ToolCall("c2", "add", '{"a": "x"}')]
    dispatch_sync(calls, REGISTRY, **keywords)  # the first call fills the memos
    result = dispatch_sync(calls, REGISTRY, **keywords)
    assert [m.status for m in result.messages] == ["ok", "error"]
    del result
    assert _left_by_dispatch() == []


#: The modules whose objects make up a dispatch's state.
_STATE_MODULES = frozenset(
    {
        "tinytools._admit",
        "tinytools._dispatch",
        "tinytools._dispatch_env",
        "tinytools._fold",
        "tinytools._run",
    }
)


def _left_by_dispatch() -> list[str]:
    """The types of the dispatch-state objects only the cyclic collector could free.

    Only objects of the engine's state modules count: a worker thread abandoned by an
    earlier test may finish now and leave garbage of its own while the collector is off.
    """
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        return [type(o).__qualname__ for o in gc.garbage if type(o).__module__ in _STATE_MODULES]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
