"""Property tests for deferral and resume (`tinytools._approvals` through dispatch)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools import (
    ApprovalRequired,
    DeferredToolResults,
    Inject,
    Registry,
    RunContext,
    Tool,
    ToolCall,
    dispatch_sync,
    tool,
)

ran: list[str] = []


@tool(approval_required=True)
def gated(n: int) -> int:
    """Needs approval."""
    ran.append("gated")
    return n


@tool
def asks(ctx: Inject[RunContext], n: int) -> int:
    """Asks for approval from inside unless approved."""
    if not ctx.approved:
        raise ApprovalRequired()
    ran.append("asks")
    return n


@tool
def free(n: int) -> int:
    """Runs without approval."""
    ran.append("free")
    return n


external = Tool.from_schema("host", "Host-run.", {"type": "object", "properties": {}})
TOOLS = Registry.of(gated, asks, free, external)

calls_strategy = st.lists(
    st.tuples(st.sampled_from(["gated", "asks", "free", "host"]), st.integers(-5, 5)),
    max_size=8,
).map(
    lambda pairs: [
        ToolCall(f"c{i}", name, {"n": n} if name != "host" else {})
        for i, (name, n) in enumerate(pairs)
    ]
)

decisions = st.sampled_from(["approve", "edit", "bad_edit", "deny", "respond", "none"])


class TestResumeProperty:
    @settings(max_examples=150, deadline=None)
    @given(calls=calls_strategy, data=st.data())
    def test_each_call_answered_once_and_nothing_unapproved_runs(
        self, calls: list[ToolCall], data: st.DataObject
    ) -> None:
        """Across a dispatch and its resume every call is answered at most once, in order,
        pending calls stay pending, only approved calls of gated tools ever run, and
        resuming again with the same results gives the same answers."""
        ran.clear()
        first = dispatch_sync(calls, TOOLS)
        assert [] == [r for r in ran if r == "gated"]
        pending = first.deferred.all if first.deferred else ()
        bound = data.draw(st.booleans(), label="bound")
        results = first.deferred.results() if first.deferred and bound else DeferredToolResults()
        approved: set[str] = set()
        for call in pending:
            choice = data.draw(decisions, label=call.id)
            if choice == "approve":
                results, _ = results.approve(call.id), approved.add(call.id)
            elif choice == "edit":
                results, _ = results.approve_with_args(call.id, {"n": 1}), approved.add(call.id)
            elif choice == "bad_edit":
                results = results.approve_with_args(call.id, {"n": "x"})
            elif choice == "deny":
                results = results.deny(call.id, "no")
            elif choice == "respond":
                results = results.respond(call.id, "done")
        ran.clear()
        resumed = dispatch_sync(pending, TOOLS, approvals=results)
        again = dispatch_sync(pending, TOOLS, approvals=results)

        answered_first = [m.tool_call_id for m in first.messages]
        answered_resume = [m.tool_call_id for m in resumed.messages]
        # Resuming is pure: the same results answer the same calls alike, every time.
        assert (resumed.messages, resumed.executed, resumed.deferred) == (
            again.messages,
            again.executed,
            again.deferred,
        )
        assert not set(answered_first) & set(answered_resume)
        pending_ids = [c.id for c in pending]
        assert answered_resume == [i for i in pending_ids if i in set(answered_resume)]
        undecided = {c.id for c in first.deferred.remaining(results)} if first.deferred else set()
        # An approved external call is deferred again: only the host can answer it.
        still = {c.id for c in resumed.deferred.all} if resumed.deferred else set()
        everything = set(answered_first) | set(answered_resume) | undecided | still
        assert {c.id for c in calls} == everything
        runs_of_gated = {c.id for c in pending if c.name in ("gated", "asks")} & set(
            resumed.executed
        )
        assert runs_of_gated <= approved
        assert set(resumed.executed) <= approved


class TestBindingProperty:
    @settings(max_examples=150, deadline=None)
    @given(
        calls=calls_strategy,
        changes=st.lists(st.tuples(st.booleans(), st.integers(-5, 5)), max_size=8),
    )
    def test_bound_approval_runs_only_its_own_call(
        self, calls: list[ToolCall], changes: list[tuple[bool, int]]
    ) -> None:
        """Approving every pending call, then resuming calls that reuse those ids with
        another tool or other arguments, runs none of the changed calls."""
        first = dispatch_sync(calls, TOOLS)
        if first.deferred is None:
            return
        results = first.deferred.approve_all()
        resumed_calls = []
        for call, (rename, n) in zip(first.deferred.all, changes + [(False, 99)] * 8, strict=False):
            name = (
                {"gated": "asks", "asks": "gated"}.get(call.name, call.name)
                if rename
                else call.name
            )
            resumed_calls.append(ToolCall(call.id, name, {"n": n} if name != "host" else {}))
        ran.clear()
        resumed = dispatch_sync(resumed_calls, TOOLS, approvals=results)
        for original, sent in zip(first.deferred.all, resumed_calls, strict=True):
            decision = results.decision_for(sent)
            same = (original.name, original.arguments) == (sent.name, sent.arguments)
            assert (decision is not None) == (same and original in first.deferred.approvals)
            if not same:
                assert sent.id not in resumed.executed
                assert sent.id not in {m.tool_call_id for m in resumed.messages}
