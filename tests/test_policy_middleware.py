"""Tests for `tinytools._policy_middleware`, `@tool`'s policy shortcuts and `Registry.policies`."""

from __future__ import annotations

import functools
import inspect
from typing import Literal

import attrs
import msgspec
import pytest
import trio

from tinytools import (
    Context,
    DeferredToolResults,
    DispatchResult,
    ExposureExplanation,
    ImageBlock,
    JsonBlock,
    PolicyExposure,
    Registry,
    RunPolicy,
    TextBlock,
    Tool,
    ToolCall,
    ToolDefinitionError,
    ToolPolicy,
    ToolPolicyMiddleware,
    ToolResult,
    Workspace,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools._declare.decorate import _Options
from tinytools._engine.env import DispatchEnv
from tinytools.events import ToolApproved, ToolDeferred, ToolDenied
from tinytools.policies import Rewrite

Outcome = Literal["runs", "denied", "deferred"]
M = ToolPolicyMiddleware
CLASSIFIED = ToolPolicy.classified()
READ_ONLY = ToolPolicy.read_only()
SANDBOXED = Workspace(sandboxed=True)
BACKGROUND = Workspace(background=True)


def probe(policy: ToolPolicy, runs: list[str], name: str = "probe") -> Tool[[], str]:
    """A tool with ``policy`` that records each run in ``runs``."""

    def fn() -> str:
        """Record that the tool ran."""
        runs.append(name)
        return "ran"

    return tool(name=name, policy=policy)(fn)


def probe_args(policy: ToolPolicy, runs: list[str]) -> Tool[[int], str]:
    """A tool ``probe(amount)`` with ``policy`` that records each run in ``runs``."""

    def probe(amount: int) -> str:
        """Record that the tool ran, and with what."""
        runs.append(f"probe {amount}")
        return "ran"

    return tool(policy=policy)(probe)


def context(workspace: Workspace | None) -> Context:
    """A context carrying ``workspace``, or none at all."""
    return Context() if workspace is None else Context(values={Workspace: workspace})


@attrs.frozen
class Case:
    """One row: a middleware, a tool's policy, the workspace, and what must happen."""

    id: str
    middleware: ToolPolicyMiddleware
    policy: ToolPolicy
    workspace: Workspace | None
    outcome: Outcome
    rule: str | None = None


CASES = [
    Case("classification/unclassified", M.require_classification(), ToolPolicy(), None,
         "denied", "require_classification"),
    Case("classification/classified", M.require_classification(), CLASSIFIED, None, "runs"),
    Case("sandbox/required, no workspace", M.require_sandbox(),
         CLASSIFIED.with_runtime(sandbox="required"), None, "denied", "require_sandbox"),
    Case("sandbox/required, unsandboxed", M.require_sandbox(),
         CLASSIFIED.with_runtime(sandbox="required"), Workspace(), "denied", "require_sandbox"),
    Case("sandbox/required, sandboxed", M.require_sandbox(),
         CLASSIFIED.with_runtime(sandbox="required"), SANDBOXED, "runs"),
    Case("sandbox/inherit, unsandboxed", M.require_sandbox(), CLASSIFIED, None, "runs"),
    Case("approval/not read-only", M.require_approval(), CLASSIFIED, None,
         "deferred", "require_approval"),
    Case("approval/unclassified read_only flag", M.require_approval(),
         ToolPolicy().with_side_effects(read_only=True), None, "deferred", "require_approval"),
    Case("approval/read-only", M.require_approval(), READ_ONLY, None, "runs"),
    Case("approval/read-only that also destroys", M.require_approval(),
         READ_ONLY.with_side_effects(destructive=True), None, "deferred", "require_approval"),
    Case("approval/read-only that also pays", M.require_approval(),
         CLASSIFIED.with_side_effects(read_only=True, payment=True), None,
         "deferred", "require_approval"),
    Case("approval/read-only over the network", M.require_approval(),
         READ_ONLY.with_side_effects(network=True), None, "runs"),
    Case("background/not safe, background", M.require_background_safe(), CLASSIFIED,
         BACKGROUND, "denied", "require_background_safe"),
    Case("background/safe, background", M.require_background_safe(),
         CLASSIFIED.with_access(background_safe=True), BACKGROUND, "runs"),
    Case("background/not safe, attended", M.require_background_safe(), CLASSIFIED, None, "runs"),
    Case("deny/network declared", M.deny_side_effects("network"),
         CLASSIFIED.with_side_effects(network=True), None, "denied", "deny_side_effects"),
    Case("deny/other effect declared", M.deny_side_effects("network"),
         CLASSIFIED.with_side_effects(writes_files=True), None, "runs"),
    Case("deny/default denies every effect", M.deny_side_effects(),
         CLASSIFIED.with_side_effects(payment=True), None, "denied", "deny_side_effects"),
    Case("deny/default lets read-only run", M.deny_side_effects(), READ_ONLY, None, "runs"),
    Case("strict/unclassified", M.strict(), ToolPolicy(), None, "denied",
         "require_classification"),
    Case("strict/sandbox required", M.strict(), READ_ONLY.with_runtime(sandbox="required"),
         None, "denied", "require_sandbox"),
    Case("strict/classified, not read-only", M.strict(), CLASSIFIED, None,
         "deferred", "require_approval"),
    Case("strict/unattended, not background-safe", M.strict(), READ_ONLY, BACKGROUND,
         "denied", "require_background_safe"),
    Case("strict/read-only", M.strict(), READ_ONLY, None, "runs"),
    Case("strict/read-only that writes files", M.strict(),
         READ_ONLY.with_side_effects(writes_files=True), None, "deferred", "require_approval"),
    Case("bytes/never hides", M.enforce_result_bytes(limit=1), ToolPolicy(), None, "runs"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
class TestEnforcementTable:
    def test_exposure(self, case: Case) -> None:
        """A tool that breaks a refusing rule is not exposed, and the reason names the rule."""
        exposure = case.middleware.expose(
            Registry.of(probe(case.policy, [])), context(case.workspace)
        )
        if case.outcome == "denied":
            assert () == exposure.allowed
            assert [case.rule] == [e.reason.split(":")[0] for e in exposure.hidden]
        else:
            assert (("probe",), ()) == (exposure.allowed, exposure.hidden)

    def test_execution(self, case: Case) -> None:
        """The call runs, is denied with a message naming the rule, or is deferred."""
        runs: list[str] = []
        result = dispatch_sync(
            [ToolCall("c1", "probe", {})],
            Registry.of(probe(case.policy, runs)),
            middleware=[case.middleware],
            context=context(case.workspace),
        )
        if case.outcome == "runs":
            assert (["probe"], ["ok"]) == (runs, [m.status for m in result.messages])
        elif case.outcome == "denied":
            denied = [e for e in result.events if isinstance(e, ToolDenied)]
            assert ([], ["denied"]) == (runs, [m.status for m in result.messages])
            assert [result.messages[0].content] == [e.message for e in denied]
            assert f"(policy rule: {case.rule})." in denied[0].message
            assert result.messages[0].content.startswith("Tool `probe` was not run: ")
        else:
            deferred = [e for e in result.events if isinstance(e, ToolDeferred)]
            assert ([], ()) == (runs, result.messages)
            assert result.deferred is not None
            assert ["c1"] == [c.id for c in result.deferred.all]
            assert [case.rule] == [e.metadata["rule"] for e in deferred]


class TestApproval:
    def test_approved_call_passes(self) -> None:
        """A call the host approved on resume is not deferred again and runs."""
        runs: list[str] = []
        tools = Registry.of(probe(CLASSIFIED, runs))
        first = dispatch_sync(
            [ToolCall("c1", "probe", {})], tools, middleware=[M.require_approval()]
        )
        assert first.deferred is not None
        resumed = dispatch_sync(
            first.deferred.all,
            tools,
            middleware=[M.require_approval()],
            approvals=DeferredToolResults().approve("c1"),
        )
        assert (["probe"], ["ok"]) == (runs, [m.status for m in resumed.messages])
        assert [ToolApproved] == [type(e) for e in resumed.events][:1]

    def test_bound_approval_covers_only_its_call(self) -> None:
        """On resume, an approval bound to a deferred call does not cover another tool
        called under its id, even one require_approval would defer."""
        runs: list[str] = []
        tools = Registry.of(probe(CLASSIFIED, runs), probe(CLASSIFIED, runs, "other"))
        guard = [M.require_approval()]
        first = dispatch_sync([ToolCall("c1", "probe", {})], tools, middleware=guard)
        assert first.deferred is not None
        results = first.deferred.approve("c1")
        forged = dispatch_sync(
            [ToolCall("c1", "other", {})], tools, middleware=guard, approvals=results
        )
        assert ([], ()) == (runs, forged.messages)
        assert forged.deferred is not None
        assert ["other"] == [c.name for c in forged.deferred.approvals]
        resumed = dispatch_sync(first.deferred.all, tools, middleware=guard, approvals=results)
        assert (["probe"], ("c1",)) == (runs, resumed.executed)

    @pytest.mark.parametrize("driver", ["dispatch_sync", "dispatch"])
    def test_a_hook_changing_an_approved_call_on_resume_defers_it_again(self, driver: str) -> None:
        """A hook after ``require_approval`` that changes a call the host's decision
        approved leaves a call nobody approved: it is deferred again, never run, and runs
        once the changed call itself is approved (it ran with the changed arguments)."""
        runs: list[str] = []
        tools = Registry.of(probe_args(CLASSIFIED, runs))

        def widen(call: ToolCall, env: DispatchEnv) -> ToolCall:
            return msgspec.structs.replace(call, arguments={"amount": 500})

        guard = [M.require_approval(), before_tool(widen)]

        def go(calls: list[ToolCall], approvals: DeferredToolResults | None) -> DispatchResult:
            if driver == "dispatch_sync":
                return dispatch_sync(calls, tools, middleware=guard, approvals=approvals)
            return trio.run(
                functools.partial(dispatch, calls, tools, middleware=guard, approvals=approvals)
            )

        first = go([ToolCall("c1", "probe", {"amount": 5})], None)
        assert first.deferred is not None
        resumed = go(list(first.deferred.all), first.deferred.approve("c1"))
        assert ([], (), ()) == (runs, resumed.messages, resumed.executed)
        assert resumed.deferred is not None
        assert [{"amount": 500}] == [c.arguments for c in resumed.deferred.approvals]
        assert "changed the call after the decision" in str(resumed.deferred.metadata["c1"])
        again = go(list(resumed.deferred.all), resumed.deferred.approve("c1"))
        assert (["probe 500"], ("c1",)) == (runs, again.executed)

    def test_approval_does_not_lift_refusals(self) -> None:
        """An approved call of a tool that breaks a refusing rule is still denied."""
        runs: list[str] = []
        result = dispatch_sync(
            [ToolCall("c1", "probe", {})],
            Registry.of(probe(ToolPolicy(), runs)),
            middleware=[M.strict()],
            approvals=DeferredToolResults().approve("c1"),
        )
        assert ([], ["denied"]) == (runs, [m.status for m in result.messages])


class TestResolution:
    def test_unknown_left_to_dispatch(self) -> None:
        """A call naming no callable tool passes on unchanged, to the unknown-tool policy."""
        result = dispatch_sync(
            [ToolCall("c1", "nope", {})],
            Registry.of(probe(ToolPolicy(), [])),
            middleware=[M.strict()],
        )
        assert [] == [e for e in result.events if isinstance(e, ToolDenied)]
        assert result.messages[0].content.startswith("Unknown tool `nope`")

    def test_rewrite_target_is_judged(self) -> None:
        """A call the Rewrite policy retargets is judged as its target, so no rule is skipped."""
        runs: list[str] = []
        result = dispatch_sync(
            [ToolCall("c1", "nope", {})],
            Registry.of(probe(ToolPolicy(), runs, "compat")),
            policy=RunPolicy(unknown_tool=Rewrite("compat")),
            middleware=[M.require_classification()],
        )
        assert ([], ["denied"]) == (runs, [m.status for m in result.messages])
        assert result.messages[0].content.startswith("Tool `compat` was not run")


class TestBuilders:
    def test_class_and_instance(self) -> None:
        """On the class a builder starts from no rules; on a middleware it adds its rule."""
        chained = M.require_classification().require_sandbox()
        assert (True, True, False) == (chained.classification, chained.sandbox, chained.approval)
        assert (False, True) == (M.require_sandbox().classification, M.require_sandbox().sandbox)

    def test_strict_is_every_fail_closed_rule(self) -> None:
        """strict() is classification, sandbox, approval, background and result bytes."""
        expected = (
            M.require_classification()
            .require_sandbox()
            .require_approval()
            .require_background_safe()
            .enforce_result_bytes()
        )
        assert expected == M.strict()
        assert () == M.strict().denied

    def test_repr_is_the_builder_chain(self) -> None:
        """The repr is the chain of builders that makes the middleware."""
        middleware = M.require_sandbox().deny_side_effects("payment", "network")
        assert (
            "ToolPolicyMiddleware.require_sandbox().deny_side_effects('network', 'payment')"
            == repr(middleware)
        )
        assert "ToolPolicyMiddleware.strict()" == repr(M.strict())
        assert "ToolPolicyMiddleware()" == repr(M())
        assert "ToolPolicyMiddleware.enforce_result_bytes(limit=9)" == repr(
            M.enforce_result_bytes(9)
        )

    def test_frozen(self) -> None:
        """A middleware is a frozen value."""
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            M.strict().sandbox = False  # type: ignore[misc]

    def test_deny_accumulates(self) -> None:
        """Denied side effects accumulate across calls, deduplicated, in field order."""
        middleware = M.deny_side_effects("payment").deny_side_effects("network", "payment")
        assert ("network", "payment") == middleware.denied
        assert 6 == len(M.deny_side_effects().denied)

    @pytest.mark.parametrize("kind", ["netwrk", "read_only", ""])
    def test_deny_unknown_kind(self, kind: str) -> None:
        """An unknown side effect is a TypeError that lists the valid ones."""
        with pytest.raises(TypeError, match="valid side effects: writes_files, network"):
            M.deny_side_effects(kind)  # type: ignore[arg-type]

    def test_stricter_limit_wins(self) -> None:
        """Chained result limits keep the stricter one."""
        assert 5 == M.enforce_result_bytes(5).enforce_result_bytes(50).max_result_bytes
        assert 5 == M.enforce_result_bytes(5).enforce_result_bytes().max_result_bytes

    @pytest.mark.parametrize("limit", [0, -1, True, 1.5])
    def test_bad_limit(self, limit: int) -> None:
        """A result limit must be a positive int."""
        with pytest.raises(ValueError, match="max_result_bytes must be an int > 0"):
            M.enforce_result_bytes(limit)


class TestWorkspace:
    def test_value_of_another_type_is_ignored(self) -> None:
        """A context value under Workspace that is not one reads as no workspace (fail closed)."""
        policy = CLASSIFIED.with_runtime(sandbox="required")
        odd = Context(values={Workspace: {"sandboxed": True}})
        assert () == M.require_sandbox().expose([probe(policy, [])], odd).allowed

    def test_roots_refuse_a_string(self) -> None:
        """``roots`` takes a sequence of paths; a lone string is refused, not split."""
        assert ("/srv",) == Workspace(roots=["/srv"]).roots
        with pytest.raises(TypeError, match="roots must be a sequence"):
            Workspace(roots="/srv")


class TestExpose:
    def test_explanations(self) -> None:
        """Allowed names keep registry order; each hidden tool gets one explanation."""
        runs: list[str] = []
        tools = Registry.of(
            probe(READ_ONLY, runs, "a"),
            probe(ToolPolicy(), runs, "b"),
            attrs.evolve(probe(READ_ONLY, runs, "c"), exposure="hidden"),
            probe(READ_ONLY, runs, "d"),
        )
        expected = PolicyExposure(
            ("a", "d"),
            (
                ExposureExplanation(
                    "b", "require_classification: its safety policy is unclassified"
                ),
                ExposureExplanation("c", "host-only (exposure is hidden)"),
            ),
        )
        assert expected == M.require_classification().expose(tools)

    def test_allowed_feed_advertised(self) -> None:
        """Passing ``allowed`` as ``advertised`` makes a hidden tool unknown to the model."""
        runs: list[str] = []
        tools = Registry.of(probe(READ_ONLY, runs, "a"), probe(ToolPolicy(), runs, "b"))
        exposure = M.require_classification().expose(tools)
        result = dispatch_sync([ToolCall("c1", "b", {})], tools, advertised=exposure.allowed)
        assert [] == runs
        assert result.messages[0].content.startswith("Unknown tool `b`")


@attrs.frozen
class Seen:
    """A middleware recording the results its ``after_tool`` sees."""

    results: list[ToolResult]

    def after_tool(self, call: ToolCall, result: ToolResult, env: DispatchEnv) -> ToolResult:
        """Record ``result`` and pass it on."""
        self.results.append(result)
        return result


def text_of(result: ToolResult) -> str:
    """The text of ``result``'s single content block."""
    (block,) = result.content
    assert isinstance(block, TextBlock)
    return block.text


def long_text() -> ToolResult:
    """A result whose text is 100 bytes long."""
    return ToolResult.success("x" * 100, follow_up="y" * 100, structured={"n": 1})


class TestEnforceResultBytes:
    def run(self, middleware: ToolPolicyMiddleware, policy: ToolPolicy = READ_ONLY) -> ToolResult:
        """What the middleware's after_tool makes of ``long_text()`` for a tool with ``policy``."""
        seen = Seen([])
        tools = Registry.of(tool(name="long", policy=policy)(long_text))
        dispatch_sync([ToolCall("c1", "long", {})], tools, middleware=[seen, middleware])
        return seen.results[0]

    def test_cuts_content_and_follow_up(self) -> None:
        """Content and follow-up are cut to the limit; structured data is kept."""
        result = self.run(M.enforce_result_bytes(60))
        text, follow_up = text_of(result), text_of(ToolResult(content=result.follow_up))
        assert (True, True) == (len(text.encode()) <= 60, len(follow_up.encode()) <= 60)
        assert (True, True) == (text.startswith("x"), follow_up.startswith("y"))
        assert "[truncated: 100 bytes, showing the first" in text
        assert {"n": 1} == result.structured

    def test_tool_limit_when_stricter(self) -> None:
        """A tool's own stricter limit applies; without a run limit only it does."""
        policy = READ_ONLY.with_runtime(max_result_bytes=50)
        for middleware in (M.enforce_result_bytes(90), M.enforce_result_bytes()):
            assert 50 >= len(text_of(self.run(middleware, policy)).encode())

    def test_within_limit_unchanged(self) -> None:
        """A result within the limit, or with no limit at all, passes unchanged."""
        assert long_text() == self.run(M.enforce_result_bytes(1000))
        assert long_text() == self.run(M.enforce_result_bytes())
        assert long_text() == self.run(M.require_sandbox())

    def test_lone_surrogate_is_cut_not_fatal(self) -> None:
        """Text holding a lone surrogate (a model's "\\udc80", decoded) is cut, not an abort."""

        @tool(policy=READ_ONLY)
        def odd() -> str:
            """Echo a lone surrogate."""
            return "\udc80" + "x" * 100

        result = dispatch_sync(
            [ToolCall("c1", "odd", {})], Registry.of(odd), middleware=[M.enforce_result_bytes(60)]
        )
        (message,) = result.messages
        assert message.content.startswith("x")  # the cut drops what UTF-8 cannot hold
        assert "[truncated: 103 bytes" in message.content

    def test_blocks_cut_as_rendered(self) -> None:
        """Mixed blocks are cut as the model reads them: one text block of the rendering,
        then the image, kept whole (the limit bounds the text a model reads, not the
        images a provider sends beside it), its placeholder within the limit."""
        image = ImageBlock("image/png", url="https://example.com/a.png")
        blocks = (TextBlock("a" * 40), image, JsonBlock({"k": "v" * 100}))
        env = DispatchEnv(Registry(), RunPolicy(), Context())
        call = ToolCall("c1", "none", {})
        result = M.enforce_result_bytes(120).after_tool(call, ToolResult(content=blocks), env)
        words, kept = result.content
        assert image == kept
        assert isinstance(words, TextBlock)
        assert words.text.startswith("a" * 30)
        assert "[truncated: 149 bytes" in words.text
        shown = words.text + "\n[image image/png https://example.com/a.png]"
        assert 120 >= len(shown.encode())
        [message] = dispatch_sync(
            [call], [_echo(blocks)], middleware=[M.enforce_result_bytes(120)]
        ).messages
        assert (shown, (image,)) == (message.content, message.attachments)

    def test_placeholders_past_the_limit(self) -> None:
        """When even the images' placeholders pass the limit, the cut text stands alone."""
        blocks = (TextBlock("a" * 40), ImageBlock("image/png", url="https://example.com/a.png"))
        env = DispatchEnv(Registry(), RunPolicy(), Context())
        cut = M.enforce_result_bytes(30).after_tool(
            ToolCall("c1", "none", {}), ToolResult(content=blocks), env
        )
        assert 30 >= len(text_of(cut).encode())


class TestShortcuts:
    """The `@tool` policy shortcuts."""

    @pytest.mark.parametrize(
        ("options", "expected"),
        [
            ({"read_only": True}, ToolPolicy.read_only()),
            ({"destructive": True}, CLASSIFIED.with_side_effects(destructive=True)),
            ({"approval_required": True}, ToolPolicy().with_access(approval_required=True)),
            ({"timeout": 5}, ToolPolicy().with_runtime(timeout=5.0)),
            ({"max_retries": 2}, ToolPolicy().with_runtime(max_retries=2)),
            ({"idempotent": True}, ToolPolicy().with_runtime(idempotent=True)),
            ({"blocking": True}, ToolPolicy().with_runtime(blocking=True)),
            ({"read_only": False, "timeout": None}, ToolPolicy()),
        ],
        ids=lambda value: str(value),
    )
    def test_each(self, options: dict[str, object], expected: ToolPolicy) -> None:
        """Side-effect shortcuts classify the policy; runtime knobs and approval do not."""
        assert expected == tool(**options)(long_text).policy  # type: ignore[call-overload]

    def test_on_top_of_policy(self) -> None:
        """Shortcuts refine an explicit policy through the builders and keep what it states."""
        base = ToolPolicy().with_side_effects(network=True).with_access(credentials=("key",))
        built = tool(policy=base, read_only=True, timeout=3, approval_required=True)(long_text)
        expected = (
            ToolPolicy.read_only()
            .with_side_effects(network=True)
            .with_runtime(timeout=3)
            .with_access(credentials=("key",), approval_required=True)
        )
        assert expected == built.policy

    @pytest.mark.parametrize(
        ("options", "problem"),
        [
            (
                {"read_only": True, "destructive": True},
                "read_only=True contradicts destructive=True",
            ),
            (
                {
                    "read_only": True,
                    "policy": CLASSIFIED.with_side_effects(writes_files=True, payment=True),
                },
                "read_only=True contradicts policy= declaring writes_files, payment",
            ),
            (
                {"destructive": True, "policy": READ_ONLY},
                "destructive=True contradicts policy= declaring read_only",
            ),
            ({"timeout": -1}, "timeout must be a finite number of seconds > 0"),
            ({"max_retries": -2}, "max_retries must be an int >= 0"),
        ],
    )
    def test_contradictions(self, options: dict[str, object], problem: str) -> None:
        """Contradictory or invalid shortcuts raise ToolDefinitionError naming the problem."""
        with pytest.raises(ToolDefinitionError, match=problem):
            tool(**options)(long_text)  # type: ignore[call-overload]

    def test_blocking_async(self) -> None:
        """blocking=True on an async function is a definition error."""

        async def fetch() -> str:
            """Fetch something."""
            return ""

        with pytest.raises(ToolDefinitionError, match="blocking=True is for synchronous"):
            tool(blocking=True)(fetch)

    def test_options_spelled_once(self) -> None:
        """`tool`'s keyword options are exactly `_Options`' fields, with the same defaults."""
        parameters = inspect.signature(tool).parameters.values()
        keywords = {p.name: p.default for p in parameters if p.kind is p.KEYWORD_ONLY}
        assert {f.name: f.default for f in attrs.fields(_Options)} == keywords


class TestPolicies:
    def test_snapshot(self) -> None:
        """Registry.policies() maps each name to its tool's policy, in registration order."""
        runs: list[str] = []
        tools = Registry.of(probe(READ_ONLY, runs, "a"), probe(CLASSIFIED, runs, "b"))
        assert {"a": READ_ONLY, "b": CLASSIFIED} == dict(tools.policies())
        assert ["a", "b"] == list(tools.policies())

    def test_immutable(self) -> None:
        """The snapshot cannot be changed."""
        policies = Registry.of(probe(READ_ONLY, [])).policies()
        with pytest.raises(TypeError):
            policies["probe"] = CLASSIFIED  # type: ignore[index]


def _echo(blocks: tuple[object, ...]) -> Tool[..., ToolResult]:
    """A tool named ``none`` that returns ``blocks``."""

    @tool(name="none", policy=READ_ONLY)
    def none() -> ToolResult:
        """Return the blocks."""
        return ToolResult(content=blocks)  # type: ignore[arg-type]

    return none
