"""Conformance tests for `tinytools.formats._contracts`: every provider module and every text
dialect keeps the promises its Protocol writes down.

One checker per Protocol, run over every module of that kind: a new module joins a table
below and must pass the same checks.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType

import attrs
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from tinytools import Exposure, Tool, ToolCall, ToolMessage
from tinytools._declare.registry import AnyTool
from tinytools.formats import (
    Parsed,
    anthropic,
    deepseek,
    gemini,
    json_in_tag,
    llama_json,
    mcp,
    mistral,
    openai_chat,
    openai_responses,
    ptype,
    xml,
)

Results = list[dict[str, object]]


@attrs.frozen
class Provider:
    """How the checks reach one provider module's turns and results.

    Attributes:
        module: The provider module.
        turn: The turn that carries ``calls`` as the provider sends them (what
            ``parse_calls`` reads).
        declared: The tool names ``declarations`` declared.
        answered: The call ids ``tool_results`` answered, in order (for MCP, whose results
            answer by position, the ids of the messages they stand at).
    """

    module: ModuleType
    turn: Callable[[list[ToolCall]], object]
    declared: Callable[[Results], list[object]]
    answered: Callable[[Results, Sequence[ToolMessage]], list[object]]


def _mcp_requests(calls: list[ToolCall]) -> object:
    """The ``tools/call`` requests a client sends for ``calls``, as one JSON-RPC batch."""
    return [
        {
            "jsonrpc": "2.0",
            "id": call.id,
            "method": "tools/call",
            "params": {"name": call.name, "arguments": call.arguments},
        }
        for call in calls
    ]


def _blocks(results: Results, key: str) -> list[dict[str, object]]:
    """The blocks (content items or parts) under ``key`` of each result message."""
    return [block for message in results for block in message.get(key, ())]  # type: ignore[attr-defined]


PROVIDERS = [
    Provider(
        openai_chat,
        openai_chat.assistant_message,
        lambda out: [d["function"]["name"] for d in out],  # type: ignore[index]
        lambda out, _: [r["tool_call_id"] for r in out if r.get("role") == "tool"],
    ),
    Provider(
        openai_responses,
        openai_responses.assistant_items,
        lambda out: [d["name"] for d in out],
        lambda out, _: [r["call_id"] for r in out if r.get("type") == "function_call_output"],
    ),
    Provider(
        anthropic,
        anthropic.assistant_message,
        lambda out: [d["name"] for d in out],
        lambda out, _: [
            b["tool_use_id"] for b in _blocks(out, "content") if b.get("type") == "tool_result"
        ],
    ),
    Provider(
        gemini,
        gemini.assistant_message,
        lambda out: [f["name"] for d in out for f in d["functionDeclarations"]],  # type: ignore[attr-defined]
        lambda out, _: [
            p["functionResponse"]["id"]  # type: ignore[index]
            for p in _blocks(out, "parts")
            if "functionResponse" in p
        ],
    ),
    Provider(
        mcp,
        _mcp_requests,
        lambda out: [d["name"] for d in out],
        lambda out, messages: [m.tool_call_id for m, _ in zip(messages, out, strict=True)],
    ),
]
BY_PROVIDER = pytest.mark.parametrize(
    "provider", PROVIDERS, ids=lambda provider: provider.module.__name__
)

# --- what the checks draw ----------------------------------------------------------------

IDS = st.from_regex(r"[A-Za-z0-9_-]{1,24}", fullmatch=True)
NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,20}", fullmatch=True)
KEYS = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
#: Text as models write it: any character but lone surrogates (which no JSON text carries).
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12) | st.sampled_from(
    ["", " x ", "\n", "</tool_call>", "<tool_call>", "]]>", "\\", '"', "[TOOL_CALLS]"]
)
LEAVES = st.sampled_from(["string", "integer", "number", "boolean", "null"]).map(
    lambda kind: {"type": kind}
)
SCHEMAS: SearchStrategy[dict[str, object]] = st.recursive(
    LEAVES,
    lambda inner: (
        inner.map(lambda items: {"type": "array", "items": items})
        | st.dictionaries(KEYS, inner, max_size=3).map(
            lambda fields: {"type": "object", "properties": fields}
        )
    ),
    max_leaves=5,
)


def valid_values(schema: dict[str, object]) -> SearchStrategy[object]:
    """Values one of the drawn schemas accepts."""
    kind = schema["type"]
    if kind == "array":
        return st.lists(valid_values(schema["items"]), max_size=3)  # type: ignore[arg-type]
    if kind == "object":
        fields: dict[str, dict[str, object]] = schema["properties"]  # type: ignore[assignment]
        return st.fixed_dictionaries({key: valid_values(sub) for key, sub in fields.items()})
    leaves: dict[str, SearchStrategy[object]] = {
        "string": TEXT,
        "integer": st.integers(-(2**53), 2**53),
        "number": st.floats(allow_nan=False, allow_infinity=False),
        "boolean": st.booleans(),
        "null": st.none(),
    }
    return leaves[str(kind)]


@st.composite
def tools_and_call(draw: st.DrawFn) -> tuple[list[AnyTool], ToolCall]:
    """A few tools of one drawn parameter schema, and a call of one of them that the schema
    accepts (a field at a time: the call may leave any out)."""
    fields = draw(st.dictionaries(KEYS, SCHEMAS, max_size=4))
    names = draw(st.lists(NAMES, min_size=1, max_size=3, unique=True))
    schema = {"type": "object", "properties": fields}
    tools = [Tool.from_schema(name, f"The {name} tool.", schema) for name in names]
    given_fields = draw(st.lists(st.sampled_from(sorted(fields)), unique=True)) if fields else []
    arguments = draw(st.fixed_dictionaries({k: valid_values(fields[k]) for k in given_fields}))
    return tools, ToolCall(draw(IDS), draw(st.sampled_from(names)), arguments)


ARGUMENTS = st.dictionaries(
    KEYS,
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**53), 2**53) | TEXT,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
        max_leaves=6,
    ),
    max_size=4,
)
CALLS = st.lists(
    st.builds(ToolCall, id=IDS, name=NAMES, arguments=ARGUMENTS),
    max_size=4,
    unique_by=lambda call: call.id,
)
MESSAGES = st.lists(
    st.builds(
        lambda call_id, name, content, failed: ToolMessage(
            tool_call_id=call_id,
            name=name,
            content=content,
            is_error=failed,
            status="error" if failed else "ok",
        ),
        IDS,
        NAMES,
        TEXT,
        st.booleans(),
    ),
    max_size=4,
    unique_by=lambda message: message.tool_call_id,
)
#: What is no turn of any provider: text, bytes, a number, nothing, an object, a stream.
NOT_TURNS = ["Sure, I will call it.", b'{"tool_calls": []}', 42, None, object(), iter(())]


def _decoded(arguments: object) -> object:
    return json.loads(arguments) if isinstance(arguments, str) else arguments


# --- the provider contract ----------------------------------------------------------------


def check_declarations(provider: Provider) -> None:
    """Only the ``Direct`` tools are declared, each by its name, in order, as JSON."""
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = [
        Tool.from_schema("first", "Shown.", schema),
        Tool.from_schema("later", "Found.", schema, exposure=Exposure.Deferred),
        Tool.from_schema("host_only", "Never shown.", schema, exposure=Exposure.Hidden),
        Tool.from_schema("second", "Shown.", {"type": "object"}),
    ]
    declared = provider.module.declarations(tools)
    msgspec.json.encode(declared)
    assert ["first", "second"] == provider.declared(declared)


def check_calls_round_trip(provider: Provider, calls: list[ToolCall]) -> None:
    """``parse_calls`` of the turn built from ``calls`` gives back each id, name and
    arguments, in order."""
    parsed = provider.module.parse_calls(provider.turn(calls))
    expected = [(c.id, c.name, c.arguments) for c in calls]
    assert expected == [(c.id, c.name, _decoded(c.arguments)) for c in parsed]
    assert all(c.invalid is None for c in parsed)


def check_results_answer_all(provider: Provider, messages: list[ToolMessage]) -> None:
    """``tool_results`` answers every message, in order, as JSON."""
    results = provider.module.tool_results(messages)
    msgspec.json.encode(results)
    assert [m.tool_call_id for m in messages] == provider.answered(results, messages)


def check_no_turn_refused(provider: Provider) -> None:
    """Text, bytes, a number, nothing, an object or a stream is a TypeError or ValueError."""
    for value in NOT_TURNS:
        with pytest.raises((TypeError, ValueError)):
            provider.module.parse_calls(value)


class TestProviderContract:
    @BY_PROVIDER
    def test_declarations(self, provider: Provider) -> None:
        """Every provider declares its Direct tools and no other."""
        check_declarations(provider)

    @BY_PROVIDER
    @settings(deadline=None)
    @given(calls=CALLS)
    def test_calls_round_trip(self, provider: Provider, calls: list[ToolCall]) -> None:
        """Every provider reads back the calls of a turn built from them."""
        check_calls_round_trip(provider, calls)

    @BY_PROVIDER
    @settings(deadline=None)
    @given(messages=MESSAGES)
    def test_results_answer_all(self, provider: Provider, messages: list[ToolMessage]) -> None:
        """Every provider answers every call id, in order."""
        check_results_answer_all(provider, messages)

    @BY_PROVIDER
    def test_no_turn_refused(self, provider: Provider) -> None:
        """Every provider refuses what is no turn, never reading calls into it."""
        check_no_turn_refused(provider)


# --- the text dialect contract ------------------------------------------------------------

#: Every text dialect, and whether a system prompt teaches it (it then has ``render``).
DIALECTS = {
    xml: True,
    ptype: True,
    json_in_tag: True,
    mistral: False,
    llama_json: False,
    deepseek: False,
}
BY_DIALECT = pytest.mark.parametrize("dialect", list(DIALECTS), ids=lambda m: m.__name__)

#: Pieces of every dialect's syntax, for text that comes close to a call.
FRAGMENTS = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "<think>",
        "</think>",
        "<search>",
        "</search>",
        "<q>",
        "</q>",
        "[TOOL_CALLS]",
        "[ARGS]",
        "<|python_tag|>",
        '{"name": "search", "parameters": {',
        '{"name": "search", "arguments": {',
        deepseek.CALLS_BEGIN,
        deepseek.CALL_BEGIN,
        deepseek.SEP,
        deepseek.CALL_END,
        "search(",
        "zzz(",
        "<function=search>",
        "[",
        "]",
        "{",
        "}",
        "(",
        ")",
        '"',
        ",",
        ":",
        "=",
        "\n",
    ]
)
SEARCH = Tool.from_schema(
    "search", "Search.", {"type": "object", "properties": {"q": {"type": "string"}}}
)


def _named_in(text: str, names: Iterable[str]) -> bool:
    return all(name in text for name in names)


def check_parse_any_text(dialect: ModuleType, text: str) -> None:
    """``parse`` of any text is a ``Parsed``, never an exception; each call it finds names
    a tool the text names, and each fragment it could not read is an invalid call holding
    its raw text."""
    parsed = dialect.parse(text, [SEARCH])
    assert isinstance(parsed.text, str)
    assert _named_in(text, (call.name for call in parsed.calls))
    assert _named_in(text, (error.name for error in parsed.errors))
    for error in parsed.errors:
        assert error.invalid
        assert isinstance(error.arguments, str)


def check_render_call_round_trip(dialect: ModuleType, tools: list[AnyTool], call: ToolCall) -> None:
    """``parse(render_call(call))`` gives back the call's name and arguments, no prose and
    no error; inside ``<think>…</think>`` the same text is no call."""
    written = dialect.render_call(call, tools)
    parsed = dialect.parse(written, tools)
    back = [(c.name, _decoded(c.arguments)) for c in parsed.calls]
    assert [(call.name, call.arguments)] == back
    assert ("", ()) == (parsed.text.strip(), parsed.errors)
    thought = dialect.parse(f"<think>{written}</think>", tools)
    assert () == thought.calls


def check_catalogue(dialect: ModuleType, tools: list[AnyTool]) -> None:
    """A taught dialect's catalogue names every tool a model may call, and only those."""
    hidden = Tool.from_schema(
        "host_only_tool", "Never shown.", {"type": "object"}, exposure="hidden"
    )
    catalogue = dialect.render([*tools, hidden])
    assert isinstance(catalogue, str)
    assert _named_in(catalogue, (tool.name for tool in tools))
    assert "host_only_tool" not in catalogue


class TestDialectContract:
    @BY_DIALECT
    @settings(deadline=None)
    @given(text=st.text() | st.lists(FRAGMENTS | st.text(max_size=3)).map("".join))
    def test_parse_any_text(self, dialect: ModuleType, text: str) -> None:
        """Every dialect parses any text to a value and never invents a tool name."""
        check_parse_any_text(dialect, text)

    @BY_DIALECT
    @settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(case=tools_and_call())
    def test_render_call_round_trip(
        self, dialect: ModuleType, case: tuple[list[AnyTool], ToolCall]
    ) -> None:
        """Every dialect reads back the calls it writes."""
        check_render_call_round_trip(dialect, *case)

    @pytest.mark.parametrize(
        "dialect", [m for m, taught in DIALECTS.items() if taught], ids=lambda m: m.__name__
    )
    @settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(case=tools_and_call())
    def test_catalogue(self, dialect: ModuleType, case: tuple[list[AnyTool], ToolCall]) -> None:
        """Every taught dialect's catalogue names the tools a model may call."""
        check_catalogue(dialect, case[0])


class TestCheckersCatchBreaches:
    """The checkers above fail a module that breaks its contract (they can fail)."""

    def test_provider_dropping_a_result(self) -> None:
        """A provider whose ``tool_results`` leaves the last message unanswered fails."""
        broken = types.SimpleNamespace(tool_results=lambda messages: [])
        provider = attrs.evolve(PROVIDERS[0], module=broken)
        message = ToolMessage(tool_call_id="c1", name="f", content="ok")
        with pytest.raises(AssertionError):
            check_results_answer_all(provider, [message])

    def test_provider_losing_arguments(self) -> None:
        """A provider whose turn loses the arguments fails the round trip."""
        lossy = attrs.evolve(
            PROVIDERS[2],
            turn=lambda calls: anthropic.assistant_message(
                [msgspec.structs.replace(call, arguments={}) for call in calls]
            ),
        )
        with pytest.raises(AssertionError):
            check_calls_round_trip(lossy, [ToolCall("c1", "f", {"a": 1})])

    def test_dialect_guessing_a_name(self) -> None:
        """A dialect that reads a call into text naming no tool fails."""

        def guess(text: str, tools: object = ()) -> Parsed:
            return Parsed((ToolCall("x", "search", {}),), "", ())

        broken = types.SimpleNamespace(parse=guess)
        with pytest.raises(AssertionError):
            check_parse_any_text(broken, "hello")  # type: ignore[arg-type]

    def test_dialect_calling_inside_thoughts(self) -> None:
        """A dialect that finds a call inside ``<think>…</think>`` fails."""
        broken = types.SimpleNamespace(
            render_call=json_in_tag.render_call,
            parse=lambda text, tools=(): json_in_tag.parse(
                text.replace("<think>", "").replace("</think>", ""), tools
            ),
        )
        call = ToolCall("c1", "search", {"q": "x"})
        with pytest.raises(AssertionError):
            check_render_call_round_trip(broken, [SEARCH], call)  # type: ignore[arg-type]
