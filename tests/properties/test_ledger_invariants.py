"""Property tests: invariant 1 holds with an effect ledger that fails or refuses.

Each example draws a batch (tools that return, raise, abort the batch, defer
themselves, plus unknown names) and a ledger that, at a drawn point, fails its batch
claim, fails one per-call ``started``, fails one ``settled``, or reports some calls
as already started. Through ``dispatch_sync`` and ``await dispatch`` (trio), every
call is answered by exactly one message in call order unless deferred — whether the
batch returns or aborts — no tool runs after its claim failed or was refused, and a
failing ledger surfaces as ``DispatchAborted`` naming it, never as another exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinytools import (
    ApprovalRequired,
    DispatchAborted,
    DispatchResult,
    FatalToolError,
    ToolCall,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools.ledger import AlreadyStarted

ran: list[str] = []


@tool
def fine(n: int) -> int:
    """Return n."""
    ran.append("fine")
    return n


@tool
def broken(n: int) -> int:
    """Raise."""
    ran.append("broken")
    raise ValueError(f"bad {n}")


@tool
def fatal(n: int) -> int:
    """Abort the batch."""
    ran.append("fatal")
    raise FatalToolError("stop")


@tool
def asks(n: int) -> int:
    """Defer itself."""
    ran.append("asks")
    raise ApprovalRequired({"n": n})


TOOLS = [fine, broken, fatal, asks]


class Ledger:
    """Fails or refuses as drawn; ``batching`` decides whether it offers started_batch."""

    def __init__(self, fail: str, at: int, refuse: frozenset[str], batching: bool) -> None:
        self.fail, self.at, self.refuse, self.seen = fail, at, refuse, 0
        self.raised = False
        self.claimed: list[str] = []
        if batching:
            self.started_batch = self._started_batch

    def started(self, run_id: str, call_id: str, tool_name: str, arguments: object) -> None:
        self._tick("started")
        if call_id in self.refuse:
            raise AlreadyStarted(run_id, call_id)
        self.claimed.append(call_id)

    def _started_batch(self, run_id: str, calls: Sequence[Any]) -> frozenset[str]:
        self._tick("batch")
        self.claimed.extend(c[0] for c in calls if c[0] not in self.refuse)
        return frozenset(c[0] for c in calls) & self.refuse

    def settled(self, run_id: str, call_id: str, status: str) -> None:
        self._tick("settled")

    def unresolved(self, run_id: str | None = None) -> tuple[Any, ...]:
        return ()

    def _tick(self, what: str) -> None:
        if what == self.fail:
            self.seen += 1
            if self.seen == self.at:
                self.raised = True
                raise OSError(f"{what} failed")


NAMES = st.sampled_from(["fine", "broken", "fatal", "asks", "nope"])


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[ToolCall], Ledger]:
    names = draw(st.lists(NAMES, min_size=1, max_size=6))
    calls = [ToolCall(f"c{i}", name, {"n": i}) for i, name in enumerate(names)]
    batching = draw(st.booleans())
    fail = draw(st.sampled_from(["none", "batch" if batching else "started", "settled"]))
    refuse = draw(st.frozensets(st.sampled_from([c.id for c in calls])))
    return calls, Ledger(fail, draw(st.integers(1, 6)), refuse, batching)


def check(calls: list[ToolCall], outcome: DispatchResult | DispatchAborted, ledger: Ledger) -> None:
    result = outcome.result if isinstance(outcome, DispatchAborted) else outcome
    deferred = {c.id for c in result.deferred.all} if result.deferred else set()
    answered = [m.tool_call_id for m in result.messages]
    assert [c.id for c in calls if c.id not in deferred] == answered, "invariant 1"
    assert not set(result.executed) - set(ledger.claimed), "a tool ran without its claim"
    assert not set(result.executed) & ledger.refuse, "a refused call ran"
    if ledger.raised:  # a failing ledger is never silent: the batch aborts, naming it
        assert isinstance(outcome, DispatchAborted)
        assert "effect ledger" in outcome.reason or "fatally" in outcome.reason


def _settings() -> settings:
    return settings(
        max_examples=max(10, settings().max_examples // 2),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


@_settings()
@given(scenarios())
def test_sync_batch_answered_whatever_the_ledger_does(
    scenario: tuple[list[ToolCall], Ledger],
) -> None:
    calls, ledger = scenario
    try:
        outcome: DispatchResult | DispatchAborted = dispatch_sync(calls, TOOLS, ledger=ledger)
    except DispatchAborted as aborted:
        outcome = aborted
    check(calls, outcome, ledger)


@_settings()
@given(scenarios())
def test_async_batch_answered_whatever_the_ledger_does(
    scenario: tuple[list[ToolCall], Ledger],
) -> None:
    calls, ledger = scenario

    async def main() -> DispatchResult | DispatchAborted:
        try:
            return await dispatch(calls, TOOLS, ledger=ledger)
        except DispatchAborted as aborted:
            return aborted

    check(calls, trio.run(main), ledger)
