"""Finding JSON values in model text, and reading JSON call objects (``mistral``,
``llama_json``, ``deepseek``).

:class:`Spans` answers "where does the JSON value opening at this ``{`` or ``[``
end?" without decoding: a bracket matcher that skips strings. It only looks at
brackets and quotes, so a span is a candidate that still has to decode. Every
bracket it passes inside a span is remembered with its own answer, so asking
again from a position already scanned costs one lookup, and asking from every
``{`` of a text (as the bare-JSON reader of ``llama_json`` does) stays linear in
the text rather than quadratic. :attr:`Spans.steps` counts the regular-expression
steps taken, so tests can assert that bound.

:func:`call_parts` reads one decoded call object (``{"name": …, "arguments": …}``
and the aliases of :data:`ARGUMENT_KEYS`) the way ``json_in_tag`` does.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

from ._dialect import decode_strict
from ._providers import kind_of

__all__ = [
    "ARGUMENT_KEYS",
    "MAX_DEPTH",
    "NAMED",
    "Spans",
    "call_parts",
    "quiet_json",
    "string_end",
]

#: The keys read as a call's arguments, in order of preference.
ARGUMENT_KEYS: Final = ("arguments", "parameters", "args", "input")
#: The deepest bracket nesting a span may have; deeper is treated as never closed.
MAX_DEPTH: Final = 256
#: The ``"name": "…"`` a broken or cut-off call gives, for its error (a tool-like name only).
NAMED: Final = re.compile(
    r"""["']name["'][ \t\r\n]*:[ \t\r\n]*["']([A-Za-z_][A-Za-z0-9_.-]{0,63})["']"""
)

_STRUCTURE: Final = re.compile(r'[{}\[\]"]')
# The rest of a JSON string after its opening quote (unrolled: linear, no backtracking).
_STRING_REST: Final = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_CLOSERS: Final = {"}": "{", "]": "["}


class Spans:
    """Where JSON values in one text end, remembered per opening bracket.

    Args:
        text: The text.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        #: Regular-expression searches and matches made so far (a measure of work).
        self.steps = 0
        self._ends: dict[int, int] = {}

    def end(self, start: int, limit: int | None = None) -> int:
        """The index just past the value whose ``{`` or ``[`` is at ``start``; -1 when it
        is not closed before ``limit`` (default: the end of the text), its brackets do
        not match, or it nests deeper than :data:`MAX_DEPTH`.

        Answers are remembered only for scans that may run to the end of the text
        (a ``limit`` cuts a scan short, so its "not closed" is not the text's).
        """
        text = self.text
        bound = len(text) if limit is None else limit
        remember = bound == len(text)
        if remember and start in self._ends:
            return self._ends[start]
        stack, pos, result = [start], start + 1, -1
        while True:
            self.steps += 1
            found = _STRUCTURE.search(text, pos, bound)
            if found is None:
                break
            char, at = found.group(), found.start()
            if char == '"':
                self.steps += 1
                rest = _STRING_REST.match(text, at + 1, bound)
                if rest is None:
                    break
                pos = rest.end()
            elif char in "{[":
                known = self._ends.get(at, 0) if remember else 0
                if known == -1:
                    break
                if known:
                    pos = known
                    continue
                stack.append(at)
                if len(stack) > MAX_DEPTH:
                    break
                pos = at + 1
            else:
                opener = stack.pop()
                if text[opener] != _CLOSERS[char]:
                    stack.append(opener)
                    break
                if remember:
                    self._ends[opener] = at + 1
                if not stack:
                    result = at + 1
                    break
                pos = at + 1
        if remember:
            for opener in stack:
                self._ends[opener] = -1
        return result


_MARKERS: Final = re.compile(r"<|\[(?=/?(?:TOOL_CALLS|THINK|ARGS|CALL_ID)\])")


def quiet_json(text: str) -> str:
    """JSON text with every ``<`` written ``\\u003c`` and the ``[`` of a Mistral marker
    written ``\\u005b``: the same value, but no tag or marker any dialect reads (an
    envelope tag, ``<think>``, a special token) is left in its strings. Outside strings
    JSON has neither, so only strings change."""
    return _MARKERS.sub(lambda found: "\\u003c" if found.group() == "<" else "\\u005b", text)


def string_end(text: str, at: int, limit: int) -> int:
    """The index past the JSON string whose opening quote is at ``at``; -1 if not closed."""
    rest = _STRING_REST.match(text, at + 1, limit)
    return -1 if rest is None else rest.end()


def call_parts(
    item: object, *, keys: tuple[str, ...] = ARGUMENT_KEYS, dialect: str = "call"
) -> tuple[str, dict[str, object] | str | tuple[str]]:
    """The name and arguments of one decoded call object; a 1-tuple holds why it is broken.

    Arguments given as a JSON string holding a strictly valid object are
    decoded; any other string is passed on raw, and any other non-object value
    as its JSON text, for admission to repair, normalise or reject.
    """
    if not isinstance(item, dict):
        return "", (f"a {dialect} must be a JSON object, not {kind_of(item)}",)
    name = item.get("name")
    if not isinstance(name, str) or not name:
        return "", (f'the {dialect} has no "name" string',)
    given = [key for key in keys if key in item]
    if len(given) > 1:
        return name, (f'the {dialect} gives both "{given[0]}" and "{given[1]}"; give only one',)
    arguments = item[given[0]] if given else {}
    if isinstance(arguments, str):
        decoded = decode_strict(arguments)
        return name, decoded if isinstance(decoded, dict) else arguments
    if not isinstance(arguments, dict):
        return name, msgspec.json.encode(arguments).decode()
    return name, arguments
