"""Benchmarks for decoding constraints: ``python -m benchmarks.bench_constraints [--json]``.

Rows and their target (issue 29): a constraint over 1,000 tools in under
200 ms of Python (``build``), then each backend's text from it (``gbnf``, ``lark``,
``structural tag``), with the text's size, for 10 and 1,000 tools so that the growth
shows (it should be linear in the tools). Two tool sets: synthetic tools (a required
string, an enum, a bounded integer, an array of strings and a boolean each), and, when
``../shared/corpora/bfcl`` is present, the BFCL definitions repeated under new names.
A grammar's first use by a backend (llguidance compiling it, llama.cpp parsing it) is
the backend's cost, not timed here.
"""

from __future__ import annotations

import json
import time

from tinytools import Tool
from tinytools.formats import json_in_tag, mistral, ptype, xml

from ._report import duration, header, machine_info, options, table, versions
from ._timing import once
from .bench_toolsets import bfcl_tools

__all__ = ["main"]


def synthetic(count: int) -> list[Tool[..., object]]:
    """``count`` tools of five parameters each, of the kinds tool schemas mostly hold."""
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city."},
            "units": {"enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "tags": {"type": "array", "items": {"type": "string"}},
            "verbose": {"type": "boolean"},
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    return [Tool.from_schema(f"tool_{i}", "A tool.", schema) for i in range(count)]


def rows(repeat: int) -> list[dict[str, object]]:
    sets = {"synthetic": synthetic}
    if bfcl_tools(10) is not None:
        sets["bfcl"] = lambda count: bfcl_tools(count) or []
    found: list[dict[str, object]] = []
    for label, make in sets.items():
        for count in (10, 1_000):
            tools = make(count)
            for dialect in (json_in_tag, mistral, ptype, xml):
                name = dialect.__name__.rsplit(".", 1)[-1]
                build = min(once(lambda d=dialect, t=tools: d.constraint(t)) for _ in range(repeat))
                texts = {
                    "gbnf": lambda c: c.gbnf().text,
                    "lark": lambda c: c.lark(),
                    "structural tag": lambda c: json.dumps(c.structural_tag()),
                }
                row: dict[str, object] = {
                    "row": f"{name}, {count:,} {label} tools",
                    "build_s": build,
                    "target_s": 0.2 if count == 1_000 else None,
                }
                for kind, spell in texts.items():
                    # each from a fresh constraint: a constraint keeps what it spelled
                    made = [dialect.constraint(tools) for _ in range(repeat)]
                    row[f"{kind}_s"] = min(once(lambda c=c, s=spell: s(c)) for c in made)
                    row[f"{kind}_chars"] = len(spell(made[0]))
                found.append(row)
    return found


def main() -> None:
    args = options(
        "python -m benchmarks.bench_constraints",
        "Benchmarks for building decoding constraints and spelling them for each backend.",
    )
    machine = machine_info()
    started = time.perf_counter()
    found_rows = rows(args.repeat)
    elapsed = time.perf_counter() - started
    method = f"best of {args.repeat} runs, thread CPU time of one call each"
    found = versions(("tinytools",))
    if args.json:
        document = {
            "benchmark": "constraints",
            "method": method,
            "versions": found,
            "machine": machine,
            "elapsed_s": elapsed,
            "rows": found_rows,
        }
        print(json.dumps(document))
        return
    print(header("tinytools decoding-constraint benchmarks", found, method, machine, elapsed))
    lines = [
        [
            str(row["row"]),
            duration(float(row["build_s"])),  # type: ignore[arg-type]
            "-" if row["target_s"] is None else duration(float(row["target_s"])),  # type: ignore[arg-type]
            *(
                f"{duration(float(row[f'{kind}_s']))} ({int(row[f'{kind}_chars']):,} chars)"  # type: ignore[call-overload]
                for kind in ("gbnf", "lark", "structural tag")
            ),
        ]
        for row in found_rows
    ]
    print(table(["tools", "build", "target", "gbnf", "lark", "structural tag"], lines))


if __name__ == "__main__":
    main()
