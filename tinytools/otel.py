"""OpenTelemetry spans and a duration histogram for every tool call (extra ``otel``).

Put :class:`OpenTelemetry` in ``dispatch``'s ``middleware`` and every call of the batch
gets exactly one span — whether it ran, failed, was refused (an unknown tool, arguments
that fail the schema, a tool not advertised or not allowed this turn), denied, deferred
or interrupted — following the OpenTelemetry GenAI semantic conventions for tool
execution (the ``execute_tool`` span; see docs/how-to/observability.md for the version
followed). Only the ``opentelemetry-api`` package is imported: the host configures the
SDK (or Logfire, or any other implementation of the API).

How the pieces fit:

* A call that runs opens its span in the ``wrap_tool`` / ``awrap_tool`` hook, which
  dispatch runs on the tool's own thread or task in a copy of the caller's
  ``contextvars`` context: the span current at the dispatch call is its parent, and the
  span is current while the tool body runs, so the tool's own spans are its children.
* Every other outcome, and the end of every call, is read from the batch's events as
  they are recorded (a refused call gets no wrap; a call cut off while it ran ends when
  its ``ToolFailed`` is recorded, not when its abandoned thread returns). Retries and
  argument repairs become span events.
* With ``capture_content=True`` the span also carries ``gen_ai.tool.call.arguments`` and
  ``gen_ai.tool.call.result``, each with every ``ToolPolicy.redact`` value of the tool
  replaced by ``[redacted]`` (and scrubbed from the result's text), by the same
  redaction as events and the ledger.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Awaitable, Callable

import msgspec

try:
    from opentelemetry import context as _context
    from opentelemetry import metrics, trace
    from opentelemetry.trace import Span, SpanKind, Status, StatusCode
except ImportError as error:  # pragma: no cover - the message is the point
    raise ImportError(
        "tinytools.otel needs the OpenTelemetry API, which is not installed: "
        'pip install "tinytools[otel]"'
    ) from error

from ._declare.registry import AnyTool
from ._declare.spec import Exposure
from ._dispatch_env import DispatchEnv
from ._fold import render
from ._redact import Redactor
from ._result import DispatchResult
from ._text import printable
from ._wire import ToolCall, ToolMessage, ToolResult
from .events import (
    Event,
    InvalidToolArgs,
    ToolCompleted,
    ToolDeferred,
    ToolDenied,
    ToolFailed,
    ToolRetried,
    UnknownToolCall,
)

__all__ = ["DURATION_METRIC", "OpenTelemetry"]

#: The duration histogram's name (seconds), as the GenAI conventions name it for tool
#: execution.
DURATION_METRIC = "gen_ai.execute_tool.duration"

_OPERATION = "execute_tool"
#: What a refused call's ``error.type`` says (the refusal's kind).
_INVALID = "invalid_arguments"
#: Recoveries after which a call goes on (its span is still to come).
_GOES_ON = frozenset({"repaired", "normalized", "coerced"})


#: A span event's attributes.
_Attributes = dict[str, str | int | float]


class _Call:
    """One call's span in progress: opened by the wrap (``span``), or still to come
    (``pending`` span events recorded before it opened), or ended."""

    __slots__ = ("ended", "pending", "span", "spans", "started")

    def __init__(self) -> None:
        self.span: Span | None = None
        self.started = 0.0
        self.pending: list[tuple[str, _Attributes]] = []
        self.ended = False
        #: Spans ended for this id (a batch may repeat an id: one span per call).
        self.spans = 0


class OpenTelemetry:
    """A middleware that traces every call of a batch (see the module's docstring).

    Args:
        tracer_provider: Where spans go; the global one (``trace.set_tracer_provider``)
            when None.
        meter_provider: Where the duration histogram goes; the global one when None.
        capture_content: Record the call's arguments and result on its span (secret
            arguments redacted).

    One instance may serve any number of dispatches at once, on any threads.
    """

    __slots__ = ("_duration", "_lock", "_runs", "_tinytools_hooks", "_tracer", "capture_content")

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        capture_content: bool = False,
    ) -> None:
        from . import __version__

        self._tracer = trace.get_tracer("tinytools", __version__, tracer_provider)
        meter = metrics.get_meter("tinytools", __version__, meter_provider)
        self._duration = meter.create_histogram(
            DURATION_METRIC, unit="s", description="Duration of tool executions."
        )
        self.capture_content = capture_content
        #: Each dispatch's calls in progress, by call id (a run's entry dies with it).
        self._runs: weakref.WeakKeyDictionary[DispatchEnv, dict[str, _Call]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        # Given no-op providers outright, nothing could ever be recorded: dispatch then
        # calls none of the hooks (see ``tinytools._middleware._hook``), and the batch
        # pays nothing for the middleware.
        inert = isinstance(tracer_provider, trace.NoOpTracerProvider) and isinstance(
            meter_provider, metrics.NoOpMeterProvider
        )
        self._tinytools_hooks: tuple[str, ...] = (
            ()
            if inert
            else ("wrap_tool", "awrap_tool", "_tinytools_on_event", "_tinytools_on_result")
        )

    def __repr__(self) -> str:
        return f"OpenTelemetry(capture_content={self.capture_content!r})"

    # --- the wraps: a call that runs -------------------------------------------------

    def wrap_tool(
        self, call: ToolCall, env: DispatchEnv, proceed: Callable[[], ToolResult]
    ) -> ToolResult:
        """Run a synchronous tool with its span current."""
        span = self._open(call, env)
        if span is None:
            return proceed()
        token = _context.attach(trace.set_span_in_context(span))
        try:
            result = proceed()
        finally:
            _context.detach(token)
        if self.capture_content:
            self._record_result(span, call, env, result)
        return result

    async def awrap_tool(
        self, call: ToolCall, env: DispatchEnv, proceed: Callable[[], Awaitable[ToolResult]]
    ) -> ToolResult:
        """Await an async tool with its span current."""
        span = self._open(call, env)
        if span is None:
            return await proceed()
        token = _context.attach(trace.set_span_in_context(span))
        try:
            result = await proceed()
        finally:
            _context.detach(token)
        if self.capture_content:
            self._record_result(span, call, env, result)
        return result

    def _calls(self, env: DispatchEnv) -> dict[str, _Call]:
        calls = self._runs.get(env)
        if calls is None:
            calls = self._runs.setdefault(env, {})
        return calls

    def _open(self, call: ToolCall, env: DispatchEnv) -> Span | None:
        """The call's span, opened now (the current span its parent) unless it is open
        already (a wrap outside this one called ``proceed`` again); None once the call
        has ended (its thread started after the batch gave up on it)."""
        with self._lock:
            state = self._calls(env).setdefault(call.id, _Call())
            if state.ended:
                return None
            if state.span is not None:
                return state.span
            tool = env.tools.get(call.name)
            span = self._start(call.name, call.id, tool)
            state.span, state.started = span, time.perf_counter()
            pending, state.pending = state.pending, []
        for name, attributes in pending:
            span.add_event(name, attributes)
        if self.capture_content and span.is_recording():
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            shown = _json(arguments)
            if tool is not None and (redactor := tool._plan.redactor) is not None:
                redacted, secrets = redactor.arguments(arguments)
                # (a secret's text may stand in another argument too: the whole is scrubbed)
                shown = Redactor.scrub(_json(redacted), secrets)
            span.set_attribute("gen_ai.tool.call.arguments", shown)
        return span

    def _start(self, name: str, call_id: str, tool: AnyTool | None) -> Span:
        attributes: dict[str, str] = {
            "gen_ai.operation.name": _OPERATION,
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
        }
        if tool is not None and tool.description:
            attributes["gen_ai.tool.description"] = tool.description
        return self._tracer.start_span(
            f"{_OPERATION} {name}", kind=SpanKind.INTERNAL, attributes=attributes
        )

    def _record_result(
        self, span: Span, call: ToolCall, env: DispatchEnv, result: ToolResult
    ) -> None:
        if not span.is_recording() or not isinstance(result, ToolResult):
            return
        text = render(result.content)
        if not text and result.structured is not None:
            text = _json(result.structured)
        tool = env.tools.get(call.name)
        if tool is not None and (redactor := tool._plan.redactor) is not None:
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            text = Redactor.scrub(text, redactor.arguments(arguments)[1])
        span.set_attribute("gen_ai.tool.call.result", text)

    # --- the events: every outcome and every end --------------------------------------

    def _tinytools_on_event(self, event: Event, env: DispatchEnv) -> None:
        """Dispatch hands this middleware each event of the batch as it is recorded."""
        kind = type(event)
        if kind is ToolCompleted:
            assert isinstance(event, ToolCompleted)
            error = "tool_error" if event.is_error else None
            self._end(env, event.call_id, event.tool_name, error, None)
        elif kind is ToolFailed:
            assert isinstance(event, ToolFailed)
            self._end(env, event.call_id, event.tool_name, event.error_type, event.message)
        elif kind is ToolRetried:
            assert isinstance(event, ToolRetried)
            retry: _Attributes = {
                "tinytools.retry.attempt": event.attempt,
                "tinytools.retry.delay": event.delay,
                "tinytools.retry.error": event.error,
            }
            self._note(env, event.call_id, "tinytools.retry", retry)
        elif kind is InvalidToolArgs:
            assert isinstance(event, InvalidToolArgs)
            if event.recovery in _GOES_ON:
                repair: _Attributes = {"tinytools.repair.recovery": event.recovery}
                self._note(env, event.call_id, "tinytools.repair", repair)
            else:
                self._end(
                    env,
                    event.call_id,
                    event.tool_name,
                    _INVALID,
                    event.error,
                    event.arguments,
                    admission=True,
                )
        elif kind is UnknownToolCall:
            assert isinstance(event, UnknownToolCall)
            if event.recovery.startswith("rewrite:"):
                rewrite: _Attributes = {"tinytools.rewrite.requested": event.requested_name}
                self._note(env, event.call_id, "tinytools.rewrite", rewrite)
            else:
                refusal = _refusal(event.requested_name, env)
                self._end(env, event.call_id, event.requested_name, refusal, None, event.arguments)
        elif kind is ToolDenied:
            assert isinstance(event, ToolDenied)
            self._end(env, event.call_id, event.tool_name, "denied", event.message, admission=True)
        elif kind is ToolDeferred:
            assert isinstance(event, ToolDeferred)
            with self._lock:
                state = self._calls(env).get(event.call_id)
                running = state is not None and state.span is not None
            self._end(
                env,
                event.call_id,
                event.tool_name,
                None,
                None,
                deferred=event.reason,
                admission=not running,
            )

    def _tinytools_on_result(self, result: DispatchResult, env: DispatchEnv) -> None:
        """Dispatch hands this middleware the batch's result: a call answered with no
        event (cut off before it started: the batch cancelled, past its deadline, over
        its ``max_tool_calls``) gets its span here."""
        answers: dict[str, list[ToolMessage]] = {}
        for message in result.messages:
            answers.setdefault(message.tool_call_id, []).append(message)
        with self._lock:
            calls = self._calls(env)
            missing: list[ToolMessage] = []
            for call_id, messages in answers.items():
                state = calls.get(call_id)
                missing += messages[0 if state is None else state.spans :]
        for message in missing:
            self._end(
                env,
                message.tool_call_id,
                message.name,
                "not_run",
                message.content,
                admission=True,
            )

    def _note(self, env: DispatchEnv, call_id: str, name: str, attributes: _Attributes) -> None:
        """A span event for the call: now, or when its span opens."""
        with self._lock:
            state = self._calls(env).setdefault(call_id, _Call())
            span = state.span
            if span is None:
                state.pending.append((name, attributes))
                return
        span.add_event(name, attributes)

    def _end(
        self,
        env: DispatchEnv,
        call_id: str,
        name: str,
        error: str | None,
        description: str | None,
        arguments: dict[str, object] | str | None = None,
        *,
        deferred: str | None = None,
        admission: bool = False,
    ) -> None:
        """End the call's span (opened now, if no wrap opened it: a call refused, denied
        or deferred at admission, or ended before its tool started)."""
        with self._lock:
            calls = self._calls(env)
            state = calls.get(call_id)
            if state is None:
                state = calls[call_id] = _Call()
            if admission:
                # Refused before it could run: a span of its own, now. (Not marked ended:
                # a batch may repeat an id, and the call that first had it still runs.)
                span = None
                pending, state.pending = state.pending, []
            else:
                if state.ended:
                    return
                state.ended = True  # (a wrap that starts after this opens no span)
                span, started, pending = state.span, state.started, state.pending
                state.pending = []
            state.spans += 1
        if span is None:
            span = self._start(printable(name), call_id, env.tools.get(name))
            started = time.perf_counter()
            for event_name, attributes in pending:
                span.add_event(event_name, attributes)
            if arguments is not None and self.capture_content and span.is_recording():
                # (the event's arguments: already redacted, loosely for an unknown tool)
                shown = arguments if isinstance(arguments, str) else _json(arguments)
                span.set_attribute("gen_ai.tool.call.arguments", shown)
        if deferred is not None:
            span.set_attribute("tinytools.deferred", deferred)
        if error is not None:
            span.set_attribute("error.type", error)
            span.set_status(Status(StatusCode.ERROR, description))
        span.end()
        measured: dict[str, str] = {
            "gen_ai.operation.name": _OPERATION,
            "gen_ai.tool.name": printable(name),
        }
        if error is not None:
            measured["error.type"] = error
        self._duration.record(time.perf_counter() - started, measured)


def _refusal(name: str, env: DispatchEnv) -> str:
    """The kind of refusal of a call to ``name``, which is not callable this turn: a
    registered tool the allow-list leaves out, one not advertised, or else unknown."""
    tool = env.tools.get(name)
    if tool is None or tool.exposure is Exposure.Hidden:
        return "unknown_tool"
    policy = env.policy
    allowlist = policy.allowlist
    if (
        allowlist is not None
        and name not in allowlist
        and (allowlist or policy.fail_closed_allowlist)
    ):
        return "not_allowed"
    return "not_advertised"


def _json(value: object) -> str:
    """``value`` as JSON text for a span attribute (what msgspec cannot encode as its
    ``str``)."""
    try:
        return msgspec.json.encode(value, enc_hook=str).decode()
    except (TypeError, ValueError, RecursionError, UnicodeError):
        return printable(repr(value))
