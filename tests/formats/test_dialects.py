"""Tests for `tinytools.formats.xml`, `tinytools.formats.ptype`, `tinytools.formats.json_in_tag`.

Unit tests per dialect, then for all three: round trips of random calls to
random tools through ``render_call`` and ``parse``, parsing arbitrary text,
and a megabyte of hostile text.
"""

from __future__ import annotations

import json
import re
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy
from json_strategies import relaxed_pairs

from tinytools import Registry, Tool, ToolCall
from tinytools._declare.spec import Exposure
from tinytools._declare.tool_format import PType
from tinytools.formats import json_in_tag, ptype, xml
from tinytools.formats._dialect import MAX_CALLS
from tinytools.formats._parsed import Parsed, synthetic_id

AnyTool = Tool[..., object]
DIALECTS = [json_in_tag, ptype, xml]
BY_NAME = pytest.mark.parametrize("dialect", DIALECTS, ids=lambda module: module.__name__)

SEARCH = Tool.from_schema(
    "search",
    "Search documents.\n\nReturns the best hits.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "limit": {"type": "integer", "default": 5},
            "exact": {"type": "boolean"},
            "score": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "filters": {"type": "object"},
            "cursor": {"type": "null"},
        },
        "required": ["query"],
    },
)
PTYPE_SEARCH = Tool.from_schema("psearch", "", SEARCH.parameters, format=PType(["limit", "query"]))
HIDDEN = Tool.from_schema("secret", "Host only.", {"type": "object"}, exposure=Exposure.Hidden)
TOOLS = [SEARCH, PTYPE_SEARCH, HIDDEN]


def calls(parsed: Parsed) -> list[tuple[str, object]]:
    return [(call.name, call.arguments) for call in parsed.calls]


def check_errors(parsed: Parsed, text: str) -> None:
    """Errors are invalid calls holding raw text, under distinct deterministic ids."""
    ids = [call.id for call in (*parsed.calls, *parsed.errors)]
    assert len(set(ids)) == len(ids)
    # Ids are numbered in order of appearance (hash a long text a few times only).
    numbers = range(len(ids)) if len(text) < 10_000 or not ids else {0, len(ids) - 1}
    assert {synthetic_id(text, index) for index in numbers} <= set(ids)
    for error in parsed.errors:
        assert isinstance(error.arguments, str)
        assert error.invalid


# --- json_in_tag ----------------------------------------------------------------------


class TestJsonInTagParse:
    def test_calls_and_prose(self) -> None:
        """Calls are read from their tags and the prose around them is kept."""
        text = 'Sure. <tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call> Done.'
        parsed = json_in_tag.parse(text, TOOLS)
        assert [("search", {"query": "x"})] == calls(parsed)
        assert "Sure.  Done." == parsed.text
        assert () == parsed.errors

    def test_unclosed_final_tag(self) -> None:
        """A final block without its closing tag is read to its last brace."""
        text = 'A <tool_call>{"name": "search", "arguments": {"query": "x"}}\nthat is all'
        parsed = json_in_tag.parse(text, TOOLS)
        assert [("search", {"query": "x"})] == calls(parsed)
        assert "A \nthat is all" == parsed.text

    @pytest.mark.parametrize(
        "body",
        [
            '{"name": "search", "arguments": {query: "x"}}',
            "{'name': 'search', 'arguments': {'query': 'x'},}",
            "{'name': 'search', 'arguments': {'query': 'x', 'tags': ['}', '{']}}",
            '{"name": "search", /* } */ "arguments": {"query": "x"} // {\n}',
        ],
    )
    def test_unclosed_relaxed_block(self, body: str) -> None:
        """A block left open whose value is complete as relaxed JSON is the call, read to
        its last brace (a bracket in a string or a comment closes nothing); text after it
        stays prose."""
        parsed = json_in_tag.parse(f"A <tool_call>{body}\nthat is all", TOOLS)
        assert ["search"] == [name for name, _ in calls(parsed)]
        assert "x" == parsed.calls[0].arguments["query"]  # type: ignore[index]
        assert ("A \nthat is all", ()) == (parsed.text, parsed.errors)

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(relaxed_pairs())
    def test_unclosed_block_reads_as_the_closed_one(self, pair: tuple[object, str]) -> None:
        """A block whose closing tag was left out (by a server that stops on it) gives the
        same calls and errors as the closed block, whatever relaxed JSON it holds."""
        body = '{"name": "f", "arguments": ' + pair[1] + "}"
        closed = json_in_tag.parse(f"<tool_call>{body}</tool_call>")
        unclosed = json_in_tag.parse(f"<tool_call>{body}")
        assert calls(closed) == calls(unclosed)
        assert [e.name for e in closed.errors] == [e.name for e in unclosed.errors]

    def test_tag_inside_a_string(self) -> None:
        """A tag inside a JSON string is text, not the start or end of a block."""
        text = '<tool_call>{"name": "a", "arguments": {"q": "<tool_call></tool_call>"}}</tool_call>'
        assert [("a", {"q": "<tool_call></tool_call>"})] == calls(json_in_tag.parse(text))

    def test_block_cut_by_next_block(self) -> None:
        """A block left open ends where the next one starts."""
        text = '<tool_call>{"name": "a"}<tool_call>{"name": "b"}</tool_call>'
        assert [("a", {}), ("b", {})] == calls(json_in_tag.parse(text))

    @pytest.mark.parametrize("key", ["arguments", "parameters", "args", "input"])
    def test_argument_aliases_inside_tag(self, key: str) -> None:
        """Inside a tag the arguments may be under an alias."""
        text = f'<tool_call>{{"name": "search", "{key}": {{"query": "x"}}}}</tool_call>'
        assert [("search", {"query": "x"})] == calls(json_in_tag.parse(text))

    def test_json_outside_tag_is_prose(self) -> None:
        """JSON outside a tag is never a call, aliases or not."""
        text = '{"name": "search", "parameters": {"query": "x"}}'
        assert Parsed((), text, ()) == json_in_tag.parse(text, TOOLS)

    def test_two_aliases_are_an_error(self) -> None:
        """Arguments given twice under different keys make the call an error."""
        text = '<tool_call>{"name": "search", "args": {}, "input": {}}</tool_call>'
        parsed = json_in_tag.parse(text)
        assert [("search", text)] == [(e.name, e.arguments) for e in parsed.errors]
        assert 'both "args" and "input"' in str(parsed.errors[0].invalid)

    def test_arguments_as_json_string(self) -> None:
        """A JSON string holding a strict object is decoded; any other string is passed on
        raw, relaxed JSON included, so that admission repairs it and reports the repair."""
        good = '<tool_call>{"name": "s", "arguments": "{\\"q\\": 1}"}</tool_call>'
        bad = '<tool_call>{"name": "s", "arguments": "{\\"q\\": "}</tool_call>'
        relaxed = '<tool_call>{"name": "s", "arguments": "{q: 1,}"}</tool_call>'
        assert [("s", {"q": 1})] == calls(json_in_tag.parse(good))
        assert [("s", '{"q": ')] == calls(json_in_tag.parse(bad))
        assert [("s", "{q: 1,}")] == calls(json_in_tag.parse(relaxed))

    @pytest.mark.parametrize("value", ["null", "[1, 2]", "3"])
    def test_arguments_not_an_object(self, value: str) -> None:
        """Arguments that are not an object are passed on as JSON text, for admission."""
        text = f'<tool_call>{{"name": "s", "arguments": {value}}}</tool_call>'
        expected = value.replace(" ", "")
        assert [("s", expected)] == calls(json_in_tag.parse(text))

    def test_relaxed_json_is_repaired(self) -> None:
        """A body that is almost JSON is repaired, not guessed at."""
        text = "<tool_call>{'name': 'search', 'arguments': {'exact': True,},}</tool_call>"
        assert [("search", {"exact": True})] == calls(json_in_tag.parse(text))

    def test_broken_block(self) -> None:
        """A block that is not JSON is an error keeping its raw text and the name it
        gives, never a call with {}; its reason is the decoder's, in the dialect's terms."""
        text = 'ok <tool_call>{"name": "search", "arguments": {"query": </tool_call>'
        parsed = json_in_tag.parse(text, TOOLS)
        assert () == parsed.calls
        assert [(synthetic_id(text, 0), "search", text[3:])] == [
            (e.id, e.name, e.arguments) for e in parsed.errors
        ]
        reason = parsed.errors[0].invalid
        assert reason is not None
        assert "Expecting value at line 1, column 42" in reason
        assert '<tool_call>{"name": "tool_name", "arguments": {...}}</tool_call>' in reason
        assert "ok " == parsed.text

    def test_broken_block_without_a_name(self) -> None:
        """A broken block that names no tool is an error with no name (never a guess)."""
        parsed = json_in_tag.parse("<tool_call>{oops</tool_call>", TOOLS)
        assert [""] == [error.name for error in parsed.errors]
        assert "not valid" in str(parsed.errors[0].invalid)

    @pytest.mark.parametrize(
        "body",
        [
            '{"name": "a", "arguments": {}}\n{"name": "b", "arguments": {"x": 1}}',
            '{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 1}}',
            '{\'name\': \'a\', \'arguments\': {}}\n{"name": "b", "arguments": {"x": 1}}',
            '\n{"name": "a", "arguments": {}}; {"name": "b", "arguments": {"x": 1}}\n',
            "{'name': 'a', 'arguments': {}, 'note': '}'}\n{'name': 'b', 'arguments': {'x': 1}}",
        ],
    )
    def test_several_objects_in_one_block_are_several_calls(self, body: str) -> None:
        """Objects one after another in one block are calls in order."""
        parsed = json_in_tag.parse(f"<tool_call>{body}</tool_call>")
        assert [("a", {}), ("b", {"x": 1})] == calls(parsed)
        assert () == parsed.errors

    def test_identical_objects_are_two_calls(self) -> None:
        """Two identical objects in one block are two calls (repair merges repeated
        arguments, never calls)."""
        body = '{"name": "a", "arguments": {}}\n{"name": "a", "arguments": {}}'
        assert [("a", {}), ("a", {})] == calls(json_in_tag.parse(f"<tool_call>{body}</tool_call>"))

    def test_several_objects_one_broken_is_one_error(self) -> None:
        """When one of several objects does not read, the whole block is one error."""
        body = '{"name": "a", "arguments": {}}\n{"name": "b", "arguments": {"x": }'
        parsed = json_in_tag.parse(f"<tool_call>{body}</tool_call>")
        assert () == parsed.calls
        assert ["a"] == [error.name for error in parsed.errors]

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            (
                '<|tool_call>call:f{a:<|"|>x, y<|"|>,n:2}<tool_call|>',
                [("f", {"a": "x, y", "n": 2})],
            ),
            ("<|tool_call>call:f{}<tool_call|>", [("f", {})]),
            ("<|tool_call>call:f{a:1}", [("f", {"a": 1})]),  # complete at the end of the text
        ],
    )
    def test_gemma4_blocks(self, text: str, expected: list[tuple[str, object]]) -> None:
        """Gemma 4's own call notation is read (the corpus holds more cases)."""
        parsed = json_in_tag.parse(text)
        assert expected == calls(parsed)
        assert ("", ()) == (parsed.text, parsed.errors)

    def test_gemma4_unclosed_then_prose(self) -> None:
        """A Gemma 4 block missing <tool_call|> whose object is complete ends after it."""
        parsed = json_in_tag.parse('<|tool_call>call:f{a:<|"|>x}<|"|>,n:[2]} Done.')
        assert [("f", {"a": "x}", "n": [2]})] == calls(parsed)
        assert (" Done.", ()) == (parsed.text, parsed.errors)

    def test_gemma4_cut_off_and_mentions(self) -> None:
        """A cut-off Gemma 4 call is a named error; the tag alone is prose."""
        parsed = json_in_tag.parse('say <|tool_call> then <|tool_call>call:f{a:<|"|>unfinished')
        assert () == parsed.calls
        assert ["f"] == [error.name for error in parsed.errors]
        assert "<tool_call|>" in str(parsed.errors[0].invalid)
        assert "say <|tool_call> then " == parsed.text

    @pytest.mark.parametrize(
        ("body", "reason"),
        [
            ('{"arguments": {}}', 'the call has no "name" string'),
            ("[1]", "a call must be a JSON object, not a number"),
            ("", "the <tool_call> block is empty"),
            ('{"name": "s"} and more', "not valid: Extra data at line 1, column 15"),
        ],
    )
    def test_error_reasons(self, body: str, reason: str) -> None:
        """Each broken block says what is wrong with it."""
        parsed = json_in_tag.parse(f"<tool_call>{body}</tool_call>")
        assert reason in str(parsed.errors[0].invalid)

    def test_unknown_name_is_kept(self) -> None:
        """An unknown name is returned as written, for dispatch to answer."""
        text = '<tool_call>{"name": "nope", "arguments": {}}</tool_call>'
        assert [("nope", {})] == calls(json_in_tag.parse(text, TOOLS))

    def test_tag_mentioned_in_prose(self) -> None:
        """An unclosed tag not followed by JSON is prose."""
        text = 'Use <tool_call> tags. <tool_call>{"name": "a"}</tool_call>'
        parsed = json_in_tag.parse(text)
        assert [("a", {})] == calls(parsed)
        assert "Use <tool_call> tags. " == parsed.text

    def test_array_body(self) -> None:
        """A JSON array in one block gives several calls."""
        text = '<tool_call>[{"name": "a"}, {"name": "b", "arguments": {"x": 1}}]</tool_call>'
        assert [("a", {}), ("b", {"x": 1})] == calls(json_in_tag.parse(text))


class TestJsonInTagRender:
    def test_catalogue(self) -> None:
        """The catalogue is the protocol, then each visible tool and its parameters."""
        catalogue = json_in_tag.render([SEARCH, HIDDEN])
        assert catalogue.startswith(json_in_tag.PROTOCOL + "\n\nAvailable tools:\n")
        assert "- search: Search documents. Returns the best hits.\n" in catalogue
        assert "  query (string, required): What to look for.\n" in catalogue
        assert "  limit (integer, optional, default 5)\n" in catalogue
        assert "secret" not in catalogue

    def test_no_tools(self) -> None:
        """With nothing to show the catalogue is empty."""
        assert "" == json_in_tag.render([HIDDEN])

    def test_render_call(self) -> None:
        """A call is written as its tag, and envelope tags inside strings are escaped."""
        call = ToolCall("1", "search", {"query": "</tool_call>"})
        expected = (
            '<tool_call>\n{"name": "search", "arguments": {"query": "\\u003c/tool_call>"}}'
            "\n</tool_call>"
        )
        assert expected == json_in_tag.render_call(call, TOOLS)
        assert [("search", {"query": "</tool_call>"})] == calls(json_in_tag.parse(expected))


# --- xml ------------------------------------------------------------------------------


class TestXmlParse:
    def test_values_typed_by_schema(self) -> None:
        """Values are read by their schema; strings stay verbatim but for one edge newline."""
        text = (
            "<search>\n<query>\n  two  words \n\n</query>\n<limit> 7 </limit><exact>true</exact>"
            '<score>2.5</score><tags>["a", "b"]</tags><filters>{"x": 1}</filters>'
            "<cursor>null</cursor></search>"
        )
        expected = {
            "query": "  two  words \n",
            "limit": 7,
            "exact": True,
            "score": 2.5,
            "tags": ["a", "b"],
            "filters": {"x": 1},
            "cursor": None,
        }
        assert [("search", expected)] == calls(xml.parse(text, TOOLS))

    def test_mismatch_degrades_to_string(self) -> None:
        """A value that does not fit its schema stays a string, for validation to report."""
        text = "<search><query>5</query><limit>five</limit><tags>[1,</tags></search>"
        parsed = xml.parse(text, TOOLS)
        assert [("search", {"query": "5", "limit": "five", "tags": "[1,"})] == calls(parsed)

    def test_unknown_tags_are_prose(self) -> None:
        """Tags that do not name a tool, and a tool tag in a sentence, are prose."""
        text = "<div><b>hi</b></div> <nope><a>1</a></nope> use <search> to look"
        assert Parsed((), text, ()) == xml.parse(text, TOOLS)

    @pytest.mark.parametrize(
        "text",
        [
            "<tool_call><shell/></tool_call>",
            "<tool_call><shell><cmd>rm -rf /</cmd></shell></tool_call>",
            "<tool_call>\n<search><query>x</query></search>\n<rm/>\n</tool_call>",
            "<tool_call><search/><rm></rm></tool_call>",
            "<tool_call><shell/>",
        ],
    )
    def test_unoffered_tag_inside_tool_call_is_no_call(self, text: str) -> None:
        """Inside <tool_call>, a tag naming no tool of ``tools`` is not a call (only the
        function and GLM forms name a tool outright): the block is one error, unnamed."""
        parsed = xml.parse(f"before {text}", TOOLS)
        assert [] == calls(parsed)
        assert [("", text)] == [(e.name, e.arguments) for e in parsed.errors]
        assert "before " == parsed.text

    def test_qwen_forms(self) -> None:
        """The Qwen3-Coder form is read with or without the outer tag, any name."""
        text = (
            "<tool_call>\n<function=search>\n<parameter=limit>\n3\n</parameter>\n</function>\n"
            "</tool_call>\n<function=other name>\n<parameter=a b>\nx\n</function>"
        )
        parsed = xml.parse(text, TOOLS)
        assert [("search", {"limit": 3}), ("other name", {"a b": "x"})] == calls(parsed)

    def test_glm_form(self) -> None:
        """GLM's arg_key/arg_value form is read, values typed by schema."""
        text = "<tool_call>search<arg_key>limit</arg_key><arg_value>2</arg_value></tool_call>"
        assert [("search", {"limit": 2})] == calls(xml.parse(text, TOOLS))

    def test_tag_mentioned_in_prose(self) -> None:
        """A wrapper tag followed by words is prose."""
        text = "I use <tool_call> tags"
        assert Parsed((), text, ()) == xml.parse(text, TOOLS)

    def test_self_closing_and_unclosed(self) -> None:
        """``<tool/>`` has no arguments; a call unclosed at the end of the text is cut off:
        a broken fragment, never a call with the arguments read so far (issue 10)."""
        text = "<search/> then <search><query>x</query>"
        parsed = xml.parse(text, TOOLS)
        assert [("search", {})] == calls(parsed)
        assert [("search", "<search><query>x</query>")] == [
            (error.name, error.arguments) for error in parsed.errors
        ]

    def test_cdata(self) -> None:
        """A CDATA value is taken exactly, even holding its own closing tag."""
        text = "<search><query><![CDATA[a </query> ]]]]><![CDATA[> b]]></query></search>"
        assert [("search", {"query": "a </query> ]]> b"})] == calls(xml.parse(text, TOOLS))

    @pytest.mark.parametrize(
        ("text", "name", "reason"),
        [
            ("<search><query>x</query>junk</search>", "search", "expected <argument>"),
            ("<search><query>a</query><query>b</query></search>", "search", "given twice"),
            ("<search><query>x</search>", "search", "<query> is never closed"),
            ('<tool_call>{"name": "search"}</tool_call>', "", "holds JSON"),
            ("<function=f>oops</function>", "f", "expected <parameter=name>"),
            ("<tool_call>f<arg_key>k</arg_key></tool_call>", "f", "has no <arg_value>"),
        ],
    )
    def test_broken_calls(self, text: str, name: str, reason: str) -> None:
        """A broken call is one error holding its raw text, named when a name was read."""
        parsed = xml.parse(f"before {text} after", TOOLS)
        assert [] == calls(parsed)
        assert [(name, text)] == [(e.name, e.arguments) for e in parsed.errors]
        assert reason in str(parsed.errors[0].invalid)
        check_errors(parsed, f"before {text} after")


class TestXmlRender:
    def test_catalogue(self) -> None:
        """The catalogue is the protocol, then each tool's tag and argument tags."""
        catalogue = xml.render([SEARCH, HIDDEN])
        assert catalogue.startswith(xml.PROTOCOL + "\n\nAvailable tools:\n")
        assert "<search>: Search documents. Returns the best hits.\n" in catalogue
        assert "  <query> (string, required): What to look for.\n" in catalogue
        assert "  <tags> (array of string, optional)\n" in catalogue
        assert "secret" not in catalogue

    def test_render_call(self) -> None:
        """A call is the tool's tag with one argument per line, non-strings as JSON."""
        call = ToolCall("1", "search", {"query": "rust\n", "limit": 5, "tags": ["</a>"]})
        expected = (
            '<search>\n<query>rust\n\n</query>\n<limit>5</limit>\n<tags>["<\\/a>"]</tags>\n'
            "</search>"
        )
        assert expected == xml.render_call(call, TOOLS)

    def test_render_call_escapes(self) -> None:
        """Text holding its closing tag goes in CDATA; envelope tags are escaped."""
        call = ToolCall("1", "search", {"query": "</query> <tool_result>"})
        rendered = xml.render_call(call, TOOLS)
        assert "<query><![CDATA[</query> &lt;tool_result>]]></query>" in rendered
        assert [("search", call.arguments)] == calls(xml.parse(rendered, TOOLS))

    def test_odd_names_use_function_form(self) -> None:
        """A name that cannot be a tag is written in the ``<function=…>`` form."""
        call = ToolCall("1", "get weather", {"city": "Oslo"})
        expected = "<function=get weather>\n<parameter=city>\nOslo\n</parameter>\n</function>"
        assert expected == xml.render_call(call, [])


# --- ptype ----------------------------------------------------------------------------


class TestPtypeParse:
    def test_positional_by_declared_order(self) -> None:
        """Positional values map to PType.parameters, else to the schema's order."""
        text = 'psearch(3, "x") and search("y", 4, exact=True)'
        parsed = ptype.parse(text, TOOLS)
        expected = [
            ("psearch", {"limit": 3, "query": "x"}),
            ("search", {"query": "y", "limit": 4, "exact": True}),
        ]
        assert expected == calls(parsed)
        assert " and " == parsed.text

    def test_python_literals(self) -> None:
        """Python literals become JSON values; tuples become lists."""
        text = "search(query='a' \"b\", score=-2.5e-1, tags=('x',), filters={'k': [None, False]})"
        expected = {"query": "ab", "score": -0.25, "tags": ["x"], "filters": {"k": [None, False]}}
        assert [("search", expected)] == calls(ptype.parse(text, TOOLS))

    @pytest.mark.parametrize(
        "text",
        [
            "[search(query='x'), nope(a=1)]",
            "<|python_start|>search(query='x')\nnope(a=1)<|python_end|>",
            "<|tool_call_start|>[search(query='x'), nope(a=1)]<|tool_call_end|>",
        ],
    )
    def test_lists_and_wrappers(self, text: str) -> None:
        """Pythonic lists and the Llama 4 and LFM2 wrappers hold calls of any name."""
        parsed = ptype.parse(text, TOOLS)
        assert [("search", {"query": "x"}), ("nope", {"a": 1})] == calls(parsed)
        assert "" == parsed.text.strip()

    @pytest.mark.parametrize(
        "text",
        [
            '<|python_start|>search(query="x")\nI may run nope(a=1) later.',
            "```tool_code\nsearch(query='x')\nthen nope(a=1) and search(query='y')",
            "<|tool_call_start|>[search(query='x')]\nAnd [nope(a=1)], search('y')",
        ],
    )
    def test_unclosed_wrapper_ends_at_prose(self, text: str) -> None:
        """A wrapper never closed holds the calls right after it; the prose after them is
        outside it, where only a tool's name makes a call."""
        parsed = ptype.parse(text, TOOLS)
        assert [("search", "x")] == [(c.name, c.arguments["query"]) for c in parsed.calls[:1]]  # type: ignore[index]
        assert ["search"] * len(parsed.calls) == [c.name for c in parsed.calls]
        assert "nope(a=1)" in parsed.text
        assert () == parsed.errors

    def test_unknown_names_in_prose(self) -> None:
        """Outside a list or wrapper an unknown name is prose; a whole-message list is not."""
        assert Parsed((), "see nope(1) and [nope(a=1)]", ()) == ptype.parse(
            "see nope(1) and [nope(a=1)]", TOOLS
        )
        assert [("nope", {"a": 1})] == calls(ptype.parse(" [nope(a=1)]\n", TOOLS))
        for text in ("nope(a=1) and more", "[nope(a=1)] and more", "nope(a=1)\nsearch('x')"):
            assert [] == [call for call in ptype.parse(text, TOOLS).calls if call.name == "nope"]

    def test_not_calls(self) -> None:
        """Method calls, definitions and names inside words are prose."""
        text = "db.search('x'); def search(q): research('x')"
        assert Parsed((), text, ()) == ptype.parse(text, TOOLS)

    @pytest.mark.parametrize(
        ("text", "reason"),
        [
            ("search(__import__('os').system('true'))", "is not allowed here"),
            ("search(1 + 2)", "is not allowed here"),
            ("search(x)", "is not a literal value"),
            ("search(f'{x}')", "is not allowed here"),
            ("search({1: 2})", "dict keys must be strings"),
            ("search({'a'})", "is not a literal value"),
            ("search(b'x')", "is not a JSON value"),
            ("search(1, 2, 3, 4, 5, 6, 7, 8)", "at most 7 positional arguments"),
            ("search('a', query='b')", "given twice"),
            ("search('x'", "never closed"),
            ("search('x)", "a string is never closed"),
            ("search(" + "[" * 40 + "]" * 40 + ")", f"nested deeper than {ptype.MAX_DEPTH}"),
        ],
    )
    def test_broken_calls(self, text: str, reason: str) -> None:
        """A call that is not a literal call is an error; nothing is ever evaluated."""
        parsed = ptype.parse(text, TOOLS)
        assert [] == calls(parsed)
        assert ["search"] == [error.name for error in parsed.errors]
        assert reason in str(parsed.errors[0].invalid)
        check_errors(parsed, text)

    def test_oversize_fragment(self) -> None:
        """A fragment longer than MAX_CHARS is an error, not handed to ast."""
        text = 'search("' + "x" * ptype.MAX_CHARS + '")'
        parsed = ptype.parse(text, TOOLS)
        assert "longer than" in str(parsed.errors[0].invalid)

    def test_names_python_cannot_read(self) -> None:
        """Tool names with ``-`` or that are Python keywords are read as written."""
        tools = [Tool.from_schema(name, "", {"type": "object"}) for name in ("get-time", "if")]
        text = "get-time(zone='UTC') [if(x=1), get-time()]"
        expected = [("get-time", {"zone": "UTC"}), ("if", {"x": 1}), ("get-time", {})]
        assert expected == calls(ptype.parse(text, tools))

    def test_newline_in_string(self) -> None:
        """A raw newline inside a quoted string is read as ``\\n``."""
        assert [("search", {"query": "a\nb"})] == calls(ptype.parse('search("a\nb")', TOOLS))

    def test_list_errors_per_call(self) -> None:
        """In a list each broken call is its own error; the others go through."""
        parsed = ptype.parse("[search(q), search('ok')]", TOOLS)
        assert [("search", {"query": "ok"})] == calls(parsed)
        assert ["search(q)"] == [error.arguments for error in parsed.errors]


class TestPtypeRender:
    def test_past_the_token_limit_is_refused(self) -> None:
        """A call the parser would refuse for its size is refused when written, never
        written as text that reads back as a broken call."""
        from tinytools.formats._writable import REFUSAL_PREFIX

        big = ptype.render_call(
            ToolCall("1", "search", {"query": "x", "limit": 1, "tags": list(range(5000))}), TOOLS
        )
        assert big.startswith(REFUSAL_PREFIX)
        assert "4096 tokens" in big
        assert ((), ()) == (ptype.parse(big, TOOLS).calls, ptype.parse(big, TOOLS).errors)
        small = ptype.render_call(
            ToolCall("1", "search", {"query": "x", "tags": list(range(1000))}), TOOLS
        )
        assert [("search", {"query": "x", "tags": list(range(1000))})] == calls(
            ptype.parse(small, TOOLS)
        )

    def test_catalogue(self) -> None:
        """The catalogue gives each tool's signature, positional order first."""
        catalogue = ptype.render([PTYPE_SEARCH, HIDDEN])
        assert catalogue.startswith(ptype.PROTOCOL + "\n\nAvailable tools:\n")
        assert "psearch(limit, query, *, exact, score, tags, filters, cursor)\n" in catalogue
        assert "  query (string, required): What to look for.\n" in catalogue

    def test_render_call(self) -> None:
        """Leading declared arguments are positional, the rest keywords or ``**{...}``."""
        arguments = {"query": "<tool_call>", "limit": 2, "exact": None, "a b": [True]}
        call = ToolCall("1", "psearch", arguments)
        expected = 'psearch(2, "\\u003ctool_call>", exact=None, **{"a b": [True]})'
        assert expected == ptype.render_call(call, TOOLS)


# --- every dialect --------------------------------------------------------------------

KEYS = st.from_regex(r"[a-z_][a-z0-9_ -]{0,8}", fullmatch=True).filter(
    lambda key: not key.endswith((" ", "-"))
)
TEXTS = st.text(max_size=12) | st.sampled_from(
    ["", "\n", "\n\n", " x ", "</q>", "]]>", "<![CDATA[", "<tool_call>", "&lt;tool_result>", "\\"]
)
LEAVES: SearchStrategy[dict[str, object]] = st.sampled_from(
    ["string", "integer", "number", "boolean", "null"]
).map(lambda kind: {"type": kind})
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


def values(schema: dict[str, object]) -> SearchStrategy[object]:
    """Values valid for one of the generated schemas."""
    kind = schema["type"]
    if kind == "array":
        return st.lists(values(schema["items"]), max_size=3)  # type: ignore[arg-type]
    if kind == "object":
        fields: dict[str, dict[str, object]] = schema["properties"]  # type: ignore[assignment]
        return st.fixed_dictionaries({key: values(sub) for key, sub in fields.items()})
    return {
        "string": TEXTS,
        "integer": st.integers(-(2**53), 2**53),
        "number": st.floats(allow_nan=False, allow_infinity=False) | st.integers(-9, 9),
        "boolean": st.booleans(),
        "null": st.none(),
    }[str(kind)]


@st.composite
def tool_and_call(draw: st.DrawFn) -> tuple[list[AnyTool], ToolCall]:
    """A few tools with random small schemas, and a valid call to one of them."""
    fields = draw(st.dictionaries(KEYS, SCHEMAS, max_size=4))
    names = draw(
        st.lists(
            st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,8}", fullmatch=True),
            min_size=1,
            max_size=3,
            unique=True,
        )
    )
    order = draw(st.permutations(sorted(fields))) if draw(st.booleans()) else None
    tools = [
        Tool.from_schema(
            name,
            "",
            {"type": "object", "properties": fields},
            format=PType(order) if order is not None else None,
        )
        for name in names
    ]
    given = draw(st.lists(st.sampled_from(sorted(fields)), unique=True)) if fields else []
    arguments = draw(st.fixed_dictionaries({key: values(fields[key]) for key in given}))
    return tools, ToolCall("id", draw(st.sampled_from(names)), arguments)


def canonical(value: object) -> str:
    """JSON with sorted keys, so ``1``, ``1.0`` and ``True`` stay apart."""
    return json.dumps(value, sort_keys=True)


FRAGMENTS = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "<search>",
        "</search>",
        "<query>",
        "</query>",
        "<function=search>",
        "<parameter=query>",
        "</parameter>",
        "</function>",
        "<arg_key>",
        "<arg_value>",
        "<![CDATA[",
        "]]>",
        "search(",
        "[search(",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        '"',
        "'",
        "\\",
        "\n",
        " ",
        ",",
        "=",
        ":",
        "-",
        "1",
        "True",
        "<|python_start|>",
        "<|python_end|>",
        '{"name": "search", "arguments": {',
        "/>",
    ]
)


class TestEveryDialect:
    @BY_NAME
    @settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(case=tool_and_call())
    def test_round_trip(self, dialect: ModuleType, case: tuple[list[AnyTool], ToolCall]) -> None:
        """parse(render_call(call)) gives back the call's name and arguments, and no prose."""
        tools, call = case
        parsed = dialect.parse(dialect.render_call(call, tools), tools)
        assert [(call.name, canonical(call.arguments))] == [
            (c.name, canonical(c.arguments)) for c in parsed.calls
        ]
        assert ((), "") == (parsed.errors, parsed.text)

    @BY_NAME
    @settings(deadline=None)
    @given(text=st.text() | st.lists(FRAGMENTS | st.text(max_size=3)).map("".join))
    def test_any_text(self, dialect: ModuleType, text: str) -> None:
        """Any text parses to a value: calls, prose and well-formed errors, never an exception."""
        parsed = dialect.parse(text, TOOLS)
        check_errors(parsed, text)
        # Only json_in_tag passes arguments on raw (a string), for admission to read.
        kinds = (dict, str) if dialect is json_in_tag else (dict,)
        assert all(isinstance(call.arguments, kinds) for call in parsed.calls)
        assert len(parsed.text) <= len(text)

    @BY_NAME
    @pytest.mark.parametrize(
        "text",
        [
            "<tool_call>" * 100_000,
            "<tool_call>{" * 90_000,
            "[" * 1_000_000,
            "search(" + "[" * 1_000_000,
            "search(" * 150_000,
            'search("' + "x" * 1_000_000 + '")',
            "<search><query>" * 70_000,
            "<function=f><parameter=p>" * 40_000,
            "<" * 1_000_000,
            '"\\' * 500_000,
        ],
        ids=lambda text: repr(text[:16]),
    )
    def test_adversarial_megabyte(self, dialect: ModuleType, text: str) -> None:
        """A megabyte of hostile text parses to a value (in well under a second)."""
        parsed = dialect.parse(text, TOOLS)
        check_errors(parsed, text)
        assert len(parsed.calls) + len(parsed.errors) <= MAX_CALLS + 1

    @BY_NAME
    def test_calls_are_capped(self, dialect: ModuleType) -> None:
        """After MAX_CALLS calls the rest of the text is one error."""
        one = {
            json_in_tag: '<tool_call>{"name": "search"}</tool_call>',
            ptype: "search()\n",
            xml: "<search/>",
        }[dialect]
        parsed = dialect.parse(one * (MAX_CALLS + 5), TOOLS)
        assert MAX_CALLS == len(parsed.calls)
        assert [one * 5] == [error.arguments for error in parsed.errors]

    @BY_NAME
    def test_tools_as_registry(self, dialect: ModuleType) -> None:
        """A Registry gives the same catalogue and parse as a list of the same tools."""
        text = dialect.render_call(ToolCall("1", "search", {"query": "x", "limit": 2}), TOOLS)
        assert dialect.render(TOOLS) == dialect.render(Registry(TOOLS))
        assert dialect.parse(text, TOOLS) == dialect.parse(text, Registry(TOOLS))

    @BY_NAME
    def test_render_call_raw_arguments(self, dialect: ModuleType) -> None:
        """Raw JSON arguments are decoded first; undecodable ones are written as they are."""
        decoded = dialect.render_call(ToolCall("1", "search", {"query": "x"}), TOOLS)
        assert decoded == dialect.render_call(ToolCall("1", "search", '{"query": "x"}'), TOOLS)
        assert "{oops" in dialect.render_call(ToolCall("1", "search", "{oops"), TOOLS)

    @BY_NAME
    def test_render_is_deterministic(self, dialect: ModuleType) -> None:
        """The same tools give the same catalogue, and every visible tool is in it."""
        assert dialect.render(TOOLS) == dialect.render(list(TOOLS))
        assert re.search(r"\bpsearch\b", dialect.render(TOOLS))
