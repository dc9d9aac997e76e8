"""The model's calls written back as arguments a provider takes in an assistant turn.

Each provider module's ``assistant_message`` builds the turn; these two
functions say how a call's arguments are written there:

* :func:`arguments_text` — for the OpenAI APIs, which keep arguments as JSON
  text: the text the model sent is kept verbatim (also when it was malformed,
  so the transcript shows what the error result answers); an object is
  encoded compactly.
* :func:`arguments_object` — for Anthropic, Gemini and MCP, which only take an
  object: the object, or the text decoded when it is a JSON object. Text that
  is not one (a malformed call) cannot be written as it was; it becomes ``{}``,
  and the call's error result (dispatch answers every invalid call) tells the
  model what was wrong with what it sent.

Both always encode as JSON (``msgspec.json.encode`` too): a lone surrogate in
the arguments (Python's ``json`` decodes a model's ``"\\ud800"`` escape into
one, and dispatch answers such a call as not valid text) is written as its
escape — in raw text that is the same JSON string; in an object it is the
escape's text — and an object holding what JSON cannot carry at all (an integer
past Python's digit limit, nesting past the recursion limit, a host's object)
is written as :func:`~tinytools.formats._providers.json_text` makes it.
:func:`checked_calls` escapes a lone surrogate in a call's name the same way.
The id is kept verbatim: the host matches answers to calls by it (see
``ToolCall.id``).
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from tinytools._text import printable
from tinytools._wire import ToolCall, plain_call

from ._dialect import decode_strict
from ._providers import json_text

__all__ = ["arguments_object", "arguments_text", "checked_calls"]


def arguments_text(call: ToolCall) -> str:
    """The call's arguments as JSON text (raw text verbatim)."""
    arguments = call.arguments
    return printable(arguments) if isinstance(arguments, str) else json_text(arguments)


def arguments_object(call: ToolCall) -> dict[str, object]:
    """The call's arguments as an object (``{}`` for text that is not a JSON object)."""
    arguments = call.arguments
    if isinstance(arguments, dict):
        try:
            msgspec.json.encode(arguments)
        except (TypeError, ValueError, OverflowError, RecursionError):
            decoded = decode_strict(json_text(arguments))  # what JSON cannot carry, as text
            return decoded if isinstance(decoded, dict) else {}
        return dict(arguments)
    decoded = decode_strict(printable(arguments))
    return decoded if isinstance(decoded, dict) else {}


def checked_calls(calls: Iterable[ToolCall], function: str) -> list[ToolCall]:
    """``calls`` as a list (raw arguments of a ``str`` subclass as plain text), or a
    ``TypeError`` naming ``function`` and what it takes.

    Raises:
        TypeError: An item is not a ``ToolCall`` (for instance the SDK's own call
            object: read it with ``parse_calls`` first).
    """
    found = list(calls)
    for call in found:
        if not isinstance(call, ToolCall):
            raise TypeError(
                f"{function} takes tinytools ToolCalls (from parse_calls or an accumulator's "
                f"calls()), not {type(call).__name__}"
            )
    # Raw arguments of a str subclass (an SDK's own string type) as the text they hold,
    # as dispatch reads them (msgspec decodes no subclass).
    return [_printable_name(plain_call(call)) for call in found]


def _printable_name(call: ToolCall) -> ToolCall:
    name = printable(call.name)
    return call if name is call.name else msgspec.structs.replace(call, name=name)
