"""Anthropic Messages streaming: ``tool_use`` blocks assembled from raw stream events."""

from __future__ import annotations

from collections.abc import Mapping

from tinytools._wire import ToolCall

from ._dialect import decode_strict
from ._providers import as_data, cut_off
from ._streamed import Slot, finish, slot_ids
from ._turns import arguments_object

__all__ = ["ToolCallAccumulator"]


class _Block:
    """One content block of the streamed message."""

    __slots__ = ("fields", "json", "slot", "text")

    def __init__(self, fields: Mapping[str, object]) -> None:
        self.fields = {k: v for k, v in fields.items() if v is not None}
        kind = fields.get("type")
        calls = kind == "tool_use"
        self.slot = (
            Slot(fields.get("id"), fields.get("name"), fields.get("input")) if calls else None
        )
        self.text: list[str] = []
        #: Input JSON of a block that is not ours to call (``server_tool_use``, …).
        self.json: list[str] = []


class ToolCallAccumulator:
    """Merges the raw events of a Messages stream into complete calls.

    The supported way to stream is ``client.messages.create(..., stream=True)``,
    feeding every event to :meth:`add`. Each ``tool_use`` block opens with
    ``content_block_start`` and its input arrives as ``input_json_delta``
    pieces; blocks are merged by ``index``, so interleaved deltas of parallel
    calls land in their own call. The SDK's ``client.messages.stream()``
    helper parses the partial JSON itself and raises ``ValueError`` from inside
    the SDK when a model writes broken JSON, before tinytools sees the call;
    with ``create(stream=True)`` the broken call reaches :meth:`calls` as an
    ``invalid`` call that dispatch answers. (Events of ``messages.stream()``
    are accepted too, but its own accumulator runs first.)

    At the end, a block's input that is not valid JSON, or a block the stream
    never closed, is an ``invalid`` call keeping the raw text; a message that
    stopped at ``max_tokens`` in a ``tool_use`` block marks that call too.

    One accumulator holds one response: a ``message_start`` drops what it held,
    so one kept across turns gives each turn's calls (read them before the next
    stream), never two responses merged into broken calls.

    Example::

        accumulator = anthropic.ToolCallAccumulator()
        for event in client.messages.create(..., stream=True):
            accumulator.add(event)
        messages.append(accumulator.message())
        calls = accumulator.calls()
    """

    __slots__ = ("_blocks", "_stop")

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._stop: object = None

    def add(self, event: object) -> None:
        """Merge one stream event (an SDK object or a dict); other events are ignored."""
        data = as_data(event)
        if not isinstance(data, Mapping):
            return
        kind, index = data.get("type"), data.get("index")
        if kind == "message_start":  # a response begins: one kept across turns starts afresh
            self._blocks, self._stop = {}, None
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, Mapping) and delta.get("stop_reason") is not None:
                self._stop = delta.get("stop_reason")
        elif not isinstance(index, int) or isinstance(index, bool):
            return
        elif kind == "content_block_start":
            block = as_data(data.get("content_block"))
            if isinstance(block, Mapping) and index not in self._blocks:
                self._blocks[index] = _Block(block)
        elif kind == "content_block_delta":
            self._delta(index, as_data(data.get("delta")))
        elif kind == "content_block_stop" and index in self._blocks:
            slot = self._blocks[index].slot
            if slot is not None:
                slot.done = True

    def _delta(self, index: int, delta: object) -> None:
        block = self._blocks.get(index)
        if block is None or not isinstance(delta, Mapping):
            return
        kind = delta.get("type")
        if kind == "input_json_delta":
            piece = delta.get("partial_json")
            if isinstance(piece, str):
                (block.slot.pieces if block.slot is not None else block.json).append(piece)
        elif kind in ("text_delta", "thinking_delta"):
            piece = delta.get("text" if kind == "text_delta" else "thinking")
            if isinstance(piece, str):
                block.text.append(piece)
        elif kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block.fields["signature"] = delta["signature"]

    def calls(self) -> list[ToolCall]:
        """The calls so far, in block order (see the class doc for invalid ones)."""
        blocks = [self._blocks[i] for i in sorted(self._blocks)]
        slots = [b.slot for b in blocks if b.slot is not None]
        ids = slot_ids(slots)
        calls = [finish(slot, ids, n, decode=True) for n, slot in enumerate(slots)]
        if self._stop == "max_tokens" and calls and blocks[-1].slot is not None:
            calls[-1] = cut_off(calls[-1], "the response reached max_tokens")
        return calls

    def text(self) -> str:
        """The text the model wrote (its ``text`` blocks, joined)."""
        return "".join(
            "".join(b.text)
            for i, b in sorted(self._blocks.items())
            if b.fields.get("type") == "text"
        )

    def message(self) -> dict[str, object]:
        """The assistant message as streamed, ready to append to ``messages``.

        Thinking blocks keep their signatures (Anthropic needs them back with
        tool use); each ``tool_use`` block carries its call's input as an
        object (``{}`` for input that was not a JSON object).
        """
        calls = iter(self.calls())
        content: list[object] = []
        for _, block in sorted(self._blocks.items()):
            fields = dict(block.fields)
            kind = fields.get("type")
            if block.slot is not None:
                call = next(calls)
                fields.update(id=call.id, name=call.name, input=arguments_object(call))
            elif kind == "text":
                fields["text"] = "".join(block.text)
            elif kind == "thinking":
                fields["thinking"] = "".join(block.text)
            elif block.json and isinstance(value := decode_strict("".join(block.json)), dict):
                fields["input"] = value  # a server tool's input, as Anthropic sent it
            content.append(fields)
        return {"role": "assistant", "content": content}
