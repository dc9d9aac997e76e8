"""Middleware through dispatch: ``before_tool`` hooks adjust, reject, defer and allow, and
every hook sees the batch-wide inputs through its ``env``."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from tests.engine.dispatch_tools import (
    TOOLS,
    _reset,  # noqa: F401 (autouse: clears `ran`)
    call,
    ran,
)
from tinytools import (
    Allow,
    Context,
    Defer,
    Deny,
    DispatchAborted,
    RunPolicy,
    ToolCall,
    ToolResult,
    after_tool,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
    wrap_tool,
)
from tinytools._engine.env import DispatchEnv
from tinytools.events import (
    Event,
    ToolApproved,
    ToolCompleted,
    ToolDenied,
)


class TestMiddleware:
    def test_before_adjusts_rejects_defers(self) -> None:
        """before_tool may rewrite a call, reject it with a message, or defer it."""

        def gate(c: ToolCall, env: object) -> ToolCall | Deny | Defer:
            if c.id == "1":
                return msgspec.structs.replace(c, arguments='{"a": 10}')
            if c.id == "2":
                return Deny("not today")
            return Defer({"queue": "later"})

        calls = [
            call("1", "add", '{"a": 1}'),
            call("2", "add", '{"a": 1}'),
            call("3", "add", '{"a": 1}'),
        ]
        result = dispatch_sync(calls, TOOLS, middleware=[before_tool(gate)])
        assert ["11", "not today"] == [m.content for m in result.messages]
        assert "denied" == result.messages[1].status
        assert result.deferred is not None
        assert ("3",) == tuple(c.id for c in result.deferred.calls)
        assert {"3": {"queue": "later"}} == result.deferred.metadata
        assert ToolDenied in [type(e) for e in result.events]

    def test_allow_approves_past_the_gate(self) -> None:
        """Allow() goes on approved; Allow(call) goes on with the replacement, approved."""

        def allow(c: ToolCall, env: object) -> Allow:
            return Allow(call("p2", "pay", '{"amount": 3}')) if c.id == "p2" else Allow()

        calls = [call("p1", "pay", '{"amount": 1}'), call("p2", "pay", '{"amount": 2}')]
        result = dispatch_sync(calls, TOOLS, middleware=[before_tool(allow)])
        assert ([("pay", 1), ("pay", 3)], ("p1", "p2")) == (ran, result.executed)
        assert 2 == sum(isinstance(e, ToolApproved) for e in result.events)

    def test_hooks_see_the_batch_wide_inputs(self) -> None:
        """Both hooks get an env with the dispatch's registry, policy, context and
        advertised names; a later dispatch's hooks see its own inputs, not the first's."""
        seen: list[tuple[object, ...]] = []

        def look(env: DispatchEnv) -> None:
            seen.append((env.tools, env.policy, env.context.run_id, env.advertised))

        def before(c: ToolCall, env: DispatchEnv) -> ToolCall:
            look(env)
            return c

        def after(c: ToolCall, result: ToolResult, env: DispatchEnv) -> ToolResult:
            look(env)
            return result

        hooks = [before_tool(before), after_tool(after)]
        policy = RunPolicy(max_tool_calls=3)
        first = dispatch_sync(
            [call("1", "add", '{"a": 1}')],
            TOOLS,
            middleware=hooks,
            policy=policy,
            context=Context(run_id="r1"),
            advertised=["add"],
        )
        second = dispatch_sync([call("2", "add", '{"a": 2}')], TOOLS, middleware=hooks)
        assert ["2", "3"] == [m.content for m in first.messages + second.messages]
        expected = (TOOLS, policy, "r1", frozenset({"add"}))
        assert [expected, expected] == seen[:2]
        assert [(TOOLS, RunPolicy(), None)] * 2 == [(t, p, a) for t, p, _, a in seen[2:]]
        assert seen[2][2] == seen[3][2] != "r1"  # one fresh run id for the second batch

    def test_hooks_get_the_env_alone_not_the_run(self) -> None:
        """Every hook (before, wrap, after) gets one DispatchEnv and nothing more: the
        run's own state (its calls, answers, events, ledger) is not reachable from it."""
        envs: list[object] = []

        def before(c: ToolCall, env: DispatchEnv) -> ToolCall:
            envs.append(env)
            return c

        def wrap(c: ToolCall, env: DispatchEnv, proceed: Callable[[], ToolResult]) -> ToolResult:
            envs.append(env)
            return proceed()

        def after(c: ToolCall, result: ToolResult, env: DispatchEnv) -> ToolResult:
            envs.append(env)
            return result

        hooks = [before_tool(before), wrap_tool(wrap), after_tool(after)]
        result = dispatch_sync([call("1", "add", '{"a": 1}')], TOOLS, middleware=hooks)
        assert ["2"] == [m.content for m in result.messages]
        assert 3 == len(envs)
        assert all(env is envs[0] for env in envs)
        assert type(envs[0]) is DispatchEnv
        for private in ("calls", "answers", "events", "ledger", "verdicts", "emit"):
            assert not hasattr(envs[0], private), private

    def test_hook_may_not_change_the_call_id(self) -> None:
        """A hook returning a call under another id is a TypeError; nothing runs."""

        def swap(c: ToolCall, env: object) -> ToolCall:
            return msgspec.structs.replace(c, id="other")

        with pytest.raises(TypeError, match="changed the call id from '1' to 'other'"):
            dispatch_sync([call("1", "add", '{"a": 1}')], TOOLS, middleware=[before_tool(swap)])
        assert [] == ran

    @pytest.mark.parametrize("outcome", ["yes", Allow, Defer])
    def test_bad_outcome_names_the_vocabulary(self, outcome: object) -> None:
        """A hook returning anything else is a TypeError naming what to return."""
        with pytest.raises(TypeError, match=r"Allow\(\), Allow\(call\), Deny\(message\) or Defer"):
            dispatch_sync(
                [call("1", "add", '{"a": 1}')],
                TOOLS,
                middleware=[before_tool(lambda c, env: outcome)],  # type: ignore[arg-type,return-value]
            )

    def test_defer_for_approval(self) -> None:
        """A Defer of kind "approval" waits among the approvals, not the host calls."""

        def ask(c: ToolCall, env: object) -> Defer:
            return Defer({"asked": True}, kind="approval")

        result = dispatch_sync([call("c", "add", '{"a": 1}')], TOOLS, middleware=[before_tool(ask)])
        assert result.deferred is not None
        assert ((), ("c",)) == (
            result.deferred.calls,
            tuple(c.id for c in result.deferred.approvals),
        )

    def test_repeated_call_id_refused(self) -> None:
        """A call repeating an earlier call's id in the batch is answered and never run."""
        result = dispatch_sync([call("c", "add", '{"a": 1}'), call("c", "add", '{"a": 2}')], TOOLS)
        assert ["ok", "error"] == [m.status for m in result.messages]
        assert "repeats an earlier call's id" in result.messages[1].content
        assert [("add", (1, 1))] == ran

    def test_after_in_reverse_order(self) -> None:
        """after_tool hooks fold like an onion: the last given runs first."""

        def tag(label: str):  # type: ignore[no-untyped-def]
            def hook(c: ToolCall, r: ToolResult, env: object) -> ToolResult:
                return ToolResult.success(r.content[0].text + label)  # type: ignore[union-attr]

            return after_tool(hook)

        result = dispatch_sync(
            [call("c", "add", '{"a": 1}')], TOOLS, middleware=[tag("A"), tag("B")]
        )
        assert "2BA" == result.messages[0].content

    def test_raising_middleware_aborts(self) -> None:
        """A raising hook aborts the batch with every call answered."""

        def broken(c: ToolCall, env: object) -> ToolCall:
            raise RuntimeError("bug")

        with pytest.raises(DispatchAborted) as info:
            dispatch_sync([call("c", "add", '{"a": 1}')], TOOLS, middleware=[before_tool(broken)])
        assert ["interrupted"] == [m.status for m in info.value.result.messages]
        assert isinstance(info.value.__cause__, RuntimeError)

    @pytest.mark.anyio
    @pytest.mark.parametrize("concurrency", [1, 2])
    async def test_abort_names_the_failing_hook(self, concurrency: int) -> None:
        """A raising after_tool hook aborts with a reason naming it, serial or concurrent."""

        def broken(c: ToolCall, result: ToolResult, env: object) -> ToolResult:
            if c.id == "c":
                raise RuntimeError("bug")
            return result

        with pytest.raises(DispatchAborted) as info:
            await dispatch(
                [call("c", "add", '{"a": 1}'), call("d", "add", '{"a": 2}')],
                TOOLS,
                policy=RunPolicy(max_concurrency=concurrency),
                middleware=[after_tool(broken)],
            )
        assert info.value.reason.startswith("after_tool hook ")
        assert "RuntimeError('bug')" in info.value.reason
        assert isinstance(info.value.__cause__, RuntimeError)

    def test_a_failed_call_keeps_its_failure_when_a_hook_raises(self) -> None:
        """A hook that raises on a call whose tool failed does not claim the tool ran: the
        call is answered with the tool's own failure (the batch still aborts)."""

        @tool
        def flaky(x: int) -> int:
            """Fails."""
            raise ValueError("backend down")

        def broken(c: ToolCall, result: ToolResult, env: object) -> ToolResult:
            raise RuntimeError("bug")

        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(
                [call("c", "flaky", '{"x": 1}')], [flaky], middleware=[after_tool(broken)]
            )
        [message] = info.value.result.messages
        assert message.is_error
        assert "backend down" in message.content
        assert "result was lost" not in message.content

    def test_abort_by_a_host_callback_is_not_blamed_on_middleware(self) -> None:
        """An on_event handler that raises aborts the batch, and the reason says so."""

        def fussy(event: Event) -> None:
            if isinstance(event, ToolCompleted):
                raise ValueError("disk full")

        with pytest.raises(DispatchAborted) as info:
            dispatch_sync([call("c", "add", '{"a": 1}')], TOOLS, on_event=fussy)
        assert info.value.reason.startswith("the on_event handler ")
        assert info.value.reason == "the on_event handler fussy raised ValueError('disk full')"
        assert isinstance(info.value.__cause__, ValueError)
        assert [m.tool_call_id for m in info.value.result.messages] == ["c"]

    def test_not_a_middleware(self) -> None:
        """An object without hooks is refused with the fix."""
        with pytest.raises(TypeError, match="before_tool"):
            dispatch_sync([], TOOLS, middleware=[object()])
