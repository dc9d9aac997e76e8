"""Tests for the features a dispatch adds on top of a plain call: ``on_event`` handlers of
every shape, middleware, and the run policy's trivial limits (answers unchanged by the
shortcuts that keep them cheap)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

from tinytools import Registry, ToolCall, dispatch, dispatch_sync, tool
from tinytools.events import Event, ToolCompleted, ToolStarted


@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


TOOLS = Registry([add])
CALLS = [ToolCall("c1", "add", '{"a": 1}')]
KINDS = [ToolStarted, ToolCompleted]


class Recorder:
    """Handlers of every shape, recording what they are handed."""

    def __init__(self) -> None:
        self.seen: list[Event] = []

    def sync(self, event: Event) -> None:
        self.seen.append(event)

    async def asynchronous(self, event: Event) -> None:
        self.seen.append(event)


def _async_decorated(recorder: Recorder) -> Callable[[Event], object]:
    """An async handler behind a ``functools.wraps`` decorator (sync on the outside)."""

    async def record(event: Event) -> None:
        recorder.seen.append(event)

    @functools.wraps(record)
    def wrapper(event: Event) -> object:
        return record(event)

    return wrapper


class TestEventHandlerShapes:
    """Each handler shape gets every event, in order: sync ones called, async ones awaited."""

    def test_bound_method(self) -> None:
        """A bound method, made afresh for each dispatch, is called."""
        recorder = Recorder()
        for _ in range(2):
            result = dispatch_sync(CALLS, TOOLS, on_event=recorder.sync)
            assert [type(e) for e in result.events] == KINDS
        assert [type(e) for e in recorder.seen] == KINDS * 2

    def test_builtin(self) -> None:
        """A builtin (``list.append``) is called."""
        seen: list[Event] = []
        result = dispatch_sync(CALLS, TOOLS, on_event=seen.append)
        assert list(result.events) == seen

    def test_lambda(self) -> None:
        """A lambda made per dispatch is called."""
        seen: list[Event] = []
        result = dispatch_sync(CALLS, TOOLS, on_event=lambda event: seen.append(event))
        assert list(result.events) == seen

    def test_async_bound_method_under_dispatch_sync(self) -> None:
        """An async bound method is awaited (dispatch_sync runs it on its loop)."""
        recorder = Recorder()
        result = dispatch_sync(CALLS, TOOLS, on_event=recorder.asynchronous)
        assert list(result.events) == recorder.seen

    @pytest.mark.anyio
    async def test_async_bound_method(self) -> None:
        """An async bound method is awaited under ``dispatch``."""
        recorder = Recorder()
        result = await dispatch(CALLS, TOOLS, on_event=recorder.asynchronous)
        assert list(result.events) == recorder.seen

    def test_decorated_async_function(self) -> None:
        """A ``functools.wraps`` wrapper of an async function is read as async."""
        recorder = Recorder()
        result = dispatch_sync(CALLS, TOOLS, on_event=_async_decorated(recorder))
        assert list(result.events) == recorder.seen

    def test_function_with_attributes(self) -> None:
        """A plain function carrying attributes of its own is still called."""
        seen: list[Event] = []

        def record(event: Event) -> None:
            seen.append(event)

        record.label = "mine"  # type: ignore[attr-defined]
        result = dispatch_sync(CALLS, TOOLS, on_event=record)
        assert list(result.events) == seen
