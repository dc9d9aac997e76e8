"""Property tests for deferral and resume (`tinytools._engine.resume` through dispatch)."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools import (
    ApprovalRequired,
    CallId,
    DeferredToolResults,
    Inject,
    Registry,
    RunContext,
    Tool,
    ToolCall,
    ToolPolicy,
    ToolPolicyMiddleware,
    before_tool,
    dispatch_sync,
    tool,
)
from tinytools.testing._json import json_objects

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


def _spell(value: object, floats: Callable[[float], str], ordered: bool) -> str:
    """``value`` as JSON text, its floats written by ``floats``, keys sorted or not."""
    if isinstance(value, dict):
        items = sorted(value.items()) if ordered else list(value.items())
        inner = ", ".join(f"{json.dumps(k)}: {_spell(v, floats, ordered)}" for k, v in items)
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_spell(v, floats, ordered) for v in value) + "]"
    if isinstance(value, float):
        return floats(value)
    return json.dumps(value)


#: Spellings of one float: the shortest, 17 significant digits (``0.1`` as
#: ``0.10000000000000001``, ``1.0`` as ``1``), a trailing zero.
FLOAT_SPELLINGS: list[Callable[[float], str]] = [
    repr,
    lambda x: format(x, ".17g"),
    lambda x: repr(x) + "0" if "." in repr(x) and "e" not in repr(x) else repr(x),
]


def _exact(text: str) -> object:
    """What a tool may read from ``text``: every number as its type and exact digits'
    value, every object's members in full (a repeated field kept as such)."""

    def members(pairs: list[tuple[str, object]]) -> object:
        keys = [key for key, _ in pairs]
        if len(set(keys)) < len(keys):
            return ("repeated", tuple(pairs))
        return ("object", tuple(sorted(pairs, key=lambda pair: pair[0])))

    return json.loads(
        text,
        parse_int=lambda digits: ("int", int(digits)),
        parse_float=lambda digits: ("float", Decimal(digits)),
        object_pairs_hook=members,
    )


class TestExactBindingProperty:
    @settings(max_examples=150, deadline=None)
    @given(
        arguments=json_objects(),
        first=st.tuples(st.sampled_from(FLOAT_SPELLINGS), st.booleans()),
        second=st.tuples(st.sampled_from(FLOAT_SPELLINGS), st.booleans()),
        repeat=st.booleans(),
    )
    def test_a_decision_answers_only_text_a_tool_reads_alike(
        self,
        arguments: dict[str, object],
        first: tuple[Callable[[float], str], bool],
        second: tuple[Callable[[float], str], bool],
        repeat: bool,
    ) -> None:
        """A decision bound to a call answers a call under its id only when the two
        argument texts give a tool the same values (numbers by their exact digits, no
        field repeated); the same text with its keys in another order still matches."""
        approved_text = _spell(arguments, *first)
        resumed_text = _spell(arguments, *second)
        if repeat and arguments:
            key = json.dumps(next(iter(arguments)))
            resumed_text = "{" + f"{key}: 0, " + resumed_text[1:]
        approved = ToolCall("1", "t", approved_text)
        resumed = ToolCall("1", "t", resumed_text)
        results = DeferredToolResults(pending=[approved]).approve("1")
        if results.decision_for(resumed) is not None:
            assert _exact(approved_text) == _exact(resumed_text)
        if first[0] is second[0] and not repeat:
            assert results.decision_for(resumed) is not None  # key order never matters


ran_with: list[tuple[str, int]] = []


@tool(policy=ToolPolicy.classified())
def step(call_id: Inject[CallId], n: int) -> int:
    """A classified tool that is not read-only: require_approval gates it."""
    ran_with.append((call_id, n))
    return n


EDITS: dict[str, Callable[[int], int]] = {
    "keep": lambda n: n,
    "bump": lambda n: n + 1,
    "fixed": lambda n: 99,
    "cap": lambda n: min(n, 2),
}


class TestEditedAfterApprovalProperty:
    @settings(max_examples=100, deadline=None)
    @given(
        amounts=st.lists(st.integers(-5, 5), min_size=1, max_size=5),
        edit=st.sampled_from(sorted(EDITS)),
    )
    def test_a_call_runs_only_with_the_arguments_a_decision_approved(
        self, amounts: list[int], edit: str
    ) -> None:
        """With ``require_approval`` and a later hook that edits calls, a resumed call
        runs only with the arguments of the call a decision approved (the edited call
        waits for its own decision)."""

        def edited(call: ToolCall, env: object) -> ToolCall:
            n = msgspec.json.decode(msgspec.json.encode(call.arguments))["n"]
            return msgspec.structs.replace(call, arguments={"n": EDITS[edit](n)})

        guard = [ToolPolicyMiddleware.require_approval(), before_tool(edited)]
        calls = [ToolCall(f"c{i}", "step", {"n": n}) for i, n in enumerate(amounts)]
        tools = Registry.of(step)
        ran_with.clear()
        first = dispatch_sync(calls, tools, middleware=guard)
        assert first.deferred is not None
        assert [] == ran_with
        approved = {c.id: c.arguments for c in first.deferred.approvals}
        for _ in range(2):  # a second round approves what the first deferred again
            resumed = dispatch_sync(
                first.deferred.all,
                tools,
                middleware=guard,
                approvals=first.deferred.approve_all(),
            )
            assert all({"n": n} == approved[call_id] for call_id, n in ran_with)
            if resumed.deferred is None:
                break
            first = resumed
            approved.update({c.id: c.arguments for c in resumed.deferred.approvals})
        # An editor that gives its own output back unchanged settles in two rounds; one
        # that changes every call it sees ("bump") never gets an approved call to run.
        expected = set() if edit == "bump" else {c.id for c in calls}
        assert expected == {i for i, _ in ran_with}
