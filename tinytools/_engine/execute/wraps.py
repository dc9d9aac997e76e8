"""The wrap hooks: a middleware's ``wrap_tool`` around a synchronous call's attempts, on
the thread that runs them, and its ``awrap_tool`` around an async call's, in its task.

Each wrap gets the call with its validated arguments, the run's ``env`` (the middleware's view of
the batch) and ``proceed``, which runs the next wrap, and the innermost the call's
attempts (its retries and timeout included), and returns what they produced as a
``ToolResult`` (:func:`result_of`). What the outermost wrap returns is the call's
outcome: the very result ``proceed`` gave keeps the outcome it stands for (a failure
keeps its type and traceback, a fatal error still aborts the batch); another
``ToolResult`` is answered as if the tool had returned it; what a wrap raises fails the
call as if the tool had raised it (not retried: the retries are inside ``proceed``).

Nothing here runs for a batch whose middleware has no wrap: the drivers check
``run.stack.wraps`` (``awraps``) first.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

import msgspec

from tinytools._engine.admit.admission import Admitted
from tinytools._engine.outcome import Failed, Fatal, Outcome, Postponed
from tinytools._engine.state import Run
from tinytools._engine.stops import Stop, interrupted
from tinytools._middleware import AsyncWrap, Wrap
from tinytools._wire import TextBlock, ToolResult, wrap_return

from .attempts import drive
from .classify import PROPAGATE, next_attempt
from .threaded import Leash

__all__ = ["Proceeded", "awrapped", "sync_body", "wrapped"]


def sync_body(
    run: Run,
    item: Admitted,
    fn: Callable[..., object],
    kwargs: dict[str, object],
    leash: Leash | None,
) -> Callable[[], Outcome]:
    """A synchronous call's attempts as one function of no argument, inside the run's
    ``wrap_tool`` hooks if any, for the thread that runs them (``leash``: a worker
    thread's, whose caller re-arms the attempt's timeout each time ``proceed`` is called
    again)."""
    pause = () if leash is None else (leash.pause,)
    attempts = functools.partial(drive, run, item, fn, kwargs, *pause)
    wraps = run.stack.wraps
    if not wraps:
        return attempts
    if leash is not None:
        first = [True]

        def attempts_again() -> Outcome:
            if first:  # (the first attempt started when the thread took the job)
                first.clear()
            elif not leash.restart():  # the caller left: no further attempt starts
                return interrupted(Stop.CANCELLED)  # (nobody reads it)
            return drive(run, item, fn, kwargs, leash.pause)

        return functools.partial(wrapped, wraps, run, item, attempts_again)
    return functools.partial(wrapped, wraps, run, item, attempts)


def result_of(outcome: Outcome, item: Admitted) -> ToolResult:
    """What ``proceed`` returns for ``outcome``: the tool's ``ToolResult``, its value
    made one, an error result saying what failed, or (the tool asked for approval or
    deferred the call) a result whose metadata says ``postponed``."""
    kind = type(outcome)
    if kind is Failed or kind is Fatal:
        return ToolResult.error(outcome.message)  # type: ignore[union-attr]
    if kind is Postponed:  # not a failure: a wrap that retries errors leaves it be
        postponed: str = outcome.kind  # type: ignore[union-attr]
        return ToolResult(
            content=(TextBlock(f"Tool call postponed ({postponed})."),),
            metadata={"postponed": postponed},
        )
    try:
        return wrap_return(outcome)
    except (TypeError, ValueError) as error:  # answered as fold answers it
        return ToolResult.error(f"Tool `{item.tool.name}` returned a bad value: {error}")


class Proceeded:
    """One call's wrap chain in progress: the call the wraps see, the wraps, what the
    innermost runs, and the outcome behind each result ``proceed`` returned (by the
    result's identity). ``proceed`` is a bound method with its depth (no closure that
    refers to itself: a call with wraps leaves no cycle for the collector)."""

    __slots__ = ("body", "call", "ended", "given", "hooks", "item", "run")

    def __init__(
        self, run: Run, item: Admitted, hooks: tuple[object, ...], body: Callable[[], object]
    ) -> None:
        self.run = run
        self.item = item
        self.hooks = hooks
        self.body = body
        self.call = msgspec.structs.replace(
            item.call, name=item.tool.name, arguments=item.arguments
        )
        self.given: list[tuple[ToolResult, Outcome]] = []
        #: Set once the call has its outcome: a ``proceed`` kept past it must not run the
        #: tool again, outside dispatch (no event, no ledger row, no limit).
        self.ended = False

    def gave(self, outcome: Outcome) -> ToolResult:
        """``proceed``'s result for ``outcome``, remembered."""
        result = result_of(outcome, self.item)
        self.given.append((result, outcome))
        return result

    def _check(self) -> None:
        if self.ended:
            raise RuntimeError(
                f"proceed() of the call {self.item.call.id!r} to `{self.item.tool.name}` was "
                "called after that call ended; call proceed() only inside the wrap_tool hook "
                "it was given to"
            )

    def level(self, depth: int) -> ToolResult:
        """The synchronous chain from the wrap at ``depth`` inwards."""
        self._check()
        if depth == len(self.hooks):
            return self.gave(self.body())  # type: ignore[arg-type]
        hook: Wrap = self.hooks[depth]  # type: ignore[assignment]
        return hook(self.call, self.run.env, functools.partial(self.level, depth + 1))

    async def alevel(self, depth: int) -> ToolResult:
        """The async chain from the wrap at ``depth`` inwards."""
        self._check()
        if depth == len(self.hooks):
            return self.gave(await self.body())  # type: ignore[misc]
        hook: AsyncWrap = self.hooks[depth]  # type: ignore[assignment]
        return await hook(self.call, self.run.env, functools.partial(self.alevel, depth + 1))

    def outcome(self, result: object) -> Outcome:
        """The call's outcome, from what the outermost wrap returned."""
        for given, outcome in self.given:
            if given is result:
                return outcome
        if isinstance(result, ToolResult):
            return result  # type: ignore[return-value]  # answered as a returned ToolResult
        error = TypeError(
            f"a wrap_tool hook returned {type(result).__name__}, not a ToolResult; "
            "return what proceed() returned, or a ToolResult"
        )
        return self.raised(error)

    def raised(self, error: BaseException) -> Outcome:
        """The call's outcome when a wrap raised ``error``: as if the tool had raised it,
        with no retry left."""
        item = self.item
        # (no retry left: an outcome, never a wait)
        return next_attempt(self.run, item, error, item.tool._plan.retries)  # type: ignore[return-value]


def wrapped(
    wraps: tuple[Wrap, ...], run: Run, item: Admitted, body: Callable[[], Outcome]
) -> Outcome:
    """Run ``body`` (the call's attempts, on this thread) inside the synchronous
    ``wraps``, the first outermost; the call's outcome."""
    chain = Proceeded(run, item, wraps, body)
    try:
        result = chain.level(0)
    except PROPAGATE:
        raise
    except BaseException as error:
        return chain.raised(error)
    finally:
        chain.ended = True
    return chain.outcome(result)


async def awrapped(
    awraps: tuple[AsyncWrap, ...],
    run: Run,
    item: Admitted,
    body: Callable[[], Awaitable[Outcome]],
    passes: Callable[[BaseException], bool],
) -> Outcome:
    """Await ``body`` (an async call's attempts) inside the ``awraps``, the first
    outermost; the call's outcome. What ``passes`` accepts (the event loop's
    cancellation of this task) is raised, not the call's failure."""
    chain = Proceeded(run, item, awraps, body)
    try:
        result = await chain.alevel(0)
    except BaseException as error:
        if isinstance(error, PROPAGATE) or passes(error):
            raise
        return chain.raised(error)
    finally:
        chain.ended = True
    return chain.outcome(result)
