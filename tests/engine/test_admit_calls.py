"""Admission through dispatch: unknown names and their suggestions, arguments repaired or
refused, ``max_tool_calls``."""

from __future__ import annotations

import json

import pytest

from tests.engine.dispatch_tools import (
    TOOLS,
    _reset,  # noqa: F401 (autouse: clears `ran`)
    call,
    ran,
)
from tinytools import (
    Context,
    DispatchAborted,
    RunPolicy,
    Tool,
    ToolCall,
    dispatch_sync,
)
from tinytools.events import (
    InvalidToolArgs,
    UnknownToolCall,
)
from tinytools.policies import Fail, NormalizeThenReturnToolError, Rewrite


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
