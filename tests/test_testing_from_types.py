"""Tests for `tinytools.testing.valid_arguments` over a ``@tool``'s types (``_from_types``)."""

from __future__ import annotations

import enum
import json
from datetime import date
from typing import Annotated, Literal

import msgspec
from hypothesis import HealthCheck, given, settings

from tinytools import tool
from tinytools.testing import valid_arguments


class Level(enum.IntEnum):
    LOW = 1
    HIGH = -7


@tool
def keyed(
    by_id: dict[int, str],
    by_size: dict[float, int],
    by_level: dict[Level, str],
    by_choice: dict[Literal[1, 2], str],
    by_third: dict[Annotated[int, msgspec.Meta(ge=0, multiple_of=3)], str],
    by_share: dict[Annotated[float, msgspec.Meta(gt=0, lt=1)], int],
    by_day: dict[date, int],
    nested: dict[int, dict[int, str]],
) -> str:
    """Values keyed by what JSON writes as text."""
    return "ok"


class TestKeys:
    """Defect: for ``dict[int, str]`` / ``dict[float, str]`` valid_arguments drew Python int
    and float keys, which ``validate`` refuses (a JSON object's keys are text); it draws
    the keys as the text a model sends, which ``validate`` reads into the key type."""

    @settings(max_examples=200, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(valid_arguments(keyed))
    def test_drawn_as_text_and_accepted(self, arguments: dict[str, object]) -> None:
        """Every key is text, and the dict is accepted as its JSON text is, alike."""
        stack: list[object] = [arguments]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                assert all(isinstance(key, str) for key in item)
                stack.extend(item.values())
        assert keyed.validate(json.dumps(arguments)) == keyed.validate(arguments)


@tool
def anything(value: object, values: list[object]) -> str:
    """Takes whatever JSON the model sends."""
    return "ok"


class TestObject:
    """Defect: a parameter typed ``object`` (schema ``{}``: any JSON value) made
    valid_arguments raise "cannot draw values of type CustomType(cls=object)"; it draws
    any JSON value, as for ``Any``."""

    @settings(max_examples=50, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(valid_arguments(anything))
    def test_any_json_value_accepted(self, arguments: dict[str, object]) -> None:
        assert set(arguments) == {"value", "values"}
        assert anything.validate(json.dumps(arguments)) == anything.validate(arguments)
