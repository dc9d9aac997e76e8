"""Tests for `tinytools.otel`: one span per call of every outcome, read with the
OpenTelemetry SDK's in-memory exporter (the SDK is a test dependency only)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tinytools import (
    ApprovalRequired,
    Cancellation,
    Deny,
    RetryableError,
    RunPolicy,
    ToolCall,
    ToolPolicy,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools.otel import DURATION_METRIC, OpenTelemetry

EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
TRACER = PROVIDER.get_tracer("tests")


@pytest.fixture(autouse=True)
def _clear() -> Iterator[None]:
    EXPORTER.clear()
    yield
    EXPORTER.clear()


def tool_spans() -> dict[str, ReadableSpan]:
    """The finished execute_tool spans by call id (each id once: a second span fails)."""
    spans: dict[str, ReadableSpan] = {}
    for span in EXPORTER.get_finished_spans():
        if span.name.startswith("execute_tool "):
            call_id = str((span.attributes or {})["gen_ai.tool.call.id"])
            assert call_id not in spans, f"two spans for call {call_id}"
            spans[call_id] = span
    return spans


def named(name: str) -> list[ReadableSpan]:
    return [span for span in EXPORTER.get_finished_spans() if span.name == name]


def child_of(span: ReadableSpan, parent: ReadableSpan) -> bool:
    return span.parent is not None and span.parent.span_id == parent.context.span_id


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    with TRACER.start_as_current_span("inside add"):
        return a + b


@tool
def boom() -> int:
    """Always fails."""
    raise ValueError("no luck")


@tool
def ask(amount: int) -> str:
    """Needs approval."""
    raise ApprovalRequired({"amount": amount})


@tool
def hidden_from_turn() -> str:
    """Registered, not advertised."""
    return "x"


ATTEMPTS: list[int] = []


@tool(max_retries=2)
def flaky() -> str:
    """Fails once, then works."""
    ATTEMPTS.append(1)
    if len(ATTEMPTS) % 2:
        raise RetryableError("try again")
    return "fine"


class TestEveryOutcome:
    def test_one_span_per_call_with_attributes_and_statuses(self) -> None:
        """A batch mixing ran, failed, unknown, invalid, not advertised, denied and
        deferred calls: one span each, named and attributed by the conventions, the
        caller's span their parent, ERROR and error.type on failures and refusals."""
        otel = OpenTelemetry(tracer_provider=PROVIDER)
        calls = [
            ToolCall("ok", "add", {"a": 1, "b": 2}),
            ToolCall("failed", "boom", {}),
            ToolCall("unknown", "nope", {}),
            ToolCall("invalid", "add", {"a": "x"}),
            ToolCall("unadvertised", "hidden_from_turn", {}),
            ToolCall("denied", "boom", {}),
            ToolCall("deferred", "ask", {"amount": 3}),
            ToolCall("repaired", "add", '{"a": 1, "b": 2,}'),
        ]
        tools = [add, boom, ask, hidden_from_turn]
        with TRACER.start_as_current_span("caller"):
            result = dispatch_sync(
                calls,
                tools,
                middleware=[otel, _deny_id("denied")],
                advertised=["add", "boom", "ask"],
            )
        assert [m.tool_call_id for m in result.messages] == [
            "ok",
            "failed",
            "unknown",
            "invalid",
            "unadvertised",
            "denied",
            "repaired",
        ]
        spans = tool_spans()
        assert set(spans) == {c.id for c in calls}
        (caller,) = named("caller")
        for call_id, span in spans.items():
            attributes = span.attributes or {}
            assert span.kind is SpanKind.INTERNAL
            assert child_of(span, caller), call_id
            assert attributes["gen_ai.operation.name"] == "execute_tool"
            assert attributes["gen_ai.tool.type"] == "function"
            assert span.name == f"execute_tool {attributes['gen_ai.tool.name']}"
            assert "gen_ai.tool.call.arguments" not in attributes  # capture_content off
        assert spans["ok"].attributes["gen_ai.tool.description"] == "Add two numbers."  # type: ignore[index]
        expected = {
            "ok": None,
            "repaired": None,
            "deferred": None,
            "failed": "ValueError",
            "unknown": "unknown_tool",
            "invalid": "invalid_arguments",
            "unadvertised": "not_advertised",
            "denied": "denied",
        }
        for call_id, error in expected.items():
            span = spans[call_id]
            assert (span.attributes or {}).get("error.type") == error, call_id
            status = StatusCode.UNSET if error is None else StatusCode.ERROR
            assert span.status.status_code is status, call_id
        assert spans["deferred"].attributes["tinytools.deferred"] == "approval"  # type: ignore[index]
        assert [e.name for e in spans["repaired"].events] == ["tinytools.repair"]
        (inner,) = named("inside add")[:1]
        assert child_of(inner, spans["ok"])

    def test_a_repeated_id(self) -> None:
        """A batch that repeats an id: the call that had it first runs and has its span;
        the repeat is refused, with a span of its own."""
        otel = OpenTelemetry(tracer_provider=PROVIDER)
        calls = [ToolCall("x", "add", {"a": 1, "b": 2}), ToolCall("x", "add", {"a": 3, "b": 4})]
        result = dispatch_sync(calls, [add], middleware=[otel])
        assert [m.status for m in result.messages] == ["ok", "error"]
        spans = [s for s in EXPORTER.get_finished_spans() if s.name == "execute_tool add"]
        assert sorted(str((s.attributes or {}).get("error.type")) for s in spans) == [
            "None",
            "denied",
        ]
        ran = next(s for s in spans if s.status.status_code is StatusCode.UNSET)
        assert child_of(named("inside add")[0], ran)

    def test_not_allowed(self) -> None:
        otel = OpenTelemetry(tracer_provider=PROVIDER)
        dispatch_sync(
            [ToolCall("c", "boom", {})],
            [add, boom],
            middleware=[otel],
            policy=RunPolicy(allowlist=["add"]),
        )
        span = tool_spans()["c"]
        assert span.attributes["error.type"] == "not_allowed"  # type: ignore[index]
        assert span.status.status_code is StatusCode.ERROR

    def test_retries_are_span_events(self) -> None:
        otel = OpenTelemetry(tracer_provider=PROVIDER)
        ATTEMPTS.clear()
        result = dispatch_sync([ToolCall("r", "flaky", {})], [flaky], middleware=[otel])
        assert result.messages[0].status == "ok"
        span = tool_spans()["r"]
        (retry,) = [e for e in span.events if e.name == "tinytools.retry"]
        assert retry.attributes["tinytools.retry.attempt"] == 1  # type: ignore[index]
        assert span.status.status_code is StatusCode.UNSET

    @pytest.mark.anyio
    async def test_interrupted(self) -> None:
        """A call cut off while it ran: its span ends with the interruption."""
        otel = OpenTelemetry(tracer_provider=PROVIDER)
        handle = Cancellation()

        @tool
        async def hang() -> str:
            """Waits for ever."""
            handle.cancel()
            await anyio.sleep_forever()
            return "never"

        result = await dispatch(
            [ToolCall("h", "hang", {})], [hang], middleware=[otel], cancellation=handle
        )
        assert result.messages[0].status == "interrupted"
        span = tool_spans()["h"]
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes["error.type"] == "Cancelled"  # type: ignore[index]

    @pytest.mark.anyio
    async def test_calls_cut_off_before_they_started(self) -> None:
        """The batch cancelled while its first call ran: that call is interrupted, the
        next two never start; a call over max_tool_calls never starts: each has a span."""
        otel = OpenTelemetry(tracer_provider=PROVIDER)
        handle = Cancellation()

        @tool
        async def hang() -> str:
            """Cancels its batch, then waits for ever."""
            handle.cancel()
            await anyio.sleep_forever()
            return "never"

        calls = [ToolCall(name, "hang", {}) for name in ("h1", "h2", "h3")]
        result = await dispatch(
            calls,
            [hang],
            middleware=[otel],
            cancellation=handle,
            policy=RunPolicy(max_concurrency=1),
        )
        assert [m.status for m in result.messages] == ["interrupted"] * 3
        spans = tool_spans()
        assert spans["h1"].attributes["error.type"] == "Cancelled"  # type: ignore[index]
        for call_id in ("h2", "h3"):
            assert spans[call_id].attributes["error.type"] == "not_run"  # type: ignore[index]
            assert spans[call_id].status.status_code is StatusCode.ERROR
        EXPORTER.clear()
        limited = RunPolicy(max_tool_calls=1)
        calls = [ToolCall("a", "add", {"a": 1, "b": 2}), ToolCall("b", "add", {"a": 1, "b": 2})]
        await dispatch(calls, [add], middleware=[otel], policy=limited)
        spans = tool_spans()
        assert "error.type" not in (spans["a"].attributes or {})
        assert spans["b"].attributes["error.type"] == "not_run"  # type: ignore[index]

    def test_duration_histogram(self) -> None:
        reader = InMemoryMetricReader()
        otel = OpenTelemetry(tracer_provider=PROVIDER, meter_provider=MeterProvider([reader]))
        dispatch_sync(
            [ToolCall("1", "add", {"a": 1, "b": 2}), ToolCall("2", "nope", {})],
            [add],
            middleware=[otel],
        )
        data = reader.get_metrics_data()
        assert data is not None
        (metric,) = [
            m
            for rm in data.resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
            if m.name == DURATION_METRIC
        ]
        assert metric.unit == "s"
        points = {p.attributes.get("gen_ai.tool.name"): p for p in metric.data.data_points}  # type: ignore[union-attr]
        assert points["add"].count == 1
        assert points["nope"].attributes["error.type"] == "unknown_tool"


def _deny_id(call_id: str) -> object:
    def hook(call: ToolCall, env: object) -> ToolCall | Deny:
        return Deny("not today") if call.id == call_id else call

    return before_tool(hook)  # type: ignore[arg-type]


# --- the span current inside the tool, on every route ---------------------------------


def traced_sync(**options: object) -> object:
    @tool(**options)  # type: ignore[call-overload]
    def work() -> str:
        """Opens a span of its own."""
        with TRACER.start_as_current_span("inside"):
            return threading.current_thread().name

    return work


@tool
async def traced_async() -> str:
    """Opens a span of its own."""
    with TRACER.start_as_current_span("inside"):
        await anyio.sleep(0)
        return "done"


def assert_nested() -> None:
    (caller,) = named("caller")
    (span,) = tool_spans().values()
    (inside,) = named("inside")
    assert child_of(span, caller)
    assert child_of(inside, span)


class TestCurrentInsideTheTool:
    @pytest.mark.parametrize("options", [{}, {"timeout": 5.0}, {"blocking": True}])
    def test_sync_tool_under_dispatch_sync(self, options: dict[str, object]) -> None:
        otel = OpenTelemetry(tracer_provider=PROVIDER)
        with TRACER.start_as_current_span("caller"):
            dispatch_sync([ToolCall("1", "work", {})], [traced_sync(**options)], middleware=[otel])
        assert_nested()

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_async_tool_under_dispatch_sync(self, backend: str) -> None:
        otel = OpenTelemetry(tracer_provider=PROVIDER)
        with TRACER.start_as_current_span("caller"):
            result = dispatch_sync(
                [ToolCall("1", "traced_async", {})],
                [traced_async],
                middleware=[otel],
                backend=backend,  # type: ignore[arg-type]
            )
        assert result.messages[0].status == "ok"
        assert_nested()

    @pytest.mark.anyio
    @pytest.mark.parametrize("which", ["async", "sync", "timeout"])
    async def test_under_dispatch(self, which: str) -> None:
        otel = OpenTelemetry(tracer_provider=PROVIDER)
        chosen = {
            "async": traced_async,
            "sync": traced_sync(),
            "timeout": traced_sync(timeout=5.0),
        }[which]
        name = "traced_async" if which == "async" else "work"
        with TRACER.start_as_current_span("caller"):
            await dispatch([ToolCall("1", name, {})], [chosen], middleware=[otel])
        assert_nested()


# --- concurrency: spans do not cross ----------------------------------------------------


@tool
async def echo(tag: str) -> str:
    """Waits a turn, then opens a span named after its tag."""
    await anyio.sleep(0)
    with TRACER.start_as_current_span(f"inside {tag}"):
        await anyio.sleep(0)
    return tag


@tool(timeout=5.0)
def echo_thread(tag: str) -> str:
    """On a worker thread, opens a span named after its tag."""
    with TRACER.start_as_current_span(f"inside {tag}"):
        return tag


class TestConcurrency:
    @pytest.mark.anyio
    async def test_two_concurrent_batches_do_not_cross(self) -> None:
        """Two dispatches at once, each a concurrent batch: every tool span is the child
        of its own dispatch's caller span, and every inner span of its own call's."""
        otel = OpenTelemetry(tracer_provider=PROVIDER)
        policy = RunPolicy(max_concurrency=4)

        async def one(batch: str) -> None:
            calls = [ToolCall(f"{batch}{i}", "echo", {"tag": f"{batch}{i}"}) for i in range(4)]
            calls += [
                ToolCall(f"{batch}t{i}", "echo_thread", {"tag": f"{batch}t{i}"}) for i in range(2)
            ]
            with TRACER.start_as_current_span(f"caller {batch}"):
                await dispatch(calls, [echo, echo_thread], middleware=[otel], policy=policy)

        async with anyio.create_task_group() as group:
            group.start_soon(one, "a")
            group.start_soon(one, "b")
        spans = tool_spans()
        assert len(spans) == 12
        for call_id, span in spans.items():
            (caller,) = named(f"caller {call_id[0]}")
            assert child_of(span, caller), call_id
            (inside,) = named(f"inside {call_id}")
            assert child_of(inside, span), call_id

    def test_two_threads_dispatching_at_once(self) -> None:
        otel = OpenTelemetry(tracer_provider=PROVIDER)
        barrier = threading.Barrier(2)

        def one(batch: str) -> None:
            barrier.wait()
            with TRACER.start_as_current_span(f"caller {batch}"):
                calls = [ToolCall(f"{batch}{i}", "echo", {"tag": f"{batch}{i}"}) for i in range(3)]
                dispatch_sync(calls, [echo], middleware=[otel], policy=RunPolicy(max_concurrency=3))

        threads = [threading.Thread(target=one, args=(b,)) for b in "ab"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        spans = tool_spans()
        assert len(spans) == 6
        for call_id, span in spans.items():
            (caller,) = named(f"caller {call_id[0]}")
            assert child_of(span, caller)
            (inside,) = named(f"inside {call_id}")
            assert child_of(inside, span)


# --- capture_content and redaction -------------------------------------------------------


@tool(policy=ToolPolicy(redact=("password", "$.auth.token")))
def login(user: str, password: str, auth: dict[str, object] | None = None) -> str:
    """Logs in and echoes what it was given."""
    return f"user={user} password={password} auth={json.dumps(auth)}"


def every_text(span: ReadableSpan) -> str:
    parts = [span.name, json.dumps(dict(span.attributes or {}), default=str)]
    parts.append(str(span.status.description))
    for event in span.events:
        parts.append(event.name)
        parts.append(json.dumps(dict(event.attributes or {}), default=str))
    return "\n".join(parts)


#: A secret's text: marked ("XZ9") so that it is never a word a span has anyway (an
#: attribute's key, or a fixed value such as `gen_ai.tool.type`'s "function").
SECRET = st.text(alphabet="abcdefghijklmnopqrstuvwxyzXYZ0123456789-_", min_size=5, max_size=17).map(
    lambda text: f"XZ9{text}"
)


class TestCaptureContent:
    def test_arguments_and_result_recorded_redacted(self) -> None:
        otel = OpenTelemetry(tracer_provider=PROVIDER, capture_content=True)
        arguments = {"user": "ann", "password": "hunter2-secret", "auth": {"token": "tok-9999x"}}
        dispatch_sync([ToolCall("1", "login", arguments)], [login], middleware=[otel])
        attributes = tool_spans()["1"].attributes or {}
        shown = json.loads(str(attributes["gen_ai.tool.call.arguments"]))
        assert shown == {"user": "ann", "password": "[redacted]", "auth": {"token": "[redacted]"}}
        result = str(attributes["gen_ai.tool.call.result"])
        assert result.startswith("user=ann password=[redacted]")
        assert "hunter2-secret" not in result
        assert "tok-9999x" not in result

    @settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        secret=SECRET,
        shape=st.sampled_from(
            ["valid", "nested", "array", "raw", "unknown", "broken", "in-string", "invalid"]
        ),
    )
    def test_no_secret_in_any_span(self, secret: str, shape: str) -> None:
        """Whatever shape the model sends the arguments in, no span attribute, status or
        event holds the secret."""
        EXPORTER.clear()
        otel = OpenTelemetry(tracer_provider=PROVIDER, capture_content=True)
        arguments: dict[str, object] | str = {
            "valid": {"user": "ann", "password": secret},
            "nested": {"user": "ann", "password": "p", "auth": {"token": secret}},
            "array": json.dumps(["ann", secret]),
            "raw": f'{{"user": "ann", "password": "{secret}",}}',
            "unknown": {"pasword": secret},
            "broken": f'{{"user": "ann", "password": "{secret}"',
            "in-string": {"user": f"ann {secret}", "password": secret},
            "invalid": {"user": 5, "password": secret},
        }[shape]
        name = "logni" if shape == "unknown" else "login"
        dispatch_sync([ToolCall("1", name, arguments)], [login], middleware=[otel])
        (span,) = tool_spans().values()
        assert secret not in every_text(span)


# --- the import --------------------------------------------------------------------------


def test_import_tinytools_does_not_import_opentelemetry() -> None:
    code = (
        "import sys, tinytools; sys.exit(any(m.startswith('opentelemetry') for m in sys.modules))"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_api_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "try:\n    import tinytools.otel\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert 'pip install "tinytools[otel]"' in out.stdout


_GLOBAL_PROVIDERS = """
from opentelemetry import context, metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tinytools import ToolCall, dispatch_sync, tool
from tinytools.otel import OpenTelemetry

seen = []

@tool
def look() -> str:
    \"\"\"Records the OpenTelemetry context it runs in.\"\"\"
    seen.append(dict(context.get_current()))
    return "ok"

otel = OpenTelemetry()  # (made while no global provider is set)
def run():
    seen.clear()
    result = dispatch_sync([ToolCall("1", "look", {})], [look], middleware=[otel])
    assert [m.status for m in result.messages] == ["ok"], result
    return seen[0]

# Unset: the middleware leaves the call alone (nothing it did could be recorded).
assert run() == {}, "a span was made current with no provider set"
# Beside one given a provider, which still records.
given = InMemorySpanExporter()
explicit = TracerProvider()
explicit.add_span_processor(SimpleSpanProcessor(given))
dispatch_sync([ToolCall("2", "look", {})], [look],
              middleware=[otel, OpenTelemetry(tracer_provider=explicit)])
assert [s.name for s in given.get_finished_spans()] == ["execute_tool look"]
# A meter provider set later: the next dispatch records the histogram.
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider([reader]))
run()
names = [m.name for rm in reader.get_metrics_data().resource_metrics
         for sm in rm.scope_metrics for m in sm.metrics]
assert names == ["gen_ai.execute_tool.duration"], names
# A tracer provider set later: the next dispatch's span is the caller's child.
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
with trace.get_tracer("test").start_as_current_span("caller") as caller:
    inside = run()
(span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool look"]
assert span.parent.span_id == caller.get_span_context().span_id
assert trace.get_current_span(inside).get_span_context().span_id == span.context.span_id
print("checked")
"""


def test_global_providers_unset_then_set() -> None:
    """``OpenTelemetry()`` follows the global providers: while they are unset the batch
    is left alone (no span made current in the tool), and a provider set later is used
    from the next dispatch on (in a process of its own: a global provider is set once)."""
    out = subprocess.run(
        [sys.executable, "-c", _GLOBAL_PROVIDERS], capture_output=True, text=True, check=False
    )
    assert out.stdout.strip() == "checked", out.stderr


# --- MCP: one trace across host and server ----------------------------------------------


@tool
def remote_add(a: int, b: int) -> int:
    """Adds on the server, in a span of its own."""
    with TRACER.start_as_current_span("server inside"):
        return a + b


class _Recording:
    """An MCP client session that records the ``_meta`` each call sends."""

    def __init__(self, session: object) -> None:
        self.session = session
        self.metas: list[object] = []

    async def list_tools(self, *args: object, **kwargs: object) -> object:
        return await self.session.list_tools(*args, **kwargs)  # type: ignore[attr-defined]

    async def call_tool(
        self, name: str, arguments: dict[str, object] | None = None, *, meta: object = None
    ) -> object:
        self.metas.append(meta)
        return await self.session.call_tool(name, arguments, meta=meta)  # type: ignore[attr-defined]


def _trace_of(span: ReadableSpan) -> str:
    return format(span.context.trace_id, "032x")


class TestMcp:
    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"  # (the MCP SDK's in-process client runs under asyncio here)

    @pytest.mark.anyio
    @pytest.mark.parametrize("mode", ["auto", "legacy"])
    async def test_one_trace_spans_host_and_server(self, mode: str) -> None:
        """McpToolset sends the call span's traceparent in _meta; the server's span of the
        call, and the tool's own span inside it, belong to the host's trace, below it."""
        pytest.importorskip("mcp.server.lowlevel", reason="needs the mcp extra (SDK 2.x)")
        from mcp import Client

        from tinytools.formats import mcp
        from tinytools.toolsets.mcp import McpToolset

        served = mcp.server([remote_add], name="s", middleware=[OpenTelemetry(PROVIDER)])
        async with Client(served, mode=mode) as client:  # type: ignore[arg-type]
            session = _Recording(client.session)
            toolset = await McpToolset(session).refresh()  # type: ignore[arg-type]
            with TRACER.start_as_current_span("host"):
                result = await dispatch(
                    [ToolCall("h1", "remote_add", {"a": 1, "b": 2})],
                    toolset,
                    middleware=[OpenTelemetry(PROVIDER)],
                )
        assert result.messages[0].content == "3"
        host_call = tool_spans()["h1"]
        (meta,) = session.metas
        assert isinstance(meta, dict)
        sent = meta["traceparent"]
        assert sent.split("-")[1:3] == [
            _trace_of(host_call),
            format(host_call.context.span_id, "016x"),
        ]
        by_id = {s.context.span_id: s for s in EXPORTER.get_finished_spans()}
        (inside,) = named("server inside")
        assert _trace_of(inside) == _trace_of(host_call)
        ancestors = []
        span: ReadableSpan | None = inside
        while span is not None and span.parent is not None:
            span = by_id.get(span.parent.span_id)
            ancestors.append(span)
        assert host_call in ancestors

    def test_no_meta_without_a_span(self) -> None:
        from tinytools._trace_context import outgoing

        assert outgoing() is None

    def test_the_server_continues_a_trace_from_meta(self) -> None:
        from opentelemetry import trace

        from tinytools._trace_context import continued

        trace_id, span_id = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
        meta = {"traceparent": f"00-{trace_id}-{span_id}-01", "tracestate": "k=v"}
        with continued(meta):
            context = trace.get_current_span().get_span_context()
            assert format(context.trace_id, "032x") == trace_id
            assert format(context.span_id, "016x") == span_id
            assert context.trace_state.get("k") == "v"
        assert not trace.get_current_span().get_span_context().is_valid
        for hostile in ({"traceparent": "00-zz-yy-01"}, {"traceparent": 5}, [], None, {}):
            with continued(hostile):  # type: ignore[arg-type]
                assert not trace.get_current_span().get_span_context().is_valid
        with TRACER.start_as_current_span("already") as span, continued(meta):
            assert trace.get_current_span() is span  # the SDK's own server span goes on
