"""How the benchmarks time an operation (see ``bench_foundation``'s docstring for why).

This thread's CPU time; one untimed call, then runs of about ``RUN_SECONDS``; the best of
``repeat`` interleaved runs of the mean per call; objects alive before the runs frozen
out of the collector's sight.
"""

from __future__ import annotations

import gc
import itertools
import math
import time
from collections.abc import Callable, Mapping

__all__ = ["CLOCK", "REPEAT", "RUN_SECONDS", "measure", "once"]

REPEAT = 5
RUN_SECONDS = 0.05
#: CPU time of this thread, not wall-clock time.
CLOCK = time.thread_time


def _timed_run(op: Callable[[], object], number: int, collect: bool) -> float:
    """Seconds per call over one run of ``number`` calls."""
    was_enabled = gc.isenabled()
    gc.collect()
    if collect:
        gc.enable()
    else:
        gc.disable()
    try:
        start = CLOCK()
        for _ in itertools.repeat(None, number):
            op()
        return (CLOCK() - start) / number
    finally:
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


def _calls_per_run(op: Callable[[], object], collect: bool) -> int:
    """How many calls make a run of about ``RUN_SECONDS`` (after one warm-up call)."""
    start = CLOCK()
    op()
    estimate = max(CLOCK() - start, 1e-9)
    if estimate < RUN_SECONDS / 10:  # one call is too short to say much: time a batch
        estimate = _timed_run(op, max(1, int(RUN_SECONDS / 10 / estimate)), collect)
    return max(1, math.ceil(RUN_SECONDS / estimate))


def measure(
    ops: Mapping[str, Callable[[], object]], *, collect: bool, repeat: int
) -> dict[str, float]:
    """The best of ``repeat`` runs of the mean seconds per call, for each operation.

    The runs are interleaved (one run of each operation, then the next round), so a burst of
    load from other processes slows every operation of a comparison alike.
    """
    numbers = {name: _calls_per_run(op, collect) for name, op in ops.items()}
    best = dict.fromkeys(ops, math.inf)
    # Everything alive now (the peers' modules, fixtures) is moved out of the collector's
    # sight: a full collection during a run then costs the same whichever libraries are
    # loaded, and the collection before each run takes microseconds instead of 0.3 s.
    gc.collect()
    gc.freeze()
    try:
        for _ in range(repeat):
            for name, op in ops.items():
                best[name] = min(best[name], _timed_run(op, numbers[name], collect))
    finally:
        gc.unfreeze()
    return best


def once(op: Callable[[], object]) -> float:
    """Seconds for one call, collector on (for operations that take seconds)."""
    return _timed_run(op, 1, collect=True)
