"""Tests for the streaming accumulators of `tinytools.formats` (Anthropic, Responses, Gemini).

Complete streams give the calls ``parse_calls`` gives for the finished
response; interleaved deltas of parallel calls are merged by index; a stream
cut anywhere gives, for each call, either the finished call or an ``invalid``
one that keeps the text received; no event, however malformed, raises.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from streams import anthropic_events, chat_chunks, gemini_chunks, pieces, responses_events

from tinytools import Tool, ToolCall, dispatch_sync
from tinytools.formats import ToolCallsFailed, anthropic, gemini, openai_chat, openai_responses

CALLS = [
    ("toolu_1", "get_weather", '{"city": "Paris", "days": 3}'),
    ("toolu_2", "get_weather", '{"city": "Oslo", "unit": "c"}'),
]
DECODED = [ToolCall(i, n, json.loads(a)) for i, n, a in CALLS]
RAW = [ToolCall(i, n, a) for i, n, a in CALLS]

ACCUMULATORS = {
    "anthropic": (anthropic.ToolCallAccumulator, anthropic_events, DECODED),
    "responses": (openai_responses.ToolCallAccumulator, responses_events, RAW),
    "openai_chat": (openai_chat.ToolCallAccumulator, chat_chunks, RAW),
}
BOTH = pytest.mark.parametrize("kind", sorted(ACCUMULATORS))


def fed(accumulator: Any, events: list[Any]) -> Any:
    for event in events:
        accumulator.add(event)
    return accumulator


class TestComplete:
    @BOTH
    @pytest.mark.parametrize("size", [1, 5, 1000])
    def test_calls(self, kind: str, size: int) -> None:
        """A whole stream gives the calls, whatever the size of the pieces."""
        make, events, expected = ACCUMULATORS[kind]
        accumulator = fed(make(), events(CALLS, "Let me check.", size=size))
        assert expected == accumulator.calls()
        assert "Let me check." == accumulator.text()

    def test_anthropic_message(self) -> None:
        """The streamed message comes back as the assistant turn, thinking signature kept."""
        thinking = [
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Weather tool."},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "EqQB"},
            },
            {"type": "content_block_stop", "index": 0},
        ]
        events = anthropic_events(CALLS[:1])
        for event in events:  # the tool_use block moves after the thinking block
            if "index" in event:
                event["index"] += 1
        accumulator = fed(anthropic.ToolCallAccumulator(), events[:1] + thinking + events[1:])
        expected = {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Weather tool.", "signature": "EqQB"},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Paris", "days": 3},
                },
            ],
        }
        assert expected == accumulator.message()

    def test_anthropic_parse_calls_agrees(self) -> None:
        """The accumulated message parses to the accumulated calls."""
        accumulator = fed(anthropic.ToolCallAccumulator(), anthropic_events(CALLS, "Hi"))
        assert accumulator.calls() == anthropic.parse_calls(accumulator.message())

    def test_responses_items(self) -> None:
        """The finished items come back in order; parse_calls reads the same calls."""
        events = responses_events(CALLS, "Hi")
        accumulator = fed(openai_responses.ToolCallAccumulator(), events)
        assert events[-1]["response"]["output"] == accumulator.items()
        assert RAW == openai_responses.parse_calls(accumulator.items())
        assert RAW == openai_responses.parse_calls(events[-1])

    def test_responses_done_item_wins(self) -> None:
        """When the done item names another call than the added one did, the call is the
        done item's, as `items()` sends it back: the dispatched call and the transcript
        agree (the name and id were the added item's, the arguments the done item's)."""
        added = {"type": "function_call", "call_id": "c1", "name": "get_time", "arguments": ""}
        done = {
            "type": "function_call",
            "call_id": "c2",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
            "status": "completed",
        }
        events = [
            {"type": "response.output_item.added", "output_index": 0, "item": added},
            {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{}"},
            {"type": "response.output_item.done", "output_index": 0, "item": done},
        ]
        accumulator = fed(openai_responses.ToolCallAccumulator(), events)
        [call] = accumulator.calls()
        assert [call] == openai_responses.parse_calls(accumulator.items())
        assert ("c2", "get_weather") == (call.id, call.name)

    def test_gemini(self) -> None:
        """Whole functionCall parts are calls; the turn keeps its thought signature."""
        accumulator = fed(gemini.ToolCallAccumulator(), gemini_chunks(CALLS, "Let me check."))
        assert DECODED == accumulator.calls()
        assert "Let me check." == accumulator.text()
        parts = accumulator.message()["parts"]
        assert {"text": "Let me check."} == parts[0]
        assert "c2lnbmF0dXJl" == parts[1]["thoughtSignature"]
        assert DECODED == gemini.parse_calls(accumulator.message())


class TestGeminiPartialArgs:
    def chunk(self, call: dict[str, Any]) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": call}]}}]}

    def test_assembled(self) -> None:
        """A call streamed as partialArgs (Vertex AI) is assembled from its pieces."""
        chunks = [
            {
                "name": "get_weather",
                "willContinue": True,
                "partialArgs": [{"jsonPath": "$.city", "stringValue": "Pa", "willContinue": True}],
            },
            {"partialArgs": [{"jsonPath": "$.city", "stringValue": "ris"}], "willContinue": True},
            {
                "partialArgs": [
                    {"jsonPath": "$.days", "numberValue": 3},
                    {"jsonPath": "$.tags[0]", "stringValue": "x"},
                    {"jsonPath": "$['opts'].metric", "boolValue": True},
                ]
            },
        ]
        accumulator = fed(gemini.ToolCallAccumulator(), [self.chunk(c) for c in chunks])
        [call] = accumulator.calls()
        expected = {"city": "Paris", "days": 3, "tags": ["x"], "opts": {"metric": True}}
        assert ("get_weather", expected, None) == (call.name, call.arguments, call.invalid)

    def test_unfinished(self) -> None:
        """A streamed call the stream never ended is invalid."""
        chunk = {
            "name": "get_weather",
            "willContinue": True,
            "partialArgs": [{"jsonPath": "$.city", "stringValue": "Pa", "willContinue": True}],
        }
        [call] = fed(gemini.ToolCallAccumulator(), [self.chunk(chunk)]).calls()
        assert "stream ended" in str(call.invalid)

    def test_quoted_steps_unescape_one_character(self) -> None:
        """A backslash in a quoted step escapes the next character only: an escaped
        backslash stays a backslash (it was dropped, so the key changed)."""
        chunk = {
            "name": "f",
            "partialArgs": [
                {"jsonPath": "$['C:\\\\dir']", "stringValue": "x"},
                {"jsonPath": "$['it\\'s']", "stringValue": "y"},
                {"jsonPath": '$["say \\"hi\\""]', "stringValue": "z"},
            ],
        }
        [call] = fed(gemini.ToolCallAccumulator(), [self.chunk(chunk)]).calls()
        assert {"C:\\dir": "x", "it's": "y", 'say "hi"': "z"} == call.arguments
        assert call.invalid is None

    def test_bad_path(self) -> None:
        """A path that cannot be followed makes the call invalid, not an exception."""
        chunk = {"name": "f", "partialArgs": [{"jsonPath": "$..x", "stringValue": "a"}]}
        [call] = fed(gemini.ToolCallAccumulator(), [self.chunk(chunk)]).calls()
        assert "cannot follow" in str(call.invalid)

    def test_failed_call(self) -> None:
        """A stream that finished with MALFORMED_FUNCTION_CALL says so."""
        chunk = {
            "candidates": [
                {"content": {"role": "model"}, "finishReason": "MALFORMED_FUNCTION_CALL"}
            ]
        }
        with pytest.raises(ToolCallsFailed, match="MALFORMED_FUNCTION_CALL"):
            fed(gemini.ToolCallAccumulator(), [chunk]).calls()


OPENING = ("message_start", "content_block_start", "response.created", "response.output_item.added")
DELTAS = ("content_block_delta", "response.function_call_arguments.delta")


def kind_of(event: dict[str, Any]) -> str:
    """An event's type; for a Chat chunk, whether it opens a call, continues one or ends."""
    if "type" in event:
        return str(event["type"])
    [choice] = event["choices"]
    items = choice["delta"].get("tool_calls")
    if not items:
        return "content_block_start" if choice["finish_reason"] is None else "end"
    return "content_block_start" if "id" in items[0] else "content_block_delta"


def call_index(event: dict[str, Any]) -> int:
    if "choices" in event:
        return int(event["choices"][0]["delta"]["tool_calls"][0]["index"])
    return int(event.get("output_index", event.get("index")))


def interleavings(kind: str) -> st.SearchStrategy[list[dict[str, Any]]]:
    """The stream of :data:`CALLS`, every call opened first, their deltas interleaved."""
    _, make, _ = ACCUMULATORS[kind]
    events = make(CALLS, size=3)
    opening = [e for e in events if kind_of(e) in OPENING]
    closing = [e for e in events if kind_of(e) not in OPENING + DELTAS]
    streams = [[e for e in events if kind_of(e) in DELTAS and call_index(e) == n] for n in (0, 1)]
    order = [0] * len(streams[0]) + [1] * len(streams[1])
    return st.permutations(order).map(lambda o: opening + _merge(o, streams) + closing)


def _merge(order: list[int], streams: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    positions = [0, 0]
    out = []
    for n in order:
        out.append(streams[n][positions[n]])
        positions[n] += 1
    return out


class TestInterleaved:
    @BOTH
    @given(data=st.data())
    def test_parallel_deltas(self, kind: str, data: st.DataObject) -> None:
        """Deltas of parallel calls in any interleaving merge to the same calls."""
        make, _, expected = ACCUMULATORS[kind]
        events = data.draw(interleavings(kind))
        assert expected == fed(make(), events).calls()


class TestTruncated:
    @BOTH
    def test_every_prefix(self, kind: str) -> None:
        """Cut anywhere, each call is the finished one or invalid with the text received."""
        make, events_of, expected = ACCUMULATORS[kind]
        events = events_of(CALLS, "Hi", size=4)
        for cut in range(len(events) + 1):
            calls = fed(make(), events[:cut]).calls()
            assert len(calls) <= len(expected)
            for call, final in zip(calls, expected, strict=False):
                if call != final:
                    assert call.invalid is not None, (cut, call)
                    assert (call.id, call.name) == (final.id, final.name)
                    text = call.arguments
                    full = CALLS[expected.index(final)][2]
                    assert text == {} or (isinstance(text, str) and full.startswith(text)), text

    def test_cut_call_is_answered_not_run(self) -> None:
        """A call cut off mid-arguments is answered with the reason; the tool never runs."""
        ran: list[object] = []
        tool = Tool.from_schema(
            "get_weather",
            "Weather.",
            {"type": "object", "properties": {"city": {"type": "string"}}},
            fn=lambda **kwargs: ran.append(kwargs),
        )
        events = anthropic_events(CALLS[:1], size=4)
        calls = fed(anthropic.ToolCallAccumulator(), events[:4]).calls()
        result = dispatch_sync(calls, [tool])
        assert ([], "error") == (ran, result.messages[0].status)

    def test_max_tokens(self) -> None:
        """A message stopped at max_tokens inside a tool_use block marks that call."""
        events = anthropic_events(CALLS[:1])
        events[-2]["delta"]["stop_reason"] = "max_tokens"
        [call] = fed(anthropic.ToolCallAccumulator(), events).calls()
        assert "max_tokens" in str(call.invalid)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
KINDS = st.sampled_from(
    [
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "response.output_item.added",
        "response.output_item.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_text.delta",
        "other",
    ]
)
EVENT = st.fixed_dictionaries(
    {"type": KINDS},
    optional={
        "index": st.integers(-2, 3) | JSON,
        "output_index": st.integers(-2, 3) | JSON,
        "item_id": st.sampled_from(["fc_0", "fc_1"]) | JSON,
        "delta": JSON
        | st.fixed_dictionaries(
            {"type": st.sampled_from(["input_json_delta", "text_delta"])},
            optional={"partial_json": JSON, "text": JSON},
        ),
        "content_block": JSON
        | st.fixed_dictionaries(
            {"type": st.just("tool_use")}, optional={"id": JSON, "name": JSON, "input": JSON}
        ),
        "item": JSON
        | st.fixed_dictionaries(
            {"type": st.just("function_call")},
            optional={"call_id": JSON, "name": JSON, "arguments": JSON, "status": JSON},
        ),
        "arguments": JSON,
    },
)
CHUNK = st.fixed_dictionaries(
    {
        "candidates": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "content": JSON
                    | st.fixed_dictionaries(
                        {
                            "parts": st.lists(
                                JSON
                                | st.fixed_dictionaries(
                                    {
                                        "functionCall": JSON
                                        | st.fixed_dictionaries(
                                            {},
                                            optional={
                                                "name": JSON,
                                                "args": JSON,
                                                "willContinue": JSON,
                                                "partialArgs": st.lists(
                                                    st.fixed_dictionaries(
                                                        {},
                                                        optional={
                                                            "jsonPath": st.sampled_from(
                                                                [
                                                                    "$.a",
                                                                    "$.a[0]",
                                                                    "$[0]",
                                                                    "$.a.b",
                                                                    "$",
                                                                ]
                                                            )
                                                            | JSON,
                                                            "stringValue": JSON,
                                                            "willContinue": JSON,
                                                        },
                                                    )
                                                ),
                                            },
                                        )
                                    }
                                ),
                                max_size=3,
                            )
                        }
                    ),
                    "finishReason": st.sampled_from(["STOP", "MALFORMED_FUNCTION_CALL"]) | JSON,
                },
            ),
            max_size=2,
        )
    }
)


class TestHostile:
    @BOTH
    @given(events=st.lists(EVENT | JSON | st.binary(max_size=20), max_size=12))
    def test_any_events(self, kind: str, events: list[Any]) -> None:
        """No sequence of events, however malformed, makes an accumulator raise."""
        make, _, _ = ACCUMULATORS[kind]
        accumulator = fed(make(), events)
        try:  # a stream reporting a failed response says so (Responses)
            calls = accumulator.calls()
            getattr(accumulator, "message", getattr(accumulator, "items", None))()
        except ToolCallsFailed:
            calls = []
        assert all(isinstance(call, ToolCall) for call in calls)
        accumulator.text()

    @given(chunks=st.lists(CHUNK | JSON | st.binary(max_size=20), max_size=6))
    def test_any_gemini_chunks(self, chunks: list[Any]) -> None:
        """No chunk sequence makes the Gemini accumulator raise, but for a failed call."""
        accumulator = fed(gemini.ToolCallAccumulator(), chunks)
        try:
            accumulator.calls()
            accumulator.message()
        except ToolCallsFailed:
            pass
        accumulator.text()

    @BOTH
    @given(text=st.text())
    def test_random_argument_text(self, kind: str, text: str) -> None:
        """Any argument text is a call: decoded when it is JSON, else invalid with the text kept."""
        make, events_of, _ = ACCUMULATORS[kind]
        [call] = fed(make(), events_of([("c1", "f", text)], size=3)).calls()
        if kind != "anthropic":  # finished arguments stay the text sent, as parse_calls keeps them
            assert (text, None) == (call.arguments, call.invalid)
            return
        try:
            value = json.loads(text) if text.strip() else {}
        except ValueError:
            assert (text, True) == (call.arguments, call.invalid is not None)
        else:
            assert call.arguments == value or call.invalid is not None

    @BOTH
    @pytest.mark.parametrize(
        "text", ["[" * 1_000_000, '{"a": "' + "x" * 1_000_000, "\ud800" * 1000]
    )
    def test_megabyte_of_broken_json(self, kind: str, text: str) -> None:
        """A megabyte of broken arguments is one invalid call holding all of it."""
        make, events_of, _ = ACCUMULATORS[kind]
        events = events_of([("c1", "f", text)], size=100_000)
        [call] = fed(make(), events).calls()
        assert len(text) == len(call.arguments)
        assert (kind == "anthropic") == (call.invalid is not None)

    def test_openai_chat_megabyte(self) -> None:
        """The Chat accumulator keeps a megabyte of streamed text whole, in linear pieces."""
        text = "[" * 1_000_000
        chunks = [
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": 0, "function": {"arguments": p}}]},
                    }
                ]
            }
            for p in pieces(text, 10_000)
        ]
        [call] = fed(openai_chat.ToolCallAccumulator(), chunks).calls()
        assert len(text) == len(call.arguments)


class TestLarge:
    """A megabyte streamed in 50,000 pieces: each accumulator joins pieces once, at the end."""

    TEXT = '{"notes": "' + "x" * (1_000_000 - 13) + '"}'

    @BOTH
    def test_arguments(self, kind: str) -> None:
        """A megabyte of arguments in small pieces is one whole call."""
        make, events_of, _ = ACCUMULATORS[kind]
        [call] = fed(make(), events_of([("c1", "f", self.TEXT)], size=20)).calls()
        expected = json.loads(self.TEXT) if kind == "anthropic" else self.TEXT
        assert (None, expected) == (call.invalid, call.arguments)

    def test_gemini_text_and_partial_args(self) -> None:
        """Gemini text chunks and a string streamed as partialArgs are joined once."""
        text_chunks = [
            {"candidates": [{"content": {"role": "model", "parts": [{"text": p}]}}]}
            for p in pieces("y" * 1_000_000, 20)
        ]
        partial = [
            {"jsonPath": "$.notes", "stringValue": p, "willContinue": True}
            for p in pieces("z" * 1_000_000, 20)
        ]
        call = {"name": "f", "willContinue": True, "partialArgs": partial}
        end = {"partialArgs": [{"jsonPath": "$.n", "numberValue": 1}]}
        chunks = [
            *text_chunks,
            *({"candidates": [{"content": {"parts": [{"functionCall": c}]}}]} for c in (call, end)),
        ]
        accumulator = fed(gemini.ToolCallAccumulator(), chunks)
        [made] = accumulator.calls()
        assert (1_000_000, 1_000_000) == (len(accumulator.text()), len(made.arguments["notes"]))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "choices",
                    "message",
                    "tool_calls",
                    "output",
                    "content",
                    "candidates",
                    "parts",
                    "type",
                    "functionCall",
                    "method",
                    "params",
                    "name",
                    "arguments",
                    "args",
                    "id",
                    "finishReason",
                    "stop_reason",
                    "response",
                    "delta",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=15,
)


class TestParseAnything:
    @pytest.mark.parametrize(
        "module", [openai_chat, openai_responses, anthropic, gemini], ids=lambda m: m.__name__
    )
    @given(value=JSON_VALUES)
    def test_calls_or_a_clear_error(self, module: Any, value: object) -> None:
        """Any JSON gives calls, or a ValueError/TypeError (ToolCallsFailed included)."""
        try:
            calls = module.parse_calls(value)
        except (ValueError, TypeError) as error:
            message = str(error)
            calls = []
        else:
            message = "ok"
        assert message
        assert all(isinstance(call, ToolCall) for call in calls)


class TestAnthropicServerTools:
    def test_server_tool_input_kept(self) -> None:
        """A server tool's streamed input stays in the message, and is not a call of ours."""
        block = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
        events = [
            {"type": "content_block_start", "index": 0, "content_block": block},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"query": "tides"}'},
            },
            {"type": "content_block_stop", "index": 0},
        ]
        accumulator = fed(anthropic.ToolCallAccumulator(), events)
        assert [] == accumulator.calls()
        assert {"role": "assistant", "content": [{**block, "input": {"query": "tides"}}]} == (
            accumulator.message()
        )


class TestOneResponse:
    @pytest.mark.parametrize("kind", ["anthropic", "responses"])
    def test_an_accumulator_kept_across_turns_gives_each_turns_calls(self, kind: str) -> None:
        """Defect: one accumulator fed two responses' streams (a loop that kept it across
        turns) merged the second into the first, silently: Anthropic's calls were the
        first turn's, with both turns' JSON run together; Responses' the second's items
        over the first's. A response's opening event now starts afresh."""
        make, events, expected = ACCUMULATORS[kind]
        accumulator = fed(make(), events(CALLS))
        assert expected == accumulator.calls()
        fed(accumulator, events(CALLS[1:]))
        assert expected[1:] == accumulator.calls()


class TestResponsesFailedStream:
    @pytest.mark.parametrize(
        "event",
        [
            {
                "type": "response.failed",
                "response": {"status": "failed", "error": {"code": "server_error"}, "output": []},
            },
            {"type": "error", "code": "server_error", "message": "overloaded"},
        ],
    )
    def test_says_why(self, event: dict[str, Any]) -> None:
        """A stream that failed before any call raises, as parse_calls does."""
        accumulator = fed(openai_responses.ToolCallAccumulator(), [event])
        with pytest.raises(ToolCallsFailed, match="server_error"):
            accumulator.calls()


class TestLinearWork:
    """Work grows linearly with the stream, counted, never timed: the Python lines the
    accumulators execute, and the characters they hand to a JSON decoder, for a stream of
    arguments ten times longer in ten times as many pieces."""

    @staticmethod
    def work(kind: str, size: int) -> tuple[int, int]:
        import sys

        import msgspec

        import tinytools.formats as formats

        make, events_of, _ = ACCUMULATORS[kind] if kind != "gemini" else (None, None, None)
        text = '{"notes": "' + "x" * size + '"}'
        if kind == "gemini":  # Gemini streams text in pieces and sends each call whole
            events = gemini_chunks([("c1", "f", '{"a": 1}')], text="y" * (size // 4))
            make = gemini.ToolCallAccumulator
        else:
            events = events_of([("c1", "f", text)], size=20)
        assert make is not None
        root = formats.__path__[0]
        lines = 0
        decoded = 0

        def tracer(frame: Any, event: str, arg: object) -> Any:
            nonlocal lines
            if not frame.f_code.co_filename.startswith(root):
                return None
            if event == "line":
                lines += 1
            return tracer

        real = msgspec.json.decode

        def counting(data: Any, *rest: Any, **options: Any) -> Any:
            nonlocal decoded
            decoded += len(data)
            return real(data, *rest, **options)

        accumulator = make()
        msgspec.json.decode = counting  # type: ignore[assignment]
        sys.settrace(tracer)
        try:
            for event in events:
                accumulator.add(event)
            [call] = accumulator.calls()
        finally:
            sys.settrace(None)
            msgspec.json.decode = real  # type: ignore[assignment]
        assert call.invalid is None
        return lines, decoded

    @pytest.mark.parametrize("kind", [*sorted(ACCUMULATORS), "gemini"])
    def test_ten_times_the_stream_is_ten_times_the_work(self, kind: str) -> None:
        small_lines, small_decoded = self.work(kind, 20_000)
        large_lines, large_decoded = self.work(kind, 200_000)
        assert large_lines <= 11 * small_lines, (small_lines, large_lines)
        assert large_decoded <= 11 * max(small_decoded, 1), (small_decoded, large_decoded)
