"""Tests for `tinytools._engine.resume` and resuming deferred calls through dispatch."""

from __future__ import annotations

import pickle
from decimal import Decimal

import msgspec
import pytest
import trio
import trio.testing

from tinytools import (
    Allow,
    ApprovalRequired,
    Cancellation,
    DeferredToolRequests,
    DeferredToolResults,
    Deny,
    DispatchResult,
    Inject,
    Registry,
    RunContext,
    RunPolicy,
    Tool,
    ToolCall,
    ToolPolicy,
    ToolResult,
    after_tool,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools._engine.env import DispatchEnv
from tinytools.events import ToolApproved, ToolCompleted, ToolDeferred, ToolDenied, ToolStarted

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

    @pytest.mark.parametrize("message", ["no \ud800 way", "caf\u00e9 \udc80"])
    @pytest.mark.anyio
    async def test_a_denial_holding_a_lone_surrogate_encodes(self, message: str) -> None:
        """A reviewer's text decoded from JSON may hold a lone surrogate: the model and the
        ``ToolDenied`` event read it escaped, so the result encodes — resumed, or denied by
        a ``before_tool`` hook."""

        class SdkText(str):
            pass

        for text in (message, SdkText(message)):
            resumed = dispatch_sync(pending().all, TOOLS, approvals=pending().deny("1", text))
            hooked = await dispatch(
                [ToolCall("9", "pay", '{"amount": 1}')],
                TOOLS,
                middleware=[before_tool(lambda call, env, text=text: Deny(text))],
            )
            for result in (resumed, hooked):
                assert msgspec.json.encode(result)
                [denied] = [e for e in result.events if isinstance(e, ToolDenied)]
                assert denied.message == message.encode("utf-8", "backslashreplace").decode()
        assert [] == ran

    @pytest.mark.parametrize("message", [5, None, b"no"])
    def test_a_denial_is_text(self, message: object) -> None:
        """A denial's message is what the model reads: anything but a str is refused when
        the decision is made (the model was told the tool returned a bad value)."""
        with pytest.raises(TypeError, match="Deny takes the message the model reads, a str"):
            pending().deny("1", message)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="Deny takes the message the model reads, a str"):
            Deny(message)  # type: ignore[arg-type]

    @pytest.mark.parametrize("arguments", ['{"amount": 1}', None, [("amount", 1)], 5])
    def test_edited_arguments_are_a_mapping(self, arguments: object) -> None:
        """``approve_with_args`` takes the edited arguments as a mapping; anything else is
        a TypeError saying so (it was ``dict()``'s own error, or a silent conversion)."""
        with pytest.raises(TypeError, match="approve_with_args takes the edited arguments"):
            pending().approve_with_args("1", arguments)  # type: ignore[arg-type]


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

    def test_decisions_pickle_for_another_process(self) -> None:
        """Requests and bound decisions survive pickling (a web app hands them to another
        worker): equal values that resume the batch the same way. The decisions did not
        pickle (read-only mappings)."""
        requests = pickle.loads(pickle.dumps(pending()))
        decided = (
            requests.approve("1")
            .approve_with_args("2", {"amount": 60})
            .deny("3", "not today")
            .respond("4", "found it")
        )
        restored = pickle.loads(pickle.dumps(decided))
        assert restored == decided
        assert restored.pending == decided.pending
        answers = dispatch_sync(requests.all, TOOLS, approvals=restored).messages
        assert {m.tool_call_id: (m.status, m.content) for m in answers} == {
            "1": ("ok", "paid 5"),
            "2": ("ok", "paid 60"),
            "3": ("denied", "not today"),
            "4": ("ok", "found it"),
        }
        with pytest.raises(ValueError, match="not among the deferred calls"):
            restored.approve("9")  # still bound to the calls it answers

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

    def test_resuming_twice_gives_the_same_answers(self) -> None:
        """Resuming is pure: the same calls with the same results answer alike both times."""
        requests = pending()
        results = requests.approve("1").deny("2", "no").respond("4", "host did it")
        first = dispatch_sync(requests.all, TOOLS, approvals=results)
        second = dispatch_sync(requests.all, TOOLS, approvals=results)
        assert first.messages == second.messages
        assert first.executed == second.executed == ("1",)
        assert [("pay", 5), ("pay", 5)] == ran  # running a side effect once is the ledger's job

    def test_approved_flag_injected(self) -> None:
        """A tool raising ApprovalRequired sees it was approved and does not ask again."""
        result = dispatch_sync(pending().all, TOOLS, approvals=DeferredToolResults().approve("3"))
        assert [ToolApproved] == [type(e) for e in result.events][:1]
        assert [("transfer", 7)] == ran


def resume(results: DeferredToolResults, *calls: ToolCall) -> dict[str, str]:
    """Resume ``calls`` with ``results``: call id → "ran", "deferred" or the message status."""
    result = dispatch_sync(calls, TOOLS, approvals=results)
    outcome = {m.tool_call_id: m.status for m in result.messages}
    outcome |= {c.id: "deferred" for c in (result.deferred.all if result.deferred else ())}
    return {i: "ran" if i in result.executed else s for i, s in outcome.items()}


class TestBoundDecisions:
    def test_reused_id_with_other_arguments_is_not_approved(self) -> None:
        """An approval bound to a call does not approve other arguments under its id."""
        results = pending().approve("1")
        forged = ToolCall("1", "pay", '{"amount": 500}')
        result = dispatch_sync([forged], TOOLS, approvals=results)
        assert ([], (), ()) == (ran, result.messages, result.executed)
        assert result.deferred is not None
        assert [forged] == list(result.deferred.approvals)
        reason = result.deferred.metadata["1"]["reason"]
        assert "was made for another call (the same tool with other arguments)" in str(reason)
        assert [ToolDeferred] == [type(e) for e in result.events]

    def test_reused_id_with_another_tool_is_not_approved(self) -> None:
        """An approval bound to a call does not approve another tool under its id."""
        results = pending().approve("1")
        assert {"1": "deferred"} == resume(results, ToolCall("1", "transfer", '{"amount": 5}'))
        assert [] == ran

    def test_denial_and_response_are_bound_too(self) -> None:
        """A bound denial or host result answers only its own call."""
        requests = pending()
        results = requests.deny("1", "no").respond("4", "done")
        other_args = ToolCall("1", "pay", {"amount": 9})
        other_tool = ToolCall("4", "pay", {"amount": 1})
        assert {"1": "deferred", "4": "deferred"} == resume(results, other_args, other_tool)
        assert [] == ran

    @pytest.mark.parametrize(
        "arguments",
        ['{"amount": 5}', {"amount": 5}, ' { "amount" : 5 } '],
        ids=["same text", "decoded dict", "other whitespace"],
    )
    def test_arguments_compare_as_json(self, arguments: str | dict[str, object]) -> None:
        """The model's raw text and the same JSON value in another form are the same call."""
        results = pending().approve("1")
        assert {"1": "ran"} == resume(results, ToolCall("1", "pay", arguments))

    @pytest.mark.parametrize("amount", ["5.0", "true", '"5"'])
    def test_json_values_of_other_types_differ(self, amount: str) -> None:
        """5, 5.0, true and "5" are different arguments."""
        results = pending().approve("1")
        assert {"1": "deferred"} == resume(results, ToolCall("1", "pay", f'{{"amount": {amount}}}'))

    @pytest.mark.parametrize(
        ("approved", "resumed"),
        [("10000000000000000.0", "10000000000000001.0"), ("0.1", "0.10000000000000001")],
    )
    def test_numbers_compare_by_their_exact_digits(self, approved: str, resumed: str) -> None:
        """Two numbers that round to one float are other arguments: a ``Decimal``
        parameter reads the digits, so the approval of one never runs the other."""
        exact: list[Decimal] = []

        @tool(policy=ToolPolicy.classified().with_access(approval_required=True))
        def refund(amount: Decimal) -> str:
            """Refund exactly."""
            exact.append(amount)
            return "refunded"

        tools = Registry.of(refund)
        first = dispatch_sync([ToolCall("1", "refund", f'{{"amount": {approved}}}')], tools)
        assert first.deferred is not None
        results = first.deferred.approve("1")
        forged = dispatch_sync(
            [ToolCall("1", "refund", f'{{"amount": {resumed}}}')], tools, approvals=results
        )
        assert ([], ()) == (exact, forged.executed)
        assert forged.deferred is not None
        dispatch_sync(first.deferred.approvals, tools, approvals=results)
        assert [Decimal(approved)] == exact

    def test_a_repeated_field_is_not_the_approved_call(self) -> None:
        """Text that repeats a field reads as more than one value: it does not match the
        approved call it decodes to last-wins (no ToolApproved, deferred again)."""
        results = pending().approve("1")
        call = ToolCall("1", "pay", '{"amount": 500, "amount": 5}')
        result = dispatch_sync([call], TOOLS, approvals=results)
        assert [ToolDeferred] == [type(e) for e in result.events]
        assert ([], ()) == (ran, result.messages)

    @pytest.mark.parametrize(
        "text",
        ['{"amount": %s}' % ("[" * 1000 + "]" * 1000), '{"amount": 5, "note": "\ud800"}'],
        ids=["nested-1000-deep", "lone-surrogate"],
    )
    def test_unreadable_text_under_an_approved_id_is_answered(self, text: str) -> None:
        """Defect: text nested 1,000 deep, or holding a lone surrogate, sent under an
        approved call's id made ``dispatch_sync`` raise (RecursionError,
        UnicodeEncodeError) while comparing it with the approved call. It compares as
        text: not the approved call, deferred again."""
        results = pending().approve("1")
        result = dispatch_sync([ToolCall("1", "pay", text)], TOOLS, approvals=results)
        assert [ToolDeferred] == [type(e) for e in result.events]
        assert [] == ran

    @pytest.mark.parametrize(
        ("approved", "resumed"),
        [(None, "the stream was cut"), ("the stream was cut", None), ("cut", "not cut")],
    )
    def test_another_invalid_reason_is_another_call(
        self, approved: str | None, resumed: str | None
    ) -> None:
        """A provider's ``invalid`` reason decides how admission reads the text: the same
        text under another reason is not the approved call."""
        first = dispatch_sync([ToolCall("1", "pay", '{"amount": 5}', approved)], TOOLS)
        assert first.deferred is not None
        results = first.deferred.approve("1")
        assert {"1": "deferred"} == resume(results, ToolCall("1", "pay", '{"amount": 5}', resumed))
        assert [] == ran

    def test_values_json_cannot_carry_still_differ_by_type(self) -> None:
        """Arguments a host's own ``str`` type makes unencodable still compare as JSON
        values: ``1`` and ``True`` differ (they were compared with ``==``)."""

        class SdkText(str):
            pass

        @tool(policy=ToolPolicy.classified().with_access(approval_required=True))
        def store(value: object) -> str:
            """Store anything."""
            ran.append(("store", value))
            return "stored"

        tools = Registry.of(store)
        approved = ToolCall("1", "store", {"value": [SdkText("a"), 1]})
        results = DeferredToolResults(pending=[approved]).approve("1")
        forged = ToolCall("1", "store", {"value": [SdkText("a"), True]})
        result = dispatch_sync([forged], tools, approvals=results)
        assert ([], ()) == (ran, result.executed)
        dispatch_sync([approved], tools, approvals=results)
        assert [("store", ["a", 1])] == ran

    def test_undecodable_arguments_compare_as_text(self) -> None:
        """Raw text that is not JSON (repaired on admission) binds as that exact text."""
        first = dispatch_sync([ToolCall("r", "pay", "{amount: 5,}")], TOOLS)
        assert first.deferred is not None
        results = first.deferred.approve("r")
        assert {"r": "deferred"} == resume(results, ToolCall("r", "pay", "{amount: 6,}"))
        assert {"r": "ran"} == resume(results, ToolCall("r", "pay", "{amount: 5,}"))
        assert [("pay", 5)] == ran

    def test_rebuilt_from_decisions_stays_bound(self) -> None:
        """Results rebuilt from ``.decisions`` keep each decision bound to its call."""
        rebuilt = DeferredToolResults(pending().approve("1").decisions)
        assert {"1": "deferred"} == resume(rebuilt, ToolCall("1", "pay", {"amount": 500}))
        assert {"1": "ran"} == resume(rebuilt, ToolCall("1", "pay", {"amount": 5}))

    def test_bare_results_bind_by_id_alone(self) -> None:
        """DeferredToolResults().approve(id) is the weaker form: any call under the id."""
        results = DeferredToolResults().approve("1")
        assert {"1": "ran"} == resume(results, ToolCall("1", "pay", {"amount": 500}))
        assert [("pay", 500)] == ran

    def test_approve_all_approves_exactly_those_calls(self) -> None:
        """approve_all binds each awaiting call; the host call and edited calls stay undecided."""
        requests = pending()
        results = requests.approve_all()
        assert ["1", "2", "3"] == list(results.decisions)
        edited = ToolCall("2", "pay", {"amount": 60})
        outcome = resume(results, requests.approvals[0], edited, requests.calls[0])
        assert {"1": "ran", "2": "deferred"} == outcome  # "4" has no decision: no answer
        assert [("pay", 5)] == ran

    def test_deciding_an_id_that_was_not_deferred_is_refused(self) -> None:
        """A bound builder refuses an id the requests do not hold, naming the pending ids."""
        requests = pending()
        with pytest.raises(ValueError, match="call id '9' is not among the deferred calls"):
            requests.approve("9")
        with pytest.raises(ValueError, match="'1', '2', '3'"):
            requests.approve("1").deny("9", "no")

    def test_decisions_for_ids_not_in_the_batch_are_ignored_and_listed(self) -> None:
        """A decision no call of the batch answers changes nothing; unmatched() lists it."""
        results = DeferredToolResults().approve("1").approve("zzz").deny("2", "no")
        batch = [ToolCall("1", "pay", {"amount": 5})]
        assert {"1": "ran"} == resume(results, *batch)
        assert ("zzz", "2") == results.unmatched(batch)
        bound = pending().approve("1").approve("2")
        assert ("1", "2") == bound.unmatched([ToolCall("1", "pay", {"amount": 1})])

    def test_repeated_id_refused_before_decisions(self) -> None:
        """Within one batch a repeated id never runs, even when its decision matches."""
        requests = pending()
        call = requests.approvals[0]
        result = dispatch_sync([call, call], TOOLS, approvals=requests.approve("1"))
        assert ["ok", "error"] == [m.status for m in result.messages]
        assert "repeats an earlier call's id" in result.messages[1].content
        assert [("pay", 5)] == ran

    def test_results_are_immutable(self) -> None:
        """Neither the results nor their decisions can be changed in place."""
        results = pending().approve("1")
        with pytest.raises(AttributeError):
            results.decisions = {}  # type: ignore[misc]
        with pytest.raises(TypeError):
            results.decisions["2"] = results.decisions["1"]  # type: ignore[index]


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

    def test_async_handler_still_deciding_at_the_deadline_decides_nothing(self) -> None:
        """An async on_deferred that never answers is cancelled at RunPolicy.deadline:
        dispatch returns then, every deferred call still deferred and none run."""
        asked: list[str] = []

        async def decide(requests: DeferredToolRequests) -> DeferredToolResults:
            asked.extend(c.id for c in requests.all)
            await trio.sleep_forever()
            raise AssertionError("unreachable")

        async def main() -> tuple[object, float]:
            start = trio.current_time()
            result = None
            with trio.move_on_after(60):  # (virtual seconds: dispatch must return by 5)
                result = await dispatch(
                    calls(), TOOLS, on_deferred=decide, policy=RunPolicy(deadline=5)
                )
            return result, trio.current_time() - start

        result, took = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
        assert (5, ["4", "1", "2", "3"]) == (took, asked)
        assert isinstance(result, DispatchResult)
        assert result.deferred is not None
        assert ["4", "1", "2", "3"] == [c.id for c in result.deferred.all]
        assert ((), []) == (result.messages, ran)  # ("3" ran, and asked for approval)

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

    def test_hooks_read_the_approved_ids(self) -> None:
        """Hooks read which calls a human approved: none on a fresh batch (with a
        deadline, limits and a cancellation), the resumed call on resume, and a call an
        earlier hook allowed."""
        seen: list[tuple[object, ...]] = []

        def before(call: ToolCall, env: DispatchEnv) -> ToolCall:
            seen.append(("before", call.id, sorted(env.approved), env.is_call_approved(call.id)))
            return call

        def after(call: ToolCall, result: ToolResult, env: DispatchEnv) -> ToolResult:
            seen.append(("after", call.id, sorted(env.approved)))
            return result

        hooks = [before_tool(before), after_tool(after)]
        policy = RunPolicy(deadline=30, max_tool_calls=5)
        cancellation = Cancellation()
        first = dispatch_sync(
            [ToolCall("1", "pay", '{"amount": 5}')],
            TOOLS,
            middleware=hooks,
            policy=policy,
            cancellation=cancellation,
        )
        assert first.deferred is not None
        assert [("before", "1", [], False)] == seen  # then deferred: no after_tool
        seen.clear()
        resumed = dispatch_sync(
            first.deferred.approvals,
            TOOLS,
            middleware=hooks,
            policy=policy,
            cancellation=cancellation,
            approvals=first.deferred.approve_all(),
        )
        assert ["paid 5"] == [m.content for m in resumed.messages]
        assert [("before", "1", ["1"], True), ("after", "1", ["1"])] == seen
        seen.clear()
        allow = before_tool(lambda call, env: Allow())
        allowed = dispatch_sync(
            [ToolCall("2", "pay", '{"amount": 6}')], TOOLS, middleware=[allow, *hooks]
        )
        assert ["paid 6"] == [m.content for m in allowed.messages]
        assert [("before", "2", ["2"], True), ("after", "2", ["2"])] == seen

    def test_async_handler_refused_by_dispatch_sync(self) -> None:
        """dispatch_sync cannot await an async handler and says so."""

        async def decide(requests: DeferredToolRequests) -> DeferredToolResults:
            return DeferredToolResults()

        ran: list[str] = []
        with pytest.raises(TypeError, match="await dispatch"):
            dispatch_sync(calls(), TOOLS, on_deferred=decide, on_event=lambda e: ran.append(e.kind))
        assert [] == ran  # refused before anything runs
