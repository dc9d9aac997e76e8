"""``dispatch_sync`` from several threads at once: the engine's memos are shared.

A web server's worker pool calls ``dispatch_sync`` from many threads with the same tools.
Each dispatch here passes what the engine remembers between dispatches afresh (a
middleware list, a tool list, an ``advertised`` tuple, an ``on_event`` handler, a host
toolset), so every one of them stores a new entry and evicts the oldest; the threads
switch every microsecond so those writes interleave. Every call must be answered
correctly and no dispatch may raise (the memos raised ``KeyError`` and "dictionary
changed size during iteration").
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator

import pytest

import tinytools
from tinytools import ToolCall

THREADS = 8
ROUNDS = 150


@tinytools.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tinytools.tool
def broken(a: int) -> int:
    """Always fails."""
    raise ValueError(f"no {a}")


class HostToolset:
    """A host's own toolset (asked on every dispatch, its answer remembered)."""

    def tools(self, context: object) -> list[tinytools.Tool]:
        return [add, broken]

    def explain(self, context: object) -> tuple[()]:
        return ()


class Passing:
    def before_tool(self, call: ToolCall, env: object) -> ToolCall:
        return call


@pytest.fixture
def fast_switching() -> Iterator[None]:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def _handler() -> Callable[[object], None]:
    def handle(event: object) -> None:
        pass

    handle.marked = True  # type: ignore[attr-defined]  # read by is_async_function
    return handle


def _dispatches(seed: int, failures: list[str]) -> None:
    for i in range(ROUNDS):
        try:
            calls = [
                ToolCall(f"c{i}", "add", f'{{"a": {seed}, "b": {i}}}'),
                ToolCall(f"d{i}", "broken", f'{{"a": {i}}}'),
                ToolCall(f"e{i}", "add", f'{{"a": "{i}", "b": {seed}}}'),
            ]
            tools: object = [add, broken]
            if i % 3 == 1:
                tools = HostToolset()
            result = tinytools.dispatch_sync(
                calls,
                tools,  # type: ignore[arg-type]
                middleware=[Passing() for _ in range(1 + i % 2)],
                advertised=("add", "broken") if i % 2 else None,
                on_event=_handler() if i % 4 else None,
            )
            statuses = [m.status for m in result.messages]
            if result.messages[0].content != str(seed + i) or statuses != [
                "ok",
                "error",
                "error",
            ]:
                failures.append(f"thread {seed} round {i}: {result.messages}")
        except Exception as error:  # what a dispatch raised is the failure
            failures.append(f"thread {seed} round {i}: {error!r}")


@pytest.mark.usefixtures("fast_switching")
def test_dispatch_sync_from_many_threads_answers_every_call() -> None:
    failures: list[str] = []
    threads = [
        threading.Thread(target=_dispatches, args=(seed, failures)) for seed in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
