"""Property tests for `tinytools.toolsets` and `tinytools.discovery`.

Random compositions of the adaptors (``Combined``, ``Filtered``, ``Prefixed``,
``Renamed``, ``Prepared``, ``ApprovalRequired``, ``External``) over random tools
(each exposure) are checked for three things:

* ``tools()`` and ``explain()`` partition the underlying tools: following each
  tool through the explanations (renames carry it on, a ``None`` ``exposed_as``
  leaves it out) ends exactly at a tool of ``tools()`` or at a left-out
  explanation, and ``tools()`` holds nothing else;
* dispatch never runs a tool that is not exposed ``Direct`` under the name
  called, nor an external or approval-gated one (no approvals are given);
* a ``tool_call``-wrapped call and the same call made directly (the target
  declared) get the same messages, deferrals and executed ids.
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st

from tinytools import (
    Context,
    Exposure,
    Registry,
    RunPolicy,
    Tool,
    ToolCall,
    ToolDefinitionError,
    dispatch_sync,
)
from tinytools.discovery import Catalog, Discovery
from tinytools.toolsets import (
    ApprovalRequired,
    Combined,
    External,
    Filtered,
    Prefixed,
    Prepared,
    Renamed,
    Toolset,
)
from tinytools.toolsets._base import registry_for

SCHEMA = {
    "type": "object",
    "properties": {"x": {"type": "integer"}},
    "required": ["x"],
    "additionalProperties": False,
}
EXPOSURES = st.sampled_from([Exposure.Direct, Exposure.Direct, Exposure.Deferred, Exposure.Hidden])


class Journal:
    """What ran: the underlying tool's name, for every call of its function."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def tool(self, name: str, exposure: Exposure) -> Tool[..., object]:
        def run(x: int) -> str:
            self.ran.append(name)
            return f"{name}:{x}"

        return Tool.from_schema(
            name, f"Tool {name} does {name}.", SCHEMA, fn=run, exposure=exposure
        )


@st.composite
def compositions(draw: st.DrawFn, journal: Journal) -> tuple[Toolset, list[Tool[..., object]]]:
    """A random composition and its underlying tools (names unique across leaves)."""
    counter = itertools.count()
    leaves: list[Tool[..., object]] = []

    def leaf() -> Toolset:
        number = next(counter)
        exposures = draw(st.lists(EXPOSURES, min_size=0, max_size=4))
        tools = [journal.tool(f"t{number}_{j}", e) for j, e in enumerate(exposures)]
        leaves.extend(tools)
        return Registry(tools)

    def build(depth: int) -> Toolset:
        kind = draw(
            st.sampled_from(
                [
                    "leaf",
                    "leaf",
                    "combined",
                    "filtered",
                    "prefixed",
                    "renamed",
                    "prepared",
                    "approval",
                    "external",
                ]
            )
        )
        if depth >= 3 or kind == "leaf":
            return leaf()
        if kind == "combined":
            return Combined(*(build(depth + 1) for _ in range(draw(st.integers(1, 3)))))
        inner = build(depth + 1)
        names = [t.name for t in inner.tools()]
        chosen = set(draw(st.lists(st.sampled_from(names), unique=True))) if names else set()
        if kind == "filtered":
            return Filtered(inner, lambda t, _c, drop=frozenset(chosen): t.name not in drop)
        if kind == "prefixed":
            return Prefixed(inner, f"p{next(counter)}_")
        if kind == "renamed":
            return Renamed(inner, {n: f"r{next(counter)}" for n in sorted(chosen)})
        if kind == "prepared":
            changed = draw(st.booleans())

            def prepare(
                _c: object,
                tools: tuple[Tool[..., object], ...],
                drop: frozenset[str] = frozenset(chosen),
            ) -> list[Tool[..., object]]:
                kept = [t for t in tools if t.name not in drop]
                return [attrs.evolve(t, description="changed") for t in kept] if changed else kept

            return Prepared(inner, prepare)
        if kind == "approval":
            when = draw(st.sampled_from([None, lambda _call, _c: True, lambda _call, _c: False]))
            return ApprovalRequired(inner, when=when)
        return External(inner)

    return build(0), leaves


def trace(name: str, toolset: Toolset) -> str | None:
    """Where the underlying tool ``name`` ends: its final name, or None when left out."""
    current: str | None = name
    for explained in toolset.explain():
        if current is not None and explained.name == current:
            current = explained.exposed_as
    return current


class TestPartition:
    @given(st.data())
    def test_exposed_or_explained(self, data: st.DataObject) -> None:
        """Every underlying tool is exposed (under its traced name) or explained as left out."""
        toolset, leaves = data.draw(compositions(Journal()))
        try:
            final = {t.name for t in toolset.tools()}
        except ToolDefinitionError as error:  # a nested prefix past 64 characters
            problem = str(error)
            assert "64" in problem, problem
            return
        traced = [trace(t.name, toolset) for t in leaves]
        assert {n for n in traced if n is not None} == final
        assert len([n for n in traced if n is not None]) == len(final)


class TestNeverRunsUnexposed:
    @given(st.data())
    def test_only_exposed_plain_tools_run(self, data: st.DataObject) -> None:
        """Only tools exposed under the name called run — Direct ones, or Deferred ones
        reached through a tool_call of the same call; gated and external ones wait."""
        journal = Journal()
        toolset, leaves = data.draw(compositions(journal))
        if data.draw(st.booleans()):
            toolset = Discovery(toolset)
        try:
            final = {t.name: t for t in toolset.tools()}
        except ToolDefinitionError:
            return
        candidates = sorted({*final, *(t.name for t in leaves), "nope"})
        picks = st.tuples(st.sampled_from(candidates), st.booleans())
        drawn = data.draw(st.lists(picks, max_size=6))
        calls = [
            ToolCall(str(i), "tool_call", {"name": n, "arguments": {"x": i}})
            if wrapped
            else ToolCall(str(i), n, {"x": i})
            for i, (n, wrapped) in enumerate(drawn)
        ]
        result = dispatch_sync(calls, toolset)
        registry = registry_for(toolset, None)
        executed_names = set()
        for call, (name, wrapped) in zip(calls, drawn, strict=True):
            if call.id not in result.executed:
                continue
            tool = final[name]
            executed_names.add(name)
            reached = wrapped and "tool_call" in final and tool.exposure is Exposure.Deferred
            assert tool.exposure is Exposure.Direct or reached
            assert tool.fn is not None
            gated = tool.policy.access.approval_required
            assert not (gated and registry.approval_needed(ToolCall(call.id, name, {}), Context()))
        ran_as = {trace(name, toolset) for name in journal.ran}
        assert ran_as <= executed_names
        assert len(journal.ran) == len(result.executed)


class TestToolCallEquivalence:
    @given(
        exposures=st.lists(EXPOSURES, min_size=1, max_size=5),
        target=st.integers(0, 6),
        arguments=st.sampled_from(
            [{"x": 1}, {"x": "one"}, {}, '{"x": 2}', "{'x': 3,}", '{"x": ', "[1]", {"x": 1, "y": 2}]
        ),
        allow=st.none() | st.sets(st.integers(0, 6)),
    )
    def test_wrapped_and_direct_agree(
        self, exposures: list[Exposure], target: int, arguments: Any, allow: set[int] | None
    ) -> None:
        """tool_call(name, arguments) and the call of name declared give the same answer."""
        journal = Journal()
        tools = [journal.tool(f"t{i}", e) for i, e in enumerate(exposures)]
        tools.append(journal.tool("t_deferred", Exposure.Deferred))  # so discovery is on
        discovery = Discovery(Registry(tools))
        name = f"t{target}"
        allowlist = None if allow is None else [*(f"t{i}" for i in allow), "tool_call"]
        policy = RunPolicy(allowlist=allowlist)
        wrapped = dispatch_sync(
            [ToolCall("c", "tool_call", {"name": name, "arguments": arguments})],
            discovery,
            policy=policy,
        )
        declared: Toolset = discovery
        if any(t.name == name and t.exposure is Exposure.Deferred for t in tools):
            declared = discovery.promote([name])
        direct = dispatch_sync([ToolCall("c", name, arguments)], declared, policy=policy)
        assert direct.messages == wrapped.messages
        assert direct.deferred == wrapped.deferred
        assert direct.executed == wrapped.executed


WORDS = st.sampled_from(
    [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "file",
        "user",
        "send",
        "mail",
        "list",
        "city",
        "weather",
        "note",
    ]
)


class TestCatalogTopK:
    @given(
        documents=st.lists(st.lists(WORDS, max_size=8), min_size=1, max_size=30),
        query=st.lists(WORDS, max_size=5),
        limit=st.integers(1, 6),
        refused=st.sets(st.integers(0, 29)),
    )
    def test_search_is_the_exact_top(
        self, documents: list[list[str]], query: list[str], limit: int, refused: set[int]
    ) -> None:
        """The pruned search returns exactly the best `limit` of all scores (ties by name)."""
        tools = [
            Tool.from_schema(f"t{i}", " ".join(words), {"type": "object"})
            for i, words in enumerate(documents)
        ]
        catalog = Catalog(tools)
        text = " ".join(query)
        banned = {f"t{i}" for i in refused}
        everything = sorted(
            ((n, s) for n, s in catalog.scores(text).items() if n not in banned),
            key=lambda item: (-item[1], item[0]),
        )
        found = catalog.top(text, limit, lambda name: name not in banned)
        assert [n for n, _ in everything[:limit]] == [m.name for m in found]
