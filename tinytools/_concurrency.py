"""Running admitted calls under an event loop: serially or bounded-concurrent.

The batch runs inside one cancel scope when a deadline or a cancellation handle
can stop it; calls run one after another when ``max_concurrency`` is 1 (or there
is one call), else in a nursery whose capacity limiter is taken in call order.
Calls a stop cuts off are answered as interrupted.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

import anyio
import anyio.from_thread
import anyio.lowlevel
import sniffio
import trio

from ._admit import Admitted
from ._execute import run_async
from ._fold import Failed
from ._inject import Cancellation
from ._run import Run

__all__ = ["execute", "interrupt", "run_all", "run_unscoped"]


async def execute(run: Run, cancellation: Cancellation | None, deadline: float | None) -> str:
    """Run the admitted calls under the batch's deadline and cancellation.

    Returns why unfinished calls stopped (``"cancelled"`` or ``"past its deadline"``).
    """
    admitted = run.admitted()
    if cancellation is None and deadline is None:
        # Nothing can cancel the batch from outside: no batch scope, no loop token.
        return await run_unscoped(run, admitted)
    handles = {item.index: Cancellation() for item in admitted}
    loop_thread, token = threading.get_ident(), anyio.lowlevel.current_token()
    with anyio.CancelScope(deadline=math.inf if deadline is None else deadline) as scope:

        def cancel_from_anywhere() -> None:
            if threading.get_ident() == loop_thread:
                scope.cancel()
            else:
                anyio.from_thread.run_sync(scope.cancel, token=token)

        forget = cancellation.on_cancel(cancel_from_anywhere) if cancellation else lambda: None
        try:
            await run_all(run, admitted, handles, deadline, scope)
        finally:
            forget()
    if scope.cancel_called:
        for handle in handles.values():
            handle.cancel()
        why = "cancelled" if cancellation is not None and cancellation.cancelled else None
        if why is None and run.fatal is None:
            why = "past its deadline"
        interrupt(run, admitted, why or "aborted")
        return why or "aborted"
    return "cancelled"


async def run_unscoped(run: Run, items: Sequence[Admitted]) -> str:
    """Run ``items`` with nothing outside able to stop them; ``"aborted"`` if one was fatal."""
    handles = {item.index: Cancellation() for item in items}
    await run_all(run, items, handles, None, None)
    if run.fatal is None:
        return "cancelled"
    for handle in handles.values():
        handle.cancel()
    interrupt(run, items, "aborted")
    return "aborted"


async def run_all(
    run: Run,
    admitted: Sequence[Admitted],
    handles: dict[int, Cancellation],
    deadline: float | None,
    scope: anyio.CancelScope | None,
) -> None:
    concurrency = run.env.policy.max_concurrency

    async def body(item: Admitted) -> bool:
        """Run one call; True when it aborted the batch."""
        if run.fatal is not None:
            return True
        if not item.tool.is_async:
            await anyio.lowlevel.checkpoint()  # an inline tool never yields: yield before it
        outcome = await run_async(run.attempts(item), handles[item.index], deadline)
        run.finish(item, outcome)
        if run.sink.pending:
            await run.sink.flush()
        return run.is_fatal()

    if concurrency == 1 or len(admitted) <= 1:
        # Serial: the loop itself bounds concurrency (no limiter, no task group).
        for item in admitted:
            if await body(item):
                if scope is not None:
                    scope.cancel()
                return
        return
    # A limiter only when it can bind: fewer slots than calls.
    limiter = anyio.CapacityLimiter(concurrency) if concurrency < len(admitted) else None
    # Under trio, trio's own nursery: anyio's task group adds a cancel scope and a wrapper
    # coroutine per task (~15 us each on trio).
    native = sniffio.current_async_library() == "trio"
    async with trio.open_nursery() if native else anyio.create_task_group() as group:
        stop = group.cancel_scope

        async def one(item: Admitted, slot: object) -> None:
            try:
                fatal = await body(item)
            finally:
                if limiter is not None:
                    limiter.release_on_behalf_of(slot)
            if fatal:
                (scope or stop).cancel()

        async def unbounded(item: Admitted) -> None:
            # No limiter to release: one coroutine frame fewer per call.
            if await body(item):
                (scope or stop).cancel()

        for item in admitted:
            if limiter is None:
                group.start_soon(unbounded, item)
                continue
            slot = object()
            # Taken here, in call order, not in the task: trio starts tasks in an
            # arbitrary order, and calls should start (and be cut by a deadline) in order.
            await limiter.acquire_on_behalf_of(slot)
            group.start_soon(one, item, slot)


def interrupt(run: Run, admitted: Sequence[Admitted], why: str) -> None:
    """Answer started-but-unfinished calls as interrupted (their events included)."""
    for item in admitted:
        if item.index in run.started and item.index not in run.folded:
            text = f"Tool call interrupted: the batch was {why}."
            run.finish(item, Failed("Cancelled", text, status="interrupted"))
