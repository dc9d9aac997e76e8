"""Import time: ``import tinytools`` beside ``import msgspec, attrs``, in fresh interpreters.

Run from the repository root::

    python -m benchmarks.bench_import          # a table
    python -m benchmarks.bench_import --json   # one JSON document on one line

Each row is a fresh ``python -c`` process, timed from start to exit (wall time: what a
command-line tool or a serverless cold start waits for), ``--repeat`` times (default 20).
The rows take turns, one process each, so that load on the machine falls on all of them
alike; the table gives each row's median and its ratio to ``import msgspec, attrs``, the
two libraries tinytools is built on. The target: ``import tinytools`` at most 2x that
(``import tinytools`` imports the facade alone; each public name's module is imported
the first time the name is read). The rows below it say what the first use of a name
costs: ``tool`` loads the declaration modules, ``dispatch_sync`` the engine.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

from ._report import header, machine_info, options, ratio, table, versions

__all__ = ["main"]

#: (label, the code a fresh interpreter runs).
ROWS = (
    ("python -c pass (interpreter start)", "pass"),
    ("import msgspec, attrs", "import msgspec, attrs"),
    ("import tinytools", "import tinytools"),
    ("from tinytools import tool", "from tinytools import tool"),
    ("from tinytools import dispatch_sync", "from tinytools import dispatch_sync"),
)
REFERENCE = "import msgspec, attrs"
TARGET = 2.0


def _timed(code: str) -> float:
    """Seconds from starting a fresh interpreter that runs ``code`` to its exit."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def measure(repeat: int) -> dict[str, float]:
    """Each row's median wall time over ``repeat`` fresh interpreters, rows taking turns."""
    for _, code in ROWS:  # one unmeasured round: compiled bytecode and file caches warm
        _timed(code)
    times: dict[str, list[float]] = {label: [] for label, _ in ROWS}
    for _ in range(repeat):
        for label, code in ROWS:
            times[label].append(_timed(code))
    return {label: statistics.median(found) for label, found in times.items()}


def main() -> None:
    """Time the rows and print a table (or, with ``--json``, one JSON document)."""
    args = options("python -m benchmarks.bench_import", __doc__ or "", repeat=20)
    machine = machine_info()
    began = time.perf_counter()
    medians = measure(args.repeat)
    reference = medians[REFERENCE]
    ratios = {label: seconds / reference for label, seconds in medians.items()}
    met = ratios["import tinytools"] <= TARGET
    method = f"wall time of a fresh interpreter, median of {args.repeat}, rows taking turns"
    if args.json:
        rows = [
            {"row": label, "median_s": medians[label], "ratio": ratios[label]} for label, _ in ROWS
        ]
        document = {
            "benchmark": "import",
            "method": method,
            "versions": versions(["msgspec", "attrs"]),
            "machine": machine,
            "repeat": args.repeat,
            "target": TARGET,
            "met": met,
            "rows": rows,
        }
        print(json.dumps(document))
        return
    print(
        header(
            "Import time",
            versions(["msgspec", "attrs"]),
            method,
            machine,
            time.perf_counter() - began,
        )
    )
    lines = [[label, f"{medians[label] * 1e3:.1f} ms", ratio(ratios[label])] for label, _ in ROWS]
    print(table(["row", "median", f"vs {REFERENCE}"], lines))
    verdict = "met" if met else "MISSED"
    print(f"\ntarget: import tinytools <= {TARGET:g}x import msgspec, attrs: {verdict}")


if __name__ == "__main__":
    main()
