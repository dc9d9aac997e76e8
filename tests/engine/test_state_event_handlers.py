"""The run's event sink: ``on_event`` handlers of every shape (plain, async, bound,
decorated, returning an awaitable) see the same events."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable

import pytest

from tests.engine.one_add import CALLS, TOOLS
from tinytools import (
    DispatchAborted,
    Registry,
    ToolCall,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools.events import Event, ToolCompleted, ToolStarted

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

    def test_same_handler_every_dispatch(self) -> None:
        """One module-level handler passed to every dispatch gets every event of each;
        an async handler passed between them is still awaited, and a handler that
        returns an awaitable still fails the run."""
        _RECORDED.clear()
        for _ in range(3):
            result = dispatch_sync(CALLS, TOOLS, on_event=_record)
            assert [type(e) for e in result.events] == KINDS
        assert [type(e) for e in _RECORDED] == KINDS * 3
        recorder = Recorder()
        result = dispatch_sync(CALLS, TOOLS, on_event=recorder.asynchronous)
        assert list(result.events) == recorder.seen
        with pytest.raises(DispatchAborted, match="async def"):
            dispatch_sync(CALLS, TOOLS, on_event=lambda event: recorder.asynchronous(event))
        _RECORDED.clear()
        result = dispatch_sync(CALLS, TOOLS, on_event=_record)
        assert _RECORDED == list(result.events)

    def test_handler_object_is_not_kept(self) -> None:
        """Once dispatch returns, nothing of it keeps the handler's object alive (a bound
        method's ``self``, or the list behind ``events.append``)."""
        recorder, bag = Recorder(), _Bag()
        owner, held = weakref.ref(recorder), weakref.ref(bag)
        dispatch_sync(CALLS, TOOLS, on_event=recorder.sync)
        dispatch_sync(CALLS, TOOLS, on_event=bag.append)
        assert len(bag) == len(KINDS)
        del recorder, bag
        assert owner() is None
        assert held() is None

    def test_handler_sees_the_inline_resume(self) -> None:
        """The pass that ``on_deferred`` resumes hands its events to the same handler."""

        @tool(approval_required=True)
        def pay(amount: int) -> int:
            """Pay."""
            return amount

        seen: list[Event] = []
        result = dispatch_sync(
            [ToolCall("p", "pay", '{"amount": 1}')],
            Registry([pay]),
            on_event=seen.append,
            on_deferred=lambda pending: pending.approve_all(),
        )
        assert [m.status for m in result.messages] == ["ok"]
        assert list(result.events) == seen
        assert [type(e) for e in seen][-2:] == KINDS


_RECORDED: list[Event] = []


class _Bag(list[Event]):
    """A list that can be referred to weakly."""


def _record(event: Event) -> None:
    _RECORDED.append(event)


class TestHandlerReturningAnAwaitable:
    """A handler that looks synchronous but returns an awaitable (``lambda e: q.put(e)``)
    lost every event in silence (a "never awaited" warning at best): the batch aborts
    and says to make the handler ``async def``; no tool runs after it."""

    @staticmethod
    def _handler() -> tuple[list[Event], Callable[[Event], object]]:
        seen: list[Event] = []

        async def record(event: Event) -> None:
            seen.append(event)

        return seen, lambda event: record(event)

    def test_dispatch_sync(self) -> None:
        seen, handler = self._handler()
        calls = [ToolCall("c1", "add", '{"a": 1}'), ToolCall("c2", "add", '{"a": 2}')]
        with pytest.raises(DispatchAborted, match="async def") as raised:
            dispatch_sync(calls, TOOLS, on_event=handler)
        assert [m.status for m in raised.value.result.messages] == ["ok", "interrupted"]
        assert seen == []
        # Nothing raised: the reason says what the handler returned (it read "raised").
        assert raised.value.reason.startswith("the on_event handler <lambda> failed: ")
        assert "it returned coroutine, which dispatch does not await" in raised.value.reason
        assert "raised" not in raised.value.reason

    @pytest.mark.anyio
    async def test_dispatch(self) -> None:
        seen, handler = self._handler()
        with pytest.raises(DispatchAborted, match="async def"):
            await dispatch(CALLS, TOOLS, on_event=handler)
        assert seen == []
