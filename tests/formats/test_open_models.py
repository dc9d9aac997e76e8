"""Tests for `tinytools.formats.mistral`, `llama_json` and `deepseek` (the open-model families).

The corpus cases (tests/formats/test_text_corpus.py) check the real outputs;
these check each form, the edges the corpus does not hold (cut-off calls,
reasoning, names outside the catalogue), that ``render_call`` reads back, and
that the parsers stay total on any text.
"""

from __future__ import annotations

from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools import Tool, ToolCall
from tinytools.formats import deepseek, llama_json, mistral
from tinytools.formats._parsed import Parsed
from tinytools.formats._writable import REFUSAL_PREFIX

SEARCH = Tool.from_schema(
    "search",
    "Search.",
    {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
)
TOOLS = [SEARCH, Tool.from_schema("add", "", {"type": "object"})]
FAMILIES = pytest.mark.parametrize(
    "family", [mistral, llama_json, deepseek], ids=lambda m: m.__name__
)


def calls(parsed: Parsed) -> list[tuple[str, object]]:
    return [(call.name, call.arguments) for call in parsed.calls]


def errors(parsed: Parsed) -> list[str]:
    return [error.name for error in parsed.errors]


class TestMistral:
    @pytest.mark.parametrize(
        "text",
        [
            '[TOOL_CALLS] [{"name": "search", "arguments": {"query": "x"}}]',
            '[TOOL_CALLS]{"name": "search", "arguments": {"query": "x"}}',
            '[TOOL_CALLS] [{"name": "search", "arguments": {"query": "x"}, "id": "a1b2c3d4e"}]',
            '[TOOL_CALLS] [{"name": "search", "arguments": "{\\"query\\": \\"x\\"}"}]',
            '[TOOL_CALLS]search{"query": "x"}',
            '[TOOL_CALLS]search[ARGS]{"query": "x"}',
            '[TOOL_CALLS]search[CALL_ID]a1b2c3d4e[ARGS]{"query": "x"}',
            "[TOOL_CALLS]search[ARGS]{'query': 'x',}",
            '[TOOL_CALLS] [{"name": "search", "arguments": {"query": "x"}}][/TOOL_CALLS]</s>',
        ],
    )
    def test_forms(self, text: str) -> None:
        """Each Mistral form gives the call, and nothing else remains."""
        parsed = mistral.parse(text, TOOLS)
        assert [("search", {"query": "x"})] == calls(parsed)
        assert ("", ()) == (parsed.text, parsed.errors)

    @pytest.mark.parametrize(
        "arguments",
        ["{'query': 'a {b'}", "{'query': 'a}b', /* ] */}", '{query: <|"|>say "{"<|"|>} // {\n'],
    )
    def test_relaxed_value_ends_where_repair_reads_it(self, arguments: str) -> None:
        """A bracket inside a single-quoted string, a template-quoted one or a comment
        neither ends the arguments nor leaves them open."""
        parsed = mistral.parse(f"[TOOL_CALLS]search[ARGS]{arguments} Done.", TOOLS)
        assert 1 == len(parsed.calls)
        assert ("search", ()) == (parsed.calls[0].name, parsed.errors)
        assert parsed.text.endswith(" Done.")

    def test_several_calls(self) -> None:
        """Several markers, and several name[ARGS] calls after one marker, are calls in order."""
        text = 'a[TOOL_CALLS]search[ARGS]{"query": "x"}add[ARGS]{}[TOOL_CALLS]nope{"b": 1} tail'
        parsed = mistral.parse(text, TOOLS)
        assert [("search", {"query": "x"}), ("add", {}), ("nope", {"b": 1})] == calls(parsed)
        assert "a tail" == parsed.text

    def test_prose_after_a_v11_call_is_not_a_name(self) -> None:
        """Only a name followed by [ARGS] continues a run of calls."""
        parsed = mistral.parse('[TOOL_CALLS]add{"a": 1}\nthanks {"no": 1}', TOOLS)
        assert [("add", {"a": 1})] == calls(parsed)
        assert '\nthanks {"no": 1}' == parsed.text

    @pytest.mark.parametrize(
        ("text", "name", "reason"),
        [
            ('[TOOL_CALLS]search[ARGS]{"query": "x', "search", "cut off"),
            ('[TOOL_CALLS] [{"name": "search", "arguments": {"query": ', "search", "cut off"),
            ('[TOOL_CALLS] [{"name": "search", "arguments": {"query": x}}]', "search", "not valid"),
            ("[TOOL_CALLS] hello there", "", "must be followed by a call"),
            ("[TOOL_CALLS]search[ARGS] oops", "search", "must be followed by a call"),
            ("[TOOL_CALLS]", "", "must be followed by a call"),
            ('[TOOL_CALLS] [{"arguments": {}}]', "", 'no "name"'),
        ],
    )
    def test_broken(self, text: str, name: str, reason: str) -> None:
        """A broken call is an error keeping its text and name, and saying why in
        Mistral's terms; never a call with partial arguments."""
        parsed = mistral.parse(text, TOOLS)
        assert () == parsed.calls
        assert [name] == errors(parsed)
        assert reason in str(parsed.errors[0].invalid)
        assert text == parsed.errors[0].arguments

    def test_reasoning_is_never_a_call(self) -> None:
        """Calls inside [THINK] or <think> are prose."""
        text = "[THINK][TOOL_CALLS]add{}[/THINK]<think>[TOOL_CALLS]add{}</think>[TOOL_CALLS]add{}"
        parsed = mistral.parse(text, TOOLS)
        assert [("add", {})] == calls(parsed)
        assert "[THINK][TOOL_CALLS]add{}[/THINK]<think>[TOOL_CALLS]add{}</think>" == parsed.text

    def test_render_call(self) -> None:
        """The v11 token form, escaped so no envelope tag appears."""
        call = ToolCall("1", "search", {"query": "</tool_call>"})
        text = mistral.render_call(call, TOOLS)
        assert '[TOOL_CALLS]search[ARGS]{"query":"\\u003c/tool_call>"}' == text
        assert [("search", {"query": "</tool_call>"})] == calls(mistral.parse(text, TOOLS))


class TestLlamaJson:
    @pytest.mark.parametrize(
        "text",
        [
            '{"name": "search", "parameters": {"query": "x"}}',
            '{"type": "function", "name": "search", "parameters": {"query": "x"}}',
            '{"name": "search", "arguments": {"query": "x"}}',
            '[{"name": "search", "parameters": {"query": "x"}}]',
            '<|python_tag|>{"name": "search", "parameters": {"query": "x"}}<|eom_id|>',
            '<function=search>{"query": "x"}</function><|eot_id|>',
            "<|python_tag|>{'name': 'search', 'parameters': {'query': 'x',}}",
        ],
    )
    def test_forms(self, text: str) -> None:
        """Each Llama form gives the call, and nothing else remains."""
        parsed = llama_json.parse(text, TOOLS)
        assert [("search", {"query": "x"})] == calls(parsed)
        assert ("", ()) == (parsed.text, parsed.errors)

    @pytest.mark.parametrize(
        "text",
        [
            'Example: {"name": "weather", "parameters": {}}',  # not a tool of the catalogue
            'Data: {"name": "search", "parameters": {}, "extra": 1}',  # not the call shape
            'Data: {"name": "search", "parameters": {}, "arguments": {}}',
            'Data: {"name": "search"}',
            'Data: {"type": "object", "name": "search", "parameters": {}}',
            'Config: {"a": {"name": "search", "parameters": {}}}',  # nested in other JSON
            # a list is a call only when every object in it names a tool of the catalogue
            'Run: [{"name": "search", "parameters": {}}, {"name": "rm", "parameters": {}}]',
            'Run: [{"name": "rm", "parameters": {}}, {"name": "search", "parameters": {}}]',
            'Use {braces} freely, and {"name": 1}.',
            "<|python_tag|>import math\nprint(math.pi)",
            '<|python_tag|>brave_search.call(query="a")\nprint(1)',
        ],
    )
    def test_json_in_prose_is_prose(self, text: str) -> None:
        """Bare JSON is a call only when it names a known tool with exactly the call keys."""
        assert Parsed((), text, ()) == llama_json.parse(text, TOOLS)

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ('<|python_tag|>brave_search.call(query="x y")<|eom_id|>', {"query": "x y"}),
            ("<|python_tag|>wolfram_alpha.call(query='2+2', n=1)", {"query": "2+2", "n": 1}),
        ],
    )
    def test_builtin_tools(self, text: str, expected: dict[str, object]) -> None:
        """Llama 3.1's built-in tool form, name.call(key=value), is that call."""
        parsed = llama_json.parse(text, TOOLS)
        assert [(text.split("|>")[1].split(".")[0], expected)] == calls(parsed)
        assert ("", ()) == (parsed.text, parsed.errors)

    @pytest.mark.parametrize(
        ("text", "reason"),
        [
            ('<|python_tag|>brave_search.call(query="x"', "cut off"),
            ("<|python_tag|>brave_search.call(query=x)", "not a literal value"),
        ],
    )
    def test_builtin_broken(self, text: str, reason: str) -> None:
        parsed = llama_json.parse(text, TOOLS)
        assert ["brave_search"] == errors(parsed)
        assert reason in str(parsed.errors[0].invalid)

    @pytest.mark.parametrize(
        "text",
        [
            "<|python_tag|>{'name': 'search', 'parameters': {'query': 'a}b'}}",
            "<|python_tag|>{'name': 'search', 'parameters': {'query': '{'}}<|eom_id|>",
            "<function=search>{'query': 'x', /* { */}</function>",
            "<function=search>{'query': 'a}b'}",
        ],
    )
    def test_tagged_relaxed_value_ends_where_repair_reads_it(self, text: str) -> None:
        """After <|python_tag|> and in a function tag, a bracket inside a single-quoted
        string or a comment neither ends the value nor leaves it open."""
        parsed = llama_json.parse(text, TOOLS)
        assert ["search"] == [name for name, _ in calls(parsed)]
        assert ("", ()) == (parsed.text, parsed.errors)

    def test_unambiguous_forms_take_any_name(self) -> None:
        """After <|python_tag|> and in a function tag, an unknown name is still a call."""
        text = '<|python_tag|>{"name": "nope", "parameters": {}}\n<function=other>{}</function>'
        assert [("nope", {}), ("other", {})] == calls(llama_json.parse(text, TOOLS))

    def test_several_calls_and_prose(self) -> None:
        """Calls separated by ';' are calls in order; prose around them stays."""
        text = (
            'Sure: {"name": "search", "parameters": {"query": "a"}}; '
            '{"name": "add", "parameters": {}} Done.'
        )
        parsed = llama_json.parse(text, TOOLS)
        assert [("search", {"query": "a"}), ("add", {})] == calls(parsed)
        assert "Sure:  Done." == parsed.text

    @pytest.mark.parametrize(
        ("text", "name"),
        [
            ('{"name": "search", "parameters": {"query": "x', "search"),
            ('<|python_tag|>{"name": "nope", "parameters": {"query": "x', "nope"),
            ('<function=search>{"query": "x', "search"),
        ],
    )
    def test_cut_off(self, text: str, name: str) -> None:
        """A call the text ends inside is a named error, never a partial call."""
        parsed = llama_json.parse(text, TOOLS)
        assert () == parsed.calls
        assert [name] == errors(parsed)
        assert "cut off" in str(parsed.errors[0].invalid)

    def test_cut_off_unknown_bare_json_is_prose(self) -> None:
        """Cut-off bare JSON naming no known tool is prose, as complete JSON would be."""
        text = 'see {"name": "weather", "parameters": {'
        assert Parsed((), text, ()) == llama_json.parse(text, TOOLS)

    def test_reasoning_is_never_a_call(self) -> None:
        text = '<think>{"name": "add", "parameters": {}}</think>'
        assert Parsed((), text, ()) == llama_json.parse(text, TOOLS)

    def test_render_call(self) -> None:
        call = ToolCall("1", "search", {"query": "x"})
        text = llama_json.render_call(call, TOOLS)
        assert '{"name": "search", "parameters": {"query": "x"}}' == text
        assert [("search", {"query": "x"})] == calls(llama_json.parse(text, TOOLS))


class TestDeepseek:
    B = "\uff5c"

    def token(self, name: str, bar: str = B) -> str:
        return f"<{bar}{name.replace('_', chr(0x2581))}{bar}>"

    @pytest.mark.parametrize("bar", [B, "|"], ids=["fullwidth", "ascii"])
    @pytest.mark.parametrize("style", ["v3", "v3.1", "v3.1-fenced", "no-outer"])
    def test_forms(self, bar: str, style: str) -> None:
        """V3/R1 (type, name, fenced JSON) and V3.1 (name, JSON) blocks give the call."""
        t = lambda name: self.token(name, bar)  # noqa: E731
        args = '{"query": "x"}'
        inner = {
            "v3": f"function{t('tool_sep')}search\n```json\n{args}\n```",
            "v3.1": f"search{t('tool_sep')}{args}",
            "v3.1-fenced": f"search{t('tool_sep')}```json\n{args}\n```",
            "no-outer": f"search{t('tool_sep')}{args}",
        }[style]
        call = f"{t('tool_call_begin')}{inner}{t('tool_call_end')}"
        if style != "no-outer":
            call = f"{t('tool_calls_begin')}{call}{t('tool_calls_end')}"
        parsed = deepseek.parse(f"Let me look.{call}{t('end_of_sentence')}", TOOLS)
        assert [("search", {"query": "x"})] == calls(parsed)
        assert ("Let me look.", ()) == (parsed.text, parsed.errors)

    def test_several_calls(self) -> None:
        one = deepseek.render_call(ToolCall("1", "search", {"query": "a"}))
        two = deepseek.render_call(ToolCall("2", "nope", {}), style="v3")
        assert [("search", {"query": "a"}), ("nope", {})] == calls(deepseek.parse(one + two))

    def test_cut_off(self) -> None:
        """A call without its end token is a named error, never a partial call."""
        text = deepseek.render_call(ToolCall("1", "search", {"query": "a"}))
        cut = text[: text.index(deepseek.CALL_END)]
        parsed = deepseek.parse(cut, TOOLS)
        assert () == parsed.calls
        assert ["search"] == errors(parsed)
        assert deepseek.CALL_END in str(parsed.errors[0].invalid)

    def test_broken_json(self) -> None:
        text = f"{deepseek.CALL_BEGIN}search{deepseek.SEP}{{query: }}{deepseek.CALL_END}"
        parsed = deepseek.parse(text, TOOLS)
        assert ["search"] == errors(parsed)
        assert "not valid JSON" in str(parsed.errors[0].invalid)

    def test_reasoning_is_never_a_call(self) -> None:
        call = deepseek.render_call(ToolCall("1", "add", {}))
        parsed = deepseek.parse(f"{call}</think>{call}", TOOLS)
        assert [("add", {})] == calls(parsed)
        assert f"{call}</think>" == parsed.text


# --- all three ---------------------------------------------------------------------


@FAMILIES
@settings(deadline=None, max_examples=50)
@given(
    arguments=st.dictionaries(
        st.text(max_size=8),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner),
            max_leaves=8,
        ),
        max_size=4,
    )
)
def test_render_call_reads_back(family: ModuleType, arguments: dict[str, object]) -> None:
    """What ``render_call`` writes, ``parse`` reads back as the same call."""
    text = family.render_call(ToolCall("1", "search", arguments), TOOLS)
    assert [("search", arguments)] == calls(family.parse(text, TOOLS))


@FAMILIES
@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "<tool_call>"])
def test_render_call_refuses_unwritable_names(family: ModuleType, name: str) -> None:
    text = family.render_call(ToolCall("1", name, {}), TOOLS)
    assert text.startswith(REFUSAL_PREFIX)
    assert () == family.parse(text, TOOLS).calls


@FAMILIES
def test_render_call_raw_arguments(family: ModuleType) -> None:
    """Raw JSON text holding an object is written as that object; other text is kept raw."""
    decoded = family.render_call(ToolCall("1", "search", {"query": "x"}), TOOLS)
    assert decoded == family.render_call(ToolCall("1", "search", '{"query": "x"}'), TOOLS)
    raw = family.render_call(ToolCall("1", "search", "{oops"), TOOLS)
    assert [("search", "{oops")] == calls(family.parse(raw, TOOLS))
