"""What an effect ledger costs a batch: ``dispatch_sync`` of 1 and 10 sync calls, with and
without a ledger.

Run from the repository root::

    python -m benchmarks.bench_ledger          # a table
    python -m benchmarks.bench_ledger --json   # one JSON document on one line

Ledgers: ``SqliteLedger`` with its default settings (``synchronous="full"``: the started
rows fsynced before any tool runs) and with ``synchronous="normal"``, a file in a new
temporary folder; ``PostgresLedger`` on a loopback TCP port of a throwaway local cluster
(``fsync`` on, as a server is run; ``TINYTOOLS_BENCH_POSTGRES`` names another server), or
"not available". Every batch gets a fresh run id (a ledger refuses a call it saw start).

Each row is the batch's wall-clock time (a ledger waits on the disk and the server, which
CPU time would not show), its CPU time, and the wall-clock ratio to the same batch without
a ledger. The commits column counts the commits a batch makes for its started rows: one
per batch, whatever its size (each call's settled row is one more).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from tinytools import Context, ToolCall, dispatch_sync, tool
from tinytools.ledger import PostgresLedger, SqliteLedger

from ._report import duration, header, machine_info, options, ratio, table, versions
from ._timing import WALL, Timer

__all__ = ["Row", "main", "run"]

SIZES = (1, 10)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@attrs.frozen
class Row:
    size: int
    ledger: str
    wall: float | None
    cpu: float | None
    ratio: float | None
    started_commits: int | None


def _counting(base: Any) -> Any:
    class Counting(base):  # type: ignore[misc, valid-type]
        commits = 0

        def _commit(self, connection: Any) -> None:
            type(self).commits += 1
            super()._commit(connection)

    return Counting


def _batch(size: int, ledger: object | None) -> Callable[[], object]:
    calls = tuple(ToolCall(f"c{n}", "add", {"a": n, "b": 1}) for n in range(size))
    tools = (add,)
    runs = itertools.count()

    def op() -> object:
        context = Context(run_id=f"bench-{next(runs)}")
        return dispatch_sync(calls, tools, context=context, ledger=ledger)  # type: ignore[arg-type]

    return op


def _started_commits(ledger_type: Any, where: str, size: int) -> int:
    """How many commits one batch's started rows take (settled rows excluded)."""
    counting = _counting(ledger_type)
    with counting(where) as ledger:
        ledger.unresolved()  # connect and make the schema first
        calls = [ToolCall(f"c{n}", "add", {"a": n, "b": 1}) for n in range(size)]
        seen: list[int] = []

        @tool(name="add")
        def spy(a: int, b: int) -> int:
            """Add (and note the commits so far)."""
            if not seen:
                seen.append(counting.commits)
            return a + b

        dispatch_sync(calls, [spy], ledger=ledger, context=Context(run_id=f"count-{WALL()}"))
        return seen[0]


def _postgres() -> tuple[str | None, Callable[[], None]]:
    given = os.environ.get("TINYTOOLS_BENCH_POSTGRES")
    if given:
        return given, lambda: None
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "ledger"))
    try:
        import throwaway_postgres

        cluster = throwaway_postgres.start(fsync=True, tcp=True)
    except Exception as error:  # no server here: the rows say so
        print(f"PostgreSQL not available: {error}", file=sys.stderr)
        return None, lambda: None
    finally:
        sys.path.pop(0)
    return cluster.conninfo, cluster.stop


def run(repeat: int) -> list[Row]:
    folder = tempfile.TemporaryDirectory(prefix="tinytools-bench-ledger-")
    conninfo, stop = _postgres()
    ledgers: dict[str, tuple[Any, str, dict[str, object]] | None] = {
        "sqlite (default: synchronous=full)": (
            SqliteLedger,
            str(Path(folder.name) / "full.db"),
            {},
        ),
        "sqlite synchronous=normal": (
            SqliteLedger,
            str(Path(folder.name) / "normal.db"),
            {"synchronous": "normal"},
        ),
        "postgres (loopback TCP)": None if conninfo is None else (PostgresLedger, conninfo, {}),
    }
    opened = {
        name: spec[0](spec[1], **spec[2]) for name, spec in ledgers.items() if spec is not None
    }
    rows: list[Row] = []
    try:
        for ledger in opened.values():
            ledger.unresolved()  # connected, schema made
        with Timer(repeat) as timer:
            for size in SIZES:
                ops = {"none": _batch(size, None)}
                ops.update({name: _batch(size, ledger) for name, ledger in opened.items()})
                samples = timer.measure(ops)
                base = samples["none"].wall
                rows.append(Row(size, "none", base, samples["none"].cpu, 1.0, None))
                for name, spec in ledgers.items():
                    if spec is None:
                        rows.append(Row(size, name, None, None, None, None))
                        continue
                    sample = samples[name]
                    commits = _started_commits(spec[0], spec[1], size)
                    rows.append(
                        Row(size, name, sample.wall, sample.cpu, sample.wall / base, commits)
                    )
    finally:
        for ledger in opened.values():
            ledger.close()
        stop()
        folder.cleanup()
    return rows


def print_table(rows: list[Row], repeat: int, elapsed: float) -> None:
    found = versions(["msgspec", "psycopg"])
    method = f"wall-clock and CPU time per batch, best of {repeat} interleaved runs"
    print(
        header("Effect ledger cost per dispatch_sync batch", found, method, machine_info(), elapsed)
    )
    lines = [
        [
            str(row.size),
            row.ledger,
            duration(row.wall),
            duration(row.cpu),
            ratio(row.ratio),
            "-" if row.started_commits is None else str(row.started_commits),
        ]
        for row in rows
    ]
    heading = ["calls", "ledger", "wall/batch", "cpu/batch", "vs none", "started-row commits"]
    print(table(heading, lines))


def main() -> None:
    """Run the benchmark and print a table, or one JSON document with ``--json``."""
    args = options("python -m benchmarks.bench_ledger", "What an effect ledger costs a batch.")
    start = WALL()
    rows = run(args.repeat)
    if args.json:
        print(json.dumps({"benchmark": "ledger", "rows": [attrs.asdict(row) for row in rows]}))
    else:
        print_table(rows, args.repeat, WALL() - start)


if __name__ == "__main__":
    main()
