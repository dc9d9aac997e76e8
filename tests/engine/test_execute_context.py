"""Tests for the caller's ``contextvars`` context at execution: every tool body runs in a
copy of the context current when ``dispatch`` / ``dispatch_sync`` was called, on every
route a call can take (inline, a worker thread, trio and asyncio tasks, an async tool
under ``dispatch_sync``, retries, discovery's ``tool_call``), and what a tool sets stays
in its own call.

Threaded routes run with both batons (the compiled one and its pure-Python twin: the
``tool_threads`` fixture), awaited routes under trio and asyncio.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest

from tinytools import (
    Cancellation,
    Exposure,
    Registry,
    RetryableError,
    RunPolicy,
    Tool,
    ToolCall,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools._runtime.threads import ThreadPool
from tinytools.discovery import Discovery

REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")


def _reads_then_sets(tag: str) -> str:
    """What the caller's context says, then a value of the tool's own (which must stay
    in this call's copy)."""
    seen = REQUEST.get()
    REQUEST.set(f"set by {tag}")
    return seen


@tool
def inline(tag: str) -> str:
    """Read the request id inline."""
    return _reads_then_sets(tag)


@tool(timeout=30)
def timed(tag: str) -> str:
    """Read the request id on a worker thread (a timeout)."""
    return _reads_then_sets(tag)


@tool(blocking=True)
def blocking(tag: str) -> str:
    """Read the request id on a worker thread (blocking)."""
    return _reads_then_sets(tag)


@tool
async def awaited(tag: str) -> str:
    """Read the request id in an async tool."""
    return _reads_then_sets(tag)


@tool(timeout=30)
async def awaited_timed(tag: str) -> str:
    """Read the request id in an async tool with a timeout."""
    return _reads_then_sets(tag)


TOOLS = Registry.of(inline, timed, blocking, awaited, awaited_timed)
SYNC_INLINE = ("inline",)
THREADED = ("timed", "blocking")
ASYNC = ("awaited", "awaited_timed")


def _batch(name: str, size: int = 3) -> list[ToolCall]:
    return [ToolCall(f"c{n}", name, {"tag": f"c{n}"}) for n in range(size)]


@pytest.fixture
def caller() -> Iterator[None]:
    """The caller's request id, set for the test and reset after it."""
    token = REQUEST.set("caller")
    yield
    REQUEST.reset(token)


def _saw_the_caller(result: Any, size: int = 3) -> None:
    assert [m.content for m in result.messages] == ["caller"] * size, result.messages
    assert REQUEST.get() == "caller"  # nothing a tool set reached the caller


# --- dispatch_sync ---------------------------------------------------------------------


@pytest.mark.usefixtures("caller")
class TestDispatchSync:
    @pytest.mark.parametrize("run_timeout", [None, 30.0], ids=["plain", "run-timeout"])
    def test_an_inline_tool_runs_in_a_copy_of_the_callers_context(
        self, run_timeout: float | None
    ) -> None:
        """A sync tool run on the caller's thread (a run-wide timeout moves it to a worker
        thread) reads the caller's value, and what it sets stays in its call."""
        policy = RunPolicy(tool_timeout=run_timeout)
        _saw_the_caller(dispatch_sync(_batch("inline"), TOOLS, policy=policy))

    @pytest.mark.parametrize("name", THREADED)
    @pytest.mark.parametrize("shared", [False, True], ids=["", "with-cancellation"])
    def test_a_threaded_tool_runs_in_a_copy_of_the_callers_context(
        self, name: str, shared: bool, tool_threads: ThreadPool
    ) -> None:
        """Defect: a tool run on a worker thread (a timeout, or ``blocking``) read the
        worker's empty context ("unset"), not the caller's."""
        cancellation = Cancellation() if shared else None
        _saw_the_caller(dispatch_sync(_batch(name), TOOLS, cancellation=cancellation))

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    @pytest.mark.parametrize("name", ASYNC)
    @pytest.mark.parametrize("concurrency", [1, 2, 3])
    def test_an_async_tool_under_dispatch_sync_runs_in_a_copy_of_the_callers_context(
        self, backend: Any, name: str, concurrency: int
    ) -> None:
        """An async tool run on dispatch_sync's own event loop, one by one, a few at a
        time or all at once, reads the caller's value."""
        policy = RunPolicy(max_concurrency=concurrency)
        _saw_the_caller(dispatch_sync(_batch(name), TOOLS, policy=policy, backend=backend))

    def test_a_nested_dispatch_runs_its_tools_in_the_outer_tools_context(
        self, tool_threads: ThreadPool
    ) -> None:
        """A tool that dispatches again hands its own context on: the inner tool reads what
        the outer one set before dispatching."""

        @tool(blocking=True)
        def outer() -> str:
            """Dispatch the inner tool."""
            REQUEST.set("outer")
            inner = dispatch_sync([ToolCall("i", "inline", {"tag": "i"})], TOOLS)
            return inner.messages[0].content

        result = dispatch_sync([ToolCall("o", "outer", {})], [outer])
        assert [m.content for m in result.messages] == ["outer"]
        assert REQUEST.get() == "caller"


# --- await dispatch --------------------------------------------------------------------


@pytest.mark.anyio
class TestDispatch:
    @pytest.mark.parametrize("name", SYNC_INLINE + ASYNC)
    @pytest.mark.parametrize("concurrency", [1, 2, 3])
    @pytest.mark.parametrize("shared", [False, True], ids=["", "with-cancellation"])
    async def test_a_call_runs_in_a_copy_of_the_callers_context(
        self, name: str, concurrency: int, shared: bool
    ) -> None:
        """Inline sync tools and async tools — in dispatch's own task, in a task per call,
        in a few tasks taking calls in turn — read the caller's value; what one sets
        stays in its call."""
        token = REQUEST.set("caller")
        try:
            result = await dispatch(
                _batch(name),
                TOOLS,
                policy=RunPolicy(max_concurrency=concurrency),
                cancellation=Cancellation() if shared else None,
            )
            _saw_the_caller(result)
        finally:
            REQUEST.reset(token)

    @pytest.mark.parametrize("name", THREADED)
    @pytest.mark.parametrize("concurrency", [1, 3])
    async def test_a_threaded_tool_runs_in_a_copy_of_the_callers_context(
        self, name: str, concurrency: int, tool_threads: ThreadPool
    ) -> None:
        """Defect: under ``await dispatch`` a tool on a worker thread read "unset"."""
        token = REQUEST.set("caller")
        try:
            policy = RunPolicy(max_concurrency=concurrency)
            _saw_the_caller(await dispatch(_batch(name), TOOLS, policy=policy))
        finally:
            REQUEST.reset(token)

    async def test_the_context_is_the_one_current_when_dispatch_was_called(self) -> None:
        """The context is read once, when dispatch is called, in the caller's task: a value
        a before_tool hook sets later is not the tool's (a wrap hook is the place to set
        one for the tool)."""
        from tinytools import before_tool

        def sets(call: ToolCall, env: object) -> ToolCall:
            REQUEST.set("hook")
            return call

        token = REQUEST.set("caller")
        try:
            result = await dispatch(_batch("awaited", 1), TOOLS, middleware=[before_tool(sets)])
            assert [m.content for m in result.messages] == ["caller"]
        finally:
            REQUEST.reset(token)


# --- retries and discovery -------------------------------------------------------------


def _flaky(is_async: bool, **options: Any) -> tuple[Tool[..., Any], list[str]]:
    """A tool whose first attempt per call raises ``RetryableError``; the values of the
    request id its attempts read."""
    seen: list[str] = []
    failed: set[str] = set()

    def attempt(tag: str) -> str:
        seen.append(REQUEST.get())
        if tag not in failed:
            failed.add(tag)
            raise RetryableError("try again")
        return "done"

    if is_async:

        async def flaky_async(tag: str) -> str:
            """Fail once, then answer."""
            return attempt(tag)

        return tool(name="flaky", max_retries=2, **options)(flaky_async), seen

    def flaky(tag: str) -> str:
        """Fail once, then answer."""
        return attempt(tag)

    return tool(max_retries=2, **options)(flaky), seen


RETRIED: list[tuple[str, bool, dict[str, Any]]] = [
    ("inline", False, {}),
    ("timed", False, {"timeout": 30}),
    ("blocking", False, {"blocking": True}),
    ("awaited", True, {}),
    ("awaited-timed", True, {"timeout": 30}),
]
FAST = RunPolicy(retry_base_delay=0)


@pytest.mark.usefixtures("tool_threads")
@pytest.mark.parametrize(("route", "is_async", "options"), RETRIED, ids=[r[0] for r in RETRIED])
class TestRetries:
    def test_every_attempt_runs_in_the_callers_context_under_dispatch_sync(
        self, route: str, is_async: bool, options: dict[str, Any]
    ) -> None:
        flaky, seen = _flaky(is_async, **options)
        token = REQUEST.set("caller")
        try:
            result = dispatch_sync(_batch("flaky", 2), [flaky], policy=FAST)
        finally:
            REQUEST.reset(token)
        assert [m.content for m in result.messages] == ["done", "done"]
        assert seen == ["caller"] * 4

    @pytest.mark.anyio
    async def test_every_attempt_runs_in_the_callers_context_under_dispatch(
        self, route: str, is_async: bool, options: dict[str, Any]
    ) -> None:
        flaky, seen = _flaky(is_async, **options)
        token = REQUEST.set("caller")
        try:
            result = await dispatch(_batch("flaky", 2), [flaky], policy=FAST)
        finally:
            REQUEST.reset(token)
        assert [m.content for m in result.messages] == ["done", "done"]
        assert seen == ["caller"] * 4


DEFERRED_TOOLS = Discovery(
    Registry([attrs.evolve(t, exposure=Exposure.Deferred) for t in (inline, timed, awaited)])
)


def _via_tool_call(name: str) -> list[ToolCall]:
    return [
        ToolCall(f"c{n}", "tool_call", {"name": name, "arguments": {"tag": f"c{n}"}})
        for n in range(3)
    ]


@pytest.mark.usefixtures("tool_threads")
@pytest.mark.parametrize("name", ["inline", "timed", "awaited"])
class TestDiscovery:
    def test_a_tool_reached_through_tool_call_runs_in_the_callers_context(self, name: str) -> None:
        token = REQUEST.set("caller")
        try:
            _saw_the_caller(dispatch_sync(_via_tool_call(name), DEFERRED_TOOLS))
        finally:
            REQUEST.reset(token)

    @pytest.mark.anyio
    async def test_a_tool_reached_through_tool_call_runs_in_the_callers_context_awaited(
        self, name: str
    ) -> None:
        token = REQUEST.set("caller")
        try:
            _saw_the_caller(await dispatch(_via_tool_call(name), DEFERRED_TOOLS))
        finally:
            REQUEST.reset(token)


def test_the_callers_context_is_read_once_per_dispatch() -> None:
    """Each dispatch reads the context current when it is called: two dispatches with
    different values see each their own."""
    seen: list[str] = []
    for value in ("first", "second"):
        run: Callable[[], object] = lambda: dispatch_sync(_batch("inline", 1), TOOLS)  # noqa: E731
        context = contextvars.copy_context()
        context.run(REQUEST.set, value)
        result = context.run(run)
        seen += [m.content for m in result.messages]  # type: ignore[attr-defined]
    assert seen == ["first", "second"]
