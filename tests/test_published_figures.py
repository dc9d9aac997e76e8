"""The benchmark figures README.md and docs/benchmarks.md quote are those of the published run.

The project's rule: a figure in the README or on the benchmarks page comes from a run
anyone can repeat, ``benchmarks/results/latest.jsonl`` (``nox -s bench`` writes it and
``python -m benchmarks.publish`` renders ``benchmarks/results/latest.md`` from it). These
tests recompute each quoted figure from that file, rounded as the text rounds it, so a new
run cannot leave stale figures behind.
"""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _text(path: Path) -> str:
    if not path.is_file():
        pytest.skip(f"{path} is not here (an installed package?)")
    return " ".join(path.read_text(encoding="utf-8").split())


def _dispatch_rows(path: Path) -> dict[tuple[str, str], dict[str, float]]:
    """The dispatch benchmark's rows of the run in ``path``, by (section, row)."""
    if not path.is_file():
        pytest.skip(f"{path} is not here (an installed package?)")
    for line in path.read_text(encoding="utf-8").splitlines():
        document = json.loads(line)
        if document["benchmark"] == "dispatch":
            return {(r["section"], r["row"]): r for r in document["results"]}
    pytest.fail(f"{path} holds no dispatch benchmark")


@pytest.fixture(scope="module")
def run() -> dict[tuple[str, str], dict[str, float]]:
    """The dispatch benchmark's rows of the published run."""
    return _dispatch_rows(RESULTS / "latest.jsonl")


def _row(run: dict[tuple[str, str], dict[str, float]], section: str, row: str) -> dict[str, float]:
    [found] = [r for (s, name), r in run.items() if s.startswith(section) and name == row]
    return found


ONE = "one call, 3-param sync tool"


def test_rendered_tables_are_the_results() -> None:
    """benchmarks/results/latest.md is what publish renders from latest.jsonl."""
    from benchmarks import publish

    tables = (RESULTS / "latest.md").read_text(encoding="utf-8")
    stamp = re.search(r"Run published (\d{4}-\d\d-\d\d \d\d:\d\d) UTC", tables)
    assert stamp is not None
    when = datetime.datetime.strptime(stamp[1], "%Y-%m-%d %H:%M").replace(
        tzinfo=datetime.timezone.utc
    )
    assert tables == publish.markdown(publish.load(RESULTS / "latest.jsonl"), when)


def test_readme_speed_figures(run: dict[tuple[str, str], dict[str, float]]) -> None:
    """Each figure of the README's Speed section, at the precision the README shows."""
    readme = _text(ROOT / "README.md")

    def us(section: str, row: str, digits: int) -> str:
        return f"{_row(run, section, row)['cpu_s'] * 1e6:.{digits}f} µs"

    def x(section: str, row: str, digits: int) -> str:
        return f"{_row(run, section, row)['ratio']:.{digits}f}x"

    plain, general = (
        "1. dispatch_sync, plain",
        "2. general: on_event + before/after middleware + policy",
    )
    by_hand = "dispatch_sync's result, made by hand"
    agents = "8. openai-agents FunctionTool.on_invoke_tool"
    langchain = "8. LangChain StructuredTool.invoke(ToolCall) (sync tool)"
    pydantic_ai = "8. pydantic-ai ToolManager.handle_call"
    asynchronous = "one call, 3-param async tool"
    for phrase in [
        f"costs {us(ONE, plain, 1)} of CPU, {x(ONE, plain, 1)} a hand-written msgspec",
        f"dispatch's result alone takes {x(ONE, by_hand, 2)})",
        f"call limits, {us(ONE, general, 1)} ({x(ONE, general, 1)})",
        f"takes {us(ONE, agents + ' (sync tool)', 0)} through OpenAI Agents' `FunctionTool`",
        f"{us(ONE, langchain, 0)} through LangChain's `StructuredTool.invoke`",
        f"{us(ONE, pydantic_ai + ' (sync tool)', 0)} through Pydantic AI's tool manager",
    ]:
        assert phrase in readme
    # With an async tool: OpenAI Agents' figure, then Pydantic AI's, however the
    # sentence is worded.
    speed = readme.split("## Speed", 1)[1].split("##", 1)[0]
    tail = speed.split("Pydantic AI's tool manager", 1)[1]
    agents_async = us(asynchronous, agents + " (async tool)", 1)[:-3]
    pydantic_ai_async = us(asynchronous, pydantic_ai + " (async tool)", 1)[:-3]
    assert "async tool" in tail
    assert tail.index(agents_async) < tail.index(pydantic_ai_async)


def test_benchmarks_page_now_column(run: dict[tuple[str, str], dict[str, float]]) -> None:
    """The "now" column of docs/benchmarks.md's "then and now" table is the published run."""
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    rows = {
        cells[0]: cells[3]
        for line in page.splitlines()
        if line.startswith("| ")
        and len(cells := [c.strip() for c in line.strip("|").split("|")]) == 5
    }

    def ratios(section: str, *names: str) -> str:
        return " / ".join(f"{_row(run, section, n)['ratio']:.2f}" for n in names) + "x"

    def both(row: str, cpu_digits: int, ratio_digits: int) -> str:
        found = _row(run, ONE, row)
        return f"{found['cpu_s'] * 1e6:.{cpu_digits}f} µs, {found['ratio']:.{ratio_digits}f}x"

    trio, asyncio = "100 async calls under trio", "100 async calls under asyncio"
    many = "one call, 10,000 registered tools"
    expected = {
        "`dispatch_sync`, plain": both("1. dispatch_sync, plain", 2, 2),
        "general: `on_event` + before/after middleware + `RunPolicy(max_tool_calls, allowlist)`": (
            both("2. general: on_event + before/after middleware + policy", 2, 2)
        ),
        "`on_event` only / middleware only / policy only / `advertised=` only": ratios(
            ONE,
            "2a. on_event only",
            "2b. before/after middleware only",
            "2c. RunPolicy(max_tool_calls=8, allowlist) only",
            "2d. advertised= only",
        ),
        "sync tool with `tool_timeout` (worker thread)": both(
            "3. RunPolicy(tool_timeout=5), sync tool", 1, 1
        ),
        "relaxed JSON repaired / invalid arguments answered / tool raises": ratios(
            ONE,
            "5a. relaxed JSON, repaired",
            "5b. invalid arguments, answered",
            "5c. tool raises ValueError",
        ),
        "async tool through `dispatch_sync`": (
            f"{_row(run, 'one call, 3-param async', '4. dispatch_sync, async tool')['ratio']:.1f}x"
        ),
        "100 async calls, trio / asyncio (`max_concurrency=100`)": (
            ratios(trio, "6. await dispatch, max_concurrency=100")[:-1]
            + " / "
            + ratios(asyncio, "6. await dispatch, max_concurrency=100")
        ),
        "the same with `max_concurrency=10`": (
            ratios(trio, "6. await dispatch, max_concurrency=10")[:-1]
            + " / "
            + ratios(asyncio, "6. await dispatch, max_concurrency=10")
        ),
        "10,000 tools: known / unknown name / `advertised=` / tools as a list, against 10 tools": (
            ratios(
                many,
                "7. known tool, 10,000 tools",
                "7. unknown name, 10,000 tools",
                "7. advertised= 5 names, 10,000 tools",
                "7. tools as a list, 10,000 tools",
            )
        ),
        "1,000 calls in one batch, per call, against 10": ratios(
            "batch of sync calls", "dispatch_sync, 1,000 calls"
        ),
    }
    assert expected == {row: rows[row] for row in expected}
    floor = _row(run, ONE, "msgspec floor")["cpu_s"] * 1e9
    assert f"floor {floor:.0f} ns" in " ".join(page.split())
    met = sum(r["result"] == "PASS" for r in run.values())
    assert f"{met} of the {met + sum(r['result'] == 'FAIL' for r in run.values())} targets" in page


def test_decisions_page_figures(run: dict[tuple[str, str], dict[str, float]]) -> None:
    """docs/concepts/decisions.md quotes the plain row and the reference row of the run."""
    page = _text(ROOT / "docs" / "concepts" / "decisions.md")
    plain = _row(run, ONE, "1. dispatch_sync, plain")["ratio"]
    by_hand = _row(run, ONE, "dispatch_sync's result, made by hand")["ratio"]
    assert (
        f"costs about {plain:.1f}x the msgspec floor, of which dispatch's result alone is "
        f"about {by_hand:.2f}x"
    ) in page


def _kept(name: str) -> dict[tuple[str, str], dict[str, float]]:
    return _dispatch_rows(RESULTS / "runs" / f"{name}.jsonl")


def test_benchmarks_page_other_runs() -> None:
    """The other same-day runs and the other Pythons the benchmarks page quotes are the runs
    kept in benchmarks/results/runs/."""
    page = _text(ROOT / "docs" / "benchmarks.md")

    def x(run: dict[tuple[str, str], dict[str, float]], row: str, section: str = ONE) -> str:
        return f"{_row(run, section, row)['ratio']:.2f}x"

    plain, general = (
        "1. dispatch_sync, plain",
        "2. general: on_event + before/after middleware + policy",
    )
    trio = "100 async calls under trio"
    first, second = _kept("e9ffaea-py311-1"), _kept("e9ffaea-py311-2")
    assert f"plain row at {x(first, plain)}, {x(second, plain)}" in page
    assert f"general row at {x(first, general)}, {x(second, general)}" in page
    trio_row = "6. await dispatch, max_concurrency=100"
    assert f"trio at {x(first, trio_row, trio)}, {x(second, trio_row, trio)}" in page
    py313, py310 = _kept("e9ffaea-py313"), _kept("e9ffaea-py310")
    assert f"on 3.13 plain {x(py313, plain)}, general **{x(py313, general)}**" in page
    assert f"on 3.10 plain {x(py310, plain)}, general **{x(py310, general)}**" in page
