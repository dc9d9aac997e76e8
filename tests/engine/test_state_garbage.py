"""A dispatch leaves no reference cycle behind: its state is freed when the result is.

Every object a cycle holds waits for the cyclic garbage collector, which then walks it:
under load that costs more than the dispatch itself (each dispatch with an ``on_event``
handler once left its whole state in one).
"""

from __future__ import annotations

import functools
import gc
import weakref
from collections.abc import Callable, Iterator

import pytest

from tests.engine.one_add import add
from tinytools import (
    Registry,
    RunPolicy,
    ToolCall,
    ToolResult,
    after_tool,
    before_tool,
    dispatch_sync,
    tool,
    wrap_tool,
)
from tinytools.events import Event


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


def _around(call: ToolCall, env: object, proceed: Callable[[], ToolResult]) -> ToolResult:
    return proceed()


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
        {"middleware": [wrap_tool(_around), wrap_tool(_around)]},
        {"policy": RunPolicy(max_tool_calls=8, allowlist={"add"})},
        {"advertised": {"add"}},
    ],
    ids=["plain", "on_event", "middleware", "wraps", "policy", "advertised"],
)
@pytest.mark.usefixtures("no_collector")
def test_dispatch_leaves_no_cycle(keywords: dict[str, object]) -> None:
    calls = [ToolCall("c1", "add", '{"a": 1}'), ToolCall("c2", "add", '{"a": "x"}')]
    dispatch_sync(calls, REGISTRY, **keywords)  # the first call fills the memos
    result = dispatch_sync(calls, REGISTRY, **keywords)
    assert [m.status for m in result.messages] == ["ok", "error"]
    del result
    assert _left_by_dispatch() == []


@pytest.mark.parametrize(
    "policy",
    [RunPolicy(), RunPolicy(tool_timeout=5)],
    ids=["inline", "worker-thread"],
)
@pytest.mark.usefixtures("no_collector")
def test_a_failing_tool_leaves_no_cycle(policy: RunPolicy) -> None:
    # The failure's traceback holds the frames it passed through (and, on CPython, the
    # frames that called them): what keeps the failure while the call's outcome is
    # decided must let it go before returning, or the run stays in a cycle.
    calls = [ToolCall("c1", "broken", '{"a": 1}')]
    dispatch_sync(calls, REGISTRY, policy=policy)  # the first call fills the memos
    result = dispatch_sync(calls, REGISTRY, policy=policy)
    assert result.messages[0].status == "error"
    del result
    assert _left_by_dispatch() == []


#: The modules whose objects make up a dispatch's state.
_STATE_MODULES = frozenset(
    {
        "tinytools._engine.admit.admission",
        "tinytools._engine.api",
        "tinytools._engine.env",
        "tinytools._engine.fold",
        "tinytools._engine.state",
        "tinytools._engine.execute.wraps",
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


class _Host:
    """What an ``on_event`` handler typically closes over: the host's own state."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def record(self, event: Event) -> None:
        self.events.append(event)


class _Recorder:
    """A callable object as ``on_event``."""

    def __init__(self, host: _Host) -> None:
        self.host = host

    def __call__(self, event: Event) -> None:
        self.host.events.append(event)


def _handler(shape: str, host: _Host) -> Callable[[Event], object]:
    if shape == "lambda":
        return lambda event: host.events.append(event)
    if shape == "closure":

        def handler(event: Event) -> None:
            host.events.append(event)

        return handler
    if shape == "partial":
        return functools.partial(_Host.record, host)
    if shape == "callable object":
        return _Recorder(host)
    assert shape == "bound method"
    return host.record


@pytest.mark.parametrize(
    "shape", ["lambda", "closure", "partial", "callable object", "bound method"]
)
def test_dispatch_keeps_no_on_event_handler_alive(shape: str) -> None:
    # The handler, and the host state it closes over, die with the host: no memo of
    # the engine keeps them (a lambda once stayed alive until the next dispatch).
    host = _Host()
    dispatch_sync([ToolCall("c1", "add", '{"a": 1}')], REGISTRY, on_event=_handler(shape, host))
    assert [type(event).__name__ for event in host.events] == ["ToolStarted", "ToolCompleted"]
    gone = weakref.ref(host)
    del host
    gc.collect()
    assert gone() is None


def test_a_dead_handlers_id_is_not_mistaken_for_it() -> None:
    # A synchronous handler dies; an async one made after it may get its id: it is read
    # afresh (its events awaited), never answered from what the dead one was.
    seen: list[Event] = []
    sync = _Recorder(_Host())
    dispatch_sync([ToolCall("c1", "add", '{"a": 1}')], REGISTRY, on_event=sync)
    dead = id(sync)
    del sync
    gc.collect()

    class Async:
        async def __call__(self, event: Event) -> None:
            seen.append(event)

    handlers = [Async() for _ in range(200)]  # keep all: each a distinct address
    handler = next((h for h in handlers if id(h) == dead), handlers[0])
    result = dispatch_sync([ToolCall("c1", "add", '{"a": 1}')], REGISTRY, on_event=handler)
    assert [m.status for m in result.messages] == ["ok"]
    assert seen == list(result.events)


class _SlottedSync:
    """A handler no weak reference can point to (``__slots__`` without ``__weakref__``)."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.seen.append(event)


class _SlottedAsync(_SlottedSync):
    __slots__ = ()

    async def __call__(self, event: Event) -> None:  # type: ignore[override]
        self.seen.append(event)


def test_a_handler_without_weak_references_is_read_each_time() -> None:
    # Alternating, so that no answer about one kind is reused for the other.
    for kind in (_SlottedSync, _SlottedAsync, _SlottedSync, _SlottedAsync):
        handler = kind()
        result = dispatch_sync([ToolCall("c1", "add", '{"a": 1}')], REGISTRY, on_event=handler)
        assert handler.seen == list(result.events)
        assert [type(event).__name__ for event in handler.seen] == ["ToolStarted", "ToolCompleted"]
