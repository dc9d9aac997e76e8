"""Tests for `tinytools._human` (`HumanApprovalMiddleware`)."""

from __future__ import annotations

from collections.abc import Awaitable

import attrs
import msgspec
import pytest
import trio
import trio.testing

from tinytools import (
    Allow,
    AnyTool,
    ApprovalOutcome,
    Defer,
    DeferredToolResults,
    Deny,
    DispatchAborted,
    HumanApprovalMiddleware,
    Registry,
    RunPolicy,
    ToolCall,
    ToolPolicy,
    ToolPolicyMiddleware,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools._engine.env import DispatchEnv
from tinytools.events import ToolApproved, ToolDeferred, ToolDenied
from tinytools.testing import check_dispatch_invariants

runs: list[str] = []


@tool(approval_required=True, destructive=True)
def wipe() -> str:
    """Delete everything (needs approval)."""
    runs.append("wipe")
    return "wiped"


@tool(read_only=True)
def look() -> str:
    """Read something (no approval needed)."""
    runs.append("look")
    return "seen"


TOOLS = Registry.of(wipe, look)


@pytest.fixture(autouse=True)
def _reset() -> None:
    runs.clear()


@attrs.frozen
class Human:
    """A scripted human: answers every question with ``outcome`` and records who asked."""

    outcome: ApprovalOutcome
    asked: list[tuple[str, str | None]] = attrs.field(factory=list)

    def __call__(self, call: ToolCall, tool: AnyTool | None) -> ApprovalOutcome:
        """Record the question and answer it."""
        self.asked.append((call.name, None if tool is None else tool.name))
        return self.outcome

    async def later(self, call: ToolCall, tool: AnyTool | None) -> ApprovalOutcome:
        """Answer asynchronously."""
        return self(call, tool)


def wipe_call(call_id: str = "c1") -> ToolCall:
    """A model's call of the approval-required tool."""
    return ToolCall(call_id, "wipe", {})


class TestOutcomes:
    def test_allow(self) -> None:
        """Allow runs the call as approved: ToolApproved, then the tool runs."""
        human = Human(Allow())
        result = dispatch_sync([wipe_call()], TOOLS, middleware=[HumanApprovalMiddleware(human)])
        assert (["wipe"], ["ok"]) == (runs, [m.status for m in result.messages])
        assert [("wipe", "wipe")] == human.asked
        assert 1 == sum(isinstance(e, ToolApproved) for e in result.events)

    def test_deny(self) -> None:
        """Deny answers the model with the message; the tool never runs."""
        human = Human(Deny("the operator said no"))
        result = dispatch_sync([wipe_call()], TOOLS, middleware=[HumanApprovalMiddleware(human)])
        assert ([], ["denied"]) == (runs, [m.status for m in result.messages])
        assert "the operator said no" == result.messages[0].content
        assert ["the operator said no"] == [
            e.message for e in result.events if isinstance(e, ToolDenied)
        ]

    def test_defer(self) -> None:
        """Defer takes the call out of the batch, with its metadata."""
        human = Human(Defer({"ticket": 7}))
        result = dispatch_sync([wipe_call()], TOOLS, middleware=[HumanApprovalMiddleware(human)])
        assert ([], ()) == (runs, result.messages)
        assert result.deferred is not None
        assert (["c1"], {"ticket": 7}) == (
            [c.id for c in result.deferred.all],
            result.deferred.metadata["c1"],
        )
        assert 1 == sum(isinstance(e, ToolDeferred) for e in result.events)

    def test_bad_outcome(self) -> None:
        """A callback answering anything else is a TypeError naming the valid outcomes."""
        middleware = HumanApprovalMiddleware(lambda call, tool: "yes")  # type: ignore[arg-type,return-value]
        with pytest.raises(DispatchAborted) as info:
            dispatch_sync([wipe_call()], TOOLS, middleware=[middleware])
        assert isinstance(info.value.__cause__, TypeError)
        assert "return Allow(), Deny(message) or Defer()" in str(info.value.__cause__)

    @pytest.mark.parametrize(
        "answer",
        [
            lambda call, tool: call,
            lambda call, tool: (call, Allow()),
            lambda call, tool: {"password": "hunter22"},
        ],
        ids=["the call", "a tuple holding it", "its arguments"],
    )
    def test_a_refused_outcome_is_named_by_its_type_only(self, answer: object) -> None:
        """The TypeError refusing a bad outcome names its type, never its contents: they
        may hold the call's arguments, and a secret the tool redacts would reach logs."""

        @tool(policy=ToolPolicy(redact=("password",)).with_access(approval_required=True))
        def login(password: str) -> str:
            """Log in (needs approval)."""
            runs.append("login")
            return "in"

        middleware = HumanApprovalMiddleware(answer)  # type: ignore[arg-type]
        call = ToolCall("c1", "login", {"password": "hunter22"})
        with pytest.raises(DispatchAborted) as info:
            dispatch_sync([call], Registry.of(login), middleware=[middleware])
        error = info.value.__cause__
        assert isinstance(error, TypeError)
        assert "hunter22" not in str(info.value) + str(error)
        assert "return Allow(), Deny(message) or Defer()" in str(error)
        assert f"returned a {type(answer(call, None)).__name__} for call" in str(error)  # type: ignore[operator]
        assert [] == runs

    def test_a_hook_returning_garbage_is_named_by_its_type_only(self) -> None:
        """A ``before_tool`` hook's unusable answer is refused without quoting it."""
        hook = before_tool(lambda call, env: (call,))  # type: ignore[arg-type,return-value]
        call = ToolCall("c1", "look", {"password": "hunter22"})
        with pytest.raises(TypeError, match="returned a tuple; return the call") as info:
            dispatch_sync([call], TOOLS, middleware=[hook])
        assert "hunter22" not in str(info.value)


class TestWhoIsAsked:
    def test_only_approval_required_by_default(self) -> None:
        """By default only tools requiring approval are asked about; others run unasked."""
        human = Human(Deny("no"))
        calls = [ToolCall("c1", "look", {}), wipe_call("c2")]
        result = dispatch_sync(calls, TOOLS, middleware=[HumanApprovalMiddleware(human)])
        assert ([("wipe", "wipe")], ["look"]) == (human.asked, runs)
        assert ["ok", "denied"] == [m.status for m in result.messages]

    def test_every_call(self) -> None:
        """every_call asks about every call; an unknown name comes with no tool."""
        human = Human(Allow())
        calls = [ToolCall("c1", "look", {}), ToolCall("c2", "nope", {})]
        middleware = HumanApprovalMiddleware(human, every_call=True)
        result = dispatch_sync(calls, TOOLS, middleware=[middleware])
        assert [("look", "look"), ("nope", None)] == human.asked
        assert (["look"], ["ok", "error"]) == (runs, [m.status for m in result.messages])

    def test_approved_call_not_asked_again(self) -> None:
        """A call approved on resume passes without asking."""
        human = Human(Deny("no"))
        result = dispatch_sync(
            [wipe_call()],
            TOOLS,
            middleware=[HumanApprovalMiddleware(human)],
            approvals=DeferredToolResults().approve("c1"),
        )
        assert ([], ["wipe"], ["ok"]) == (human.asked, runs, [m.status for m in result.messages])

    def test_allow_satisfies_require_approval(self) -> None:
        """Allow counts as approval for ToolPolicyMiddleware.require_approval after it."""
        middleware = [
            HumanApprovalMiddleware(Human(Allow()), every_call=True),
            ToolPolicyMiddleware.require_approval(),
        ]
        risky = tool(name="risky", policy=ToolPolicy.classified())(lambda: runs.append("risky"))
        dispatch_sync([ToolCall("c1", "risky", {})], Registry.of(risky), middleware=middleware)
        assert ["risky"] == runs


@tool(approval_required=True)
def delete(path: str) -> str:
    """Delete ``path`` (needs approval)."""
    runs.append(f"delete {path}")
    return "deleted"


class TestBinding:
    def test_later_hook_changing_the_call_withdraws_the_approval(self) -> None:
        """Allow approves the call as it stood: a later hook's edit meets the gate again."""

        def widen(call: ToolCall, env: DispatchEnv) -> ToolCall:
            return msgspec.structs.replace(call, arguments={"path": "/"})

        middleware = [HumanApprovalMiddleware(Human(Allow())), before_tool(widen)]
        call = ToolCall("c1", "delete", {"path": "/tmp/x"})
        result = dispatch_sync([call], Registry.of(delete), middleware=middleware)
        assert ([], ()) == (runs, result.executed)
        assert result.deferred is not None
        assert [{"path": "/"}] == [c.arguments for c in result.deferred.approvals]

    def test_later_hook_keeping_the_call_keeps_the_approval(self) -> None:
        """A later hook returning an equal call (even rebuilt) leaves the approval in place."""

        def rebuild(call: ToolCall, env: DispatchEnv) -> ToolCall:
            return ToolCall(call.id, call.name, msgspec.json.encode(call.arguments).decode())

        middleware = [HumanApprovalMiddleware(Human(Allow())), before_tool(rebuild)]
        call = ToolCall("c1", "delete", {"path": "/tmp/x"})
        dispatch_sync([call], Registry.of(delete), middleware=middleware)
        assert ["delete /tmp/x"] == runs

    def test_allow_with_an_edited_call(self) -> None:
        """Allow(call) runs the edited call, approved."""
        edited = ToolCall("c1", "delete", {"path": "/tmp/safe"})
        middleware = [HumanApprovalMiddleware(Human(Allow(edited)))]
        call = ToolCall("c1", "delete", {"path": "/"})
        result = dispatch_sync([call], Registry.of(delete), middleware=middleware)
        assert (["delete /tmp/safe"], ("c1",)) == (runs, result.executed)

    def test_approval_is_per_call(self) -> None:
        """Allowing one call of a batch approves no other call of it."""
        answers = {"c1": Allow(), "c2": Defer()}
        middleware = [HumanApprovalMiddleware(lambda call, tool: answers[call.id])]
        calls = [ToolCall("c1", "delete", {"path": "a"}), ToolCall("c2", "delete", {"path": "a"})]
        result = dispatch_sync(calls, Registry.of(delete), middleware=middleware)
        assert (["delete a"], ("c1",)) == (runs, result.executed)
        assert result.deferred is not None
        assert ["c2"] == [c.id for c in result.deferred.approvals]

    def test_resumed_call_with_other_arguments_is_asked_again(self) -> None:
        """A bound approval does not cover a resumed call with other arguments."""
        human = Human(Defer())
        middleware = [HumanApprovalMiddleware(human)]
        first = dispatch_sync(
            [ToolCall("c1", "delete", {"path": "a"})], Registry.of(delete), middleware=middleware
        )
        assert first.deferred is not None
        results = first.deferred.approve("c1")
        forged = ToolCall("c1", "delete", {"path": "/"})
        resumed = dispatch_sync(
            [forged], Registry.of(delete), middleware=middleware, approvals=results
        )
        assert ([], ()) == (runs, resumed.executed)
        assert resumed.deferred is not None
        assert [forged] == list(resumed.deferred.approvals)
        same = dispatch_sync(
            first.deferred.all, Registry.of(delete), middleware=middleware, approvals=results
        )
        assert (["delete a"], ("c1",)) == (runs, same.executed)


class TestAsync:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("outcome", "status"), [(Allow(), "ok"), (Deny("no"), "denied")], ids=["allow", "deny"]
    )
    async def test_async_callback(self, outcome: ApprovalOutcome, status: str) -> None:
        """An async callback is awaited under dispatch."""
        human = Human(outcome)
        middleware = HumanApprovalMiddleware(human.later)
        result = await dispatch([wipe_call()], TOOLS, middleware=[middleware])
        assert ([("wipe", "wipe")], [status]) == (human.asked, [m.status for m in result.messages])

    @pytest.mark.anyio
    async def test_callback_returning_awaitable(self) -> None:
        """A plain callback that returns an awaitable is awaited too."""
        human = Human(Allow())

        def ask(call: ToolCall, tool: AnyTool | None) -> Awaitable[ApprovalOutcome]:
            return human.later(call, tool)

        result = await dispatch([wipe_call()], TOOLS, middleware=[HumanApprovalMiddleware(ask)])
        assert ["wipe"] == runs
        assert ["ok"] == [m.status for m in result.messages]

    @pytest.mark.anyio
    async def test_async_bad_outcome_aborts(self) -> None:
        """Under dispatch, a bad async answer aborts the batch before anything runs."""

        async def ask(call: ToolCall, tool: AnyTool | None) -> ApprovalOutcome:
            return "yes"  # type: ignore[return-value]

        with pytest.raises(DispatchAborted):
            await dispatch([wipe_call()], TOOLS, middleware=[HumanApprovalMiddleware(ask)])
        assert [] == runs

    def test_a_callback_that_never_answers_is_cut_at_the_deadline(self) -> None:
        """An async callback waiting past ``RunPolicy.deadline`` is cancelled: that call
        and every later one are answered as interrupted, nothing runs, and dispatch
        returns at the deadline (it waited forever)."""
        asked: list[str] = []

        async def never(call: ToolCall, tool: AnyTool | None) -> ApprovalOutcome:
            asked.append(call.id)
            await trio.sleep_forever()
            raise AssertionError("unreachable")

        calls = [ToolCall("c0", "look", {}), wipe_call("c1"), wipe_call("c2")]

        async def main() -> tuple[object, float]:
            start = trio.current_time()
            result = None
            with trio.move_on_after(60):  # (virtual seconds: dispatch must return by 5)
                result = await dispatch(
                    calls,
                    TOOLS,
                    middleware=[HumanApprovalMiddleware(never)],
                    policy=RunPolicy(deadline=5),
                )
            return result, trio.current_time() - start

        clock = trio.testing.MockClock(autojump_threshold=0)
        result, took = trio.run(main, clock=clock)
        assert 5 == took
        assert ["c1"] == asked
        assert [] == runs  # (look, admitted before, is not started past the deadline)
        assert ["interrupted"] * 3 == [m.status for m in result.messages]  # type: ignore[attr-defined]
        check_dispatch_invariants(calls, result, TOOLS)  # type: ignore[arg-type]

    def test_sync_dispatch_refuses_async_callback(self) -> None:
        """dispatch_sync raises a clear TypeError for an async callback, and nothing runs."""
        human = Human(Allow())
        with pytest.raises(TypeError, match="dispatch_sync cannot wait"):
            dispatch_sync([wipe_call()], TOOLS, middleware=[HumanApprovalMiddleware(human.later)])
        assert ([], []) == (human.asked, runs)


class TestRepr:
    def test_repr(self) -> None:
        """The repr names the callback and any non-default option."""
        assert "HumanApprovalMiddleware(Human.later, every_call=True)" == repr(
            HumanApprovalMiddleware(Human(Allow()).later, every_call=True)
        )
        assert "HumanApprovalMiddleware(Human(outcome=Allow(), asked=[]))" == repr(
            HumanApprovalMiddleware(Human(Allow()))
        )
