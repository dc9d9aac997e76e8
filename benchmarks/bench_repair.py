"""Relaxed-JSON repair throughput: `tinytools.repair` beside its floor and the json_repair peer.

Run from the repository root::

    python -m benchmarks.bench_repair          # a table
    python -m benchmarks.bench_repair --json   # one JSON document on one line

Each input is valid-but-relaxed JSON of about 1 KB, 100 KB and 1 MB, in three shapes:

* ``records``: an array of records carrying every repair on every record (unquoted keys,
  single quotes, template-token strings, Python literals, trailing commas): the densest
  realistic input, so the slowest per byte.
* ``python``: a Python ``repr`` of the same kind of records (single quotes, ``True`` and
  ``None``, quoted keys), as Python-minded models write.
* ``document``: a Gemma-style file-writing call in a markdown fence, with wrapping braces,
  unquoted keys and one long template-token string holding source code.

Four timings per input:

* the **floor**: ``msgspec.json.decode`` of the strict equivalent, what a well-formed call
  costs;
* **tinytools**: ``tinytools.repair.recover_relaxed_object`` of the relaxed text, with
  the compiled scanner (built at install when a C compiler is there);
* **pure Python**: the same with the pure-Python scanner, what an install without a C
  compiler runs;
* the **peer**: ``json_repair.loads`` of the relaxed text, imported lazily ("not
  installed" otherwise); the table says whether it returns the same value.

Throughput is the input's UTF-8 size over the time; ratios are times over the floor's.
Time is measured as the foundation benchmarks measure it (``_timing.measure``):
this thread's CPU time, the best of ``--repeat`` runs of the mean per call, runs of about
0.05 s, rounds interleaved, garbage collector off. Calls slower than half a second are
timed once.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from functools import partial

import attrs
import msgspec

from tinytools import _relaxed, repair
from tinytools.repair import recover_relaxed_object

from ._report import options
from ._timing import measure, once

__all__ = ["Row", "document", "main", "python_repr", "records", "run"]

SIZES = {"1 KB": 1_000, "100 KB": 100_000, "1 MB": 1_000_000}
TARGET_1MB = 0.050  # seconds, from the issue
SLOW = 0.5  # seconds: a call this slow is timed once


def _rows(size: int, row: Callable[[int], str]) -> str:
    """``row(0)``, ``row(1)``... joined by ", ", about ``size`` characters in all."""
    rows: list[str] = []
    length = 0
    while length < size:
        rows.append(row(len(rows)))
        length += len(rows[-1]) + 2
    return ", ".join(rows)


def records(size: int) -> str:
    """Relaxed records of about ``size`` characters, every repair on every record."""
    body = _rows(
        size,
        lambda i: (
            f"{{id: {i}, name: 'user {i}', active: True, manager: None, tags: ['a', 'b',], "
            f'score: {i}.5, note: "x y z", bio: <|"|>said "hi" at {i}<|"|>,}}'
        ),
    )
    return "{records: [" + body + "],}"


def python_repr(size: int) -> str:
    """A Python ``repr`` of records of about ``size`` characters: single quotes, literals."""
    body = _rows(
        size,
        lambda i: (
            f"{{'id': {i}, 'name': 'user {i}', 'active': True, 'manager': None, "
            f"'tags': ['a', 'b'], 'score': {i}.5, 'note': 'it\\'s \"quoted\"'}}"
        ),
    )
    return "{'records': [" + body + "]}"


def document(size: int) -> str:
    """A fenced file-writing call of about ``size`` characters, one long verbatim value."""
    line = 'print("it\'s {fine}", path=r"c:\\tmp")  # <tag> \t\n'
    content = (line * (size // len(line) + 1))[:size]
    call = f'{{{{path: <|"|>src/app.py<|"|>, content: <|"|>{content}<|"|>, overwrite: True,}}}}'
    return f"```json\n{call}\n```"


SHAPES: dict[str, Callable[[int], str]] = {
    "records": records,
    "python": python_repr,
    "document": document,
}


def _timings(ops: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Seconds per call of each operation: one timed call for those slower than ``SLOW``
    (json_repair on 1 MB takes seconds), the foundation benchmarks' measure for the rest."""
    first = {name: once(op) for name, op in ops.items()}  # also warms caches
    slow = {name for name, seconds in first.items() if seconds > SLOW}
    fast = {name: op for name, op in ops.items() if name not in slow}
    timings = measure(fast, collect=False, repeat=repeat)
    timings.update({name: first[name] for name in slow})
    return timings


@attrs.frozen
class Row:
    """The timings of one input, in seconds per call."""

    shape: str
    size: str
    bytes: int
    strict_bytes: int
    floor: float
    tinytools: float
    pure_python: float
    json_repair: float | None
    json_repair_same: bool | None


def _peer() -> Callable[[str], object] | None:
    try:
        module = importlib.import_module("json_repair")
    except ImportError:
        return None
    loads: Callable[[str], object] = module.loads
    return loads


def run(repeat: int) -> list[Row]:
    """Time every shape and size; one row per input."""
    peer = _peer()
    rows: list[Row] = []
    for shape, make in SHAPES.items():
        for label, size in SIZES.items():
            relaxed = make(size)
            expected = recover_relaxed_object(relaxed)
            if expected is None:
                raise AssertionError(f"{shape} {label}: the benchmark input was refused")
            strict = msgspec.json.encode(expected)
            ops: dict[str, Callable[[], object]] = {
                "floor": partial(msgspec.json.decode, strict),
                "tinytools": partial(recover_relaxed_object, relaxed),
                "pure_python": partial(repair._repair, relaxed, _relaxed.rewrite),
            }
            if peer is not None:
                ops["json_repair"] = partial(peer, relaxed)
            times = _timings(ops, repeat)
            rows.append(
                Row(
                    shape=shape,
                    size=label,
                    bytes=len(relaxed.encode()),
                    strict_bytes=len(strict),
                    floor=times["floor"],
                    tinytools=times["tinytools"],
                    pure_python=times["pure_python"],
                    json_repair=times.get("json_repair"),
                    json_repair_same=None if peer is None else peer(relaxed) == expected,
                )
            )
    return rows


def _cell(seconds: float | None, size: int, floor: float) -> str:
    if seconds is None:
        return f"{'not installed':>34}"
    return f"{seconds * 1e3:9.3f} ms {size / seconds / 1e6:7.2f} MB/s x{seconds / floor:7.1f}"


def _short_cell(seconds: float, floor: float) -> str:
    return f"{seconds * 1e3:9.3f} ms x{seconds / floor:6.1f}"


def print_table(rows: list[Row], repeat: int) -> None:
    """Print the rows as a table, then the growth and the 1 MB target per shape."""
    scanner = "pure Python" if repair._scan is _relaxed.rewrite else "compiled"
    print(
        f"tinytools.repair: relaxed JSON -> object (thread CPU time, best of {repeat}; "
        f"the installed scanner: {scanner})"
    )
    print(
        f"{'shape':9} {'size':6} {'floor: msgspec, strict':>25}   "
        f"{'tinytools':<34}   {'pure Python':<20}   {'json_repair':<34}   same value"
    )
    for row in rows:
        floor_rate = row.strict_bytes / row.floor / 1e6
        same = {True: "yes", False: "no", None: ""}[row.json_repair_same]
        print(
            f"{row.shape:9} {row.size:6} {row.floor * 1e3:9.3f} ms {floor_rate:7.1f} MB/s   "
            f"{_cell(row.tinytools, row.bytes, row.floor)}   "
            f"{_short_cell(row.pure_python, row.floor)}   "
            f"{_cell(row.json_repair, row.bytes, row.floor)}   {same}"
        )
    for shape in SHAPES:
        times = {row.size: row.tinytools for row in rows if row.shape == shape}
        verdict = "met" if times["1 MB"] < TARGET_1MB else "missed"
        print(
            f"{shape}: 100 KB -> 1 MB took x{times['1 MB'] / times['100 KB']:.1f} the time "
            f"(linear: x10); 1 MB in {times['1 MB'] * 1e3:.1f} ms, "
            f"target < {TARGET_1MB * 1e3:.0f} ms {verdict}"
        )


def main() -> None:
    """Run the benchmark and print a table, or one JSON document with ``--json``."""
    args = options(
        "python -m benchmarks.bench_repair", "Relaxed-JSON repair beside msgspec and json_repair."
    )
    rows = run(args.repeat)
    if args.json:
        print(json.dumps({"benchmark": "repair", "rows": [attrs.asdict(row) for row in rows]}))
    else:
        print_table(rows, args.repeat)


if __name__ == "__main__":
    main()
