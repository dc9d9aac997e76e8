"""Admission's ``before_tool`` walk: chains of hooks answering every way, and
``ToolPolicyMiddleware``'s rules."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import msgspec
import pytest

from tests.engine.one_add import CALLS, TOOLS
from tinytools import (
    Allow,
    Context,
    Defer,
    Deny,
    Registry,
    ToolCall,
    ToolPolicy,
    ToolPolicyMiddleware,
    Workspace,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools._engine.env import DispatchEnv


def _answer(kind: str) -> Callable[[ToolCall, object], object]:
    def hook(call: ToolCall, env: object) -> object:
        if kind == "same":
            return call
        if kind == "adjusted":
            return msgspec.structs.replace(call, arguments={"a": 5})
        if kind == "allow":
            return Allow()
        if kind == "deny":
            return Deny("no")
        return Defer({"why": "later"})

    return hook


KINDS_OF_ANSWER = ["same", "adjusted", "allow", "deny", "defer"]


CHAINS = [(a,) for a in KINDS_OF_ANSWER] + [
    (a, b) for a in KINDS_OF_ANSWER for b in KINDS_OF_ANSWER if a not in ("deny", "defer")
]


class TestBeforeHookChains:
    """``dispatch_sync`` and ``dispatch`` agree on every chain of ``before_tool`` answers."""

    @pytest.mark.parametrize("chain", CHAINS, ids="-".join)
    @pytest.mark.anyio
    async def test_sync_matches_async(self, chain: tuple[str, ...]) -> None:
        """Same messages, events and deferred calls, whichever entry point ran the hooks."""
        middleware = [before_tool(_answer(kind)) for kind in chain]
        synced = dispatch_sync(CALLS, TOOLS, middleware=middleware)
        awaited = await dispatch(CALLS, TOOLS, middleware=middleware)
        assert synced == awaited
        if "deny" in chain:
            assert synced.messages[0].status == "denied"
        elif "defer" in chain:
            assert synced.deferred is not None
        else:
            assert synced.messages[0].content == ("6" if "adjusted" in chain else "2")

    @pytest.mark.anyio
    async def test_an_approval_covers_the_call_as_it_stood(self) -> None:
        """A hook approves the call (``env.approved``) and hands it back; a later hook
        changes its arguments: the approval covered the call as it was, so the changed
        call waits for approval under both entry points (``dispatch`` let it run)."""
        ran: list[int] = []

        @tool(approval_required=True)
        def pay(amount: int) -> int:
            """Pay."""
            ran.append(amount)
            return amount

        def approve(call: ToolCall, env: DispatchEnv) -> ToolCall:
            env.approved.add(call.id)
            return call

        def change(call: ToolCall, env: object) -> ToolCall:
            return msgspec.structs.replace(call, arguments={"amount": 9})

        middleware = [before_tool(approve), before_tool(change)]
        calls = [ToolCall("p1", "pay", '{"amount": 1}')]
        synced = dispatch_sync(calls, Registry.of(pay), middleware=middleware)
        awaited = await dispatch(calls, Registry.of(pay), middleware=middleware)
        assert synced == awaited
        assert synced.deferred is not None
        assert ["p1"] == [c.id for c in synced.deferred.approvals]
        assert [] == ran


@tool(policy=ToolPolicy.classified().with_runtime(sandbox="required"))
def boxed(text: str) -> str:
    """Echo inside a sandbox."""
    return text


class TestToolPolicyMiddlewareRules:
    """Each rule still acts when only its own hooks are composed."""

    def test_no_rules_changes_nothing(self) -> None:
        """A middleware without rules answers as no middleware."""
        bare = dispatch_sync(CALLS, TOOLS)
        guarded = dispatch_sync(CALLS, TOOLS, middleware=[ToolPolicyMiddleware()])
        assert guarded == bare

    def test_result_bytes_only(self) -> None:
        """``enforce_result_bytes`` alone cuts the text the model reads."""
        calls = [ToolCall("c1", "boxed", {"text": "y" * 200})]
        guard = ToolPolicyMiddleware.enforce_result_bytes(40)
        result = dispatch_sync(calls, Registry([boxed]), middleware=[guard])
        assert len(result.messages[0].content.encode()) <= 40

    @pytest.mark.parametrize("sandboxed", [False, True])
    def test_sandbox_reads_the_workspace(self, sandboxed: bool) -> None:
        """``require_sandbox`` refuses outside a sandboxed workspace, runs inside one."""
        calls = [ToolCall("c1", "boxed", {"text": "hi"})]
        context = Context(values={Workspace: Workspace(sandboxed=sandboxed)})
        guard = ToolPolicyMiddleware.require_sandbox()
        result = dispatch_sync(calls, Registry([boxed]), middleware=[guard], context=context)
        assert result.messages[0].status == ("ok" if sandboxed else "denied")

    def test_deny_side_effects(self) -> None:
        """A denied side effect refuses the tool declaring it, whatever the workspace."""
        calls = [ToolCall("c1", "boxed", {"text": "hi"})]
        networked = attrs.evolve(boxed, policy=boxed.policy.with_side_effects(network=True))
        guard = ToolPolicyMiddleware.deny_side_effects("network")
        result = dispatch_sync(calls, Registry([networked]), middleware=[guard])
        assert result.messages[0].status == "denied"
        assert "network" in result.messages[0].content
