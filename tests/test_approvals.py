"""Tests for `tinytools._approvals` and resuming deferred calls through dispatch."""

from __future__ import annotations

import pytest

from tinytools import (
    ApprovalRequired,
    DeferredToolRequests,
    DeferredToolResults,
    Deny,
    DispatchEnv,
    Inject,
    Registry,
    RunContext,
    Tool,
    ToolCall,
    ToolPolicy,
    ToolResult,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools.events import ToolApproved, ToolCompleted, ToolDenied, ToolStarted

ran: list[object] = []


@tool(policy=ToolPolicy.classified().with_access(approval_required=True))
def pay(amount: int) -> str:
    """Pay (approval required)."""
    ran.append(("pay", amount))
    return f"paid {amount}"


@tool
def transfer(ctx: Inject[RunContext], amount: int) -> str:
    """Ask for approval from inside, unless approved."""
    if not ctx.approved:
        raise ApprovalRequired({"amount": amount})
    ran.append(("transfer", amount))
    return "moved"


lookup = Tool.from_schema("lookup", "Host-executed.", {"type": "object", "properties": {}})
TOOLS = Registry.of(pay, transfer, lookup)


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def calls() -> list[ToolCall]:
    """A batch where every call is deferred."""
    return [
        ToolCall("1", "pay", '{"amount": 5}'),
        ToolCall("2", "pay", '{"amount": 6}'),
        ToolCall("3", "transfer", '{"amount": 7}'),
        ToolCall("4", "lookup", "{}"),
    ]


def pending() -> DeferredToolRequests:
    """The deferred requests of the batch."""
    first = dispatch_sync(calls(), TOOLS)
    assert first.deferred is not None
    return first.deferred


class TestDeferredToolResults:
    def test_builder_is_copy_on_write(self) -> None:
        """Each builder call returns a new value and leaves the old one unchanged."""
        empty = DeferredToolResults()
        one = empty.approve("1")
        assert ("1" in one, "1" in empty) == (True, False)

    def test_remaining_and_approve_all(self) -> None:
        """remaining lists undecided calls; approve_all approves every approval."""
        requests = pending()
        assert ["4"] == [c.id for c in requests.calls]
        assert ["1", "2", "3"] == [c.id for c in requests.approvals]
        partial = DeferredToolResults().approve("1")
        assert ["4", "2", "3"] == [c.id for c in requests.remaining(partial)]
        assert ["4"] == [c.id for c in requests.remaining(requests.approve_all())]


class TestResume:
    def test_every_decision(self) -> None:
        """Approve, edited args, deny and respond are each answered once, in call order."""
        requests = pending()
        assert [] == ran
        results = (
            DeferredToolResults()
            .approve("1")
            .approve_with_args("2", {"amount": 60})
            .approve("3")
            .respond("4", ToolResult.success("found it"))
        )
        result = dispatch_sync(requests.all, TOOLS, approvals=results)
        contents = {m.tool_call_id: (m.status, m.content) for m in result.messages}
        assert {
            "1": ("ok", "paid 5"),
            "2": ("ok", "paid 60"),
            "3": ("ok", "moved"),
            "4": ("ok", "found it"),
        } == contents
        assert [("pay", 5), ("pay", 60), ("transfer", 7)] == ran
        assert ("1", "2", "3") == result.executed
        assert result.deferred is None

    def test_edited_args_revalidated(self) -> None:
        """Invalid edited arguments are rejected like a model's, and nothing runs."""
        results = DeferredToolResults().approve_with_args("1", {"amount": "lots"})
        result = dispatch_sync(pending().all, TOOLS, approvals=results)
        [message] = result.messages
        assert ("1", "error") == (message.tool_call_id, message.status)
        assert "Expected `integer`, got `string`" in message.content
        assert [] == ran

    def test_deny_goes_through_the_fold(self) -> None:
        """A denial emits ToolDenied, then started/completed, and is never executed."""
        result = dispatch_sync(
            pending().all, TOOLS, approvals=DeferredToolResults().deny("1", "no way")
        )
        [message] = result.messages
        assert ("denied", "no way") == (message.status, message.content)
        assert [ToolDenied, ToolStarted, ToolCompleted] == [type(e) for e in result.events]
        assert () == result.executed

    def test_partial_resolution_stays_pending(self) -> None:
        """Calls the results leave undecided get no message and never run."""
        requests = pending()
        results = DeferredToolResults().approve("2")
        result = dispatch_sync(requests.all, TOOLS, approvals=results)
        assert ["2"] == [m.tool_call_id for m in result.messages]
        assert ["4", "1", "3"] == [c.id for c in requests.remaining(results)]

    def test_resuming_twice_runs_nothing_twice(self) -> None:
        """The same results resume a call once; a second resume neither runs nor answers it."""
        requests = pending()
        results = DeferredToolResults().approve("1")
        first = dispatch_sync(requests.all, TOOLS, approvals=results)
        second = dispatch_sync(requests.all, TOOLS, approvals=results)
        assert (["1"], []) == (
            [m.tool_call_id for m in first.messages],
            [m.tool_call_id for m in second.messages],
        )
        assert [("pay", 5)] == ran

    def test_approved_flag_injected(self) -> None:
        """A tool raising ApprovalRequired sees it was approved and does not ask again."""
        result = dispatch_sync(pending().all, TOOLS, approvals=DeferredToolResults().approve("3"))
        assert [ToolApproved] == [type(e) for e in result.events][:1]
        assert [("transfer", 7)] == ran


class TestInlineHandler:
    def test_sync_handler(self) -> None:
        """on_deferred resolves the batch inline; undecided calls stay deferred."""
        result = dispatch_sync(calls(), TOOLS, on_deferred=lambda requests: requests.approve_all())
        assert ["1", "2", "3"] == [m.tool_call_id for m in result.messages]
        assert result.deferred is not None
        assert ["4"] == [c.id for c in result.deferred.all]
        assert ("1", "2", "3") == result.executed

    @pytest.mark.anyio
    async def test_async_handler(self) -> None:
        """An async on_deferred is awaited under dispatch."""

        async def decide(requests: DeferredToolRequests) -> DeferredToolResults:
            return DeferredToolResults().deny("1", "no").respond("4", "host did it")

        result = await dispatch(calls(), TOOLS, on_deferred=decide)
        assert {"1": "denied", "4": "ok"} == {m.tool_call_id: m.status for m in result.messages}
        assert result.deferred is not None
        assert ["2", "3"] == [c.id for c in result.deferred.approvals]

    @pytest.mark.parametrize("kind", ["list", "generator"])
    def test_middleware_also_judges_the_resumed_calls(self, kind: str) -> None:
        """The inline resume runs the same middleware, even when it came as a generator."""

        def gate(call: ToolCall, env: DispatchEnv) -> object:
            return Deny("still refused") if env.is_call_approved(call.id) else call

        hooks = [before_tool(gate)]
        middleware = hooks if kind == "list" else (hook for hook in hooks)
        result = dispatch_sync(
            calls(), TOOLS, middleware=middleware, on_deferred=lambda r: r.approve_all()
        )
        assert [] == ran  # every approved call was rejected by the gate, none ran
        assert {"1": "denied", "2": "denied", "3": "denied"} == {
            m.tool_call_id: m.status for m in result.messages
        }

    def test_async_handler_refused_by_dispatch_sync(self) -> None:
        """dispatch_sync cannot await an async handler and says so."""

        async def decide(requests: DeferredToolRequests) -> DeferredToolResults:
            return DeferredToolResults()

        with pytest.raises(TypeError, match="await dispatch"):
            dispatch_sync(calls(), TOOLS, on_deferred=decide)
