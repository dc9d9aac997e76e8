"""Tests for `tinytools.formats._envelope`."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinytools import ToolCall
from tinytools.formats._envelope import (
    ENVELOPE_TAG,
    escape_attr,
    escape_body,
    escape_json,
    json_call_block,
    result_block,
    unescape_attr,
    unescape_body,
)

#: The documented grammar, restated: what any lenient reader could take for a tag.
LENIENT_TAG = re.compile(r"<\s*(?:/\s*)?tool_(?:result|call)(?!\w)", re.IGNORECASE)

#: Pieces that build near-misses of tags and of the escapes themselves.
FRAGMENTS = (
    "<",
    "</",
    "< /",
    "/",
    ">",
    "&",
    "&amp;",
    "&lt;",
    "&LT;",
    "amp;",
    "lt;",
    "tool_result",
    "tool_call",
    "TOOL_CALL",
    "tool_re\u017fult",
    "s",
    "_id",
    " ",
    "\n",
    "\t",
    '"',
    "</tool_result>",
    '<tool_result name="x" status="ok">',
    "&lt;/tool_result>",
    "&amp;lt;tool_call>",
)

#: Text that stresses the escapes: fragments mixed with arbitrary text.
tricky_text = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=4), max_size=30).map("".join)

TAGS = (
    "</tool_result>",
    "<tool_result>",
    '<tool_result id="1" name="x" status="ok">',
    '<tool_result name="x" status="ok">',
    "<TOOL_CALL>",
    "</Tool_Call>",
    "< /tool_call >",
    "<\n/\ttool_result>",
    "<tool_call/>",
    "<tool_call-x>",
    "<tool_re\u017fult>",
    "<tool_call",
)

NOT_TAGS = (
    "<tool_results>",
    "<tool_call_id>",
    "<tool_callé>",
    "<tool-call>",
    "<toolcall>",
    '<div class="x">',
    "a < b && c > d",
    "&lt;div>",
    "&lt;tool_results>",
    "&LT;/tool_result>",
    "&amp;&amp;lt;",
    "x &lt; y",
)


class TestEscapeBody:
    @pytest.mark.parametrize("tag", TAGS)
    def test_neutralises_tags(self, tag: str) -> None:
        """Every envelope-tag variant has its `<` written as `&lt;` and reads as no tag."""
        escaped = escape_body(f"before {tag} after")
        assert f"before &lt;{tag[1:]} after" == escaped
        assert [] == LENIENT_TAG.findall(escaped)

    @pytest.mark.parametrize("text", NOT_TAGS)
    def test_leaves_other_text(self, text: str) -> None:
        """Text without an envelope tag passes byte for byte."""
        assert text == escape_body(text)

    def test_source_code_unchanged(self) -> None:
        """A body of source code with HTML in it is unchanged byte for byte."""
        code = (
            'def page(items):\n    return f\'<div class="x">{"&".join(items)}</div>\'\n'
            "if a<b and b>c: pass  # &lt; &amp;\r\n"
        )
        assert code == escape_body(code)

    def test_escapes_the_escape(self) -> None:
        """Text that already reads as an escaped tag gains one `amp;`, so it stays distinct."""
        assert "&amp;lt;/tool_result>" == escape_body("&lt;/tool_result>")
        assert "&amp;amp;lt;TOOL_CALL>" == escape_body("&amp;lt;TOOL_CALL>")
        assert "&lt;/tool_result>" == escape_body("</tool_result>")

    @given(tricky_text)
    def test_round_trip(self, text: str) -> None:
        """Unescaping an escaped body gives back the exact original."""
        assert text == unescape_body(escape_body(text))

    @given(tricky_text)
    def test_no_tag_survives(self, text: str) -> None:
        """An escaped body never contains an envelope tag."""
        assert [] == LENIENT_TAG.findall(escape_body(text))

    @pytest.mark.parametrize(
        "text",
        [
            "<" + " " * 200_000,
            "< /" * 100_000,
            "&" + "amp;" * 100_000,
            "&amp;" * 100_000,
            ("&" + "amp;" * 1000 + "lt;" + " " * 1000) * 100,
        ],
    )
    def test_adversarial_runs_round_trip(self, text: str) -> None:
        """Long runs of whitespace and `amp;` (the inputs a backtracking pattern would choke
        on) escape and unescape back to themselves."""
        assert text == unescape_body(escape_body(text))


class TestUnescapeBody:
    def test_only_escaped_tags(self) -> None:
        """Only escaped envelope tags are unescaped; other entities stay as written."""
        assert "</tool_result> &lt;div> &amp; &LT;tool_call>" == unescape_body(
            "&lt;/tool_result> &lt;div> &amp; &LT;tool_call>"
        )


class TestEscapeAttr:
    def test_entities(self) -> None:
        """Quotes, angle brackets and ampersands become entities; the rest is kept."""
        assert "a&quot;b&lt;c&gt;d&amp;e'f" == escape_attr("a\"b<c>d&e'f")

    @given(tricky_text)
    def test_round_trip(self, text: str) -> None:
        """Unescaping gives back the exact value, and the escape has no quote or bracket."""
        escaped = escape_attr(text)
        assert text == unescape_attr(escaped)
        assert not set('"<>') & set(escaped)


class TestEscapeJson:
    def test_arguments_with_closing_tag(self) -> None:
        """A `</tool_call>` inside a JSON string becomes `\\u003c/tool_call>`; `a<b` stays."""
        payload = json.dumps({"code": "</tool_call> if a<b"})
        assert '{"code": "\\u003c/tool_call> if a<b"}' == escape_json(payload)

    @given(st.dictionaries(tricky_text, tricky_text | st.lists(tricky_text), max_size=4))
    def test_same_value_no_tag(self, value: dict[str, object]) -> None:
        """The escaped document decodes to the same value and holds no envelope tag."""
        escaped = escape_json(json.dumps(value, ensure_ascii=False))
        assert value == json.loads(escaped)
        assert [] == LENIENT_TAG.findall(escaped)


class TestBlocks:
    def test_result_block(self) -> None:
        """A result block has escaped attributes and the escaped body on its own lines."""
        expected = (
            '<tool_result id="c&quot;1" name="a&lt;b" status="ok">\n'
            "x &lt;/tool_result> y\n</tool_result>"
        )
        assert expected == result_block('c"1', "a<b", "ok", "x </tool_result> y")

    def test_json_call_block(self) -> None:
        """A call renders as JSON-in-tag on its own line, with envelope tags escaped."""
        expected = (
            '<tool_call>\n{"name": "f", "arguments": {"a": "\\u003ctool_call> é"}}\n</tool_call>'
        )
        assert expected == json_call_block(ToolCall("c", "f", {"a": "<tool_call> é"}))

    def test_json_call_block_raw(self) -> None:
        """Raw (undecodable) arguments render as a JSON string."""
        expected = '<tool_call>\n{"name": "f", "arguments": "{\\"q\\": "}\n</tool_call>'
        assert expected == json_call_block(ToolCall("c", "f", '{"q": '))


class TestEnvelopeTag:
    def test_matches_grammar(self) -> None:
        """The public pattern finds exactly the documented tags."""
        assert all(ENVELOPE_TAG.search(tag) for tag in TAGS)
        assert not any(ENVELOPE_TAG.search(text) for text in NOT_TAGS)
