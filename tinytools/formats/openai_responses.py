"""OpenAI Responses API: tools in, ``function_call`` items out, ``function_call_output`` back.

* :func:`declarations` — ``tools=[{"type": "function", "name", "description",
  "parameters", "strict"}]``. The Responses API makes function tools strict
  unless told otherwise, so ``"strict": false`` is always sent explicitly;
  ``strict=True`` applies :func:`tinytools.formats.openai_chat.strict_schema`.
* :func:`parse_calls` — the ``function_call`` items of a response's
  ``output``, with ``call_id`` as the call id and ``arguments`` kept verbatim.
  Other items (messages, reasoning, hosted tools, custom tool calls, which
  need an answer of another type) are not function calls and are skipped.
* :func:`assistant_items` — the model's turn as input items (this API's
  equivalent of an assistant message: a turn is several items), for a
  stateless loop (no ``previous_response_id``) over a streamed turn.
* :func:`tool_results` — ``{"type": "function_call_output", "call_id",
  "output"}`` input items; a result's images and files go in ``output`` as
  ``input_image`` and ``input_file`` content after its text.

Calls fail closed as in ``openai_chat``; a response may be the SDK's
``Response`` or a plain dict, or just its ``output`` list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tinytools._inject import Context
from tinytools._wire import ToolCall, ToolMessage

from ._attachments import ATTACHMENT_BYTES, OPENAI_IMAGES, Attached, attach, data_url, web_url
from ._providers import (
    Tools,
    as_data,
    cut_off,
    exposed_tools,
    openai_function,
    typed_calls,
)
from ._received import received, refuse_stream_event
from ._responses_stream import ToolCallAccumulator, raise_failed
from ._turns import arguments_text, checked_calls

__all__ = ["ToolCallAccumulator", "assistant_items", "declarations", "parse_calls", "tool_results"]


def declarations(
    tools: Tools, *, strict: bool = False, context: Context | None = None
) -> list[dict[str, object]]:
    """The ``tools`` list of a Responses request.

    Args:
        tools: A ``Registry`` (or any toolset with ``tools()``) or an iterable
            of ``Tool``; hidden tools are skipped.
        strict: Project each schema for strict mode (a tool whose schema
            strict mode cannot express stays ``"strict": false``, unchanged).
        context: The context a toolset is resolved with (pass the dispatch's, so
            that what is declared is what dispatch will admit).

    Returns:
        New dicts, ``{"type": "function", "name", "description",
        "parameters", "strict"}``.
    """
    return [
        {"type": "function", **openai_function(t, strict=strict)}
        for t in exposed_tools(tools, context)
    ]


def parse_calls(response: object) -> list[ToolCall]:
    """The function calls of a response, in output order.

    A call whose item is ``"status": "incomplete"`` (the response stopped at
    its output limit while writing it) is marked ``invalid``, its text kept.

    Args:
        response: A ``Response`` (SDK object or dict) or its ``output`` list;
            the ``response.completed`` (or ``.incomplete``, ``.failed``) stream
            event is read as the response it carries.

    Raises:
        ToolCallsFailed: The response has ``"status": "failed"`` and no call
            (its ``error`` code and message are kept).
        TypeError: ``response`` is text, a stream, or another stream event
            (feed those to :class:`ToolCallAccumulator`).
        ValueError: ``response`` has no ``output`` list.
    """
    data = received(
        response,
        module="openai_responses",
        expects="a Response or its output list",
        accumulator="ToolCallAccumulator",
    )
    if isinstance(data, Mapping) and isinstance(data.get("response"), Mapping):
        data = data["response"]  # a response.completed / .incomplete / .failed event
    refuse_stream_event(
        data,
        module="openai_responses",
        kinds=("response.",),
        what="feed every stream event to ToolCallAccumulator().add(event), or pass the "
        "`response` of the response.completed event",
    )
    calls = typed_calls(
        data,
        list_key="output",
        what="a Responses response",
        kind="function_call",
        id_key="call_id",
        arguments_key="arguments",
        raw_string=True,
    )
    items = data.get("output") if isinstance(data, Mapping) else data
    statuses = [
        fields.get("status")
        for fields in map(as_data, items if isinstance(items, list) else ())
        if isinstance(fields, Mapping) and fields.get("type") == "function_call"
    ]
    if not calls and isinstance(data, Mapping) and data.get("status") == "failed":
        raise_failed(data)
    return [
        cut_off(call, _CUT) if status == "incomplete" else call
        for call, status in zip(calls, statuses, strict=True)
    ]


_CUT = "the response stopped at its output limit (status incomplete)"


def assistant_items(calls: Iterable[ToolCall], text: str | None = None) -> list[dict[str, object]]:
    """The model's turn as Responses input items: its text, then one ``function_call`` per call.

    Extend ``input`` with them, then with the :func:`tool_results`. With
    ``previous_response_id`` the server already has the turn: send only the
    results. A reasoning model run statelessly also needs its reasoning items
    back: take every item of the turn from ``response.output`` (or
    :meth:`ToolCallAccumulator.items` for a stream) instead.

    Args:
        calls: The calls, as ``parse_calls`` or :class:`ToolCallAccumulator` gave them.
        text: The text the model wrote with them, if any.
    """
    items: list[dict[str, object]] = []
    if text:
        items.append({"role": "assistant", "content": text})
    items += [
        {
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": arguments_text(call),
        }
        for call in checked_calls(calls, "openai_responses.assistant_items")
    ]
    return items


def tool_results(
    messages: Iterable[ToolMessage], *, max_attachment_bytes: int | None = ATTACHMENT_BYTES
) -> list[dict[str, object]]:
    """One ``function_call_output`` item per ``ToolMessage``, in order.

    The API has no error flag: an error's content is sent as it is (it
    already says what failed).

    A message with attachments (a result's ``ImageBlock`` and ``FileBlock``) gets
    list output: its text (``input_text``), then an ``input_image`` per PNG, JPEG,
    WebP or GIF image and an ``input_file`` per other file (PDFs, documents, text,
    spreadsheets: the API judges the type), each as a ``data:`` URL or by an
    ``http(s)`` URL. Audio, video and other image types are left out, as is data that
    is not what its media type says or more than ``max_attachment_bytes``, and a line
    of the text tells the model which attachment and why.

    Args:
        messages: The messages, such as ``dispatch(...).messages``.
        max_attachment_bytes: The most bytes of data one attachment may have (None:
            no limit; the default is 3,932,160, 5 MiB in base64).
    """
    items: list[dict[str, object]] = []
    for m in messages:
        text, sent = attach(m, _native, max_attachment_bytes)
        parts = [part for _, part in sent]
        output: object = text
        if parts:
            output = [{"type": "input_text", "text": text}, *parts] if text else parts
        items.append({"type": "function_call_output", "call_id": m.tool_call_id, "output": output})
    return items


def _native(attached: Attached) -> dict[str, object] | str:
    """An attachment as ``input_image`` or ``input_file`` content, or why the API cannot
    take it."""
    media, by_url = attached.media, attached.data is None
    if by_url and not web_url(attached):
        return "the Responses API takes an image or a file as data or by an http(s) URL"
    if media in OPENAI_IMAGES:
        url = attached.url if by_url else data_url(attached)
        return {"type": "input_image", "image_url": url}
    if media.startswith(("image/", "audio/", "video/")):
        return (
            "a function call output takes PNG, JPEG, WebP and GIF images and document files, "
            "no other images, audio or video"
        )
    name = attached.name or f"attachment-{attached.number}"
    if by_url:
        return {"type": "input_file", "file_url": attached.url, "filename": name}
    return {"type": "input_file", "filename": name, "file_data": data_url(attached)}
