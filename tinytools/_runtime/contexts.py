"""Running a coroutine's steps in a ``contextvars`` context, in the awaiting task.

A task runs every coroutine it awaits in the task's own context; an async tool must run
in its call's copy of the caller's context instead, without a task of its own (a task
per call costs more than the call, and a serial batch runs in dispatch's own task).
:func:`in_context` makes the coroutine in its first step and steps it itself, entering
the context for each step, and passes what the event loop sends and throws through
unchanged — the same under trio and asyncio. Made in the first step, not before: an
exception raised between making the awaitable and awaiting it (a Ctrl-C) leaves no
coroutine that was never awaited. The compiled twin (``_contexts.c``) is used when built:
it spares the Python frame per step and the exception at the end.
"""

from __future__ import annotations

import contextvars
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["in_context", "stepped_in_python"]

T = TypeVar("T")


@types.coroutine
def stepped_in_python(
    context: contextvars.Context, fn: Callable[..., Coroutine[Any, Any, T]], /, *args: Any
) -> Generator[Any, Any, T]:
    """Await the coroutine ``fn(*args)``, made in its first step, with each of its steps
    run in ``context``."""
    enter = context.run
    made: list[Coroutine[Any, Any, T]] = []

    def start(_: None) -> Any:
        coroutine = fn(*args)
        try:
            made.append(coroutine)
        except BaseException:  # (a Ctrl-C: closed, never awaited is no warning)
            coroutine.close()
            raise
        return coroutine.send(None)

    step: Callable[[Any], Any] = start
    given: Any = None
    while True:
        try:
            request = enter(step, given)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        coroutine = made[0]
        try:
            given = yield request
        except GeneratorExit:
            enter(coroutine.close)
            raise
        except BaseException as error:
            step, given = coroutine.throw, error
        else:
            step = coroutine.send


try:
    from ._contexts import in_context
except ImportError:  # pragma: no cover - installed without a C compiler
    in_context = stepped_in_python
