"""Benchmarks for toolsets and discovery: ``python -m benchmarks.bench_toolsets [--json]``.

Rows and their targets (issue 12):

* ``catalog build``: ``Catalog`` over 10,000 tools (≤ 200 ms). Two tool sets: synthetic
  tools of the size MCP servers publish (a one-sentence description, three parameters
  with short descriptions), and, when ``../shared/corpora/bfcl`` is present, the BFCL
  definitions (longer descriptions) repeated under new names up to 10,000.
* ``search``: one ``Catalog.search`` of a few words over those 10,000 tools (≤ 1 ms).
* ``resolve``: a composition of 5 adaptors over 1,000 tools, resolved for a dispatch when
  nothing changed (the cached path every dispatch takes), as a share of a one-call
  ``dispatch_sync`` (≤ 5 %). Also shown: the same with a fresh context each time
  (``Filtered`` asked again), a ``Prepared`` step (runs every dispatch), and a whole
  one-call dispatch through the toolset beside one through a plain ``Registry``.

Peers, where they install: Pydantic AI's toolset resolution (``get_tools`` of the same
composition) and FastMCP's BM25 search transform.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path

from tinytools import Context, Registry, Tool, ToolCall, dispatch_sync
from tinytools.discovery import Catalog
from tinytools.toolsets import ApprovalRequired, Combined, Filtered, Prefixed, Prepared, Renamed
from tinytools.toolsets._base import registry_for

from ._report import duration, header, machine_info, options, table, versions
from ._timing import RUN_SECONDS, Op, Timer, once

__all__ = ["main"]

#: Queries for the BFCL-based catalogue.
QUERIES = [
    "send an email to a customer",
    "weather forecast for a city",
    "create a calendar event",
    "list open issues in a repo",
    "convert the price of a product",
    "book a hotel",
    "delete a file in a folder",
    "search songs in a playlist",
]

_VERBS = [
    "get",
    "list",
    "create",
    "update",
    "delete",
    "search",
    "fetch",
    "send",
    "read",
    "write",
    "convert",
    "find",
]
_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "sa",
    "ti",
    "vo",
    "be",
    "da",
    "fe",
    "gi",
    "ho",
    "ju",
    "ke",
    "la",
    "mo",
    "nu",
    "pa",
    "re",
    "si",
    "to",
    "va",
    "we",
]


def _vocabulary(rng: random.Random, size: int = 4000) -> list[str]:
    """``size`` distinct pseudo-words (a catalogue's vocabulary, used with Zipf weights)."""
    words: dict[str, None] = {}
    while len(words) < size:
        words["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


def synthetic_tools(count: int, seed: int = 0) -> tuple[list[Tool[..., object]], list[str]]:
    """``count`` schema-built tools of a typical size (a 12-word description, three
    parameters with 5-word descriptions; words drawn from a 4,000-word vocabulary with Zipf
    weights, as in natural text), and 50 queries of 2 to 5 such words."""
    rng = random.Random(seed)
    vocabulary = _vocabulary(rng)
    weights = [1 / rank for rank in range(1, len(vocabulary) + 1)]

    def text(n: int) -> str:
        return " ".join(rng.choices(vocabulary, weights, k=n))

    tools = []
    for index in range(count):
        noun = rng.choices(vocabulary, weights)[0]
        properties = {
            f"{rng.choices(vocabulary, weights)[0]}_{p}": {"type": "string", "description": text(5)}
            for p in range(3)
        }
        schema = {"type": "object", "properties": properties}
        name = f"{rng.choice(_VERBS)}_{noun}_{index}"
        tools.append(Tool.from_schema(name, f"{text(12)}.", schema))
    queries = [text(rng.randint(2, 5)) for _ in range(50)]
    return tools, queries


def bfcl_tools(count: int) -> list[Tool[..., object]] | None:
    """The BFCL definitions repeated under new names up to ``count``, or None without them."""
    folder = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "bfcl" / "data"
    if not folder.is_dir():
        return None
    import attrs

    from tinytools.formats.bfcl import tool_from_bfcl

    pool: dict[str, Tool[..., object]] = {}
    for path in sorted(folder.glob("BFCL_v4_*.json")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                for function in json.loads(line)["function"]:
                    built = tool_from_bfcl(function)
                    pool.setdefault(built.name, built)
    base = list(pool.values())
    return [
        attrs.evolve(base[i % len(base)], name=f"{base[i % len(base)].name[:56]}_{i}")
        for i in range(count)
    ]


def _composition(tools: list[Tool[..., object]]) -> object:
    """Five adaptors over ``tools``: Combined, Filtered, Prefixed, Renamed, ApprovalRequired."""
    half = len(tools) // 2
    combined = Combined(Registry(tools[:half]), Registry(tools[half:]))
    filtered = Filtered(combined, lambda t, _c: not t.name.startswith("delete_"))
    renamed = Renamed(Prefixed(filtered, "x_"), {f"x_{tools[0].name}": "first"})
    return ApprovalRequired(renamed, when=lambda call, _c: call.name.startswith("x_send"))


def _plain(tools: list[Tool[..., object]]) -> list[Tool[..., object]]:
    """The tools with a function (the synthetic ones are schema-only)."""
    return [
        Tool.from_schema(t.name, t.description, t.parameters, fn=lambda **kw: "ok") for t in tools
    ]


def catalog_rows(repeat: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    synthetic, queries = synthetic_tools(10_000)
    sets = {"synthetic": (synthetic, queries)}
    real = bfcl_tools(10_000)
    if real is not None:
        sets["bfcl"] = (real, QUERIES)
    for label, (tools, asked) in sets.items():
        build = min(once(lambda tools=tools: Catalog(tools)) for _ in range(repeat))
        catalog = Catalog(tools)
        for query in asked:  # each term's weights are computed on first use
            catalog.search(query)
        with Timer(repeat) as timer:
            searched = timer.measure(
                {"search": lambda c=catalog, a=asked: [c.search(q) for q in a]}
            )["search"].cpu / len(asked)
        rows.append(
            {"row": f"catalog build, 10,000 {label} tools", "seconds": build, "target": 0.2}
        )
        rows.append({"row": f"search, 10,000 {label} tools", "seconds": searched, "target": 0.001})
    return rows + search_peer_rows(repeat, sets)


def resolve_rows(repeat: int) -> list[dict[str, object]]:
    tools = _plain(synthetic_tools(1_000, seed=1)[0])
    registry = Registry(tools)
    toolset = _composition(tools)
    prepared = Prepared(toolset, lambda _c, ts: ts)
    context = Context()
    call = [ToolCall("1", f"x_{tools[1].name}", {})]
    plain_call = [ToolCall("1", tools[1].name, {})]
    registry_for(toolset, context)
    ops: dict[str, Callable[[], object]] = {
        "one-call dispatch_sync, Registry": lambda: dispatch_sync(plain_call, registry),
        "one-call dispatch_sync, 5 adaptors": lambda: dispatch_sync(call, toolset, context=context),
        "resolve 5 adaptors, unchanged": lambda: registry_for(toolset, context),
        "resolve 5 adaptors, new context": lambda: registry_for(toolset, Context()),
        "resolve 5 adaptors + Prepared": lambda: registry_for(prepared, context),
    }
    with Timer(repeat) as timer:
        timed = {name: sample.cpu for name, sample in timer.measure(ops).items()}
    base = timed["one-call dispatch_sync, Registry"]
    rows = []
    for name, seconds in timed.items():
        row: dict[str, object] = {
            "row": name,
            "seconds": seconds,
            "share_of_dispatch": seconds / base,
        }
        if name == "resolve 5 adaptors, unchanged":
            row["target_share"] = 0.05
        rows.append(row)
    rows += peer_rows(repeat)
    return rows


def peer_rows(repeat: int) -> list[dict[str, object]]:
    """Pydantic AI's resolution of the same composition, if it is installed."""
    try:
        from .peers import pydantic_ai_toolsets as peer
    except ImportError:
        return []
    names = [t.name for t in synthetic_tools(1_000, seed=1)[0]]
    with Timer(repeat) as timer:
        op = Op(peer.resolver(names), peer.LOOP)  # type: ignore[arg-type]
        seconds = timer.measure({"peer": op})["peer"].cpu
    return [{"row": f"{peer.LABEL}, 5 adaptors over 1,000 tools (every step)", "seconds": seconds}]


def search_peer_rows(
    repeat: int, sets: dict[str, tuple[list[Tool[..., object]], list[str]]]
) -> list[dict[str, object]]:
    """FastMCP's BM25 index over the same texts, if it is installed."""
    try:
        from .peers import fastmcp_search as peer
    except ImportError:
        return []
    rows: list[dict[str, object]] = []
    for label, (tools, asked) in sets.items():
        documents = [peer.document(t.name, t.description, t.parameters) for t in tools]
        build = min(once(peer.builder(documents)) for _ in range(repeat))
        with Timer(repeat) as timer:
            searched = timer.measure({"s": peer.searcher(documents, asked)})["s"].cpu / len(asked)
        rows.append({"row": f"{peer.LABEL} build, 10,000 {label} tools", "seconds": build})
        rows.append({"row": f"{peer.LABEL} search, 10,000 {label} tools", "seconds": searched})
    return rows


def main() -> None:
    args = options(
        "python -m benchmarks.bench_toolsets",
        "Benchmarks for toolset resolution and deferred discovery (Catalog build and search).",
    )
    machine = machine_info()
    started = time.perf_counter()
    rows = catalog_rows(args.repeat) + resolve_rows(args.repeat)
    elapsed = time.perf_counter() - started
    method = f"best of {args.repeat} runs (~{RUN_SECONDS} s each), thread CPU time per operation"
    found = versions(("tinytools", "pydantic-ai-slim", "fastmcp"))
    if args.json:
        document = {
            "benchmark": "toolsets",
            "method": method,
            "versions": found,
            "machine": machine,
            "elapsed_s": elapsed,
            "rows": rows,
        }
        print(json.dumps(document))
        return
    print(header("tinytools toolset and discovery benchmarks", found, method, machine, elapsed))
    lines = []
    for row in rows:
        share = row.get("share_of_dispatch")
        target = row.get("target") or row.get("target_share")
        lines.append(
            [
                str(row["row"]),
                duration(float(row["seconds"])),  # type: ignore[arg-type]
                "-" if share is None else f"{100 * float(share):.2f} %",  # type: ignore[arg-type]
                "-"
                if target is None
                else (duration(target) if "target" in row else f"{100 * target:.0f} %"),  # type: ignore[arg-type,operator]
            ]
        )
    print(table(["operation", "time", "of a one-call dispatch", "target"], lines))


if __name__ == "__main__":
    main()
