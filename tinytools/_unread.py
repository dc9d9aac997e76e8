"""Calls a text-dialect parser found but could not read, and what the model is told.

A parser in :mod:`tinytools.formats` returns a broken fragment as a ``ToolCall``
whose ``invalid`` is the parser's reason (written in the dialect's own syntax:
``expected <parameter=name>value</parameter>``, ``the JSON in this <tool_call>
block is not valid: …``) and whose ``arguments`` are the whole raw fragment,
under a synthetic id (:func:`is_synthetic`). Such a call is answered with that
reason as it stands: it is not a JSON-arguments defect, so never "send the
arguments as one JSON object" (which stays the answer to a provider's
undecodable arguments, under the provider's id). A call that could not be read
and names no tool — from a parser or a provider — is answered with its reason,
never as an "unknown tool ``"``". (Admission still tries relaxed repair on the
raw text first, as for every unreadable call; a fragment's text, which holds
its tags or markers, is never repaired into arguments.)
"""

from __future__ import annotations

import re
from typing import Final

from ._text import printable
from ._wire import ToolCall
from .errors import ToolArgumentsError

__all__ = ["UnreadCall", "is_fragment", "is_synthetic", "unnamed_text"]

_SYNTHETIC: Final = re.compile(r"call_[0-9a-f]{12}_[0-9]+")


def is_synthetic(call_id: str) -> bool:
    """Whether ``call_id`` has the form of the ids text parsers give (a provider never sent it)."""
    return _SYNTHETIC.fullmatch(call_id) is not None


def is_fragment(call: ToolCall) -> bool:
    """Whether ``call`` is a fragment a text parser could not read (see the module doc)."""
    return call.invalid is not None and is_synthetic(call.id)


def _sentence(reason: str) -> str:
    reason = reason.strip()
    return reason if reason.endswith((".", "!", "?")) else reason + "."


def unnamed_text(reason: str) -> str:
    """The answer to a fragment that names no tool, for its reason (``shown_reason``)."""
    return (
        f"A tool call in your reply could not be read: {_sentence(printable(reason))} "
        "Nothing was run; write the call again."
    )


class UnreadCall(ToolArgumentsError):
    """A fragment naming a tool that could not be read: the parser's reason, as it is."""

    def __init__(self, tool_name: str, reason: str) -> None:
        super().__init__(tool_name, reason, malformed=True)
        self.args = (
            f"The call to tool `{tool_name}` could not be read: {_sentence(reason)} "
            "Nothing was run; write the whole call again.",
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (UnreadCall, (self.tool_name, self.detail))
