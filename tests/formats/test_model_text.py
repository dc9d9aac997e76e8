"""Tests for model-text fidelity in the text dialects (issue 11, item 7).

Several JSON objects in one ``<tool_call>`` block, GLM/XML values written as
JSON string literals, Gemma 3's ``tool_code`` calls, and the answers a model
gets for a fragment that could not be read: the parser's reason, the tool name
the text gives, in the dialect's own syntax.
"""

from __future__ import annotations

import pytest

from tinytools import Tool, ToolCall, dispatch_sync
from tinytools.formats import deepseek, json_in_tag, llama_json, mistral, ptype, xml

WEATHER = Tool.from_schema(
    "get_weather",
    "Weather for a city.",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "note": {},
        },
        "required": ["city"],
    },
    fn=lambda **kw: kw,
)
TOOLS = [WEATHER]


def calls(text: str, dialect: object) -> list[tuple[str, object]]:
    parsed = dialect.parse(text, TOOLS)  # type: ignore[attr-defined]
    assert () == parsed.errors
    return [(call.name, call.arguments) for call in parsed.calls]


class TestJsonStringLiterals:
    @pytest.mark.parametrize(
        "text",
        [
            '<tool_call>get_weather<arg_key>city</arg_key><arg_value>"Paris"</arg_value>'
            "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>",
            '<get_weather><city>"Paris"</city><days>3</days></get_weather>',
            '<function=get_weather><parameter=city>\n"Paris"\n</parameter>'
            "<parameter=days>3</parameter></function>",
        ],
    )
    def test_decoded_when_the_schema_says_string(self, text: str) -> None:
        """A string value written as a JSON literal is the string it stands for."""
        assert [("get_weather", {"city": "Paris", "days": 3})] == calls(text, xml)

    def test_escapes_are_decoded(self) -> None:
        text = '<get_weather><city>"Saint-\\u00c9tienne \\"centre\\""</city></get_weather>'
        assert [("get_weather", {"city": 'Saint-Étienne "centre"'})] == calls(text, xml)

    @pytest.mark.parametrize("value", ['"Paris" and "Rome"', '"unclosed', '"a\\x"', "Paris"])
    def test_other_text_is_verbatim(self, value: str) -> None:
        """Only text that is exactly one valid JSON string literal is decoded."""
        text = f"<get_weather><city>{value}</city></get_weather>"
        assert [("get_weather", {"city": value})] == calls(text, xml)

    def test_untyped_values_stay_verbatim(self) -> None:
        """Where the schema does not say string, quotes are the model's text."""
        text = '<get_weather><city>x</city><note>"quoted"</note></get_weather>'
        assert [("get_weather", {"city": "x", "note": '"quoted"'})] == calls(text, xml)

    @pytest.mark.parametrize("value", ['"Paris"', ' "a" ', '""'])
    def test_render_call_reads_back(self, value: str) -> None:
        """A string that would read as a JSON literal is written as one, so it reads back."""
        call = ToolCall("1", "get_weather", {"city": value, "note": value})
        text = xml.render_call(call, TOOLS)
        assert [("get_weather", {"city": value, "note": value})] == calls(text, xml)


class TestGemmaToolCode:
    @pytest.mark.parametrize(
        "text",
        [
            '```tool_code\nprint(default_api.get_weather(city="Paris", days=3))\n```',
            '```tool_code\ndefault_api.get_weather(city="Paris", days=3)\n```',
            '```tool_code\nget_weather(city="Paris", days=3)\n```',
            'print(default_api.get_weather(city="Paris", days=3))',
            'default_api.get_weather("Paris", 3)',
        ],
    )
    def test_read_as_the_call(self, text: str) -> None:
        """The call inside print(default_api.…) or a tool_code fence is the call; the
        wrapping is not prose."""
        parsed = ptype.parse(f"Let me check.\n{text}\n", TOOLS)
        assert [("get_weather", {"city": "Paris", "days": 3})] == [
            (call.name, call.arguments) for call in parsed.calls
        ]
        assert ("Let me check.", ()) == (parsed.text.strip(), parsed.errors)

    def test_fence_takes_any_name(self) -> None:
        """Inside the fence a name is read as written, for dispatch to answer."""
        text = "```tool_code\nprint(default_api.lookup(q=1))\n```"
        assert [("lookup", {"q": 1})] == calls(text, ptype)

    @pytest.mark.parametrize(
        "text",
        ['x.default_api.get_weather(city="a")', 'my_default_api.get_weather(city="a")'],
    )
    def test_other_attributes_are_prose(self, text: str) -> None:
        assert [] == calls(text, ptype)


class TestFragmentAnswers:
    def answer(self, parsed_errors: tuple[ToolCall, ...]) -> str:
        result = dispatch_sync(list(parsed_errors), TOOLS)
        [message] = result.messages
        assert message.is_error
        return str(message.content)

    def test_xml_fragment_speaks_xml(self) -> None:
        """A broken XML call is answered with the parser's reason and the tool's name."""
        parsed = xml.parse("<function=get_weather><oops>", TOOLS)
        text = self.answer(parsed.errors)
        assert "The call to tool `get_weather` could not be read" in text
        assert "expected <parameter=name>value</parameter> or </function>" in text
        assert "one JSON object" not in text
        assert "not valid JSON" not in text

    def test_unnamed_broken_block_is_not_an_unknown_tool(self) -> None:
        """A block whose JSON did not parse and that names no tool gets the parse error."""
        parsed = json_in_tag.parse("<tool_call>{oops</tool_call>", TOOLS)
        text = self.answer(parsed.errors)
        assert "Unknown tool" not in text
        assert "could not be read" in text
        assert "<tool_call>" in text

    def test_named_broken_block_keeps_name_and_reason(self) -> None:
        parsed = json_in_tag.parse(
            '<tool_call>{"name": "get_weather", "arguments": {"city": }}</tool_call>', TOOLS
        )
        text = self.answer(parsed.errors)
        assert "The call to tool `get_weather` could not be read" in text
        assert "Expecting value at line 1, column 47" in text

    def test_cut_off_ptype_call(self) -> None:
        parsed = ptype.parse('get_weather(city="Par', TOOLS)
        text = self.answer(parsed.errors)
        assert "`get_weather`" in text
        assert "a string is never closed" in text
        assert "JSON" not in text.split("Expected arguments")[0]

    def test_provider_arguments_keep_the_json_advice(self) -> None:
        """Undecodable arguments from a provider (its own id) still get the JSON advice."""
        call = ToolCall("toolu_01", "get_weather", '{"city": ', invalid="truncated JSON")
        text = self.answer((call,))
        assert "not valid JSON" in text
        assert "Send the arguments as one JSON object" in text


LABELLED: dict[str, object] = {
    "type": "object",
    "properties": {
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "when": {"type": ["string", "null"]},
        "pick": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "string"}}]},
        "place": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
            "required": ["city"],
        },
        "mode": {"const": "fast"},
        "free": {},
    },
}


class TestCatalogueLabels:
    @pytest.mark.parametrize("dialect", [json_in_tag, ptype, xml], ids=lambda m: m.__name__)
    def test_labels_cannot_be_mistaken_for_json(self, dialect: object) -> None:
        """Type labels are words: no '|', no braces, no 'key?:' a small model would copy
        into its arguments and so write invalid JSON."""
        tool = Tool.from_schema("t", "", LABELLED)
        lines = dialect.render([tool]).split("Available tools:\n")[1].splitlines()[1:]  # type: ignore[attr-defined]
        labels = [line.split("(", 1)[1] for line in lines]
        for label in labels:
            assert not set("|{}") & set(label), label
            assert "?:" not in label
        catalogue = "\n".join(lines)
        assert 'string, one of "celsius" or "fahrenheit"' in catalogue
        assert "string or null" in catalogue
        assert "integer or array of string" in catalogue
        assert "object with keys city (string), zip (integer, optional)" in catalogue
        assert 'string, exactly "fast"' in catalogue
        assert "any value" in catalogue


class TestReasoningTagsInArguments:
    @pytest.mark.parametrize(
        "dialect",
        [json_in_tag, ptype, xml, mistral, llama_json, deepseek],
        ids=lambda m: m.__name__,
    )
    @pytest.mark.parametrize("value", ["a <think> b", "x </think> y", "<think></think>"])
    def test_round_trip(self, dialect: object, value: str) -> None:
        """An argument holding a reasoning tag is written so that the call reads back:
        the parsers never take it for the start or end of reasoning."""
        call = ToolCall("1", "get_weather", {"city": value})
        text = dialect.render_call(call, TOOLS)  # type: ignore[attr-defined]
        assert [("get_weather", {"city": value})] == calls(text, dialect)

    def test_xml_refuses_where_the_schema_is_not_string(self) -> None:
        from tinytools.formats._writable import REFUSAL_PREFIX

        text = xml.render_call(ToolCall("1", "get_weather", {"note": "<think>"}), TOOLS)
        assert text.startswith(REFUSAL_PREFIX)
        assert "reasoning tag" in text
        assert "<think>" not in text  # the note itself must not open reasoning
