"""One call's attempts: the retry policy, and where a tool's function is called.

:func:`attempts` is a generator (the sans-I/O pattern, as admission's hook walk): it
calls a synchronous tool (:func:`attempt`, the one place that does) and decides what
follows each failure, and yields to its driver what only a driver can do — call and
await an async tool (:data:`AWAIT`: ``loop._awaited`` makes the coroutine and awaits it
in one expression, so no interrupt can fall between and leave it never awaited), wait
before the next attempt — then leaves the call's outcome on its :class:`Attempt`.
:func:`drive` runs it on the thread that runs a synchronous tool (inline, or a worker
thread); ``loop.adrive`` under an event loop. Either runs inside the call's copy of the
caller's context.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Final, TypeAlias

import msgspec

from tinytools._engine.admit.admission import Admitted
from tinytools._engine.outcome import Outcome
from tinytools._engine.state import Run
from tinytools._engine.stops import Stop, interrupted

from .classify import PROPAGATE, next_attempt

__all__ = ["AWAIT", "Attempt", "Raised", "Steps", "attempt", "attempts", "drive"]

#: What :func:`attempts` yields for an attempt of an async tool: the driver calls it and
#: awaits its coroutine, and leaves what it returned, or :class:`Raised`, on the call's
#: :class:`Attempt`.
AWAIT: Final = "await"

#: What a call's attempts yield to their driver: the seconds to wait before the next
#: attempt, or :data:`AWAIT`.
Steps: TypeAlias = Iterator["float | str"]


class Raised(msgspec.Struct):
    """What one attempt raised (a tool's failure), handed back to be classified or
    retried. A Struct because it is built in C: a class with a Python ``__init__``
    costs every failed call about 0.1 µs more (see docs/concepts/performance.md). It
    stays tracked by the garbage collector: a driver's frame in the failure's traceback
    can hold it, a cycle only the collector breaks."""

    error: BaseException


class Attempt:
    """One call's attempts in progress, between the generator and its driver: what the
    driver hands back (``reply``: an async tool's value, or :class:`Raised`) and what the
    attempts end with (``outcome``). A generator that ends by returning a value costs its
    driver an exception to read it; one that ends with nothing costs nothing."""

    __slots__ = ("outcome", "reply")

    outcome: Outcome
    reply: object


def attempt(fn: Callable[..., object], kwargs: dict[str, object]) -> object:
    """One attempt of a synchronous tool: the one place its function is called (an async
    tool's is called by ``loop._awaited``, which awaits it in the same expression). What
    it returned, or :class:`Raised` with the tool's failure, whatever it raised (but what
    :data:`PROPAGATE` lists, which is not the tool's to answer)."""
    try:
        return fn(**kwargs)
    except PROPAGATE:
        raise
    except BaseException as error:
        return Raised(error)


def attempts(
    run: Run, item: Admitted, fn: Callable[..., object], kwargs: dict[str, object], at: Attempt
) -> Steps:
    """Every attempt of one call, until one is not retried; its outcome is left on ``at``."""
    is_async = item.tool._plan.is_async
    tries = 0
    while True:
        if is_async:
            yield AWAIT  # the driver calls the tool and awaits it
            value, at.reply = at.reply, None
        else:
            value = attempt(fn, kwargs)
        if type(value) is not Raised:
            at.outcome = value  # type: ignore[assignment]
            return
        decided = next_attempt(run, item, value.error, tries)
        del value  # (its traceback holds this frame: no cycle left behind)
        if type(decided) is not float:
            at.outcome = decided  # type: ignore[assignment]
            return
        tries += 1
        yield decided


def _sleep(delay: float) -> bool:
    time.sleep(delay)
    return True


def drive(
    run: Run,
    item: Admitted,
    fn: Callable[..., object],
    kwargs: dict[str, object],
    pause: Callable[[float], bool] = _sleep,
) -> Outcome:
    """Run a synchronous tool's attempts on this thread to their outcome. ``pause`` waits
    before each retry; False: the caller left (the call timed out or was interrupted
    meanwhile), so no further attempt starts."""
    if not item.tool._plan.retries:  # one attempt, and no loop to make for it
        value = attempt(fn, kwargs)
        if type(value) is Raised:  # (replaced: no cycle through the failure's traceback)
            value = next_attempt(run, item, value.error, 0)
        return value  # type: ignore[return-value]
    at = Attempt()
    for delay in attempts(run, item, fn, kwargs, at):
        if not pause(delay):  # type: ignore[arg-type]  # a sync tool's attempts yield waits
            return interrupted(Stop.CANCELLED)  # (nobody reads it: its caller has left)
    return at.outcome
