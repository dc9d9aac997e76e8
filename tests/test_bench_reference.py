"""The benchmark's hand-made reference rows return exactly what dispatch returns.

``benchmarks/bench_dispatch.py`` times ``dispatch_sync``'s result for one call, and
``await dispatch``'s for a batch, made by hand with none of dispatch's checks — the least a
dispatcher returning the same result does. The rows only mean that if the results are equal.
"""

from __future__ import annotations

import sys

import pytest
import trio

import tinytools
from benchmarks import bench_dispatch
from benchmarks._data import SMALL, async_twin


def test_one_call_made_by_hand_equals_dispatch_sync():
    call = tinytools.ToolCall("call_0", SMALL.fn.__name__, SMALL.raw)
    made = bench_dispatch.by_hand(SMALL, SMALL.fn)(call)
    assert made == tinytools.dispatch_sync([call], [tinytools.tool(SMALL.fn)])


def test_one_call_section_checks_its_reference():
    section = bench_dispatch.sync_call_section({})
    names = [row.name for row in section.rows]
    assert bench_dispatch.BY_HAND in names


def test_the_sdk_floor_records_what_opentelemetry_records():
    """Row 2g's floor makes by hand the span and the histogram point ``OpenTelemetry``
    makes for the call (same name, kind, attributes, metric): only then is the ratio what
    tinytools adds to the SDK's work."""
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tinytools.otel import OpenTelemetry

    def recorded(run):
        exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
        tracer_provider, meter_provider = TracerProvider(), MeterProvider([reader])
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
        run(tracer_provider, meter_provider)
        (span,) = exporter.get_finished_spans()
        metrics = reader.get_metrics_data().resource_metrics[0].scope_metrics[0].metrics
        points = [(m.name, dict(p.attributes)) for m in metrics for p in m.data.data_points]
        return span.name, span.kind, dict(span.attributes), points

    good = (tinytools.ToolCall("call_0", SMALL.fn.__name__, SMALL.raw),)
    registry = tinytools.Registry([tinytools.tool(SMALL.fn)])
    hand = recorded(lambda t, m: bench_dispatch._span_by_hand(good, registry, t, m)())
    ours = recorded(
        lambda t, m: tinytools.dispatch_sync(good, registry, middleware=[OpenTelemetry(t, m)])
    )
    assert hand == ours


@pytest.mark.parametrize("kind", ["trio", "asyncio"])
def test_batch_made_by_hand_equals_dispatch(kind):
    if kind == "asyncio" and sys.version_info < (3, 11):
        pytest.skip("the asyncio reference uses asyncio.TaskGroup (Python 3.11+)")
    afn = async_twin(SMALL.fn)
    calls = tuple(tinytools.ToolCall(f"c{i}", afn.__name__, SMALL.raw) for i in range(5))
    registry = tinytools.Registry([tinytools.tool(afn)])
    hand = bench_dispatch._by_hand_batch(kind, SMALL, afn, calls)

    async def ours() -> tinytools.DispatchResult:
        return await tinytools.dispatch(
            calls, registry, policy=tinytools.RunPolicy(max_concurrency=5)
        )

    bench_dispatch._same_result(kind, hand, ours)


def test_a_different_batch_result_is_caught():
    afn = async_twin(SMALL.fn)
    calls = tuple(tinytools.ToolCall(f"c{i}", afn.__name__, SMALL.raw) for i in range(2))
    registry = tinytools.Registry([tinytools.tool(afn)])
    hand = bench_dispatch._by_hand_batch("trio", SMALL, afn, calls)

    async def fewer() -> tinytools.DispatchResult:
        return await tinytools.dispatch(calls[:1], registry)

    with pytest.raises(AssertionError, match="differs"):
        bench_dispatch._same_result("trio", hand, fewer)
    assert trio.run(hand).executed == ("c0", "c1")
