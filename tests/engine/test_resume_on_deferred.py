"""The inline ``on_deferred`` resume: the resumed calls share the batch's budget and
deadline, and an abort or a raising handler keeps the first pass's answers."""

from __future__ import annotations

import attrs
import pytest
import trio
import trio.testing

from tests.engine.calls import add, call, ids, transfer
from tinytools import (
    DispatchAborted,
    FatalToolError,
    RunPolicy,
    ToolPolicy,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools.events import (
    Custom,
)


class TestOnDeferred:
    def test_resumed_calls_share_the_batch_budget(self) -> None:
        """Defect: on_deferred restarted max_tool_calls for the resumed pass."""
        result = dispatch_sync(
            [call("t", "transfer", {"amount": 5}), call("a", "add", {"a": 1})],
            [transfer, add],
            policy=RunPolicy(max_tool_calls=1),
            on_deferred=lambda pending: pending.approve_all(),
        )
        moved, added = result.messages
        assert added.content == "1"
        assert moved.is_error
        assert "limit of 1 tool calls" in moved.content
        assert result.executed == ("a",)

    @pytest.mark.parametrize("most", [2, 3])
    def test_deferred_call_gives_its_slot_back_within_the_budget(self, most: int) -> None:
        """A batch that cannot reach its limit still counts its calls: the deferred call
        gives its slot back, so its resumed pass runs it; a third call is refused."""
        calls = [call("t", "transfer", {"amount": 5}), call("a", "add", {"a": 1})]
        result = dispatch_sync(
            calls,
            [transfer, add],
            policy=RunPolicy(max_tool_calls=most),
            on_deferred=lambda pending: pending.approve_all(),
        )
        assert [m.status for m in result.messages] == ["ok", "ok"]
        assert set(result.executed) == {"t", "a"}
        over = dispatch_sync(
            [*calls, call("b", "add", {"a": 2})],
            [transfer, add],
            policy=RunPolicy(max_tool_calls=2),
            on_deferred=lambda pending: pending.approve_all(),
        )
        assert [m.status for m in over.messages] == ["error", "ok", "ok"]
        assert "limit of 2 tool calls" in over.messages[0].content

    def test_resumed_calls_share_the_batch_deadline(self) -> None:
        """Defect: on_deferred restarted the deadline for the resumed pass."""

        @tool
        async def slow(seconds: float) -> str:
            """Sleep (on the mock clock)."""
            await trio.sleep(seconds)
            return "slept"

        @tool(approval_required=True)
        async def gated_slow(seconds: float) -> str:
            """Sleep, after approval."""
            await trio.sleep(seconds)
            return "slept"

        async def main() -> object:
            return await dispatch(
                [call("s", "slow", {"seconds": 8}), call("g", "gated_slow", {"seconds": 5})],
                [slow, gated_slow],
                policy=RunPolicy(deadline=10),
                on_deferred=lambda pending: pending.approve_all(),
            )

        result = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
        first, resumed = result.messages  # type: ignore[attr-defined]
        assert first.content == "slept"
        assert resumed.status == "interrupted"
        assert "deadline" in resumed.content

    def test_an_abort_in_the_resumed_pass_keeps_the_first_answers(self) -> None:
        """Defect: an abort while resuming lost the first pass's answers (invariant 1)."""

        @tool(approval_required=True)
        def explode() -> str:
            """Fail fatally once approved."""
            raise FatalToolError("boom")

        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(
                [call("a", "add", {"a": 1}), call("e", "explode", {})],
                [add, explode],
                on_deferred=lambda pending: pending.approve_all(),
            )
        assert ["a", "e"] == ids(info.value.result)
        assert info.value.result.messages[0].content == "1"
        assert info.value.result.deferred is None

    def test_a_call_deferred_again_is_listed_once(self) -> None:
        """An approved external call is deferred again, to the host, and listed once."""
        external = attrs.evolve(
            transfer, fn=None, policy=ToolPolicy().with_access(approval_required=True)
        )
        result = dispatch_sync(
            [call("t", "transfer", {"amount": 1})],
            [external],
            on_deferred=lambda pending: pending.approve_all(),
        )
        assert result.deferred is not None
        assert [c.id for c in result.deferred.all] == ["t"]
        assert [c.id for c in result.deferred.calls] == ["t"]

    def test_a_raising_handler_aborts_with_the_first_answers(self) -> None:
        """An on_deferred handler that raises aborts the batch; what ran is still answered."""

        def broken(pending: object) -> object:
            raise LookupError("approver offline")

        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(
                [call("a", "add", {"a": 1}), call("t", "transfer", {"amount": 5})],
                [add, transfer],
                on_deferred=broken,  # type: ignore[arg-type]
            )
        assert (
            info.value.reason
            == "the on_deferred handler broken raised LookupError('approver offline')"
        )
        assert [m.content for m in info.value.result.messages] == ["1"]
        assert info.value.result.deferred is not None
        assert isinstance(info.value.__cause__, LookupError)

    def test_a_handler_returning_something_else_says_what_to_return(self) -> None:
        """A handler answering with something else than decisions aborts like one that
        raises: the first pass's tools ran, so their answers go with the abort."""

        def answers_a_dict(pending: object) -> object:
            return {"t": "yes"}

        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(
                [call("a", "add", {"a": 1}), call("t", "transfer", {"amount": 5})],
                [add, transfer],
                on_deferred=answers_a_dict,  # type: ignore[arg-type]
            )
        assert info.value.reason.startswith("the on_deferred handler answers_a_dict failed: ")
        assert "return the host's decisions as DeferredToolResults" in info.value.reason
        assert [m.content for m in info.value.result.messages] == ["1"]
        assert info.value.result.executed == ("a",)
        assert isinstance(info.value.__cause__, TypeError)

    @pytest.mark.anyio
    async def test_under_dispatch_too(self) -> None:
        with pytest.raises(DispatchAborted, match="DeferredToolResults") as info:
            await dispatch(
                [call("a", "add", {"a": 1}), call("t", "transfer", {"amount": 5})],
                [add, transfer],
                on_deferred=lambda pending: None,  # type: ignore[arg-type,return-value]
            )
        assert [m.content for m in info.value.result.messages] == ["1"]

    def test_an_awaitable_answer_under_dispatch_sync_aborts_with_the_first_answers(self) -> None:
        """A handler that looks synchronous but returns an awaitable is found only once the
        first pass ran (an ``async def`` one is refused before anything runs)."""

        async def later(pending: object) -> object:
            return pending

        with pytest.raises(DispatchAborted, match="dispatch_sync cannot wait") as info:
            dispatch_sync(
                [call("a", "add", {"a": 1}), call("t", "transfer", {"amount": 5})],
                [add, transfer],
                on_deferred=lambda pending: later(pending),  # type: ignore[arg-type]
            )
        assert [m.content for m in info.value.result.messages] == ["1"]
        assert isinstance(info.value.__cause__, TypeError)

    def test_a_repeated_id_keeps_its_place(self) -> None:
        """Defect: the two passes were merged by id, so a repeat of a deferred call's id
        (answered in the first pass) came before the resumed call's answer, and counted
        as executed."""
        result = dispatch_sync(
            [
                call("x", "transfer", {"amount": 5}),
                call("x", "add", {"a": 1}),
                call("y", "add", {"a": 2}),
            ],
            [add, transfer],
            on_deferred=lambda pending: pending.approve_all(),
        )
        assert [(m.tool_call_id, m.status) for m in result.messages] == [
            ("x", "ok"),
            ("x", "error"),
            ("y", "ok"),
        ]
        assert result.messages[0].content == "moved 5"
        assert "repeats an earlier call's id" in result.messages[1].content
        assert result.executed == ("x", "y")
        assert result.deferred is None

    def test_unmatched_decisions_are_reported(self) -> None:
        """Decisions for ids no call of the batch has are ignored and reported."""
        pending = dispatch_sync([call("t", "transfer", {"amount": 5})], [transfer]).deferred
        assert pending is not None
        decided = pending.approve("t")
        result = dispatch_sync([call("u", "add", {"a": 1})], [transfer, add], approvals=decided)
        reported = [
            e for e in result.events if isinstance(e, Custom) and e.name == "unmatched_decision"
        ]
        assert [e.call_id for e in reported] == ["t"]
        assert result.executed == ()
