"""Tests for `tinytools.testing.valid_arguments` over a hand-written schema (``_from_schema``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis.errors import InvalidArgument

from tinytools import Tool
from tinytools.testing import valid_arguments


def _tool(schema: dict[str, object]) -> Tool[..., object]:
    return Tool.from_schema(
        "set_labels", "Set labels (name -> value).", schema, fn=lambda **kw: "ok"
    )


#: Only keywords drawn exactly: the required key is no property, so an extra one.
LABELS = _tool({"type": "object", "required": ["env"], "additionalProperties": {"type": "string"}})


class TestRequiredExtraKeys:
    """Defect: a required key that ``properties`` does not list was drawn as any JSON value,
    not under ``additionalProperties``' schema, so most draws were refused and hypothesis
    failed its health check (``FailedHealthCheck``: filtering out a lot of inputs)."""

    @settings(max_examples=100, database=None)
    @given(valid_arguments(LABELS))
    def test_drawn_under_additional_properties(self, arguments: dict[str, object]) -> None:
        """The required key is there, a string, and the whole dict is accepted."""
        assert isinstance(arguments["env"], str)
        assert arguments == LABELS.validate(arguments)

    def test_forbidden_is_impossible(self) -> None:
        """A required key ``additionalProperties: false`` forbids: no dict is valid, and
        the error says so at once."""
        forbidden = _tool({"type": "object", "required": ["env"], "additionalProperties": False})
        with pytest.raises(InvalidArgument, match="`additionalProperties: false` forbids"):
            valid_arguments(forbidden)

    def test_a_pattern_may_take_it(self) -> None:
        """Beside ``patternProperties`` the key may be a pattern's, which
        ``additionalProperties: false`` does not forbid: drawn, and accepted."""
        schema = {
            "type": "object",
            "required": ["env"],
            "patternProperties": {"^e": {}},
            "additionalProperties": False,
        }
        item = _tool(schema)

        @settings(max_examples=50, database=None)
        @given(valid_arguments(item))
        def accepted(arguments: dict[str, object]) -> None:
            assert "env" in arguments
            assert arguments == item.validate(arguments)

        accepted()
