"""Folding: what a call's execution produced → its message, events and extras.

Pure and synchronous, shared by ``dispatch`` and ``dispatch_sync``. For each
executed call: after-middleware rewrites the result, artifacts are persisted
(when a store is given), content blocks become the text the model reads, cut
to the byte limit with a visible marker, and the completion event is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

import msgspec

from ._admit import Admitted, Resolved
from ._artifacts import ArtifactRef, ArtifactStore, ToolOutput
from ._dispatch_env import DispatchEnv
from ._middleware import HookFailed, Stack
from ._wire import (
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
)
from .events import Event, ToolCompleted, ToolDeferred, ToolFailed

__all__ = [
    "Failed",
    "Fatal",
    "Folded",
    "Outcome",
    "Postponed",
    "Ran",
    "fold",
    "fold_resolved",
    "render",
    "truncate",
]


class Ran(msgspec.Struct, frozen=True):
    """The tool returned (its value already wrapped as a ``ToolResult``)."""

    result: ToolResult


class Failed(msgspec.Struct, frozen=True):
    """The tool raised, timed out or was interrupted; ``message`` is for the model."""

    error_type: str
    message: str
    traceback: str | None = None
    status: MessageStatus = "error"


class Fatal(msgspec.Struct, frozen=True):
    """The tool raised ``FatalToolError``: the batch is aborted."""

    message: str
    traceback: str | None = None


class Postponed(msgspec.Struct, frozen=True):
    """The tool raised ``ApprovalRequired`` or ``CallDeferred``."""

    kind: Literal["approval", "deferred"]
    metadata: dict[str, object]


Outcome: TypeAlias = "Ran | Failed | Fatal | Postponed"


class Folded(msgspec.Struct, frozen=True):
    """One executed call, folded: its message (none when postponed) and extras."""

    message: ToolMessage | None
    events: tuple[Event, ...]
    follow_up: tuple[ContentBlock, ...] = ()
    metadata: dict[str, object] | None = None
    postponed: Postponed | None = None


def _block_text(block: ContentBlock) -> str:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, JsonBlock):
        return msgspec.json.encode(block.value).decode()
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


def _persist(
    artifacts: tuple[Artifact, ...], store: ArtifactStore | None, run_id: str, call_id: str
) -> tuple[ArtifactRef | Artifact, ...]:
    if store is None:
        return artifacts
    return tuple(store.put(run_id, call_id, a) for a in artifacts)


def fold(
    item: Admitted,
    outcome: Outcome,
    env: DispatchEnv,
    stack: Stack,
    store: ArtifactStore | None,
) -> Folded:
    """Fold one executed call's outcome into its message and events.

    Raises:
        Exception: Whatever an ``after_tool`` hook raised (dispatch aborts).
    """
    limit = item.tool.policy.runtime.max_result_bytes or env.policy.max_result_bytes
    return _fold(item.call, item.tool.name, limit, outcome, env, stack, store)


def fold_resolved(
    resolved: Resolved, env: DispatchEnv, stack: Stack, store: ArtifactStore | None
) -> Folded:
    """Fold a denied or host-answered call (on resume) like any other answer."""
    tool = env.tools.get(resolved.call.name)
    limit = (tool.policy.runtime.max_result_bytes if tool else None) or env.policy.max_result_bytes
    name = tool.name if tool else resolved.call.name
    outcome = Ran(resolved.result)
    folded = _fold(resolved.call, name, limit, outcome, env, stack, store)
    if resolved.status == "denied" and folded.message is not None:
        message = msgspec.structs.replace(folded.message, status="denied", is_error=True)
        return msgspec.structs.replace(folded, message=message)
    return folded


def _fold(
    call: ToolCall,
    name: str,
    limit: int | None,
    outcome: Outcome,
    env: DispatchEnv,
    stack: Stack,
    store: ArtifactStore | None,
) -> Folded:
    if isinstance(outcome, Postponed):
        deferred = ToolDeferred(
            call_id=call.id, tool_name=name, reason=outcome.kind, metadata=outcome.metadata
        )
        return Folded(None, (deferred,), postponed=outcome)
    if isinstance(outcome, Ran):
        result, status = outcome.result, "ok"
    else:
        result = ToolResult.error(outcome.message)
        status = outcome.status if isinstance(outcome, Failed) else "error"
    for hook in stack.afters:
        try:
            result = hook(call, result, env)
        except Exception as error:
            raise HookFailed("after_tool", hook, error) from error
    artifacts = _persist(result.artifacts, store, env.context.run_id, call.id)
    output = None
    if result.structured is not None or artifacts:
        output = ToolOutput(result.structured, artifacts)
    final_status: MessageStatus = "error" if result.is_error and status == "ok" else status  # type: ignore[assignment]
    message = ToolMessage(
        tool_call_id=call.id,
        name=name,
        content=truncate(render(result.content), limit),
        is_error=result.is_error or final_status != "ok",
        artifact=output,
        status=final_status,
    )
    if isinstance(outcome, Ran):
        event: Event = ToolCompleted(
            call_id=call.id,
            tool_name=name,
            is_error=message.is_error,
            metadata=result.metadata,
        )
    else:
        error_type = outcome.error_type if isinstance(outcome, Failed) else "FatalToolError"
        event = ToolFailed(
            call_id=call.id,
            tool_name=name,
            error_type=error_type,
            message=outcome.message,
            traceback=outcome.traceback,
        )
    metadata = result.metadata or None
    return Folded(message, (event,), result.follow_up, metadata)
