"""OpenAI Responses streaming: ``function_call`` items assembled from stream events."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NoReturn

from tinytools._wire import ToolCall

from ._providers import as_data, cut_off
from ._received import ToolCallsFailed
from ._streamed import Slot, finish, slot_ids
from ._turns import arguments_text

__all__ = ["ToolCallAccumulator", "raise_failed"]


def raise_failed(response: Mapping[str, object]) -> NoReturn:
    """Raise :class:`ToolCallsFailed` for a failed response, with its error code and message."""
    error = as_data(response.get("error"))
    error = error if isinstance(error, Mapping) else {}
    code, message = error.get("code"), error.get("message")
    raise ToolCallsFailed(
        "openai_responses",
        f"response failed ({code})" if isinstance(code, str) else "response failed",
        message if isinstance(message, str) else None,
        "Retry the request.",
    )


class ToolCallAccumulator:
    """Merges the events of a Responses stream into complete calls.

    A ``function_call`` item opens with ``response.output_item.added``; its
    arguments arrive as ``response.function_call_arguments.delta`` pieces and
    are settled by ``response.function_call_arguments.done`` and
    ``response.output_item.done`` (whose full item wins over the pieces).
    Events are merged by ``output_index`` (or ``item_id``), so interleaved
    deltas of parallel calls stay apart. As with ``parse_calls``, finished
    arguments are kept as the text the model sent; a call the stream never
    finished is ``invalid`` (raw text kept), as is one whose item ended
    ``incomplete``. One accumulator holds one response: a ``response.created``
    drops what it held, so one kept across turns gives each turn's calls (read
    them before the next stream), never two responses' items mixed.

    Example::

        accumulator = openai_responses.ToolCallAccumulator()
        for event in client.responses.create(..., stream=True):
            accumulator.add(event)
        calls = accumulator.calls()
    """

    __slots__ = ("_by_id", "_failed", "_items", "_slots", "_texts")

    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        """Hold nothing: a new accumulator, or a ``response.created``."""
        self._slots: dict[int, Slot] = {}
        self._by_id: dict[str, int] = {}
        self._items: dict[int, dict[str, object]] = {}
        self._texts: dict[int, list[str]] = {}
        self._failed: Mapping[str, object] | None = None

    def add(self, event: object) -> None:
        """Merge one stream event (an SDK object or a dict); other events are ignored."""
        data = as_data(event)
        if not isinstance(data, Mapping):
            return
        kind = data.get("type")
        if kind in ("response.failed", "error"):
            self._failed = data
            return
        if kind == "response.created":  # a response begins: one kept across turns starts afresh
            self._start()
            return
        index = self._index(data)
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = as_data(data.get("item"))
            if isinstance(item, Mapping) and index is not None:
                self._item(index, item, done=kind == "response.output_item.done")
        elif index is None:
            return
        elif kind == "response.function_call_arguments.delta" and index in self._slots:
            if isinstance(delta := data.get("delta"), str):
                self._slots[index].pieces.append(delta)
        elif kind == "response.function_call_arguments.done" and index in self._slots:
            if isinstance(arguments := data.get("arguments"), str):
                self._slots[index].pieces[:] = [arguments]
                self._slots[index].done = True
        elif kind == "response.output_text.delta" and isinstance(data.get("delta"), str):
            self._texts.setdefault(index, []).append(str(data["delta"]))

    def _index(self, data: Mapping[str, object]) -> int | None:
        index = data.get("output_index")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        item_id = data.get("item_id")
        return self._by_id.get(item_id) if isinstance(item_id, str) else None

    def _item(self, index: int, item: Mapping[str, object], *, done: bool) -> None:
        if isinstance(item.get("id"), str):
            self._by_id[str(item["id"])] = index
        if done:
            self._items[index] = {k: v for k, v in item.items() if v is not None}
        if item.get("type") != "function_call":
            return
        slot = self._slots.setdefault(index, Slot())
        call_id, name = item.get("call_id"), item.get("name")
        # The done item is the call as sent back in `items()`: its id and name win, so
        # the call dispatched is the call the next request's transcript shows.
        if isinstance(call_id, str) and call_id and (done or not slot.id):
            slot.id = call_id
        if isinstance(name, str) and name and (done or not slot.name):
            slot.name = name
        arguments = item.get("arguments")
        if done:
            if isinstance(arguments, str):
                slot.pieces[:] = [arguments]
            slot.done = True
            slot.status = item.get("status")
        elif isinstance(arguments, str) and arguments and not slot.pieces:
            slot.pieces.append(arguments)

    def calls(self) -> list[ToolCall]:
        """The calls so far, in output order (see the class doc for invalid ones).

        Raises:
            ToolCallsFailed: The stream reported a failed response (or an
                ``error`` event) and holds no call.
        """
        slots = [self._slots[i] for i in sorted(self._slots)]
        if not slots and self._failed is not None:
            failed = self._failed
            if failed.get("type") == "error":  # the event is the error itself
                raise_failed({"error": failed})
            response = as_data(failed.get("response"))
            raise_failed(response if isinstance(response, Mapping) else {})
        ids = slot_ids(slots)
        calls = [finish(slot, ids, n, decode=False) for n, slot in enumerate(slots)]
        return [
            cut_off(call, "the response stopped at its output limit (status incomplete)")
            if slot.status == "incomplete"
            else call
            for call, slot in zip(calls, slots, strict=True)
        ]

    def text(self) -> str:
        """The text of the turn's messages (``output_text`` deltas, joined)."""
        return "".join("".join(self._texts[i]) for i in sorted(self._texts))

    def items(self) -> list[dict[str, object]]:
        """The turn as input items, in output order: what a stateless loop sends back.

        Every item the stream finished (``response.output_item.done``) as it
        came, reasoning items included (reasoning models need them back); a
        function call the stream never finished is written from :meth:`calls`
        (its raw text), so each call that gets a result has its item.
        """
        calls = dict(zip(sorted(self._slots), self.calls(), strict=True))
        items = []
        for index in sorted(self._items.keys() | calls.keys()):
            if index in self._items:
                items.append(dict(self._items[index]))
            else:
                call = calls[index]
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": arguments_text(call),
                    }
                )
        return items
