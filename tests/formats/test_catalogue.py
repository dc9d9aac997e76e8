"""Tests for the text dialects' catalogue (``render``): a schema's names keep to their line."""

from __future__ import annotations

import pytest

from tinytools import Tool
from tinytools.formats import json_in_tag, ptype, xml

#: Every character ``str.splitlines`` starts a line at.
BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def _tool(key: str) -> Tool[..., object]:
    schema = {
        "type": "object",
        "properties": {
            key: {"type": "string"},
            "nested": {"type": "object", "properties": {key: {"type": "integer"}}},
        },
    }
    return Tool.from_schema("lookup", "Look a record up.", schema, fn=lambda **kw: "ok")


@pytest.mark.parametrize("dialect", [xml, ptype, json_in_tag], ids=lambda d: d.__name__)
@pytest.mark.parametrize("brk", list(BREAKS), ids=lambda c: f"U+{ord(c):04X}")
def test_a_line_break_in_a_property_name(dialect: object, brk: str) -> None:
    """Defect: a property name's line break was written raw, so a schema (an MCP server's)
    started a line of its own in the catalogue a model reads and ``tinytools inspect``
    prints. It is written as the JSON escape a call would spell it with."""
    plain = dialect.render([_tool("key_forged")]).splitlines()  # type: ignore[attr-defined]
    text = dialect.render([_tool(f"key{brk}forged")])  # type: ignore[attr-defined]
    escaped = {"\n": "\\n", "\r": "\\r", "\f": "\\f"}.get(brk, f"\\u{ord(brk):04x}")
    assert [line.replace("key_forged", f"key{escaped}forged") for line in plain] == (
        text.splitlines()
    )
