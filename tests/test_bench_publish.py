"""Tests for `benchmarks.publish`: a benchmark run becomes the docs' tables and chart."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from benchmarks import publish

DISPATCH = {
    "benchmark": "dispatch",
    "method": "best of 3 runs",
    "versions": {"python": "3.11.2", "tinytools": "0.1.0"},
    "machine": {"cpus": 2, "load_1min": 0.5},
    "elapsed_s": 1.0,
    "results": [
        {
            "section": "one sync call",
            "row": "floor",
            "role": "floor",
            "cpu_s": 7.4e-7,
            "wall_s": 7.5e-7,
            "floor": None,
            "ratio": None,
            "target": None,
            "result": "-",
            "note": "",
        },
        {
            "section": "one sync call",
            "row": "dispatch_sync",
            "role": "tinytools",
            "cpu_s": 4.7e-6,
            "wall_s": 4.8e-6,
            "floor": "floor",
            "ratio": 6.35,
            "target": 5.0,
            "result": "FAIL",
            "note": "",
        },
        {
            "section": "one sync call",
            "row": "Pydantic AI",
            "role": "peer",
            "cpu_s": 2.61e-4,
            "wall_s": 2.7e-4,
            "floor": "floor",
            "ratio": 352.7,
            "target": None,
            "result": "-",
            "note": "",
        },
    ],
}
REPAIR = {
    "benchmark": "repair",
    "rows": [
        {
            "shape": "flat",
            "size": "1 MB",
            "bytes": 1_000_000,
            "strict_bytes": 990_000,
            "floor": 8.5e-4,
            "tinytools": 2.2e-3,
            "pure_python": 3.4e-3,
            "json_repair": None,
            "json_repair_same": None,
        },
    ],
}
IMPORT = {
    "benchmark": "import",
    "method": "wall time of a fresh interpreter, median of 20, rows taking turns",
    "versions": {"python": "3.11.2", "msgspec": "0.19.0", "attrs": "25.1.0"},
    "machine": {"cpus": 2, "load_1min": 0.5},
    "repeat": 20,
    "target": 2.0,
    "met": True,
    "rows": [
        {"row": "import msgspec, attrs", "median_s": 0.052, "ratio": 1.0},
        {"row": "import tinytools", "median_s": 0.031, "ratio": 0.6},
    ],
}
WHEN = datetime.datetime(2026, 12, 1, 14, 0, tzinfo=datetime.timezone.utc)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_text(f"{json.dumps(DISPATCH)}\n{json.dumps(REPAIR)}\n", encoding="utf-8")
    return path


class TestMarkdown:
    def test_tables(self, results: Path):
        """Each benchmark gets a table with every row, times in human units."""
        text = publish.markdown(publish.load(results), WHEN)

        assert text.startswith("Run published 2026-12-01 14:00 UTC.\n")
        assert "| one sync call | dispatch_sync | tinytools | 4.7 µs | 6.35x | ≤ 5.0x | FAIL |" in (
            text
        )
        assert "| one sync call | Pydantic AI | peer | 261 µs | 352.70x | - | - |" in text
        assert "| flat, 1 MB | 1,000,000 | 850 µs | 2.2 ms | 3.4 ms | - |" in text
        assert "2 CPUs, load 0.5 at start; python 3.11.2, tinytools 0.1.0." in text

    def test_import_table(self, tmp_path: Path):
        """The import benchmark gets its table and says whether the target was met."""
        path = tmp_path / "run.jsonl"
        path.write_text(json.dumps(IMPORT) + "\n", encoding="utf-8")
        text = publish.markdown(publish.load(path), WHEN)

        assert "## Import time" in text
        assert "| import tinytools | 31 ms | 0.60x |" in text
        assert "≤ 2.0x `import msgspec, attrs`: met." in text

    def test_caveats(self, results: Path):
        """A quick run on a busy machine says so above its tables; a calm full run does not."""
        busy = {
            **DISPATCH,
            "method": "best of 3; --quick: no peers",
            "machine": {"cpus": 2, "load_1min": 8.2},
        }
        text = publish.markdown({"dispatch": busy}, WHEN)

        assert '!!! warning "Read these figures with care"' in text
        assert "a short run (`--quick`)" in text
        assert "load 8.2 on 2 CPUs" in text
        assert [] == publish.caveats(publish.load(results))

    def test_main_writes_files(self, results: Path, tmp_path: Path):
        """main writes the tables and, with matplotlib, an SVG chart without a date."""
        pytest.importorskip("matplotlib")
        tables, chart = tmp_path / "latest.md", tmp_path / "chart.svg"
        publish.main([str(results), "--tables", str(tables), "--chart", str(chart)])

        assert "## Dispatch" in tables.read_text(encoding="utf-8")
        svg = chart.read_text(encoding="utf-8")
        assert svg.lstrip().startswith("<?xml")
        assert "dispatch_sync" in svg
        assert "<dc:date>" not in svg

    def test_empty_results(self, tmp_path: Path):
        """A results file without documents is refused with a message."""
        empty = tmp_path / "empty.jsonl"
        empty.write_text("\n", encoding="utf-8")

        with pytest.raises(SystemExit, match="holds no benchmark document"):
            publish.main([str(empty), "--no-chart"])
