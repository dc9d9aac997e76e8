"""Publish a benchmark run to the docs: ``python -m benchmarks.publish RESULTS.jsonl``.

``RESULTS.jsonl`` is what ``python -m benchmarks --json`` prints (one JSON document per
benchmark module, one per line). This writes:

* ``benchmarks/results/latest.md`` — the run's tables (machine, versions, method, and
  every row), which ``docs/benchmarks.md`` includes;
* ``docs/img/benchmarks.svg`` — a chart (matplotlib) of one call through ``dispatch_sync``
  and of the foundation scenarios: tinytools beside its msgspec floor and the peers, in
  CPU time per call on a log scale.

``nox -s bench`` runs the benchmarks and then this. The chart needs matplotlib (in the
``bench`` dependency group); ``--no-chart`` writes the tables alone.
"""

from __future__ import annotations

import argparse
import datetime
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["caveats", "chart", "load", "main", "markdown"]

ROOT = Path(__file__).resolve().parents[1]
TABLES = ROOT / "benchmarks" / "results" / "latest.md"
CHART = ROOT / "docs" / "img" / "benchmarks.svg"

#: Bar colours by role: tinytools, its floor, the peers, other references.
COLOURS = {"tinytools": "#3465a4", "floor": "#888a85", "peer": "#f57900", "reference": "#c4a000"}

Document = Mapping[str, Any]


def load(path: Path) -> dict[str, Document]:
    """Each benchmark's JSON document, by its ``benchmark`` name."""
    documents: dict[str, Document] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            document = json.loads(line)
            documents[str(document["benchmark"])] = document
    return documents


def micro(seconds: float | None) -> str:
    """Seconds per call as a short human figure (``4.7 µs``, ``153 µs``, ``2.2 ms``)."""
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    def cells(row: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |"

    return [cells(header), "| " + " | ".join("---" for _ in header) + " |", *map(cells, rows)]


def _about(document: Document) -> list[str]:
    versions = ", ".join(f"{k} {v}" for k, v in document.get("versions", {}).items() if v)
    machine = document.get("machine", {})
    return [
        f"*{document.get('method', '')}; {machine.get('cpus', '?')} CPUs, load "
        f"{machine.get('load_1min', '?')} at start; {versions}.*",
        "",
    ]


def _dispatch(document: Document) -> list[str]:
    rows = [
        (
            r["section"],
            r["row"],
            r["role"],
            micro(r["cpu_s"]),
            _ratio(r["ratio"]),
            "-" if r["target"] is None else f"≤ {r['target']}x",
            r["result"],
        )
        for r in document["results"]
    ]
    header = ("section", "row", "role", "CPU per call", "vs floor", "target", "result")
    return ["## Dispatch", "", *_about(document), *_table(header, rows), ""]


def _foundation(document: Document) -> list[str]:
    rows = [
        (
            r["scenario"],
            micro(r["tinytools_s"]),
            micro(r["floor_s"]),
            _ratio(r["floor_ratio"]),
            f"{r['peer']}: {micro(r['peer_s'])}" if r.get("peer") else "-",
            r.get("target_text") or "-",
            {True: "met", False: "not met"}.get(r.get("met"), "-"),
        )
        for r in document["rows"]
    ]
    header = ("scenario", "tinytools", "floor", "vs floor", "peer", "target", "result")
    return ["## Declaring and validating", "", *_about(document), *_table(header, rows), ""]


def _repair(document: Document) -> list[str]:
    rows = [
        (
            f"{r['shape']}, {r['size']}",
            f"{r['bytes']:,}",
            micro(r["floor"]),
            micro(r["tinytools"]),
            micro(r["pure_python"]),
            micro(r["json_repair"]),
        )
        for r in document["rows"]
    ]
    header = ("input", "bytes", "strict decode (floor)", "tinytools", "pure Python", "json_repair")
    return ["## Relaxed-JSON repair", "", *_table(header, rows), ""]


def _import(document: Document) -> list[str]:
    rows = [
        (r["row"], f"{r['median_s'] * 1e3:.0f} ms", _ratio(r["ratio"])) for r in document["rows"]
    ]
    verdict = "met" if document["met"] else "not met"
    target = (
        f"Target: `import tinytools` ≤ {document['target']}x `import msgspec, attrs`: {verdict}."
    )
    header = ("fresh interpreter runs", "wall time (median)", "vs import msgspec, attrs")
    return ["## Import time", "", *_about(document), *_table(header, rows), "", target, ""]


_SECTIONS = {
    "dispatch": _dispatch,
    "foundation": _foundation,
    "repair": _repair,
    "import": _import,
}


def caveats(documents: Mapping[str, Document]) -> list[str]:
    """What makes this run's figures weaker than a full run's, said plainly."""
    found = []
    dispatch = documents.get("dispatch")
    if dispatch is not None and "--quick" in str(dispatch.get("method", "")):
        found.append("a short run (`--quick`): fewer, shorter samples, no dispatch peers")
    for name, document in sorted(documents.items()):
        machine = document.get("machine", {})
        load, cpus = machine.get("load_1min"), machine.get("cpus")
        if isinstance(load, (int, float)) and isinstance(cpus, int) and load > cpus:
            found.append(f"the machine was busy when `{name}` started (load {load} on {cpus} CPUs)")
    foundation = documents.get("foundation")
    if foundation is not None and not any(r.get("peer_s") for r in foundation["rows"]):
        found.append("no peer library was installed for the foundation scenarios")
    return found


def markdown(documents: Mapping[str, Document], when: datetime.datetime) -> str:
    """The tables of a run, as the Markdown ``docs/benchmarks.md`` includes."""
    lines = [f"Run published {when:%Y-%m-%d %H:%M} UTC.", ""]
    if notes := caveats(documents):
        lines += ['!!! warning "Read these figures with care"', *(f"    - {n}" for n in notes), ""]
    for name, render in _SECTIONS.items():
        if name in documents:
            lines += render(documents[name])
    for name in sorted(documents.keys() - _SECTIONS.keys()):
        lines += [f"## {name}", "", "```json", json.dumps(documents[name], indent=2), "```", ""]
    return "\n".join(lines)


def _bars(documents: Mapping[str, Document]) -> list[tuple[str, float, str]]:
    """``(label, seconds per call, role)`` for the chart, top to bottom."""
    bars: list[tuple[str, float, str]] = []
    dispatch = documents.get("dispatch")
    if dispatch is not None and dispatch["results"]:
        first = dispatch["results"][0]["section"]
        bars += [
            (r["row"], r["cpu_s"], r["role"])
            for r in dispatch["results"]
            if r["section"] == first and r["cpu_s"]
        ]
    foundation = documents.get("foundation")
    for r in foundation["rows"] if foundation is not None else ():
        if r["tinytools_s"]:
            bars.append((f"{r['scenario']}: tinytools", r["tinytools_s"], "tinytools"))
        if r["floor_s"]:
            bars.append((f"{r['scenario']}: floor", r["floor_s"], "floor"))
        if r.get("peer_s"):
            bars.append((f"{r['scenario']}: {r['peer']}", r["peer_s"], "peer"))
    return bars


def chart(documents: Mapping[str, Document], path: Path) -> None:
    """Write the chart as SVG (stable ids and no date, so a rerun diffs cleanly)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "tinytools"
    bars = _bars(documents)
    figure, axes = plt.subplots(figsize=(9, 0.28 * max(len(bars), 4) + 1.2))
    labels = [label for label, _, _ in bars]
    axes.barh(
        range(len(bars)),
        [seconds * 1e6 for _, seconds, _ in bars],
        color=[COLOURS.get(role, "#555753") for _, _, role in bars],
    )
    for y, (_, seconds, _) in enumerate(bars):
        axes.text(seconds * 1e6 * 1.08, y, micro(seconds), va="center", fontsize=7)
    axes.set_yticks(range(len(bars)), labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xscale("log")
    low, high = axes.get_xlim()
    axes.set_xlim(low, high * 8)  # room for the labels at the bars' ends
    axes.set_xlabel("CPU time per call, µs (log scale; shorter is faster)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLOURS.values()]
    axes.legend(handles, list(COLOURS), loc="lower right", fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(
        path,
        format=path.suffix.lstrip(".") or "svg",
        metadata={"Date": None} if path.suffix == ".svg" else None,
    )
    plt.close(figure)


def main(argv: Sequence[str] | None = None) -> None:
    """Write the tables and the chart of the run in the given JSON Lines file."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.publish", description=__doc__)
    parser.add_argument("results", type=Path, help="what `python -m benchmarks --json` printed")
    parser.add_argument("--tables", type=Path, default=TABLES, help=f"default {TABLES}")
    parser.add_argument("--chart", type=Path, default=CHART, help=f"default {CHART}")
    parser.add_argument("--no-chart", action="store_true", help="write the tables only")
    args = parser.parse_args(argv)
    documents = load(args.results)
    if not documents:
        raise SystemExit(f"{args.results} holds no benchmark document")
    args.tables.parent.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    args.tables.write_text(markdown(documents, now), encoding="utf-8")
    if not args.no_chart:
        chart(documents, args.chart)


if __name__ == "__main__":
    main()
