"""Tests for `tinytools.testing`: each strategy keeps its promise, and the checker bites.

The strategies' promises are checked as properties over the project's example tools
(``tinytools._cli.demo``'s registry, which imports ``examples/``, plus a few tools with
constraints, nested optionals and injected parameters) and over 200 BFCL function
definitions imported with ``tool_from_bfcl``. The checker is checked by mutation: each
deliberately broken dispatcher below must be caught by `check_dispatch_invariants`
within hypothesis' default number of examples, with a message naming the invariant.
"""

from __future__ import annotations

import doctest
import importlib
import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Literal, TypeVar
from uuid import UUID

import anyio
import attrs
import msgspec
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from locations import CORPORA, corpus_sample

from tinytools import (
    ApprovalRequired,
    CallDeferred,
    CallId,
    DeferredToolRequests,
    DeferredToolResults,
    DispatchResult,
    Inject,
    Registry,
    RunContext,
    RunPolicy,
    Tool,
    ToolArgumentsError,
    ToolCall,
    ToolPolicy,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools._cli.demo import TOOLS as DEMO_TOOLS
from tinytools._declare.schema_dialect import ENFORCED_FORMATS
from tinytools.events import ToolApproved, ToolCompleted, ToolDeferred, ToolStarted
from tinytools.formats.bfcl import tool_from_bfcl
from tinytools.repair import recover_relaxed_object
from tinytools.testing import (
    Entry,
    check_dispatch_invariants,
    invalid_arguments,
    relaxed_json,
    tool_calls,
    valid_arguments,
)

T = TypeVar("T")

# --- the tools ------------------------------------------------------------------------------


@dataclass
class Window:
    """A date range, with an optional nested label."""

    start: date
    days: Annotated[int, msgspec.Meta(ge=1, le=14)] = 7
    label: str | None = None


@tool
def book(
    room: Annotated[str, msgspec.Meta(min_length=1, max_length=8)],
    window: Window,
    guests: Annotated[list[str], msgspec.Meta(max_length=3)],
    when: datetime | None = None,
    ref: UUID | None = None,
    kind: Literal["single", "double"] = "single",
    price: Annotated[float, msgspec.Meta(gt=0, lt=1000)] = 100.0,
    call_id: Inject[CallId] = "",
) -> str:
    """Book a room: constraints, a nested dataclass, optionals and an injected id."""
    return f"{room} for {guests}"


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


LOOSE = Tool.from_schema(
    "loose",
    "A schema with unions, a tuple form and a draft-7 bound.",
    {
        "type": "object",
        "properties": {
            "n": {"type": ["integer", "null"], "minimum": 0},
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "boolean"}]},
            "tag": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer"}]},
            "meta": {"type": "object", "additionalProperties": {"type": "number"}},
        },
        "required": ["n"],
        "additionalProperties": False,
    },
    enforce="draft7",
)
#: Keywords the kit does not draw exactly (`oneOf`, a float `multipleOf`): it keeps only
#: what the tool's validator accepts.
CHECKED = Tool.from_schema(
    "checked",
    "A schema beyond what the kit draws exactly.",
    {
        "type": "object",
        "properties": {
            "x": {"oneOf": [{"type": "integer", "maximum": 10}, {"type": "integer", "minimum": 5}]},
            "step": {"type": "number", "multipleOf": 0.5},
        },
        "required": ["x"],
    },
    enforce="draft7",
)
EXAMPLE_TOOLS: tuple[Tool[..., object], ...] = (*DEMO_TOOLS.values(), book, echo, LOOSE, CHECKED)


def _bfcl_tools(count: int = 200) -> list[Tool[..., object]]:
    """``count`` BFCL definitions spread over every category file (none when absent)."""
    folder = CORPORA / "bfcl" / "data"
    if not folder.is_dir():
        return []
    functions: dict[str, dict[str, object]] = {}
    for path in sorted(folder.glob("BFCL_v4_*.json")):
        for line in path.read_text(encoding="utf-8").splitlines():
            for function in json.loads(line)["function"]:
                functions.setdefault(str(function["name"]), function)
    distinct = list(functions.values())
    step = max(1, len(distinct) // count)
    tools = {}
    for function in distinct[::step][:count]:
        item = tool_from_bfcl(function)
        tools[item.name] = item
    return list(tools.values())


BFCL_TOOLS = _bfcl_tools()
needs_bfcl = pytest.mark.skipif(not BFCL_TOOLS, reason=f"BFCL corpus not found under {CORPORA}")

#: Examples per tool when a property runs over every tool of a collection.
PER_TOOL = settings(
    max_examples=max(3, settings().max_examples // 100),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


#: How the shrinking tests search: how far hypothesis shrinks depends on the first example
#: it finds, and from some it stops short (one run in about ten of the one-call batch
#: stopped at three calls), so each searches from the same start every run. No explain
#: phase: it varies the shrunk example to explain a test failure, which ``find`` never
#: reports, and took four fifths of these tests' time.
SHRINK = settings(
    database=None, derandomize=True, phases=[p for p in Phase if p is not Phase.explain]
)


def comes(strategy: st.SearchStrategy[T], condition: Callable[[T], bool]) -> None:
    """Some drawn value meets ``condition`` (searched without shrinking: it is slow)."""
    find(
        strategy,
        condition,
        settings=settings(
            database=None, max_examples=1000, phases=[Phase.generate], derandomize=True
        ),
    )


def for_each_tool(
    tools: Sequence[Tool[..., object]], check: Callable[[Tool[..., object]], None]
) -> None:
    """Run ``check(tool)`` for every tool, naming the tool when it fails."""
    for item in tools:
        try:
            check(item)
        except Exception as error:
            raise AssertionError(f"tool {item.name!r} {item.parameters}: {error!r}") from error


# --- the strategies' promises ---------------------------------------------------------------


def valid_ones_validate(item: Tool[..., object]) -> None:
    @PER_TOOL
    @given(valid_arguments(item))
    def check(arguments: dict[str, object]) -> None:
        item.validate(arguments)
        item.validate(msgspec.json.encode(arguments).decode())

    check()


def invalid_ones_are_rejected(item: Tool[..., object]) -> None:
    @PER_TOOL
    @given(invalid_arguments(item))
    def check(arguments: dict[str, object]) -> None:
        with pytest.raises(ToolArgumentsError):
            item.validate(arguments)

    check()


def relaxed_repairs_to_the_object(item: Tool[..., object]) -> None:
    @PER_TOOL
    @given(valid_arguments(item).flatmap(lambda a: st.tuples(st.just(a), relaxed_json(a))))
    def check(pair: tuple[dict[str, object], str]) -> None:
        arguments, text = pair
        expected = msgspec.json.decode(msgspec.json.encode(arguments))
        assert expected == recover_relaxed_object(text)

    check()


@dataclass(kw_only=True)
class Price:
    a: Decimal | None = None


@tool
def price(a: Price) -> str:
    """Read a price."""
    return "ok"


class TestValidArguments:
    def test_example_tools(self) -> None:
        """Every dict drawn for an example tool passes `tool.validate`, as a dict and as JSON."""
        for_each_tool(EXAMPLE_TOOLS, valid_ones_validate)

    @needs_bfcl
    def test_bfcl(self) -> None:
        """Every dict drawn for each of 200 BFCL definitions passes `tool.validate` (a
        sample of them under the "compat" profile: see corpus_sample)."""
        assert 200 == len(BFCL_TOOLS)
        for_each_tool(corpus_sample(BFCL_TOOLS), valid_ones_validate)

    def test_edge_values_come(self) -> None:
        """Edge values are drawn: empty text, the bounds of a constraint, a left-out optional."""
        drawn = valid_arguments(book)
        comes(drawn, lambda a: len(a["room"]) == 1)
        comes(drawn, lambda a: len(a["room"]) == 8)
        comes(drawn, lambda a: a["window"].get("days") == 14)
        comes(drawn, lambda a: "window" in a and "label" not in a["window"])
        comes(valid_arguments(echo), lambda a: a["text"] == "")

    def test_shrinks_to_readable(self) -> None:
        """A failing value shrinks to the smallest one: here, the first 8-character room."""
        assert {"room": "00000000", "window": {"start": "2000-01-01"}, "guests": []} == find(
            valid_arguments(book), lambda a: len(a["room"]) == 8, settings=SHRINK
        )

    def test_not_a_tool(self) -> None:
        """A non-tool is refused up front with a message saying what to pass."""
        with pytest.raises(InvalidArgument, match="takes a tinytools Tool"):
            valid_arguments(echo.fn)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        "impossible",
        [
            {"enum": []},
            {"type": "integer", "minimum": 5, "maximum": 1},
            {"type": "integer", "minimum": 1, "maximum": 4, "multipleOf": 5},
            {"type": "number", "exclusiveMinimum": 1, "exclusiveMaximum": 1},
            {"type": "string", "minLength": 3, "maxLength": 2},
            {"type": "array", "minItems": 2, "maxItems": 1},
            {
                "type": "object",
                "properties": {"deep": {"type": "string", "enum": [1, 2]}},
                "required": ["deep"],
            },
        ],
    )
    def test_a_schema_no_arguments_satisfy_is_said_up_front(
        self, impossible: dict[str, object]
    ) -> None:
        """Defect: a required place no value fits failed inside hypothesis, in its words
        ("Cannot have max_value=1 < min_value=5", or Unsatisfiable: "make your filters or
        assumes less strict"), naming neither the tool nor the schema."""
        schema = {"type": "object", "properties": {"n": impossible}, "required": ["n"]}
        never = Tool.from_schema("never", "Can never be called.", schema)
        for strategy in (valid_arguments, invalid_arguments):
            with pytest.raises(InvalidArgument, match="no argument dict satisfies the schema of"):
                strategy(never)
        optional = Tool.from_schema("sometimes", "Takes n or not.", {**schema, "required": []})
        comes(valid_arguments(optional), lambda a: a == {})  # (left out, it can be called)

    def test_parameter_constraints_no_value_satisfies_are_said_up_front(self) -> None:
        """As for a schema: a ``@tool`` whose constraint bounds cross is named, not left
        to fail inside hypothesis at the first draw."""

        @tool
        def crossed(n: Annotated[int, msgspec.Meta(ge=5, le=1)]) -> int:
            """Takes no n at all."""
            return n

        with pytest.raises(InvalidArgument, match=r"no argument dict satisfies .* tool 'crossed'"):
            valid_arguments(crossed)


class TestInvalidArguments:
    def test_example_tools(self) -> None:
        """Every dict drawn for an example tool is rejected with a `ToolArgumentsError`."""
        for_each_tool(EXAMPLE_TOOLS, invalid_ones_are_rejected)

    @needs_bfcl
    def test_bfcl(self) -> None:
        """Every dict drawn for each breakable BFCL definition is rejected (a sample of
        them under the "compat" profile: see corpus_sample)."""
        breakable = []
        for item in BFCL_TOOLS:
            try:
                invalid_arguments(item)
            except InvalidArgument:
                continue
            breakable.append(item)
        assert len(breakable) >= 190, [t.name for t in BFCL_TOOLS if t not in breakable]
        for_each_tool(corpus_sample(breakable), invalid_ones_are_rejected)

    def test_injected_name_is_a_violation(self) -> None:
        """Setting an injected parameter is one of the breaks drawn."""
        comes(invalid_arguments(book), lambda a: "call_id" in a)

    def test_shrinks_to_one_break(self) -> None:
        """Invalid dicts shrink to the smallest valid dict broken in one readable place."""
        assert {} == find(invalid_arguments(echo), lambda a: True, settings=SHRINK)
        assert {"text": "", "unexpected": 1} == find(
            invalid_arguments(echo), lambda a: "text" in a, settings=SHRINK
        )
        past_the_bound = find(
            invalid_arguments(book),
            lambda a: (
                isinstance(a.get("window"), dict)
                and isinstance(a["window"].get("days"), int)
                and a["window"]["days"] > 14
            ),
            settings=settings(SHRINK, max_examples=1000),
        )
        assert {"room": "0", "window": {"start": "2000-01-01", "days": 15}, "guests": []} == (
            past_the_bound
        )

    def test_an_optional_decimal_is_not_broken_with_a_number(self) -> None:
        """A number is a Decimal to the validator even where the schema says string (found
        by the property test: `Optional[Decimal]` in a dataclass drew `{"a": 7}`)."""

        @settings(max_examples=60, deadline=None)
        @given(invalid_arguments(price))
        def rejected(arguments: dict[str, object]) -> None:
            with pytest.raises(ToolArgumentsError):
                price.validate(arguments)

        rejected()
        comes(invalid_arguments(price), lambda a: isinstance(a.get("a"), dict) and "a" in a["a"])

    def test_unbreakable(self) -> None:
        """A schema that accepts every object has no invalid dicts: said up front."""
        anything = Tool.from_schema("anything", "Takes any object.", {"type": "object"})
        with pytest.raises(InvalidArgument, match="accepts every JSON object"):
            invalid_arguments(anything)


class TestRelaxedJson:
    def test_example_tools(self) -> None:
        """Relaxed JSON of any valid arguments repairs back to exactly those arguments."""
        for_each_tool(EXAMPLE_TOOLS, relaxed_repairs_to_the_object)

    @needs_bfcl
    def test_bfcl(self) -> None:
        """... and so for each of 200 BFCL definitions (a sample of them under the "compat"
        profile: see corpus_sample)."""
        for_each_tool(corpus_sample(BFCL_TOOLS), relaxed_repairs_to_the_object)

    def test_not_an_object(self) -> None:
        """Only an object is relaxed (repair only ever returns an object)."""
        with pytest.raises(InvalidArgument, match="JSON object"):
            relaxed_json([1, 2])  # type: ignore[arg-type]


# --- tool_calls and its knobs ---------------------------------------------------------------

KNOB_TOOLS = Registry.of(echo, book, LOOSE, DEMO_TOOLS["lookup_order"])
CALLABLE = frozenset(KNOB_TOOLS.names)
KINDS = ("valid", "relaxed", "invalid", "unknown", "malformed")


def kind_of(call: ToolCall) -> str:
    """What a call is, read from the call alone (independently of the strategy)."""
    if call.name not in CALLABLE:
        return "unknown"
    item = KNOB_TOOLS[call.name]
    value: object = call.arguments
    if isinstance(value, str):
        try:
            value = msgspec.json.decode(value)
        except msgspec.DecodeError:
            repaired = recover_relaxed_object(value)
            if repaired is None or call.invalid is not None:
                return "malformed"
            item.validate(repaired)  # relaxed JSON of valid arguments: must validate
            return "relaxed"
    if call.invalid is not None:
        return "malformed"
    try:
        item.validate(value)  # type: ignore[arg-type]
    except ToolArgumentsError:
        return "invalid"
    return "valid"


def shares(only: str | None) -> dict[str, float]:
    knobs = {"unknown": 0.0, "malformed": 0.0, "relaxed": 0.0, "invalid": 0.0}
    if only is not None and only != "valid":
        knobs[only] = 1.0
    return knobs


KNOB_SETTINGS = settings(max_examples=30, deadline=None, database=None)


class TestToolCalls:
    @pytest.mark.parametrize("only", KINDS)
    def test_one_kind(self, only: str) -> None:
        """A share of 1 gives batches of that kind only (and valid calls validate)."""

        @KNOB_SETTINGS
        @given(tool_calls(KNOB_TOOLS, repeated_ids=0, **shares(only)))
        def check(calls: list[ToolCall]) -> None:
            assert [only] * len(calls) == [kind_of(c) for c in calls]

        check()

    @pytest.mark.parametrize("absent", KINDS[1:])
    def test_zero_share_never(self, absent: str) -> None:
        """A share of 0 never gives that kind, whatever the other shares."""
        knobs = dict.fromkeys(KINDS[1:], 0.2)
        knobs[absent] = 0.0

        @KNOB_SETTINGS
        @given(tool_calls(KNOB_TOOLS, **knobs))  # type: ignore[arg-type]
        def check(calls: list[ToolCall]) -> None:
            assert absent not in {kind_of(c) for c in calls}

        check()

    def test_every_kind_comes(self) -> None:
        """With the default shares, every kind and a repeated id show up."""
        drawn = tool_calls(KNOB_TOOLS, min_size=1)
        for kind in KINDS:
            comes(drawn, lambda calls, kind=kind: kind in {kind_of(c) for c in calls})
        comes(drawn, lambda calls: len({c.id for c in calls}) < len(calls))

    @given(tool_calls(KNOB_TOOLS, repeated_ids=1.0, min_size=2, max_size=4))
    @settings(max_examples=20, deadline=None, database=None)
    def test_repeated_ids(self, calls: list[ToolCall]) -> None:
        """A share of 1 makes every call after the first reuse an earlier id."""
        assert {"call_0"} == {c.id for c in calls}

    @given(tool_calls(KNOB_TOOLS, repeated_ids=0.0, max_size=6))
    @settings(max_examples=20, deadline=None, database=None)
    def test_unique_ids(self, calls: list[ToolCall]) -> None:
        """A share of 0 keeps ids unique."""
        assert len(calls) == len({c.id for c in calls})

    def test_sizes_and_shares_checked(self) -> None:
        """Wrong shares or sizes are refused up front."""
        with pytest.raises(InvalidArgument, match="at most 1"):
            tool_calls(KNOB_TOOLS, unknown=0.6, malformed=0.6)
        with pytest.raises(InvalidArgument, match="between 0 and 1"):
            tool_calls(KNOB_TOOLS, relaxed=-0.1)
        with pytest.raises(InvalidArgument, match="min_size"):
            tool_calls(KNOB_TOOLS, min_size=3, max_size=2)

    def test_shrinks_to_the_one_call(self) -> None:
        """A batch with an unknown call shrinks to that call alone. (Derandomized: how far
        hypothesis shrinks depends on the first example found; from some it stopped at
        three calls, one run in about ten.)"""
        found = find(
            tool_calls([echo], repeated_ids=0),
            lambda calls: any(c.name not in CALLABLE for c in calls),
            settings=settings(SHRINK, max_examples=200),
        )
        assert 1 == len(found)


# --- the checker, by mutation ---------------------------------------------------------------


@tool
def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    return a + b


@tool
def tally(step: int = 1) -> int:
    """Count by `step`: `{}` is valid, so malformed text must not become it."""
    return step


@tool(exposure="hidden")
def reset_all(confirm: bool) -> str:
    """Host-only: never callable by a model."""
    return "reset"


MUTATION_TOOLS = Registry.of(echo, add, tally, reset_all)
Dispatcher = Callable[[Sequence[ToolCall], Registry], DispatchResult]


def honest(calls: Sequence[ToolCall], tools: Registry) -> DispatchResult:
    return dispatch_sync(calls, tools)


def drops_a_message(calls: Sequence[ToolCall], tools: Registry) -> DispatchResult:
    result = dispatch_sync(calls, tools)
    return msgspec.structs.replace(result, messages=result.messages[:-1])


def reorders(calls: Sequence[ToolCall], tools: Registry) -> DispatchResult:
    result = dispatch_sync(calls, tools)
    return msgspec.structs.replace(result, messages=result.messages[::-1])


def answers_twice(calls: Sequence[ToolCall], tools: Registry) -> DispatchResult:
    result = dispatch_sync(calls, tools)
    return msgspec.structs.replace(result, messages=(*result.messages, *result.messages[:1]))


def runs_hidden(calls: Sequence[ToolCall], tools: Registry) -> DispatchResult:
    exposed = [attrs.evolve(item, exposure="direct") for item in tools.values()]
    return dispatch_sync(calls, exposed)


def runs_invalid(calls: Sequence[ToolCall], tools: Registry) -> DispatchResult:
    """Skips schema validation: every tool takes any object (and its function may fail)."""
    lenient = [
        Tool.from_schema(item.name, item.description, {"type": "object"}, fn=_anything)
        for item in tools.values()
        if item.exposure.value != "hidden"
    ]
    return dispatch_sync(calls, lenient)


def _anything(**arguments: object) -> str:
    return "ran"


BROKEN: dict[str, tuple[Dispatcher, str]] = {
    "drops a message": (drops_a_message, "invariant 1"),
    "reorders": (reorders, "invariant 1"),
    "answers an id twice": (answers_twice, "invariant 1"),
    "runs a hidden tool": (runs_hidden, "invariant 2"),
    "runs on invalid arguments": (runs_invalid, "invariant 3"),
}
#: hypothesis' default number of examples (not the profile's).
DEFAULT_EXAMPLES = settings.default.max_examples if settings.default else 100


class TestCheckerCatchesBrokenDispatchers:
    @pytest.mark.parametrize("broken", list(BROKEN), ids=list(BROKEN))
    def test_caught(self, broken: str) -> None:
        """Each broken dispatcher is caught within the default number of examples."""
        dispatcher, invariant = BROKEN[broken]

        @settings(
            max_examples=100,
            database=None,
            deadline=None,
            report_multiple_bugs=False,
            phases=[Phase.generate],  # found is enough here: shrinking has its own tests
        )
        @given(tool_calls(MUTATION_TOOLS))
        def prop(calls: list[ToolCall]) -> None:
            check_dispatch_invariants(calls, dispatcher(calls, MUTATION_TOOLS), MUTATION_TOOLS)

        with pytest.raises(AssertionError, match=invariant):
            prop()

    @settings(max_examples=100, database=None, deadline=None)
    @given(tool_calls(MUTATION_TOOLS))
    def test_honest_passes(self, calls: list[ToolCall]) -> None:
        """The real dispatcher passes on the same batches (no false alarm)."""
        check_dispatch_invariants(calls, honest(calls, MUTATION_TOOLS), MUTATION_TOOLS)

    def test_an_abandoned_call_whose_id_repeats(self) -> None:
        """No false alarm: a call abandoned before its tool recorded anything is answered
        as timed out, and a later repeat of its id as a refusal; the checker reads the
        first call's answer (it read the repeat's and blamed `executed`)."""
        release = threading.Event()

        @tool(timeout=0.05)
        def stuck(x: int) -> int:
            """Waits for the test to let it go."""
            release.wait(5)
            return x

        calls = [ToolCall("a", "stuck", {"x": 1}), ToolCall("a", "stuck", {"x": 1})]
        try:
            result = dispatch_sync(calls, [stuck])
        finally:
            release.set()
        assert result.executed == ("a",)
        assert "timed out" in result.messages[0].content
        check_dispatch_invariants(calls, result, [stuck], ran=[])

    @pytest.mark.parametrize(
        ("calls", "options"),
        [
            ([ToolCall("a", "echo\udc80", {"text": "x"})], {}),
            ([ToolCall("a", "", "", invalid="no name \udc80")], {}),
            ([ToolCall("a", "Login", '{"user": "u", "password": "hunter2"}')], {}),
            (
                [ToolCall("a", "login", '{"user": "u", "password": "hunter2"}')],
                {"advertised": ["echo"]},
            ),
        ],
        ids=["surrogate-name", "surrogate-reason", "redacting-variant", "redacting-unadvertised"],
    )
    def test_escaped_and_redacted_unknown_calls(
        self, calls: list[ToolCall], options: dict[str, object]
    ) -> None:
        """No false alarm where dispatch escapes a name or reason holding a lone surrogate
        (every result encodes), or redacts the secrets of an unknown call that reaches a
        redacting tool (the checker wanted them verbatim)."""

        @tool
        def echo(text: str) -> str:
            """Echo."""
            return text

        @tool(policy=ToolPolicy(redact=("password",)))
        def login(user: str, password: str) -> str:
            """Log in."""
            return user

        tools = Registry.of(echo, login)
        result = dispatch_sync(calls, tools, **options)  # type: ignore[arg-type]
        assert msgspec.json.encode(result)
        assert "hunter2" not in repr(result)
        check_dispatch_invariants(calls, result, tools, **options)  # type: ignore[arg-type]

    @pytest.mark.parametrize("limit", [1, 2, 5, 15, 50, 80])
    def test_refusals_cut_to_the_byte_limit(self, limit: int) -> None:
        """No false alarm for refusals cut to ``RunPolicy.max_result_bytes`` (the repeated
        id's answer no longer equals its ``ToolDenied`` message whole, and a cut refusal
        may no longer name the tool); a denial that is not the event's text still fails."""
        calls = [
            ToolCall("a", "echo", {"text": "x"}),
            ToolCall("a", "echo", {"text": "y"}),
            ToolCall("b", "ech0", {"text": "z"}),
            ToolCall("c", "add", {"a": "one"}),
        ]
        policy = RunPolicy(max_result_bytes=limit)
        result = dispatch_sync(calls, MUTATION_TOOLS, policy=policy)
        check_dispatch_invariants(calls, result, MUTATION_TOOLS, policy=policy)
        repeat = result.messages[1]
        forged = msgspec.structs.replace(repeat, content="Another text\n[truncated]")
        changed = msgspec.structs.replace(
            result, messages=(result.messages[0], forged, *result.messages[2:])
        )
        with pytest.raises(AssertionError, match="repeats an id"):
            check_dispatch_invariants(calls, changed, MUTATION_TOOLS, policy=policy)

    def test_message_names_invariant_call_and_what_it_saw(self) -> None:
        """A failure names the invariant, the call id and what the checker saw."""
        calls = [
            ToolCall("a", "echo", {"text": "x"}),
            ToolCall("b", "reset_all", {"confirm": True}),
        ]
        with pytest.raises(AssertionError) as caught:
            check_dispatch_invariants(calls, runs_hidden(calls, MUTATION_TOOLS), MUTATION_TOOLS)
        text = str(caught.value)
        assert text.startswith("invariant 2:")
        assert "'b'" in text
        assert "'reset_all' ran" in text


# --- the recipe: a user's registry and middleware, under trio and asyncio -------------------


def lenient_json(call: ToolCall, env: object) -> ToolCall:
    """A deliberately broken "repair" middleware: text it cannot decode becomes `{}`."""
    if isinstance(call.arguments, str):
        try:
            json.loads(call.arguments)
        except ValueError:
            return msgspec.structs.replace(call, arguments={})
    return call


class TestRecipe:
    @pytest.mark.parametrize("backend", ["trio", "asyncio"])
    @settings(max_examples=50, deadline=None, database=None)
    @given(calls=tool_calls(MUTATION_TOOLS))
    def test_pipeline_keeps_invariants(self, backend: str, calls: list[ToolCall]) -> None:
        """The recipe: await dispatch with your middleware on a backend, then check."""

        async def run() -> DispatchResult:
            return await dispatch(calls, MUTATION_TOOLS, middleware=[before_tool(_passthrough)])

        result = anyio.run(run, backend=backend)
        check_dispatch_invariants(calls, result, MUTATION_TOOLS)

    @pytest.mark.parametrize("backend", ["trio", "asyncio"])
    def test_finds_the_broken_middleware(self, backend: str) -> None:
        """The same recipe finds the middleware that turns malformed text into `{}`."""

        @settings(
            max_examples=100,
            database=None,
            deadline=None,
            report_multiple_bugs=False,
            phases=[Phase.generate],  # found is enough here: shrinking has its own tests
        )
        @given(calls=tool_calls(MUTATION_TOOLS))
        def prop(calls: list[ToolCall]) -> None:
            async def run() -> DispatchResult:
                return await dispatch(calls, MUTATION_TOOLS, middleware=[before_tool(lenient_json)])

            check_dispatch_invariants(calls, anyio.run(run, backend=backend), MUTATION_TOOLS)

        with pytest.raises(AssertionError, match="invariant 3"):
            prop()


def _passthrough(call: ToolCall, env: object) -> ToolCall:
    return call


# --- the module itself ----------------------------------------------------------------------


class TestModule:
    @pytest.mark.parametrize("name", ["_arguments", "_calls", "_relaxed", "_invariants"])
    def test_docstring_examples_run(self, name: str) -> None:
        """Every docstring example of the public functions runs as shown."""
        module = importlib.import_module(f"tinytools.testing.{name}")
        failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert (0, True) == (failed, attempted > 0)

    def test_core_import_skips_hypothesis(self) -> None:
        """`import tinytools` does not import hypothesis; `tinytools.testing` does."""
        code = (
            "import sys, tinytools\n"
            "assert 'hypothesis' not in sys.modules\n"
            "import tinytools.testing\n"
            "assert 'hypothesis' in sys.modules\n"
        )
        subprocess.run([sys.executable, "-c", code], check=True)

    def test_without_hypothesis_names_the_extra(self, tmp_path: Path) -> None:
        """Without hypothesis, importing the kit says which extra to install."""
        (tmp_path / "hypothesis.py").write_text("raise ImportError('no hypothesis here')\n")
        code = "import tinytools.testing"
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(tmp_path)},
            check=False,
        )
        assert 'pip install "tinytools[testing]"' in done.stderr


class TestPatternsInTheChecker:
    def test_accepted_text_never_backtracks_in_the_checker(self) -> None:
        """The checker matches a schema's patterns as the tools do (RE2): an argument a
        tool rightly accepts (`(a+)+b|c` is found in forty `a` and a `c`) takes Python's
        `re` about 2**40 steps; a pattern RE2 cannot run is not enforced by the tool, so
        the checker does not hold it against the run. In a child process, so a hang fails
        this test at its deadline instead of freezing the suite."""
        code = textwrap.dedent(
            """
            import json
            from typing import Annotated
            import msgspec
            from tinytools import Tool, ToolCall, dispatch_sync, tool
            from tinytools.testing import check_dispatch_invariants

            @tool
            def typed(s: Annotated[str, msgspec.Meta(pattern="(a+)+b|c")]) -> str:
                '''Doc.'''
                return "ran"

            schema = {
                "type": "object",
                "properties": {
                    "s": {"type": "string", "pattern": "(a+)+b|c"},
                    "t": {"type": "string", "pattern": "^(?=b)(a+)+$"},
                },
            }
            hand = Tool.from_schema("hand", "Doc.", schema, lambda **kw: "ran")
            text = "a" * 40 + "c"
            for t, arguments in ((typed, {"s": text}), (hand, {"s": text, "t": text})):
                calls = [ToolCall("1", t.name, json.dumps(arguments))]
                result = dispatch_sync(calls, [t])
                assert result.messages[0].content == "ran", result.messages[0].content
                check_dispatch_invariants(calls, result, [t])
            print("checked")
            """
        )
        try:
            done = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
            )
        except subprocess.TimeoutExpired:
            pytest.fail("check_dispatch_invariants matched a pattern with Python's `re`: hung")
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "checked"


class TestToolsets:
    """The kit takes a toolset as dispatch does, under the names the model sees, and says
    plainly that it does not model discovery's unwrapping."""

    @settings(max_examples=30, deadline=None)
    @given(data=st.data())
    def test_a_prefixed_toolset(self, data: st.DataObject) -> None:
        from tinytools.toolsets import Prefixed

        toolset = Prefixed(Registry.of(add_tool()), "math_")
        calls = data.draw(tool_calls(toolset, unknown=0.2, malformed=0.2))
        assert all(c.name != "add" for c in calls)  # the model never sees the inner name
        check_dispatch_invariants(calls, dispatch_sync(calls, toolset), toolset)

    def test_discovery_is_refused_clearly(self) -> None:
        from tinytools.discovery import Discovery

        @tool(exposure="deferred")
        def convert(amount: float) -> float:
            """Convert an amount (found through tool_search)."""
            return amount

        discovery = Discovery(Registry.of(add_tool(), convert))
        with pytest.raises(TypeError, match="cannot model discovery"):
            tool_calls(discovery).validate()
        with pytest.raises(TypeError, match="Pass the toolset the Discovery wraps"):
            check_dispatch_invariants([], dispatch_sync([], discovery), discovery)


def add_tool() -> Tool[..., object]:
    @tool
    def add(a: int, b: int = 0) -> int:
        """Add two integers."""
        return a + b

    return add


class TestInvariantsReadTheSchemaAsEnforced:
    """The independent schema check read a 2020-12 schema as draft 7: `contains` without
    the `minContains` it qualifies (dispatch documents not enforcing either), so a tool
    rightly run was reported as breaking invariant 3."""

    def _run(self, schema: dict[str, object], arguments: dict[str, object]) -> None:
        item = Tool.from_schema("pick", "Pick.", schema, fn=_anything)
        calls = [ToolCall("c", "pick", arguments)]
        check_dispatch_invariants(calls, dispatch_sync(calls, [item]), [item])

    def test_a_documented_loosening_is_no_violation(self) -> None:
        schema = {
            "type": "object",
            "properties": {"a": {"type": "array", "contains": {"const": 7}, "minContains": 2}},
        }
        self._run(schema, {"a": []})  # raised "invariant 3"


class TestValidArgumentsAreValid:
    """``valid_arguments`` drew values the tool refuses: Python's Unicode ``\\d`` where
    RE2 (and ECMA-262) match ASCII digits, an ``anyOf`` of ``required`` drawn without
    the ``properties`` beside it (``{}``), and it raised on ``prefixItems`` with
    ``items: false`` and on an integer bound past the 64-bit range."""

    @pytest.mark.parametrize(
        "schema",
        [
            {
                "type": "object",
                "properties": {"code": {"type": "string", "pattern": "^[a-z]{3}\\d+$"}},
                "required": ["code"],
            },
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
            },
            {
                "type": "object",
                "properties": {
                    "pair": {
                        "type": "array",
                        "prefixItems": [{"type": "integer"}, {"type": "string"}],
                        "items": False,
                    }
                },
                "required": ["pair"],
            },
            {
                "type": "object",
                "properties": {"a": {"type": "integer", "minimum": 10**30, "multipleOf": 7}},
                "required": ["a"],
            },
            {
                "type": "object",
                "properties": {"a": {"type": "integer", "exclusiveMaximum": -(10**30)}},
                "required": ["a"],
            },
        ],
        ids=["ascii-digits", "anyOf-required", "prefixItems", "past-64-bits", "below-64-bits"],
    )
    def test_every_draw_is_accepted(self, schema: dict[str, object]) -> None:
        item = Tool.from_schema("pick", "Pick.", schema, fn=_anything)

        @settings(max_examples=60, database=None, deadline=None)
        @given(valid_arguments(item))
        def prop(arguments: dict[str, object]) -> None:
            item.validate(arguments)

        prop()


def holds_both_ways(item: Tool[..., object], examples: int = 100) -> None:
    """`valid_arguments` draws only what `item` accepts, `invalid_arguments` only what it
    rejects; with hypothesis' health checks on (a strategy that mostly misses fails them)."""

    @settings(max_examples=examples, database=None, deadline=None)
    @given(valid_arguments(item))
    def accepted(arguments: dict[str, object]) -> None:
        item.validate(arguments)
        item.validate(msgspec.json.encode(arguments).decode())

    @settings(max_examples=examples, database=None, deadline=None)
    @given(invalid_arguments(item))
    def rejected(arguments: dict[str, object]) -> None:
        with pytest.raises(ToolArgumentsError):
            item.validate(arguments)

    accepted()
    rejected()


def _one_number(number: dict[str, object]) -> Tool[..., object]:
    schema = {"type": "object", "properties": {"n": number}, "required": ["n"]}
    return Tool.from_schema("pick", "Pick.", schema, fn=_anything)


BIG = 2**63 - 1


class TestNumbersAtAnySize:
    """A bound a float cannot hold (``2**63 - 1``) made ``valid_arguments`` say no argument
    satisfies the schema (hypothesis refused it as a float bound), and a break one past a
    large bound was absorbed by float arithmetic: for ``maximum: 1e20``,
    ``invalid_arguments`` drew ``1e20`` itself, which is valid. Bounds and ``multipleOf``
    are now kept exactly, for schemas and for parameter types."""

    @pytest.mark.parametrize(
        "number",
        [
            {"type": "number", "maximum": BIG},
            {"type": "number", "exclusiveMaximum": BIG},
            {"type": "number", "minimum": BIG},
            {"type": "number", "exclusiveMinimum": 2**53 + 1},
            {"type": "number", "maximum": 1e20},
            {"maximum": 1e20},
            {"type": "integer", "maximum": 1e20},
            {"type": "integer", "exclusiveMinimum": -1e20},
            {"type": "number", "minimum": 10**400},
            {"type": "number", "maximum": 5, "exclusiveMaximum": 10},
            {"type": "number", "minimum": 1, "exclusiveMinimum": 3},
            {"type": "number", "multipleOf": 0.1, "minimum": 0.25, "maximum": 0.35},
            {"type": "number", "multipleOf": 5, "minimum": 1e20},
            {"type": "integer", "multipleOf": 1.5},
            {"type": "integer", "minimum": 10**30, "maximum": 10**30 + 100, "multipleOf": 7},
        ],
        ids=[
            "max-2**63-1",
            "exclusive-max-2**63-1",
            "min-2**63-1",
            "exclusive-min-2**53+1",
            "max-1e20",
            "untyped-max-1e20",
            "integer-max-1e20",
            "integer-exclusive-min--1e20",
            "min-10**400",
            "max-and-exclusive-max",
            "min-and-exclusive-min",
            "multiple-of-0.1",
            "multiple-of-5-past-1e20",
            "integer-multiple-of-1.5",
            "integer-multiple-of-7-past-10**30",
        ],
    )
    def test_schema_bounds(self, number: dict[str, object]) -> None:
        holds_both_ways(_one_number(number))

    def test_the_bound_itself_is_drawn(self) -> None:
        """Edge values stay: a maximum no float holds is drawn exactly."""
        drawn = valid_arguments(_one_number({"type": "number", "maximum": BIG}))
        comes(drawn, lambda a: a["n"] == BIG)

    @pytest.mark.parametrize(
        "meta",
        [
            (float, msgspec.Meta(le=BIG)),
            (float, msgspec.Meta(lt=2**53 + 1)),
            (float, msgspec.Meta(ge=2**53 + 1)),
            (float, msgspec.Meta(multiple_of=0.1)),
            (float, msgspec.Meta(gt=0, lt=1, multiple_of=0.3)),
            (float, msgspec.Meta(ge=1e300, multiple_of=1e299)),
            (int, msgspec.Meta(ge=2**62, multiple_of=7)),
            (int, msgspec.Meta(le=-(2**62) + 5, multiple_of=3)),
        ],
        ids=lambda meta: f"{meta[0].__name__}-{meta[1]!r}",
    )
    def test_parameter_bounds(self, meta: tuple[type, msgspec.Meta]) -> None:
        kind, constraint = meta

        def pick(n: int) -> str:
            """Pick."""
            return "ok"

        pick.__annotations__["n"] = Annotated[kind, constraint]
        holds_both_ways(tool(pick))


def _one_string(string: dict[str, object], enforce: str = "full") -> Tool[..., object]:
    schema = {"type": "object", "properties": {"s": string}, "required": ["s"]}
    return Tool.from_schema("pick", "Pick.", schema, fn=_anything, enforce=enforce)  # type: ignore[arg-type]


#: The MCP reference fetch server's input schema (pydantic's, for its `Fetch` model).
FETCH = Tool.from_schema(
    "fetch",
    "Fetches a URL from the internet.",
    {
        "description": "Parameters for fetching a URL.",
        "properties": {
            "url": {
                "description": "URL to fetch",
                "format": "uri",
                "minLength": 1,
                "title": "Url",
                "type": "string",
            },
            "max_length": {
                "default": 5000,
                "description": "Maximum number of characters to return.",
                "exclusiveMaximum": 1000000,
                "exclusiveMinimum": 0,
                "title": "Max Length",
                "type": "integer",
            },
            "start_index": {"default": 0, "minimum": 0, "title": "Start Index", "type": "integer"},
            "raw": {"default": False, "title": "Raw", "type": "boolean"},
        },
        "required": ["url"],
        "title": "Fetch",
        "type": "object",
    },
    fn=_anything,
)


class TestFormats:
    """``valid_arguments`` drew `uri`, `hostname`, `uri-reference` and `json-pointer`
    strings as any text, which `validate` refuses: every test of a tool such as the MCP
    fetch server's (`url`) failed hypothesis' health check. Every format `validate`
    enforces is now drawn, at the lengths and with the patterns a schema adds."""

    def test_the_fetch_servers_tool(self) -> None:
        holds_both_ways(FETCH)

    @pytest.mark.parametrize("fmt", sorted(ENFORCED_FORMATS))
    def test_every_enforced_format(self, fmt: str) -> None:
        holds_both_ways(_one_string({"type": "string", "format": fmt}))

    @pytest.mark.parametrize(
        "string",
        [
            {"format": "uri", "maxLength": 3},
            {"format": "uri", "minLength": 300},
            {"format": "uri", "pattern": "^https://"},
            {"format": "uri-reference", "maxLength": 0},
            {"format": "hostname", "minLength": 200, "maxLength": 200},
            {"format": "hostname", "pattern": "^[a-z]+\\.internal$"},
            {"format": "json-pointer", "maxLength": 1},
            {"format": "json-pointer", "pattern": "^/items/"},
            {"format": "email", "pattern": "@example\\.com$"},
            {"format": "date", "pattern": "^20"},
            {"format": "date-time", "minLength": 40},
            {"format": "time", "maxLength": 3},
            {"format": "time", "minLength": 10, "maxLength": 10},
            {"format": "ipv4", "minLength": 8, "maxLength": 8},
            {"format": "ipv6", "minLength": 44},
            {"format": "ipv6", "maxLength": 3},
            {"type": ["string", "null"], "format": "uri", "maxLength": 2048},
        ],
        ids=json.dumps,
    )
    def test_with_lengths_and_patterns(self, string: dict[str, object]) -> None:
        holds_both_ways(_one_string({"type": "string", **string}), examples=40)

    @pytest.mark.parametrize(
        "string",
        [
            {"format": "uuid", "maxLength": 35},
            {"format": "date", "minLength": 11},
            {"format": "date-time", "minLength": 21, "maxLength": 21},
            {"format": "ipv4", "maxLength": 6},
            {"format": "uri", "maxLength": 2},
        ],
        ids=json.dumps,
    )
    def test_a_length_no_value_in_the_format_has_is_said_up_front(
        self, string: dict[str, object]
    ) -> None:
        with pytest.raises(InvalidArgument, match="no argument dict satisfies the schema of"):
            valid_arguments(_one_string({"type": "string", **string}))

    def test_a_string_in_no_format_is_a_break(self) -> None:
        """`invalid_arguments` breaks a format too: the only fault is a non-empty `url`."""

        def format_broken(arguments: dict[str, object]) -> bool:
            url = arguments.get("url")
            if not isinstance(url, str) or url == "":
                return False
            try:
                FETCH.validate({**arguments, "url": "https://example.com"})
            except ToolArgumentsError:
                return False  # broken elsewhere
            return True

        comes(invalid_arguments(FETCH), format_broken)

    def test_no_format_break_where_formats_are_not_enforced(self) -> None:
        """Under `enforce="subset"` a format is not checked, so it is never the break."""
        holds_both_ways(_one_string({"type": "string", "format": "uri"}, enforce="subset"))


def _schema_tool(schema: dict[str, object]) -> Tool[..., object]:
    return Tool.from_schema("pick", "Pick.", schema, fn=_anything)


#: What Pydantic v1 (and FastAPI on it) writes for a field typed by a model or an enum
#: with a description: the reference wrapped in an `allOf`, the description beside it.
PYDANTIC_V1 = {
    "title": "Order",
    "type": "object",
    "properties": {
        "item": {
            "title": "Item",
            "description": "What.",
            "allOf": [{"$ref": "#/definitions/Item"}],
        },
        "size": {"description": "How big.", "allOf": [{"$ref": "#/definitions/Size"}]},
        "parent": {"description": "Nested.", "allOf": [{"$ref": "#/definitions/Order"}]},
    },
    "required": ["item", "size"],
    "definitions": {
        "Item": {
            "title": "Item",
            "type": "object",
            "properties": {
                "name": {"title": "Name", "type": "string", "minLength": 1},
                "price": {"title": "Price", "type": "number", "exclusiveMinimum": 0},
            },
            "required": ["name", "price"],
            "additionalProperties": False,
        },
        "Size": {"title": "Size", "enum": ["S", "M", "L"], "type": "string"},
        "Order": {"$ref": "#"},
    },
}
#: `required` (and types) only inside a top-level `allOf`.
PARTS = {
    "type": "object",
    "allOf": [
        {"properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"properties": {"b": {"type": "integer", "minimum": 0}}, "required": ["b"]},
    ],
}


class TestAllOf:
    """``allOf`` was not drawn: Pydantic v1 / FastAPI's ``{"allOf": [{"$ref": ...}],
    "description": ...}`` made both strategies fail hypothesis' health check, and with
    a top-level ``allOf`` holding ``required``, ``invalid_arguments`` said the tool
    "accepts every JSON object" though ``validate`` rejects ``{}``. The parts of an
    ``allOf`` are now merged into the one schema a value meets."""

    @pytest.mark.parametrize(
        "schema",
        [
            PYDANTIC_V1,
            PARTS,
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                "allOf": [
                    {"properties": {"a": {}, "b": {}}, "additionalProperties": False},
                    {"properties": {"b": {"minLength": 2}, "c": {"type": "boolean"}}},
                ],
            },
            {
                "type": "object",
                "properties": {
                    "n": {"allOf": [{"type": "number", "minimum": 1}, {"exclusiveMaximum": 9}]},
                    "k": {"allOf": [{"type": "integer", "multipleOf": 2}, {"multipleOf": 3}]},
                    "s": {"allOf": [{"type": "string", "minLength": 2}, {"maxLength": 3}]},
                },
                "required": ["n", "k", "s"],
            },
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                "allOf": [{"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}],
            },
            {
                "type": "object",
                "properties": {
                    "n": {
                        "allOf": [
                            {"type": "string"},
                            *({"minLength": 1, "title": str(i)} for i in range(300)),
                            {"pattern": "^x+$"},
                        ]
                    }
                },
                "required": ["n"],
            },
            {
                "type": "object",
                "properties": {"s": {"$ref": "#/$defs/D0"}},
                "required": ["s"],
                "$defs": {
                    **{f"D{i}": {"allOf": [{"$ref": f"#/$defs/D{i + 1}"}]} for i in range(100)},
                    "D100": {"type": "string", "maxLength": 2},
                },
            },
        ],
        ids=[
            "pydantic-v1",
            "required-in-parts",
            "closed-part",
            "bounds",
            "union-in-part",
            "many-parts",
            "long-reference-chain",
        ],
    )
    def test_drawn_and_broken(self, schema: dict[str, object]) -> None:
        holds_both_ways(_schema_tool(schema))

    def test_a_required_key_of_a_part_is_left_out(self) -> None:
        """A break drawn is a part's required key left out."""
        comes(invalid_arguments(_schema_tool(PARTS)), lambda a: "b" in a and "a" not in a)

    def test_merged_bounds_are_drawn_at_their_edge(self) -> None:
        schema = {
            "type": "object",
            "properties": {"n": {"allOf": [{"type": "integer", "maximum": 9}, {"maximum": 5}]}},
            "required": ["n"],
        }
        comes(valid_arguments(_schema_tool(schema)), lambda a: a["n"] == 5)

    @pytest.mark.parametrize(
        "schema",
        [
            {"allOf": [{"type": "string"}, {"type": "integer"}]},
            {"allOf": [{"type": "integer", "minimum": 5}, {"maximum": 1}]},
            {"allOf": [{"enum": ["a", "b"]}, {"enum": ["c"]}]},
            {"allOf": [{"const": 1}, {"const": 2}]},
            {
                "type": "object",
                "allOf": [
                    {"properties": {"a": {}}, "additionalProperties": False},
                    {"required": ["b"]},
                ],
            },
            {"allOf": [{"type": "string"}, False]},
        ],
        ids=["types", "bounds", "enums", "consts", "required-but-closed", "false"],
    )
    def test_parts_no_value_meets_together_are_said_up_front(
        self, schema: dict[str, object]
    ) -> None:
        item = _schema_tool({"type": "object", "properties": {"n": schema}, "required": ["n"]})
        with pytest.raises(InvalidArgument, match="no argument dict satisfies the schema of"):
            valid_arguments(item)

    def test_nothing_it_cannot_break_is_said_to_accept_every_object(self) -> None:
        """Where no break is certain, the refusal says so, not that every object passes."""
        either = _schema_tool(
            {"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}
        )
        with pytest.raises(ToolArgumentsError):
            either.validate({})
        with pytest.raises(
            InvalidArgument, match="cannot break the schema of tool 'pick'"
        ) as raised:
            invalid_arguments(either)
        assert "`anyOf`" in str(raised.value)
        assert "accepts every JSON object" not in str(raised.value)


# --- the checker on a batch resolved inline by on_deferred ---------------------------------


def inline_tools(journal: list[Entry]) -> Registry:
    """Tools deferred four ways, each recording every entry into it."""

    @tool
    def transfer(amount: int, ctx: Inject[RunContext], call_id: Inject[CallId]) -> str:
        """Asks for approval from inside, unless approved."""
        journal.append(Entry(call_id, "transfer", {"amount": amount}))
        if not ctx.approved:
            raise ApprovalRequired({"amount": amount})
        return f"moved {amount}"

    @tool(approval_required=True)
    def pay(amount: int, call_id: Inject[CallId]) -> str:
        """Gated by its policy."""
        journal.append(Entry(call_id, "pay", {"amount": amount}))
        return f"paid {amount}"

    @tool
    def later(amount: int, call_id: Inject[CallId]) -> str:
        """Leaves the call to the host."""
        journal.append(Entry(call_id, "later", {"amount": amount}))
        raise CallDeferred({"amount": amount})

    lookup = Tool.from_schema(
        "lookup",
        "Host-executed.",
        {"type": "object", "properties": {"amount": {"type": "integer"}}},
    )
    return Registry.of(transfer, pay, later, lookup)


DECISIONS: dict[str, Callable[[DeferredToolRequests], DeferredToolResults]] = {
    "approve": lambda pending: pending.approve("c"),
    "edit": lambda pending: pending.approve_with_args("c", {"amount": 8}),
    "edit-badly": lambda pending: pending.approve_with_args("c", {"amount": "eight"}),
    "deny": lambda pending: pending.deny("c", "operator refused"),
    "respond": lambda pending: pending.respond("c", "the host did it"),
    "undecided": lambda pending: pending.results(),
}


def inline(name: str, decision: str, journal: list[Entry]) -> tuple[list[ToolCall], DispatchResult]:
    calls = [ToolCall("c", name, '{"amount": 7}'), ToolCall("d", "pay", {"amount": 1})]
    decide = DECISIONS[decision]

    def on_deferred(pending: DeferredToolRequests) -> DeferredToolResults:
        return decide(pending).approve("d") if decision != "undecided" else decide(pending)

    return calls, dispatch_sync(calls, inline_tools(journal), on_deferred=on_deferred)


class TestInlineResolution:
    """`check_dispatch_invariants` failed a correct `on_deferred` flow: a tool that asks
    for approval, approved inline, runs twice (Started, Deferred, Approved, Started,
    Completed), which it read as a call with two starts; the project's own property test
    skipped the check for such results. Each pass of a call is now checked alone."""

    @pytest.mark.parametrize("decision", list(DECISIONS))
    @pytest.mark.parametrize("name", ["transfer", "pay", "later", "lookup"])
    def test_every_inline_flow_passes(self, name: str, decision: str) -> None:
        journal: list[Entry] = []
        calls, result = inline(name, decision, journal)
        check_dispatch_invariants(calls, result, inline_tools([]), ran=journal)

    def test_the_reported_flow(self) -> None:
        journal: list[Entry] = []
        calls, result = inline("transfer", "approve", journal)
        kinds = [type(e).__name__ for e in result.events if getattr(e, "call_id", "") == "c"]
        assert ["ToolStarted", "ToolDeferred", "ToolApproved", "ToolStarted", "ToolCompleted"] == (
            kinds
        )
        check_dispatch_invariants(calls, result, inline_tools([]), ran=journal)


def _events_of_c(
    result: DispatchResult, change: Callable[[list[object]], list[object]]
) -> DispatchResult:
    """``result`` with call c's events changed (the other calls' kept in place)."""
    others = [e for e in result.events if getattr(e, "call_id", "") != "c"]
    mine = change([e for e in result.events if getattr(e, "call_id", "") == "c"])
    return msgspec.structs.replace(result, events=(*mine, *others))  # type: ignore[arg-type]


def _without(kind: type) -> Callable[[list[object]], list[object]]:
    return lambda events: [e for e in events if not isinstance(e, kind)]


def _run_with(arguments: dict[str, object], run: int) -> Callable[[list[object]], list[object]]:
    """Call c's ``run``-th start reporting ``arguments``."""

    def change(events: list[object]) -> list[object]:
        at = [i for i, e in enumerate(events) if isinstance(e, ToolStarted)][run]
        started = events[at]
        assert isinstance(started, ToolStarted)
        events[at] = msgspec.structs.replace(started, arguments=arguments)
        return events

    return change


DOCTORED: dict[str, Callable[[DispatchResult], DispatchResult]] = {
    "ran again unapproved": lambda r: _events_of_c(r, _without(ToolApproved)),
    "two starts in one pass": lambda r: _events_of_c(r, _without(ToolDeferred)),
    "no end": lambda r: _events_of_c(r, _without(ToolCompleted)),
    "ended twice": lambda r: _events_of_c(r, lambda e: [*e, e[-1]]),
    "ran again on invalid arguments": lambda r: _events_of_c(r, _run_with({"amount": "x"}, 1)),
    # (the run after the host's approval may have the host's edited arguments: only its
    # schema is checked; the first run's must be the call's)
    "first ran on other arguments": lambda r: _events_of_c(r, _run_with({"amount": 9}, 0)),
    "executed omits it": lambda r: msgspec.structs.replace(r, executed=("d",)),
    "answered and deferred": lambda r: msgspec.structs.replace(
        r, deferred=DeferredToolRequests((), (ToolCall("c", "transfer", '{"amount": 7}'),))
    ),
    "an error answer for a success": lambda r: msgspec.structs.replace(
        r,
        messages=(
            msgspec.structs.replace(r.messages[0], is_error=True, status="error"),
            *r.messages[1:],
        ),
    ),
}


class TestInlineResolutionStillBites:
    @pytest.mark.parametrize("doctor", list(DOCTORED))
    def test_a_doctored_result_is_rejected(self, doctor: str) -> None:
        """Each way of breaking the correct flow's result is still caught."""
        journal: list[Entry] = []
        calls, result = inline("transfer", "approve", journal)
        with pytest.raises(AssertionError):
            check_dispatch_invariants(calls, DOCTORED[doctor](result), inline_tools([]))

    def test_what_the_tool_received_is_checked_against_what_was_reported(self) -> None:
        """A recorded run the events do not report is caught."""
        journal: list[Entry] = []
        calls, result = inline("transfer", "approve", journal)
        journal[-1] = Entry("c", "transfer", {"amount": 9})
        with pytest.raises(AssertionError, match="invariant 3"):
            check_dispatch_invariants(calls, result, inline_tools([]), ran=journal)
