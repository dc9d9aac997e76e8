"""Tests for `tinytools.testing.invalid_arguments`: a break is one ``validate`` refuses."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import DataObject, data

from tinytools import Tool, ToolArgumentsError
from tinytools.testing import invalid_arguments


def _tool(schema: dict[str, object]) -> Tool[..., object]:
    return Tool.from_schema("set_labels", "Set labels.", schema, fn=lambda **kw: "ok")


#: Keys that do not start with `_`: a lookahead, which RE2 cannot run.
UNRUNNABLE = _tool(
    {
        "type": "object",
        "patternProperties": {"^(?!_)": {"type": "string"}},
        "additionalProperties": False,
    }
)
BREAKABLE = {
    # `unexpected` matches `^u`: an integer there is valid, not an unknown key.
    "pattern takes the usual extra key": _tool(
        {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "patternProperties": {"^u": {"type": "integer"}},
            "additionalProperties": False,
        }
    ),
    # Every key matches `^`: `additionalProperties` governs none of them.
    "pattern takes every extra key": _tool(
        {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "patternProperties": {"^": {"type": ["integer", "string"]}},
            "additionalProperties": {"type": "string"},
        }
    ),
    # A `oneOf` holding a pattern RE2 cannot run is dropped whole by the validator.
    "oneOf dropped": _tool(
        {
            "type": "object",
            "properties": {
                "v": {
                    "oneOf": [
                        {
                            "type": "object",
                            "properties": {"k": {"type": "string", "pattern": "^(?=x)"}},
                            "required": ["k"],
                        },
                        {"type": "integer"},
                    ]
                }
            },
            "required": ["v"],
        }
    ),
}


class TestWhatValidateEnforces:
    """Defect: with ``patternProperties`` whose pattern RE2 cannot run beside
    ``additionalProperties: false``, invalid_arguments drew ``{"unexpected": 1}``, which
    ``validate`` accepts (the validator drops both). Breaks follow what it enforces."""

    def test_nothing_enforced_is_nothing_to_break(self) -> None:
        """Where validate accepts every object, there is nothing to break: said at once."""
        assert {"unexpected": 1} == UNRUNNABLE.validate({"unexpected": 1})
        with pytest.raises(InvalidArgument, match=r"not enforced by tool\.validate"):
            invalid_arguments(UNRUNNABLE).validate()

    @pytest.mark.parametrize("name", list(BREAKABLE))
    @settings(max_examples=150, database=None, suppress_health_check=[HealthCheck.filter_too_much])
    @given(drawn=data())
    def test_every_break_is_refused(self, name: str, drawn: DataObject) -> None:
        """Each drawn break is one validate refuses."""
        item = BREAKABLE[name]
        arguments = drawn.draw(invalid_arguments(item))
        with pytest.raises(ToolArgumentsError):
            item.validate(arguments)
