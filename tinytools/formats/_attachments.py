"""The images and files of tool results, read once for every provider module.

A ``ToolMessage`` carries its result's images and files in ``attachments``; its
content names each where it stood (``[image image/png]``). Each provider
module's ``tool_results`` hands :func:`attach` a function that writes one
attachment in the provider's own form, or says why the provider cannot take it.
:func:`attach` reads the attachments defensively (a message may be built by
hand, with anything in it), refuses what no provider could use — no data, data
that is not what its media type says, more than ``max_attachment_bytes`` — and
returns the parts to send with the text the model reads, which gets one line for
each attachment left out, saying why: never a silent drop, and never a request
the provider refuses whole (which would fail every later turn of the
conversation too).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Final, Literal, NamedTuple

from tinytools._text import printable
from tinytools._wire import FileBlock, ImageBlock, ToolMessage, attachment_problem

__all__ = [
    "ATTACHMENT_BYTES",
    "OPENAI_IMAGES",
    "Attached",
    "Sent",
    "attach",
    "data_url",
    "encoded",
    "web_url",
]

#: The default ``max_attachment_bytes``: 3.75 MiB of data, whose base64 text is the 5 MiB
#: Anthropic takes for one image (the strictest of the providers' per-item limits).
ATTACHMENT_BYTES: Final = 3_932_160

#: The image types both OpenAI APIs take (a GIF only when it is not animated).
OPENAI_IMAGES: Final = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})


class Attached(NamedTuple):
    """One attachment, checked and read: what a provider module writes."""

    number: int  #: its place among the message's attachments, from 1
    kind: Literal["image", "file"]
    media: str  #: ``type/subtype`` in lower case, without parameters
    name: str  #: a file's name (escaped); ``""`` for an image
    data: bytes | None
    url: str | None  #: an image's ``url`` or a file's ``uri`` (escaped)


#: What a provider module gives for one attachment: the part to send, or why it cannot.
Native = Callable[[Attached], "dict[str, object] | str"]

#: The first bytes of the formats whose data is checked against its media type.
_SIGNATURES: Final = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "application/pdf": (b"%PDF-",),
}
_NAMES: Final = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/gif": "GIF",
    "image/webp": "WebP",
    "application/pdf": "PDF",
}


#: The attachments sent, each with the part it became.
Sent = list[tuple[Attached, "dict[str, object]"]]


def attach(message: ToolMessage, native: Native, limit: int | None) -> tuple[str, Sent]:
    """The text the model reads for ``message`` and the parts its attachments become.

    Args:
        message: The message (its ``attachments`` may hold anything).
        native: Writes one checked attachment in the provider's form, or returns why
            the provider cannot take it.
        limit: The most bytes of data one attachment may have (None: no limit).

    Returns:
        ``message.content``, with a line for each attachment left out (its number,
        its media type and why), and the attachments sent with their parts, in order.
    """
    found = message.attachments
    if not found:
        return message.content, []
    notes: list[str] = []
    sent: Sent = []
    for number, block in enumerate(_items(found), start=1):
        read = _read(number, block, limit)
        part = native(read) if isinstance(read, Attached) else read
        if isinstance(part, str):
            notes.append(f"[attachment {number}{_media_of(block)} not sent: {part}]")
        else:
            assert isinstance(read, Attached)
            sent.append((read, part))
    return "\n".join([message.content, *notes]) if notes else message.content, sent


def _items(found: object) -> tuple[object, ...]:
    """The attachments as a tuple (a message built by hand may hold one block, or a list)."""
    if isinstance(found, (tuple, list)):
        return tuple(found)
    return (found,)


def _media_of(block: object) -> str:
    """`` (its media type)`` for a note, when it is printable ASCII (no line break in it
    can start a line of its own)."""
    media = getattr(block, "media_type", None)
    if isinstance(media, str) and media.isascii() and media.isprintable():
        return f" ({media[:80]})"
    return ""


def _read(number: int, block: object, limit: int | None) -> Attached | str:
    """``block`` checked and read, or why it cannot be sent to any provider."""
    kind = type(block)
    if kind is not ImageBlock and kind is not FileBlock:
        return f"it is a {kind.__name__}, not an ImageBlock or a FileBlock"
    assert isinstance(block, (ImageBlock, FileBlock))
    # (read as values of any type: msgspec checks no field of a Struct built by hand)
    url: object = block.url if isinstance(block, ImageBlock) else block.uri
    name: object = "" if isinstance(block, ImageBlock) else block.name
    media: object = block.media_type
    if type(media) is not str or type(name) is not str:
        return "its media_type or name is no text"
    if url is not None and type(url) is not str:
        return "its url is no text"
    problem = attachment_problem(block)
    if problem is not None:
        return f"it {problem}"
    data = _bytes(block.data)
    if isinstance(data, str):
        return data
    media = media.partition(";")[0].strip().lower()
    media = "image/jpeg" if media == "image/jpg" else media  # (a common misspelling)
    if data is not None:
        if not data:
            return "its data is empty"
        if limit is not None and len(data) > limit:
            return (
                f"its data has {len(data):,} bytes, over the {limit:,}-byte limit for one "
                "attachment (max_attachment_bytes)"
            )
        if not _looks_like(media, data):
            return f"its data is no {_NAMES[media]} file, as its media type says"
    return Attached(
        number,
        "image" if isinstance(block, ImageBlock) else "file",
        media,
        printable(name),
        data,
        None if url is None else printable(url),
    )


def _bytes(data: object) -> bytes | str | None:
    """``data`` as bytes (None for none), or why it is not data."""
    if data is None:
        return None
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            return memoryview(data).tobytes()
        except (TypeError, ValueError) as error:
            return f"its data cannot be read as bytes ({error})"
    if isinstance(data, str):  # msgspec takes base64 text for a bytes field
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return "its data is text that is not base64"
    return f"its data is a {type(data).__name__}, not bytes"


def _looks_like(media: str, data: bytes) -> bool:
    """Whether ``data`` starts as its media type says, where the type is one checked (a
    provider refuses a whole request holding an image that is not what it says)."""
    if media == "image/webp":
        return data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    signatures = _SIGNATURES.get(media)
    return signatures is None or data.startswith(signatures)


def encoded(attached: Attached) -> str:
    """The attachment's data as base64 text."""
    assert attached.data is not None
    return base64.b64encode(attached.data).decode("ascii")


def data_url(attached: Attached) -> str:
    """The attachment's data as a ``data:`` URL (its media type without parameters)."""
    return f"data:{attached.media};base64,{encoded(attached)}"


def web_url(attached: Attached) -> bool:
    """Whether the attachment is a reference to an ``http(s)`` URL."""
    url = attached.url
    return url is not None and url[:8].lower().startswith(("https://", "http://"))
