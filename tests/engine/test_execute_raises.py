"""Execution: what a tool raises or returns by mistake becomes its call's answer (an exception
whose text raises, a ``BaseException`` subclass, a coroutine from a tool read as
synchronous), and what propagates bare (``KeyboardInterrupt``, ``SystemExit``)."""

from __future__ import annotations

import asyncio
import inspect
import sys

import msgspec
import pytest
import trio
import trio.testing

from tests.engine.calls import add, call, ids
from tinytools import (
    RunPolicy,
    after_tool,
    dispatch,
    dispatch_sync,
    tool,
)


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


class Odd(BaseException):
    """A BaseException that is neither an interrupt nor a cancellation."""


@tool
def unprintable() -> str:
    """Raise an exception whose __str__ raises."""
    raise Unprintable


@tool
def odd() -> str:
    """Raise a plain BaseException subclass."""
    raise Odd("strange")


class TestWhatToolsRaise:
    def test_an_exception_whose_str_raises_is_that_calls_error(self) -> None:
        """Defect: an exception whose __str__ raises aborted the whole batch."""
        result = dispatch_sync(
            [call("u", "unprintable", {}), call("a", "add", {"a": 1})], [unprintable, add]
        )
        assert ["u", "a"] == ids(result)
        failed, done = result.messages
        assert failed.is_error
        assert "Unprintable" in failed.content
        assert done.content == "1"
        msgspec.json.encode(result.events)

    def test_a_base_exception_subclass_is_that_calls_error(self) -> None:
        """A tool raising a BaseException that is not an interrupt is answered, not raised."""
        result = dispatch_sync([call("o", "odd", {}), call("a", "add", {"a": 2})], [odd, add])
        assert result.messages[0].is_error
        assert "Odd: strange" in result.messages[0].content
        assert result.messages[1].content == "2"

    def test_keyboard_interrupt_propagates_bare_inline(self) -> None:
        @tool
        def interrupted() -> str:
            """Raise KeyboardInterrupt."""
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            dispatch_sync([call("k", "interrupted", {})], [interrupted])

    def test_system_exit_is_bare_under_concurrency(self) -> None:
        """Defect: under concurrency, SystemExit/KeyboardInterrupt came out wrapped in a
        BaseExceptionGroup."""

        @tool
        async def leave() -> str:
            """Exit."""
            raise SystemExit(3)

        @tool
        async def wait() -> str:
            """Yield once."""
            await trio.sleep(0)
            return "ok"

        async def main() -> None:
            await dispatch(
                [call("w", "wait", {}), call("x", "leave", {})],
                [wait, leave],
                policy=RunPolicy(max_concurrency=2),
            )

        with pytest.raises(SystemExit) as info:
            trio.run(main)
        assert type(info.value) is SystemExit
        assert info.value.code == 3

    @pytest.mark.skipif(sys.version_info < (3, 11), reason="3.10 cannot tell a task's own raise")
    def test_a_tools_own_cancelled_error_is_its_failure_under_asyncio(self) -> None:
        """Defect: under asyncio, one tool raising CancelledError marked the whole batch
        cancelled."""

        @tool
        async def rogue() -> str:
            """Raise CancelledError of its own accord."""
            raise asyncio.CancelledError

        @tool
        async def fine() -> str:
            """Yield, then answer."""
            await asyncio.sleep(0)
            return "fine"

        async def main() -> object:
            return await dispatch(
                [call("r", "rogue", {}), call("f", "fine", {})],
                [rogue, fine],
                policy=RunPolicy(max_concurrency=2),
            )

        result = asyncio.run(main())
        rogue_answer, fine_answer = result.messages  # type: ignore[attr-defined]
        assert rogue_answer.status == "error"
        assert "CancelledError" in rogue_answer.content
        assert fine_answer.content == "fine"
        assert fine_answer.status == "ok"


class TestReturnedAwaitable:
    @pytest.mark.parametrize("hooked", [False, True])
    @pytest.mark.anyio
    async def test_a_coroutine_from_a_tool_read_as_sync_is_closed_and_explained(
        self, hooked: bool
    ) -> None:
        """A wrapper that hides an ``async def`` (no ``functools.wraps``) makes a tool read
        as synchronous, whose return value is a coroutine: dispatch cannot await what it
        did not plan for, so the call is an error saying how to declare the tool, and the
        coroutine is closed (it was left to warn "never awaited")."""
        made: list[object] = []

        async def lookup(a: int) -> int:
            return a

        def hidden(a: int) -> int:
            """A sync-looking wrapper of an async function."""
            coroutine = lookup(a)
            made.append(coroutine)
            return coroutine  # type: ignore[return-value]

        wrapped = tool(hidden)
        middleware = [after_tool(lambda c, r, e: r)] if hooked else []
        for result in (
            dispatch_sync([call("1", "hidden", {"a": 1})], [wrapped], middleware=middleware),
            await dispatch([call("1", "hidden", {"a": 1})], [wrapped], middleware=middleware),
        ):
            (message,) = result.messages
            assert message.is_error
            assert "async def" in message.content
        assert [inspect.getcoroutinestate(c) for c in made] == [inspect.CORO_CLOSED] * 2  # type: ignore[arg-type]
