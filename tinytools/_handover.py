"""Handing a fast-path batch over to the general path, with everything done so far.

``_fastpath`` runs plain batches without the pipeline's bookkeeping; when a call
raises or returns something only the full fold handles, these functions rebuild
the general path's state from what the fast path did and finish the batch there,
never running a call twice.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import _fastpath
from ._admit import Admitted
from ._concurrency import interrupt, run_unscoped
from ._execute import UNSEEN, classify, continue_async, continue_inline, run_inline
from ._fold import Folded, Outcome, Ran
from ._inject import Context
from ._registry import AnyTool, Registry
from ._result import DispatchResult
from ._run import NO_MIDDLEWARE, Options, Run, Sink, abort_batch, assemble, prepare
from ._wire import ToolCall, ToolMessage, wrap_return
from .errors import FatalToolError, RetryableError
from .events import Event
from .policies import RunPolicy

__all__ = ["promote_async", "promote_spread", "promote_sync"]


def _rebuild(
    batch: tuple[ToolCall, ...],
    tools: Registry,
    admitted: list[tuple[ToolCall, AnyTool, dict[str, object]]],
    events: list[Event],
    answered: Iterable[tuple[int, ToolMessage]],
    policy: RunPolicy,
    context: Context | None,
) -> Run:
    """A general-path run holding what the fast path did: admitted calls, events, answers."""
    sink = Sink(None)
    sink.events = events
    run = prepare(
        batch, tools, Options(policy, NO_MIDDLEWARE, context, None, None, None), None, sink
    )
    run.verdicts = [Admitted(i, c, t, a) for i, (c, t, a) in enumerate(admitted)]
    for index, message in answered:
        run.folded[index] = Folded(message, ())
    return run


def _first_outcome(error: Exception) -> Outcome | Exception:
    """What the call at the promotion point produced: a special result, or an error to retry."""
    if isinstance(error, _fastpath.Special):
        try:
            return Ran(wrap_return(error.value))
        except Exception as caught:
            return caught
    return error


def _from_plan(
    plan: _fastpath.Plan, at: int, policy: RunPolicy, context: Context | None
) -> tuple[Run, Admitted]:
    """The run of a serial fast batch, up to call ``at`` (which ran), and that call."""
    answered = enumerate(plan.messages)
    run = _rebuild(plan.batch, plan.tools, plan.admitted, plan.events, answered, policy, context)
    run.started.add(at)
    return run, run.admitted()[at]


def promote_sync(
    plan: _fastpath.Plan, at: int, error: Exception, policy: RunPolicy, context: Context | None
) -> DispatchResult:
    """The general path takes over a fast ``dispatch_sync`` at call ``at``."""
    run, item = _from_plan(plan, at, policy, context)
    first = _first_outcome(error)
    if isinstance(first, Exception):
        first = continue_inline(run.attempts(item), item.arguments, first)
    run.settle(item, first)
    for rest in run.admitted()[at + 1 :]:
        run.settle(rest, run_inline(run.attempts(rest), UNSEEN))
    return assemble(run, why="cancelled")


async def promote_async(
    plan: _fastpath.Plan, at: int, error: Exception, policy: RunPolicy, context: Context | None
) -> DispatchResult:
    """The general path takes over a fast ``dispatch`` at call ``at``."""
    run, item = _from_plan(plan, at, policy, context)
    first = _first_outcome(error)
    if isinstance(first, Exception):
        first = await continue_async(run.attempts(item), item.arguments, first)
    run.settle(item, first)
    if await run_unscoped(run, run.admitted()[at + 1 :]) == "aborted":
        assert run.fatal is not None
        raise abort_batch(run, run.fatal)
    return assemble(run, why="cancelled")


async def promote_spread(
    spread: _fastpath.Spread, policy: RunPolicy, context: Context | None
) -> DispatchResult:
    """The general path finishes a concurrent fast batch whose calls did not all end plainly.

    Calls that raised are classified (retrying a ``RetryableError`` with backoff, unless a
    ``FatalToolError`` stopped the batch, which interrupts them as it does there); calls
    cut off by a fatal sibling are answered as interrupted.
    """
    answered = ((i, m) for i, m in enumerate(spread.slots) if m is not None)
    run = _rebuild(
        spread.batch, spread.tools, spread.admitted, spread.events, answered, policy, context
    )
    run.started.update(spread.started)
    admitted = run.admitted()
    fatal = any(isinstance(e, FatalToolError) for e in spread.errors.values())
    for index in sorted(spread.errors):
        item = admitted[index]
        first = _first_outcome(spread.errors[index])
        if isinstance(first, Exception):
            if fatal and isinstance(first, RetryableError):
                continue  # its retry would have been cut off: interrupted below
            if fatal:
                first = classify(first, item.tool.name)
            else:
                first = await continue_async(run.attempts(item), item.arguments, first)
        run.finish(item, first)
    if run.fatal is not None:
        interrupt(run, admitted, "aborted")
        raise abort_batch(run, run.fatal)
    return assemble(run, why="cancelled")
