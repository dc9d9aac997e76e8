"""Tests for `tinytools.formats.openai_chat`."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable
from typing import Literal

import attrs
import fastjsonschema
import llguidance
import pytest
from hypothesis import given
from hypothesis import strategies as st
from recorded import recorded

from tinytools import Exposure, Registry, Tool, ToolCall, ToolMessage, tool
from tinytools.formats import llama_json, openai_chat, synthetic_id
from tinytools.formats.openai_chat import ToolCallAccumulator
from tinytools.testing import valid_arguments


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


@tool
def plot(points: list[Point], color: Literal["red", "blue"] = "red") -> str:
    """Plot points.

    Args:
        points: The points to plot.
        color: The line colour.
    """
    return color


weather = Tool.from_schema(
    "get_weather",
    "Weather for a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string", "minLength": 1}, "unit": {"enum": ["c", "f"]}},
        "required": ["city"],
    },
)
secret = attrs.evolve(plot, name="secret", exposure=Exposure.Hidden)
REGISTRY = Registry.of(plot, weather, secret)


def chunk(*tool_calls: dict[str, object], choice: int = 0) -> dict[str, object]:
    """A chat.completion.chunk carrying tool-call deltas."""
    delta = {"tool_calls": list(tool_calls)}
    return {"object": "chat.completion.chunk", "choices": [{"index": choice, "delta": delta}]}


class TestDeclarations:
    def test_shape(self) -> None:
        """Each visible tool is a function declaration with its schema as it is."""
        expected = {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": weather.parameters,
            },
        }
        declared = openai_chat.declarations(REGISTRY)
        assert ["plot", "get_weather"] == [d["function"]["name"] for d in declared]  # type: ignore[index]
        assert expected == declared[1]

    def test_strict(self) -> None:
        """In strict mode every property is required, objects closed, refused keywords noted."""
        expected = {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "minLength=1"},
                    "unit": {"enum": ["c", "f"]},
                },
                "required": ["city", "unit"],
                "additionalProperties": False,
            },
            "strict": True,
        }
        assert expected == openai_chat.declarations([weather], strict=True)[0]["function"]

    def test_strict_nested_definitions(self) -> None:
        """Definitions are closed too, and defaults move into the description."""
        function = openai_chat.declarations([plot], strict=True)[0]["function"]
        parameters = function["parameters"]  # type: ignore[index]
        point = {
            "type": "object",
            "properties": {
                "x": {"type": "number"},
                "y": {"type": "number", "description": "default=0.0"},
            },
            "required": ["x", "y"],
            "additionalProperties": False,
        }
        assert point == parameters["$defs"]["Point"]
        assert ["points", "color"] == parameters["required"]
        assert (
            'The line colour. (default="red")' == parameters["properties"]["color"]["description"]
        )

    def test_strict_falls_back_when_inexpressible(self) -> None:
        """A schema strict mode cannot say is declared non-strict and unchanged."""

        @tool
        def tag(labels: dict[str, str]) -> None:
            """Tag things."""

        function = openai_chat.declarations([tag], strict=True)[0]["function"]
        assert (False, tag.parameters) == (function["strict"], function["parameters"])  # type: ignore[index]


class TestParseCalls:
    def test_completion(self) -> None:
        """A completion's tool calls come back in order, arguments verbatim."""
        expected = [
            ToolCall("call_9pw1qnYScqvGrCH58HWCvFH6", "get_weather", '{"city": "Paris"}'),
            ToolCall(
                "call_Jb7wLOrYBeM4wE2dFDdrRGe5",
                "plot",
                '{"points": [{"x": 1, "y": 2}], "color": "red"}',
            ),
        ]
        completion = recorded("openai_chat_completion.json")
        assert expected == openai_chat.parse_calls(completion)
        choice = completion["choices"][0]  # type: ignore[index]
        assert expected == openai_chat.parse_calls(choice)
        assert expected == openai_chat.parse_calls(choice["message"])

    def test_no_calls(self) -> None:
        """A plain answer, or a completion with no choices, has no calls."""
        assert [] == openai_chat.parse_calls({"role": "assistant", "content": "Hi"})
        assert [] == openai_chat.parse_calls({"choices": []})

    def test_malformed_arguments_kept(self) -> None:
        """Truncated JSON text is kept exactly; admission decides what it means."""
        message = {"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": '{"a": '}}]}
        assert [ToolCall("c1", "f", '{"a": ')] == openai_chat.parse_calls(message)

    def test_object_arguments_accepted(self) -> None:
        """A server that sends the arguments as an object gives that object."""
        message = {"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {"a": 1}}}]}
        assert [ToolCall("c1", "f", {"a": 1})] == openai_chat.parse_calls(message)

    def test_null_type_is_a_function(self) -> None:
        """A call whose type is null (some local servers) is read as a function call."""
        item = {"id": "c1", "type": None, "function": {"name": "f", "arguments": "{}"}}
        assert [ToolCall("c1", "f", "{}")] == openai_chat.parse_calls({"tool_calls": [item]})

    def test_missing_id(self) -> None:
        """A call without an id gets a synthetic id derived from the whole response."""
        message = {
            "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]
        }
        (call,) = openai_chat.parse_calls(message)
        assert synthetic_id(json.dumps(message, separators=(",", ":")), 0) == call.id
        assert [call] == openai_chat.parse_calls(message)

    @pytest.mark.parametrize(
        ("item", "expected"),
        [
            (
                {"id": "c1", "function": {"arguments": "{}"}},
                ToolCall("c1", "", "{}", "the call has no tool name (found null)"),
            ),
            (
                {"id": "c1", "function": {"name": "f", "arguments": [1]}},
                ToolCall(
                    "c1", "f", "[1]", "the arguments must be JSON text or an object, not an array"
                ),
            ),
            (
                {"id": "c1", "type": "custom", "custom": {"name": "grep", "input": "-r x"}},
                ToolCall(
                    "c1",
                    "grep",
                    "-r x",
                    "a 'custom' tool call is not a function call; declare it as a function",
                ),
            ),
        ],
    )
    def test_fails_closed(self, item: dict[str, object], expected: ToolCall) -> None:
        """A call that cannot be read is kept as an invalid call, never dropped."""
        assert [expected] == openai_chat.parse_calls({"tool_calls": [item]})

    @pytest.mark.parametrize("response", [{"choices": "x"}, {"tool_calls": "x"}, {"choices": [7]}])
    def test_not_a_response(self, response: object) -> None:
        """A dict not shaped like a Chat Completions response is a clear ValueError."""
        with pytest.raises(ValueError, match=r"expected|must be"):
            openai_chat.parse_calls(response)

    def test_not_data(self) -> None:
        """An object that is no response at all is a TypeError naming what to pass."""
        with pytest.raises(TypeError, match=r"takes a ChatCompletion.*not int"):
            openai_chat.parse_calls(42)


class TestToolCallAccumulator:
    def test_recorded_stream(self) -> None:
        """Interleaved deltas of two parallel calls merge into two complete calls."""
        accumulator = ToolCallAccumulator()
        for item in recorded("openai_chat_stream.json"):  # type: ignore[attr-defined]
            accumulator.add(item)
        expected = [
            ToolCall("call_DdmO9pD3xa9XTPNJ32zg2hcA", "get_weather", '{"city": "Paris"}'),
            ToolCall("call_m5Yk0KXb8kRJjWpKTxEGyQmN", "get_weather", '{"city": "Oslo"}'),
        ]
        assert expected == accumulator.calls()

    def test_empty(self) -> None:
        """A stream without tool calls gives none."""
        accumulator = ToolCallAccumulator()
        accumulator.add({"choices": [{"index": 0, "delta": {"content": "Hi"}}]})
        accumulator.add({"choices": [], "usage": {"total_tokens": 3}})
        assert [] == accumulator.calls()

    def test_other_choice_ignored(self) -> None:
        """Deltas of another choice are not mixed in."""
        accumulator = ToolCallAccumulator()
        opening = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}
        accumulator.add(chunk(opening, choice=1))
        assert [] == accumulator.calls()
        accumulator = ToolCallAccumulator(choice=1)
        accumulator.add(chunk(opening, choice=1))
        assert [ToolCall("c1", "f", "{}")] == accumulator.calls()

    def test_missing_index(self) -> None:
        """Without indexes, a new id opens the next call and other deltas continue the last."""
        accumulator = ToolCallAccumulator()
        items: list[dict[str, object]] = [
            {"id": "a", "function": {"name": "f", "arguments": '{"x"'}},
            {"function": {"arguments": ": 1}"}},
            {"id": "b", "function": {"name": "g", "arguments": "{}"}},
            {"id": "b", "function": {"arguments": ""}},
        ]
        for item in items:
            accumulator.add(chunk(item))
        assert [ToolCall("a", "f", '{"x": 1}'), ToolCall("b", "g", "{}")] == accumulator.calls()

    def test_missing_name_fails_closed(self) -> None:
        """A streamed call that never named its tool is invalid, with its arguments kept."""
        accumulator = ToolCallAccumulator()
        accumulator.add(chunk({"index": 0, "id": "c1", "function": {"arguments": "{}"}}))
        assert [ToolCall("c1", "", "{}", "the call has no tool name")] == (accumulator.calls())

    @given(
        st.lists(st.text(max_size=30), min_size=2, max_size=2),
        st.lists(st.integers(0, 30), max_size=6),
        st.lists(st.integers(0, 30), max_size=6),
        st.lists(st.booleans(), max_size=20),
    )
    def test_any_split_and_interleaving(
        self, texts: list[str], cuts_a: list[int], cuts_b: list[int], schedule: list[bool]
    ) -> None:
        """Any split of the argument strings, in any interleaving, accumulates to the same calls."""
        streams = []
        for index, (text, cuts) in enumerate(zip(texts, (cuts_a, cuts_b), strict=True)):
            bounds = [0, *sorted(c for c in cuts if c <= len(text)), len(text)]
            pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
            first = {"index": index, "id": f"c{index}", "type": "function"}
            deltas = [{**first, "function": {"name": f"tool_{index}", "arguments": ""}}]
            deltas += [{"index": index, "function": {"arguments": p}} for p in pieces]
            streams.append(deltas)
        accumulator = ToolCallAccumulator()
        for pick in schedule:
            if streams[int(pick)]:
                accumulator.add(chunk(streams[int(pick)].pop(0)))
        for rest in streams:
            for delta in rest:
                accumulator.add(chunk(delta))
        accumulator.add({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        expected = [ToolCall(f"c{i}", f"tool_{i}", texts[i]) for i in range(2)]
        assert expected == accumulator.calls()

    def test_cut_short(self) -> None:
        """Before the finish chunk, a call whose text is not JSON is invalid, text kept."""
        accumulator = ToolCallAccumulator()
        accumulator.add(
            chunk({"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}})
        )
        accumulator.add(
            chunk({"index": 1, "id": "c2", "function": {"name": "f", "arguments": '{"a'}})
        )
        whole, cut = accumulator.calls()
        assert (ToolCall("c1", "f", "{}"), '{"a') == (whole, cut.arguments)
        assert "stream ended" in str(cut.invalid)

    def test_length(self) -> None:
        """After finish_reason length, the last call is marked as cut off."""
        accumulator = ToolCallAccumulator()
        accumulator.add(
            chunk({"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}})
        )
        accumulator.add({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
        [call] = accumulator.calls()
        assert "token limit" in str(call.invalid)


class TestToolResults:
    def test_shape(self) -> None:
        """Each message becomes a tool-role message; error content goes as it is."""
        messages = [
            ToolMessage(tool_call_id="c1", name="f", content="21°C"),
            ToolMessage(tool_call_id="c2", name="g", content="unknown tool `g`", is_error=True),
        ]
        expected = [
            {"role": "tool", "tool_call_id": "c1", "content": "21°C"},
            {"role": "tool", "tool_call_id": "c2", "content": "unknown tool `g`"},
        ]
        assert expected == openai_chat.tool_results(messages)
        assert [] == openai_chat.tool_results([])


class TestRequiredSchema:
    """`required_schema`: the JSON Schema of a non-empty list of calls."""

    def validator(self, tools: list[Tool[..., object]]) -> Callable[[object], object]:
        return fastjsonschema.compile(openai_chat.required_schema(tools))

    def valid(self, tools: list[Tool[..., object]], reply: object) -> bool:
        try:
            self.validator(tools)(reply)
        except fastjsonschema.JsonSchemaException:
            return False
        return True

    def test_calls_of_the_tools(self) -> None:
        """A list of valid calls passes; a wrong name, wrong arguments or no call fail."""
        tools = [plot, weather]
        good = [
            {"name": "plot", "arguments": {"points": [{"x": 1.0}], "color": "blue"}},
            {"name": "get_weather", "arguments": {"city": "Oslo"}},
        ]
        assert self.valid(tools, good)
        assert not self.valid(tools, [])
        assert not self.valid(tools, [{"name": "plott", "arguments": {"points": []}}])
        assert not self.valid(tools, [{"name": "plot", "arguments": {"color": "green"}}])
        assert not self.valid(tools, [{"name": "plot", "arguments": {"points": [{"y": 1}]}}])
        assert not self.valid(tools, [{"name": "plot"}])

    def test_references_rehomed(self) -> None:
        """Each tool's $defs and local $refs still resolve inside the one document."""
        schema = openai_chat.required_schema([plot])
        assert set(schema["$defs"]) == {"plot", "plot__Point"}  # type: ignore[call-overload]
        assert '"#/$defs/plot__Point"' in json.dumps(schema)

    def test_reply_reads_back(self) -> None:
        """A reply under the schema reads back with llama_json.parse, ready for dispatch."""
        reply = json.dumps([{"name": "get_weather", "arguments": {"city": "Oslo"}}])
        parsed = llama_json.parse(reply, [weather])
        assert [(c.name, c.arguments) for c in parsed.calls] == [("get_weather", {"city": "Oslo"})]

    def test_llguidance_takes_it(self) -> None:
        """A constrained-decoding backend compiles the schema and holds replies to it."""
        grammar = llguidance.LLMatcher.grammar_from_json_schema(
            openai_chat.required_schema([plot, weather])
        )
        tokenizer = llguidance.LLTokenizer("byte")
        assert not llguidance.LLMatcher.validate_grammar(grammar, tokenizer)
        matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=0)
        text = '[{"name": "get_weather", "arguments": {"city": "Oslo"}}]'
        assert matcher.consume_tokens(tokenizer.tokenize_str(text))
        assert matcher.is_accepting()

    def test_no_tools(self) -> None:
        """With no tool there is no call to require."""
        with pytest.raises(ValueError, match="none is offered"):
            openai_chat.required_schema([])

    def test_hidden_tools_left_out(self) -> None:
        """Only Direct tools may be called."""
        hidden = attrs.evolve(weather, exposure=Exposure.Hidden)
        schema = openai_chat.required_schema([plot, hidden])
        assert set(schema["$defs"]) == {"plot", "plot__Point"}  # type: ignore[call-overload]

    @given(st.data())
    def test_valid_arguments_pass(self, data: st.DataObject) -> None:
        """Whatever valid_arguments draws for a tool passes as a one-call list."""
        chosen = data.draw(st.sampled_from([plot, weather]))
        arguments = data.draw(valid_arguments(chosen))
        assert self.valid([plot, weather], [{"name": chosen.name, "arguments": arguments}])
