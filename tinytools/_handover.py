"""Handing a fast-path batch over to the general path, with everything done so far.

``_fastpath`` runs plain batches without the pipeline's bookkeeping; when a call
raises or returns something only the full fold handles, these functions rebuild
the general path's state from what the fast path did and finish the batch there,
never running a call twice.
"""

from __future__ import annotations

from . import _fastpath
from ._admit import Admitted
from ._concurrency import interrupt, run_all
from ._execute import classify, continue_async, continue_inline, run_inline
from ._fold import Folded, Outcome, Ran
from ._inject import Cancellation, Context
from ._result import DispatchResult
from ._run import Options, Run, Sink, abort_batch, assemble, prepare
from ._wire import wrap_return
from .errors import FatalToolError, RetryableError
from .policies import RunPolicy

__all__ = ["promote_async", "promote_spread", "promote_sync"]

#: The cancellation handle of a call whose tool injects nothing: nobody sees it.
_UNSEEN = Cancellation()


def _promoted(
    policy: RunPolicy, context: Context | None, plan: _fastpath.Plan, at: int
) -> tuple[Run, Admitted]:
    """A general-path run holding what the fast path did, up to call ``at`` (which ran)."""
    sink = Sink(None)
    sink.events = plan.events
    options = Options(policy, (), context, None, None, None)
    run = prepare(plan.batch, plan.tools, options, None, sink)
    run.verdicts = [Admitted(i, c, t, a) for i, (c, t, a) in enumerate(plan.admitted)]
    for i, message in enumerate(plan.messages):
        run.folded[i] = Folded(message, ())
    run.started.add(at)
    item = run.verdicts[at]
    assert isinstance(item, Admitted)
    return run, item


def _first_outcome(error: Exception) -> Outcome | Exception:
    """What the call at the promotion point produced: a special result, or an error to retry."""
    if isinstance(error, _fastpath.Special):
        try:
            return Ran(wrap_return(error.value))
        except Exception as caught:
            return caught
    return error


def _settle(run: Run, item: Admitted, outcome: Outcome) -> None:
    run.finish(item, outcome)
    if run.fatal is not None:
        raise abort_batch(run, run.fatal)


def promote_sync(
    plan: _fastpath.Plan, at: int, error: Exception, policy: RunPolicy, context: Context | None
) -> DispatchResult:
    """The general path takes over a fast ``dispatch_sync`` at call ``at``."""
    run, item = _promoted(policy, context, plan, at)
    first = _first_outcome(error)
    if isinstance(first, Exception):
        first = continue_inline(run.attempts(item), item.arguments, first)
    _settle(run, item, first)
    for rest in run.admitted()[at + 1 :]:
        _settle(run, rest, run_inline(run.attempts(rest), _UNSEEN))
    return assemble(run, why="cancelled")


async def promote_async(
    plan: _fastpath.Plan, at: int, error: Exception, policy: RunPolicy, context: Context | None
) -> DispatchResult:
    """The general path takes over a fast ``dispatch`` at call ``at``."""
    run, item = _promoted(policy, context, plan, at)
    first = _first_outcome(error)
    if isinstance(first, Exception):
        first = await continue_async(run.attempts(item), item.arguments, first)
    _settle(run, item, first)
    rest = run.admitted()[at + 1 :]
    handles = {i.index: Cancellation() for i in rest}
    await run_all(run, rest, handles, None, None)
    if run.fatal is not None:
        for handle in handles.values():
            handle.cancel()
        interrupt(run, rest, "aborted")
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
    sink = Sink(None)
    sink.events = spread.events
    options = Options(policy, (), context, None, None, None)
    run = prepare(spread.batch, spread.tools, options, None, sink)
    run.verdicts = [Admitted(i, c, t, a) for i, (c, t, a) in enumerate(spread.admitted)]
    admitted = run.admitted()
    for index, message in enumerate(spread.slots):
        if message is not None:
            run.folded[index] = Folded(message, ())
    run.started.update(spread.started)
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
