"""The error paths of one call, through ``dispatch_sync``: relaxed JSON repaired, arguments
refused, a tool raising. Each answers exactly as the general route does (the same message,
the same events), secrets included."""

from __future__ import annotations

import copy
import pickle

import msgspec
import pytest

from tinytools import Registry, ToolCall, ToolPolicy, ToolResult, after_tool, dispatch_sync, tool
from tinytools.errors import ToolArgumentsError
from tinytools.events import InvalidToolArgs, ToolFailed

ran: list[dict[str, object]] = []


@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    ran.append({"a": a, "b": b})
    return a + b


@tool(policy=ToolPolicy(redact=("password",)))
def login(user: str, password: str) -> str:
    """Log in."""
    ran.append({"user": user})
    return "welcome"


@tool
def fails(where: int) -> str:
    """Fail at one of two lines of the same function."""
    if where == 1:
        raise ValueError("first")  # line one
    raise KeyError("second")  # line two


TOOLS = Registry.of(add, login, fails)


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def recoveries(result: object) -> list[str]:
    return [e.recovery for e in result.events if isinstance(e, InvalidToolArgs)]  # type: ignore[attr-defined]


class TestRelaxed:
    def test_repaired_then_schema_error(self) -> None:
        """Repaired text that breaks the schema: reported repaired, then answered with the
        schema error at its path; the tool never runs."""
        result = dispatch_sync([ToolCall("c", "add", "{a: 'two',}")], TOOLS)
        assert ["repaired", "tool_error"] == recoveries(result)
        assert "at `$.a`: Expected `integer`, got `string`" in result.messages[0].content
        assert [] == ran

    def test_repaired_not_an_object_for_the_tool(self) -> None:
        """A rewrite that is not one object (two different ones) is refused with the parse
        error, never run with either."""
        result = dispatch_sync([ToolCall("c", "add", "{a: 1} {a: 2}")], TOOLS)
        assert ["tool_error"] == recoveries(result)
        assert "not valid JSON" in result.messages[0].content
        assert [] == ran

    def test_repaired_arguments_of_a_redacting_tool(self) -> None:
        """Defect: after a relaxed repair the event and message showed the secret."""
        raw = "{user: 'ann', password: 'hunter22',}"
        result = dispatch_sync([ToolCall("c", "login", raw)], TOOLS)
        assert "welcome" == result.messages[0].content
        assert [{"user": "ann"}] == ran
        assert ["repaired"] == recoveries(result)
        assert b"hunter22" not in msgspec.json.encode(result)

    def test_repaired_schema_error_of_a_redacting_tool(self) -> None:
        raw = "{user: 'ann', password: 'hunter22', extra: 'hunter22',}"
        result = dispatch_sync([ToolCall("c", "login", raw)], TOOLS)
        assert ["repaired", "tool_error"] == recoveries(result)
        assert result.messages[0].is_error
        assert b"hunter22" not in msgspec.json.encode(result)

    def test_schema_of_a_redacting_tool_is_shown_whole(self) -> None:
        """Defect: malformed text of one character, taken whole as a secret, was scrubbed
        from the schema in the message too (every `{` became the marker)."""
        result = dispatch_sync([ToolCall("c", "login", "{")], TOOLS)
        content = result.messages[0].content
        assert content.endswith(f"(JSON schema): {msgspec.json.encode(login.parameters).decode()}")
        assert "[redacted]" not in content

    def test_same_answer_as_the_strict_text(self) -> None:
        """The repaired call runs as the strict call does: same message."""
        relaxed = dispatch_sync([ToolCall("c", "add", "{'a': 2, 'b': 3,}")], TOOLS)
        strict = dispatch_sync([ToolCall("c", "add", '{"a": 2, "b": 3}')], TOOLS)
        assert strict.messages == relaxed.messages


class TestInvalid:
    def test_integral_float_in_raw_text(self) -> None:
        """`2.0` for an integer is accepted from raw text (JSON Schema's rule)."""
        result = dispatch_sync([ToolCall("c", "add", '{"a": 2.0, "b": 3}')], TOOLS)
        assert "5" == result.messages[0].content

    def test_message_repeats_for_the_same_mistake(self) -> None:
        """The same mistake gets the same message every time (the translation of msgspec's
        text is remembered, never changed)."""
        calls = [ToolCall("c", "add", '{"a": "x"}')]
        first, second = (dispatch_sync(calls, TOOLS).messages[0].content for _ in range(2))
        assert first == second
        assert first.startswith("Invalid arguments for tool `add` at `$.a`: Expected `integer`")

    def test_arguments_error_copies_and_pickles(self) -> None:
        """ToolArgumentsError keeps its fields through copy and pickle."""
        error = ToolArgumentsError("add", "Expected `integer`, got `string`", path="$.a")
        for clone in (copy.copy(error), pickle.loads(pickle.dumps(error))):
            assert (clone.tool_name, clone.detail, clone.path, clone.malformed) == (
                "add",
                "Expected `integer`, got `string`",
                "$.a",
                False,
            )
            assert str(clone) == str(error)


class TestRaising:
    def test_failed_fold_same_with_a_hook(self) -> None:
        """A failure no after-hook sees is answered as one an identity hook passes on."""

        @after_tool
        def keep(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
            return result

        calls = [ToolCall("c", "fails", {"where": 1})]
        plain = dispatch_sync(calls, TOOLS)
        hooked = dispatch_sync(calls, TOOLS, middleware=[keep])
        assert plain.messages == hooked.messages
        assert [e for e in plain.events if isinstance(e, ToolFailed)] == [
            e for e in hooked.events if isinstance(e, ToolFailed)
        ]

    def test_traceback_shows_the_line_that_raised(self) -> None:
        """Two failures in one function, at different lines: each traceback shows its own
        line, also when each is repeated."""
        for _ in range(2):
            for where, line in ((1, 'raise ValueError("first")'), (2, 'raise KeyError("second")')):
                result = dispatch_sync([ToolCall("c", "fails", {"where": where})], TOOLS)
                [failed] = [e for e in result.events if isinstance(e, ToolFailed)]
                assert failed.traceback is not None
                assert f"    {line}" in failed.traceback
