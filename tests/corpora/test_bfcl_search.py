"""Search quality of `tinytools.discovery.Catalog` on the Berkeley Function Calling Leaderboard.

Every function definition of ``bfcl/data`` (the first definition of each name, named as
``tool_from_bfcl`` names it) is pooled into one catalogue of about 1,800 tools. Each
question of the ``multiple``, ``parallel_multiple``, ``live_multiple`` and
``simple_python`` categories is searched with its user text; recall@5 is the share of
ground-truth function names (``bfcl/possible_answer``) found among the top five.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tinytools import Tool
from tinytools.discovery import Catalog
from tinytools.formats.bfcl import tool_from_bfcl


def jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSON Lines file (BFCL's ``.json`` files are JSON Lines)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


CATEGORIES = ("multiple", "parallel_multiple", "live_multiple", "simple_python")


def pooled(folder: Path) -> list[Tool[..., object]]:
    """One tool per BFCL function name, from its first definition."""
    tools: dict[str, Tool[..., object]] = {}
    for path in sorted((folder / "data").glob("BFCL_v4_*.json")):
        for entry in jsonl(path):
            for function in entry["function"]:
                built = tool_from_bfcl(function)
                tools.setdefault(built.name, built)
    return list(tools.values())


def recall_at_5(folder: Path, catalog: Catalog, category: str) -> tuple[int, int]:
    """(ground-truth names found in the top five, ground-truth names) for a category."""
    questions = {e["id"]: e for e in jsonl(folder / "data" / f"BFCL_v4_{category}.json")}
    found = total = 0
    for answer in jsonl(folder / "possible_answer" / f"BFCL_v4_{category}.json"):
        turns = questions[answer["id"]]["question"]
        text = " ".join(m["content"] for turn in turns for m in turn if m["role"] == "user")
        top = {match.name for match in catalog.search(text, 5)}
        for call in answer["ground_truth"]:
            total += 1
            found += next(iter(call)).replace(".", "_") in top
    return found, total


class TestCatalogOnBfcl:
    def test_recall_at_5(self, corpora: Path) -> None:
        """Recall@5 over the four categories is at least 0.80 (about 0.81)."""
        folder = corpora / "bfcl"
        if not (folder / "data").is_dir():
            pytest.skip(f"BFCL not found at {folder}")
        catalog = Catalog(pooled(folder))
        assert len(catalog) > 1500
        found = total = 0
        print("\nBFCL recall@5 of tinytools.discovery.Catalog:")
        for category in CATEGORIES:
            hits, count = recall_at_5(folder, catalog, category)
            print(f"  {category:18} {hits / count:.3f} ({hits}/{count})")
            found, total = found + hits, total + count
        print(f"  {'overall':18} {found / total:.3f} ({found}/{total})")
        assert found / total >= 0.80
