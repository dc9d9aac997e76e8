"""What every benchmark module prints: options, versions, machine, durations and tables."""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata

from ._timing import REPEAT

__all__ = ["duration", "header", "machine_info", "options", "ratio", "table", "versions"]


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def table(header: Sequence[str], lines: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    rule = "  ".join("-" * w for w in widths)
    text = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
        for row in [header, *lines]
    ]
    return "\n".join([text[0], rule, *text[1:]])


def versions(names: Sequence[str]) -> dict[str, str | None]:
    """Python's version and each installed package's (None when it is not installed)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def options(
    prog: str, description: str, repeat: int = REPEAT, quick: str | None = None
) -> argparse.Namespace:
    """The options every benchmark module takes: ``--json`` and ``--repeat``.

    ``quick`` (what a short run leaves out) adds ``--quick`` for a module that has one;
    ``repeat_given`` says whether ``--repeat`` was on the command line (else it is ``repeat``).
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--json", action="store_true", help="print one JSON document, one line")
    parser.add_argument(
        "--repeat", type=int, default=None, help=f"runs per operation (default {repeat})"
    )
    if quick is not None:
        parser.add_argument("--quick", action="store_true", help=quick)
    # Unknown options belong to other benchmark modules when run through `python -m benchmarks`.
    args, _ = parser.parse_known_args(sys.argv[1:])
    args.repeat_given = args.repeat is not None
    if args.repeat is None:
        args.repeat = repeat
    return args


def machine_info() -> dict[str, object]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"cpus": os.cpu_count(), "load_1min": None if load is None else round(load[0], 2)}


def header(
    title: str,
    found: Mapping[str, str | None],
    method: str,
    machine: Mapping[str, object],
    elapsed: float,
) -> str:
    """The lines above a benchmark's tables: what ran, on what, how it was timed."""
    shown = ", ".join(f"{name} {version}" for name, version in found.items() if version)
    load = f"{machine['cpus']} CPUs, load {machine['load_1min']} at start"
    return f"{title} ({shown})\n{method}; {load}; {elapsed:.0f} s in all\n"
