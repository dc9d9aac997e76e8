"""W3C trace context across MCP: what ``McpToolset`` sends in a request's ``_meta`` and
what the MCP server helper continues (``traceparent`` and ``tracestate``).

OpenTelemetry is never imported here for its own sake: a process in which nothing has
imported ``opentelemetry.trace`` has no span to send or to continue, and then nothing
is done.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping

__all__ = ["continued", "outgoing"]

#: The W3C trace-context keys carried in ``_meta``.
KEYS = ("traceparent", "tracestate")


def outgoing() -> dict[str, str] | None:
    """The current span's W3C trace context as ``_meta`` entries; None when no valid span
    is current (or OpenTelemetry is not in use)."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None or not trace.get_current_span().get_span_context().is_valid:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return {key: carrier[key] for key in KEYS if key in carrier} or None


@contextlib.contextmanager
def continued(meta: Mapping[str, object] | None) -> Iterator[None]:
    """Inside, the trace ``meta``'s ``traceparent`` names is current — unless a valid span
    is current already (the MCP SDK's own server span, itself continuing it), or there is
    none to continue, or OpenTelemetry is not in use."""
    trace = sys.modules.get("opentelemetry.trace")
    carrier = _carrier(meta)
    if trace is None or carrier is None or trace.get_current_span().get_span_context().is_valid:
        yield
        return
    from opentelemetry import context
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    remote = TraceContextTextMapPropagator().extract(carrier)
    if not trace.get_current_span(remote).get_span_context().is_valid:  # malformed: ignored
        yield
        return
    token = context.attach(remote)
    try:
        yield
    finally:
        context.detach(token)


def _carrier(meta: Mapping[str, object] | None) -> dict[str, str] | None:
    """``meta``'s trace-context entries that are text (a client may send anything)."""
    if not isinstance(meta, Mapping):
        return None
    found = {key: value for key in KEYS if isinstance(value := meta.get(key), str)}
    return found if "traceparent" in found else None
