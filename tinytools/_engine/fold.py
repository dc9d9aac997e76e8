"""Folding: what a call's execution produced → its message and completion event.

Pure and synchronous, shared by ``dispatch`` and ``dispatch_sync``. An outcome is
the tool's plain return value itself (no wrapper object is made for it) or one of
:class:`Failed`, :class:`Fatal` and :class:`Postponed`. For a plain value the
message is made directly: a ``str`` is the content, anything else its compact JSON
(with the value as structured output). ``after_tool`` hooks see that value wrapped
as ``wrap_return`` would wrap it (built once, from the text already made); when they
hand that same result back with nothing added, the message is the direct one.
Otherwise — a hook's new result, a returned ``ToolResult``, a failure — the result
is read back: artifacts are persisted, and content blocks become the text the model
reads. Folding cuts nothing: :func:`bounded` cuts every message of a batch to its
byte limit, the ones dispatch writes itself included, in one place.

A return value that cannot be answered (not JSON-encodable, holding NaN, a
malformed ``ToolResult``) is an error message for that call, never an abort; a
lone surrogate in returned text is written as its escape (``\\udc80``), in the
message and the follow-up, so every result encodes.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec

from tinytools._artifacts import ArtifactRef, ArtifactStore, ToolOutput, stored
from tinytools._middleware import After, HookFailed
from tinytools._text import json_text, printable
from tinytools._wire import (
    Artifact,
    ContentBlock,
    FileBlock,
    ImageBlock,
    JsonBlock,
    MessageStatus,
    TextBlock,
    ToolCall,
    ToolMessage,
    ToolResult,
    check_result,
    return_text,
    wrap_return,
)
from tinytools.events import Event, ToolCompleted, ToolFailed

from .outcome import Failed, Fatal, Postponed

if TYPE_CHECKING:
    from tinytools._declare.registry import AnyTool, Registry

    from .env import DispatchEnv
    from .result import DispatchResult

__all__ = [
    "Failed",
    "Fatal",
    "Folded",
    "Postponed",
    "bounded",
    "fold",
    "own_limits",
    "plain_message",
    "render",
    "stricter",
    "truncate",
]


#: One folded call: its message, its completion event, its follow-up and metadata.
Folded = tuple[ToolMessage, Event, tuple[ContentBlock, ...], "dict[str, object] | None"]

_NO_METADATA: dict[str, object] = {}
_encode = msgspec.json.encode


def _block_text(block: ContentBlock) -> str:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, JsonBlock):
        return json_text(block.value)  # never raises: a lone surrogate is escaped
    if isinstance(block, ImageBlock):
        where = f" {block.url}" if block.url else ""
        return f"[image {block.media_type}{where}]"
    assert isinstance(block, FileBlock)
    where = f" {block.uri}" if block.uri else ""
    return f"[file {block.name} ({block.media_type}){where}]"


def render(blocks: Sequence[ContentBlock]) -> str:
    """The text the model reads for ``blocks`` (one line break between blocks)."""
    if len(blocks) == 1 and type(blocks[0]) is TextBlock:
        return blocks[0].text
    return "\n".join(_block_text(b) for b in blocks)


def _escape_start(text: str) -> int | None:
    """Where an unfinished backslash escape at the end of ``text`` starts, if any."""
    start = len(text)
    while start > 0 and text[start - 1] == "\\":
        start -= 1
    run = len(text) - start
    if run % 2:
        return len(text) - 1  # a lone trailing backslash
    window = text[-6:]
    at = window.rfind("\\u")
    if at == -1:
        return None
    index = len(text) - len(window) + at
    preceding = index
    while preceding > 0 and text[preceding - 1] == "\\":
        preceding -= 1
    if (index - preceding) % 2 == 0 and len(text) - index < 6:
        return index
    return None


def truncate(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` UTF-8 bytes, marker included: never longer.

    Below about 45 bytes the full marker does not fit: a shorter one is used
    (``\\n[truncated]``, then ``…``), and below 3 bytes none. The cut falls
    on a character boundary and never inside a backslash escape (``\\"``,
    ``\\u00e9``), so JSON text stays readable; the marker says how much was kept.
    """
    if limit is None or len(text) * 4 <= limit:  # UTF-8 takes at most 4 bytes a character
        return text
    # A lone surrogate (a model's "\udc80" escape, decoded) must not make this raise.
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    marker = f"\n[truncated: {len(data)} bytes, showing the first {{}}]"
    if len(marker.format(limit)) > limit:  # a tiny limit: a short marker, or none at all
        marker = next((m for m in _SHORT_MARKERS if len(m.encode()) <= limit), "")
    keep = max(0, limit - len(marker.format(limit).encode()))
    kept = data[:keep].decode("utf-8", "ignore")
    cut = _escape_start(kept)
    if cut is not None:
        kept = kept[:cut]
    return kept + marker.format(len(kept.encode()))


#: Markers for limits too small for the full one, longest first (the limit is a limit:
#: below 3 bytes the content is only cut).
_SHORT_MARKERS = ("\n[truncated]", "…")


def stricter(a: int | None, b: int | None) -> int | None:
    """The stricter of two byte limits (None: no limit)."""
    return b if a is None else a if b is None else min(a, b)


def own_limits(tools: Registry) -> bool:
    """Whether any of ``tools`` declares its own byte limit (found once per registry, then
    kept on it: a batch among 10,000 tools does not walk them)."""
    try:
        return tools._limited
    except AttributeError:
        pass
    found = any(tool._plan.limit is not None for tool in tools.values())
    object.__setattr__(tools, "_limited", found)  # (a registry is frozen: its own memo)
    return found


def bounded(result: DispatchResult, tools: Registry, limit: int | None) -> DispatchResult:
    """``result`` with each message's content cut to its byte limit with a visible marker
    (:func:`truncate`): the run's ``limit``, or the registered tool's own where the
    message names one and it is stricter.

    The one place dispatch cuts what the model reads: a tool's result and what dispatch
    writes itself (a refusal quoting the schema, discovery's search results, an unknown
    name's suggestions, a denial, an interruption) alike, and each follow-up's text.
    """
    own = tools._tools
    messages = result.messages
    cut: list[ToolMessage] | None = None  # (copied only once a message is cut)
    for index, message in enumerate(messages):
        most = limit
        tool = own.get(message.name)
        if tool is not None and tool._plan.limit is not None:
            most = stricter(limit, tool._plan.limit)
        content = message.content
        if most is not None and len(content) * 4 > most:  # else it fits (see truncate)
            shown = truncate(content, most)
            if shown is not content:
                if cut is None:
                    cut = list(messages)
                cut[index] = msgspec.structs.replace(message, content=shown)
    if result.follow_ups:
        result = _follow_ups_bounded(result, own, limit)
    return result if cut is None else msgspec.structs.replace(result, messages=tuple(cut))


def _follow_ups_bounded(
    result: DispatchResult, own: Mapping[str, AnyTool], limit: int | None
) -> DispatchResult:
    """``result`` with each follow-up's text cut as its call's message is (to the limit
    of the tool the message names too): its text and JSON blocks, rendered as the model
    reads them, cut to the byte limit into one text block where the first of them stood.
    Image and file blocks are no text: the limit neither counts nor cuts them."""
    names = {message.tool_call_id: message.name for message in result.messages}
    follow_ups = list(result.follow_ups)
    cut = False
    for index, follow_up in enumerate(follow_ups):
        most = limit
        tool = own.get(names.get(follow_up.call_id, ""))
        if tool is not None and tool._plan.limit is not None:
            most = stricter(limit, tool._plan.limit)
        blocks = follow_up.content
        at = [i for i, block in enumerate(blocks) if isinstance(block, (TextBlock, JsonBlock))]
        text = render([blocks[i] for i in at])
        shown = truncate(text, most)
        if shown is not text:
            first, texts = at[0], set(at)
            content = tuple(
                TextBlock(shown) if i == first else block
                for i, block in enumerate(blocks)
                if i == first or i not in texts
            )
            follow_ups[index] = msgspec.structs.replace(follow_up, content=content)
            cut = True
    return msgspec.structs.replace(result, follow_ups=tuple(follow_ups)) if cut else result


def _persist(
    artifacts: tuple[Artifact, ...], store: ArtifactStore | None, run_id: str, call_id: str
) -> tuple[ArtifactRef | Artifact, ...]:
    if store is None:
        return artifacts
    return tuple(stored(store, run_id, call_id, a) for a in artifacts)


def fold(
    call: ToolCall,
    name: str,
    outcome: object,
    afters: tuple[After, ...],
    env: DispatchEnv,
    store: ArtifactStore | None,
) -> Folded:
    """Fold one call's outcome (not ``Postponed``) into its message and event.

    Args:
        call: The call answered (its id and, for hooks, the call itself).
        name: The name the message and event carry.
        outcome: The tool's return value, or ``Failed`` / ``Fatal``.
        afters: The ``after_tool`` hooks, already in the order they run.
        env: What the hooks receive as their third argument: the run's ``DispatchEnv`` (its
            ``context.run_id`` is read only when an artifact is persisted).
        store: Where artifacts are persisted, if anywhere.

    Raises:
        HookFailed: An ``after_tool`` hook raised (dispatch aborts).
    """
    kind = type(outcome)
    # (identity tests, not a set: hashing a returned value's type can raise)
    if kind is not Failed and kind is not Fatal and kind is not ToolResult:
        # A plain return value: its message made directly (no ToolResult unless a hook
        # sees it).
        if not afters:
            message = plain_message(call, name, outcome)
            if message is not None:
                return (
                    message,
                    ToolCompleted(call_id=call.id, tool_name=name, metadata={}),
                    (),
                    None,
                )
        else:  # the hooks see the value as wrap_return makes it
            structured = None
            text: str | None
            if issubclass(kind, str):  # (its type: a value posing as a str is not one)
                text = str.__str__(outcome)
            else:
                try:  # return_text, its common case written out (as plain_message does)
                    text = _encode(outcome).decode()
                    if "null" in text:  # a NaN or infinity may hide there
                        text = return_text(outcome)
                except (TypeError, ValueError, OverflowError, RecursionError):
                    text = None  # answered as the error it is, below (no hook sees it)
                structured = outcome  # None stays None: its text is "null"
            if text is not None:
                result = wrapped = ToolResult(content=(TextBlock(text),), structured=structured)
                for hook in afters:  # _after, written out (one frame fewer)
                    try:
                        result = hook(call, result, env)
                    except Exception as error:
                        raise HookFailed("after_tool", hook, error) from error
                if result is not wrapped or wrapped.metadata:
                    result = _hooks_result(afters, result, wrapped)
                    return _from_result(call, name, result, "ok", outcome, store, env)
                # Handed back untouched, with nothing added: the message plain_message
                # makes, written out from the text made above (one frame fewer).
                if structured is None:  # text, or None (no structured output)
                    content = text if text.isascii() else printable(text)
                    output = None
                else:
                    content = text  # JSON text that encoded holds no lone surrogate
                    output = ToolOutput(outcome, ())
                message = ToolMessage(
                    tool_call_id=call.id, name=name, content=content, artifact=output
                )
                completed = ToolCompleted(call_id=call.id, tool_name=name, metadata={})
                return message, completed, (), None
    if kind is Failed and not afters:
        # A failure no hook sees: its message and event directly (what ToolResult.error
        # would fold to: the text alone, an error, no structured output or metadata).
        said: str = outcome.message  # type: ignore[attr-defined]
        message = ToolMessage(
            tool_call_id=call.id,
            name=name,
            content=printable(said),
            is_error=True,
            status=outcome.status,  # type: ignore[attr-defined]
        )
        event = ToolFailed(
            call_id=call.id,
            tool_name=name,
            error_type=outcome.error_type,  # type: ignore[attr-defined]
            message=said,
            traceback=outcome.traceback,  # type: ignore[attr-defined]
        )
        return message, event, (), None
    if kind is Failed or kind is Fatal:
        result = ToolResult.error(outcome.message)  # type: ignore[attr-defined]
        status: MessageStatus = outcome.status if kind is Failed else "error"  # type: ignore[attr-defined]
    else:
        try:
            result = wrap_return(outcome)
        except (TypeError, ValueError) as error:
            failed = Failed(type(error).__name__, f"Tool `{name}` returned a bad value: {error}")
            return fold(call, name, failed, afters, env, store)
        status = "ok"
    if afters:
        result = _after(call, result, afters, env)
    return _from_result(call, name, result, status, outcome, store, env)


def plain_message(call: ToolCall, name: str, outcome: object) -> ToolMessage | None:
    """The message for a plain return value (not ``Failed``, ``Fatal``, ``Postponed`` or
    a ``ToolResult``) that no ``after_tool`` hook sees — the one place a value becomes
    its message: a ``str`` is the content, anything else its compact JSON (with the
    value as structured output). None when the value cannot be
    answered as it is (not JSON-encodable, NaN): :func:`fold` answers it as an error.

    ``Run.finish`` calls it directly for the common call (three arguments, no tuple);
    :func:`fold` writes it out for a value its hooks handed back untouched.
    """
    output = None
    if type(outcome) is str:
        content: str = outcome if outcome.isascii() else printable(outcome)
    elif issubclass(type(outcome), str):  # a str subclass (a str Enum): its string value
        # (by its type, not isinstance: an object whose __class__ says str is not one,
        # and str.__str__ would raise on it; the type test is also cheaper, as
        # isinstance looks __class__ up when the type is not a subclass)
        content = printable(str.__str__(outcome))
    else:
        # JSON text that encoded holds no lone surrogate: it is its own content.
        try:  # return_text, its common case written out (one frame fewer)
            content = _encode(outcome).decode()
            if "null" in content:  # a NaN or infinity may hide there (searching the str
                content = return_text(outcome)  # costs a third of bytes.find's call)
        except (TypeError, ValueError, OverflowError, RecursionError):
            return None  # wrap_return answers it as the error it is
        if outcome is not None:
            output = ToolOutput(outcome, ())
    return ToolMessage(tool_call_id=call.id, name=name, content=content, artifact=output)


def _after(
    call: ToolCall, result: ToolResult, afters: tuple[After, ...], env: DispatchEnv
) -> ToolResult:
    """``result`` through the ``after_tool`` hooks, in order.

    Raises:
        HookFailed: A hook raised, or the last one returned something else than a
            ``ToolResult``.
    """
    given = result
    for hook in afters:
        try:
            result = hook(call, result, env)
        except Exception as error:
            raise HookFailed("after_tool", hook, error) from error
    return _hooks_result(afters, result, given)


def _hooks_result(afters: tuple[After, ...], result: object, given: ToolResult) -> ToolResult:
    """What the hooks returned, checked as a tool's ``ToolResult`` is (every result must
    encode) unless it is the result they were given, untouched.

    Raises:
        HookFailed: The last hook's result is not a well-formed ``ToolResult``.
    """
    if type(result) is not ToolResult and not issubclass(type(result), ToolResult):
        # (by its type: a value whose __class__ says ToolResult is not one)
        error = TypeError(f"after_tool hooks return a ToolResult, got {type(result).__name__}")
        raise HookFailed("after_tool", afters[-1], error)
    if result is not given or result.metadata:
        try:
            check_result(result, "an after_tool hook")  # type: ignore[arg-type]
        except TypeError as error:
            raise HookFailed("after_tool", afters[-1], error) from error
    return result  # type: ignore[return-value]


def _from_result(
    call: ToolCall,
    name: str,
    result: ToolResult,
    status: MessageStatus,
    outcome: object,
    store: ArtifactStore | None,
    env: DispatchEnv,
) -> Folded:
    artifacts: tuple[ArtifactRef | Artifact, ...] = result.artifacts
    if artifacts and store is not None:
        artifacts = _persist(result.artifacts, store, env.context.run_id, call.id)
    output = None
    if result.structured is not None or artifacts:
        output = ToolOutput(result.structured, artifacts)
    final: MessageStatus = "error" if result.is_error and status == "ok" else status
    blocks = result.content  # render, its common case written out
    attached: tuple[ImageBlock | FileBlock, ...] = ()
    if len(blocks) == 1 and type(blocks[0]) is TextBlock:
        text = blocks[0].text
    else:
        text = render(blocks)
        attached = tuple(b for b in blocks if type(b) is ImageBlock or type(b) is FileBlock)
    if not text.isascii():
        text = printable(text)
    message = ToolMessage(
        tool_call_id=call.id,
        name=name,
        content=text,
        is_error=result.is_error or final != "ok",
        artifact=output,
        status=final,
        attachments=attached,
    )
    event: Event
    if isinstance(outcome, (Failed, Fatal)):
        event = ToolFailed(
            call_id=call.id,
            tool_name=name,
            error_type=outcome.error_type if isinstance(outcome, Failed) else "FatalToolError",
            message=outcome.message,
            traceback=outcome.traceback,
        )
    else:
        event = ToolCompleted(
            call_id=call.id, tool_name=name, is_error=message.is_error, metadata=result.metadata
        )
    follow_up = result.follow_up
    return message, event, follow_up and _escaped(follow_up), result.metadata or None


def _escaped(blocks: tuple[ContentBlock, ...]) -> tuple[ContentBlock, ...]:
    """A follow-up's blocks with each lone surrogate written as its escape, as the
    message's text has it (``printable``), so that every result encodes: a text block's,
    a JSON block's (then the text of its JSON), an image's or a file's own text fields."""
    shown = tuple(map(_escaped_block, blocks))
    return blocks if all(map(operator.is_, shown, blocks)) else shown


def _escaped_block(block: ContentBlock) -> ContentBlock:
    if isinstance(block, TextBlock):
        text = printable(block.text)
        return block if text is block.text else TextBlock(text)
    if isinstance(block, JsonBlock):
        try:
            _encode(block.value)
        except (TypeError, ValueError, OverflowError, RecursionError):
            return TextBlock(json_text(block.value))  # (escaped, as the message renders it)
        return block
    fields = (
        ("media_type", "url") if isinstance(block, ImageBlock) else ("name", "media_type", "uri")
    )
    changed = {}
    for field in fields:
        value = getattr(block, field)
        if value is not None and printable(value) is not value:
            changed[field] = printable(value)
    return msgspec.structs.replace(block, **changed) if changed else block
