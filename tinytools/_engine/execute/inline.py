"""Execution without an event loop: ``dispatch_sync``'s batch of synchronous calls.

The calls run one after another, in call order, on the caller's thread — or, for a tool
that blocks or has a timeout, on a worker thread the caller waits for
(:mod:`.threaded`). The batch's deadline and cancellation take effect between calls and
while a threaded call waits.
"""

from __future__ import annotations

import functools
import time

from tinytools._engine.admit.admission import Admitted
from tinytools._engine.outcome import Outcome
from tinytools._engine.state import Run
from tinytools._engine.stops import Stop, stop_now

from .attempts import Raised, attempt
from .bind import begin
from .classify import next_attempt
from .threaded import Leash, wait_here
from .wraps import sync_body

__all__ = ["execute_inline", "run_inline"]


def execute_inline(run: Run, deadline: float | None) -> Stop | None:
    """Run the admitted calls in order; why the rest were cut off, or None."""
    stoppable = run.cancellation is not None or deadline is not None
    for item in run.admitted:
        if run.halted or stoppable:
            stop = stop_now(run.halted, run.cancellation, deadline, time.monotonic)
            if stop is not None:
                return stop
        run.finish(item, run_inline(run, item, deadline))
    return None


def run_inline(run: Run, item: Admitted, deadline: float | None) -> Outcome:
    """Run one synchronous call on this thread, or on a worker thread when it blocks or has
    a timeout (``deadline`` is on :func:`time.monotonic`'s clock); its outcome."""
    plan = item.tool._plan
    timeout = plan.timeout or run.env.policy.tool_timeout
    fn, kwargs, handle, context = begin(run, item, deadline)
    if plan.retries or run.stack.wraps:  # attempts driven to their outcome, in the wraps
        if not plan.blocking and timeout is None:
            return context.run(sync_body(run, item, fn, kwargs, None))
        leash = Leash()
        body = functools.partial(context.run, sync_body(run, item, fn, kwargs, leash))
        return wait_here(  # type: ignore[return-value]  # (its attempts' outcome)
            run, item, body, timeout, deadline, handle, leash
        )
    # One attempt, with no driver between it and this frame (a frame fewer per call, the
    # common case): what it raised is classified here.
    value: object
    if not plan.blocking and timeout is None:
        value = context.run(attempt, fn, kwargs)
    else:
        once = functools.partial(context.run, attempt, fn, kwargs)
        value = wait_here(run, item, once, timeout, deadline, handle, None)
    if type(value) is Raised:  # replaced, not kept: the failure's traceback holds this
        value = next_attempt(run, item, value.error, 0)  # frame (a cycle for the collector)
    return value  # type: ignore[return-value]
