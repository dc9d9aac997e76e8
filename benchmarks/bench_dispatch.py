"""Dispatch benchmarks: raw JSON arguments in, result messages out, beside the floor and the peers.

Run from the repository root::

    python -m benchmarks.bench_dispatch          # the tables
    python -m benchmarks.bench_dispatch --json   # one JSON document on one line

The scenarios of issue 4's Speed section, for the two tool shapes of :mod:`benchmarks._data`
(3 parameters; 20 with a nested object and a list of objects):

1. **One call.** ``dispatch_sync([call], registry)`` for a synchronous tool, and
   ``await dispatch([call], registry)`` under trio for its async twin, beside

   * the **floor**: ``msgspec.json.Decoder(ArgsStruct).decode`` of the raw arguments,
     ``msgspec.structs.asdict``, the call, the return value encoded as JSON text and a
     ``ToolMessage``-like ``Struct`` built from it (awaited, for the async tool);
   * the **peers**, each through the dispatcher its framework runs tool calls with, sync and
     async tool alike where it has both: Pydantic AI ``ToolManager.handle_call`` and OpenAI
     Agents ``FunctionTool.on_invoke_tool`` (awaited in one asyncio loop kept for the whole
     benchmark; both run a synchronous tool in a worker thread), LangChain
     ``StructuredTool.invoke(ToolCall)`` and LangGraph ``ToolNode.invoke`` (plain calls).
     Each peer gets the model's call as its framework represents it, built once (LangChain's
     and LangGraph's hold decoded arguments), and returns its framework's result message.
2. **Batches.** ``dispatch_sync`` of 1, 10, 100 and 1,000 calls (and 100 calls of the big
   tool), per call, beside the floor done in a loop: the cost must be linear in the size.
3. **Async batch.** 100 calls of an async tool that awaits ``trio.sleep(0)``, through
   ``await dispatch(..., policy=RunPolicy(max_concurrency=100))`` under trio, beside a bare
   trio nursery running the same 100 calls, each doing the floor's work (the batch floor);
   a nursery running only the tool coroutines is listed too.

References beside them: ``dispatch_sync`` of the async tool (it starts trio per call) and
LangGraph's ToolNode inside a compiled one-node ``StateGraph`` (how applications run it).

The targets (issue 4), checked in the last table: one sync call within 3x the floor, at least
10x faster than the fastest peer dispatcher (of any tool variant) and 100x faster than
LangChain; the async batch within 1.5x the bare nursery; linear cost, read as the per-call
time at 1,000 calls within 1.2x of that at 10.

How time is measured (the approach of :mod:`benchmarks.bench_foundation`, with two changes
the event loops and worker threads require):

* The clock is the **process's** CPU time (:func:`time.process_time`), not this thread's:
  the peers run synchronous tools in worker threads, whose work thread time would leave out.
  CPU time still leaves out waiting for a core on our shared machines. Wall-clock time of the
  same runs is reported beside it: a thread hop costs more latency than CPU.
* Async operations are timed **inside** their event loop (one ``trio.run`` per round for
  trio; the asyncio loop is kept open), so entering a loop is not part of any call.
* Otherwise as there: one untimed call, then runs of about ``RUN_SECONDS``; the best of
  ``--repeat`` runs of the mean per call; runs interleaved round by round; objects alive
  before the runs frozen (:func:`gc.freeze`). The collector stays on: a dispatcher's garbage
  is part of its cost.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import inspect
import itertools
import json
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import ModuleType
from typing import Literal

import attrs
import msgspec
import trio

import tinytools
from tinytools import ToolCall
from tinytools.policies import RunPolicy

from . import peers
from ._data import BIG, SMALL, Shape, async_twin
from ._report import duration, header, machine_info, options, ratio, table, versions
from ._timing import REPEAT, RUN_SECONDS

__all__ = ["main"]

CPU = time.process_time
WALL = time.perf_counter
#: Peer dispatchers, by module under ``benchmarks.peers``.
DISPATCH_PEERS = ("pydantic_ai", "openai_agents", "langchain", "langgraph")
BATCH_SIZES = (1, 10, 100, 1_000)
ASYNC_BATCH = 100
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

Kind = Literal["sync", "asyncio", "trio"]


# --- timing -------------------------------------------------------------------------------------


@attrs.frozen
class Op:
    """One operation to time: a plain callable, or a coroutine function and its event loop."""

    fn: Callable[[], object]
    kind: Kind = "sync"


@attrs.frozen
class Sample:
    """Seconds per operation: process CPU time and wall-clock time."""

    cpu: float
    wall: float

    def per(self, calls: int) -> Sample:
        return Sample(self.cpu / calls, self.wall / calls)


def _time_sync(fn: Callable[[], object], number: int) -> Sample:
    gc.collect()
    cpu, wall = CPU(), WALL()
    for _ in itertools.repeat(None, number):
        fn()
    return Sample((CPU() - cpu) / number, (WALL() - wall) / number)


async def _time_async(fn: Callable[[], Awaitable[object]], number: int) -> Sample:
    gc.collect()
    cpu, wall = CPU(), WALL()
    for _ in itertools.repeat(None, number):
        await fn()
    return Sample((CPU() - cpu) / number, (WALL() - wall) / number)


def _number(estimate: float) -> int:
    return max(1, math.ceil(RUN_SECONDS / max(estimate, 1e-9)))


def _calibrate_sync(fn: Callable[[], object]) -> int:
    """Calls per run of about ``RUN_SECONDS``, after one warm-up call."""
    start = CPU()
    fn()
    estimate = CPU() - start
    if estimate < RUN_SECONDS / 10:  # one call is too short to say much: time a batch
        estimate = _time_sync(fn, max(1, int(RUN_SECONDS / 10 / max(estimate, 1e-9)))).cpu
    return _number(estimate)


async def _calibrate_async(fn: Callable[[], Awaitable[object]]) -> int:
    start = CPU()
    await fn()
    estimate = CPU() - start
    if estimate < RUN_SECONDS / 10:
        number = max(1, int(RUN_SECONDS / 10 / max(estimate, 1e-9)))
        estimate = (await _time_async(fn, number)).cpu
    return _number(estimate)


async def _async_pass(
    ops: Mapping[str, Callable[[], Awaitable[object]]], numbers: Mapping[str, int] | None
) -> dict[str, int | Sample]:
    """Inside one event loop: calibrate every op (``numbers`` is None) or time one run of each."""
    if numbers is None:
        return {name: await _calibrate_async(fn) for name, fn in ops.items()}
    return {name: await _time_async(fn, numbers[name]) for name, fn in ops.items()}


class Timer:
    """Times operations of every kind, each in its own event loop.

    The asyncio loop lives as long as the timer, as in a long-running host (the peers keep
    worker threads and per-loop state); trio has no loop to keep, so each pass is one
    ``trio.run``.
    """

    def __init__(self, repeat: int) -> None:
        self.repeat = repeat
        self.loop = asyncio.new_event_loop()

    def close(self) -> None:
        self.loop.run_until_complete(self.loop.shutdown_default_executor())
        self.loop.close()

    def _pass(self, ops: Mapping[str, Op], numbers: Mapping[str, int] | None) -> dict[str, object]:
        out: dict[str, object] = {}
        for name, op in ops.items():
            if op.kind == "sync":
                out[name] = (
                    _calibrate_sync(op.fn) if numbers is None else _time_sync(op.fn, numbers[name])
                )
        for kind in ("asyncio", "trio"):
            group: dict[str, Callable[[], Awaitable[object]]] = {
                name: op.fn  # type: ignore[misc]
                for name, op in ops.items()
                if op.kind == kind
            }
            if not group:
                continue
            if kind == "asyncio":
                out.update(self.loop.run_until_complete(_async_pass(group, numbers)))
            else:
                out.update(trio.run(_async_pass, group, numbers))
        return out

    def measure(self, ops: Mapping[str, Op]) -> dict[str, Sample]:
        """The best of ``repeat`` interleaved runs of each op (CPU and wall-clock separately)."""
        numbers: dict[str, int] = self._pass(ops, None)  # type: ignore[assignment]
        cpu = dict.fromkeys(ops, math.inf)
        wall = dict.fromkeys(ops, math.inf)
        gc.collect()
        gc.freeze()  # what is alive now (peers, fixtures) is left out of every collection
        try:
            for _ in range(self.repeat):
                for name, sample in self._pass(ops, numbers).items():
                    assert isinstance(sample, Sample)
                    cpu[name] = min(cpu[name], sample.cpu)
                    wall[name] = min(wall[name], sample.wall)
        finally:
            gc.unfreeze()
        return {name: Sample(cpu[name], wall[name]) for name in ops}


# --- results ------------------------------------------------------------------------------------

Role = Literal["tinytools", "floor", "peer", "reference"]


@attrs.frozen
class Entry:
    """One implementation of a scenario, to time: ``op`` makes ``calls`` calls (None: absent)."""

    scenario: str
    who: str
    role: Role
    op: Op | None
    note: str = ""
    calls: int = 1


@attrs.frozen
class Result:
    """One implementation's time per call in one scenario (``None``: not installed)."""

    scenario: str
    who: str
    role: Role
    time: Sample | None
    note: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "scenario": self.scenario,
            "who": self.who,
            "role": self.role,
            "cpu_s": None if self.time is None else self.time.cpu,
            "wall_s": None if self.time is None else self.time.wall,
            "note": self.note,
        }


def timed(timer: Timer, entries: Sequence[Entry]) -> list[Result]:
    """Every entry's time per call, all measured together (interleaved)."""
    ops = {f"{e.scenario}|{e.who}": e.op for e in entries if e.op is not None}
    times = timer.measure(ops)
    return [
        Result(
            e.scenario,
            e.who,
            e.role,
            None if e.op is None else times[f"{e.scenario}|{e.who}"].per(e.calls),
            e.note,
        )
        for e in entries
    ]


@attrs.frozen
class Goal:
    """A target of the issue: ``measured`` must be at most (or at least) ``limit``."""

    text: str
    measured: float | None
    limit: float
    at_most: bool = True

    @property
    def met(self) -> bool | None:
        if self.measured is None:
            return None
        return self.measured <= self.limit if self.at_most else self.measured >= self.limit

    def to_json(self) -> dict[str, object]:
        return {**attrs.asdict(self), "met": self.met}


def _cpu(results: Sequence[Result], scenario: str, role: Role) -> float | None:
    """The CPU time of the scenario's (first) implementation in ``role``."""
    for r in results:
        if r.scenario == scenario and r.role == role and r.time is not None:
            return r.time.cpu
    return None


def _fastest(results: Sequence[Result], scenarios: Sequence[str]) -> Result | None:
    """The fastest peer over ``scenarios``."""
    timed = [r for r in results if r.scenario in scenarios and r.role == "peer" and r.time]
    return min(timed, key=lambda r: r.time.cpu if r.time else math.inf, default=None)


def _over(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a / b


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


def floor_sync(shape: Shape, fn: Callable[..., object]) -> Callable[[ToolCall], object]:
    """The least a dispatcher does for one call: typed decode, call, JSON text, message."""
    decode = msgspec.json.Decoder(shape.floor).decode

    def answer(call: ToolCall) -> FloorMessage:
        value = fn(**_asdict(decode(call.arguments)))  # type: ignore[arg-type]
        return FloorMessage(tool_call_id=call.id, name=call.name, content=_encode(value).decode())

    return answer


def floor_async(
    shape: Shape, fn: Callable[..., Awaitable[object]]
) -> Callable[[ToolCall], Awaitable[object]]:
    """:func:`floor_sync` for an async tool (the call is awaited)."""
    decode = msgspec.json.Decoder(shape.floor).decode

    async def answer(call: ToolCall) -> FloorMessage:
        value = await fn(**_asdict(decode(call.arguments)))  # type: ignore[arg-type]
        return FloorMessage(tool_call_id=call.id, name=call.name, content=_encode(value).decode())

    return answer


def _floor_batch(answer: Callable[[ToolCall], object], calls: Sequence[ToolCall]) -> list[object]:
    return [answer(call) for call in calls]


# --- the peers ----------------------------------------------------------------------------------


def _dispatch_peers() -> dict[str, ModuleType | None]:
    """Each peer module by name; ``None`` when its library is not installed."""
    return peers.load(DISPATCH_PEERS)


def _peer_entries(
    scenario: str, peers: Mapping[str, ModuleType | None], fn: Callable[..., object], raw: str
) -> list[Entry]:
    """Each peer's dispatcher for ``fn``; an async ``fn`` only goes to the awaited ones."""
    tool = "async" if inspect.iscoroutinefunction(fn) else "sync"
    entries: list[Entry] = []
    for name, module in peers.items():
        if module is None:
            if tool == "sync":
                entries.append(Entry(scenario, name, "peer", None))
        elif tool == "sync" or module.DISPATCH_LOOP != "sync":
            op = Op(module.dispatcher(fn, raw), module.DISPATCH_LOOP)
            entries.append(Entry(scenario, f"{module.DISPATCH_LABEL} ({tool} tool)", "peer", op))
    return entries


# --- the scenarios ------------------------------------------------------------------------------


def _calls(shape: Shape, n: int) -> list[ToolCall]:
    return [ToolCall(f"call_{i}", shape.fn.__name__, shape.raw) for i in range(n)]


def one_call_scenarios(shape: Shape) -> tuple[str, str]:
    """The names of the single-call scenarios for ``shape``: sync tool, async tool."""
    return (
        f"one call, {shape.params}-param sync tool",
        f"one call, {shape.params}-param async tool",
    )


def one_call_entries(shape: Shape, peers: Mapping[str, ModuleType | None]) -> list[Entry]:
    """One call, sync tool and async twin: tinytools, the floor, every peer, references."""
    sync_scenario, async_scenario = one_call_scenarios(shape)
    fn, afn = shape.fn, async_twin(shape.fn)
    sync_tools = tinytools.Registry([tinytools.tool(fn)])
    async_tools = tinytools.Registry([tinytools.tool(afn)])
    calls = _calls(shape, 1)
    answer, aanswer = floor_sync(shape, fn), floor_async(shape, afn)
    entries = [
        Entry(
            sync_scenario,
            "tinytools dispatch_sync",
            "tinytools",
            Op(functools.partial(tinytools.dispatch_sync, calls, sync_tools)),
        ),
        Entry(sync_scenario, "floor", "floor", Op(functools.partial(answer, calls[0]))),
        *_peer_entries(sync_scenario, peers, fn, shape.raw),
        Entry(
            async_scenario,
            "tinytools await dispatch",
            "tinytools",
            Op(functools.partial(tinytools.dispatch, calls, async_tools), "trio"),
            "under trio",
        ),
        Entry(
            async_scenario,
            "floor",
            "floor",
            Op(functools.partial(aanswer, calls[0]), "trio"),
            "awaited under trio",
        ),
        *_peer_entries(async_scenario, peers, afn, shape.raw),
        Entry(
            async_scenario,
            "tinytools dispatch_sync (async tool)",
            "reference",
            Op(functools.partial(tinytools.dispatch_sync, calls, async_tools)),
            "starts trio for the call",
        ),
    ]
    graph = peers.get("langgraph")
    if graph is not None:
        op = Op(graph.graph_dispatcher(fn, shape.raw))
        entries.append(Entry(sync_scenario, graph.GRAPH_LABEL, "reference", op, "how apps run it"))
    return entries


def batch_scenario(shape: Shape, size: int) -> str:
    return f"batch of {size:,}, {shape.params}-param sync tool (per call)"


def batch_entries() -> list[Entry]:
    """``dispatch_sync`` of growing batches, per call, beside the floor in a loop."""
    entries: list[Entry] = []
    for shape, size in [(SMALL, size) for size in BATCH_SIZES] + [(BIG, 100)]:
        tools = tinytools.Registry([tinytools.tool(shape.fn)])
        calls = _calls(shape, size)
        answer = floor_sync(shape, shape.fn)
        scenario = batch_scenario(shape, size)
        entries += [
            Entry(
                scenario,
                "tinytools dispatch_sync",
                "tinytools",
                Op(functools.partial(tinytools.dispatch_sync, calls, tools)),
                calls=size,
            ),
            Entry(
                scenario,
                "floor",
                "floor",
                Op(functools.partial(_floor_batch, answer, calls)),
                "in a loop",
                calls=size,
            ),
        ]
    return entries


ASYNC_BATCH_SCENARIO = (
    f"{ASYNC_BATCH} async calls, trio.sleep(0) each, max_concurrency={ASYNC_BATCH} (per batch)"
)


def async_batch_entries() -> list[Entry]:
    """100 concurrent calls of an async tool that yields once, under trio, beside a nursery."""
    afn = async_twin(SMALL.fn, checkpoint=functools.partial(trio.sleep, 0))
    tools = tinytools.Registry([tinytools.tool(afn)])
    calls = _calls(SMALL, ASYNC_BATCH)
    answer = floor_async(SMALL, afn)
    kwargs = msgspec.json.decode(SMALL.raw)

    async def floor() -> list[object]:
        messages: list[object] = [None] * len(calls)

        async def one(index: int) -> None:
            messages[index] = await answer(calls[index])

        async with trio.open_nursery() as nursery:
            for index in range(len(calls)):
                nursery.start_soon(one, index)
        return messages

    async def bare() -> None:
        async with trio.open_nursery() as nursery:
            for _ in calls:
                nursery.start_soon(functools.partial(afn, **kwargs))

    def ours(concurrency: int) -> Op:
        policy = RunPolicy(max_concurrency=concurrency)
        return Op(functools.partial(tinytools.dispatch, calls, tools, policy=policy), "trio")

    scenario = ASYNC_BATCH_SCENARIO
    return [
        Entry(scenario, "tinytools await dispatch", "tinytools", ours(ASYNC_BATCH)),
        Entry(
            scenario,
            "bare trio nursery",
            "floor",
            Op(floor, "trio"),
            "each task: the floor's decode, call and message",
        ),
        Entry(
            scenario,
            "bare trio nursery, tool coroutines only",
            "reference",
            Op(bare, "trio"),
            "arguments decoded beforehand, no messages",
        ),
        Entry(
            scenario,
            "tinytools await dispatch, max_concurrency=1",
            "reference",
            ours(1),
            "one call at a time",
        ),
    ]


def run(repeat: int = REPEAT) -> list[Result]:
    """Every scenario, in the order the tables print them (one interleaved group each)."""
    peers = _dispatch_peers()
    timer = Timer(repeat)
    try:
        results = timed(timer, one_call_entries(SMALL, peers))
        results += timed(timer, one_call_entries(BIG, peers))
        results += timed(timer, batch_entries())
        results += timed(timer, async_batch_entries())
    finally:
        timer.close()
    return results


def goals(results: Sequence[Result]) -> list[Goal]:
    """The issue's targets, checked against ``results``."""
    found: list[Goal] = []
    for shape in (SMALL, BIG):
        sync_scenario, async_scenario = one_call_scenarios(shape)
        ours = _cpu(results, sync_scenario, "tinytools")
        prefix = f"one sync call, {shape.params}-param"
        found.append(
            Goal(f"{prefix}: x floor", _over(ours, _cpu(results, sync_scenario, "floor")), 3.0)
        )
        fastest = _fastest(results, (sync_scenario, async_scenario))
        found.append(
            Goal(
                f"{prefix}: times faster than the fastest peer"
                + ("" if fastest is None else f", {fastest.who}"),
                _over(None if fastest is None or fastest.time is None else fastest.time.cpu, ours),
                10.0,
                at_most=False,
            )
        )
        langchain = next(
            (
                r.time.cpu
                for r in results
                if r.scenario == sync_scenario and r.time and r.who.startswith("LangChain")
            ),
            None,
        )
        found.append(
            Goal(f"{prefix}: times faster than LangChain", _over(langchain, ours), 100.0, False)
        )
    scenario = ASYNC_BATCH_SCENARIO
    found.append(
        Goal(
            f"{ASYNC_BATCH} async calls under trio: x bare nursery",
            _over(_cpu(results, scenario, "tinytools"), _cpu(results, scenario, "floor")),
            1.5,
        )
    )
    few, many = (batch_scenario(SMALL, n) for n in (BATCH_SIZES[1], BATCH_SIZES[-1]))
    found.append(
        Goal(
            f"linear: per-call time at {BATCH_SIZES[-1]:,} calls / at {BATCH_SIZES[1]} calls",
            _over(_cpu(results, many, "tinytools"), _cpu(results, few, "tinytools")),
            1.2,
        )
    )
    return found


# --- output -------------------------------------------------------------------------------------


def render(results: Sequence[Result], found: Sequence[Goal]) -> str:
    """Three tables: the scenarios, every implementation, the targets."""
    summary: list[tuple[str, ...]] = []
    for scenario in dict.fromkeys(r.scenario for r in results):
        ours, floor = _cpu(results, scenario, "tinytools"), _cpu(results, scenario, "floor")
        peer = _fastest(results, (scenario,))
        peer_time = None if peer is None or peer.time is None else peer.time.cpu
        summary.append(
            (
                scenario,
                duration(ours),
                duration(floor),
                ratio(_over(ours, floor)),
                "-" if peer is None else f"{duration(peer_time)} {peer.who}",
                ratio(_over(peer_time, ours)),
            )
        )
    main = table(
        ("scenario", "tinytools", "floor", "x floor", "fastest peer", "peer / tinytools"),
        summary,
    )
    detail = table(
        ("scenario", "implementation", "CPU time", "x floor", "wall-clock", "note"),
        [
            (
                r.scenario,
                r.who,
                "not installed" if r.time is None else duration(r.time.cpu),
                ratio(_over(r.time.cpu, _cpu(results, r.scenario, "floor")) if r.time else None),
                "-" if r.time is None else duration(r.time.wall),
                r.note,
            )
            for r in results
        ],
    )
    targets = table(
        ("target", "measured", "goal", "met?"),
        [
            (
                g.text,
                ratio(g.measured),
                f"{'<=' if g.at_most else '>='} {g.limit:g}x",
                {True: "yes", False: "NO", None: "-"}[g.met],
            )
            for g in found
        ],
    )
    return f"{main}\n\n{detail}\n\n{targets}"


def main() -> None:
    """Run every scenario and print the tables (or, with ``--json``, one JSON document)."""
    args = options(
        "python -m benchmarks.bench_dispatch",
        "Benchmarks for dispatch and dispatch_sync, beside the floor and the peers.",
    )
    machine = machine_info()
    started = time.perf_counter()
    results = run(args.repeat)
    found = goals(results)
    elapsed = time.perf_counter() - started
    method = (
        f"best of {args.repeat} interleaved ~{RUN_SECONDS} s runs, process CPU time per call "
        "(async calls timed inside their event loop)"
    )
    if args.json:
        document = {
            "benchmark": "dispatch",
            "method": method,
            "versions": versions(VERSIONS),
            "machine": machine,
            "elapsed_s": elapsed,
            "results": [r.to_json() for r in results],
            "targets": [g.to_json() for g in found],
        }
        print(json.dumps(document))
        return
    print(header("tinytools dispatch benchmarks", versions(VERSIONS), method, machine, elapsed))
    print(render(results, found))


if __name__ == "__main__":
    main()
