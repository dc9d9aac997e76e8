"""The benchmark's agent-turn row (``benchmarks/_turn.py``): every side makes the same turn.

Row 9 of ``benchmarks/bench_dispatch.py`` compares one agent turn through tinytools with the
same turn through Pydantic AI's and the OpenAI Agents SDK's agents. The comparison only
means something if every side made the script's three calls with the same arguments, sent
the model every result, and ended on the model's final text. The peers are not test
dependencies (they are in the ``bench`` group): their cases skip without them.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from benchmarks import _turn, bench_dispatch
from benchmarks._data import async_twin
from benchmarks._timing import Timer

IDS = [call_id for call_id, _, _ in _turn.CALLS]


def _tools(kind: str, journal: _turn.Journal) -> tuple[Callable[..., Any], ...]:
    functions = _turn.tool_functions(journal)
    return functions if kind == "sync" else tuple(async_twin(fn) for fn in functions)


def _run(op: Callable[[], object]) -> object:
    result = op()
    if isinstance(result, Awaitable):
        return asyncio.run(_awaited(result))
    return result


async def _awaited(awaitable: Awaitable[object]) -> object:
    return await awaitable


def _assert_same_turn(build: Callable[..., Callable[[], object]], kind: str) -> None:
    journal: _turn.Journal = []
    seen: list[str] = []

    text = _run(build(_tools(kind, journal), seen))

    assert _turn.FINAL == text
    assert sorted(_turn.expected_journal(), key=repr) == sorted(journal, key=repr)
    assert IDS == sorted(seen)


class TestSameTurn:
    """Each side runs the script's three calls once, answers each, and ends on the text."""

    def test_floor(self) -> None:
        """The hand-written floor makes the three calls and sends their results."""
        _assert_same_turn(_turn.floor_turn, "sync")

    def test_tinytools_sync(self) -> None:
        """parse_calls, dispatch_sync and tool_results make the same turn."""
        _assert_same_turn(_turn.tinytools_turn, "sync")

    def test_tinytools_async(self) -> None:
        """``await dispatch`` with the async twins makes the same turn."""
        _assert_same_turn(_turn.tinytools_turn_async, "async")

    @pytest.mark.parametrize("kind", ["sync", "async"])
    @pytest.mark.parametrize(
        ("peer", "library"), [("pydantic_ai", "pydantic_ai"), ("openai_agents", "agents")]
    )
    def test_peer(self, peer: str, library: str, kind: str) -> None:
        """Each peer's agent, with the scripted model, makes the same turn."""
        pytest.importorskip(library)
        module = importlib.import_module(f"benchmarks.peers.{peer}")

        _assert_same_turn(module.turn, kind)

    def test_tinytools_sends_the_results_it_made(self) -> None:
        """The next request holds the assistant turn with the three calls, then one tool
        message per call whose text is the tool's value."""
        requests: list[list[dict[str, object]]] = []
        complete = _turn.chat_model()

        def recording(messages: list[dict[str, object]], tools: object) -> object:
            requests.append(list(messages))
            return complete(messages, tools)

        turn = _turn.tinytools_turn(_turn.tool_functions(), model=recording)

        assert _turn.FINAL == turn()
        last = requests[-1]
        assert ["user", "assistant", "tool", "tool", "tool"] == [m["role"] for m in last]
        calls: Any = last[1]["tool_calls"]
        assert IDS == [c["id"] for c in calls]
        assert [raw for _, _, raw in _turn.CALLS] == [c["function"]["arguments"] for c in calls]
        assert IDS == [m["tool_call_id"] for m in last[2:]]
        assert '{"city":"Paris","temperature":18,"unit":"celsius"}' == last[3]["content"]


class TestTurnSection:
    def test_rows_run(self) -> None:
        """The section (without the peers) builds, checks and times its rows, and reports
        each tinytools row against the floor."""
        section = bench_dispatch.turn_section({})
        with Timer(1, seconds=0.001) as timer:
            results = bench_dispatch.timed(timer, section)

        roles = [r.row.role for r in results]
        assert ["floor", "tinytools", "tinytools"] == roles
        assert all(r.ratio is not None and r.ratio > 0 for r in results[1:])

    def test_not_installed_peer_is_listed(self) -> None:
        """A turn peer that is not installed gets a row that says so."""
        section = bench_dispatch.turn_section({"pydantic_ai": None, "langchain": None})

        assert [("peer pydantic_ai (agent turn)", "not installed")] == [
            (r.name, r.note) for r in section.rows if r.op is None
        ]

    def test_a_turn_missing_a_call_is_refused(self) -> None:
        """The row's check fails a side that skipped one of the script's calls."""

        def lazy(functions: Any) -> Callable[[], str]:
            def turn() -> str:
                functions[0](query="rotate a pdf page", limit=3, exact=False)
                functions[1](city="Paris", unit="celsius")
                return _turn.FINAL

            return turn

        with pytest.raises(AssertionError, match="after the calls"):
            bench_dispatch._turn_op(lazy, "sync", "sync")
