"""Wire data: the calls a model makes and the results and messages we return.

Everything here is a :class:`msgspec.Struct`, so it encodes to and decodes
from JSON at msgspec speed and can cross process boundaries unchanged.

* :class:`ToolCall` — one call as a provider sent it.
* :class:`ToolResult` and its content blocks — what a tool may return for
  full control over what the model and the host see.
* :class:`ToolMessage` — the canonical transcript row answering one call.

:func:`wrap_return` turns whatever a tool returned into a :class:`ToolResult`.
"""

# No `from __future__ import annotations` here: msgspec resolves a Struct's
# annotations in the module named by `__module__`, which the facade rewrites
# to `tinytools`; real (evaluated) annotations keep decoding independent of it.

import inspect
import re
from collections.abc import Sequence
from typing import Literal, TypeAlias

import msgspec

__all__ = [
    "Artifact",
    "ContentBlock",
    "FileBlock",
    "ImageBlock",
    "JsonBlock",
    "MessageStatus",
    "TextBlock",
    "ToolCall",
    "ToolMessage",
    "ToolResult",
    "attachment_problem",
    "json_problem",
    "nonfinite",
    "plain_call",
    "plain_text",
    "return_text",
    "wrap_return",
]


class ToolCall(msgspec.Struct, frozen=True):
    """One tool call as a model emitted it.

    Attributes:
        id: The provider's call id; every answer to this call carries it
            verbatim, because the host matches answers to calls by it. That
            includes an id holding a lone surrogate (Python's ``json`` decodes a
            provider's ``"\\ud800"`` escape into one): it is the only text of a
            ``DispatchResult`` that is not escaped, so such a result encodes with
            ``json.dumps`` (which writes the escape back) but not with
            ``msgspec.json.encode``. Everything the model wrote elsewhere (names,
            arguments, previews) is escaped and always encodes. It must be a ``str``
            (a ``str`` subclass is read as the text it holds): dispatch refuses any
            other id with ``TypeError`` before anything runs.
        name: The tool name the model asked for (not yet checked); a ``str``, as
            the id is.
        arguments: The decoded arguments object, or the raw text exactly as
            the provider sent it (decoding, repair and validation happen at
            admission, never here).
        invalid: A provider's parse-failure reason, when it could not decode
            the arguments itself; the raw text is then kept in ``arguments``.
    """

    id: str
    name: str
    arguments: dict[str, object] | str
    invalid: str | None = None


def plain_call(call: ToolCall) -> ToolCall:
    """``call``, with raw arguments of a ``str`` subclass (an SDK's own string type) as
    the plain text they hold: msgspec neither decodes nor encodes a subclass, so such a
    call could be neither validated nor carried by a result's events or deferrals."""
    text = call.arguments
    if type(text) is str or not issubclass(type(text), str):
        return call
    return msgspec.structs.replace(call, arguments=str.__str__(text))


# --- content blocks ---------------------------------------------------------


class TextBlock(msgspec.Struct, frozen=True, tag="text"):
    """Plain text for the model.

    Attributes:
        text: The text.
    """

    text: str


class JsonBlock(msgspec.Struct, frozen=True, tag="json"):
    """A JSON value for the model, rendered as compact JSON text.

    Attributes:
        value: Any value msgspec encodes as JSON.
    """

    value: object


class ImageBlock(msgspec.Struct, frozen=True, tag="image"):
    """An image, inline (``data``) or by reference (``url``).

    A result is refused when ``media_type`` is no ``image/...`` type, or when the
    block has neither data nor a url. The image reaches the model where its
    provider takes one (see ``ToolMessage.attachments``).

    Attributes:
        media_type: The image's type: ``image/png``, ``image/jpeg``, ...
        data: The image's bytes.
        url: Where the image is, when it is not inline.
    """

    media_type: str
    data: bytes | None = None
    url: str | None = None


class FileBlock(msgspec.Struct, frozen=True, tag="file"):
    """A file, inline (``data``) or by reference (``uri``).

    A result is refused when the block has neither, or a ``media_type`` that is no
    ``type/subtype``.

    Attributes:
        name: The file's name.
        media_type: The file's type, ``type/subtype``.
        data: The file's bytes.
        uri: Where the file is; with ``data`` too, where the data came from (an MCP
            resource).
    """

    name: str
    media_type: str = "application/octet-stream"
    data: bytes | None = None
    uri: str | None = None


#: One piece of a tool's output, tagged on ``type``.
ContentBlock: TypeAlias = TextBlock | JsonBlock | ImageBlock | FileBlock


class Artifact(msgspec.Struct, frozen=True, tag="artifact"):
    """A host-side output of a tool (a file, a report) kept out of the model's text.

    An artifact store persists ``data`` and the transcript keeps a reference.

    Attributes:
        name: The artifact's name (a file name).
        data: Its bytes.
        media_type: Its type, ``type/subtype``.
    """

    name: str
    data: bytes
    media_type: str = "application/octet-stream"


def plain_text(value: object) -> str | None:
    """``value`` as a plain ``str`` (a subclass's text), or None when it is no text."""
    if type(value) is str:
        return value
    if issubclass(type(value), str):
        return str.__str__(value)
    return None


def _text(text: str) -> str:
    """``text`` as a plain ``str``: a subclass (a str Enum, an SDK's string type) as the
    text it holds, which msgspec can encode."""
    return text if type(text) is str or not issubclass(type(text), str) else str.__str__(text)


def _blocks(
    content: str | ContentBlock | Sequence[ContentBlock] | None,
) -> tuple[ContentBlock, ...]:
    if content is None:
        return ()
    if isinstance(content, str):
        return (TextBlock(_text(content)),)
    if isinstance(content, (TextBlock, JsonBlock, ImageBlock, FileBlock)):
        return (content,)
    return tuple(content)


class ToolResult(msgspec.Struct, frozen=True, kw_only=True):
    """What a tool may return for full control over its answer.

    A final class: dispatch tells a returned result by its type, so defining a subclass
    raises ``TypeError`` (put host-only data in ``metadata``).

    Attributes:
        content: Blocks the model reads, in order.
        structured: A JSON value for the host (and for providers that accept
            structured tool output); ``None`` when there is none.
        artifacts: Host-side outputs, persisted by an artifact store.
        follow_up: Content the model sees as a later user message, after the
            batch's last tool message.
        metadata: Host-only data; never rendered to the model.
        is_error: True when the content describes a failure.
    """

    content: tuple[ContentBlock, ...] = ()
    structured: object = None
    artifacts: tuple[Artifact, ...] = ()
    follow_up: tuple[ContentBlock, ...] = ()
    metadata: dict[str, object] = msgspec.field(default_factory=dict)
    is_error: bool = False

    def __init_subclass__(cls, **options: object) -> None:
        # dispatch tells a tool's ToolResult by its type (an identity test on the hot
        # path), so a subclass's instance would be answered as a plain value's JSON.
        raise TypeError(
            "ToolResult cannot be subclassed: return a ToolResult itself (ToolResult.success"
            "(...) or ToolResult.error(...)) and put host-only data in its metadata"
        )

    @classmethod
    def success(
        cls,
        content: str | ContentBlock | Sequence[ContentBlock] | None = None,
        *,
        structured: object = None,
        artifacts: Sequence[Artifact] = (),
        follow_up: str | ContentBlock | Sequence[ContentBlock] | None = None,
        metadata: dict[str, object] | None = None,
    ) -> "ToolResult":
        """A successful result; a plain string becomes one text block."""
        return cls(
            content=_blocks(content),
            structured=structured,
            artifacts=tuple(artifacts),
            follow_up=_blocks(follow_up),
            metadata=dict(metadata or {}),
        )

    @classmethod
    def error(
        cls,
        message: str,
        *,
        structured: object = None,
        metadata: dict[str, object] | None = None,
    ) -> "ToolResult":
        """A failed result whose message the model reads (say what to change)."""
        return cls(
            content=(TextBlock(_text(message)),),
            structured=structured,
            metadata=dict(metadata or {}),
            is_error=True,
        )


#: How a call ended, as the transcript records it.
MessageStatus: TypeAlias = Literal["ok", "error", "denied", "interrupted"]


class ToolMessage(msgspec.Struct, frozen=True, kw_only=True):
    """The canonical transcript row answering one tool call.

    Attributes:
        tool_call_id: The id of the call this answers.
        name: The tool's canonical name (or the requested name, for an
            unknown tool).
        content: The text the model reads.
        is_error: True when the model should treat the content as an error.
        artifact: Host-side structured output or artifact references; never
            rendered to the model.
        status: How the call ended.
        attachments: The result's images and files, in order, which each provider
            module's ``tool_results`` sends in that provider's own form (the
            content names each where it stood: ``[image image/png]``). Not cut
            by ``max_result_bytes``, which bounds the content's text.
    """

    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    artifact: object = None
    status: MessageStatus = "ok"
    attachments: tuple[ImageBlock | FileBlock, ...] = ()


_encode = msgspec.json.encode


def nonfinite(value: object) -> str | None:
    """Where a NaN or infinity sits in a plain JSON-like value (``$.a[0]``), if anywhere."""
    stack: list[tuple[object, str]] = [(value, "$")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float):
            if item - item != 0:
                return path
        elif isinstance(item, dict):
            stack.extend((v, f"{path}.{k}") for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(item))
    return None


def json_problem(value: object) -> str | None:
    """Why a result could not carry ``value`` as JSON, or None: msgspec cannot encode it,
    or it holds a NaN or an infinity (which an encoder silently writes as ``null``)."""
    try:
        encoded = _encode(value)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if encoded.find(b"null") >= 0:
        where = nonfinite(msgspec.to_builtins(value))
        if where is not None:
            return f"it holds NaN or an infinity at `{where}`"
    return None


_BLOCKS = (TextBlock, JsonBlock, ImageBlock, FileBlock)
#: The parts of a ToolResult whose own fields msgspec checks (it does not at init).
_PARTS = tuple[tuple[ContentBlock, ...], tuple[ContentBlock, ...], tuple[Artifact, ...]]
_RAW_BYTES = (bytes, bytearray, memoryview)


def _shown(value: object) -> str:
    """``value``'s repr, cut to 80 characters, or its type's name where that repr raises
    (the value is a tool's: anything may be in it)."""
    try:
        return f"{value!r:.80}"
    except Exception:
        return f"a {type(value).__qualname__}"


def check_result(result: ToolResult, source: str = "tool") -> None:
    """Refuse a ToolResult built with the wrong shapes (msgspec does not check at init).

    Every part is told by its type, not ``isinstance`` (a value whose ``__class__``
    says ``TextBlock`` is no block), and the blocks' and artifacts' own fields are
    checked too (``TextBlock(5)``): a malformed result is its call's error, never the
    batch's.

    Raises:
        TypeError: Saying which field is wrong and how to build it; ``source`` names
            what returned the result (a tool, an after_tool hook).
    """
    for field in ("content", "follow_up"):
        blocks = getattr(result, field)
        if (type(blocks) is not tuple and type(blocks) is not list) or not all(
            issubclass(type(b), _BLOCKS) for b in blocks
        ):
            raise TypeError(
                f"{source} returned a ToolResult whose `{field}` is {_shown(blocks)}, not a "
                "tuple of content blocks; build it with ToolResult.success(text) or "
                "ToolResult.error(text), or pass content=(TextBlock(...), ...)"
            )
    artifacts: object = result.artifacts
    if (type(artifacts) is not tuple and type(artifacts) is not list) or not all(
        issubclass(type(a), Artifact) for a in artifacts
    ):
        raise TypeError(
            f"{source} returned a ToolResult whose `artifacts` is {_shown(artifacts)}, not a "
            "tuple of Artifact; pass artifacts=(Artifact(name, data), ...)"
        )
    if type(result.metadata) is not dict or type(result.is_error) is not bool:
        raise TypeError(
            f"{source} returned a ToolResult whose `metadata` is not a dict or whose `is_error` is "
            "not a bool; pass metadata={...} and is_error=True/False"
        )
    for field in ("structured", "metadata"):  # both reach the result, which must encode
        try:
            encoded = _encode(getattr(result, field))
        except (TypeError, ValueError, OverflowError, RecursionError) as exc:
            raise TypeError(
                f"{source} returned a ToolResult whose `{field}` cannot be encoded as JSON "
                f"({type(exc).__name__}: {exc}); pass JSON-encodable values only"
            ) from None
        if encoded.find(b"null") >= 0:  # NaN and infinities encode as null
            _refusenonfinite(source, field, msgspec.to_builtins(getattr(result, field)))
    try:  # the blocks' and artifacts' own fields (bytes kept as they are)
        parts = msgspec.to_builtins(
            (result.content, result.follow_up, artifacts), builtin_types=_RAW_BYTES
        )
        msgspec.convert(parts, _PARTS)
    except (msgspec.ValidationError, TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise TypeError(
            f"{source} returned a ToolResult with a malformed block or artifact ({exc}); build "
            "them as TextBlock(text), JsonBlock(value), ImageBlock(media_type, data=bytes), "
            "FileBlock(name, data=bytes) and Artifact(name, data=bytes)"
        ) from None
    _refusenonfinite(source, "content", parts[0])  # a JsonBlock's value, read as null
    _refusenonfinite(source, "follow_up", parts[1])
    for field in ("content", "follow_up"):
        for index, block in enumerate(getattr(result, field)):
            if type(block) is ImageBlock or type(block) is FileBlock:
                problem = attachment_problem(block)
                if problem is not None:
                    raise TypeError(
                        f"{source} returned a ToolResult whose `{field}[{index}]` "
                        f"({type(block).__name__}) {problem}"
                    )


#: A media type: ``type/subtype`` (RFC 6838 names), then any parameters (``; charset=…``).
_MEDIA_TYPE = re.compile(
    r"[A-Za-z0-9][\w!#$&^.+-]{0,126}/[A-Za-z0-9][\w!#$&^.+-]{0,126}(?:\s*;[ -~]*)?", re.ASCII
)


def attachment_problem(block: "ImageBlock | FileBlock") -> str | None:
    """What keeps an image or file block (its fields already of the right types) from
    reaching a model, said so that its author knows what to change; None when nothing."""
    media = block.media_type
    if not _MEDIA_TYPE.fullmatch(media):
        return (
            f"has the media_type {media!r:.80}, which is no media type; give type/subtype, "
            "such as image/png or application/pdf"
        )
    if isinstance(block, ImageBlock):
        if media[:6].lower() != "image/":
            return (
                f"has the media_type {media!r:.80}, which is no image type; give image/png, "
                "image/jpeg, ..., or return the data as a FileBlock"
            )
        if block.data is None and not block.url:
            return "has neither data nor a url; pass ImageBlock(media_type, data=bytes) or url=..."
    elif block.data is None and not block.uri:
        return "has neither data nor a uri; pass FileBlock(name, media_type, data=bytes) or uri=..."
    return None


def _refusenonfinite(source: str, field: str, value: object) -> None:
    """Refuse a NaN or infinity in a ToolResult's ``field`` (its plain ``value``): JSON
    has none, and an encoder writes ``null`` for them, silently changing the answer.

    Raises:
        TypeError: Saying where it is and what to return instead.
    """
    where = nonfinite(value)
    if where is not None:
        raise TypeError(
            f"{source} returned a ToolResult whose `{field}` holds NaN or an infinity at "
            f"`{where}`, which JSON cannot carry; return finite numbers (or None, or a "
            'string such as "NaN")'
        )


def wrap_return(value: object) -> ToolResult:
    """Wrap a tool's plain return value as a :class:`ToolResult`.

    A :class:`ToolResult` is kept as it is (once its fields are checked); a ``str``
    becomes one text block; any other value msgspec can encode (numbers, ``None``,
    lists, dicts, dataclasses, attrs classes, Structs, …) becomes its compact JSON
    text plus ``structured``.

    JSON has no NaN or infinity (an encoder writes ``null`` for them, silently
    changing the answer), so a value holding one is refused.

    Raises:
        TypeError: The value cannot be encoded as JSON, or is a ToolResult built
            with the wrong shapes; return a string, a JSON-encodable value or a
            well-formed :class:`ToolResult` instead.
        ValueError: The value holds a NaN or an infinity; return finite numbers
            (or ``None``, or a string such as ``"NaN"``).
    """
    if issubclass(type(value), ToolResult):  # (its type: a value posing as one is not)
        check_result(value)  # type: ignore[arg-type]
        return value  # type: ignore[return-value]
    if issubclass(type(value), str):  # a str subclass (a str Enum): its string value
        # (by its type: a value whose __class__ says str is not one)
        return ToolResult(content=(TextBlock(str.__str__(value)),))
    return ToolResult(content=(TextBlock(return_text(value)),), structured=value)


def return_text(value: object) -> str:
    """The compact JSON text the model reads for a tool's plain, non-``str`` return value.

    JSON has no NaN or infinity (an encoder writes ``null`` for them, silently
    changing the answer), so a value holding one is refused.

    Raises:
        TypeError: The value cannot be encoded as JSON; return a string, a
            JSON-encodable value or a :class:`ToolResult` instead.
        ValueError: The value holds a NaN or an infinity.
    """
    try:
        encoded = _encode(value)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        if inspect.isawaitable(value):  # a wrapper hid an async function's mark
            if inspect.iscoroutine(value):
                value.close()  # never awaited: closed, not left to warn
            raise TypeError(
                f"tool returned an awaitable (`{type(value).__qualname__}`), which dispatch "
                "does not await: the tool reads as synchronous; declare it `async def` (a "
                "wrapper of an async function keeps functools.wraps(fn))"
            ) from None
        raise TypeError(
            f"tool returned a value of type `{type(value).__qualname__}`, which cannot be "
            f"encoded as JSON ({exc}); return a str, a JSON-encodable value or a ToolResult"
        ) from None
    if encoded.find(b"null") >= 0:  # NaN and infinities encode as null (`in` costs more)
        where = nonfinite(msgspec.to_builtins(value))
        if where is not None:
            raise ValueError(
                f"tool returned a value holding NaN or an infinity at `{where}`, which JSON "
                'cannot carry; return finite numbers (or None, or a string such as "NaN")'
            )
    return encoded.decode()
