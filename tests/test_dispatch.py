"""Tests for `tinytools._engine.api` (admission, execution and folding through the entry points)."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Callable
from typing import Any

import anyio
import attrs
import msgspec
import pytest
import trio
import trio.testing

from tinytools import (
    Allow,
    ApprovalRequired,
    Artifact,
    ArtifactRef,
    CallDeferred,
    Context,
    Defer,
    DeferredToolResults,
    Deny,
    DirectoryArtifactStore,
    DispatchAborted,
    DispatchResult,
    Emit,
    FatalToolError,
    FileBlock,
    ImageBlock,
    Inject,
    MemoryArtifactStore,
    Registry,
    RunPolicy,
    Store,
    TextBlock,
    Tool,
    ToolCall,
    ToolDefinitionError,
    ToolMessage,
    ToolOutput,
    ToolPolicy,
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
    Custom,
    Event,
    InvalidToolArgs,
    ToolApproved,
    ToolCompleted,
    ToolDeferred,
    ToolDenied,
    ToolStarted,
    UnknownToolCall,
)
from tinytools.policies import Fail, NormalizeThenReturnToolError, Rewrite

ran: list[tuple[str, object]] = []


@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    ran.append(("add", (a, b)))
    return a + b


@tool(exposure="hidden")
def admin() -> str:
    """Hidden from the model."""
    ran.append(("admin", None))
    return "root"


@tool
def fallback(name: str = "") -> str:
    """A compatibility tool for unknown calls."""
    ran.append(("fallback", name))
    return "fallback"


@tool
def report() -> ToolResult:
    """Return everything a result can carry."""
    return ToolResult.success(
        "done",
        structured={"rows": 2},
        artifacts=[Artifact("r.csv", b"a,b\n1,2\n", "text/csv")],
        follow_up="Now summarise the report.",
        metadata={"ms": 5},
    )


@tool
def big() -> str:
    """Return a long text."""
    return "é" * 500


@tool(policy=ToolPolicy.classified().with_access(approval_required=True))
def pay(amount: int) -> str:
    """Pay money (needs approval)."""
    ran.append(("pay", amount))
    return "paid"


@tool
def needs_ok() -> str:
    """Raise ApprovalRequired from inside."""
    raise ApprovalRequired({"why": "large"})


@tool
def later() -> str:
    """Raise CallDeferred from inside."""
    raise CallDeferred({"ticket": 7})


@tool
def stored(key: str, db: Inject[Store[dict[str, str]]]) -> str:
    """Read from the injected store."""
    return db[key]


external = Tool.from_schema("lookup", "Host-executed.", {"type": "object", "properties": {}})

TOOLS = Registry.of(add, admin, fallback, report, big, pay, needs_ok, later, stored, external)


async def _never_awaited() -> None:
    """What an artifact store's ``put`` returns when it is not awaited."""


class _NoStore:
    """An artifact store never reached (what it stores is not the point)."""

    def put(self, run_id: str, call_id: str, artifact: Artifact) -> ArtifactRef:
        raise AssertionError("never called")


class _PutIsNoFunction:
    """An artifact store whose ``put`` is an attribute that cannot be called."""

    put = 3


class _AsyncPut:
    """An artifact store whose ``put`` is a coroutine function (never awaited by fold)."""

    async def put(self, run_id: str, call_id: str, artifact: Artifact) -> object:
        raise AssertionError("never called")


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def call(call_id: str, name: str, arguments: object = "{}") -> ToolCall:
    """A call as a provider sends it."""
    return ToolCall(call_id, name, arguments)  # type: ignore[arg-type]


def kinds(events: tuple[Event, ...]) -> list[str]:
    """The ``kind`` tag of each event."""
    return [json.loads(msgspec.json.encode(e))["kind"] for e in events]


class TestAnswers:
    def test_every_call_answered_in_order(self) -> None:
        """Each call gets one message in call order, whatever happened to it."""
        calls = [call("1", "add", '{"a": 1}'), call("2", "nope"), call("3", "add", "{")]
        result = dispatch_sync(calls, TOOLS)
        assert ["1", "2", "3"] == [m.tool_call_id for m in result.messages]
        assert ["ok", "error", "error"] == [m.status for m in result.messages]
        assert ("1",) == result.executed

    def test_events_in_order(self) -> None:
        """A plain call emits started then completed, each with its call id."""
        result = dispatch_sync([call("c", "add", '{"a": 2}')], TOOLS)
        assert [
            ToolStarted(call_id="c", tool_name="add", arguments={"a": 2, "b": 1}),
            ToolCompleted(call_id="c", tool_name="add"),
        ] == list(result.events)

    def test_value_wrapped(self) -> None:
        """A plain return value becomes JSON text with its structured value on the message."""
        [message] = dispatch_sync([call("c", "add", {"a": 2, "b": 2})], TOOLS).messages
        assert ("4", ToolOutput(structured=4)) == (message.content, message.artifact)


class TestUnknownTools:
    @pytest.mark.parametrize("name", ["nope", "admin", "ADD", "add ", ""])
    def test_unknown_hidden_and_near_names(self, name: str) -> None:
        """Unknown, hidden and near-miss names are answered, never run, never listed."""
        result = dispatch_sync([call("c", name, '{"a": 1}')], TOOLS)
        [message] = result.messages
        assert message.is_error
        assert f"Unknown tool `{name}`" in message.content
        assert "`admin`" not in message.content.split("vailable tools:")[1]
        assert [] == ran
        assert [
            UnknownToolCall(
                call_id="c", requested_name=name, arguments='{"a": 1}', recovery="tool_error"
            )
        ] == list(result.events)

    def test_at_most_five_names_suggested(self) -> None:
        """A misspelt name in a large registry is told five close names, not the registry."""
        many = [
            Tool.from_schema(f"report_{i}", "A report.", {"type": "object"}) for i in range(200)
        ]
        [message] = dispatch_sync([call("c", "report_7x", "{}")], many).messages
        listed = message.content.split("Closest available tools: ")[1].split(". ")[0]
        assert 5 == listed.count("`report_")
        assert "`report_7`" in listed

    def test_not_advertised_is_unknown(self) -> None:
        """A registered tool outside the advertised set is unknown, and unlisted."""
        result = dispatch_sync([call("c", "add", '{"a": 1}')], TOOLS, advertised={"fallback"})
        assert "Available tools: `fallback`." in result.messages[0].content
        assert [] == ran

    def test_allowlist(self) -> None:
        """A declared allow-list admits members only; an empty one denies everything."""
        allowed = dispatch_sync(
            [call("c", "add", '{"a": 1}')], TOOLS, policy=RunPolicy(allowlist={"add"})
        )
        assert "ok" == allowed.messages[0].status
        empty = dispatch_sync([call("c", "add", '{"a": 1}')], TOOLS, policy=RunPolicy(allowlist=()))
        assert "Available tools: none" in empty.messages[0].content
        legacy = RunPolicy(allowlist=(), fail_closed_allowlist=False)
        assert (
            "ok"
            == dispatch_sync([call("c", "add", '{"a": 1}')], TOOLS, policy=legacy)
            .messages[0]
            .status
        )

    def test_rewrite(self) -> None:
        """Rewrite retargets an unknown call to the compatibility tool, once."""
        result = dispatch_sync(
            [call("c", "nope", "{}")], TOOLS, policy=RunPolicy(unknown_tool=Rewrite("fallback"))
        )
        assert ("fallback", "fallback") == (result.messages[0].name, result.messages[0].content)
        assert "rewrite:fallback" == result.events[0].recovery  # type: ignore[union-attr]

    def test_rewrite_to_hidden_falls_back(self) -> None:
        """A Rewrite target the model may not call is never run; the call is answered."""
        result = dispatch_sync(
            [call("c", "nope")], TOOLS, policy=RunPolicy(unknown_tool=Rewrite("admin"))
        )
        assert "tool_error" == result.events[0].recovery  # type: ignore[union-attr]
        assert [] == ran

    def test_fail_aborts_before_anything_runs(self) -> None:
        """Fail aborts the batch; every call is answered and nothing ran."""
        calls = [call("1", "add", '{"a": 1}'), call("2", "nope")]
        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(calls, TOOLS, policy=RunPolicy(unknown_tool=Fail()))
        assert ["interrupted", "error"] == [m.status for m in info.value.result.messages]
        assert [] == ran


class TestArguments:
    def test_repaired(self) -> None:
        """Relaxed JSON is repaired, reported, and the call runs on the repaired object."""
        result = dispatch_sync([call("c", "add", "{a: 2, b: 3,}")], TOOLS)
        assert "5" == result.messages[0].content
        assert "repaired" == result.events[0].recovery  # type: ignore[union-attr]

    def test_malformed_never_becomes_empty(self) -> None:
        """Unrepairable JSON is answered with the parse error and the schema, never run."""
        result = dispatch_sync([call("c", "fallback", '{"name": "x')], TOOLS)
        [message] = result.messages
        assert "not valid JSON" in message.content
        assert "Expected arguments (JSON schema)" in message.content
        assert [] == ran

    def test_provider_flagged_invalid(self) -> None:
        """A call the provider marked invalid goes through repair like raw text."""
        flagged = ToolCall("c", "add", "{a: 1}", invalid="unquoted key")
        assert "2" == dispatch_sync([flagged], TOOLS).messages[0].content

    def test_schema_invalid(self) -> None:
        """Schema violations are answered with the path, the problem and the schema."""
        result = dispatch_sync([call("c", "add", '{"a": "1"}')], TOOLS)
        assert "at `$.a`: Expected `integer`, got `string`" in result.messages[0].content
        assert [InvalidToolArgs] == [type(e) for e in result.events]

    def test_normalize(self) -> None:
        """NormalizeThenReturnToolError decodes an object sent as a JSON string."""
        policy = RunPolicy(invalid_args=NormalizeThenReturnToolError())
        raw = json.dumps(json.dumps({"a": 4}))
        result = dispatch_sync([call("c", "add", raw)], TOOLS, policy=policy)
        assert ("5", "normalized") == (result.messages[0].content, result.events[0].recovery)  # type: ignore[union-attr]

    @pytest.mark.parametrize(
        ("raw", "expected"),
        [('[{"a": 4}]', ("5", "normalized")), ('[{"a": 4}, {"a": 5}]', (None, "tool_error"))],
    )
    def test_normalize_single_item_array(self, raw: str, expected: tuple[str | None, str]) -> None:
        """NormalizeThenReturnToolError unwraps an array holding exactly one object; with
        two there is no one answer, so the model is told."""
        policy = RunPolicy(invalid_args=NormalizeThenReturnToolError())
        result = dispatch_sync([call("c", "add", raw)], TOOLS, policy=policy)
        content, recovery = result.messages[0].content, result.events[0].recovery  # type: ignore[union-attr]
        assert expected == (content if expected[0] else None, recovery)

    def test_single_item_array_needs_the_policy(self) -> None:
        """Under the default policy an array of arguments is refused, not unwrapped."""
        result = dispatch_sync([call("c", "add", '[{"a": 4}]')], TOOLS)
        assert result.messages[0].is_error

    @pytest.mark.parametrize(
        "raw",
        [
            '{"a": 4}<|call|>',
            'json\n{"a": 4}',
            '{"a": 4} {"a": 4}',
            '{\n  "a": 4, // four\n}',
        ],
    )
    def test_repairs_what_models_leak(self, raw: str) -> None:
        """Leaked template tokens, a lone fence word, a repeated object and comments are
        repaired (and reported), under the default policy."""
        result = dispatch_sync([call("c", "add", raw)], TOOLS)
        assert ("5", "repaired") == (result.messages[0].content, result.events[0].recovery)  # type: ignore[union-attr]

    def test_invalid_fail_aborts(self) -> None:
        """Fail on invalid arguments aborts the batch."""
        with pytest.raises(DispatchAborted):
            dispatch_sync(
                [call("c", "add", '{"a": "x"}')], TOOLS, policy=RunPolicy(invalid_args=Fail())
            )

    def test_injected_cannot_be_set(self) -> None:
        """A model argument naming an injected parameter is a schema violation."""
        context = Context(store={"k": "v"})
        result = dispatch_sync(
            [call("c", "stored", '{"key": "k", "db": {}}')], TOOLS, context=context
        )
        assert "unknown field `db`" in result.messages[0].content


class TestLimits:
    def test_max_tool_calls(self) -> None:
        """Calls past the budget are answered and never run; recoveries take slots too."""
        calls = [call("1", "nope"), call("2", "add", '{"a": 1}'), call("3", "add", '{"a": 2}')]
        result = dispatch_sync(calls, TOOLS, policy=RunPolicy(max_tool_calls=2))
        assert ["error", "ok", "error"] == [m.status for m in result.messages]
        assert "limit of 2 tool calls" in result.messages[2].content
        assert [("add", (1, 1))] == ran


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


class TestDeferral:
    def test_external_approval_and_raised(self) -> None:
        """External tools, approval gates and tools raising deferrals leave the batch."""
        calls = [
            call("1", "lookup"),
            call("2", "pay", '{"amount": 5}'),
            call("3", "needs_ok"),
            call("4", "later"),
            call("5", "add", '{"a": 1}'),
        ]
        result = dispatch_sync(calls, TOOLS)
        assert ["5"] == [m.tool_call_id for m in result.messages]
        assert result.deferred is not None
        assert (["1", "4"], ["2", "3"]) == (
            [c.id for c in result.deferred.calls],
            [c.id for c in result.deferred.approvals],
        )
        assert {"why": "large"} == result.deferred.metadata["3"]
        assert [] == [r for r in ran if r[0] == "pay"]
        assert 4 == sum(isinstance(e, ToolDeferred) for e in result.events)

    @pytest.mark.parametrize(
        "metadata",
        [{"at": object()}, {"ms": float("nan")}, {"k": "\ud800"}, {"n": 10**5000}],
        ids=["object", "nan", "surrogate", "huge-int"],
    )
    @pytest.mark.parametrize("raised", [ApprovalRequired, CallDeferred])
    @pytest.mark.anyio
    async def test_a_deferral_whose_metadata_json_cannot_carry_is_that_calls_error(
        self, raised: type[Exception], metadata: dict[str, object]
    ) -> None:
        """A tool deferring with metadata no result can carry (the result failed to
        encode, or NaN became null) is answered with that call's error."""

        @tool
        def defers() -> str:
            """Defer with bad metadata."""
            raise raised(metadata)

        for result in (
            dispatch_sync([call("1", "defers"), call("2", "add", '{"a": 1}')], [defers, add]),
            await dispatch([call("1", "defers"), call("2", "add", '{"a": 1}')], [defers, add]),
        ):
            assert result.deferred is None
            assert [(m.tool_call_id, m.status) for m in result.messages] == [
                ("1", "error"),
                ("2", "ok"),
            ]
            assert "metadata" in result.messages[0].content
            assert msgspec.json.encode(result)

    @pytest.mark.parametrize(
        "metadata", [{"at": object()}, {"ms": float("nan")}], ids=["object", "nan"]
    )
    def test_a_hooks_deferral_metadata_must_be_json(self, metadata: dict[str, object]) -> None:
        """``Defer(metadata)`` refuses what no result can carry, when it is made."""
        with pytest.raises(TypeError, match="Defer's metadata"):
            Defer(metadata)

    def test_deferred_takes_no_slot(self) -> None:
        """A deferred call does not count against max_tool_calls."""
        calls = [call("1", "lookup"), call("2", "add", '{"a": 1}')]
        result = dispatch_sync(calls, TOOLS, policy=RunPolicy(max_tool_calls=1))
        assert ["ok"] == [m.status for m in result.messages]


@tool
def no_city(city: str) -> ToolResult:
    """Fail the way a tool that knows why does: with an error result."""
    ran.append(("no_city", city))
    return ToolResult.error(
        f"No city named {city}; send a capital.", structured={"city": city}, metadata={"ms": 3}
    )


@tool
async def no_city_async(city: str) -> ToolResult:
    """The same, async."""
    ran.append(("no_city_async", city))
    return ToolResult.error(f"No city named {city}; send a capital.")


class TestErrorResult:
    """A tool returning ``ToolResult.error`` was checked for its status only by a property
    test: it ran and answered, so its message is an error the model reads, word for word,
    and its end is ``ToolCompleted`` with ``is_error`` (not ``ToolFailed``: nothing raised)."""

    def test_answered_as_an_error_with_its_own_words(self) -> None:
        result = dispatch_sync([call("c", "no_city", '{"city": "Atlantis"}')], [no_city])
        assert [
            ToolMessage(
                tool_call_id="c",
                name="no_city",
                content="No city named Atlantis; send a capital.",
                is_error=True,
                artifact=ToolOutput(structured={"city": "Atlantis"}),
                status="error",
            )
        ] == list(result.messages)
        assert [
            ToolStarted(call_id="c", tool_name="no_city", arguments={"city": "Atlantis"}),
            ToolCompleted(call_id="c", tool_name="no_city", is_error=True, metadata={"ms": 3}),
        ] == list(result.events)
        assert (("c",), {"c": {"ms": 3}}) == (result.executed, result.metadata)
        assert [("no_city", "Atlantis")] == ran  # once: an error result is not retried

    @pytest.mark.anyio
    async def test_async_tool_under_await_dispatch(self) -> None:
        result = await dispatch([call("c", "no_city_async", {"city": "Atlantis"})], [no_city_async])
        [message] = result.messages
        assert (True, "error", "No city named Atlantis; send a capital.") == (
            message.is_error,
            message.status,
            message.content,
        )
        assert ["tool_started", "tool_completed"] == kinds(result.events)
        assert isinstance(result.events[-1], ToolCompleted)
        assert result.events[-1].is_error


class TestFold:
    def test_follow_up_metadata_artifacts(self) -> None:
        """Follow-ups and metadata are collected; artifacts become store references."""
        store = MemoryArtifactStore()
        context = Context(run_id="r")
        result = dispatch_sync([call("c", "report")], TOOLS, artifacts=store, context=context)
        [message] = result.messages
        assert "done" == message.content
        assert isinstance(message.artifact, ToolOutput)
        [ref] = message.artifact.artifacts
        assert b"a,b\n1,2\n" == store.get(ref.uri).data  # type: ignore[union-attr]
        assert {"c": {"ms": 5}} == result.metadata
        assert "Now summarise the report." == result.follow_ups[0].content[0].text  # type: ignore[union-attr]

    def test_directory_store(self, tmp_path: object) -> None:
        """The directory store writes each artifact under run/call and keeps a file URI."""
        store = DirectoryArtifactStore(tmp_path)  # type: ignore[arg-type]
        result = dispatch_sync(
            [call("../c", "report")], TOOLS, artifacts=store, context=Context(run_id="r")
        )
        [ref] = result.messages[0].artifact.artifacts  # type: ignore[union-attr]
        assert ref.uri.startswith("file://")
        assert ref.uri.endswith("/r/_c/r.csv")

    @pytest.mark.parametrize(
        ("returned", "says"),
        [
            (lambda: None, "its put() returned NoneType"),
            (lambda: "memory://r/c/r.csv", "its put() returned str"),
            (lambda: _never_awaited(), "its put() returned coroutine"),
            (
                lambda: ArtifactRef("r.csv", "text/csv", "memory://x", "8"),  # type: ignore[arg-type]
                "Expected `int`, got `str` - at `$.size`",
            ),
            (
                lambda: ArtifactRef("r.csv", "text/csv", object(), 8),  # type: ignore[arg-type]
                "Encoding objects of type object is unsupported",
            ),
        ],
        ids=["none", "str", "coroutine", "size-str", "uri-object"],
    )
    def test_a_store_answering_without_a_reference_aborts_with_every_call_answered(
        self, returned: object, says: str
    ) -> None:
        """Defect: what ``put`` returned went into the message as it was: a result holding
        ``None`` or a coroutine (which then never ran) as its artifact reference, or one
        that no longer encodes. A wrong answer found once the tool ran aborts the batch,
        as a failing store does, every call answered and the result encoding."""

        class Store:
            def put(self, run_id: str, call_id: str, artifact: Artifact) -> object:
                return returned()  # type: ignore[operator]

        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(
                [call("c", "report"), call("a", "add", '{"a": 1}')], TOOLS, artifacts=Store()
            )
        # The store raised nothing: the reason says what it returned (it read "raised").
        assert info.value.reason.startswith("the artifact store failed: its put() returned")
        assert "raised" not in info.value.reason
        assert isinstance(info.value.__cause__, TypeError)
        assert says in str(info.value.__cause__)
        assert "return ArtifactRef(name, media_type, uri, size)" in str(info.value.__cause__)
        lost, skipped = info.value.result.messages
        assert "ran, but its result was lost" in lost.content
        assert "interrupted" == skipped.status
        assert [] == ran  # the abort stops the batch: no call starts after it
        msgspec.json.encode(info.value.result)

    def test_truncation(self) -> None:
        """Content over max_result_bytes is cut on a character boundary with a marker."""
        result = dispatch_sync([call("c", "big")], TOOLS, policy=RunPolicy(max_result_bytes=120))
        content = result.messages[0].content
        assert len(content.encode()) <= 120
        assert content.startswith("é")
        assert "[truncated: 1000 bytes, showing the first" in content

    def test_return_of_an_unhashable_type_is_that_calls_error(self) -> None:
        """A value whose type cannot even be hashed is an error message for its call,
        never an abort of the batch."""

        class Unhashable(type):
            __hash__ = None  # type: ignore[assignment]

        class Odd(metaclass=Unhashable):
            pass

        @tool
        def odd() -> object:
            """Return what no JSON can carry."""
            return Odd()

        result = dispatch_sync([call("c", "odd", "{}"), call("d", "add", '{"a": 1}')], [odd, add])
        first, second = result.messages
        assert (True, "error") == (first.is_error, first.status)
        assert "Tool `odd` returned a bad value" in first.content
        assert "2" == second.content


def _wide_tool(limit: int | None = None) -> Tool[..., object]:
    """A tool whose schema alone is about 2 KB, and which returns 5,000 bytes."""
    schema = {
        "type": "object",
        "properties": {f"field_{i}": {"type": "string", "maxLength": 3} for i in range(60)},
        "additionalProperties": False,
    }
    policy = ToolPolicy().with_runtime(max_result_bytes=limit)
    return Tool.from_schema(
        "wide", "Take many fields.", schema, fn=lambda **_: "x" * 5000, policy=policy
    )


#: A one-pixel PNG image.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)


@tool
def chart(words: str = "the chart") -> ToolResult:
    """Draw a chart and write its report."""
    return ToolResult.success(
        [
            TextBlock(words),
            ImageBlock("image/png", PNG),
            FileBlock("r.pdf", "application/pdf", b"%PDF-1.7"),
        ]
    )


class TestAttachments:
    """A result's images and files reach its message as ``attachments``, which each
    provider module sends in its own form; the content names each where it stood."""

    def test_attached_in_order(self) -> None:
        """The message carries the images and files in order, and its text names them;
        it encodes and decodes with them."""
        result = dispatch_sync([call("c", "chart")], Registry.of(chart))
        [message] = result.messages
        assert "the chart\n[image image/png]\n[file r.pdf (application/pdf)]" == message.content
        image, document = message.attachments
        assert (ImageBlock("image/png", PNG), "r.pdf") == (image, document.name)  # type: ignore[union-attr]
        assert message == msgspec.json.decode(msgspec.json.encode(message), type=ToolMessage)

    def test_text_only(self) -> None:
        """A result of text alone has no attachments."""
        assert () == dispatch_sync([call("c", "add", '{"a": 1}')], TOOLS).messages[0].attachments

    def test_limit_bounds_the_text(self) -> None:
        """``max_result_bytes`` cuts the text the model reads; the attachments, which a
        provider sends beside it (and a model reads by their pixels, not their bytes), are
        kept whole, run limit and tool limit alike."""
        long = call("c", "chart", json.dumps({"words": "x" * 500}))
        limited = ToolPolicy().with_runtime(max_result_bytes=60)
        for policy, tools in (
            (RunPolicy(max_result_bytes=60), Registry.of(chart)),
            (RunPolicy(), Registry.of(attrs.evolve(chart, policy=limited))),
        ):
            [message] = dispatch_sync([long], tools, policy=policy).messages
            assert 60 >= len(message.content.encode())
            assert "[truncated: " in message.content
            assert 2 == len(message.attachments)

    def test_added_by_a_hook(self) -> None:
        """An image an ``after_tool`` hook adds is attached like a tool's own."""

        @after_tool
        def screenshot(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
            image = ImageBlock("image/png", url="https://example.com/shot.png")
            return msgspec.structs.replace(result, content=(*result.content, image))

        result = dispatch_sync([call("c", "add", '{"a": 1}')], TOOLS, middleware=[screenshot])
        [message] = result.messages
        assert "2\n[image image/png https://example.com/shot.png]" == message.content
        assert (ImageBlock("image/png", url="https://example.com/shot.png"),) == (
            message.attachments
        )

    @pytest.mark.parametrize(
        ("block", "says"),
        [
            (ImageBlock("png", PNG), "has the media_type 'png', which is no media type"),
            (ImageBlock("application/pdf", b"%PDF"), "which is no image type"),
            (ImageBlock("image/png"), "has neither data nor a url"),
            (FileBlock("r.pdf", "application/pdf"), "has neither data nor a uri"),
        ],
        ids=repr,
    )
    def test_malformed_block_is_the_calls_error(self, block: object, says: str) -> None:
        """An image or file no provider could use is its call's error, saying what is
        wrong; the batch's other calls are answered as usual."""

        @tool
        def broken() -> ToolResult:
            """Return a malformed block."""
            return ToolResult(content=(TextBlock("see"), block))  # type: ignore[arg-type]

        result = dispatch_sync(
            [call("c", "broken"), call("d", "add", '{"a": 1}')], Registry.of(broken, add)
        )
        failed, added = result.messages
        assert ("error", ()) == (failed.status, failed.attachments)
        assert says in failed.content
        assert "2" == added.content


class TestResultBytes:
    """``RunPolicy.max_result_bytes`` bounds every message: a tool's result and every
    answer dispatch writes itself (refusals, suggestions, denials, interruptions), each
    cut with the same marker."""

    LIMIT = 60

    @staticmethod
    def _deny(call: ToolCall, env: DispatchEnv) -> object:
        return Deny("Refused by the operator: " + "this call may not run today. " * 10)

    @pytest.mark.parametrize(
        ("calls", "middleware"),
        [
            ([ToolCall("c", "wide", {"field_1": "too long"})], ()),
            ([ToolCall("c", "nope_" + "x" * 40, {"text": "y" * 500})], ()),
            ([ToolCall("c", "wide", '{"field_1": ')], ()),
            ([ToolCall("i" * 100, "wide", {}), ToolCall("i" * 100, "wide", {})], ()),
            ([ToolCall("c", "wide", {})], ("deny",)),
        ],
        ids=["invalid arguments", "unknown name", "malformed text", "repeated id", "denied"],
    )
    def test_what_dispatch_writes(self, calls: list[ToolCall], middleware: tuple[str, ...]) -> None:
        """Each message fits the limit, in UTF-8 bytes, and says it was cut."""
        hooks = [before_tool(self._deny)] if middleware else []
        result = dispatch_sync(
            calls,
            Registry.of(_wide_tool(), add),
            policy=RunPolicy(max_result_bytes=self.LIMIT),
            middleware=hooks,
        )
        for message in result.messages:
            assert self.LIMIT >= len(message.content.encode())
            assert "[truncated: " in message.content

    def test_interrupted_calls(self) -> None:
        """A call the batch's end cut off is answered within the limit too."""

        @tool
        def halt() -> str:
            """Abort the batch."""
            raise FatalToolError("stop")

        limit = 20  # below "Tool call not run: the batch was aborted."
        calls = [ToolCall("1", "halt", {}), ToolCall("2", "add", {"a": 1})]
        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(calls, Registry.of(halt, add), policy=RunPolicy(max_result_bytes=limit))
        assert "interrupted" == info.value.result.messages[1].status
        for message in info.value.result.messages:
            assert limit >= len(message.content.encode())

    def test_the_run_limit_bounds_a_tool_with_a_larger_own_limit(self) -> None:
        """A tool's own ``max_result_bytes`` only ever makes its limit stricter: the run's
        limit bounds every message (a tool's larger limit overrode it)."""
        result = dispatch_sync(
            [ToolCall("c", "wide", {})],
            Registry.of(_wide_tool(limit=4000)),
            policy=RunPolicy(max_result_bytes=300),
        )
        assert 300 >= len(result.messages[0].content.encode())

    def test_a_tools_own_stricter_limit_bounds_its_refusals_too(self) -> None:
        """A tool's own limit bounds what dispatch writes about its calls, with or without
        a run limit."""
        for policy in (RunPolicy(), RunPolicy(max_result_bytes=5000)):
            result = dispatch_sync(
                [ToolCall("a", "wide", {}), ToolCall("b", "wide", {"field_1": "long"})],
                Registry.of(_wide_tool(limit=100)),
                policy=policy,
            )
            assert ["ok", "error"] == [m.status for m in result.messages]
            for message in result.messages:
                assert 100 >= len(message.content.encode())


class TestEventsAndContext:
    def test_on_event_live_sync(self) -> None:
        """A sync on_event receives exactly the result's events, in order."""
        seen: list[Event] = []
        result = dispatch_sync(
            [call("c", "add", '{"a": 1}'), call("d", "x")], TOOLS, on_event=seen.append
        )
        assert list(result.events) == seen

    def test_every_call_admitted_before_any_tool_runs(self) -> None:
        """The last call's admission answer is out before the first call's tool runs."""
        seen: list[Event] = []

        @tool
        def look(a: int) -> int:
            """Report how many events came before it ran."""
            return len(seen)

        calls = [call("c", "look", '{"a": 1}'), call("d", "nope"), call("e", "look", "{a: x}")]
        result = dispatch_sync(calls, [look], on_event=seen.append)
        kinds = [e.kind for e in seen[: int(result.messages[0].content)]]
        assert ["unknown_tool_call", "invalid_tool_args", "tool_started"] == kinds

    @pytest.mark.anyio
    async def test_on_event_async(self) -> None:
        """An async on_event receives every event in order."""
        seen: list[Event] = []

        async def record(event: Event) -> None:
            seen.append(event)

        result = await dispatch([call("c", "add", '{"a": 1}')], TOOLS, on_event=record)
        assert list(result.events) == seen

    @pytest.mark.anyio
    async def test_on_event_object_with_async_call(self) -> None:
        """An object whose __call__ is async is awaited like an async function."""

        class Recorder:
            def __init__(self) -> None:
                self.kinds: list[str] = []

            async def __call__(self, event: Event) -> None:
                await anyio.lowlevel.checkpoint()
                self.kinds.append(type(event).__name__)

        recorder = Recorder()
        result = await dispatch([call("c", "add", '{"a": 1}')], TOOLS, on_event=recorder)
        assert [type(e).__name__ for e in result.events] == recorder.kinds
        assert ["ToolStarted", "ToolCompleted"] == recorder.kinds

    def test_unsatisfiable_injection(self) -> None:
        """A tool whose injection the context cannot satisfy fails before anything runs."""
        with pytest.raises(ToolDefinitionError, match="no store"):
            dispatch_sync(
                [call("a", "add", '{"a": 1}'), call("b", "stored", '{"key": "k"}')], TOOLS
            )
        assert [] == ran

    def test_sync_path_has_no_event_loop(self) -> None:
        """dispatch_sync runs synchronous tools without any event loop."""
        seen: list[str] = []

        @tool
        def probe() -> str:
            try:
                asyncio.get_running_loop()
                seen.append("asyncio")
            except RuntimeError:
                pass
            try:
                trio.lowlevel.current_trio_token()
                seen.append("trio")
            except RuntimeError:
                pass
            return "x"

        dispatch_sync([call("c", "probe")], [probe])
        assert [] == seen

    def test_ledger_hooks(self) -> None:
        """A ledger hears started before any tool runs and settled after each call."""
        log: list[tuple[str, ...]] = []

        class Ledger:
            def started(self, run_id: str, call_id: str, tool_name: str, arguments: object) -> None:
                log.append(("started", call_id, str(ran)))

            def settled(self, run_id: str, call_id: str, status: str) -> None:
                log.append(("settled", call_id, status))

        dispatch_sync(
            [call("1", "add", '{"a": 1}'), call("2", "add", '{"a": 2}')], TOOLS, ledger=Ledger()
        )
        assert [
            ("started", "1", "[]"),
            ("started", "2", "[]"),
            ("settled", "1", "ok"),
            ("settled", "2", "ok"),
        ] == log

    def test_events_encode(self) -> None:
        """Every event of a mixed batch encodes to JSON and decodes back."""
        calls = [
            call("1", "add", '{"a": 1}'),
            call("2", "nope"),
            call("3", "add", "{a:1}"),
            call("4", "lookup"),
        ]
        result = dispatch_sync(calls, TOOLS)
        data = msgspec.json.encode(result.events)
        assert list(result.events) == msgspec.json.decode(data, type=list[Event])
        assert ["unknown_tool_call", "invalid_tool_args", "tool_deferred"] == kinds(result.events)[
            :3
        ]
        assert kinds(result.events) == [event.kind for event in result.events]


# --- live events: Inject[Emit] reaches on_event while the tool runs ------------------

#: How long a live-delivery test waits, at most, for what should come at once: a guard,
#: never a synchronisation (under trio's autojumping MockClock it passes in no time once
#: nothing else can run, so a hand-off that is not live fails at once; elsewhere it fails
#: after this many seconds instead of hanging).
_GUARD = 10.0

#: How each live-delivery test runs its batch: ``await dispatch`` under trio or asyncio,
#: or ``dispatch_sync`` on its asyncio loop or under trio.
_RUNNERS = ["trio", "asyncio", "dispatch_sync", "dispatch_sync-trio"]


def _run_batch(
    runner: str,
    calls: list[ToolCall],
    tools: list[Tool[..., object]],
    on_event: Callable[[Event], object],
    *,
    mock_clock: bool = False,
    **options: Any,
) -> DispatchResult:
    """``calls`` dispatched by ``runner``, under the :data:`_GUARD` timeout (on trio's
    autojumping mock clock with ``mock_clock``: only when no thread of the test's must be
    waited for, as the mock clock jumps while the loop waits for one)."""
    if runner.startswith("dispatch_sync"):  # (the guard: the batch's deadline)
        backend = "trio" if runner.endswith("trio") else "asyncio"
        policy = attrs.evolve(options.pop("policy", RunPolicy()), deadline=_GUARD)
        return dispatch_sync(
            calls, tools, on_event=on_event, backend=backend, policy=policy, **options
        )

    async def main() -> DispatchResult:
        with anyio.fail_after(_GUARD):
            return await dispatch(calls, tools, on_event=on_event, **options)

    if runner == "trio":
        clock = trio.testing.MockClock(autojump_threshold=0) if mock_clock else None
        return trio.run(main, clock=clock)
    return asyncio.run(main())


class TestLiveEmit:
    """An event a tool emits reaches ``on_event`` while the tool still runs: each tool here
    waits for what only the handler does on hearing its progress event, so a batch ends
    only when the hand-off is live."""

    @pytest.mark.parametrize("runner", _RUNNERS)
    def test_async_tool_to_async_handler(self, runner: str) -> None:
        """Defect: an async handler got an async tool's events only when the tool had
        returned (at dispatch's next await point), so a tool waiting for its host to hear
        its progress waited forever."""
        heard: list[anyio.Event] = []

        @tool
        async def long_job(steps: int, emit: Inject[Emit]) -> str:
            """Report progress, and go on once the host has heard it."""
            for step in range(steps):
                heard.append(anyio.Event())  # (made on the batch's own loop)
                emit("progress", {"step": step})
                await heard[step].wait()
            return "finished"

        async def on_event(event: Event) -> None:
            if isinstance(event, Custom):
                heard[event.data["step"]].set()  # type: ignore[index]

        result = _run_batch(
            runner, [call("c", "long_job", '{"steps": 3}')], [long_job], on_event, mock_clock=True
        )
        assert result.messages[0].content == "finished"
        assert kinds(result.events) == ["tool_started", *["custom"] * 3, "tool_completed"]

    @pytest.mark.parametrize("route", ["blocking", "timeout"])
    @pytest.mark.parametrize("runner", _RUNNERS)
    def test_threaded_tool_to_async_handler(self, runner: str, route: str) -> None:
        """Defect: an async handler got the events of a sync tool on a worker thread
        (``blocking=True`` or a timeout) only once the thread had finished."""
        heard = threading.Event()

        @tool(blocking=route == "blocking", timeout=None if route == "blocking" else 60.0)
        def long_job(emit: Inject[Emit]) -> str:
            """Report progress, and go on once the host has heard it."""
            emit("progress", {"pct": 50})
            return "finished" if heard.wait(_GUARD) else "the host never heard the progress"

        async def on_event(event: Event) -> None:
            await anyio.lowlevel.checkpoint()  # (a handler that awaits, as real ones do)
            if isinstance(event, Custom):
                heard.set()

        result = _run_batch(runner, [call("c", "long_job")], [long_job], on_event)
        assert result.messages[0].content == "finished"

    @pytest.mark.parametrize("runner", _RUNNERS)
    def test_order_and_once_with_concurrent_threads(self, runner: str) -> None:
        """Live events from several threads at once reach the handler in the order the
        result lists them, each once."""

        @tool(blocking=True)
        def counter(n: int, emit: Inject[Emit]) -> int:
            """Count to n, reporting each step."""
            for i in range(n):
                emit("step", i)
            return n

        seen: list[Event] = []

        async def on_event(event: Event) -> None:
            await anyio.lowlevel.checkpoint()
            seen.append(event)

        calls = [call(f"c{i}", "counter", {"n": 20}) for i in range(4)]
        result = _run_batch(runner, calls, [counter], on_event, policy=RunPolicy(max_concurrency=4))
        assert [m.content for m in result.messages] == ["20"] * 4
        assert seen == list(result.events)
        assert len(result.events) == 4 * 22

    @pytest.mark.parametrize("runner", ["trio", "asyncio"])
    def test_handler_failure_while_the_tool_runs_aborts(self, runner: str) -> None:
        """A handler that raises on a live event fails the run as on any other event: the
        batch aborts with every call answered, the next call never starts."""

        @tool
        async def long_job(emit: Inject[Emit]) -> str:
            """Report progress, and go on once the host has heard it."""
            emit("progress", None)
            await anyio.lowlevel.checkpoint()
            return "finished"

        async def on_event(event: Event) -> None:
            if isinstance(event, Custom):
                raise ValueError("the progress bar broke")

        calls = [call("a", "long_job"), call("b", "long_job")]
        with pytest.raises(DispatchAborted, match="progress bar broke") as raised:
            _run_batch(runner, calls, [long_job], on_event, mock_clock=True)
        assert [m.tool_call_id for m in raised.value.result.messages] == ["a", "b"]
        assert raised.value.result.executed == ("a",)

    @pytest.mark.parametrize("runner", ["trio", "asyncio"])
    def test_handler_base_exception_ends_a_running_tool(self, runner: str) -> None:
        """What the handler raises that is no ``Exception`` leaves dispatch bare, at once:
        the tool that emitted is cancelled, not waited for."""

        class Stop(BaseException):
            pass

        @tool
        async def endless(emit: Inject[Emit]) -> str:
            """Report progress, then wait forever."""
            emit("progress", None)
            await anyio.sleep_forever()
            return "never"

        async def on_event(event: Event) -> None:
            if isinstance(event, Custom):
                raise Stop

        async def main() -> float:
            began = anyio.current_time()
            with anyio.move_on_after(_GUARD), pytest.raises(Stop):
                await dispatch([call("c", "endless")], [endless], on_event=on_event)
            return anyio.current_time() - began

        if runner == "trio":
            took = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
        else:
            took = asyncio.run(main())
        assert took < _GUARD  # (not left to the guard: the handler's exception ended it)

    @pytest.mark.parametrize("runner", ["trio", "asyncio"])
    def test_late_event_of_an_abandoned_thread_is_dropped(self, runner: str) -> None:
        """An event a timed-out tool's thread emits after dispatch returned never reaches
        the handler (nor any later batch's)."""
        release, emitted = threading.Event(), threading.Event()

        @tool(timeout=0.01)
        def stuck(emit: Inject[Emit]) -> str:
            """Block past its timeout, then report."""
            release.wait(_GUARD)
            emit("late", None)
            emitted.set()
            return "too late"

        seen: list[str] = []

        async def on_event(event: Event) -> None:
            seen.append(event.kind)

        async def main() -> list[str]:
            result = await dispatch([call("c", "stuck")], [stuck], on_event=on_event)
            handled = list(seen)
            release.set()
            await anyio.to_thread.run_sync(emitted.wait, _GUARD)
            for _ in range(10):  # (the loop runs whatever the late event scheduled)
                await anyio.lowlevel.checkpoint()
            assert result.messages[0].status == "error"
            assert handled == kinds(result.events)
            return list(seen)

        after = trio.run(main) if runner == "trio" else asyncio.run(main())
        assert "custom" not in after
        assert emitted.is_set()


class TestLiveEmitSyncHandler:
    """A synchronous handler is called as the event happens, on every route: on the thread
    that emits it (a tool's worker thread included)."""

    @pytest.mark.parametrize("runner", _RUNNERS)
    @pytest.mark.parametrize("route", ["inline", "async", "blocking", "timeout"])
    def test_called_at_once_on_the_emitting_thread(self, runner: str, route: str) -> None:
        threads: list[int] = []
        heard: list[int] = []

        def on_event(event: Event) -> None:
            if isinstance(event, Custom):
                heard.append(threading.get_ident())

        if route == "async":

            @tool(name="job")
            async def async_job(emit: Inject[Emit]) -> str:
                """Report progress; say whether the host heard it at once."""
                threads.append(threading.get_ident())
                emit("progress", None)
                return "heard" if heard else "not heard"

            job = async_job
        else:

            @tool(
                name="job",
                blocking=route == "blocking",
                timeout=60.0 if route == "timeout" else None,
            )
            def sync_job(emit: Inject[Emit]) -> str:
                """Report progress; say whether the host heard it at once."""
                threads.append(threading.get_ident())
                emit("progress", None)
                return "heard" if heard else "not heard"

            job = sync_job
        result = _run_batch(runner, [call("c", "job")], [job], on_event)
        assert result.messages[0].content == "heard"
        assert heard == threads  # called on the tool's own thread


class TestInputs:
    def test_calls_as_an_iterator(self) -> None:
        """Calls given as a one-shot iterator are all answered, on every path."""
        calls = [call("1", "add", '{"a": 1}'), call("2", "nope")]
        assert ["1", "2"] == [m.tool_call_id for m in dispatch_sync(iter(calls), TOOLS).messages]
        gated = [call("1", "add", '{"a": 1}'), call("2", "pay", '{"amount": 1}')]
        result = dispatch_sync(
            iter(gated), TOOLS, on_deferred=lambda requests: requests.approve_all()
        )
        assert ["1", "2"] == [m.tool_call_id for m in result.messages]

    @pytest.mark.parametrize(
        ("advertised", "expected"),
        [("add", r"not one string; pass \['add'\]"), (3, "tool names .* got int")],
        ids=["str", "int"],
    )
    def test_advertised_that_is_not_names(self, advertised: object, expected: str) -> None:
        """A single name (read as its letters, it would deny every tool) is refused at once."""
        with pytest.raises(TypeError, match=expected):
            dispatch_sync([call("c", "add", '{"a": 1}')], TOOLS, advertised=advertised)  # type: ignore[arg-type]
        assert [] == ran

    @pytest.mark.parametrize(
        "keywords",
        [
            {},
            {"policy": RunPolicy(max_tool_calls=2)},
            {"policy": RunPolicy(max_tool_calls=1)},
            {"approvals": DeferredToolResults().approve("1").approve("2")},
        ],
        ids=["plain", "limited", "over-the-limit", "resumed"],
    )
    @pytest.mark.parametrize("fresh", [False, True], ids=["known-registry", "new-registry"])
    @pytest.mark.anyio
    async def test_calls_of_a_toolcall_subclass_run(
        self, keywords: dict[str, object], fresh: bool
    ) -> None:
        """A call of a ``ToolCall`` subclass is a call like any other, under every
        admission (a repeated id, a limit, a resume, a registry's first batch): it runs, or
        is refused for what it is — never answered as a cancelled batch."""

        class ProviderCall(ToolCall):
            pass

        first, second = ProviderCall("1", "add", '{"a": 1}'), ProviderCall("2", "add", '{"a": 2}')
        for batch in ([first], [first, second], [first, second, first]):
            plain = [ToolCall(c.id, c.name, c.arguments) for c in batch]
            expected = dispatch_sync(plain, TOOLS, **keywords)  # type: ignore[arg-type]
            registry = Registry.of(*TOOLS.tools()) if fresh else TOOLS
            for result in (
                dispatch_sync(batch, registry, **keywords),  # type: ignore[arg-type]
                await dispatch(batch, registry, **keywords),  # type: ignore[arg-type]
            ):
                assert [(m.tool_call_id, m.status, m.content) for m in result.messages] == [
                    (m.tool_call_id, m.status, m.content) for m in expected.messages
                ]
                assert result.executed == expected.executed

    @pytest.mark.parametrize(
        ("name", "text", "status"),
        [
            ("add", '{"a": 1}', "ok"),
            ("add", "{a: 1,}", "ok"),  # repaired
            ("add", '{"a": "x"}', "error"),
            ("add", "{", "error"),
            ("lookup", '{"q": 1}', None),  # an external tool: deferred
            ("nope", '{"a": 1}', "error"),
        ],
    )
    @pytest.mark.anyio
    async def test_arguments_as_a_str_subclass_are_read_as_their_text(
        self, name: str, text: str, status: str | None
    ) -> None:
        """Raw arguments of a ``str`` subclass (an SDK's own string type) are the text they
        hold: dispatch raised msgspec's TypeError, or answered with events msgspec could
        not encode. Each call is answered as its plain text's is, and the result encodes."""

        class SdkText(str):
            pass

        expected = dispatch_sync([call("1", name, text)], TOOLS)
        for result in (
            dispatch_sync([call("1", name, SdkText(text))], TOOLS),
            await dispatch([call("1", name, SdkText(text))], TOOLS),
        ):
            assert [m.status for m in result.messages] == ([status] if status else [])
            assert result.messages == expected.messages
            assert msgspec.json.encode(result) == msgspec.json.encode(expected)

    @pytest.mark.anyio
    async def test_an_object_posing_as_a_toolcall_is_refused(self) -> None:
        """An object whose ``__class__`` says ``ToolCall`` is not one (msgspec cannot
        encode it, nor rebuild it for a rewrite): dispatch refuses it up front, saying
        what it got, and nothing runs."""

        class Posing:
            __class__ = ToolCall  # type: ignore[assignment]

            def __init__(self, call_id: str, name: str, arguments: str) -> None:
                self.id, self.name, self.arguments, self.invalid = call_id, name, arguments, None

        for batch in (
            [Posing("1", "add", '{"a": 1}')],
            [call("0", "add"), Posing("1", "lookup", "{}")],
        ):
            with pytest.raises(TypeError, match="dispatch takes ToolCall values, got Posing"):
                dispatch_sync(batch, TOOLS)  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="dispatch takes ToolCall values, got Posing"):
                await dispatch(batch, TOOLS)  # type: ignore[arg-type]
        assert ran == []

    @pytest.mark.parametrize(
        ("keyword", "value", "says"),
        [
            ("on_event", 5, "on_event must be a function of the event"),
            ("on_event", "print", "on_event must be a function of the event"),
            ("on_deferred", 5, "on_deferred must be a function of the deferred calls"),
            ("cancellation", True, "cancellation must be a Cancellation"),
            ("cancellation", 5, "cancellation must be a Cancellation"),
        ],
    )
    @pytest.mark.anyio
    async def test_host_callbacks_of_the_wrong_kind_are_refused_before_anything_runs(
        self, keyword: str, value: object, says: str
    ) -> None:
        """A handler that cannot be called (or a cancellation that is no handle) is a
        TypeError saying what to pass, before any tool runs: a non-callable ``on_event``
        let the first call run and then aborted the batch, and a bad ``cancellation`` was
        an AttributeError."""
        calls = [call("1", "add", '{"a": 1}'), call("2", "pay", '{"amount": 1}')]
        with pytest.raises(TypeError, match=says):
            dispatch_sync(calls, TOOLS, **{keyword: value})  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=says):
            await dispatch(calls, TOOLS, **{keyword: value})  # type: ignore[arg-type]
        assert [] == ran

    @pytest.mark.parametrize(
        ("store", "says"),
        [
            (object(), "got object, and it has no `put` method"),
            ("/tmp/artifacts", "got str, and it has no `put` method"),
            (_PutIsNoFunction(), "its `put` is int, which cannot be called"),
            (_AsyncPut(), "its `put` is async, which dispatch does not await"),
        ],
        ids=["object", "a path", "put-not-callable", "async-put"],
    )
    @pytest.mark.anyio
    async def test_an_artifact_store_without_a_put_to_call_is_refused_before_anything_runs(
        self, store: object, says: str
    ) -> None:
        """Defect: a store without a usable ``put`` was found only once a tool had returned
        artifacts, after the batch's tools ran (their side effects done, that tool's result
        lost in the abort); now a TypeError saying what to pass, before any tool runs."""
        calls = [call("1", "add", '{"a": 1}'), call("2", "report")]
        refused = "artifacts must be an artifact store"
        with pytest.raises(TypeError, match=refused) as synchronous:
            dispatch_sync(calls, TOOLS, artifacts=store)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=refused) as awaited:
            await dispatch(calls, TOOLS, artifacts=store)  # type: ignore[arg-type]
        for info in (synchronous, awaited):
            assert says in str(info.value)
            assert "MemoryArtifactStore()" in str(info.value)
        assert [] == ran

    @pytest.mark.parametrize("context", [{"store": {"k": "v"}}, "run-1"], ids=["dict", "str"])
    @pytest.mark.anyio
    async def test_a_context_that_is_no_context_is_refused_before_anything_runs(
        self, context: object
    ) -> None:
        """An injecting tool, a ledger or an artifact store reads the context: one that is
        no ``Context`` is a TypeError saying how to make one (it was an AttributeError, or
        blamed on the ledger or the store), before any tool runs."""

        class Ledger:
            def started(self, *args: object) -> None:
                ran.append(("started", args))

            def settled(self, *args: object) -> None:
                pass

            def unresolved(self, run_id: str | None = None) -> tuple[()]:
                return ()

        for calls, options in (
            ([call("1", "stored", '{"key": "k"}')], {}),
            ([call("1", "add", '{"a": 1}')], {"ledger": Ledger()}),
            # the store is told the context's run_id: it was blamed on the store, the
            # tool having run and its result lost
            ([call("1", "add", '{"a": 1}'), call("2", "report")], {"artifacts": _NoStore()}),
        ):
            with pytest.raises(TypeError, match="context must be a Context"):
                dispatch_sync(calls, TOOLS, context=context, **options)  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="context must be a Context"):
                await dispatch(calls, TOOLS, context=context, **options)  # type: ignore[arg-type]
        assert [] == ran

    @pytest.mark.parametrize("name", [None, 3], ids=["none", "int"])
    @pytest.mark.anyio
    async def test_a_call_whose_name_is_no_str_is_refused_saying_so(self, name: object) -> None:
        """A hand-built call with a name that is no str (msgspec does not check fields at
        construction) is a TypeError naming the call, before any tool runs (it was
        "'NoneType' object is not subscriptable" from the suggestion index)."""
        calls = [call("1", "add", '{"a": 1}'), ToolCall("2", name, "{}")]  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"ToolCall.name must be a str, got .* in call '2'"):
            dispatch_sync(calls, TOOLS)
        with pytest.raises(TypeError, match=r"ToolCall.name must be a str, got .* in call '2'"):
            await dispatch(calls, TOOLS)
        assert [] == ran

    def test_cancellation_handle_reused(self) -> None:
        """A handle reused across batches does not accumulate the batches' callbacks."""
        from tinytools import Cancellation

        handle = Cancellation()
        context = Context(store={"k": "v"})
        for _ in range(20):
            dispatch_sync(
                [call("c", "stored", '{"key": "k"}')], TOOLS, context=context, cancellation=handle
            )
        # A leaked callback has no visible effect (its call is over); only the handle's
        # list of callbacks shows the leak, so the test reads it.
        assert [] == handle._callbacks


class TestRunPolicyLimits:
    @pytest.mark.parametrize("field", ["deadline", "tool_timeout"])
    @pytest.mark.parametrize(
        "value", [0, -1, float("inf"), float("nan"), True, "1", 10**400], ids=lambda v: repr(v)[:20]
    )
    def test_bad_seconds(self, field: str, value: object) -> None:
        """A time limit is a finite number of seconds > 0; the error names the field (an
        int past float range too: dispatch raised OverflowError adding it to the clock)."""
        with pytest.raises(ValueError, match=f"{field} must be a finite number of seconds > 0"):
            RunPolicy(**{field: value})  # type: ignore[arg-type]

    @pytest.mark.parametrize("value", [0, -1, 1.5, True, "1"], ids=repr)
    def test_bad_result_bytes(self, value: object) -> None:
        """A result limit is an int > 0 (a float would later fail to cut the text)."""
        with pytest.raises(ValueError, match="max_result_bytes must be an int > 0"):
            RunPolicy(max_result_bytes=value)  # type: ignore[arg-type]

    def test_good_limits(self) -> None:
        """Positive limits, or None, are accepted as given."""
        policy = RunPolicy(deadline=1.5, tool_timeout=2, max_result_bytes=10)
        assert (1.5, 2, 10) == (policy.deadline, policy.tool_timeout, policy.max_result_bytes)
