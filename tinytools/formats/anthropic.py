"""Anthropic Messages API: tools in, ``tool_use`` blocks out, ``tool_result`` blocks back.

* :func:`declarations` — ``tools=[{"name", "description", "input_schema"}]``;
  the schema goes as it is (Anthropic takes full JSON Schema).
* :func:`parse_calls` — the ``tool_use`` blocks of a message's ``content``.
  ``input`` arrives decoded; one that is not an object fails closed: the call
  keeps it as JSON text, with ``invalid`` saying why. Server-side tool blocks
  (``server_tool_use``, ``mcp_tool_use``) are run by Anthropic and skipped.
* :func:`assistant_message` — the assistant turn holding the calls as
  ``tool_use`` blocks (for a streamed turn, see :class:`ToolCallAccumulator`).
* :func:`tool_results` — Anthropic wants every result of a turn in *one*
  user message, so the list has one message (or none, for no results):
  ``[{"role": "user", "content": [{"type": "tool_result", "tool_use_id",
  "content", "is_error"}, ...]}]``. Add any text for the model after the
  results, in the same message's ``content``. A result's images and PDF or
  plain-text files go in its ``tool_result`` as ``image`` and ``document``
  blocks after its text.

A message may be the SDK's ``Message`` or a plain dict, or just its
``content`` list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from tinytools._inject import Context
from tinytools._text import printable
from tinytools._wire import ToolCall, ToolMessage

from ._anthropic_stream import ToolCallAccumulator
from ._attachments import ATTACHMENT_BYTES, Attached, attach, encoded, web_url
from ._providers import (
    Tools,
    as_data,
    copy_schema,
    cut_off,
    exposed_tools,
    typed_calls,
)
from ._received import received, refuse_stream_event
from ._turns import arguments_object, checked_calls

__all__ = [
    "STREAM_EVENTS",
    "ToolCallAccumulator",
    "assistant_message",
    "declarations",
    "parse_calls",
    "tool_results",
]


def declarations(tools: Tools, *, context: Context | None = None) -> list[dict[str, object]]:
    """The ``tools`` list of a Messages request (new dicts; only ``Direct`` tools: hidden
    and deferred ones are skipped). A toolset is resolved with ``context``."""
    return [
        {
            "name": t.name,
            "description": printable(t.description),  # a lone surrogate: its escape
            "input_schema": copy_schema(t.parameters),
        }
        for t in exposed_tools(tools, context)
    ]


def parse_calls(response: object) -> list[ToolCall]:
    """The ``tool_use`` blocks of a message, in order.

    A message that stopped at ``max_tokens`` while writing a ``tool_use`` block
    holds an input that may be incomplete: that call is marked ``invalid`` and
    answered with the reason, never run.

    Args:
        response: A ``Message`` (SDK object or dict) or its ``content`` list.

    Raises:
        TypeError: ``response`` is text, a stream or one stream event (feed
            events to :class:`ToolCallAccumulator`).
        ValueError: ``response`` has no ``content`` list.
    """
    data = received(
        response,
        module="anthropic",
        expects="a Message or its content list",
        accumulator="ToolCallAccumulator",
    )
    refuse_stream_event(
        data,
        module="anthropic",
        kinds=STREAM_EVENTS,
        what="feed every event of `client.messages.create(..., stream=True)` to "
        "ToolCallAccumulator().add(event)",
    )
    calls = typed_calls(
        data,
        list_key="content",
        what="an Anthropic message",
        kind="tool_use",
        id_key="id",
        arguments_key="input",
    )
    if isinstance(data, Mapping) and data.get("stop_reason") == "max_tokens" and calls:
        blocks = data.get("content")
        last = as_data(blocks[-1]) if isinstance(blocks, list) and blocks else None
        if isinstance(last, Mapping) and last.get("type") == "tool_use":
            calls[-1] = cut_off(calls[-1], _CUT)
    return calls


_CUT = "the response reached max_tokens"
#: The ``type`` of the events of a Messages stream.
STREAM_EVENTS: Final = (
    *("message_start", "message_delta", "message_stop", "ping", "error"),
    *("content_block_start", "content_block_delta", "content_block_stop"),
)


def assistant_message(calls: Iterable[ToolCall], text: str | None = None) -> dict[str, object]:
    """The assistant message that made ``calls``: its text, then one ``tool_use`` block per call.

    Append it, then the :func:`tool_results` message. ``input`` must be an
    object: a call whose raw text is not a JSON object is written with ``{}``
    (its error result tells the model what was wrong). With extended thinking,
    Anthropic needs the turn's thinking blocks back too: append the SDK's
    message (or :meth:`ToolCallAccumulator.message` for a stream) instead.

    Args:
        calls: The calls, as ``parse_calls`` or :class:`ToolCallAccumulator` gave them.
        text: The text the model wrote before them, if any.
    """
    blocks: list[object] = [{"type": "text", "text": text}] if text else []
    blocks += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments_object(call)}
        for call in checked_calls(calls, "anthropic.assistant_message")
    ]
    return {"role": "assistant", "content": blocks}


def tool_results(
    messages: Iterable[ToolMessage], *, max_attachment_bytes: int | None = ATTACHMENT_BYTES
) -> list[dict[str, object]]:
    """Every ``ToolMessage`` as a ``tool_result`` block of one user message.

    A message with attachments (a result's ``ImageBlock`` and ``FileBlock``) gets
    list content: its text, then an ``image`` block per JPEG, PNG, GIF or WebP image
    and a ``document`` block per PDF or plain-text (UTF-8) file, as data (base64) or
    by an ``http(s)`` URL (images and PDFs). Anything else — another type, data that
    is not what its media type says, more than ``max_attachment_bytes`` — is left
    out, and a line of the text tells the model which attachment and why.

    Args:
        messages: The messages, such as ``dispatch(...).messages``.
        max_attachment_bytes: The most bytes of data one attachment may have (None:
            no limit). The default, 3,932,160, is 5 MiB in base64: the most Anthropic
            takes for one image.

    Returns:
        ``[]`` when there are no messages, else a list of one message dict.
    """
    blocks: list[object] = []
    for m in messages:
        text, sent = attach(m, _native, max_attachment_bytes)
        parts = [part for _, part in sent]
        content: object = text
        if parts:
            content = [{"type": "text", "text": text}, *parts] if text else parts
        blocks.append(
            {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id,
                "content": content,
                "is_error": m.is_error,
            }
        )
    return [{"role": "user", "content": blocks}] if blocks else []


#: The image types Anthropic takes.
_IMAGES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def _native(attached: Attached) -> dict[str, object] | str:
    """An attachment as an ``image`` or ``document`` block, or why Anthropic cannot take it."""
    media, data = attached.media, attached.data
    if media in _IMAGES or media == "application/pdf":
        source: dict[str, object]
        if data is not None:
            source = {"type": "base64", "media_type": media, "data": encoded(attached)}
        elif web_url(attached):
            source = {"type": "url", "url": attached.url}
        else:
            return "Anthropic takes an image or a PDF as data or by an http(s) URL"
        if media in _IMAGES:
            return {"type": "image", "source": source}
        return _document(source, attached.name)
    if media == "text/plain":
        if data is None:
            return "Anthropic takes a text document as data, not by URL"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return "its data is no UTF-8 text"
        return _document({"type": "text", "media_type": media, "data": text}, attached.name)
    return "Anthropic takes JPEG, PNG, GIF and WebP images, PDF and plain-text documents"


def _document(source: dict[str, object], title: str) -> dict[str, object]:
    block: dict[str, object] = {"type": "document", "source": source}
    if title:
        block["title"] = title
    return block
