"""A lone surrogate escape (``"\\ud800"`` with no low half) in a model's arguments text:
no valid text, which msgspec reports as truncated input. The model hears what is
wrong — the string at its path holds a lone surrogate — on every route."""

from __future__ import annotations

import msgspec
import pytest

import tinytools
from tinytools import (
    Registry,
    RunPolicy,
    Tool,
    ToolArgumentsError,
    ToolCall,
    ToolPolicy,
    dispatch_sync,
    tool,
)
from tinytools.policies import Fail, NormalizeThenReturnToolError

ran: list[object] = []


@tool
def search(query: str, tags: list[str] | None = None) -> str:
    """Search."""
    ran.append(query)
    return query


@tool(policy=ToolPolicy(redact=("query",)))
def secret_search(query: str, tags: list[str] | None = None) -> str:
    """Search for a secret."""
    ran.append(query)
    return "found"


FIND = Tool.from_schema(
    "find",
    "Find.",
    {
        "type": "object",
        "properties": {"query": {"type": "string"}, "tags": {"type": "array"}},
        "additionalProperties": False,
    },
    fn=lambda **arguments: ran.append(arguments) or "found",
)
TOOLS = Registry.of(search, secret_search, FIND)
SAYS = "String holds a lone surrogate"


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


ESCAPES = [
    ('{"query": "\\ud800"}', "$.query"),  # at the very end of the string
    ('{"query": "\\ud800x"}', "$.query"),  # mid-string
    ('{"query": "a\\udc00"}', "$.query"),  # a low half alone
    ('{"query": "\\ud800\\u0041"}', "$.query"),  # a high half before no low half
    ('{"query": "x", "tags": ["a", "\\udbff"]}', "$.tags[1]"),  # nested
    ("{query: '\\ud800'}", "$.query"),  # relaxed text, repaired into JSON
    ("{'query': 'x', 'tags': ['\\ud800',],}", "$.tags[0]"),
]


class TestTheModelHearsWhatIsWrong:
    @pytest.mark.parametrize(("text", "path"), ESCAPES, ids=repr)
    @pytest.mark.parametrize("name", ["search", "secret_search", "find"])
    @pytest.mark.parametrize(
        "policy",
        [RunPolicy(), RunPolicy(invalid_args=NormalizeThenReturnToolError())],
        ids=["default", "normalize"],
    )
    def test_named_at_its_path(self, text: str, path: str, name: str, policy: RunPolicy) -> None:
        """It was "not valid JSON: Input data was truncated" (or "invalid utf-16
        surrogate pair (byte 17)"), and relaxed text was blamed on its syntax."""
        result = dispatch_sync([ToolCall("c", name, text)], TOOLS, policy=policy)
        [message] = result.messages
        assert message.is_error
        assert f"Invalid arguments for tool `{name}` at `{path}`: {SAYS}" in message.content
        assert "truncated" not in message.content
        msgspec.json.encode(result)
        assert ran == []

    @pytest.mark.parametrize(("text", "path"), ESCAPES[:5], ids=repr)
    @pytest.mark.parametrize("built", [search, FIND], ids=["signature", "schema"])
    def test_validate_says_so(self, text: str, path: str, built: Tool) -> None:
        with pytest.raises(ToolArgumentsError, match=SAYS) as refused:
            built.validate(text)
        assert not refused.value.malformed
        assert f"at `{path}`" in str(refused.value)

    def test_under_fail_the_batch_aborts_saying_so(self) -> None:
        policy = RunPolicy(invalid_args=Fail())
        with pytest.raises(tinytools.DispatchAborted) as aborted:
            dispatch_sync([ToolCall("c", "search", '{"query": "\\ud800"}')], TOOLS, policy=policy)
        [message] = aborted.value.result.messages
        assert SAYS in message.content


class TestOtherTextIsAsBefore:
    def test_text_cut_off_after_an_escape_is_truncated(self) -> None:
        [message] = dispatch_sync([ToolCall("c", "search", '{"query": "\\ud800"')], TOOLS).messages
        assert "not valid JSON: Input data was truncated" in message.content

    @pytest.mark.parametrize("name", ["search", "find"])
    def test_a_surrogate_pair_is_text(self, name: str) -> None:
        [message] = dispatch_sync(
            [ToolCall("c", name, '{"query": "\\ud83d\\ude00"}')], TOOLS
        ).messages
        assert not message.is_error


@tool
def measure(x: float = 0.0, n: int = 0) -> float:
    """Measure."""
    ran.append(x)
    return x


class TestRepairedTextJsonCannotCarry:
    @pytest.mark.parametrize(
        ("text", "says"),
        [
            ("{x: NaN}", "Expected a finite `number`, got `NaN`"),
            ('{"x": Infinity}', "Expected a finite `number`, got `Infinity`"),
            ("{x: 1e999,}", "Expected a finite `number`, got `Infinity`"),
            ("{n: " + "9" * 5000 + ",}", "Integer value out of range"),
        ],
        ids=["nan", "infinity", "1e999", "huge-int"],
    )
    def test_what_repair_cannot_carry_is_named(self, text: str, says: str) -> None:
        """Relaxed text that repair made JSON, refused for a value JSON has no text for,
        was answered with the syntax error of the text as sent: the model hears the
        value's problem, at its path, as for strict text."""
        result = dispatch_sync([ToolCall("c", "measure", text)], Registry.of(measure))
        [message] = result.messages
        assert message.is_error
        assert says in message.content
        assert ran == []


class _Text(str):
    """A host's own string type (an SDK's); its methods must never be asked."""

    def isascii(self) -> bool:
        raise AssertionError("a method of the subclass ran")


@pytest.mark.parametrize("text", ["plain ascii", "café", "bad \udc80 half"])
def test_escaped_text_is_always_a_plain_str(text: str) -> None:
    from tinytools._text import printable

    shown = printable(_Text(text))
    assert type(shown) is str
    assert shown == printable(text)
