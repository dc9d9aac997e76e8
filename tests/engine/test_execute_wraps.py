"""Tests for the wrap hooks at execution: a middleware's ``wrap_tool`` around a synchronous
tool, on the thread that runs its body, and ``awrap_tool`` around an async tool, in its
task — on every route, in the caller's context; what they see (the validated arguments,
the outcome), what they may do (skip ``proceed``, call it again, raise), their order, and
the calls they never see (refused, denied, deferred).

Threaded routes run with both batons (``tool_threads``), awaited routes under trio and
asyncio.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from tinytools import (
    ApprovalRequired,
    Defer,
    Deny,
    DispatchAborted,
    FatalToolError,
    RunPolicy,
    TextBlock,
    ToolCall,
    ToolResult,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
    wrap_tool,
)
from tinytools.events import ToolFailed

REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")
SPAN: contextvars.ContextVar[str] = contextvars.ContextVar("span", default="none")


def _body() -> str:
    """What the body reads: the caller's request id and the span a wrap made current."""
    return f"{REQUEST.get()}/{SPAN.get()}"


@tool
def inline(tag: str) -> str:
    """Answer inline."""
    return _body()


@tool(timeout=30)
def timed(tag: str) -> str:
    """Answer on a worker thread (a timeout)."""
    return _body()


@tool(blocking=True)
def blocking(tag: str) -> str:
    """Answer on a worker thread (blocking)."""
    return _body()


@tool
async def awaited(tag: str) -> str:
    """Answer in an async tool."""
    return _body()


@tool(timeout=30)
async def awaited_timed(tag: str) -> str:
    """Answer in an async tool with a timeout."""
    return _body()


TOOLS = [inline, timed, blocking, awaited, awaited_timed]
SYNC = ("inline", "timed", "blocking")
ASYNC = ("awaited", "awaited_timed")


class Spans:
    """A wrap per kind that records what it saw and makes a span current for the body."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, object, str]] = []
        self.results: list[ToolResult] = []

    def wrap_tool(
        self, call: ToolCall, env: object, proceed: Callable[[], ToolResult]
    ) -> ToolResult:
        self.seen.append(("sync", call.name, call.arguments, REQUEST.get()))
        SPAN.set(f"span {call.id}")
        result = proceed()
        self.results.append(result)
        return result

    async def awrap_tool(
        self, call: ToolCall, env: object, proceed: Callable[[], Awaitable[ToolResult]]
    ) -> ToolResult:
        self.seen.append(("async", call.name, call.arguments, REQUEST.get()))
        SPAN.set(f"span {call.id}")
        result = await proceed()
        self.results.append(result)
        return result


def _batch(name: str, size: int = 3) -> list[ToolCall]:
    return [ToolCall(f"c{n}", name, {"tag": f"t{n}"}) for n in range(size)]


@pytest.fixture
def caller() -> Iterator[None]:
    token = REQUEST.set("caller")
    yield
    REQUEST.reset(token)


def _wrapped_everywhere(result: Any, spans: Spans, name: str, size: int = 3) -> None:
    """Every call's wrap saw the caller's context and the validated arguments, the body
    saw both the caller's value and the wrap's span, and nothing reached the caller."""
    assert [m.content for m in result.messages] == [f"caller/span c{n}" for n in range(size)]
    kind = "async" if name in ASYNC else "sync"
    assert sorted(spans.seen, key=lambda s: str(s[2])) == [
        (kind, name, {"tag": f"t{n}"}, "caller") for n in range(size)
    ]
    assert REQUEST.get() == "caller"
    assert SPAN.get() == "none"


# --- the routes ------------------------------------------------------------------------


@pytest.mark.usefixtures("caller", "tool_threads")
class TestRoutes:
    @pytest.mark.parametrize("name", SYNC)
    def test_a_sync_tool_under_dispatch_sync(self, name: str) -> None:
        spans = Spans()
        _wrapped_everywhere(dispatch_sync(_batch(name), TOOLS, middleware=[spans]), spans, name)

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    @pytest.mark.parametrize("name", SYNC + ASYNC)
    @pytest.mark.parametrize("concurrency", [1, 3])
    def test_any_tool_on_dispatch_syncs_event_loop(
        self, backend: Any, name: str, concurrency: int
    ) -> None:
        spans = Spans()
        policy = RunPolicy(max_concurrency=concurrency)
        kwargs: dict[str, Any] = {"policy": policy, "backend": backend, "middleware": [spans]}
        if name in SYNC:  # (an async on_event handler puts sync tools on the loop too)
            kwargs["on_event"] = _async_handler
        _wrapped_everywhere(dispatch_sync(_batch(name), TOOLS, **kwargs), spans, name)

    @pytest.mark.anyio
    @pytest.mark.parametrize("name", SYNC + ASYNC)
    @pytest.mark.parametrize("concurrency", [1, 2, 3])
    async def test_any_tool_under_await_dispatch(self, name: str, concurrency: int) -> None:
        spans = Spans()
        policy = RunPolicy(max_concurrency=concurrency)
        result = await dispatch(_batch(name), TOOLS, policy=policy, middleware=[spans])
        _wrapped_everywhere(result, spans, name)

    @pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
    @pytest.mark.parametrize("options", [{}, {"timeout": 30}], ids=["inline", "timed"])
    def test_retries_run_inside_one_proceed(self, is_async: bool, options: dict[str, Any]) -> None:
        """``proceed`` runs the tool's retries: the wrap runs once per call and sees the
        final success; every attempt reads the wrap's span."""
        seen: list[str] = []

        def attempt() -> str:
            seen.append(SPAN.get())
            if len(seen) == 1:
                from tinytools import RetryableError

                raise RetryableError("again")
            return "done"

        if is_async:

            async def flaky_async() -> str:
                """Fail once."""
                return attempt()

            flaky = tool(name="flaky", max_retries=2, **options)(flaky_async)
        else:

            def flaky() -> str:  # type: ignore[misc]
                """Fail once."""
                return attempt()

            flaky = tool(max_retries=2, **options)(flaky)
        spans = Spans()
        result = dispatch_sync(
            [ToolCall("c0", "flaky", {})],
            [flaky],
            middleware=[spans],
            policy=RunPolicy(retry_base_delay=0),
        )
        assert [m.content for m in result.messages] == ["done"]
        assert seen == ["span c0", "span c0"]
        assert len(spans.seen) == 1
        assert [_texts(r) for r in spans.results] == [["done"]]


async def _async_handler(event: object) -> None:
    """An async ``on_event`` handler: the batch runs on dispatch_sync's event loop."""


# --- what a wrap sees and does ---------------------------------------------------------


@tool
def divide(a: int, b: int = 2) -> float:
    """Divide."""
    return a / b


def _texts(result: ToolResult) -> list[str]:
    return [getattr(block, "text", "") for block in result.content]


class TestWhatAWrapSeesAndDoes:
    def test_it_sees_the_validated_arguments_and_the_success(self) -> None:
        """Relaxed JSON repaired, a default filled in: the wrap gets the arguments the
        tool is called with, and ``proceed`` the value as a result."""
        got: list[tuple[ToolCall, ToolResult]] = []

        def spy(call: ToolCall, env: object, proceed: Callable[[], ToolResult]) -> ToolResult:
            result = proceed()
            got.append((call, result))
            return result

        calls = [ToolCall("c0", "divide", "{'a': 9,}")]
        result = dispatch_sync(calls, [divide], middleware=[wrap_tool(spy)])
        assert result.messages[0].content == "4.5"
        ((call, seen),) = got
        assert (call.id, call.name, call.arguments) == ("c0", "divide", {"a": 9, "b": 2})
        assert not seen.is_error
        assert seen.structured == 4.5

    def test_it_sees_a_failure_with_the_exception_type_and_the_event_keeps_it(self) -> None:
        got: list[ToolResult] = []

        def spy(call: ToolCall, env: object, proceed: Callable[[], ToolResult]) -> ToolResult:
            got.append(proceed())
            return got[-1]

        events: list[object] = []
        calls = [ToolCall("c0", "divide", {"a": 1, "b": 0})]
        result = dispatch_sync(calls, [divide], middleware=[wrap_tool(spy)], on_event=events.append)
        assert got[0].is_error
        assert "ZeroDivisionError" in _texts(got[0])[0]
        assert result.messages[0].is_error
        (failed,) = [e for e in events if isinstance(e, ToolFailed)]
        assert failed.error_type == "ZeroDivisionError"
        assert failed.traceback is not None
        assert "ZeroDivisionError" in failed.traceback

    def test_it_may_skip_proceed(self) -> None:
        """A cache: the tool never runs, the wrap's result is the answer."""
        ran: list[object] = []

        @tool
        def costly(q: str) -> str:
            """Costly."""
            ran.append(q)
            return "fresh"

        def cache(call: ToolCall, env: object, proceed: Callable[[], ToolResult]) -> ToolResult:
            return ToolResult(content=(TextBlock("cached"),))

        result = dispatch_sync(
            [ToolCall("c0", "costly", {"q": "x"})], [costly], middleware=[wrap_tool(cache)]
        )
        assert result.messages[0].content == "cached"
        assert ran == []

    @pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
    def test_a_proceed_kept_past_its_call_refuses_to_run_the_tool(self, is_async: bool) -> None:
        """A wrap that keeps ``proceed`` and calls it after the call ended gets a clear
        error; the tool does not run again outside dispatch (it did: no event, no row)."""
        ran: list[int] = []
        kept: list[Callable[[], Any]] = []

        @tool
        def count(n: int) -> int:
            """Count."""
            ran.append(n)
            return n

        @tool
        async def acount(n: int) -> int:
            """Count."""
            ran.append(n)
            return n

        def keep(call: ToolCall, env: object, proceed: Callable[[], ToolResult]) -> ToolResult:
            kept.append(proceed)
            return proceed()

        async def akeep(
            call: ToolCall, env: object, proceed: Callable[[], Awaitable[ToolResult]]
        ) -> ToolResult:
            kept.append(proceed)
            return await proceed()

        subject, hook = (acount, akeep) if is_async else (count, keep)
        calls = [ToolCall("c0", subject.name, {"n": 1})]
        result = dispatch_sync(calls, [subject], middleware=[wrap_tool(hook)])
        assert ["1"] == [m.content for m in result.messages]
        late = kept[0]
        again = (lambda: asyncio.run(late())) if is_async else late
        with pytest.raises(RuntimeError, match=r"proceed\(\) of the call 'c0'.*after that call"):
            again()
        assert [1] == ran

    @pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
    def test_it_may_call_proceed_again(self, is_async: bool) -> None:
        attempts: list[int] = []

        def flaky_body() -> str:
            attempts.append(1)
            if len(attempts) < 3:
                raise ValueError("not yet")
            return "ok"

        if is_async:

            async def flaky_async() -> str:
                """Flaky."""
                return flaky_body()

            flaky = tool(name="flaky")(flaky_async)

            async def again_async(
                call: ToolCall, env: object, proceed: Callable[[], Awaitable[ToolResult]]
            ) -> ToolResult:
                result = await proceed()
                while result.is_error:
                    result = await proceed()
                return result

            middleware = wrap_tool(again_async)
        else:

            def flaky() -> str:  # type: ignore[misc]
                """Flaky."""
                return flaky_body()

            flaky = tool(flaky)

            def again(call: ToolCall, env: object, proceed: Callable[[], ToolResult]) -> ToolResult:
                result = proceed()
                while result.is_error:
                    result = proceed()
                return result

            middleware = wrap_tool(again)
        result = dispatch_sync([ToolCall("c0", "flaky", {})], [flaky], middleware=[middleware])
        assert result.messages[0].content == "ok"
        assert len(attempts) == 3

    @pytest.mark.parametrize("name", ["divide", "adivide"])
    def test_what_it_raises_fails_the_call_as_if_the_tool_had_raised(self, name: str) -> None:
        @tool
        async def adivide(a: int, b: int = 2) -> float:
            """Divide."""
            return a / b

        def boom(call: ToolCall, env: object, proceed: Callable[[], ToolResult]) -> ToolResult:
            proceed()
            raise KeyError("wrapped")

        async def aboom(
            call: ToolCall, env: object, proceed: Callable[[], Awaitable[ToolResult]]
        ) -> ToolResult:
            await proceed()
            raise KeyError("wrapped")

        events: list[object] = []
        result = dispatch_sync(
            [ToolCall("c0", name, {"a": 4})],
            [divide, adivide],
            middleware=[wrap_tool(boom), wrap_tool(aboom)],
            on_event=events.append,
        )
        message = result.messages[0]
        assert message.is_error
        assert "KeyError" in message.content
        (failed,) = [e for e in events if isinstance(e, ToolFailed)]
        assert failed.error_type == "KeyError"

    def test_a_fatal_error_it_raises_aborts_the_batch(self) -> None:
        def fatal(call: ToolCall, env: object, proceed: Callable[[], ToolResult]) -> ToolResult:
            raise FatalToolError("stop everything")

        with pytest.raises(DispatchAborted):
            dispatch_sync(
                [ToolCall("c0", "divide", {"a": 4})], [divide], middleware=[wrap_tool(fatal)]
            )

    def test_a_fatal_error_of_the_tool_passed_on_still_aborts_the_batch(self) -> None:
        @tool
        def fatal_tool() -> str:
            """Fail fatally."""
            raise FatalToolError("down")

        spans = Spans()
        with pytest.raises(DispatchAborted):
            dispatch_sync([ToolCall("c0", "fatal_tool", {})], [fatal_tool], middleware=[spans])
        assert spans.results[0].is_error

    def test_a_value_that_is_no_tool_result_fails_the_call(self) -> None:
        def wrong(call: ToolCall, env: object, proceed: Callable[[], ToolResult]) -> ToolResult:
            return "text"  # type: ignore[return-value]

        result = dispatch_sync(
            [ToolCall("c0", "divide", {"a": 4})], [divide], middleware=[wrap_tool(wrong)]
        )
        message = result.messages[0]
        assert message.is_error
        assert "TypeError" in message.content
        assert "ToolResult" in message.content

    def test_wraps_nest_in_middleware_order_the_first_outermost(self) -> None:
        order: list[str] = []

        def named(tag: str) -> object:
            def hook(call: ToolCall, env: object, proceed: Callable[[], ToolResult]) -> ToolResult:
                order.append(f"{tag} in")
                result = proceed()
                order.append(f"{tag} out")
                return result

            return wrap_tool(hook)

        dispatch_sync(
            [ToolCall("c0", "divide", {"a": 4})], [divide], middleware=[named("a"), named("b")]
        )
        assert order == ["a in", "b in", "b out", "a out"]

    def test_a_sync_wrap_does_not_wrap_async_tools_nor_an_async_wrap_sync_ones(self) -> None:
        spans = Spans()
        sync_only = wrap_tool(spans.wrap_tool)
        async_only = wrap_tool(spans.awrap_tool)
        dispatch_sync(_batch("awaited", 1), TOOLS, middleware=[sync_only])
        dispatch_sync(_batch("inline", 1), TOOLS, middleware=[async_only])
        assert spans.seen == []

    def test_a_middleware_with_no_hook_at_all_is_refused_naming_wrap_tool(self) -> None:
        with pytest.raises(TypeError, match="wrap_tool"):
            dispatch_sync(_batch("inline", 1), TOOLS, middleware=[object()])


# --- the calls wraps never see ---------------------------------------------------------


@tool(approval_required=True)
def guarded() -> str:
    """Needs approval."""
    return "ran"


@tool
def postpones() -> str:
    """Raise ApprovalRequired."""
    raise ApprovalRequired({"why": "ask"})


class TestNeverRun:
    @pytest.mark.parametrize(
        "call",
        [
            ToolCall("c0", "nope", {}),  # unknown: refused
            ToolCall("c0", "divide", {"a": "x"}),  # invalid: refused
            ToolCall("c0", "divide", "{not json"),  # malformed: refused
            ToolCall("c0", "guarded", {}),  # approval gate: deferred
        ],
        ids=["unknown", "invalid", "malformed", "approval"],
    )
    def test_for_refused_and_deferred_calls(self, call: ToolCall) -> None:
        spans = Spans()
        dispatch_sync([call], [divide, guarded], middleware=[spans])
        assert spans.seen == []

    @pytest.mark.parametrize("verdict", [Deny("no"), Defer()], ids=["denied", "deferred"])
    def test_for_calls_a_before_hook_denies_or_defers(self, verdict: object) -> None:
        spans = Spans()
        judge = before_tool(lambda call, env: verdict)
        result = dispatch_sync(_batch("inline", 2), TOOLS, middleware=[judge, spans])
        assert spans.seen == []
        if isinstance(verdict, Deny):
            assert [m.status for m in result.messages] == ["denied", "denied"]
        else:
            assert result.deferred is not None
            assert [c.id for c in result.deferred.calls] == ["c0", "c1"]

    def test_a_call_the_tool_postpones_is_postponed_still(self) -> None:
        """The wrap sees a result that is no error (a wrap retrying errors leaves it
        be), its metadata saying so; handed back, the call is postponed."""
        spans = Spans()
        result = dispatch_sync([ToolCall("c0", "postpones", {})], [postpones], middleware=[spans])
        assert result.deferred is not None
        assert [c.id for c in result.deferred.approvals] == ["c0"]
        (seen,) = spans.results
        assert not seen.is_error
        assert seen.metadata == {"postponed": "approval"}


# --- where a wrap runs, and the timeout --------------------------------------------------


def _again(call: ToolCall, env: object, proceed: Callable[[], ToolResult]) -> ToolResult:
    result = proceed()
    return proceed() if result.is_error else result


@pytest.mark.usefixtures("tool_threads")
class TestThreads:
    @pytest.mark.parametrize("awaited", [False, True], ids=["dispatch_sync", "dispatch"])
    def test_a_timeout_bounds_each_proceed_not_the_whole_chain(self, awaited: bool) -> None:
        """Two attempts of 0.9 s each under a 1.5 s timeout: each is within it (the
        caller re-arms its wait when the wrap calls ``proceed`` again), their sum is not."""
        import threading

        import anyio

        attempts: list[int] = []
        pace = threading.Event()  # never set: a wait of the tool's own work time

        @tool(timeout=1.5)
        def slow() -> str:
            """Take 0.9 s; fail the first time."""
            attempts.append(1)
            pace.wait(0.9)
            if len(attempts) == 1:
                raise ValueError("first attempt fails")
            return "ok"

        calls = [ToolCall("c0", "slow", {})]
        middleware = [wrap_tool(_again)]
        if awaited:

            async def main() -> Any:
                return await dispatch(calls, [slow], middleware=middleware)

            result = anyio.run(main)
        else:
            result = dispatch_sync(calls, [slow], middleware=middleware)
        assert result.messages[0].content == "ok"
        assert len(attempts) == 2

    @pytest.mark.anyio
    @pytest.mark.parametrize("options", [{}, {"timeout": 30}], ids=["inline", "timed"])
    async def test_a_retried_sync_tool_with_wraps_runs_on_a_worker_thread_under_a_loop(
        self, options: dict[str, Any]
    ) -> None:
        """Its wraps and body share one thread, never the loop's: a backoff between its
        attempts waits there, not on the event loop."""
        import threading

        from tinytools import RetryableError

        threads: list[tuple[str, int]] = []

        @tool(max_retries=1, **options)
        def flaky() -> str:
            """Fail once."""
            threads.append(("body", threading.get_ident()))
            if len(threads) == 2:
                raise RetryableError("again")
            return "ok"

        def where(call: ToolCall, env: object, proceed: Callable[[], ToolResult]) -> ToolResult:
            threads.append(("wrap", threading.get_ident()))
            return proceed()

        loop_thread = threading.get_ident()
        result = await dispatch(
            [ToolCall("c0", "flaky", {})],
            [flaky],
            middleware=[wrap_tool(where)],
            policy=RunPolicy(retry_base_delay=0),
        )
        assert result.messages[0].content == "ok"
        assert [kind for kind, _ in threads] == ["wrap", "body", "body"]
        assert len({ident for _, ident in threads}) == 1
        assert threads[0][1] != loop_thread
