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
from collections.abc import Awaitable, Callable
from typing import Final, Literal, NamedTuple

import msgspec

try:
    from opentelemetry import context as _context
    from opentelemetry import metrics, trace
    from opentelemetry.metrics import _internal as _metrics_state
    from opentelemetry.trace import Span, SpanKind, Status, StatusCode
except ImportError as error:  # pragma: no cover - the message is the point
    raise ImportError(
        "tinytools.otel needs the OpenTelemetry API, which is not installed: "
        'pip install "tinytools[otel]"'
    ) from error

from ._declare.registry import AnyTool
from ._declare.spec import Exposure
from ._engine.env import DispatchEnv
from ._engine.fold import render
from ._engine.result import DispatchResult
from ._memo import remember
from ._redact import Redactor
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
#: The events this middleware reads (``_tinytools_on_event``).
_WATCHED = frozenset(
    {
        ToolCompleted,
        ToolFailed,
        ToolRetried,
        InvalidToolArgs,
        UnknownToolCall,
        ToolDenied,
        ToolDeferred,
    }
)
#: Recoveries after which a call goes on (its span is still to come).
_GOES_ON = frozenset({"repaired", "normalized", "coerced"})


#: A span event's attributes.
_Attributes = dict[str, str | int | float]


class _Call:
    """One call's span in progress: opened by the wrap (``span``), or still to come
    (``pending`` span events recorded before it opened), or ended."""

    __slots__ = ("ended", "measured", "pending", "span", "spans", "started")

    def __init__(self) -> None:
        self.span: Span | None = None
        self.started = 0.0
        #: The histogram's attributes for the tool (those of an outcome added).
        self.measured: dict[str, str] = {}
        self.pending: list[tuple[str, _Attributes]] = []
        self.ended = False
        #: Spans ended for this id (a batch may repeat an id: one span per call).
        self.spans = 0


class _Static(NamedTuple):
    """What every span of one tool has (made once per tool: see ``OpenTelemetry._static``)."""

    tool: AnyTool | None
    span_name: str
    #: The span's attributes but the call id.
    attributes: dict[str, str]
    #: The histogram's attributes for a call that did not fail.
    measured: dict[str, str]


class OpenTelemetry:
    """A middleware that traces every call of a batch (see the module's docstring).

    Args:
        tracer_provider: Where spans go; the global one (``trace.set_tracer_provider``)
            when None.
        meter_provider: Where the duration histogram goes; the global one when None.
        capture_content: Record the call's arguments and result on its span (secret
            arguments redacted).

    While nothing could be recorded — no-op providers, or global ones not set yet —
    dispatch leaves the middleware out of the batch altogether; a global provider set
    later is used from the next dispatch on. One instance may serve any number of
    dispatches at once, on any threads.
    """

    __slots__ = (
        "_duration",
        "_lock",
        "_meters",
        "_statics",
        "_tinytools_hooks",
        "_tracer",
        "_traces",
        "capture_content",
    )

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
        #: What every span of a tool has, by the name it is called by (bounded).
        self._statics: dict[str, _Static] = {}
        self._lock = threading.Lock()
        self._traces = _tracing(tracer_provider)
        self._meters = _metering(meter_provider)
        # When nothing could ever be recorded (no-op providers), dispatch calls none of
        # the hooks (see ``tinytools._middleware._hook``), and the batch pays nothing for
        # the middleware; while the global providers it follows are unset, none either
        # (``_tinytools_quiet`` says so before each dispatch: ``_middleware.Stack.now``).
        sides = (self._traces, self._meters)
        hooks = ("wrap_tool", "awrap_tool", "_tinytools_on_event", "_tinytools_on_result")
        if _MAY in sides:
            self._tinytools_hooks: tuple[str, ...] = hooks
        elif _GLOBAL in sides:
            self._tinytools_hooks = (*hooks, "_tinytools_quiet")
        else:
            self._tinytools_hooks = ()

    def __repr__(self) -> str:
        return f"OpenTelemetry(capture_content={self.capture_content!r})"

    def _tinytools_quiet(self) -> bool:
        """Whether a dispatch starting now would record nothing: every side (spans,
        histogram) either never records or follows a global provider still unset (or
        set to a no-op one). Only called when no side may record regardless."""
        if self._traces is _GLOBAL:
            provider = trace._TRACER_PROVIDER
            if provider is not None and not isinstance(provider, trace.NoOpTracerProvider):
                return False
        if self._meters is _GLOBAL:
            meters = _metrics_state._METER_PROVIDER
            if meters is not None and not isinstance(meters, metrics.NoOpMeterProvider):
                return False
        return True

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
        """The dispatch's calls in progress, by call id: kept in the notes of the batch's
        observed events (which dispatch hands on through the env, and which live as long
        as the dispatch), so a thread that outlives the batch still finds its call
        ended. (Called with the lock held.)"""
        notes: dict[object, object] | None = getattr(env, "_notes", None)
        if notes is None:  # (a hook called by hand, outside dispatch: nothing is kept)
            return {}
        calls = notes.get(self)
        if calls is None:
            calls = notes[self] = {}
        return calls  # type: ignore[return-value]  # (only this middleware writes its note)

    def _static(self, name: str, tool: AnyTool | None) -> _Static:
        """What every span of the tool called ``name`` has (``tool`` None: unknown)."""
        found = self._statics.get(name)
        if found is not None and found.tool is tool:
            return found
        shown = printable(name)
        attributes = {
            "gen_ai.operation.name": _OPERATION,
            "gen_ai.tool.name": shown,
            "gen_ai.tool.type": "function",
        }
        if tool is not None and tool.description:
            attributes["gen_ai.tool.description"] = tool.description
        measured = {"gen_ai.operation.name": _OPERATION, "gen_ai.tool.name": shown}
        found = _Static(tool, f"{_OPERATION} {shown}", attributes, measured)
        if tool is not None:  # (an unknown name is the model's: not worth remembering)
            remember(self._statics, name, found)
        return found

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
            static = self._static(call.name, tool)
            span = self._start(static, call.id)
            state.span, state.measured = span, static.measured
            state.started = time.perf_counter()
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

    def _start(self, static: _Static, call_id: str) -> Span:
        attributes = static.attributes.copy()
        attributes["gen_ai.tool.call.id"] = call_id
        return self._tracer.start_span(
            static.span_name, kind=SpanKind.INTERNAL, attributes=attributes
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
        if kind not in _WATCHED:  # (every call's ToolStarted, among others)
            return
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
        missing: list[ToolMessage] = []
        with self._lock:
            calls = self._calls(env)
            answered: dict[str, int] = {}  # (a batch may repeat an id: counted)
            for message in result.messages:
                call_id = message.tool_call_id
                count = answered[call_id] = answered.get(call_id, 0) + 1
                state = calls.get(call_id)
                if state is None or count > state.spans:
                    missing.append(message)
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
                measured = state.measured
                state.pending = []
            state.spans += 1
        if span is None:
            static = self._static(name, env.tools.get(name))
            span = self._start(static, call_id)
            started, measured = time.perf_counter(), static.measured
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
        if error is not None:
            measured = {**measured, "error.type": error}
        self._duration.record(time.perf_counter() - started, measured)


#: What a side (spans, or the histogram) of an instance can record: nothing ever (a
#: no-op provider), or something (a configured one), or nothing until the global
#: provider it follows is set (``OpenTelemetry._tinytools_quiet`` reads which).
_Side = Literal["never", "may", "global"]
_NEVER: Final = "never"
_MAY: Final = "may"
_GLOBAL: Final = "global"


def _tracing(provider: trace.TracerProvider | None) -> _Side:
    """What spans of a tracer from ``provider`` (the global one when None) can record.

    The global provider is read from the API's module state, as its proxy tracer reads
    it (the public getter consults the environment on every call, microseconds each);
    an API without that name leaves every dispatch traced (correct, only slower)."""
    if provider is None or isinstance(provider, trace.ProxyTracerProvider):
        current: object = getattr(trace, "_TRACER_PROVIDER", _UNKNOWN)
        if current is None:
            return _GLOBAL
        return _NEVER if isinstance(current, trace.NoOpTracerProvider) else _MAY
    return _NEVER if isinstance(provider, trace.NoOpTracerProvider) else _MAY


def _metering(provider: metrics.MeterProvider | None) -> _Side:
    """:func:`_tracing` for the histogram of a meter from ``provider``."""
    if provider is None or provider is getattr(_metrics_state, "_PROXY_METER_PROVIDER", _UNKNOWN):
        current: object = getattr(_metrics_state, "_METER_PROVIDER", _UNKNOWN)
        if current is None:
            return _GLOBAL
        return _NEVER if isinstance(current, metrics.NoOpMeterProvider) else _MAY
    return _NEVER if isinstance(provider, metrics.NoOpMeterProvider) else _MAY


#: Stands for module state an API version may not have.
_UNKNOWN = object()


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
