"""Tests for `tinytools.ledger.reconcile` and `replay_safe`."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from tinytools import Context, ToolCall, ToolPolicy, dispatch_sync, tool
from tinytools.events import Event, ToolEffectReconciled
from tinytools.ledger import SqliteLedger, reconcile, replay_safe


def make(name: str, policy: ToolPolicy) -> object:
    @tool(name=name, policy=policy)
    def fn(n: int = 0) -> int:
        """A tool."""
        return n

    return fn


SAFE = ToolPolicy.classified().with_runtime(replay="safe")
IDEMPOTENT = ToolPolicy.classified().with_runtime(idempotent=True)
UNCLASSIFIED_BUT_READ_ONLY = ToolPolicy().with_side_effects(read_only=True)


class TestReplaySafe:
    @pytest.mark.parametrize(
        ("policy", "expected"),
        [
            (ToolPolicy.read_only(), True),
            (SAFE, True),
            (IDEMPOTENT, True),
            (ToolPolicy.classified().with_side_effects(read_only=True), True),
            (ToolPolicy.classified().with_side_effects(read_only=True, network=True), True),
            (ToolPolicy.classified().with_side_effects(read_only=True, payment=True), False),
            (ToolPolicy.classified().with_side_effects(read_only=True, destructive=True), False),
            (ToolPolicy.classified(), False),
            (ToolPolicy(), False),
            (UNCLASSIFIED_BUT_READ_ONLY, False),
            (ToolPolicy().with_runtime(replay="safe"), False),
        ],
    )
    def test_read_from_the_policy(self, policy: ToolPolicy, expected: bool) -> None:
        """Replay-safe: a classified policy saying replay safe, read-only or idempotent;
        ``read_only`` next to a side effect that writes is no read-only claim."""
        assert expected == replay_safe(make("t", policy))  # type: ignore[arg-type]

    def test_decorator_shortcuts(self) -> None:
        """@tool(read_only=True) classifies and is replay-safe; idempotent=True alone is not."""

        def noop() -> None:
            """Do nothing."""

        assert replay_safe(tool(read_only=True)(noop))
        assert not replay_safe(tool(idempotent=True)(noop))

    def test_unknown_tool_is_not(self) -> None:
        assert not replay_safe(None)


@pytest.fixture
def ledger(tmp_path: Path) -> SqliteLedger:
    with SqliteLedger(tmp_path / "l.db") as made:
        yield made  # type: ignore[misc]


class TestReconcile:
    def test_decisions_and_events(self, ledger: SqliteLedger) -> None:
        """Interrupted replay-safe calls are released for a re-run, others answered as
        interrupted and settled; never-started calls are left to run; each interrupted
        call gets one event, also handed to on_event."""
        tools = [make("read", ToolPolicy.read_only()), make("pay", ToolPolicy.classified())]
        calls = [ToolCall("a", "read", {"n": 1}), ToolCall("b", "pay", {"n": 2})]
        calls.append(ToolCall("c", "pay", {"n": 3}))  # never started
        ledger.started("r", "a", "read", {"n": 1})
        ledger.started("r", "b", "pay", {"n": 2})
        heard: list[Event] = []
        decided = reconcile(calls, tools, ledger, "r", on_event=heard.append)  # type: ignore[arg-type]
        assert ["a", "c"] == [c.id for c in decided.rerun]
        (message,) = decided.messages
        assert ("b", "pay", "interrupted", True) == (
            message.tool_call_id,
            message.name,
            message.status,
            message.is_error,
        )
        assert "may or may not have happened" in message.content
        expected = [
            ToolEffectReconciled(call_id="a", tool_name="read", outcome="rerun"),
            ToolEffectReconciled(call_id="b", tool_name="pay", outcome="interrupted"),
        ]
        assert expected == list(decided.events) == heard
        encoded = msgspec.json.encode(list(decided.events))
        assert expected == msgspec.json.decode(encoded, type=list[Event])
        assert ["a"] == [e.call_id for e in ledger.unresolved("r")]  # released, waiting

        resumed = dispatch_sync(decided.rerun, tools, ledger=ledger, context=Context(run_id="r"))  # type: ignore[arg-type]
        assert ["ok", "ok"] == [m.status for m in resumed.messages]
        assert () == ledger.unresolved("r")

    def test_reconciling_twice_changes_nothing_more(self, ledger: SqliteLedger) -> None:
        tools = [make("pay", ToolPolicy.classified())]
        calls = [ToolCall("b", "pay", {"n": 2})]
        ledger.started("r", "b", "pay", {"n": 2})
        first = reconcile(calls, tools, ledger, "r")  # type: ignore[arg-type]
        assert ["b"] == [m.tool_call_id for m in first.messages]
        second = reconcile(calls, tools, ledger, "r")  # type: ignore[arg-type]
        assert () == second.messages == second.events
        again = dispatch_sync(second.rerun, tools, ledger=ledger, context=Context(run_id="r"))  # type: ignore[arg-type]
        assert ["error"] == [m.status for m in again.messages]  # never runs again

    def test_rows_missing_from_the_calls(self, ledger: SqliteLedger) -> None:
        """An unresolved row the host did not pass is reconciled from the row: re-run from
        its stored arguments only when nothing was redacted from them."""
        tools = [
            make("read", ToolPolicy.read_only()),
            make(
                "secret",
                ToolPolicy.read_only().__class__(
                    classified=True,
                    side_effects=ToolPolicy.read_only().side_effects,
                    redact=("n",),
                ),
            ),
            make("pay", ToolPolicy.classified()),
        ]
        ledger.started("r", "x", "read", {"n": 1})
        ledger.started("r", "y", "secret", {"n": "[redacted]"})
        ledger.started("r", "z", "pay", {"n": 3})
        ledger.started("r", "q", "gone", {})  # a tool no longer registered
        decided = reconcile([], tools, ledger, "r")  # type: ignore[arg-type]
        assert [ToolCall("x", "read", {"n": 1})] == list(decided.rerun)
        assert {"y", "z", "q"} == {m.tool_call_id for m in decided.messages}
        assert ["x"] == [e.call_id for e in ledger.unresolved("r")]


class _Crashed(SqliteLedger):
    """A ledger that loses every settle, as a crash between a tool's effect and its
    settled row would."""

    def settled(self, run_id: str, call_id: str, status: object) -> None:  # type: ignore[override]
        return None


def test_a_call_reached_through_tool_call_is_judged_by_the_real_tool(tmp_path: Path) -> None:
    """The host holds the model's `tool_call` wrapper; the ledger row names the real tool.
    Reconcile judges the real tool (not the read-only intrinsic), so an effect that may
    have happened is answered as interrupted, never run again."""
    from tinytools import Registry
    from tinytools.discovery import Discovery

    ran: list[str] = []

    @tool(exposure="deferred")
    def send_email(to: str) -> str:
        """Send an email."""
        ran.append(to)
        return "sent"

    toolset = Discovery(Registry([send_email]))
    call = ToolCall("c1", "tool_call", {"name": "send_email", "arguments": {"to": "bob"}})
    with _Crashed(tmp_path / "l.db") as crashed:
        dispatch_sync([call], toolset, ledger=crashed, context=Context(run_id="r"))
    assert ["bob"] == ran
    with SqliteLedger(tmp_path / "l.db") as ledger:
        decided = reconcile([call], toolset, ledger, "r")
        assert () == decided.rerun
        (message,) = decided.messages
        assert ("c1", "send_email", "interrupted") == (
            message.tool_call_id,
            message.name,
            message.status,
        )
        event = ToolEffectReconciled(call_id="c1", tool_name="send_email", outcome="interrupted")
        assert [event] == list(decided.events)
        again = dispatch_sync(decided.rerun, toolset, ledger=ledger, context=Context(run_id="r"))
        assert () == again.messages
    assert ["bob"] == ran  # ran once


def test_a_call_naming_another_tool_under_a_started_id_is_judged_by_the_row(
    ledger: SqliteLedger,
) -> None:
    """A call id's row decides: a read-only tool named under a started `pay` id does not
    make `pay` replay-safe."""
    tools = [make("read", ToolPolicy.read_only()), make("pay", ToolPolicy.classified())]
    ledger.started("r", "b", "pay", {"n": 2})
    decided = reconcile([ToolCall("b", "read", {"n": 2})], tools, ledger, "r")  # type: ignore[arg-type]
    assert () == decided.rerun
    assert ["interrupted"] == [m.status for m in decided.messages]
