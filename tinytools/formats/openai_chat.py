"""OpenAI Chat Completions (and the OpenAI-compatible servers): tools in, calls out.

* :func:`declarations` — ``tools=[{"type": "function", "function": {...}}]``,
  optionally in strict mode (:func:`strict_schema` says exactly what changes).
* :func:`parse_calls` — a completion's tool calls as ``ToolCall``s, with the
  ``arguments`` string kept verbatim: decoding, repair and validation happen
  at admission.
* :class:`ToolCallAccumulator` — the same from a stream of chunks.
* :func:`assistant_message` — the assistant turn holding the calls (for a
  streamed or prompt-guided turn, where no SDK message exists to append).
* :func:`tool_results` — our ``ToolMessage``s as ``role: "tool"`` messages,
  then, when results hold images or files, the user message that carries them
  (a tool message takes text only).
* :func:`required_schema` — the JSON Schema of a list of calls, for servers that
  take ``response_format`` but not ``tool_choice="required"``.

Responses may be the SDK's objects or plain dicts (as JSON-decoded); the SDK
is never imported. Calls fail closed (see ``tinytools.formats._providers``):
a call without a name, with arguments that are neither JSON text nor an
object, or of a type other than ``function`` (a custom tool) becomes a
``ToolCall`` with ``invalid`` set, so dispatch answers it with an error; a
call without an id (some local servers) gets a synthetic, deterministic one.
The deprecated single ``function_call`` field is not read.

OpenAI's tool message has no error flag: an error's content is sent as it
is, since the messages dispatch writes for errors already say what failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from tinytools._inject import Context
from tinytools._wire import ToolCall, ToolMessage

from ._attachments import (
    ATTACHMENT_BYTES,
    OPENAI_IMAGES,
    Attached,
    attach,
    data_url,
    encoded,
    web_url,
)
from ._calls_schema import required_schema
from ._parsed import SyntheticIds
from ._providers import (
    Tools,
    as_data,
    cut_off,
    exposed_tools,
    json_text,
    make_call,
    openai_function,
    strict_schema,
)
from ._received import received
from ._streamed import UNFINISHED
from ._turns import arguments_text, checked_calls

__all__ = [
    "ToolCallAccumulator",
    "assistant_message",
    "declarations",
    "parse_calls",
    "required_schema",
    "strict_schema",
    "tool_results",
]


def declarations(
    tools: Tools, *, strict: bool = False, context: Context | None = None
) -> list[dict[str, object]]:
    """The ``tools`` list of a Chat Completions request.

    Args:
        tools: A ``Registry``, any toolset, or an iterable of ``Tool``. Only
            ``Direct`` tools are declared: hidden ones never, deferred ones are
            found through discovery (choose what to expose with
            :func:`tinytools.formats.split_by_format`).
        strict: Declare each tool in strict mode, with its parameters
            projected by :func:`strict_schema` and ``"strict": true``. A tool
            whose schema strict mode cannot express (a ``dict`` parameter, a
            value of any type) is declared ``"strict": false`` with its schema
            unchanged.
        context: The context a toolset is resolved with (pass the dispatch's, so
            that what is declared is what dispatch will admit).

    Returns:
        New dicts, ``{"type": "function", "function": {"name", "description",
        "parameters"}}`` (plus ``"strict"`` when ``strict`` is asked for).
    """
    out: list[dict[str, object]] = []
    for tool in exposed_tools(tools, context):
        function = openai_function(tool, strict=strict)
        if not strict:
            del function["strict"]
        out.append({"type": "function", "function": function})
    return out


def parse_calls(response: object) -> list[ToolCall]:
    """The tool calls of a completion, a choice or an assistant message, in order.

    A completion cut off at the token limit (``finish_reason: "length"``) was
    stopped while writing its last call: that call is marked ``invalid`` (its
    text kept). Dispatch answers it with the reason instead of running it on
    arguments that may be incomplete, unless its text still parses as strict
    JSON: a whole object arrived, and the call is admitted as usual (with an
    ``InvalidToolArgs`` event whose recovery is ``"repaired"``).

    Args:
        response: A ``ChatCompletion`` (its first choice is read: other
            choices are alternatives, not more calls), one choice, or the
            assistant message; SDK objects or plain dicts.

    Raises:
        TypeError: ``response`` is not a response at all: text, a stream, or
            one streamed chunk (feed chunks to :class:`ToolCallAccumulator`).
        ValueError: ``response`` is not shaped like any of these.
    """
    data = received(
        response,
        module="openai_chat",
        expects="a ChatCompletion, a choice or an assistant message",
        accumulator="ToolCallAccumulator",
    )
    message, finish = _message(data)
    items = message.get("tool_calls")
    if items is None:
        return []
    if not isinstance(items, list):
        raise ValueError(f"`tool_calls` must be a list, not {json_text(items)[:80]}")
    ids = SyntheticIds(lambda: json_text(data))
    calls = [_call(item, ids, index) for index, item in enumerate(items)]
    if finish == "length" and calls:
        calls[-1] = cut_off(calls[-1], _CUT)
    return calls


_CUT = "the response reached its token limit (finish_reason length)"


def _message(data: object) -> tuple[Mapping[str, object], object]:
    """The assistant message and the choice's ``finish_reason`` (``None`` if not known)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a Chat Completions response, not {type(data).__name__}")
    finish: object = None
    if data.get("object") == "chat.completion.chunk":
        raise _chunk_refused()
    if "choices" in data:
        choices = data["choices"]
        if not isinstance(choices, list):
            raise ValueError("`choices` must be a list")
        data = choices[0] if choices else {}
    if isinstance(data, Mapping) and "delta" in data and "message" not in data:
        raise _chunk_refused()
    if isinstance(data, Mapping) and "message" in data:
        finish = data.get("finish_reason")
        data = data["message"]
    if not isinstance(data, Mapping):
        raise ValueError(f"expected an assistant message, not {json_text(data)[:80]}")
    return data, finish


def _chunk_refused() -> TypeError:
    return TypeError(
        "tinytools.formats.openai_chat.parse_calls got a streamed chunk, not a completion; "
        "feed every chunk to ToolCallAccumulator().add(chunk) and read its calls()"
    )


def _call(item: object, ids: SyntheticIds, index: int) -> ToolCall:
    if not isinstance(item, Mapping):
        return make_call(None, None, item, ids=ids, index=index, problem="not a tool call")
    kind = item.get("type") or "function"
    body = item.get(kind) if isinstance(kind, str) else None
    body = body if isinstance(body, Mapping) else {}
    if kind == "function":
        arguments = body.get("arguments")
        problem = None
    else:
        raw = body.get("input", item)
        arguments = raw if isinstance(raw, str) else json_text(raw)
        problem = f"a {kind!r} tool call is not a function call; declare it as a function"
    return make_call(
        item.get("id"),
        body.get("name"),
        arguments,
        ids=ids,
        index=index,
        raw_string=True,
        problem=problem,
    )


class _Slot:
    __slots__ = ("id", "name", "odd", "pieces")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.pieces: list[str] = []
        self.odd: list[object] = []


class ToolCallAccumulator:
    """Merges streamed ``choices[].delta.tool_calls[]`` into complete calls.

    Feed it the chunks of ``client.chat.completions.create(..., stream=True)``.
    (The SDK's ``client.chat.completions.stream()`` helper parses the
    arguments of strict tools itself and raises from inside the SDK when a
    model writes broken JSON, before tinytools sees the call.)

    Each delta names its call by ``index``: the first carries the ``id`` and
    the ``name``, the following ones pieces of the ``arguments`` string.
    Deltas of parallel calls may interleave; they are merged by index. A
    delta without an index (some local servers) continues the last call,
    unless it brings a new id, which opens the next one.

    Example::

        accumulator = ToolCallAccumulator()
        for chunk in client.chat.completions.create(..., stream=True):
            accumulator.add(chunk)
        messages.append(accumulator.message())
        calls = accumulator.calls()

    Args:
        choice: The choice to follow (``n > 1`` streams several).
    """

    __slots__ = ("_choice", "_finish", "_last", "_slots", "_text")

    def __init__(self, choice: int = 0) -> None:
        self._choice = choice
        self._slots: dict[int, _Slot] = {}
        self._last: int | None = None
        self._text: list[str] = []
        self._finish: object = None

    def add(self, chunk: object) -> None:
        """Merge one ``ChatCompletionChunk`` (an SDK object or a dict); other chunks are ignored."""
        data = as_data(chunk)
        choices = data.get("choices") if isinstance(data, Mapping) else None
        for choice in choices if isinstance(choices, list) else ():
            if isinstance(choice, Mapping) and choice.get("index", 0) == self._choice:
                if choice.get("finish_reason") is not None:
                    self._finish = choice["finish_reason"]
                delta = choice.get("delta")
                delta = delta if isinstance(delta, Mapping) else {}
                if isinstance(content := delta.get("content"), str):
                    self._text.append(content)
                items = delta.get("tool_calls")
                for item in items if isinstance(items, list) else ():
                    if isinstance(item, Mapping):
                        self._merge(item)

    def _merge(self, item: Mapping[str, object]) -> None:
        index, new_id = item.get("index"), item.get("id")
        if not isinstance(index, int):
            last = self._slots.get(self._last) if self._last is not None else None
            opens = last is None or (isinstance(new_id, str) and new_id not in ("", last.id))
            index = (max(self._slots) + 1 if self._slots else 0) if opens else self._last
            assert index is not None
        slot = self._slots.setdefault(index, _Slot())
        self._last = index
        if isinstance(new_id, str) and not slot.id:
            slot.id = new_id
        function = item.get("function")
        if isinstance(function, Mapping):
            if isinstance(name := function.get("name"), str):
                slot.name += name
            if isinstance(arguments := function.get("arguments"), str):
                slot.pieces.append(arguments)
            elif arguments is not None:
                slot.odd.append(arguments)

    def calls(self) -> list[ToolCall]:
        """The calls so far, by index; each ``arguments`` is the joined string, verbatim.

        Before the choice's ``finish_reason`` arrives (a stream cut short), a
        call whose text is not valid JSON is marked ``invalid``; after
        ``finish_reason: "length"``, the last call is, as :func:`parse_calls`
        marks it.
        """
        slots = [self._slots[index] for index in sorted(self._slots)]
        ids = SyntheticIds(
            lambda: json_text([[slot.id, slot.name, "".join(slot.pieces)] for slot in slots])
        )
        calls = []
        for position, slot in enumerate(slots):
            arguments: object = "".join(slot.pieces)
            if slot.odd:  # a server that streams an object instead of JSON text
                arguments = slot.odd[0] if len(slot.odd) == 1 and not slot.pieces else slot.odd
            call = make_call(
                slot.id, slot.name, arguments, ids=ids, index=position, raw_string=True
            )
            if self._finish is None and isinstance(arguments, str) and not _whole(arguments):
                call = cut_off(call, UNFINISHED)
            calls.append(call)
        if self._finish == "length" and calls:
            calls[-1] = cut_off(calls[-1], _CUT)
        return calls

    def text(self) -> str:
        """The text the model streamed (``delta.content``, joined)."""
        return "".join(self._text)

    def message(self) -> dict[str, object]:
        """The streamed assistant turn: :func:`assistant_message` of the calls and text."""
        return assistant_message(self.calls(), self.text() or None)


def _whole(text: str) -> bool:
    """Whether ``text`` is complete JSON (a stream cut inside a call leaves it broken)."""
    try:
        msgspec.json.decode(text)
    except (msgspec.MsgspecError, RecursionError, UnicodeError):
        return False
    return True


def assistant_message(calls: Iterable[ToolCall], text: str | None = None) -> dict[str, object]:
    """The assistant message that made ``calls``, as Chat Completions takes it back.

    Append it to the conversation, then the :func:`tool_results` of the calls.
    Arguments are sent as JSON text: a call's raw text verbatim (a malformed
    call shows what the model sent, which its error result answers).

    Args:
        calls: The calls, as ``parse_calls`` or :class:`ToolCallAccumulator` gave them.
        text: The text the model wrote with them, if any.

    Returns:
        ``{"role": "assistant", "content": text, "tool_calls": [...]}``, without
        ``tool_calls`` when there are none (the API refuses an empty list).
    """
    message: dict[str, object] = {"role": "assistant", "content": text}
    entries = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": arguments_text(call)},
        }
        for call in checked_calls(calls, "openai_chat.assistant_message")
    ]
    if entries:
        message["tool_calls"] = entries
    return message


def tool_results(
    messages: Iterable[ToolMessage],
    *,
    status: bool = False,
    max_attachment_bytes: int | None = ATTACHMENT_BYTES,
) -> list[dict[str, object]]:
    """One ``{"role": "tool", "tool_call_id", "content"}`` message per ``ToolMessage``, in
    order, then the user message carrying the results' images and files, if any.

    Pass ``dispatch(...).messages``; append the list after the assistant
    message that made the calls.

    A tool message takes text only, so a result's attachments (its ``ImageBlock``
    and ``FileBlock``) go in one user message after the tool messages: each after a
    text part naming its call and number (``Call call_1 (plot), attachment 1
    (image/png):``), as an ``image_url`` part (PNG, JPEG, WebP or GIF, as a ``data:``
    URL or by its ``http(s)`` URL), a ``file`` part (a PDF, as data) or an
    ``input_audio`` part (WAV or MP3, as data). The tool message's text ends with a
    line saying so (``[the next user message holds attachment 1]``). Anything else —
    another type, data that is not what its media type says, more than
    ``max_attachment_bytes`` — is left out, and a line of the tool message tells the
    model which and why.

    Args:
        messages: The messages to send.
        status: Add each message's ``status`` (``"ok"``, ``"error"``, …), which
            :func:`tinytools.formats.coalesce_tool_results` shows the model. For
            a prompt-guided history only: the OpenAI API refuses the extra key.
        max_attachment_bytes: The most bytes of data one attachment may have (None:
            no limit; the default is 3,932,160, 5 MiB in base64).
    """
    out: list[dict[str, object]] = []
    carried: list[object] = []  # the parts of the user message after the tool messages
    for m in messages:
        text, sent = attach(m, _native, max_attachment_bytes)
        if sent:
            word = "attachment" if len(sent) == 1 else "attachments"
            numbers = ", ".join(str(attached.number) for attached, _ in sent)
            text += f"\n[the next user message holds {word} {numbers}]"
            for attached, part in sent:
                label = f"Call {m.tool_call_id} ({m.name}), attachment {attached.number}"
                carried += [{"type": "text", "text": f"{label} ({attached.media}):"}, part]
        message: dict[str, object] = {
            "role": "tool",
            "tool_call_id": m.tool_call_id,
            "content": text,
        }
        if status:
            message["status"] = m.status
        out.append(message)
    if carried:
        out.append({"role": "user", "content": carried})
    return out


#: The audio types a Chat Completions ``input_audio`` part takes, by its ``format``.
_AUDIO = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/vnd.wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


def _native(attached: Attached) -> dict[str, object] | str:
    """An attachment as a user message's content part, or why Chat Completions cannot
    take it."""
    media, data = attached.media, attached.data
    if media in OPENAI_IMAGES:
        if data is None and not web_url(attached):
            return "Chat Completions takes an image as data or by an http(s) URL"
        url = data_url(attached) if data is not None else attached.url
        return {"type": "image_url", "image_url": {"url": url}}
    if media == "application/pdf" or media in _AUDIO:
        if data is None:
            return "Chat Completions takes a PDF or audio as data, not by URL"
        if media in _AUDIO:
            audio = {"data": encoded(attached), "format": _AUDIO[media]}
            return {"type": "input_audio", "input_audio": audio}
        name = attached.name or f"attachment-{attached.number}.pdf"
        return {"type": "file", "file": {"filename": name, "file_data": data_url(attached)}}
    return "Chat Completions takes PNG, JPEG, WebP and GIF images, PDF files and WAV or MP3 audio"
