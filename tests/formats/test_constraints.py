"""Tests for the decoding constraints (`constraint` in the text dialects, `Constraint`).

Each grammar is checked with llguidance and its byte tokenizer: the Lark grammar as
written, the GBNF one through llguidance's ``gbnf_to_lark``. Valid calls as the
dialect's ``render_call`` writes them are accepted; mutated ones are not; whatever a
grammar accepts reads back with the dialect's ``parse`` into calls of the tools given.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from types import ModuleType
from typing import ClassVar
from unittest.mock import ANY

import pytest
from constraints import (
    accepts,
    compiled,
    lark_of_gbnf,
    lark_of_structural_tag,
    llama_cpp_limit,
    xgrammar_form,
)
from hypothesis import HealthCheck, Phase, assume, currently_in_test_context, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from locations import corpus_sample

from tinytools import Tool, ToolCall
from tinytools.formats import (
    MAX_PARALLEL_CALLS,
    Constraint,
    Gbnf,
    deepseek,
    json_in_tag,
    llama_json,
    mistral,
    ptype,
    xml,
)
from tinytools.formats._writable import REFUSAL_PREFIX
from tinytools.formats.bfcl import tool_from_bfcl
from tinytools.testing import valid_arguments

DIALECTS = [json_in_tag, llama_json, mistral, deepseek, ptype, xml]
_IDS = {
    json_in_tag: "json_in_tag",
    llama_json: "llama_json",
    mistral: "mistral",
    deepseek: "deepseek",
    ptype: "ptype",
    xml: "xml",
}
_BETWEEN = {json_in_tag: "", llama_json: "; ", mistral: "", ptype: "", xml: ""}


def joined(dialect: ModuleType, texts: list[str]) -> str:
    """Several calls as the dialect writes them in one reply (DeepSeek: in one block)."""
    if dialect is deepseek:
        inner = (
            t.removeprefix(deepseek.CALLS_BEGIN).removesuffix(deepseek.CALLS_END) for t in texts
        )
        return deepseek.CALLS_BEGIN + "".join(inner) + deepseek.CALLS_END
    return _BETWEEN[dialect].join(texts)


# Strings that stress escaping: quotes, escapes, controls, tags the parsers read.
_AWKWARD = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<|tool_call>", "[TOOL_CALLS]",
            "[ARGS]", "<|python_tag|>", '"', "\\", "\n", "\x00", "\u2028", "é", "𝄞", "<", "[",
            "{", "}", "<t", "</thin", "a"]  # fmt: skip
awkward_text = st.lists(st.sampled_from(_AWKWARD), max_size=6).map("".join)

_LEAVES = [
    {"type": "string"},
    {"type": "string", "pattern": "^[A-Z]{3}$"},
    {"type": "string", "pattern": "^[a-z0-9_-]{1,8}(\\.[a-z]+)?$"},
    {"type": "string", "minLength": 1, "maxLength": 4},
    {"type": "integer"},
    {"type": "integer", "minimum": 0, "maximum": 9},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "null"},
    {"enum": ["celsius", "fahrenheit", 'say "hi"', "<think>", "a\\b", 3, None]},
    {"const": {"k": [1, "x"]}},
    {"type": ["string", "null"]},
    {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
    {},
    {"$ref": "#/$defs/Small"},
]


def _nested(children: st.SearchStrategy[dict[str, object]]) -> st.SearchStrategy[dict[str, object]]:
    names = st.sampled_from(["a", "b_c", "D-e", 'q"t', "<think>", "ü", "a b"])
    return st.one_of(
        st.builds(
            lambda props, required, extra: {
                "type": "object",
                "properties": props,
                "required": [name for name in props if name in required],
                **extra,
            },
            st.dictionaries(names, children, max_size=4),
            st.lists(names, max_size=4),
            st.sampled_from([{}, {"additionalProperties": False}, {"additionalProperties": True}]),
        ),
        st.builds(
            lambda items, low, span: {
                "type": "array",
                "items": items,
                "minItems": low,
                "maxItems": low + span,
            },
            children,
            st.integers(0, 2),
            st.integers(0, 3),
        ),
        st.builds(
            lambda items: {"type": "array", "prefixItems": items},
            st.lists(children, min_size=1, max_size=3),
        ),
        st.builds(lambda a: {"anyOf": a}, st.lists(children, min_size=1, max_size=3)),
    )


# (No allOf, `format` or huge bounds: valid_arguments is being taught those elsewhere.)
schemas = st.recursive(st.sampled_from(_LEAVES), _nested, max_leaves=6)


def tool_for(schema: dict[str, object], required: bool, name: str = "t") -> Tool[..., object]:
    parameters = {
        "type": "object",
        "properties": {"v": schema, "w": {"type": "string"}},
        "required": ["v", "w"] if required else ["w"],
        "additionalProperties": False,
        "$defs": {"Small": {"type": "integer", "maximum": 5}},
    }
    return Tool.from_schema(name, "", parameters)  # type: ignore[arg-type]


def grammars(constraint: Constraint) -> dict[str, str]:
    """Every grammar of the constraint as Lark, by backend form (each GBNF one checked
    against llama.cpp's repetition limit first)."""
    eager = constraint.gbnf(lazy=False).text
    assert llama_cpp_limit(eager) is None, llama_cpp_limit(eager)
    found = {"lark": constraint.lark(), "gbnf": lark_of_gbnf(eager)}
    if constraint.choice == "auto":
        lazy = constraint.gbnf().text
        assert llama_cpp_limit(lazy) is None, llama_cpp_limit(lazy)
        found["gbnf-lazy"] = lark_of_gbnf(lazy)
    return found


@st.composite
def shuffled_keys(draw: st.DrawFn, value: object) -> object:
    """``value`` with every object's keys in an order drawn."""
    if isinstance(value, dict):
        keys = draw(st.permutations(list(value)))
        return {key: draw(shuffled_keys(value[key])) for key in keys}
    if isinstance(value, list):
        return [draw(shuffled_keys(item)) for item in value]
    return value


def assert_reads_back(
    dialect: ModuleType, text: str, tool: Tool[..., object], arguments: dict[str, object]
) -> None:
    """``text`` holds one call, of these arguments. (xml reads a value as its text where the
    types its schema names admit a string or are none, or do not admit the value's own
    type (a ``$ref`` is not followed there): see its module doc. There the JSON
    render_call wrote for a value that is no string is compared.)"""
    (call,) = dialect.parse(text, [tool]).calls
    found = call.arguments
    assert isinstance(found, dict)
    if dialect is xml:
        for key, value in arguments.items():
            if isinstance(found.get(key), str) and not isinstance(value, str):
                found[key] = json.loads(found[key])
    assert json.loads(json.dumps(found)) == arguments


def with_tag(constraint: Constraint) -> dict[str, str]:
    """:func:`grammars`, the calls the structural tag takes (no prose: see
    ``lark_of_structural_tag``) and, where xgrammar is installed, the structural tag as
    xgrammar reads it (prose included)."""
    tag = constraint.structural_tag()
    return {**grammars(constraint), "tag": lark_of_structural_tag(tag), **xgrammar_form(tag)}


def rendered(dialect: ModuleType, tools: list[Tool[..., object]], *calls: ToolCall) -> str:
    texts = [dialect.render_call(call, tools) for call in calls]
    written = not any(text.startswith(REFUSAL_PREFIX) for text in texts)
    if currently_in_test_context():
        assume(written)  # (a lone surrogate, say: render_call refuses it)
    assert written, texts
    return joined(dialect, texts)


SETTINGS = settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("dialect", DIALECTS, ids=_IDS.get)
class TestValidCalls:
    """Every call render_call writes for schema-valid arguments is accepted."""

    @SETTINGS
    @given(schema=schemas, required=st.booleans(), data=st.data())
    def test_random_schemas(
        self, dialect: ModuleType, schema: dict[str, object], required: bool, data: st.DataObject
    ) -> None:
        """Arguments drawn from random schemas, rendered, pass every backend's grammar."""
        tool = tool_for(schema, required)
        arguments = data.draw(valid_arguments(tool))
        text = rendered(dialect, [tool], ToolCall("1", "t", arguments))
        for choice in ("auto", "required", "t"):
            constraint = dialect.constraint([tool], choice=choice)
            for form, lark in with_tag(constraint).items():
                assert accepts(lark, text), (form, choice, text)
        assert_reads_back(dialect, text, tool, arguments)

    @SETTINGS
    @given(schema=schemas, required=st.booleans(), data=st.data())
    def test_any_key_order(
        self, dialect: ModuleType, schema: dict[str, object], required: bool, data: st.DataObject
    ) -> None:
        """Arguments whose keys (nested ones too) come in any order are written in the
        schema's, the one order the grammars take (they were written in the dict's order,
        and refused)."""
        tool = tool_for(schema, required)
        arguments = data.draw(valid_arguments(tool))
        shuffled = data.draw(shuffled_keys(arguments))
        text = rendered(dialect, [tool], ToolCall("1", "t", shuffled))
        for form, lark in grammars(dialect.constraint([tool], choice="required")).items():
            assert accepts(lark, text), (form, text)
        assert_reads_back(dialect, text, tool, arguments)

    def test_key_order_of_the_schema(self, dialect: ModuleType) -> None:
        """Declared properties in order, then required keys no property lists, then other
        keys as they came; where the tools do not hold the tool, the dict's order."""
        branch = {"type": "object", "properties": {"x": {}, "y": {}}}
        tool = Tool.from_schema("t", "", {"type": "object", "properties": {
            "a": {"type": "integer"},
            "b": {"anyOf": [branch, {"type": "null"}]},
            "c": {"type": "object", "additionalProperties": {"type": "integer"}},
        }, "required": ["z", "a"]})  # fmt: skip
        call = ToolCall("1", "t", {"c": {"q": 1, "p": 2}, "b": {"y": 1, "x": 2}, "z": 3, "a": 4})
        text = rendered(dialect, [tool], call)
        assert_reads_back(dialect, text, tool, call.arguments)
        assert accepts(dialect.constraint([tool], choice="required").lark(), text)
        if dialect is ptype:  # positional in the schema's order, then keywords
            assert text == 't(4, {"x": 2, "y": 1}, {"q": 1, "p": 2}, z=3)'
            unordered = rendered(dialect, [], call)
            assert unordered == 't(c={"q": 1, "p": 2}, b={"y": 1, "x": 2}, z=3, a=4)'
            return
        if dialect is xml:  # one tag per argument in the schema's order, values as JSON
            assert text.splitlines() == [
                "<t>", "<a>4</a>", '<b>{"x":2,"y":1}</b>', '<c>{"q":1,"p":2}</c>',
                "<z>3</z>", "</t>",
            ]  # fmt: skip
            assert rendered(dialect, [], call).splitlines() == [
                "<t>", '<c>{"q":1,"p":2}</c>', '<b>{"y":1,"x":2}</b>', "<z>3</z>",
                "<a>4</a>", "</t>",
            ]  # fmt: skip
            return
        assert re.findall(r'"(\w)":', text) == ["a", "b", "x", "y", "c", "q", "p", "z"]
        unordered = re.findall(r'"(\w)":', rendered(dialect, [], call))
        assert unordered == ["c", "q", "p", "b", "y", "x", "z", "a"]

    @SETTINGS
    @given(value=awkward_text, key=awkward_text.filter(bool))
    def test_awkward_strings_and_keys(self, dialect: ModuleType, value: str, key: str) -> None:
        """Strings and property names holding tags, quotes and controls are accepted. (xml
        writes no name holding ``<``, ``>`` or a newline: render_call refuses such a call,
        so those are left out of its keys.)"""
        if dialect is xml:
            key = key.translate({ord("<"): "", ord(">"): "", ord("\n"): ""}) or "k"
        tool = Tool.from_schema(
            "t", "", {"type": "object", "properties": {key: {"type": "string"},
                                                         "e": {"enum": [value]}}}
        )  # fmt: skip
        text = rendered(dialect, [tool], ToolCall("1", "t", {key: value, "e": value}))
        for form, lark in with_tag(dialect.constraint([tool])).items():
            assert accepts(lark, text), (form, text)

    @pytest.mark.parametrize(
        ("schema", "value"),
        [
            ({"anyOf": [{"type": "string"}, {"enum": ["ab"]}]}, "a"),
            ({"anyOf": [{"type": "integer"}, {"enum": [123]}]}, 12),
            ({"anyOf": [{"type": "string", "pattern": "^a$"}, {"enum": ["a\\b"]}]}, "a"),
            ({"anyOf": [{"type": "object"}, {"const": {"k": [1, "x"]}}]}, {"": None}),
            ({"anyOf": [{"type": "array"}, {"const": [[1]]}]}, [[]]),
        ],
    )
    def test_value_the_start_of_another_branch(
        self, dialect: ModuleType, schema: dict[str, object], value: object
    ) -> None:
        """A value that begins a longer one of another branch (``"a"`` of ``"ab"``,
        ``{"`` of a ``const`` object) is accepted by every grammar (the GBNF one was refused
        in the tests: their reading of GBNF made each literal one greedy lexeme, which
        llama.cpp does not; the Lark one refused a value that starts as a ``const`` does,
        which llguidance's lexer took as one lexeme and could not give back)."""
        tool = tool_for(schema, True)
        text = rendered(dialect, [tool], ToolCall("1", "t", {"v": value, "w": ""}))
        for form, lark in grammars(dialect.constraint([tool])).items():
            assert accepts(lark, text), (form, text)

    @pytest.mark.parametrize("most", [1, 40, 80, 100, 101])
    def test_string_lengths_within_llama_cpp_limit(self, dialect: ModuleType, most: int) -> None:
        """A string's maxLength up to the grammar's cap gives GBNF llama.cpp's parser takes
        (from 40 on it refused the json_in_tag and Mistral forms, whose strings may hold
        a raw lead character, and llama-cpp-python then decoded unconstrained), and a
        string of that length is accepted."""
        tool = tool_for({"type": "string", "minLength": 1, "maxLength": most}, True)
        value = ("ab<" * most)[:most]
        text = rendered(dialect, [tool], ToolCall("1", "t", {"v": value, "w": ""}))
        for choice in ("auto", "required"):
            constraint = dialect.constraint([tool], choice=choice)
            for form, lark in with_tag(constraint).items():
                assert accepts(lark, text), (form, choice)

    def test_prose_then_calls(self, dialect: ModuleType) -> None:
        """With "auto", prose alone, and prose before the calls, are accepted."""
        tool = tool_for({"type": "integer"}, True)
        call = rendered(dialect, [tool], ToolCall("1", "t", {"v": 1, "w": "x"}))
        constraint = dialect.constraint([tool])
        for lark in [constraint.lark(), *xgrammar_form(constraint.structural_tag()).values()]:
            assert accepts(lark, "No tool is needed for that.")
            assert accepts(lark, "Let me look.\n" + call)
            assert accepts(lark, "")
            assert not accepts(lark, call + "\nDone.")


@pytest.mark.parametrize("dialect", DIALECTS, ids=_IDS.get)
class TestRejected:
    """Calls the tools' specs rule out, and shapes the choice rules out, are rejected."""

    TOOLS: ClassVar[list[Tool[..., object]]] = [
        Tool.from_schema(
            "get_weather",
            "",
            {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "units": {"enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer"},
                },
                "required": ["city"],
                "additionalProperties": False,
            },
        ),
        Tool.from_schema(
            "get_time", "", {"type": "object", "properties": {"city": {"type": "string"}}}
        ),
    ]
    GOOD: ClassVar[dict[str, object]] = {"city": "Paris", "units": "celsius", "days": 2}

    def text(self, dialect: ModuleType, name: str, arguments: dict[str, object]) -> str:
        return rendered(dialect, self.TOOLS, ToolCall("1", name, arguments))

    @pytest.mark.parametrize(
        ("name", "arguments"),
        [
            ("get_wether", GOOD),
            ("get_weather", {"units": "celsius"}),
            ("get_weather", {**GOOD, "units": "kelvin"}),
            ("get_weather", {**GOOD, "days": "2"}),
            ("get_weather", {**GOOD, "city": 5}),
            ("get_weather", {**GOOD, "extra": 1}),
            ("get_time", {"city": "Oslo", "extra": 1}),
        ],
        ids=["name", "required", "enum", "type", "type-string", "extra", "extra-no-additional"],
    )
    def test_mutated(self, dialect: ModuleType, name: str, arguments: dict[str, object]) -> None:
        """A wrong name, a dropped required key, a wrong enum or type, an extra key. (In xml a
        text value has no quotes: ``<city>5</city>`` is the string "5" and ``<days>2</days>``
        the integer 2, so a wrong type there is written as a valid call.)"""
        if dialect is xml and arguments in ({**self.GOOD, "days": "2"}, {**self.GOOD, "city": 5}):
            (call,) = xml.parse(self.text(dialect, name, arguments), self.TOOLS).calls
            assert call.arguments == {**arguments, "days": 2, "city": str(arguments["city"])}
            return
        text = self.text(dialect, name, arguments)
        assert accepts(dialect.constraint(self.TOOLS).lark(), self.text(dialect, *self.good))
        for choice in ("auto", "required"):
            for form, lark in with_tag(dialect.constraint(self.TOOLS, choice=choice)).items():
                assert not accepts(lark, text), (form, choice)

    good = ("get_weather", GOOD)

    def test_truncated(self, dialect: ModuleType) -> None:
        """A call cut off anywhere is not a whole match."""
        text = self.text(dialect, *self.good)
        lark = dialect.constraint(self.TOOLS, choice="required").lark()
        assert accepts(lark, text)
        for end in range(len(text) - 1):
            assert not accepts(lark, text[:end]), text[:end]

    def test_required_refuses_prose(self, dialect: ModuleType) -> None:
        """ "required" takes no prose alone, and nothing before the first call."""
        call = self.text(dialect, *self.good)
        for form, lark in with_tag(dialect.constraint(self.TOOLS, choice="required")).items():
            assert not accepts(lark, "The weather is nice."), form
            assert not accepts(lark, ""), form
            assert not accepts(lark, "Sure. " + call), form

    def test_named_refuses_other_tools(self, dialect: ModuleType) -> None:
        """A named choice takes one call of that tool and no other tool."""
        constraint = dialect.constraint(self.TOOLS, choice="get_time")
        other = self.text(dialect, *self.good)
        mine = self.text(dialect, "get_time", {"city": "Oslo"})
        for form, lark in with_tag(constraint).items():
            assert accepts(lark, mine), form
            assert not accepts(lark, other), form
            assert not accepts(lark, joined(dialect, [mine, mine])), form

    def test_parallel(self, dialect: ModuleType) -> None:
        """parallel=False takes one call; True takes several, up to MAX_PARALLEL_CALLS, in
        every backend's form (the structural tag took any number)."""
        one = self.text(dialect, *self.good)

        def calls(count: int) -> str:
            return joined(dialect, [one] * count)

        for choice in ("auto", "required"):
            single = with_tag(dialect.constraint(self.TOOLS, choice=choice, parallel=False))
            several = with_tag(dialect.constraint(self.TOOLS, choice=choice))
            for form in single:
                assert accepts(single[form], one), form
                assert not accepts(single[form], calls(2)), form
                for count in range(1, MAX_PARALLEL_CALLS + 1):
                    assert accepts(several[form], calls(count)), (form, count)
                assert not accepts(several[form], calls(MAX_PARALLEL_CALLS + 1)), form

    def test_reasoning(self, dialect: ModuleType) -> None:
        """reasoning=True allows a <think>…</think> first; without it, it is refused."""
        call = self.text(dialect, *self.good)
        thought = "<think>\nThe user wants <b>weather</b>.\n</think>\n\n"
        for choice in ("auto", "required", "get_weather"):
            with_ = dialect.constraint(self.TOOLS, choice=choice, reasoning=True)
            without = dialect.constraint(self.TOOLS, choice=choice)
            pairs = {"lark": (with_.lark(), without.lark())}
            tags = [xgrammar_form(c.structural_tag()) for c in (with_, without)]
            if all(tags):
                pairs["xgrammar"] = (tags[0]["xgrammar"], tags[1]["xgrammar"])
            for form, (grammar, plain) in pairs.items():
                assert accepts(grammar, thought + call), (form, choice)
                assert accepts(grammar, call), (form, choice)
                assert not accepts(plain, thought + call), (form, choice)

    @SETTINGS
    @given(pieces=st.lists(st.sampled_from(["x", " ", "\n", "<think>", "</think>", "<", "{",
                                            "[TOOL_CALLS]", "<tool_call>", "</tool_call>",
                                            '{"name": "get_time"', "<|python_tag|>", "CALL",
                                            "OTHER", "BARE", "INNER", deepseek.CALLS_BEGIN,
                                            deepseek.CALL_BEGIN, deepseek.SEP, "get_time",
                                            "(", "<function=x>", "<get_time>"]),
                           max_size=8),
           choice=st.sampled_from(["auto", "required", "get_time"]),
           parallel=st.booleans())  # fmt: skip
    def test_accepted_text_parses_to_tools_calls(
        self, dialect: ModuleType, pieces: list[str], choice: str, parallel: bool
    ) -> None:
        """Whatever a grammar accepts parses into calls of the given tools, nothing broken,
        at most as many as it allows. Pieces: a valid call, a call of a tool not offered, a
        call as another dialect writes it (compact JSON), a DeepSeek call outside its block,
        markers and partial openings."""
        calls = {
            "CALL": self.text(dialect, *self.good),
            "OTHER": rendered(dialect, [], ToolCall("1", "other", {"city": "x"})),
            "BARE": '{"name":"get_time","parameters":{"city":1}}',
        }
        calls["INNER"] = calls["CALL"].removeprefix(deepseek.CALLS_BEGIN)  # (no block)
        text = "".join(calls.get(piece, piece) for piece in pieces)
        constraint = dialect.constraint(self.TOOLS, choice=choice, parallel=parallel)
        for form, grammar in {"lark": constraint.lark(),
                              **xgrammar_form(constraint.structural_tag())}.items():  # fmt: skip
            if accepts(grammar, text):
                parsed = dialect.parse(text, self.TOOLS)
                assert not parsed.errors, (form, text)
                assert {c.name for c in parsed.calls} <= {"get_weather", "get_time"}, form
                most = MAX_PARALLEL_CALLS if parallel and choice != "get_time" else 1
                assert len(parsed.calls) <= most, (form, text)
                if choice != "auto":
                    assert parsed.calls, (form, text)


@pytest.mark.parametrize(
    ("dialect", "text"),
    [
        (deepseek, f"See {deepseek.CALL_BEGIN}other{deepseek.SEP}{{}}{deepseek.CALL_END}"),
        (deepseek, "So " + deepseek.CALL_BEGIN),
        (llama_json, 'So {"name":"get_weather","parameters":{"city":1}}'),
        (llama_json, '{"name":"get_weather","parameters":{"city":"x"}}' * 5),
        (xml, "So <function=other>\n<parameter=city>x</parameter>\n</function>"),
    ],
    ids=["deepseek-call-outside-block", "deepseek-open", "llama-compact", "llama-five", "xml"],
)
def test_prose_holds_no_call(dialect: ModuleType, text: str) -> None:
    """Prose holds nothing that reads as a call, in the Lark grammar and in the structural
    tag as xgrammar reads it (its triggers were whole openings, so ``{`` or DeepSeek's
    call markers passed as prose, and with them a call of any tool, any arguments, any number)."""
    assert dialect.parse(text, TestRejected.TOOLS).calls or dialect.parse(text).errors
    for parallel in (True, False):
        constraint = dialect.constraint(TestRejected.TOOLS, parallel=parallel)
        forms = {"lark": constraint.lark(), **xgrammar_form(constraint.structural_tag())}
        for form, grammar in forms.items():
            assert not accepts(grammar, text), (form, parallel)


class TestConstraint:
    """What a constraint says about itself, and its arguments."""

    TOOLS = TestRejected.TOOLS

    def test_gbnf_laziness(self) -> None:
        """ "auto" is lazy, triggered by the opening tag; the others are eager."""
        auto = json_in_tag.constraint(self.TOOLS)
        assert auto.gbnf().lazy
        assert auto.gbnf().triggers == ("<tool_call>",)
        assert auto.gbnf().text.startswith('root ::= calls\ncalls ::= "<tool_call>" calls-rest\n')
        assert not auto.gbnf(lazy=False).lazy
        required = json_in_tag.constraint(self.TOOLS, choice="required").gbnf()
        assert required == Gbnf(required.text, False, ())
        with pytest.raises(ValueError, match='only choice="auto"'):
            json_in_tag.constraint(self.TOOLS, choice="required").gbnf(lazy=True)

    def test_bad_choice(self) -> None:
        """A choice naming no tool offered, or "required" with no tool, is refused."""
        with pytest.raises(ValueError, match=r"get_wether.*offered: 'get_weather', 'get_time'"):
            json_in_tag.constraint(self.TOOLS, choice="get_wether")
        with pytest.raises(ValueError, match="none is offered"):
            json_in_tag.constraint([], choice="required")

    @pytest.mark.parametrize("dialect", DIALECTS, ids=_IDS.get)
    def test_no_tools(self, dialect: ModuleType) -> None:
        """With no tools, "auto" allows prose only, in every form (the structural tag was an
        empty ``or`` or ``triggered_tags``, which xgrammar refuses)."""
        constraint = dialect.constraint([])
        call = rendered(dialect, TestRejected.TOOLS, ToolCall("1", *TestRejected.good))
        assert not constraint.gbnf().lazy
        tag = constraint.structural_tag()
        assert tag["format"] == {"type": "grammar", "grammar": constraint.gbnf().text}
        for form, grammar in with_tag(constraint).items():
            assert accepts(grammar, "hello"), form
            assert not accepts(grammar, call), form

    def test_unenforced(self) -> None:
        """The keywords the grammars leave to validation are listed; enforced ones are not."""
        tool = Tool.from_schema("t", "", {"type": "object", "properties": {
            "a": {"type": "string", "format": "date", "maxLength": 9},
            "b": {"type": "array", "items": {"type": "integer", "minimum": 1}, "uniqueItems": True},
            "c": {"type": "string", "pattern": "^(?=x)"},
            "d": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
        }})  # fmt: skip
        assert json_in_tag.constraint([tool]).unenforced == {
            "format", "maxLength", "minimum", "uniqueItems", "pattern", "oneOf"
        }  # fmt: skip
        assert json_in_tag.constraint(self.TOOLS).unenforced == frozenset()

    @pytest.mark.parametrize(
        ("schema", "unenforced", "value"),
        [
            ({"const": functools.reduce(lambda inner, _: [inner], range(500), 1)}, "const", None),
            ({"enum": [functools.reduce(lambda inner, _: {"k": inner}, range(40), 1), 1]},
             "enum", 1),
            ({"enum": []}, None, None),
            ({"type": "array", "minItems": 10**9}, "minItems", None),
            ({"type": "string", "pattern": "^(a+)+$"}, None, "aaa"),
        ],
        ids=["const-nested-500-deep", "enum-nested-40-deep", "empty-enum", "huge-minItems",
             "nested-quantifier"],
    )  # fmt: skip
    def test_hostile_schemas(self, schema: dict[str, object], unenforced: str | None,
                             value: object) -> None:  # fmt: skip
        """Schemas at the edges build a grammar llguidance compiles, and say what they leave."""
        tool = Tool.from_schema("t", "", {"type": "object", "properties": {"v": schema}})
        constraint = json_in_tag.constraint([tool], choice="required")
        for lark in grammars(constraint).values():
            compiled(lark)
            if value is not None:
                text = rendered(json_in_tag, [tool], ToolCall("1", "t", {"v": value}))
                assert accepts(lark, text)
        assert constraint.unenforced == ({unenforced} if unenforced else set())

    def test_number_digits(self) -> None:
        """Digits a float never has, and integer digits the bounds rule out, are refused (a
        small model wrote zeros until its token limit); an unbounded integer has any."""
        tool = Tool.from_schema("t", "", {"type": "object", "properties": {
            "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 1e9},
            "count": {"type": "integer"},
            "price": {"type": "number", "minimum": 0, "exclusiveMaximum": 1000},
        }})  # fmt: skip
        lark = json_in_tag.constraint([tool], choice="required").lark()

        def call(arguments: str) -> str:
            return f'<tool_call>\n{{"name": "t", "arguments": {arguments}}}\n</tool_call>'

        assert accepts(lark, call('{"amount": 999999999.5, "count": ' + "9" * 400 + "}"))
        assert accepts(lark, call('{"amount": 1.2345678901234567e-300}'))
        assert accepts(lark, call(f'{{"amount": {0.000123456789012345678!r}}}'))
        assert not accepts(lark, call('{"amount": 10000000000}'))
        assert not accepts(lark, call('{"amount": 1.' + "0" * 33 + "}"))
        assert not accepts(lark, call('{"amount": 1e1234}'))
        assert accepts(lark, call('{"price": 999.99}'))
        assert not accepts(lark, call('{"price": 1000}'))  # (below 1,000: three digits)

    @pytest.mark.parametrize("dialect", DIALECTS, ids=_IDS.get)
    def test_string_lengths(self, dialect: ModuleType) -> None:
        """A string's maxLength bounds it (a small model repeated a phrase inside an unbounded
        one until its token limit): exactly where the dialect escapes every lead character, as
        pieces where it writes one raw, and then listed as left to validation."""
        tool = Tool.from_schema("t", "", {"type": "object", "properties": {
            "when": {"type": "string", "minLength": 2, "maxLength": 12},
        }, "required": ["when"], "additionalProperties": False})  # fmt: skip
        constraint = dialect.constraint([tool], choice="required")

        def text(value: str) -> str:
            return rendered(dialect, [tool], ToolCall("1", "t", {"when": value}))

        exact = dialect in (llama_json, deepseek)  # (json_in_tag, mistral write "<", "[" raw)
        assert constraint.unenforced == (set() if exact else {"minLength", "maxLength"})
        for lark in grammars(constraint).values():
            for value in ["at 9", "x" * 12, "<think", 'é\n"<' * 3, "ab"]:
                assert accepts(lark, text(value)), value
            assert not accepts(lark, text("tomorrow at 9 " * 40))
            assert accepts(lark, text("x")) is not exact
            assert accepts(lark, text("x" * 13)) is False

    @SETTINGS
    @given(names=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=6))
    def test_rule_names(self, names: list[str]) -> None:
        """Rule names are [a-z0-9-], distinct, whatever the tool and parameter names."""
        tools = [
            Tool.from_schema(
                f"t{i}_{re.sub(r'[^A-Za-z0-9_]', '_', name)[:20]}",
                "",
                {"type": "object", "properties": {name: {"enum": [name]}}},
            )
            for i, name in enumerate(names)
        ]
        text = json_in_tag.constraint(tools).gbnf().text
        heads = [line.split(" ::= ")[0] for line in text.splitlines()]
        assert all(re.fullmatch(r"[a-z][a-z0-9-]*", head) for head in heads), heads
        assert len(heads) == len(set(heads))
        compiled(lark_of_gbnf(text))


class TestGolden:
    """The exact text of each backend for a small tool."""

    TOOL = Tool.from_schema(
        "get_weather",
        "",
        {
            "type": "object",
            "properties": {"city": {"type": "string"}, "units": {"enum": ["c", "f"]}},
            "required": ["city"],
            "additionalProperties": False,
        },
    )

    def test_gbnf(self) -> None:
        """The lazy GBNF: the calls from the trigger on, each rule on one line."""
        text = json_in_tag.constraint([self.TOOL], parallel=False).gbnf().text
        lines = text.splitlines()
        assert lines[:5] == [
            "root ::= calls",
            'calls ::= "<tool_call>" calls-rest',
            "calls-rest ::= call",
            'call ::= "\\n{\\"name\\": \\"get_weather\\", \\"arguments\\": " get-weather '
            '"}\\n</tool_call>"',
            'get-weather ::= "{" "\\"city\\"" ": " string (", " "\\"units\\"" ": " '
            'get-weather-units)? "}"',
        ]
        assert lines[5] == 'get-weather-units ::= "\\"c\\"" | "\\"f\\""'
        assert lines[6].startswith('string ::= "\\"" (char | ("<" | "<t" | "<th" | "<thi" |')
        assert '"<" ([^\\u0000-\\u001f\\"/<\\\\t] | escape) | "<t" ' in lines[6]
        assert lines[8] == 'char ::= [^\\u0000-\\u001f\\"<\\\\] | escape'
        assert lines[7].startswith('escape ::= "\\\\" [\\"/\\\\bfnrt] | "\\\\u" (')

    def test_lark(self) -> None:
        """The Lark grammar: prose, or prose lazily up to the trigger and then the calls."""
        text = json_in_tag.constraint([self.TOOL], parallel=False).lark()
        lines = text.splitlines()
        assert lines[:3] == ["%llguidance {}", "", "start: PROSE | prose_head calls_rest"]
        assert "calls_rest: call" in lines
        assert 'prose_head[lazy]: PROSE_HEAD__TEXT "<tool_call>"' in lines

    def test_structural_tag(self) -> None:
        """The structural tag: the envelope xgrammar's built-in qwen_3 tag writes, byte for
        byte (begin '<tool_call>\\n{"name": "…", "arguments": ', end '}\\n</tool_call>')."""
        tag = json_in_tag.constraint([self.TOOL]).structural_tag()
        assert tag["type"] == "structural_tag"
        found = tag["format"]
        assert isinstance(found, dict)
        (block,) = found.pop("tags")
        assert (block["type"], block["begin"], block["end"]) == ("tag", "<tool_call>", "")
        first, rest = block["content"]["elements"]  # (a sequence)
        content = first["content"]
        assert found == {
            "type": "triggered_tags",
            "triggers": ["<tool_call>"],
            "at_least_one": False,
            "stop_after_first": True,
            "excludes": ["</think>", "<think>", "<|tool_call>"],
        }
        call = json_in_tag.render_call(ToolCall("1", "get_weather", {"city": "Oslo"}))
        begin, end = '\n{"name": "get_weather", "arguments": ', "}\n</tool_call>"
        assert first == {"type": "tag", "begin": begin, "content": content, "end": end}
        # the calls after the first, written once: one grammar, as the GBNF spells them
        assert rest == {"type": "grammar", "grammar": ANY}
        assert rest["grammar"].startswith("root ::= calls-more\ncalls-more ::= (")
        assert rest["grammar"].splitlines()[1].endswith("){0,3}")
        assert accepts(lark_of_gbnf(rest["grammar"]), "")
        assert accepts(lark_of_gbnf(rest["grammar"]), call * 3)
        assert not accepts(lark_of_gbnf(rest["grammar"]), call * 4)
        assert content["type"] == "grammar"
        assert accepts(lark_of_gbnf(content["grammar"]), '{"city": "Oslo", "units": "f"}')
        assert call.startswith("<tool_call>" + begin)
        assert call.endswith(end)
        required = json_in_tag.constraint([self.TOOL], choice="required").structural_tag()
        assert required["format"]["type"] == "sequence"  # type: ignore[index]
        named = json_in_tag.constraint([self.TOOL], choice="get_weather").structural_tag()
        assert named["format"]["type"] == "tag"  # type: ignore[index]
        json.dumps(named)  # plain JSON, as response_format takes it


@pytest.mark.parametrize("dialect", DIALECTS, ids=_IDS.get)
def test_structural_tag_envelope(dialect: ModuleType) -> None:
    """A named choice's tag is render_call's envelope around the arguments, byte for byte."""
    tool = TestGolden.TOOL
    arguments = {"city": "Oslo", "units": "f"}
    tag = dialect.constraint([tool], choice="get_weather").structural_tag()["format"]
    text = dialect.render_call(ToolCall("1", "get_weather", arguments), [tool])
    begin, end = tag["begin"], tag["end"]
    assert text.startswith(begin)
    assert text.endswith(end)
    inside = text[len(begin) : len(text) - len(end)]
    assert accepts(lark_of_gbnf(tag["content"]["grammar"]), inside)
    assert [c.arguments for c in dialect.parse(text, [tool]).calls] == [arguments]


def _many_tools(count: int) -> list[Tool[..., object]]:
    schema = {"type": "object", "properties": {
        "city": {"type": "string"}, "units": {"enum": ["c", "f"]}, "days": {"type": "integer"},
    }, "required": ["city"]}  # fmt: skip
    return [Tool.from_schema(f"tool_{i}", "", schema) for i in range(count)]


@pytest.mark.parametrize("dialect", DIALECTS, ids=_IDS.get)
@pytest.mark.parametrize(
    ("choice", "parallel", "reasoning"),
    [
        ("auto", True, False),
        ("auto", False, False),
        ("required", True, False),
        ("auto", True, True),
    ],
)
def test_sizes_linear_in_the_tools(
    dialect: ModuleType, choice: str, parallel: bool, reasoning: bool
) -> None:
    """Every backend's text grows linearly with the tools: 40 tools' text is at most 4.4
    times 10 tools'. (The structural tag for "auto" with parallel calls repeated every
    tool's call after each tool's trigger in p-type and XML: 16 times, and 45 MB for 50
    tools.)"""

    def sizes(count: int) -> dict[str, int]:
        constraint = dialect.constraint(
            _many_tools(count), choice=choice, parallel=parallel, reasoning=reasoning
        )
        return {
            "gbnf": len(constraint.gbnf(lazy=False).text),
            "lark": len(constraint.lark()),
            "tag": len(json.dumps(constraint.structural_tag())),
        }

    few, many = sizes(10), sizes(40)
    for form, size in few.items():
        assert many[form] <= 4.4 * size, (form, size, many[form])


class TestPtype:
    """What is particular to p-type's calls: no opening tag, positional arguments, prose."""

    TOOLS = TestRejected.TOOLS
    CALL = 'get_weather("Paris", "celsius", 2)'

    def test_text_of_a_call(self) -> None:
        """Leading declared arguments positional, up to the first absent one; then keywords,
        then ``**{...}`` for keys that are no identifiers."""
        tool = Tool.from_schema("t", "", {"type": "object", "properties": {
            "a": {"type": "integer"}, "b": {"type": "string"}, "c d": {"type": "boolean"},
            "e": {"type": "null"},
        }, "required": ["a"]})  # fmt: skip
        lark = ptype.constraint([tool], choice="required").lark()
        for arguments, text in [
            ({"a": 1}, "t(1)"),
            ({"a": 1, "e": None}, "t(1, e=None)"),
            ({"a": 1, "c d": False, "e": None}, 't(1, e=None, **{"c d": False})'),
            ({"a": 1, "b": "x", "c d": True}, 't(1, "x", True)'),
        ]:
            assert rendered(ptype, [tool], ToolCall("1", "t", arguments)) == text
            assert accepts(lark, text), text
        for refused in ["t(a=1)", "t(1, b='x')", 't(1, b="x")', "t(1, None)", "t(1, **{})x"]:
            assert not accepts(lark, refused), refused

    def test_undeclared_keys(self) -> None:
        """Keys the schema does not declare go in ``**{...}`` (as keywords they were
        written ``zz=2``: a grammar taking any identifier there would take ``if=2`` or a
        declared key twice, which parse refuses)."""
        tool = Tool.from_schema("t", "", {"type": "object", "properties": {
            "a": {"type": "integer"}}, "additionalProperties": {"type": "integer"}})  # fmt: skip
        call = ToolCall("1", "t", {"zz": 2, "a": 1, "if": 3})
        text = rendered(ptype, [tool], call)
        assert text == 't(1, **{"zz": 2, "if": 3})'
        assert rendered(ptype, [], call) == 't(zz=2, a=1, **{"if": 3})'
        lark = ptype.constraint([tool], choice="required").lark()
        assert accepts(lark, text)
        assert not accepts(lark, "t(1, zz=2)")
        assert ptype.parse(text, [tool]).calls[0].arguments == {"a": 1, "zz": 2, "if": 3}

    def test_prose(self) -> None:
        """Prose is lines without ``(`` or ``[``; calls start a line, right after one another.
        So nothing in prose reads as a call (a tool's ``name(``, a whole-message call of any
        name, a pythonic list), and no word runs on into the call's name; in every form."""
        forms = with_tag(ptype.constraint(self.TOOLS))
        del forms["gbnf-lazy"]  # (the calls alone, from their trigger on)
        for form, lark in forms.items():
            for text in ["Sure.", "Sure.\n" + self.CALL, "A\nB\n\n" + self.CALL + self.CALL, ""]:
                assert accepts(lark, text), (form, text)
                assert not ptype.parse(text, self.TOOLS).errors
            refused = ["get_time(city='Oslo')", "other(1)", "[other(1)]", "Call get_weather(x)",
                       "Sure. " + self.CALL, "Sure.x" + self.CALL, "my_" + self.CALL,
                       self.CALL + "\nDone."]  # fmt: skip
            for text in refused:
                assert not accepts(lark, text), (form, text)

    def test_triggers(self) -> None:
        """The lazy GBNF grammar starts at any tool's ``name(``. The structural tag for
        ``"auto"`` is the whole eager grammar: xgrammar fires a trigger anywhere, so
        ``my_get_time(`` would start a call that parse reads as another tool's."""
        constraint = ptype.constraint(self.TOOLS)
        assert constraint.gbnf().triggers == ("get_weather(", "get_time(")
        assert constraint.gbnf().lazy
        for parallel in (True, False):
            constraint = ptype.constraint(self.TOOLS, parallel=parallel)
            tag = constraint.structural_tag()["format"]
            assert tag == {"type": "grammar", "grammar": constraint.gbnf(lazy=False).text}
        tags = ptype.constraint(self.TOOLS, choice="required").structural_tag()["format"]
        first = tags["elements"][0]  # type: ignore[index]
        assert [t["begin"] for t in first["elements"]] == ["get_weather(", "get_time("]


class TestXml:
    """What is particular to xml's calls: a tag per argument, text values, two call forms."""

    TOOLS = TestRejected.TOOLS

    def test_text_values(self) -> None:
        """A string is its text; text holding its own closing tag (or the call's) is in CDATA;
        anything else is JSON; every form is accepted and reads back."""
        lark = xml.constraint(self.TOOLS, choice="required").lark()
        for city in ["Oslo", "a</city>b", "</get_weather>", "x]]>y", "\nTwo\nlines\n", '"q"', ""]:
            arguments = {"city": city, "days": -3}
            text = rendered(xml, self.TOOLS, ToolCall("1", "get_weather", arguments))
            assert accepts(lark, text), text
            assert xml.parse(text, self.TOOLS).calls[0].arguments == arguments
        refused = ["<get_weather>\n<city>a</city>b</city>\n</get_weather>",
                   "<get_weather>\n<city>x<think>y</city>\n</get_weather>",
                   "<get_weather>\n<city>Oslo</city>\n<days>2.5</days>\n</get_weather>",
                   "<get_weather>\n<days>2</days>\n<city>Oslo</city>\n</get_weather>"]  # fmt: skip
        for text in refused:
            assert not accepts(lark, text), text

    def test_function_form(self) -> None:
        """A tool with a declared key that cannot be a tag is always called in the
        ``<function=…>`` form (render_call chose by the keys present, so a call leaving that
        key out was written in the native form the grammar does not take for the tool)."""
        tool = Tool.from_schema("f", "", {"type": "object", "properties": {
            "a/": {"type": "string"}, "n": {"type": "integer"}}})  # fmt: skip
        constraint = xml.constraint([tool])
        assert constraint.gbnf().triggers == ("<function=f>",)
        for arguments in [{"n": 2}, {"a/": "x</parameter>y", "n": 2}, {}]:
            text = rendered(xml, [tool], ToolCall("1", "f", arguments))
            assert text.startswith("<function=f>\n"), text
            for form, lark in grammars(constraint).items():
                assert accepts(lark, text), (form, text)
            assert xml.parse(text, [tool]).calls[0].arguments == arguments

    def test_patterns(self) -> None:
        """A text's pattern is held where its strings hold no ``<``, ``&`` or ``"`` (which
        render_call may write otherwise); else it is left to validation."""
        tool = Tool.from_schema("t", "", {"type": "object", "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "note": {"type": "string", "pattern": "^[a-z<]+$"},
        }, "required": ["code"]})  # fmt: skip
        constraint = xml.constraint([tool], choice="required")
        assert constraint.unenforced == {"pattern"}  # (note's)
        for form, lark in grammars(constraint).items():
            for arguments in [{"code": "EUR"}, {"code": "USD", "note": "a<b"}]:
                text = rendered(xml, [tool], ToolCall("1", "t", arguments))
                assert accepts(lark, text), (form, text)
            for code in ["eur", "EURO", ""]:
                text = rendered(xml, [tool], ToolCall("1", "t", {"code": code}))
                assert not accepts(lark, text), (form, text)
        assert xml.constraint([TestGolden.TOOL]).unenforced == frozenset()

    def test_undeclared_keys_refused(self) -> None:
        """Keys the schema does not declare are not taken, even where it allows them (a
        native tag's closing name repeats its opening one, which no grammar holds for names
        not known in advance)."""
        tool = Tool.from_schema("t", "", {"type": "object", "properties": {
            "a": {"type": "integer"}}, "additionalProperties": True})  # fmt: skip
        lark = xml.constraint([tool], choice="required").lark()
        assert accepts(lark, rendered(xml, [tool], ToolCall("1", "t", {"a": 1})))
        assert not accepts(lark, rendered(xml, [tool], ToolCall("1", "t", {"a": 1, "b": 2})))
        assert not accepts(lark, "<t>\n<a>1</a>\n<a>2</a>\n</t>")

    def test_prose(self) -> None:
        """Prose holds no tag: nothing in it reads as a call, and a call of a tool not
        offered is not passed over as prose."""
        lark = xml.constraint(self.TOOLS).lark()
        call = rendered(xml, self.TOOLS, ToolCall("1", "get_time", {"city": "Oslo"}))
        for text in ["1 < 2 and 3 > 2.", "Sure.\n" + call, "A\n\n" + call + call, ""]:
            assert accepts(lark, text), text
            assert not xml.parse(text, self.TOOLS).errors
        for text in ["<b>bold</b>", "<get_time/>", "<function=get_time>", "<tool_call>",
                     "Sure. " + call, call + "\nDone."]:  # fmt: skip
            assert not accepts(lark, text), text

    def test_golden(self) -> None:
        """The lazy GBNF grammar starts at each tool's opening tag; a member is its tag's
        line, optional unless required; the structural tag's tags begin at the triggers."""
        constraint = xml.constraint([TestGolden.TOOL], parallel=False)
        gbnf = constraint.gbnf()
        assert gbnf.triggers == ("<get_weather>",)
        lines = gbnf.text.splitlines()
        assert lines[:4] == [
            "root ::= calls",
            "calls ::= calls-rest",
            "calls-rest ::= call",
            'call ::= "<get_weather>" get-weather-args',
        ]
        assert lines[4] == (
            'get-weather-args ::= "\\n<city>" (get-weather-city | cdata-run "</city>") '
            '("\\n<units>" get-weather-units)? "\\n</get_weather>"'
        )
        assert 'get-weather-units ::= "c</units>" | "f</units>"' in lines
        tag = constraint.structural_tag()["format"]
        assert tag["triggers"] == ["<g"]  # type: ignore[index]
        assert [t["begin"] for t in tag["tags"]] == ["<get_weather>"]  # type: ignore[index]

    def test_structural_tag_prose(self) -> None:
        """The structural tag's prose holds no tag, as the other grammars' (xgrammar fires a
        trigger anywhere, so each call's trigger is ``<`` and its first letter): neither
        another tool's tag nor a ``<function=…>`` call of a tool not offered."""
        schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
        native = Tool.from_schema("find", "", schema)
        function = Tool.from_schema("fetch", "", {**schema, "properties": {"a/": {}},
                                                  "required": ["a/"]})  # fmt: skip
        tools = [native, function]
        one = rendered(xml, tools, ToolCall("1", "find", {"a": "x"}))
        two = rendered(xml, tools, ToolCall("2", "fetch", {"a/": "y"}))
        assert two.startswith("<function=fetch>")
        stray = "<function=go>\n<parameter=a>1</parameter>\n</function>"
        assert [c.name for c in xml.parse("So " + stray, tools).calls] == ["go"]
        for parallel in (True, False):
            tag = xml.constraint(tools, parallel=parallel).structural_tag()
            forms = xgrammar_form(tag)
            if not forms:
                pytest.skip("needs xgrammar to read prose (nox -s xgrammar)")
            (grammar,) = forms.values()
            for text in ["Sure.", "a < b, a<1", "Sure.\n" + one, "So " + two, one + two]:
                assert accepts(grammar, text) is (parallel or text != one + two), text
            for text in ["I <fo>x</fo>", "So " + stray, "Sure <find>", one + " Done."]:
                assert not accepts(grammar, text), text


@pytest.fixture(scope="module")
def bfcl_entries(corpora: Path) -> list[list[Tool[..., object]]]:
    """The function lists of BFCL's entries as tools, each distinct list once."""
    found: dict[str, list[Tool[..., object]]] = {}
    for path in sorted((corpora / "bfcl" / "data").glob("BFCL_v4_*.json")):
        for line in path.read_text().splitlines():
            functions = json.loads(line)["function"] if line.strip() else []
            tools = [tool_from_bfcl(function) for function in functions]
            if tools:
                found.setdefault(json.dumps([t.parameters for t in tools]), tools)
    return list(found.values())


@pytest.fixture(scope="module")
def bfcl_callable(
    bfcl_entries: list[list[Tool[..., object]]],
) -> list[tuple[list[Tool[..., object]], list[Tool[..., object]]]]:
    """Each entry's tools beside those of them a valid call exists for (entries with none
    left out), in the entries' order: ``valid_arguments`` refuses a tool whose required
    parameter asks the impossible, as three BFCL tools do (an ``enum`` of strings on an
    integer or an array), and drawing one failed the test with ``InvalidArgument``."""
    possible: dict[str, bool] = {}

    def drawable(tool: Tool[..., object]) -> bool:
        key = json.dumps(tool.parameters)
        if key not in possible:
            try:
                valid_arguments(tool)
            except InvalidArgument:
                possible[key] = False
            else:
                possible[key] = True
        return possible[key]

    pairs = [(tools, [tool for tool in tools if drawable(tool)]) for tools in bfcl_entries]
    return [(tools, callable_) for tools, callable_ in pairs if callable_]


class TestBfcl:
    """The tools of the Berkeley Function Calling Leaderboard, one request's list at a time."""

    def test_every_grammar_compiles(self, bfcl_entries: list[list[Tool[..., object]]]) -> None:
        """Every entry's constraint compiles in llguidance, as Lark and as GBNF, and in
        xgrammar where it is installed (a sample under the "compat" profile: see
        corpus_sample)."""
        for tools in corpus_sample(bfcl_entries):
            constraint = json_in_tag.constraint(tools)
            compiled(constraint.lark())
        for tools in corpus_sample(bfcl_entries[::20]):
            required = json_in_tag.constraint(tools, choice="required")
            compiled(lark_of_gbnf(required.gbnf().text))
            for grammar in xgrammar_form(required.structural_tag()).values():
                assert accepts(grammar, "") is False  # (compiled by xgrammar, and "required")

    def test_impossible_tools_left_out(
        self,
        bfcl_entries: list[list[Tool[..., object]]],
        bfcl_callable: list[tuple[list[Tool[..., object]], list[Tool[..., object]]]],
    ) -> None:
        """Only the tools no valid call exists for are left out of the draws."""
        drawn = {id(t) for _, callable_ in bfcl_callable for t in callable_}
        left = [t for tools in bfcl_entries for t in tools if id(t) not in drawn]
        assert {t.name for t in left} == {
            "get_response", "Events_3_BuyEventTickets", "extract_parameters_v1",
        }  # fmt: skip
        for tool in left:
            with pytest.raises(InvalidArgument, match="no argument dict satisfies"):
                valid_arguments(tool)

    def test_arguments_drawn_reproducibly(
        self, bfcl_callable: list[tuple[list[Tool[..., object]], list[Tool[..., object]]]]
    ) -> None:
        """The same choices draw the same arguments, for every BFCL schema: hypothesis replays
        a saved or shrunk example by its choices, and a draw that depended on anything else
        (a set's order, a cache, an earlier example) would fail as FlakyStrategyDefinition.
        (Every fourth distinct schema: all of them take half a minute; a sample of those
        under the "compat" profile: see corpus_sample.)"""
        schemas = {json.dumps(t.parameters): t for _, tools in bfcl_callable for t in tools}
        tools = corpus_sample(list(schemas.values())[::4])

        def drawn(chunk: list[Tool[..., object]]) -> list[str]:
            seen: list[str] = []

            @settings(derandomize=True, database=None, max_examples=2, phases=[Phase.generate],
                      suppress_health_check=list(HealthCheck))  # fmt: skip
            @given(data=st.data())
            def record(data: st.DataObject) -> None:
                seen.append(repr([data.draw(valid_arguments(tool)) for tool in chunk]))

            record()
            return seen

        for start in range(0, len(tools), 50):
            chunk = tools[start : start + 50]
            assert drawn(chunk) == drawn(chunk), [t.name for t in chunk]

    @pytest.mark.parametrize("dialect", DIALECTS, ids=_IDS.get)
    @SETTINGS
    @given(data=st.data())
    def test_valid_calls_accepted(
        self,
        dialect: ModuleType,
        bfcl_callable: list[tuple[list[Tool[..., object]], list[Tool[..., object]]]],
        data: st.DataObject,
    ) -> None:
        """Valid arguments of a BFCL tool, rendered, are accepted; a misspelt name is not."""
        tools, callable_ = data.draw(st.sampled_from(bfcl_callable))
        tool = data.draw(st.sampled_from(callable_))
        arguments = data.draw(valid_arguments(tool))
        text = rendered(dialect, tools, ToolCall("1", tool.name, arguments))
        misspelt = tool.name + "x"
        assume(misspelt not in {t.name for t in tools})
        wrong = rendered(dialect, tools, ToolCall("1", misspelt, arguments))
        for form, lark in with_tag(dialect.constraint(tools, choice="required")).items():
            assert accepts(lark, text), (form, text)
            assert not accepts(lark, wrong), (form, wrong)
