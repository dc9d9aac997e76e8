"""Admission's limits: the run policy's trivial limits and ``advertised`` leave answers
unchanged by the shortcuts that keep them cheap."""

from __future__ import annotations

from collections.abc import Callable, Collection

import pytest

from tests.engine.one_add import CALLS, TOOLS
from tinytools import (
    Cancellation,
    RunPolicy,
    ToolCall,
    dispatch_sync,
)

THREE = [ToolCall(f"c{i}", "add", '{"a": 1}') for i in range(3)]


class TestTrivialLimits:
    """``max_tool_calls`` and the allow-list refuse exactly what they should, alone or with
    the stop checks beside them."""

    @pytest.mark.parametrize("cancellation", [None, Cancellation()])
    @pytest.mark.parametrize("deadline", [None, 60.0])
    @pytest.mark.parametrize("limit", [None, 0, 2])
    def test_max_tool_calls(
        self, limit: int | None, deadline: float | None, cancellation: Cancellation | None
    ) -> None:
        """The first ``limit`` calls run; the rest are answered with the limit reached."""
        policy = RunPolicy(max_tool_calls=limit, deadline=deadline)
        result = dispatch_sync(THREE, TOOLS, policy=policy, cancellation=cancellation)
        ran = 3 if limit is None else limit
        assert [m.status for m in result.messages] == ["ok"] * ran + ["error"] * (3 - ran)
        assert all("limit of" in m.content for m in result.messages[ran:])

    @pytest.mark.parametrize(
        ("allowlist", "fail_closed", "runs"),
        [
            (None, True, True),
            ({"add"}, True, True),
            ({"other"}, True, False),
            (set(), True, False),
            (set(), False, True),
            ({"other"}, False, False),
        ],
    )
    def test_allowlist(self, allowlist: set[str] | None, fail_closed: bool, runs: bool) -> None:
        """A listed tool runs; an unlisted one is unknown; empty denies all unless opted out."""
        policy = RunPolicy(allowlist=allowlist, fail_closed_allowlist=fail_closed)
        result = dispatch_sync(CALLS, TOOLS, policy=policy)
        assert (result.messages[0].status == "ok") is runs
        assert result.executed == (("c1",) if runs else ())


class TestAdvertised:
    """``advertised`` restricts the call to the names given, in any collection."""

    @pytest.mark.parametrize("kind", [set, frozenset, tuple, list])
    def test_collections(self, kind: Callable[[list[str]], Collection[str]]) -> None:
        """A listed tool runs and an unlisted one is unknown, whatever the collection."""
        listed = kind(["add"])
        other = kind(["other"])
        for _ in range(2):  # the second time from the remembered set
            assert dispatch_sync(CALLS, TOOLS, advertised=listed).messages[0].status == "ok"
            refused = dispatch_sync(CALLS, TOOLS, advertised=other).messages[0]
            assert refused.status == "error"
            assert "Unknown tool" in refused.content
