"""Serving a toolset over MCP: :func:`server`, an ``mcp`` SDK low-level ``Server``.

``tools/list`` answers with :func:`tinytools.formats.mcp.declarations` — the
``Direct`` tools the run policy's allow-list lets be called — and ``tools/call``
runs each request as a batch of one call through ``dispatch``, answered with
:func:`tinytools.formats.mcp.tool_results`. Both are made the SDK's own types
(``types.Tool``, ``types.CallToolResult``), so the SDK checks every answer.

What a request gets back:

- a call of a tool this server does not let be called (unknown, hidden, deferred
  or outside the allow-list) is a JSON-RPC error, ``INVALID_PARAMS`` with dispatch's
  unknown-tool message, as MCP makes unknown tools a protocol error;
- everything else the model can act on is a result: invalid arguments, a tool that
  raised or was denied, and a call left deferred (see :func:`server`) are results
  with ``isError``;
- a batch dispatch aborted (a ``Fail`` policy, ``FatalToolError``, a host callback
  that raised) is answered with the call's message from ``DispatchAborted.result``,
  logged as a warning; anything else dispatch raises (a tool's injection the context
  cannot satisfy) is ``INTERNAL_ERROR``, its traceback in the server's log only.

Progress: every call's ``Inject[Emit]`` events are handed, as they happen (from a
tool's own thread too), to a task that sends them as ``notifications/progress``
while the call runs, when the request asked for progress. Only the newest event not
yet sent is kept: a tool that emits faster than the client reads skips the ones in
between, and never waits for the client.

The ``mcp`` SDK is imported when :func:`server` is called, never before.
"""

from __future__ import annotations

import inspect
import logging
import math
import threading
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from tinytools import (
    AnyTool,
    ArtifactStore,
    Cancellation,
    Context,
    DeferredToolHandler,
    DeferredToolRequests,
    DispatchAborted,
    DispatchResult,
    EventHandler,
    Registry,
    RunPolicy,
    ToolCall,
    dispatch,
)
from tinytools._trace_context import continued
from tinytools.events import Custom, Event, UnknownToolCall
from tinytools.toolsets import Toolset

from ._tools import exposed_tools

if TYPE_CHECKING:
    from mcp import types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    from tinytools.ledger import EffectLedger

__all__ = ["server"]

logger = logging.getLogger("tinytools.formats.mcp")

_POLICY = RunPolicy()

#: The lifespan state of the servers :func:`server` makes (the SDK's default lifespan's).
Lifespan = dict[str, object]


def server(
    tools: Registry | Toolset | Iterable[AnyTool],
    *,
    name: str,
    version: str = "",
    instructions: str | None = None,
    policy: RunPolicy = _POLICY,
    middleware: Iterable[object] = (),
    context: Context | None = None,
    ledger: EffectLedger | None = None,
    on_event: EventHandler | None = None,
    on_deferred: DeferredToolHandler | None = None,
    artifacts: ArtifactStore | None = None,
    cancellation: Cancellation | None = None,
) -> Server[Lifespan]:
    """An MCP server (the ``mcp`` SDK's low-level ``Server``) serving ``tools``.

    Run it as any low-level server: ``await srv.run(read, write,
    srv.create_initialization_options())`` over the SDK's stdio streams,
    ``srv.streamable_http_app()``, or ``mcp.Client(srv)`` in-process.

    ``tools/list`` lists the tools a model may call: the ``Direct`` tools of the
    toolset (with ``Discovery``, ``tool_search`` and ``tool_call`` too; its
    ``Deferred`` tools are reached through them) that ``policy.allowlist`` allows,
    each with its input schema, its ``outputSchema`` (see
    :func:`tinytools.formats.mcp.output_schema`) and the hints its policy states.
    ``tools/call`` is one ``dispatch`` of one call, with a fresh call id (a hex
    UUID, the ``call_id`` of its events). The keyword arguments below are
    dispatch's own, passed to every call.

    Args:
        tools: A ``Registry``, toolset or iterable of ``Tool``s; a toolset is
            resolved with ``context`` on each request.
        name: The server's name, as its ``serverInfo`` says it.
        version: The server's version, as its ``serverInfo`` says it.
        instructions: What the server tells a client about using it.
        policy: How calls are admitted and run.
        middleware: Objects with ``before_tool`` / ``after_tool`` / ``wrap_tool``
            hooks.
        context: What injection draws from; without one, each call is a run of its
            own.
        ledger: An effect ledger told when each call starts and settles.
        on_event: Receives each event as it happens. A synchronous handler is called
            from the thread the event happens on (a ``blocking=True`` tool's own);
            with an ``async def`` handler, events — progress notifications too —
            are delivered only at dispatch's own await points.
        on_deferred: Decides calls that would be deferred (an approval-gated
            tool's, an external tool's, a tool that raised ``CallDeferred``) while
            the request waits. A call it leaves undecided, or every deferred call
            without it, is not run: it is answered as an error result saying so
            (an MCP request cannot be resumed later).
        artifacts: Where tools' artifacts are persisted.
        cancellation: Cancels every running call (say, at shutdown), from any
            thread.

    Raises:
        ModuleNotFoundError: The ``mcp`` SDK is not installed (the ``mcp`` extra).
    """
    try:
        from mcp.server.lowlevel import Server
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            "tinytools.formats.mcp.server needs the MCP SDK: "
            "pip install 'tinytools[mcp]' (or pip install mcp)"
        ) from error
    served = _Served(
        tools,
        policy=policy,
        middleware=tuple(middleware),
        context=context,
        ledger=ledger,
        on_event=on_event,
        on_deferred=on_deferred,
        artifacts=artifacts,
        cancellation=cancellation,
    )
    return Server[Lifespan](
        name,
        version=version,
        instructions=instructions,
        on_list_tools=served.list_tools,
        on_call_tool=served.call_tool,
    )


@attrs.frozen
class _Served:
    """The two handlers of one server: its toolset and dispatch's arguments."""

    tools: Registry | Toolset | Iterable[AnyTool]
    policy: RunPolicy
    middleware: tuple[object, ...]
    context: Context | None
    ledger: EffectLedger | None
    on_event: EventHandler | None
    on_deferred: DeferredToolHandler | None
    artifacts: ArtifactStore | None
    cancellation: Cancellation | None

    def offered(self) -> tuple[AnyTool, ...]:
        """The tools a request may name: the ``Direct`` ones the allow-list allows."""
        exposed = exposed_tools(self.tools, self.context)
        return tuple(tool for tool in exposed if self.policy.allows(tool.name))

    async def list_tools(
        self, ctx: ServerRequestContext[Lifespan], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """``tools/list``: every tool a request may name, in one page."""
        from mcp import types

        from .mcp import declarations

        try:
            offered = self.offered()
        except Exception as error:  # the toolset could not be resolved
            logger.exception("tools/list: the toolset could not be resolved")
            raise _internal_error("could not list its tools") from error
        listed = [types.Tool.model_validate(d) for d in declarations(offered)]
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        self, ctx: ServerRequestContext[Lifespan], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """``tools/call``: the call through dispatch, its progress sent as it runs."""
        import anyio

        call = ToolCall(uuid.uuid4().hex, params.name, dict(params.arguments or {}))
        progress = _Progress(ctx, call.id)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(progress.send)
            try:
                # (a trace the client sent in _meta, unless the SDK's own span continues it)
                with continued(_meta(params, ctx)):
                    outcome = await self._dispatch(call, _with_progress(progress, self.on_event))
            finally:
                progress.close()
        if isinstance(outcome, BaseException):
            raise outcome  # (raised here, not inside the task group, which would wrap it)
        unknown = _unknown(call, outcome.events) and not self._offers(call.name)
        return _answer(call, outcome, unknown=unknown)

    def _offers(self, name: str) -> bool:
        """Whether a request may name the tool (no, when the toolset cannot be resolved)."""
        try:
            return any(tool.name == name for tool in self.offered())
        except Exception:
            return False

    async def _dispatch(self, call: ToolCall, on_event: EventHandler) -> DispatchResult | Exception:
        """The call's result, or the protocol error to answer instead."""
        try:
            return await dispatch(
                [call],
                self.tools,
                policy=self.policy,
                middleware=self.middleware,
                context=self.context,
                ledger=self.ledger,
                on_event=on_event,
                on_deferred=self.on_deferred,
                artifacts=self.artifacts,
                cancellation=self.cancellation,
            )
        except DispatchAborted as aborted:
            logger.warning("tools/call of %.80r aborted its batch: %s", call.name, aborted)
            return aborted.result
        except Exception:
            logger.exception("tools/call of %.80r could not be dispatched", call.name)
            return _internal_error(f"could not run tool {call.name!r:.80}")


def _meta(params: object, ctx: object) -> Mapping[str, object] | None:
    """The request's ``_meta`` (where the client put its W3C trace context)."""
    for found in (getattr(params, "meta", None), getattr(ctx, "meta", None)):
        if isinstance(found, Mapping):
            return found
    return None


def _answer(call: ToolCall, result: DispatchResult, *, unknown: bool) -> types.CallToolResult:
    """The ``CallToolResult`` for the call's message, or for its deferral.

    Raises:
        MCPError: ``INVALID_PARAMS``, when ``unknown``: the request named a tool this
            server does not offer.
    """
    from mcp import types
    from mcp.shared.exceptions import MCPError

    from .mcp import tool_results

    for message in result.messages:
        if message.tool_call_id != call.id:
            continue
        if unknown:
            raise MCPError(code=types.INVALID_PARAMS, message=message.content)
        [answer] = tool_results([message])
        return types.CallToolResult.model_validate(answer)
    text = _not_run(call, result.deferred)
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _internal_error(what: str) -> Exception:
    """The protocol error for a server that failed (its log says why; its client can do
    nothing about it, so nothing more is said)."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import INTERNAL_ERROR

    message = f"Internal error: the server {what}; its log says why"
    return MCPError(code=INTERNAL_ERROR, message=message)


def _unknown(call: ToolCall, events: Iterable[Event]) -> bool:
    """Whether dispatch answered the call as a call of an unknown tool (and did not
    rewrite it into a call of another)."""
    return any(
        isinstance(event, UnknownToolCall)
        and event.call_id == call.id
        and not event.recovery.startswith("rewrite:")
        for event in events
    )


def _not_run(call: ToolCall, deferred: DeferredToolRequests | None) -> str:
    """What the client is told of a call left deferred."""
    if deferred is not None and any(pending.id == call.id for pending in deferred.approvals):
        return (
            f"The call was not run: tool `{call.name}` needs approval before it runs, "
            "and this server got none."
        )
    return (
        f"The call was not run: tool `{call.name}` was deferred to its host, "
        "and this server cannot wait for it."
    )


# --- progress -----------------------------------------------------------------------


def _with_progress(progress: _Progress, on_event: EventHandler | None) -> EventHandler:
    """The ``on_event`` handler of one call: the progress hand-off, then the host's
    handler (whose answer dispatch sees as its own, an awaitable from a handler that is
    not ``async def`` included)."""
    if on_event is None:
        return progress.on_event
    host = on_event
    if inspect.iscoroutinefunction(host) or inspect.iscoroutinefunction(
        getattr(host, "__call__", None)  # noqa: B004 (an object whose __call__ is async)
    ):

        async def both_async(event: Event) -> object:
            progress.on_event(event)
            return await host(event)  # type: ignore[misc]  # (an async handler, as checked)

        return both_async

    def both(event: Event) -> object:
        progress.on_event(event)
        return host(event)

    return both


class _Progress:
    """One call's progress notifications: events handed over from any thread, sent by
    a task on the server's event loop, the newest one only."""

    __slots__ = (
        "_call_id",
        "_closed",
        "_count",
        "_ctx",
        "_last",
        "_lock",
        "_pending",
        "_ready",
    )

    def __init__(self, ctx: ServerRequestContext[Lifespan], call_id: str) -> None:
        from tinytools._runtime.wakeup import Wakeup

        self._ctx = ctx
        self._call_id = call_id
        self._lock = threading.Lock()
        self._ready = Wakeup()
        self._pending: tuple[float, float | None, str | None] | None = None
        self._count = 0  # the call's events so far (a progress value when one has none)
        self._last = -math.inf  # the progress value last handed over (MCP's must increase)
        self._closed = False

    def on_event(self, event: Event) -> None:
        """Hand the call's custom event over (from whichever thread it happens on)."""
        if not isinstance(event, Custom) or event.call_id != self._call_id:
            return
        with self._lock:
            if self._closed:
                return  # (a thread the call gave up on, still running)
            self._count += 1
            progress, total, message = _progress_of(event, self._count)
            if not progress > self._last:
                return
            self._last = progress
            self._pending = (progress, total, message)
        self._ready.set()

    def close(self) -> None:
        """No more events: send the one pending, then stop (on the event loop)."""
        with self._lock:
            self._closed = True
        self._ready.set()

    async def send(self) -> None:
        """Send each event handed over, until :meth:`close`."""
        while True:
            await self._ready.wait()
            with self._lock:
                pending, self._pending = self._pending, None
                closed = self._closed
            if pending is not None:
                try:
                    await self._ctx.session.report_progress(*pending)  # (no-op unless asked)
                except Exception:  # the client went away: the call goes on without it
                    logger.debug("a progress notification could not be sent", exc_info=True)
                    return
            if closed:
                return


def _progress_of(event: Custom, count: int) -> tuple[float, float | None, str | None]:
    """A custom event as MCP progress: ``(progress, total, message)``.

    ``progress`` and ``total`` are the event data's own numbers where it is an object
    holding them (``{"progress": 3, "total": 10}``); otherwise progress is the count of
    the call's events so far. The message is the data's ``message`` text, the data
    itself when it is text, or else the event's name. Nothing else of the data is sent.
    """
    data = event.data
    fields: Mapping[str, object] = data if isinstance(data, Mapping) else {}
    progress = _number(fields.get("progress"))
    message = fields.get("message", data)
    return (
        float(count) if progress is None else progress,
        _number(fields.get("total")),
        message if isinstance(message, str) else event.name,
    )


def _number(value: object) -> float | None:
    """``value`` as a finite float, if it is a number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int past float range
        return None
    return number if math.isfinite(number) else None
