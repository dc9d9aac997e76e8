"""What the streaming accumulators share: a call being assembled, and how it ends.

A :class:`Slot` collects one call's id, name and argument pieces as they
stream in. :func:`finish` turns it into a ``ToolCall`` the way the provider's
``parse_calls`` would have read the finished response, and never raises:

* arguments text that parses as JSON is the decoded value (an object, or a
  call refused for not being one);
* text that does not parse — a stream cut short, a model that wrote broken
  JSON — is kept raw, with ``invalid`` saying why, so admission repairs it
  or answers the call with the reason;
* a call whose end never arrived is marked as cut off, its text kept raw
  (text that still parses is a whole object, which admission accepts).
"""

from __future__ import annotations

import msgspec

from tinytools._wire import ToolCall

from ._dialect import NOTHING, decode_written
from ._parsed import SyntheticIds
from ._providers import cut_off, json_text, make_call

__all__ = ["Slot", "finish", "slot_ids"]

#: Why a call is invalid when its end never came.
UNFINISHED = "the stream ended"


class Slot:
    """One streamed call: what has arrived so far."""

    __slots__ = ("done", "id", "name", "pieces", "start", "status")

    def __init__(self, call_id: object = None, name: object = None, start: object = None) -> None:
        self.id = call_id if isinstance(call_id, str) else ""
        self.name = name if isinstance(name, str) else ""
        #: Arguments the call opened with (a provider's ``input: {}``), used when no piece came.
        self.start = start
        self.pieces: list[str] = []
        self.done = False
        self.status: object = None

    def text(self) -> str:
        return "".join(self.pieces)


def slot_ids(slots: list[Slot]) -> SyntheticIds:
    """Synthetic ids derived from everything the slots hold (for calls without an id)."""
    return SyntheticIds(lambda: json_text([[s.id, s.name, s.text()] for s in slots]))


def finish(slot: Slot, ids: SyntheticIds, index: int, *, decode: bool) -> ToolCall:
    """The ``ToolCall`` a slot stands for (see the module doc).

    Args:
        slot: The slot.
        ids: The synthetic ids of the stream's calls.
        index: The call's position among them.
        decode: The provider's finished response holds the arguments decoded
            (Anthropic, Gemini); else they stay JSON text (OpenAI).
    """
    text = slot.text()
    arguments: object = text
    problem = None
    if not text.strip() and slot.start is not None:  # Anthropic: `input: {}`, then no JSON
        arguments = slot.start
    elif decode or not slot.done:
        try:
            value = msgspec.json.decode(text)
        except (msgspec.MsgspecError, RecursionError, UnicodeError) as error:
            # (JSON holding a lone surrogate escape is read as the provider's final
            # response reads it: dispatch tells the model what is wrong with it)
            value = decode_written(text)
            if value is NOTHING:
                problem = f"the streamed arguments are not valid JSON ({error})"
        if problem is None:
            # An unfinished call keeps its text: admission reads it like any raw text.
            arguments = value if decode and slot.done else text
    raw = problem is not None or not decode or not slot.done
    call = make_call(
        slot.id or None,
        slot.name,
        arguments,
        ids=ids,
        index=index,
        raw_string=raw,
        problem=problem,
    )
    return call if slot.done else cut_off(call, UNFINISHED)
