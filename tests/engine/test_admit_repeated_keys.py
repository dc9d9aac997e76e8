"""Admission of arguments text that repeats a key: refused whatever the order, the nesting,
the repair or the tool's types."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from json_strategies import json_objects

import tinytools
from tests.engine.hostile import _answered
from tinytools import (
    Tool,
    ToolCall,
    tool,
)


class TestItem8DuplicateKeys:
    @pytest.mark.parametrize(
        "raw",
        [
            '{"city": "a", "city": "b"}',
            '{"city": 1, "city": "b"}',
            '{"city": "a", "\\u0063ity": "b"}',
        ],
    )
    def test_refused_whatever_the_order(self, raw: str) -> None:
        [message] = _answered([ToolCall("c", "get_weather", raw)]).messages
        assert message.is_error
        assert "repeats field `city`" in message.content

    def test_schema_tool_and_nested(self) -> None:
        [message] = _answered([ToolCall("c", "measure", '{"x": 1, "x": 2}')]).messages
        assert "repeats field `x`" in message.content

    def test_relaxed_json(self) -> None:
        [message] = _answered([ToolCall("c", "get_weather", "{city: 'a', city: 'b'}")]).messages
        assert message.is_error
        assert "repeats field `city`" in message.content


class TestRepeatedKeysProperty:
    """The counting bound that spares most texts the exact scan never lets a repeat pass."""

    @given(obj=json_objects(), data=st.data())
    @settings(max_examples=200, deadline=None)
    def test_repeats_refused_and_clean_text_accepted(
        self, obj: dict[str, object], data: st.DataObject
    ) -> None:
        schema_tool = Tool.from_schema(
            "open", "Any object.", {"type": "object"}, fn=lambda **kw: kw
        )
        text = msgspec.json.encode(obj).decode()
        assert schema_tool.validate(text) == obj  # nothing repeated: accepted
        if not obj:
            return
        key = data.draw(st.sampled_from(sorted(obj)))
        value = msgspec.json.encode(obj[key]).decode()
        repeated = "{" + msgspec.json.encode(key).decode() + ":" + value + "," + text[1:]
        with pytest.raises(tinytools.ToolArgumentsError, match="repeats field"):
            schema_tool.validate(repeated)


@tool
def finder(query: str, limit: int = 10, exact: bool = False, tags: list[str] | None = None) -> str:
    """Find things."""
    return query


_FINDER_VALUES = {
    "limit": st.sampled_from([10, 0, 5]),
    "exact": st.booleans(),
    "tags": st.lists(st.sampled_from(['"exact":', "a:b", "limit", "exact"]), min_size=1),
}


class TestRepeatedKeysOnTypedTools:
    """A typed tool's cheap bound counts a field sent with its default value by its key in
    the text; a repeated field is still refused whatever the other fields hold."""

    @given(data=st.data())
    @settings(max_examples=600, deadline=None)
    def test_refused_exactly_when_repeated(self, data: st.DataObject) -> None:
        query = data.draw(st.sampled_from(["q", "q", "a:b", '"exact": true']))
        fields: list[tuple[str, object]] = [("query", query)]
        for name in data.draw(st.permutations(sorted(_FINDER_VALUES))):
            if data.draw(st.booleans()):
                fields.append((name, data.draw(_FINDER_VALUES[name])))
        repeat = data.draw(st.booleans())
        if repeat:
            name, _ = data.draw(st.sampled_from(fields[1:] or fields))
            value = "q" if name == "query" else data.draw(_FINDER_VALUES[name])
            fields.insert(data.draw(st.integers(0, len(fields))), (name, value))
        text = (
            "{"
            + ",".join(
                f"{msgspec.json.encode(k).decode()}: {msgspec.json.encode(v).decode()}"
                for k, v in fields
            )
            + "}"
        )
        if repeat:
            with pytest.raises(tinytools.ToolArgumentsError, match="repeats field"):
                finder.validate(text)
        else:
            assert finder.validate(text)["query"] == query
