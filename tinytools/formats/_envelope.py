"""Escaping so that tool output and names cannot forge the tool envelope.

Prompt-guided transcripts carry tool traffic as text: calls inside
``<tool_call>…</tool_call>`` and results inside
``<tool_result id="…" name="…" status="…">…</tool_result>``. Anything a tool
returns (or a name a model invents) must not be able to close a block early or
open a fake one, for a strict reader or for a lenient one.

**What counts as an envelope tag.** A ``<``, then optional whitespace, an
optional ``/`` and optional whitespace, then ``tool_result`` or ``tool_call``
in any letter case (as :data:`re.IGNORECASE` folds it, so the long s, U+017F,
counts as ``s``), not followed by a Unicode word character (letter, digit or
``_``). So ``</tool_result>``, ``<TOOL_CALL>``, ``< /tool_call >``,
``<tool_result name="x" status="ok">``, ``<tool_call/>``, ``<tool_call-x>``
and a bare ``<tool_call`` at the end of the text are envelope tags;
``<tool_results>``, ``<tool_call_id>``, ``<tool-call>`` and ``<div class="x">``
are not. Whitespace is anything ``str.isspace`` accepts.

**The body escape.** Only the ``<`` of an envelope tag is rewritten, to
``&lt;``; every other character passes byte for byte. To keep that reversible,
text that already reads as an escaped envelope tag (``&`` then ``amp;`` zero or
more times, then ``lt;``, then the rest of a tag) gains one more ``amp;``.
:func:`unescape_body` undoes exactly that, so ``unescape_body(escape_body(t))
== t`` for every string ``t``, and an escaped body never contains an envelope
tag. A model reads ``&lt;/tool_result>`` as the quoted tag it is.

**Attributes** are written in double quotes with ``&``, ``"``, ``<`` and ``>``
replaced by entities (:func:`escape_attr`, undone by :func:`unescape_attr`).

**Calls** are JSON, whose own escape ``\\u003c`` neutralises the ``<`` of an
envelope tag inside a string (:func:`escape_json`); any JSON reader restores it.

All functions run in linear time: each pattern is anchored on ``<`` or ``&``
and its only repetitions (whitespace, ``amp;``) cannot overlap each other.
"""

from __future__ import annotations

import json
import re
from typing import Final

from tinytools._text import printable
from tinytools._wire import ToolCall

from ._writable import JSON_DEPTH, refusal, unwritable

__all__ = [
    "ENVELOPE_TAG",
    "escape_attr",
    "escape_body",
    "escape_json",
    "json_call_block",
    "result_block",
    "unescape_attr",
    "unescape_body",
]

# The rest of an envelope tag after its `<`. Case folding is scoped to the tag
# name so that the `&amp;`/`&lt;` escapes themselves stay case-sensitive.
_TAIL: Final = r"(?i:\s*(?:/\s*)?tool_(?:result|call)(?!\w))"

#: Any envelope tag, as the module doc defines it (matches the ``<`` and the name).
ENVELOPE_TAG: Final = re.compile(r"<" + _TAIL)

_ESCAPE: Final = re.compile(r"(?:<|&(?:amp;)*lt;)(?=" + _TAIL + ")")
_UNESCAPE: Final = re.compile(r"&((?:amp;)*)lt;(?=" + _TAIL + ")")
# In JSON, also the reasoning tags the parsers hide (a call holding "<think>" in a
# string must still read back as that call).
_JSON_ESCAPE: Final = re.compile(r"<(?=" + _TAIL + "|/?think>)")

_ATTR_ESCAPES: Final = str.maketrans({"&": "&amp;", '"': "&quot;", "<": "&lt;", ">": "&gt;"})
_ATTR_ENTITIES: Final = {"amp": "&", "quot": '"', "lt": "<", "gt": ">"}
_ATTR_UNESCAPE: Final = re.compile(r"&(amp|quot|lt|gt);")


def _escape_opener(match: re.Match[str]) -> str:
    opener = match.group()
    return "&lt;" if opener == "<" else "&amp;" + opener[1:]


def _unescape_opener(match: re.Match[str]) -> str:
    amps = match.group(1)
    return "<" if not amps else "&" + amps[4:] + "lt;"


def escape_body(text: str) -> str:
    """Neutralise every envelope tag in a block body, reversibly.

    Args:
        text: A tool's output (or any text placed inside an envelope block).

    Returns:
        The text with the ``<`` of each envelope tag written as ``&lt;`` (and
        already-escaped forms given one more ``amp;``); all else unchanged.
    """
    return _ESCAPE.sub(_escape_opener, text)


def unescape_body(text: str) -> str:
    """Undo :func:`escape_body`: the exact original body."""
    return _UNESCAPE.sub(_unescape_opener, text)


def escape_attr(text: str) -> str:
    """Escape a value for a double-quoted envelope attribute (``&``, ``"``, ``<``, ``>``)."""
    return text.translate(_ATTR_ESCAPES)


def unescape_attr(text: str) -> str:
    """Undo :func:`escape_attr`: the exact original value."""
    return _ATTR_UNESCAPE.sub(lambda match: _ATTR_ENTITIES[match.group(1)], text)


def escape_json(text: str) -> str:
    """Write the ``<`` of each envelope tag, and of ``<think>`` and ``</think>`` (which
    the parsers read as reasoning), in a JSON document as ``\\u003c``.

    Args:
        text: A JSON document; a ``<`` can only occur inside its strings, where
            ``\\u003c`` is an equivalent escape, so the document decodes to the
            same value.

    Returns:
        The document with no envelope tag left in it.
    """
    return _JSON_ESCAPE.sub(r"\\u003c", text)


def result_block(call_id: str, name: str, status: str, body: str) -> str:
    """One ``<tool_result>`` block, attributes and body escaped.

    The body sits on its own lines: the opening tag, a newline, the escaped
    body, a newline, then ``</tool_result>``.
    """
    # A lone surrogate (a provider's id may hold one; see ``ToolCall.id``) is written as
    # its escape: no prompt text can carry it.
    call_id, name, body = printable(call_id), printable(name), printable(body)
    return (
        f'<tool_result id="{escape_attr(call_id)}" name="{escape_attr(name)}" '
        f'status="{escape_attr(status)}">\n{escape_body(body)}\n</tool_result>'
    )


def json_call_block(call: ToolCall) -> str:
    """One call in the JSON-in-tag form, its JSON escaped with :func:`escape_json`.

    The form is ``<tool_call>``, a newline, ``{"name": …, "arguments": …}``
    (``json.dumps`` spacing, non-ASCII kept), a newline, ``</tool_call>`` —
    the shape Hermes- and Qwen-style chat templates render. Arguments that
    JSON cannot carry faithfully (see :mod:`tinytools.formats._writable`)
    give its refusal note instead of a block.
    """
    if printable(call.name) is not call.name:
        return refusal("its tool name holds a lone surrogate, which text cannot carry")
    arguments = call.arguments
    if isinstance(arguments, dict):
        problem = unwritable(arguments, JSON_DEPTH)
        if problem is not None:
            return refusal(problem)
    else:  # raw text holding a lone surrogate is written with its escape
        arguments = printable(str(arguments))
    payload = json.dumps({"name": call.name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{escape_json(payload)}\n</tool_call>"
