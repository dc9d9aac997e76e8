"""Tests for `tinytools._runtime.contexts`: a coroutine awaited with each of its steps run in
a given `contextvars` context, in the awaiting task — the compiled stepper and its
pure-Python twin, under trio and asyncio."""

from __future__ import annotations

import contextvars
import gc
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from tinytools._runtime import contexts

try:
    from tinytools._runtime._contexts import in_context as compiled
except ImportError:  # pragma: no cover - installed without a C compiler
    compiled = None  # type: ignore[assignment]

STEPPERS = [
    pytest.param(contexts.stepped_in_python, id="python-stepper"),
    pytest.param(
        compiled,
        id="c-stepper",
        marks=pytest.mark.skipif(compiled is None, reason="the C extension is not built"),
    ),
]

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

pytestmark = pytest.mark.parametrize("stepper", STEPPERS)
Stepper = Callable[..., Any]


def _context(value: str) -> contextvars.Context:
    context = contextvars.copy_context()
    context.run(VAR.set, value)
    return context


@pytest.mark.anyio
async def test_every_step_runs_in_the_context_and_the_value_comes_back(stepper: Stepper) -> None:
    """Each step (before and after the coroutine yields to the loop) sees the context, what
    the coroutine sets stays in it, and the awaiting task's own context is untouched."""
    seen: list[str] = []

    async def body() -> str:
        seen.append(VAR.get())
        VAR.set("inside")
        await anyio.sleep(0)
        seen.append(VAR.get())
        return "done"

    token = VAR.set("task")
    try:
        context = _context("given")
        assert await stepper(context, body) == "done"
        assert seen == ["given", "inside"]
        assert VAR.get() == "task"
        assert context[VAR] == "inside"
    finally:
        VAR.reset(token)


@pytest.mark.anyio
async def test_what_the_coroutine_raises_comes_out(stepper: Stepper) -> None:
    async def body() -> None:
        await anyio.sleep(0)
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        await stepper(_context("x"), body)


@pytest.mark.anyio
async def test_returned_tuples_and_none_come_back_as_they_are(stepper: Stepper) -> None:
    """A return value is not unpacked (StopIteration carries one value)."""

    async def pair() -> tuple[int, int]:
        return (1, 2)

    async def nothing() -> None:
        await anyio.sleep(0)

    assert await stepper(_context("x"), pair) == (1, 2)
    assert await stepper(_context("x"), nothing) is None


@pytest.mark.anyio
async def test_a_cancellation_reaches_the_coroutine_in_the_context(stepper: Stepper) -> None:
    """The loop's cancellation is thrown into the coroutine (its handler runs in the
    context) and comes out to the cancel scope, which catches it."""
    seen: list[str] = []

    async def body() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            seen.append(VAR.get())

    with anyio.move_on_after(0.01) as scope:
        await stepper(_context("given"), body)
    assert scope.cancelled_caught
    assert seen == ["given"]


@pytest.mark.anyio
async def test_a_coroutine_that_catches_what_is_thrown_goes_on(stepper: Stepper) -> None:
    async def body() -> str:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0)
            raise
        return "never"

    with anyio.move_on_after(0.01):
        await stepper(_context("x"), body)


@pytest.mark.anyio
async def test_closing_the_awaiting_coroutine_closes_the_inner_one(stepper: Stepper) -> None:
    """A task's coroutine closed while suspended closes the coroutine it awaits, whose
    ``finally`` runs in the context."""
    seen: list[str] = []

    async def body() -> None:
        try:
            await anyio.sleep(0)
        finally:
            seen.append(VAR.get())

    async def outer() -> None:
        await stepper(_context("given"), body)

    coroutine = outer()
    coroutine.send(None)  # suspended at the inner coroutine's first step
    coroutine.close()
    assert seen == ["given"]


def test_a_context_already_entered_is_refused(stepper: Stepper) -> None:
    """A context cannot be entered twice at once: the step raises RuntimeError."""
    context = _context("x")

    async def body() -> int:
        return 1

    awaitable = stepper(context, body)
    with pytest.raises(RuntimeError, match="already entered"):
        context.run(awaitable.send, None)


def test_the_coroutine_is_made_in_the_first_step(stepper: Stepper) -> None:
    """Defect: the coroutine was made before the awaitable, so an exception between the
    two (a Ctrl-C landing there) left a coroutine that was never awaited (a
    RuntimeWarning); now an awaitable dropped unawaited made nothing."""
    made: list[str] = []

    async def body(tag: str) -> str:
        return tag

    def make(tag: str) -> Any:
        made.append(tag)
        return body(tag)

    awaitable = stepper(_context("x"), make, "a")
    assert made == []
    del awaitable
    gc.collect()
    assert made == []


@pytest.mark.anyio
async def test_no_reference_cycle_is_left(stepper: Stepper) -> None:
    async def body() -> int:
        await anyio.sleep(0)
        return 1

    gc.collect()
    gc.disable()
    try:
        for _ in range(100):
            await stepper(_context("x"), body)
        assert gc.collect() == 0
    finally:
        gc.enable()
