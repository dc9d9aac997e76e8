"""Tests for `tinytools.ledger.reconcile`: its answers keep the tools' byte limits."""

from __future__ import annotations

import uuid

from tinytools import Registry, ToolCall, ToolPolicy, tool
from tinytools.ledger import PostgresLedger, SqliteLedger, reconcile
from tinytools.ledger._reconcile import INTERRUPTED


@tool(policy=ToolPolicy().with_runtime(max_result_bytes=64))
def pay(amount: int) -> str:
    """Pay, answering in at most 64 bytes."""
    return "paid"


@tool
def send(amount: int) -> str:
    """Send, with no byte limit of its own."""
    return "sent"


class TestInterruptedAnswer:
    def test_cut_to_the_tools_own_limit(self, ledger: SqliteLedger | PostgresLedger) -> None:
        """A call of a tool with ``max_result_bytes=64`` is answered as interrupted in at
        most 64 bytes, cut with the marker; a tool with no limit gets the whole text."""
        run = uuid.uuid4().hex  # (a PostgreSQL database outlives the test)
        ledger.started(run, "c1", "pay", {"amount": 5})  # crashed before settling
        ledger.started(run, "c2", "send", {"amount": 5})
        calls = [ToolCall("c1", "pay", {"amount": 5}), ToolCall("c2", "send", {"amount": 5})]
        out = reconcile(calls, Registry.of(pay, send), ledger, run)
        cut, whole = out.messages
        assert ("interrupted", "interrupted") == (cut.status, whole.status)
        assert 64 >= len(cut.content.encode())
        assert cut.content.startswith(INTERRUPTED[:10])
        assert "truncated" in cut.content
        assert INTERRUPTED == whole.content
