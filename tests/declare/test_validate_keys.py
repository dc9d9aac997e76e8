"""Tests for `tinytools.Tool.validate`: a dict's keys are read as JSON text's keys are."""

from __future__ import annotations

import enum
import json

import pytest

from tinytools import ToolArgumentsError, tool


class Level(enum.IntEnum):
    LOW = 1


@tool
def keyed(by_id: dict[int, str], by_size: dict[float, str], by_level: dict[Level, str]) -> str:
    """Values keyed by numbers."""
    return "ok"


ARGUMENTS = {"by_id": {"1": "a", "-5": "b"}, "by_size": {"1e+16": "c"}, "by_level": {"1": "d"}}
EXPECTED = {"by_id": {1: "a", -5: "b"}, "by_size": {1e16: "c"}, "by_level": {Level.LOW: "d"}}


class TestTextKeys:
    """Defect: decoded arguments (an SDK's parsed dict) with the text keys a model sends
    for a ``dict[int, str]`` were refused ("Expected `integer`, got `string`") while the
    same arguments as JSON text were accepted."""

    def test_a_dict_reads_as_its_json_text(self) -> None:
        """Keys are read into the key type, from a dict as from text."""
        assert EXPECTED == keyed.validate(ARGUMENTS) == keyed.validate(json.dumps(ARGUMENTS))

    @pytest.mark.parametrize(
        "arguments",
        [
            {"by_id": {1: "a"}, "by_size": {}, "by_level": {}},
            {"by_id": {"x": "a"}, "by_size": {}, "by_level": {}},
            {"by_id": {}, "by_size": {"1.5x": "a"}, "by_level": {}},
            {"by_id": {}, "by_size": {}, "by_level": {"2": "a"}},
        ],
    )
    def test_what_json_text_refuses_is_refused(self, arguments: dict[str, object]) -> None:
        """A key JSON cannot carry, or text no key of the type reads as, is refused."""
        with pytest.raises(ToolArgumentsError):
            keyed.validate(arguments)
