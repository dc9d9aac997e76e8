"""Gemini streaming: calls and the model's turn assembled from response chunks.

The Gemini API sends each ``functionCall`` part whole, in one chunk. Vertex
AI with ``streamFunctionCallArguments`` instead streams one call over several
parts: the first names the function, each carries ``partialArgs`` (a JSON path
and a value, strings possibly in pieces while ``willContinue`` is set), and the
call ends with a part whose ``willContinue`` is not set.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from tinytools._wire import ToolCall

from ._parsed import SyntheticIds, is_synthetic
from ._providers import as_data, cut_off, json_text, make_call
from ._received import ToolCallsFailed
from ._turns import arguments_object

__all__ = ["FAILED_CALLS", "ToolCallAccumulator", "failed"]

#: One step of the JSON paths ``partialArgs`` use: ``.name``, ``['name']`` or ``[0]``.
_STEP: Final = re.compile(
    r"\.([A-Za-z_][\w-]*)|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]|\[(\d+)\]"
)
_VALUES: Final = ("string_value", "number_value", "bool_value", "null_value")
#: A backslash escape in a quoted step: the character after it, as itself.
_ESCAPE: Final = re.compile(r"\\(.)", re.DOTALL)


def _field(data: Mapping[str, object], snake: str) -> object:
    """A field in the SDK's snake_case or the REST camelCase spelling."""
    head, *rest = snake.split("_")
    camel = head + "".join(word.title() for word in rest)
    return data[snake] if snake in data else data.get(camel)


def _path(path: object) -> list[str | int] | None:
    """The steps of a ``$``-rooted JSON path, or ``None`` when it is not one we can follow."""
    if not isinstance(path, str) or not path.startswith("$"):
        return None
    steps: list[str | int] = []
    pos = 1
    while pos < len(path):
        match = _STEP.match(path, pos)
        if match is None:
            return None
        name, single, double, number = match.groups()
        quoted = single if single is not None else double
        text = name if name is not None else _ESCAPE.sub(r"\1", quoted or "")
        steps.append(int(number) if number is not None else text)
        pos = match.end()
    return steps or None


#: Finish reasons that mean a call was attempted and failed, with what to do about each.
FAILED_CALLS: Final = {
    "MALFORMED_FUNCTION_CALL": (
        "The model wrote a function call that could not be parsed. Retry the request, or "
        "add a user turn asking the model to call the tool again with valid JSON arguments."
    ),
    "UNEXPECTED_TOOL_CALL": (
        "The model called a function the request did not declare (or function calling is "
        "off). Declare it with tools=gemini.declarations(...), or retry."
    ),
    "TOO_MANY_TOOL_CALLS": (
        "The model made more tool calls than one turn allows. Retry, or ask it for fewer calls."
    ),
    "MALFORMED_RESPONSE": "Gemini could not finish the response. Retry the request.",
    "MISSING_THOUGHT_SIGNATURE": (
        "An earlier model turn was sent back without its thought signatures. Append the "
        "model's Content as it came (candidates[0].content, or ToolCallAccumulator.message() "
        "for a stream) instead of rebuilding it from its calls."
    ),
}


def failed(candidate: Mapping[str, object]) -> None:
    """Raise :class:`ToolCallsFailed` when the candidate finished because a call failed."""
    reason = candidate.get("finishReason", candidate.get("finish_reason"))
    reason = getattr(reason, "value", reason)  # the SDK's FinishReason enum
    if isinstance(reason, str) and reason.upper() in FAILED_CALLS:
        detail = candidate.get("finishMessage", candidate.get("finish_message"))
        raise ToolCallsFailed(
            "gemini",
            reason.upper(),
            detail if isinstance(detail, str) and detail else None,
            FAILED_CALLS[reason.upper()],
        )


class _Streaming:
    """A call whose arguments arrive as ``partialArgs``."""

    __slots__ = ("_args", "_open", "fields", "problem")

    def __init__(self, fields: Mapping[str, object]) -> None:
        self.fields = {"name": fields.get("name"), "id": fields.get("id")}
        self._args: dict[str, object] = {}
        #: The string still streaming: its path, where it goes, and its pieces so far
        #: (joined once it ends, so a long string costs linear time).
        self._open: tuple[tuple[str | int, ...], object, str | int, list[str]] | None = None
        self.problem: str | None = None

    def args(self) -> dict[str, object]:
        """The arguments assembled so far."""
        self._flush()
        return self._args

    def _flush(self) -> None:
        if self._open is not None:
            _, node, step, pieces = self._open
            _set(node, step, "".join(pieces))
            self._open = None

    def apply(self, partial: Mapping[str, object]) -> None:
        steps = _path(_field(partial, "json_path"))
        if steps is None or not isinstance(steps[0], str):
            self.problem = f"a streamed argument has a path we cannot follow: {json_text(partial)}"
            return
        value: object = None
        for key in _VALUES:
            if _field(partial, key) is not None:
                value = None if key == "null_value" else _field(partial, key)
        where = tuple(steps)
        more = bool(_field(partial, "will_continue"))
        if self._open is not None and self._open[0] == where and isinstance(value, str):
            self._open[3].append(value)  # the next piece of the same string
            if not more:
                self._flush()
            return
        self._flush()
        node: object = self._args
        for step, following in zip(steps, [*steps[1:], None], strict=True):
            if following is None:
                break
            child = _child(node, step, [] if isinstance(following, int) else {})
            if child is None:
                self.problem = f"a streamed argument does not fit the others: {json_text(partial)}"
                return
            node = child
        if not _set(node, steps[-1], value):
            self.problem = f"a streamed argument does not fit the others: {json_text(partial)}"
        elif more and isinstance(value, str):
            self._open = (where, node, steps[-1], [value])


def _child(node: object, step: str | int, empty: object) -> object:
    existing = _get(node, step)
    if existing is None and _set(node, step, empty):
        existing = empty
    return existing if isinstance(existing, (dict, list)) else None


def _get(node: object, step: str | int) -> object:
    if isinstance(node, dict) and isinstance(step, str):
        return node.get(step)
    if isinstance(node, list) and isinstance(step, int) and step < len(node):
        return node[step]
    return None


def _set(node: object, step: str | int, value: object) -> bool:
    """Set ``node[step]``; a list grows by one item at a time. Whether it could."""
    if isinstance(node, dict) and isinstance(step, str):
        node[step] = value
        return True
    if isinstance(node, list) and isinstance(step, int) and step <= len(node):
        if step == len(node):
            node.append(value)
        else:
            node[step] = value
        return True
    return False


class ToolCallAccumulator:
    """Merges the chunks of ``generate_content_stream`` into complete calls.

    Follows the first candidate. Whole ``functionCall`` parts are calls as they
    stand; a call streamed as ``partialArgs`` (see the module doc) is assembled
    from its pieces, and one the stream never finished is ``invalid``. When the
    stream finishes because a call failed (``MALFORMED_FUNCTION_CALL``, …) and
    holds no call, :meth:`calls` raises ``ToolCallsFailed`` as ``parse_calls``
    does.

    Example::

        accumulator = gemini.ToolCallAccumulator()
        for chunk in client.models.generate_content_stream(...):
            accumulator.add(chunk)
        contents.append(accumulator.message())
        calls = accumulator.calls()
    """

    __slots__ = ("_calls", "_candidate", "_parts", "_streaming")

    def __init__(self) -> None:
        #: (fields, args or the assembly) of each call, in order.
        self._calls: list[tuple[Mapping[str, object], _Streaming | None, bool]] = []
        self._parts: list[dict[str, object]] = []
        self._streaming: _Streaming | None = None
        self._candidate: Mapping[str, object] = {}

    def add(self, chunk: object) -> None:
        """Merge one chunk (a ``GenerateContentResponse``, SDK object or dict)."""
        data = as_data(chunk)
        candidates = data.get("candidates") if isinstance(data, Mapping) else None
        first = as_data(candidates[0]) if isinstance(candidates, list) and candidates else None
        if not isinstance(first, Mapping):
            return
        self._candidate = first
        content = as_data(first.get("content"))
        parts = content.get("parts") if isinstance(content, Mapping) else None
        for part in parts if isinstance(parts, list) else ():
            part = as_data(part)
            if isinstance(part, Mapping):
                self._part(part)

    def _part(self, part: Mapping[str, object]) -> None:
        call = _field(part, "function_call")
        if call is None:
            self._text(part)
            return
        fields = as_data(call)
        fields = fields if isinstance(fields, Mapping) else {"args": fields}
        partials = _field(fields, "partial_args")
        streaming = isinstance(partials, list) or bool(_field(fields, "will_continue"))
        keep = {
            k: v
            for k, v in part.items()
            if k not in ("functionCall", "function_call") and v is not None
        }
        if not streaming:
            if self._streaming is not None and not fields.get("name"):
                self._close()  # the last part of a streamed call: no more pieces
                return
            self._streaming = None  # a streamed call left open stays unfinished
            self._calls.append((fields, None, True))
            self._parts.append({**keep, "functionCall": len(self._calls) - 1})
            return
        if self._streaming is None or fields.get("name"):
            self._streaming = _Streaming(fields)
            self._calls.append((fields, self._streaming, False))
            self._parts.append({**keep, "functionCall": len(self._calls) - 1})
        for partial in partials if isinstance(partials, list) else ():
            partial = as_data(partial)
            if isinstance(partial, Mapping):
                self._streaming.apply(partial)
        if not _field(fields, "will_continue"):
            self._close()

    def _close(self) -> None:
        index = len(self._calls) - 1
        self._calls[index] = (self._calls[index][0], self._streaming, True)
        self._streaming = None

    def _text(self, part: Mapping[str, object]) -> None:
        text = part.get("text")
        last = self._parts[-1] if self._parts else None
        fields = {k: v for k, v in part.items() if v is not None}
        if not isinstance(text, str):
            self._parts.append(fields)
            return
        pieces = last.get("text") if last is not None else None
        thought = bool(part.get("thought"))
        if last is not None and isinstance(pieces, list) and bool(last.get("thought")) == thought:
            pieces.append(text)  # joined once, when read: linear in the text's length
            last.update({k: v for k, v in fields.items() if k != "text"})
        else:
            self._parts.append({**fields, "text": [text]})

    def calls(self) -> list[ToolCall]:
        """The calls so far, in order (see the class doc).

        Raises:
            ToolCallsFailed: The stream finished because a call failed, with no call.
        """
        ids = SyntheticIds(lambda: json_text([self._candidate, [c[0] for c in self._calls]]))
        calls = []
        for index, (fields, assembly, done) in enumerate(self._calls):
            args = fields.get("args") if assembly is None else assembly.args()
            problem = None if assembly is None else assembly.problem
            call = make_call(
                fields.get("id"),
                fields.get("name"),
                {} if args is None else args,
                ids=ids,
                index=index,
                problem=problem,
            )
            calls.append(call if done else cut_off(call, "the stream ended"))
        if not calls:
            failed(self._candidate)
        return calls

    def text(self) -> str:
        """The text the model wrote (thoughts left out)."""
        runs = [p.get("text") for p in self._parts if not p.get("thought")]
        return "".join("".join(run) for run in runs if isinstance(run, list))

    def message(self) -> dict[str, object]:
        """The model ``Content`` as streamed, ready to append to ``contents``.

        Text is merged into one part per run; thought signatures are kept as
        they came (Gemini 3 needs them back on a function-calling turn).
        """
        calls = self.calls() if self._calls else []
        parts: list[object] = []
        for part in self._parts:
            index = part.get("functionCall")
            if isinstance(index, int):
                call = calls[index]
                function: dict[str, object] = {"name": call.name, "args": arguments_object(call)}
                if not is_synthetic(call.id):
                    function["id"] = call.id
                parts.append({**part, "functionCall": function})
            elif isinstance(run := part.get("text"), list):
                parts.append({**part, "text": "".join(run)})
            else:
                parts.append(dict(part))
        return {"role": "model", "parts": parts}
