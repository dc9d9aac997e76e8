"""Tests for the batch's stops (``tinytools._engine.stops``): a call a stop cuts off is
answered in the same words wherever the engine notices the stop — at admission or at
execution."""

from __future__ import annotations

import trio
import trio.testing

from tinytools import RunPolicy, ToolCall, before_tool, dispatch, tool

PAST_DEADLINE = "Tool call not run: the batch was past its deadline."


@tool
async def nap(text: str) -> str:
    """Sleep past the batch's deadline."""
    await trio.sleep(10)
    return text


async def _slow_hook(call: ToolCall, env: object) -> ToolCall:
    await trio.sleep(10)
    return call


def _answers(**keywords: object) -> list[tuple[str, str]]:
    calls = [ToolCall("a", "nap", {"text": "x"}), ToolCall("b", "nap", {"text": "y"})]

    async def main() -> list[tuple[str, str]]:
        result = await dispatch(calls, [nap], policy=RunPolicy(deadline=5), **keywords)  # type: ignore[arg-type]
        return [(m.status, m.content) for m in result.messages]

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_deadline_passed_at_admission_and_at_execution_reads_the_same() -> None:
    """Admission said "the batch's deadline passed", execution "the batch was past its
    deadline": one text now, written in one place."""
    at_admission = _answers(middleware=[before_tool(_slow_hook)])
    at_execution = _answers()
    assert at_admission == [("interrupted", PAST_DEADLINE)] * 2
    assert at_execution[1] == ("interrupted", PAST_DEADLINE)
