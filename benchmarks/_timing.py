"""How the benchmarks time an operation (see ``bench_foundation``'s docstring for why).

CPU time (this thread's by default; the process's where worker threads do part of the
work) and wall-clock time of the same runs; one untimed call, then runs of about
``RUN_SECONDS``; the best of ``repeat`` interleaved runs of the mean per call; objects alive
before the runs frozen out of the collector's sight.

An operation is a plain callable, or (:class:`Op`) a coroutine function and the event loop
it is awaited in. Async operations are timed **inside** their loop (one ``trio.run`` per
round for trio; one asyncio loop kept for the :class:`Timer`'s life, as in a long-running
host), so entering a loop is not part of any call.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import math
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Literal

import attrs
import trio

__all__ = [
    "CLOCK",
    "PROCESS_CLOCK",
    "REPEAT",
    "RUN_SECONDS",
    "WALL",
    "Op",
    "Sample",
    "Timer",
    "measure",
    "once",
]

REPEAT = 5
RUN_SECONDS = 0.05
#: CPU time of this thread, not wall-clock time.
CLOCK = time.thread_time
#: CPU time of the whole process (counts worker threads too).
PROCESS_CLOCK = time.process_time
#: Wall-clock time, reported beside CPU time.
WALL = time.perf_counter

Kind = Literal["sync", "asyncio", "trio"]


@attrs.frozen
class Op:
    """One operation to time: a plain callable, or a coroutine function and its event loop."""

    fn: Callable[[], object]
    kind: Kind = "sync"


@attrs.frozen
class Sample:
    """Seconds per operation: CPU time and wall-clock time."""

    cpu: float
    wall: float

    def per(self, calls: int) -> Sample:
        return Sample(self.cpu / calls, self.wall / calls)


@contextlib.contextmanager
def _collector(collect: bool) -> Iterator[None]:
    """A fresh start for one run: a collection first, then the collector on or off."""
    was_enabled = gc.isenabled()
    gc.collect()
    if collect:
        gc.enable()
    else:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


def _timed_run(
    op: Callable[[], object], number: int, collect: bool, clock: Callable[[], float]
) -> Sample:
    """Seconds per call over one run of ``number`` calls."""
    with _collector(collect):
        cpu, wall = clock(), WALL()
        for _ in itertools.repeat(None, number):
            op()
        return Sample((clock() - cpu) / number, (WALL() - wall) / number)


async def _timed_run_async(
    op: Callable[[], Awaitable[object]], number: int, collect: bool, clock: Callable[[], float]
) -> Sample:
    """:func:`_timed_run` for a coroutine function, inside the running loop."""
    with _collector(collect):
        cpu, wall = clock(), WALL()
        for _ in itertools.repeat(None, number):
            await op()
        return Sample((clock() - cpu) / number, (WALL() - wall) / number)


def _number(estimate: float, seconds: float) -> int:
    return max(1, math.ceil(seconds / max(estimate, 1e-9)))


def _calls_per_run(
    op: Callable[[], object], collect: bool, clock: Callable[[], float], seconds: float
) -> int:
    """How many calls make a run of about ``seconds`` (after one warm-up call)."""
    start = clock()
    op()
    estimate = clock() - start
    if estimate < seconds / 10:  # one call is too short to say much: time a batch
        batch = max(1, int(seconds / 10 / max(estimate, 1e-9)))
        estimate = _timed_run(op, batch, collect, clock).cpu
    return _number(estimate, seconds)


async def _calls_per_run_async(
    op: Callable[[], Awaitable[object]], collect: bool, clock: Callable[[], float], seconds: float
) -> int:
    """:func:`_calls_per_run` for a coroutine function, inside the running loop."""
    start = clock()
    await op()
    estimate = clock() - start
    if estimate < seconds / 10:
        batch = max(1, int(seconds / 10 / max(estimate, 1e-9)))
        estimate = (await _timed_run_async(op, batch, collect, clock)).cpu
    return _number(estimate, seconds)


class Timer:
    """Times operations of every kind, round by round, each async one inside its loop.

    Attributes:
        repeat: Runs per operation; the best is kept.
        collect: Whether the collector runs during a run (a dispatcher's garbage is part of
            its cost; a pure decode is timed without it, as :mod:`timeit` does).
        clock: The CPU clock: :data:`CLOCK` or, where worker threads work, :data:`PROCESS_CLOCK`.
        seconds: How long one run lasts, about.
    """

    def __init__(
        self,
        repeat: int = REPEAT,
        *,
        collect: bool = True,
        clock: Callable[[], float] = CLOCK,
        seconds: float = RUN_SECONDS,
    ) -> None:
        self.repeat = repeat
        self.collect = collect
        self.clock = clock
        self.seconds = seconds
        self._loop: asyncio.AbstractEventLoop | None = None

    def close(self) -> None:
        if self._loop is not None:
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()
            self._loop = None

    def __enter__(self) -> Timer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def _async_pass(
        self, ops: Mapping[str, Callable[[], Awaitable[object]]], numbers: Mapping[str, int] | None
    ) -> dict[str, int | Sample]:
        """Inside one loop: calibrate every op (``numbers`` is None) or time one run of each."""
        c, clock, s = self.collect, self.clock, self.seconds
        if numbers is None:
            return {name: await _calls_per_run_async(fn, c, clock, s) for name, fn in ops.items()}
        return {
            name: await _timed_run_async(fn, numbers[name], c, clock) for name, fn in ops.items()
        }

    def _pass(self, ops: Mapping[str, Op], numbers: Mapping[str, int] | None) -> dict[str, object]:
        out: dict[str, object] = {}
        c, clock, s = self.collect, self.clock, self.seconds
        for name, op in ops.items():
            if op.kind == "sync":
                out[name] = (
                    _calls_per_run(op.fn, c, clock, s)
                    if numbers is None
                    else _timed_run(op.fn, numbers[name], c, clock)
                )
        for kind in ("asyncio", "trio"):
            group: dict[str, Callable[[], Awaitable[object]]] = {
                name: op.fn  # type: ignore[misc]
                for name, op in ops.items()
                if op.kind == kind
            }
            if not group:
                continue
            if kind == "trio":
                out.update(trio.run(self._async_pass, group, numbers))
                continue
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
            out.update(self._loop.run_until_complete(self._async_pass(group, numbers)))
        return out

    def measure(self, ops: Mapping[str, Op | Callable[[], object]]) -> dict[str, Sample]:
        """The best of ``repeat`` interleaved runs of each op (CPU and wall-clock separately).

        The runs are interleaved (one run of each operation, then the next round), so a burst
        of load from other processes slows every operation of a comparison alike.
        """
        wrapped = {name: op if isinstance(op, Op) else Op(op) for name, op in ops.items()}
        cpu = dict.fromkeys(wrapped, math.inf)
        wall = dict.fromkeys(wrapped, math.inf)
        # Everything alive now (the peers' modules, fixtures) is moved out of the collector's
        # sight: a full collection during a run then costs the same whichever libraries are
        # loaded, and the collection before each run takes microseconds instead of 0.3 s.
        gc.collect()
        gc.freeze()
        try:
            numbers: dict[str, int] = self._pass(wrapped, None)  # type: ignore[assignment]
            for _ in range(self.repeat):
                for name, sample in self._pass(wrapped, numbers).items():
                    assert isinstance(sample, Sample)
                    cpu[name] = min(cpu[name], sample.cpu)
                    wall[name] = min(wall[name], sample.wall)
        finally:
            gc.unfreeze()
        return {name: Sample(cpu[name], wall[name]) for name in wrapped}


def measure(
    ops: Mapping[str, Callable[[], object]], *, collect: bool, repeat: int
) -> dict[str, float]:
    """The best of ``repeat`` runs of the mean CPU seconds (this thread's) per call, each op."""
    with Timer(repeat, collect=collect) as timer:
        return {name: sample.cpu for name, sample in timer.measure(ops).items()}


def once(op: Callable[[], object]) -> float:
    """Seconds for one call, collector on (for operations that take seconds)."""
    return _timed_run(op, 1, True, CLOCK).cpu
