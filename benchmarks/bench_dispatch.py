"""Dispatch benchmarks (issue 10): raw JSON arguments in, result messages out, beside a floor.

Run from the repository root::

    python -m benchmarks.bench_dispatch           # the table (about 1-2 minutes on 2 cores)
    python -m benchmarks.bench_dispatch --quick   # fewer, shorter runs, no peers (about 20 s)
    python -m benchmarks.bench_dispatch --json    # one JSON document on one line

Every row is measured in the same process as the row it is compared with, its **floor**, and
prints its time per call, the ratio to that floor, the issue's target for the ratio and PASS
or FAIL against it. A FAIL is a report, not an error: the process still exits 0.

The floor of a single call is the least a dispatcher does, written by hand:
``msgspec.json.Decoder(ArgsStruct).decode`` of the raw arguments, ``msgspec.structs.asdict``,
the call, the return value encoded as JSON text and a ``ToolMessage``-like ``Struct`` built
from it. The rows (one call of the 3-parameter tool :func:`benchmarks._data.search_docs`
unless said):

1. plain ``dispatch_sync`` (target 2.5x the floor); the 20-parameter tool as a reference.
   Beside the floor, a second reference: ``dispatch_sync``'s very result (the two events,
   the message with the value as structured output, the ``DispatchResult``) made by hand
   with none of dispatch's checks (:func:`by_hand`; checked equal to the real one before
   timing) — what is left of a target once the result itself is paid for.
2. the general path real users take: a sync ``on_event`` handler, one ``before_tool``
   middleware returning the call and one ``after_tool`` returning the result, and
   ``RunPolicy(max_tool_calls=8, allowlist={...})`` (5x); and each of them alone, and
   ``advertised=`` alone, so a regression can be located (5x each). Rows 2e-2g:
   ``tinytools.otel.OpenTelemetry`` with no-op providers and with the global providers
   unset (row 1 + 1.5 µs), and recording with the SDK against row 1 run inside the same
   span and histogram record made by hand (a ratio only: what tinytools adds to the SDK).
3. a sync tool under ``RunPolicy(tool_timeout=5)`` (a worker thread, so the timeout holds)
   through ``dispatch_sync`` (15x).
4. an async tool through ``dispatch_sync`` (40x), against the async floor driven by hand
   (``coroutine.send(None)``, no event loop); ``await dispatch`` of it under trio is listed
   beside the async floor awaited under trio, without a target.
5. the error paths, against the floor of a good call (8x each): relaxed JSON (single quotes,
   trailing comma) that is repaired and run; arguments that break the schema, answered with
   an error; a tool that raises ``ValueError``.
6. 100 calls of an async tool that yields to the loop once (``trio.sleep(0)`` under trio,
   ``asyncio.sleep(0)`` under asyncio), through ``await dispatch`` with
   ``RunPolicy(max_concurrency=100)`` (the default, 1, runs them one by one), against a bare
   trio nursery (1.1x) or ``asyncio.TaskGroup`` (1.2x) whose tasks do the floor's work; and
   with ``max_concurrency=10`` against the same with a ``trio.CapacityLimiter(10)`` or an
   ``asyncio.Semaphore(10)``. Times are per call. A reference row makes ``dispatch``'s
   result for the batch by hand in the same kind of tasks (:func:`_by_hand_batch`).
7. the cost of one call at 10,000 registered tools against the same at 10 tools (1.2x): a
   known call; an unknown name (answered with an error); ``advertised=`` a set of 5 names;
   the tools passed as a list instead of a ``Registry``. The registry, list and set are built
   once, outside the timed runs, as a user builds them.
8. the peers, each through the dispatcher its framework runs tool calls with, with the sync
   tool and (Pydantic AI and OpenAI Agents, which are only fair with one) the async twin:
   Pydantic AI ``ToolManager.handle_call``, OpenAI Agents ``FunctionTool.on_invoke_tool``
   (both awaited in one asyncio loop kept for the whole benchmark; both run a sync tool in a
   worker thread), LangChain ``StructuredTool.invoke(ToolCall)``, LangGraph
   ``ToolNode.invoke`` (and inside a one-node graph). No targets: ratios only.

9. one agent turn users feel (:mod:`benchmarks._turn` says exactly what each side does): a
   scripted model's response with three tool calls parsed, the three tools run, the next
   request's messages built, the model called again and its final text read. tinytools:
   ``openai_chat.parse_calls``, ``dispatch_sync`` (sync tools) or ``await dispatch`` under
   asyncio (async tools, three at once), ``assistant_message`` and ``tool_results``; beside
   Pydantic AI's ``Agent.run`` with a ``FunctionModel`` and the OpenAI Agents SDK's
   ``Runner.run`` with a scripted ``Model`` (sync and async tools, in one asyncio loop), all
   against the same turn written by hand with msgspec and no checks. Each side's turn is
   checked once (untimed) to end on the final text after exactly the script's three calls.
   No targets: ratios only.

Also kept from issue 4: a batch of 1,000 calls against a batch of 10, per call (1.2x).

How time is measured (:mod:`benchmarks._timing`): the **process's** CPU time, since worker
threads do part of some rows' work (wall-clock time of the same runs is printed beside it);
async operations timed inside their event loop; one untimed call, then runs of about
``RUN_SECONDS``; the best of ``--repeat`` runs of the mean per call; each section's rows
interleaved round by round with their floors; the collector on (a dispatcher's garbage is
part of its cost), objects alive before the runs frozen out of its sight. A one-call row with
keyword arguments is timed as the direct call a user writes (in a lambda, whose frame it
pays), not through ``functools.partial``, which copies its keywords' dict on every call.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping, Sequence
from types import ModuleType
from typing import Any, Literal

import attrs
import msgspec
import trio

import tinytools
from tinytools import RunPolicy, ToolCall
from tinytools.events import ToolCompleted, ToolStarted

from . import _turn, peers
from ._data import (
    BIG,
    SMALL,
    SMALL_INVALID,
    SMALL_RELAXED,
    Shape,
    async_twin,
    failing_search,
    make_functions,
    search_docs,
)
from ._report import duration, header, machine_info, options, ratio, table, versions
from ._timing import PROCESS_CLOCK, RUN_SECONDS, Op, Sample, Timer

__all__ = ["main"]

#: Peer dispatchers, by module under ``benchmarks.peers``.
DISPATCH_PEERS = ("pydantic_ai", "openai_agents", "langchain", "langgraph")
#: The peers whose agents run the whole turn of row 9 (each module has ``turn``).
TURN_PEERS = ("pydantic_ai", "openai_agents")
ASYNC_BATCH = 100
LIMITED = 10
FEW_TOOLS, MANY_TOOLS = 10, 10_000
ADVERTISED = 5
FEW_CALLS, MANY_CALLS = 10, 1_000
#: Runs per operation: the rows' floors take about a microsecond, so more runs than the
#: other modules make to find a quiet one (the whole module still takes about a minute).
DISPATCH_REPEAT = 10
#: ``--quick``: runs per operation and seconds per run.
QUICK_REPEAT, QUICK_SECONDS = 2, 0.02
#: Distributions whose versions are reported.
VERSIONS = (
    "tinytools",
    "msgspec",
    "trio",
    "anyio",
    "attrs",
    "pydantic",
    "pydantic-ai-slim",
    "openai-agents",
    "langchain-core",
    "langgraph",
)

Role = Literal["tinytools", "floor", "peer", "reference"]


# --- rows ---------------------------------------------------------------------------------------


@attrs.frozen
class Row:
    """One thing to time: ``op`` makes ``calls`` calls (None: not available, see ``note``).

    ``floor`` names the row of the same section it is compared with; ``target`` is the
    issue's limit for the ratio to it (None: a ratio only).
    """

    name: str
    role: Role
    op: Op | None
    floor: str | None = None
    target: float | None = None
    calls: int = 1
    note: str = ""


@attrs.frozen
class Section:
    title: str
    rows: tuple[Row, ...]


@attrs.frozen
class Result:
    """One row's time per call, and its floor's."""

    section: str
    row: Row
    time: Sample | None
    floor_time: Sample | None

    @property
    def ratio(self) -> float | None:
        if self.time is None or self.floor_time is None:
            return None
        return self.time.cpu / self.floor_time.cpu

    @property
    def verdict(self) -> str:
        if self.row.target is None:
            return "-"
        if self.ratio is None:
            return "n/a"
        return "PASS" if self.ratio <= self.row.target else "FAIL"

    def to_json(self) -> dict[str, object]:
        return {
            "section": self.section,
            "row": self.row.name,
            "role": self.row.role,
            "cpu_s": None if self.time is None else self.time.cpu,
            "wall_s": None if self.time is None else self.time.wall,
            "floor": self.row.floor,
            "ratio": self.ratio,
            "target": self.row.target,
            "result": self.verdict,
            "note": self.row.note,
        }


def timed(timer: Timer, section: Section) -> list[Result]:
    """Every row of ``section`` timed together (interleaved), per call."""
    times = timer.measure({r.name: r.op for r in section.rows if r.op is not None})
    per = {r.name: times[r.name].per(r.calls) for r in section.rows if r.op is not None}
    return [
        Result(section.title, r, per.get(r.name), None if r.floor is None else per.get(r.floor))
        for r in section.rows
    ]


# --- the floors ---------------------------------------------------------------------------------


class FloorMessage(msgspec.Struct, frozen=True, kw_only=True):
    """The floor's result message: the fields of ``tinytools.ToolMessage`` that it fills."""

    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    status: str = "ok"


_asdict = msgspec.structs.asdict
_encode = msgspec.json.encode


def floor_sync(shape: Shape, fn: Callable[..., object]) -> Callable[[ToolCall], FloorMessage]:
    """The least a dispatcher does for one call: typed decode, call, JSON text, message."""
    decode = msgspec.json.Decoder(shape.floor).decode

    def answer(call: ToolCall) -> FloorMessage:
        value = fn(**_asdict(decode(call.arguments)))  # type: ignore[arg-type]
        return FloorMessage(tool_call_id=call.id, name=call.name, content=_encode(value).decode())

    return answer


def floor_async(
    shape: Shape, fn: Callable[..., Awaitable[object]]
) -> Callable[[ToolCall], Coroutine[Any, Any, FloorMessage]]:
    """:func:`floor_sync` for an async tool (the call is awaited)."""
    decode = msgspec.json.Decoder(shape.floor).decode

    async def answer(call: ToolCall) -> FloorMessage:
        value = await fn(**_asdict(decode(call.arguments)))  # type: ignore[arg-type]
        return FloorMessage(tool_call_id=call.id, name=call.name, content=_encode(value).decode())

    return answer


def by_hand(
    shape: Shape, fn: Callable[..., object]
) -> Callable[[ToolCall], tinytools.DispatchResult]:
    """What ``dispatch_sync`` returns for one good call of ``fn``, made by hand with none of
    its checks: the floor's work plus the result's parts (the two events, the message with
    the value as structured output, the ``DispatchResult``). A reference, not a floor: it
    shows how much of a target the result itself takes before any check is made."""
    decode = msgspec.json.Decoder(shape.floor).decode

    def answer(call: ToolCall) -> tinytools.DispatchResult:
        arguments = _asdict(decode(call.arguments))  # type: ignore[arg-type]
        started = ToolStarted(call_id=call.id, tool_name=call.name, arguments=arguments)
        value = fn(**arguments)
        message = tinytools.ToolMessage(
            tool_call_id=call.id,
            name=call.name,
            content=_encode(value).decode(),
            artifact=tinytools.ToolOutput(value, ()),
        )
        completed = ToolCompleted(call_id=call.id, tool_name=call.name, metadata={})
        return tinytools.DispatchResult((message,), (started, completed), executed=(call.id,))

    return answer


def drive(coroutine: Coroutine[Any, Any, object]) -> object:
    """Run a coroutine that never waits to its end, with no event loop."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    coroutine.close()
    raise RuntimeError("the coroutine waited for something; it needs an event loop")


# --- checks: each tinytools row does what its name says ----------------------------------------


def _checked(
    op: Callable[[], tinytools.DispatchResult], status: str, n: int = 1
) -> Callable[[], object]:
    """``op``, after one call whose ``n`` messages all have ``status`` (run outside the timing)."""
    result = op()
    statuses = [m.status for m in result.messages]
    if statuses != [status] * n:
        raise AssertionError(f"{op!r}: expected {n} x {status!r}, got {statuses}")
    return op


def _checked_async(
    fn: Callable[[], Awaitable[tinytools.DispatchResult]], kind: Literal["trio", "asyncio"], n: int
) -> Op:
    """:func:`_checked` for an awaited dispatch (run once in a fresh loop of ``kind``)."""

    async def once() -> tinytools.DispatchResult:
        return await fn()

    result = trio.run(once) if kind == "trio" else asyncio.run(once())
    statuses = [m.status for m in result.messages]
    if statuses != ["ok"] * n:
        raise AssertionError(f"{fn!r}: expected {n} x 'ok', got {statuses}")
    return Op(fn, kind)


# --- 1-5: one call ------------------------------------------------------------------------------


def _calls(name: str, raw: str, n: int = 1) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(f"call_{i}", name, raw) for i in range(n))


def _ignore_event(event: object) -> None:
    """The cheapest ``on_event`` handler."""


def _pass_call(call: ToolCall, env: object) -> ToolCall:
    """A ``before_tool`` hook that lets every call through unchanged."""
    return call


def _pass_result(call: ToolCall, result: tinytools.ToolResult, env: object) -> tinytools.ToolResult:
    """An ``after_tool`` hook that keeps every result."""
    return result


FLOOR = "msgspec floor"
BY_HAND = "dispatch_sync's result, made by hand"
BY_HAND_BATCH = "dispatch's result, made by hand in the same tasks"
HAND_NOTE = "no checks: the least that returns the same"


def sync_call_section(peer_modules: Mapping[str, ModuleType | None]) -> Section:
    """Rows 1, 2, 3 and 5 and the peers' sync-tool rows, all against the one-call floor."""
    fn, name = SMALL.fn, SMALL.fn.__name__
    registry = tinytools.Registry([tinytools.tool(fn), tinytools.tool(failing_search)])
    good = _calls(name, SMALL.raw)
    middleware = [tinytools.before_tool(_pass_call), tinytools.after_tool(_pass_result)]
    policy = RunPolicy(max_tool_calls=8, allowlist={name})
    advertised = {name}
    answer = floor_sync(SMALL, fn)

    dispatch_sync = tinytools.dispatch_sync
    timeout = RunPolicy(tool_timeout=5)

    def ours(label: str, target: float, op: Callable[[], Any], status: str = "ok") -> Row:
        return Row(label, "tinytools", Op(_checked(op, status)), FLOOR, target)

    def calls_of(raw: str, tool: str = name) -> Callable[[], Any]:
        return functools.partial(dispatch_sync, _calls(tool, raw), registry)

    # A row with keyword arguments makes the direct call a user writes, in a lambda:
    # functools.partial with keywords would copy its dict on every call (about 900
    # instructions, a tenth of the floor, that no user's call pays).
    hand = by_hand(SMALL, fn)
    if hand(good[0]) != tinytools.dispatch_sync(good, registry):
        raise AssertionError("the hand-made result differs from dispatch_sync's")
    rows = [
        Row(FLOOR, "floor", Op(functools.partial(answer, good[0]))),
        Row(BY_HAND, "reference", Op(functools.partial(hand, good[0])), FLOOR, note=HAND_NOTE),
        ours("1. dispatch_sync, plain", 2.5, functools.partial(dispatch_sync, good, registry)),
        ours(
            "2. general: on_event + before/after middleware + policy",
            5.0,
            lambda: dispatch_sync(
                good, registry, on_event=_ignore_event, middleware=middleware, policy=policy
            ),
        ),
        ours(
            "2a. on_event only", 5.0, lambda: dispatch_sync(good, registry, on_event=_ignore_event)
        ),
        ours(
            "2b. before/after middleware only",
            5.0,
            lambda: dispatch_sync(good, registry, middleware=middleware),
        ),
        *_otel_rows(good, registry),
        ours(
            "2c. RunPolicy(max_tool_calls=8, allowlist) only",
            5.0,
            lambda: dispatch_sync(good, registry, policy=policy),
        ),
        ours(
            "2d. advertised= only",
            5.0,
            lambda: dispatch_sync(good, registry, advertised=advertised),
        ),
        ours(
            "3. RunPolicy(tool_timeout=5), sync tool",
            15.0,
            lambda: dispatch_sync(good, registry, policy=timeout),
        ),
        ours("5a. relaxed JSON, repaired", 8.0, calls_of(SMALL_RELAXED)),
        ours("5b. invalid arguments, answered", 8.0, calls_of(SMALL_INVALID), "error"),
        ours("5c. tool raises ValueError", 8.0, calls_of(SMALL.raw, "failing_search"), "error"),
        *_peer_rows(peer_modules, fn, FLOOR),
    ]
    graph = peer_modules.get("langgraph")
    if graph is not None:
        op = Op(graph.graph_dispatcher(fn, SMALL.raw))
        rows.append(Row(graph.GRAPH_LABEL, "reference", op, FLOOR, note="how apps run ToolNode"))
    return Section("one call, 3-param sync tool", tuple(rows))


def _otel_rows(good: tuple[ToolCall, ...], registry: tinytools.Registry) -> list[Row]:
    """Rows 2e-2g: ``tinytools.otel.OpenTelemetry`` with nothing to record — given no-op
    providers (2e), or following global providers no one has set (2f: a library whose host
    configures no SDK) — whose cost over row 1 the issue limits to 1.5 µs a call; and
    recording with the SDK (2g), against a floor of row 1 run inside one span of the same
    name and attributes made current by hand, and one histogram record: the ratio is what
    tinytools adds to the SDK's own work. (Not available without the API, or for 2g the
    SDK; the global providers are never set here.)"""
    noop = "2e. OpenTelemetry(no-op tracer and meter providers)"
    unset = "2f. OpenTelemetry(), global providers unset"
    sdk_floor = "row 1 inside one SDK span and histogram record, by hand"
    sdk = "2g. OpenTelemetry(SDK tracer and meter providers)"
    try:
        from opentelemetry.metrics import NoOpMeterProvider
        from opentelemetry.trace import NoOpTracerProvider

        from tinytools.otel import OpenTelemetry
    except ImportError:
        note = 'pip install "tinytools[otel]"'
        return [Row(name, "tinytools", None, note=note) for name in (noop, unset, sdk)]
    limit = "limit: row 1 + 1.5 µs"

    def ours(middleware: Sequence[object]) -> Op:
        return Op(
            _checked(lambda: tinytools.dispatch_sync(good, registry, middleware=middleware), "ok")
        )

    rows = [
        Row(
            noop,
            "tinytools",
            ours([OpenTelemetry(NoOpTracerProvider(), NoOpMeterProvider())]),
            FLOOR,
            2.5,
            note=limit,
        ),
        Row(unset, "tinytools", ours([OpenTelemetry()]), FLOOR, 2.5, note=limit),
    ]
    try:
        providers = _sdk_providers()
    except ImportError:
        return [*rows, Row(sdk, "tinytools", None, note="pip install opentelemetry-sdk")]
    tracer_provider, meter_provider = providers
    hand = _span_by_hand(good, registry, *providers)
    rows.append(Row(sdk_floor, "reference", Op(_checked(hand, "ok")), FLOOR, note="no checks"))
    otel = [OpenTelemetry(tracer_provider, meter_provider)]
    note = "what tinytools adds to the SDK's work"
    rows.append(Row(sdk, "tinytools", ours(otel), sdk_floor, note=note))
    return rows


def _sdk_providers() -> tuple[Any, Any]:
    """An SDK tracer provider whose spans go through a ``SimpleSpanProcessor`` to an
    exporter that drops them, and a meter provider read in memory: the SDK's whole work
    per span and measurement, none of an exporter's."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class Dropped(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(Dropped()))
    return tracer_provider, MeterProvider([InMemoryMetricReader()])


def _span_by_hand(
    good: tuple[ToolCall, ...],
    registry: tinytools.Registry,
    tracer_provider: Any,
    meter_provider: Any,
) -> Callable[[], tinytools.DispatchResult]:
    """Row 1 inside the span ``OpenTelemetry`` makes for the call (its name and attributes,
    made current while the call runs) and the histogram record it makes: the SDK's share
    of row 2g, the least a bridge written by hand does."""
    from opentelemetry import context, trace

    from tinytools.otel import DURATION_METRIC

    (call,) = good
    tracer = tracer_provider.get_tracer("bench")
    histogram = meter_provider.get_meter("bench").create_histogram(DURATION_METRIC, unit="s")
    name = f"execute_tool {call.name}"
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": registry.get(call.name).description,  # type: ignore[union-attr]
        "gen_ai.tool.call.id": call.id,
    }
    measured = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name}
    dispatch_sync, perf_counter, internal = (
        tinytools.dispatch_sync,
        time.perf_counter,
        trace.SpanKind.INTERNAL,
    )

    def by_hand() -> tinytools.DispatchResult:
        span = tracer.start_span(name, kind=internal, attributes=attributes)
        started = perf_counter()
        token = context.attach(trace.set_span_in_context(span))
        try:
            result = dispatch_sync(good, registry)
        finally:
            context.detach(token)
        span.end()
        histogram.record(perf_counter() - started, measured)
        return result

    return by_hand


def big_call_section() -> Section:
    """Row 1 for the 20-parameter tool (a reference: the issue sets no target for it)."""
    registry = tinytools.Registry([tinytools.tool(BIG.fn)])
    calls = _calls(BIG.fn.__name__, BIG.raw)
    answer = floor_sync(BIG, BIG.fn)
    op = _checked(functools.partial(tinytools.dispatch_sync, calls, registry), "ok")
    return Section(
        "one call, 20-param sync tool (nested objects)",
        (
            Row(FLOOR, "floor", Op(functools.partial(answer, calls[0]))),
            Row("dispatch_sync, plain", "reference", Op(op), FLOOR),
        ),
    )


def async_call_section(peer_modules: Mapping[str, ModuleType | None]) -> Section:
    """Row 4, ``await dispatch`` under trio, and the peers' async-tool rows."""
    afn = async_twin(SMALL.fn)
    registry = tinytools.Registry([tinytools.tool(afn)])
    calls = _calls(afn.__name__, SMALL.raw)
    answer = floor_async(SMALL, afn)
    by_hand = "floor, async: driven by hand (no loop)"
    under_trio = "floor, async: awaited under trio"
    under_asyncio = "floor, async: awaited under asyncio"
    sync_op = _checked(functools.partial(tinytools.dispatch_sync, calls, registry), "ok")
    trio_op = _checked_async(functools.partial(tinytools.dispatch, calls, registry), "trio", 1)
    rows = [
        Row(by_hand, "floor", Op(lambda: drive(answer(calls[0])))),
        Row(under_trio, "floor", Op(functools.partial(answer, calls[0]), "trio")),
        Row(under_asyncio, "floor", Op(functools.partial(answer, calls[0]), "asyncio")),
        Row("4. dispatch_sync, async tool", "tinytools", Op(sync_op), by_hand, 40.0),
        Row("await dispatch, async tool, under trio", "reference", trio_op, under_trio),
        *_peer_rows(peer_modules, afn, under_asyncio),
    ]
    return Section("one call, 3-param async tool", tuple(rows))


def _peer_rows(
    peer_modules: Mapping[str, ModuleType | None], fn: Callable[..., object], floor: str
) -> list[Row]:
    """Each peer's dispatcher for ``fn`` (an async ``fn`` only goes to the awaited ones)."""
    is_async = inspect.iscoroutinefunction(fn)
    tool = "async" if is_async else "sync"
    rows: list[Row] = []
    for name, module in peer_modules.items():
        if module is None:
            rows.append(Row(f"peer {name} ({tool} tool)", "peer", None, note="not installed"))
        elif not is_async or module.DISPATCH_LOOP != "sync":
            op = Op(module.dispatcher(fn, SMALL.raw), module.DISPATCH_LOOP)
            rows.append(Row(f"8. {module.DISPATCH_LABEL} ({tool} tool)", "peer", op, floor))
    return rows


# --- 6: 100 concurrent async calls ------------------------------------------------------------


def _trio_floor(
    answer: Callable[[ToolCall], Awaitable[FloorMessage]],
    calls: Sequence[ToolCall],
    limit: int | None,
) -> Callable[[], Awaitable[list[object]]]:
    """A bare nursery: one task per call doing the floor's work (at most ``limit`` at once)."""

    async def batch() -> list[object]:
        messages: list[object] = [None] * len(calls)
        limiter = None if limit is None else trio.CapacityLimiter(limit)

        async def one(index: int) -> None:
            if limiter is None:
                messages[index] = await answer(calls[index])
            else:
                async with limiter:
                    messages[index] = await answer(calls[index])

        async with trio.open_nursery() as nursery:
            for index in range(len(calls)):
                nursery.start_soon(one, index)
        return messages

    return batch


def _asyncio_floor(
    answer: Callable[[ToolCall], Awaitable[FloorMessage]],
    calls: Sequence[ToolCall],
    limit: int | None,
) -> Callable[[], Awaitable[list[object]]]:
    """:func:`_trio_floor` with ``asyncio.TaskGroup`` and ``asyncio.Semaphore``."""

    async def batch() -> list[object]:
        messages: list[object] = [None] * len(calls)
        semaphore = None if limit is None else asyncio.Semaphore(limit)

        async def one(index: int) -> None:
            if semaphore is None:
                messages[index] = await answer(calls[index])
            else:
                async with semaphore:
                    messages[index] = await answer(calls[index])

        async with asyncio.TaskGroup() as group:  # type: ignore[attr-defined]
            for index in range(len(calls)):
                group.create_task(one(index))
        return messages

    return batch


def _by_hand_batch(
    kind: Literal["trio", "asyncio"],
    shape: Shape,
    fn: Callable[..., Awaitable[object]],
    calls: Sequence[ToolCall],
) -> Callable[[], Awaitable[tinytools.DispatchResult]]:
    """The bare nursery (or ``TaskGroup``) whose tasks make what ``await dispatch`` returns
    for the batch, by hand with none of its checks: :func:`by_hand` per call (events in the
    order the tasks emit them), one ``DispatchResult`` at the end. A reference."""
    decode = msgspec.json.Decoder(shape.floor).decode
    executed = tuple(call.id for call in calls)

    async def batch() -> tinytools.DispatchResult:
        messages: list[object] = [None] * len(calls)
        events: list[object] = []

        async def one(index: int) -> None:
            call = calls[index]
            arguments = _asdict(decode(call.arguments))  # type: ignore[arg-type]
            events.append(ToolStarted(call_id=call.id, tool_name=call.name, arguments=arguments))
            value = await fn(**arguments)
            messages[index] = tinytools.ToolMessage(
                tool_call_id=call.id,
                name=call.name,
                content=_encode(value).decode(),
                artifact=tinytools.ToolOutput(value, ()),
            )
            events.append(ToolCompleted(call_id=call.id, tool_name=call.name, metadata={}))

        if kind == "trio":
            async with trio.open_nursery() as nursery:
                for index in range(len(calls)):
                    nursery.start_soon(one, index)
        else:
            async with asyncio.TaskGroup() as group:  # type: ignore[attr-defined]
                for index in range(len(calls)):
                    group.create_task(one(index))
        return tinytools.DispatchResult(tuple(messages), tuple(events), executed=executed)  # type: ignore[arg-type]

    return batch


def _same_result(
    kind: Literal["trio", "asyncio"],
    hand: Callable[[], Awaitable[tinytools.DispatchResult]],
    ours: Callable[[], Awaitable[tinytools.DispatchResult]],
) -> None:
    """Check the hand-made batch returns what dispatch does (events compared as a multiset:
    the loop may run a batch's tasks in another order each time)."""

    async def both() -> tuple[tinytools.DispatchResult, tinytools.DispatchResult]:
        return await hand(), await ours()

    made, real = trio.run(both) if kind == "trio" else asyncio.run(both())
    key = msgspec.json.encode
    if (made.messages, made.executed) != (real.messages, real.executed) or sorted(
        map(key, made.events)
    ) != sorted(map(key, real.events)):
        raise AssertionError("the hand-made batch result differs from dispatch's")


def async_batch_section(kind: Literal["trio", "asyncio"]) -> Section:
    """Row 6 under one event loop: unbounded and at most ``LIMITED`` at once."""
    checkpoint = (
        functools.partial(trio.sleep, 0) if kind == "trio" else functools.partial(asyncio.sleep, 0)
    )
    afn = async_twin(SMALL.fn, checkpoint=checkpoint)
    registry = tinytools.Registry([tinytools.tool(afn)])
    calls = _calls(afn.__name__, SMALL.raw, ASYNC_BATCH)
    answer = floor_async(SMALL, afn)
    target = 1.1 if kind == "trio" else 1.2
    floor_name = "bare trio nursery" if kind == "trio" else "asyncio.TaskGroup"
    limiter = f"trio.CapacityLimiter({LIMITED})" if kind == "trio" else f"Semaphore({LIMITED})"
    make_floor = _trio_floor if kind == "trio" else _asyncio_floor
    missing = kind == "asyncio" and not hasattr(asyncio, "TaskGroup")
    rows: list[Row] = []
    for limit, floor in ((None, floor_name), (LIMITED, f"{floor_name} + {limiter}")):
        concurrency = ASYNC_BATCH if limit is None else limit
        policy = RunPolicy(max_concurrency=concurrency)
        ours = functools.partial(tinytools.dispatch, calls, registry, policy=policy)
        floor_op = None if missing else Op(make_floor(answer, calls, limit), kind)
        rows.append(
            Row(
                floor,
                "floor",
                floor_op,
                calls=ASYNC_BATCH,
                note="Python >= 3.11" if missing else "",
            )
        )
        if limit is None and not missing:
            hand = _by_hand_batch(kind, SMALL, afn, calls)
            _same_result(kind, hand, ours)
            hand_row = Row(BY_HAND_BATCH, "reference", Op(hand, kind), floor, None, ASYNC_BATCH)
            rows.append(attrs.evolve(hand_row, note=HAND_NOTE))
        rows += [
            Row(
                f"6. await dispatch, max_concurrency={concurrency}",
                "tinytools",
                _checked_async(ours, kind, ASYNC_BATCH),
                floor,
                target,
                ASYNC_BATCH,
            ),
        ]
    title = f"{ASYNC_BATCH} async calls under {kind}, each yields once (per call)"
    return Section(title, tuple(rows))


# --- 7: many registered tools -------------------------------------------------------------------


def registry_section() -> Section:
    """Row 7: one call's cost at ``MANY_TOOLS`` registered tools against ``FEW_TOOLS``."""
    name = search_docs.__name__
    others = [tinytools.tool(f) for f in make_functions(MANY_TOOLS - 1)]
    known, unknown = _calls(name, SMALL.raw), _calls("no_such_tool", SMALL.raw)
    rows: list[Row] = []
    for size in (FEW_TOOLS, MANY_TOOLS):
        tools = [tinytools.tool(search_docs), *others[: size - 1]]
        registry = tinytools.Registry(tools)
        advertised = {t.name for t in tools[:ADVERTISED]}
        cases: list[tuple[str, Sequence[ToolCall], Any, str, Collection[str] | None]] = [
            ("known tool", known, registry, "ok", None),
            ("unknown name", unknown, registry, "error", None),
            (f"advertised= {ADVERTISED} names", known, registry, "ok", advertised),
            ("tools as a list", known, tools, "ok", None),
        ]
        for label, calls, given, status, names in cases:
            op = functools.partial(tinytools.dispatch_sync, calls, given, advertised=names)
            few = f"{label}, {FEW_TOOLS} tools"
            if size == FEW_TOOLS:
                rows.append(Row(few, "floor", Op(_checked(op, status)), note="dispatch_sync"))
            else:
                row_name = f"7. {label}, {MANY_TOOLS:,} tools"
                rows.append(Row(row_name, "tinytools", Op(_checked(op, status)), few, 1.2))
    order = [r for r in rows if r.role == "floor"]
    paired = [x for floor in order for x in rows if x is floor or x.floor == floor.name]
    return Section(f"one call, {MANY_TOOLS:,} registered tools vs {FEW_TOOLS}", tuple(paired))


def batch_section() -> Section:
    """Issue 4's linearity check: per call in a batch of ``MANY_CALLS`` against ``FEW_CALLS``."""
    registry = tinytools.Registry([tinytools.tool(SMALL.fn)])
    rows: list[Row] = []
    for n in (FEW_CALLS, MANY_CALLS):
        calls = _calls(SMALL.fn.__name__, SMALL.raw, n)
        op = Op(_checked(functools.partial(tinytools.dispatch_sync, calls, registry), "ok", n))
        if n == FEW_CALLS:
            rows.append(Row(f"dispatch_sync, {n} calls", "floor", op, calls=n))
        else:
            floor = rows[0].name
            rows.append(Row(f"dispatch_sync, {n:,} calls", "tinytools", op, floor, 1.2, n))
    return Section("batch of sync calls (per call)", tuple(rows))


# --- 9: one agent turn ---------------------------------------------------------------------------

TURN_FLOOR = "by hand: msgspec decode, call, tool messages"
#: Builds one side's turn from the three tool functions.
TurnBuilder = Callable[[Sequence[Callable[..., Any]]], Callable[[], object]]


def _turn_op(
    build: TurnBuilder, tools: Literal["sync", "async"], loop: Literal["sync", "asyncio"]
) -> Op:
    """The timed turn of ``build`` over the sync tools or their async twins, run as a plain
    call or awaited in asyncio (``loop``), after a check (untimed) of the same turn built over
    tools that record their calls: it ended on the final text after exactly the script's
    calls. The timed tools record nothing."""

    def functions(journal: _turn.Journal | None) -> tuple[Callable[..., Any], ...]:
        made = _turn.tool_functions(journal)
        return made if tools == "sync" else tuple(async_twin(fn) for fn in made)

    journal: _turn.Journal = []
    checked = build(functions(journal))
    text = checked() if loop == "sync" else asyncio.run(_awaited(checked))  # type: ignore[arg-type]
    made = sorted(journal, key=repr)
    if text != _turn.FINAL or made != sorted(_turn.expected_journal(), key=repr):
        raise AssertionError(f"{build!r}: the turn ended on {text!r} after the calls {made}")
    return Op(build(functions(None)), loop)


async def _awaited(fn: Callable[[], Awaitable[object]]) -> object:
    return await fn()


def turn_section(peer_modules: Mapping[str, ModuleType | None]) -> Section:
    """Row 9: one agent turn (``benchmarks/_turn.py``), tinytools and the peers' agents."""
    rows = [
        Row(TURN_FLOOR, "floor", _turn_op(_turn.floor_turn, "sync", "sync"), note="no checks"),
        Row(
            "9. openai_chat.parse_calls, dispatch_sync, tool_results (sync tools)",
            "tinytools",
            _turn_op(_turn.tinytools_turn, "sync", "sync"),
            TURN_FLOOR,
        ),
        Row(
            "9. the same with await dispatch (async tools, asyncio)",
            "tinytools",
            _turn_op(_turn.tinytools_turn_async, "async", "asyncio"),
            TURN_FLOOR,
        ),
    ]
    for name in TURN_PEERS:
        module = peer_modules.get(name)
        if module is None:
            if name in peer_modules:
                rows.append(Row(f"peer {name} (agent turn)", "peer", None, note="not installed"))
            continue
        for tools in ("sync", "async"):
            op = _turn_op(module.turn, tools, "asyncio")
            rows.append(Row(f"9. {module.TURN_LABEL} ({tools} tools)", "peer", op, TURN_FLOOR))
    return Section("one agent turn: 3 tool calls, then the final text", tuple(rows))


# --- running ------------------------------------------------------------------------------------


def run(
    repeat: int = DISPATCH_REPEAT, seconds: float = RUN_SECONDS, with_peers: bool = True
) -> list[Result]:
    """Every section, in the order the table prints them (one interleaved group each).

    Without ``with_peers`` the peers are not even imported (that alone takes seconds).
    """
    peer_modules = peers.load(DISPATCH_PEERS) if with_peers else {}
    builders: list[Callable[[], Section]] = [
        functools.partial(sync_call_section, peer_modules),
        big_call_section,
        functools.partial(async_call_section, peer_modules),
        functools.partial(async_batch_section, "trio"),
        functools.partial(async_batch_section, "asyncio"),
        registry_section,
        batch_section,
        functools.partial(turn_section, peer_modules),
    ]
    results: list[Result] = []
    with Timer(repeat, clock=PROCESS_CLOCK, seconds=seconds) as timer:
        for build in builders:
            results += timed(timer, build())
    return results


def render(results: Sequence[Result]) -> str:
    """One table, a header line per section."""
    head = ("row", "CPU/call", "wall/call", "x floor", "target", "result", "floor / note")
    lines: list[tuple[str, ...]] = []
    section = None
    for r in results:
        if r.section != section:
            section = r.section
            lines.append((f"[{section}]", "", "", "", "", "", ""))
        time_ = r.time
        lines.append(
            (
                f"  {r.row.name}",
                r.row.note if time_ is None else duration(time_.cpu),
                "-" if time_ is None else duration(time_.wall),
                ratio(r.ratio),
                "-" if r.row.target is None else f"<= {r.row.target:g}x",
                r.verdict,
                "; ".join(x for x in (r.row.floor and f"vs {r.row.floor}", r.row.note) if x),
            )
        )
    targets = [r for r in results if r.row.target is not None]
    passed = sum(r.verdict == "PASS" for r in targets)
    return f"{table(head, lines)}\n\n{passed} of {len(targets)} targets met"


def main() -> None:
    """Run every row and print the table (or, with ``--json``, one JSON document)."""
    args = options(
        "python -m benchmarks.bench_dispatch",
        "Benchmarks for dispatch and dispatch_sync, beside the msgspec floor and the peers.",
        repeat=DISPATCH_REPEAT,
        quick=f"{QUICK_REPEAT} runs of ~{QUICK_SECONDS} s per row, no peers (about 20 s)",
    )
    quick = getattr(args, "quick", False)
    repeat = QUICK_REPEAT if quick and not args.repeat_given else args.repeat
    seconds = QUICK_SECONDS if quick else RUN_SECONDS
    machine = machine_info()
    started = time.perf_counter()
    results = run(repeat, seconds, with_peers=not quick)
    elapsed = time.perf_counter() - started
    method = (
        f"best of {repeat} interleaved ~{seconds} s runs, process CPU time per call "
        "(async calls timed inside their event loop)" + ("; --quick: no peers" if quick else "")
    )
    if args.json:
        document = {
            "benchmark": "dispatch",
            "method": method,
            "versions": versions(VERSIONS),
            "machine": machine,
            "elapsed_s": elapsed,
            "results": [r.to_json() for r in results],
        }
        print(json.dumps(document, allow_nan=False))
        return
    print(header("tinytools dispatch benchmarks", versions(VERSIONS), method, machine, elapsed))
    print(render(results))


if __name__ == "__main__":
    main()
