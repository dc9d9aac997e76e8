"""Execution of one admitted call: bind injections, run, retry, classify.

The only stage that touches the tool's function. A call runs as one of:

* an async tool, awaited under its timeout;
* a synchronous tool in a worker thread, when its policy says it blocks or
  a timeout applies (the timeout then holds: the call is answered and the
  thread abandoned, its ``Cancellation`` set);
* a synchronous tool inline — the default, and the only mode of the
  loop-free path of ``dispatch_sync``.

What the tool raises is classified by :func:`classify` into the outcomes of
``_fold``: ``RetryableError`` is retried up to the tool's ``max_retries``
with exponential backoff and jitter, ``ModelRetry`` goes back to the model,
``FatalToolError`` aborts the batch, ``ApprovalRequired``/``CallDeferred``
postpone the call, anything else becomes an error message naming the
exception type (the traceback goes to the ``ToolFailed`` event only).
"""

from __future__ import annotations

import functools
import random
import time
import traceback
from collections.abc import Callable

import anyio
import attrs

from ._admit import Admitted
from ._dispatch_env import DispatchEnv
from ._fold import Failed, Fatal, Outcome, Postponed, Ran
from ._inject import CallRuntime, Cancellation, Emit, RunContext, bind
from ._redact import shown_arguments
from ._wire import wrap_return
from .errors import (
    ApprovalRequired,
    CallDeferred,
    FatalToolError,
    ModelRetry,
    RetryableError,
)
from .events import Custom, Event, ToolRetried, ToolStarted

__all__ = [
    "UNSEEN",
    "Attempts",
    "classify",
    "continue_async",
    "continue_inline",
    "run_async",
    "run_inline",
    "threaded",
    "timeout_of",
]

#: The cancellation handle of a call whose tool injects nothing: nobody can see it, so
#: one shared handle that never fires serves them all.
UNSEEN = Cancellation()


def timeout_of(item: Admitted, env: DispatchEnv) -> float | None:
    """The call's timeout: the tool's own, else the run's."""
    return item.tool.policy.runtime.timeout or env.policy.tool_timeout


def threaded(item: Admitted, env: DispatchEnv) -> bool:
    """Whether a synchronous call runs in a worker thread (it blocks, or has a timeout)."""
    if item.tool.is_async:
        return False
    return item.tool.policy.runtime.blocking or timeout_of(item, env) is not None


class _Retry(Exception):
    """Internal: the attempt raised ``RetryableError`` and retries remain."""


def classify(error: Exception, tool_name: str) -> Outcome:
    """The outcome a tool's exception stands for."""
    if isinstance(error, ModelRetry):
        return Failed("ModelRetry", str(error) or f"Tool `{tool_name}` asks for a corrected call.")
    if isinstance(error, FatalToolError):
        return Fatal(f"Tool `{tool_name}` failed fatally: {error}", _trace(error))
    if isinstance(error, ApprovalRequired):
        return Postponed("approval", dict(error.metadata))
    if isinstance(error, CallDeferred):
        return Postponed("deferred", dict(error.metadata))
    detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return Failed(type(error).__name__, f"Tool `{tool_name}` failed: {detail}", _trace(error))


def _trace(error: BaseException) -> str:
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


@attrs.define
class Attempts:
    """Retry bookkeeping for one call."""

    item: Admitted
    env: DispatchEnv
    emit: Callable[[Event], None]
    #: Indexes of the calls that started; this call's joins it when it starts.
    started_calls: set[int] = attrs.Factory(set)
    attempt: int = 0

    def runtime(self, cancellation: Cancellation, deadline: float | None) -> CallRuntime:
        context = self.env.context
        call_id = self.item.call.id
        return CallRuntime(
            context=context,
            call=self.item.call,
            run_context=RunContext(
                context.run_id,
                context.thread_id,
                context.depth,
                deadline,
                self.env.is_call_approved(call_id),
            ),
            cancellation=cancellation,
            emit=Emit(lambda name, data: self.emit(_custom(call_id, name, data))),
        )

    def wait_or_outcome(self, error: Exception) -> float | Outcome:
        """The wait before retrying after ``error``, or the call's outcome when it will
        not be retried (not a ``RetryableError``, or no retry left)."""
        if isinstance(error, RetryableError):
            delay = self.retry_delay(error)
            if delay is not None:
                return delay
        return classify(error, self.item.tool.name)

    def retry_delay(self, error: RetryableError) -> float | None:
        """The wait before the next attempt, or None when no retry remains."""
        if self.attempt >= self.item.tool.policy.runtime.max_retries:
            return None
        self.attempt += 1
        policy = self.env.policy
        base = min(policy.retry_max_delay, policy.retry_base_delay * 2.0 ** (self.attempt - 1))
        # Jitter spreads the retries of many calls; seeding it with the call and attempt
        # keeps equal inputs giving equal events (ToolRetried.delay included).
        jitter = random.Random(f"{self.item.call.id}:{self.attempt}").random()
        delay = base * (0.5 + jitter / 2)
        self.emit(
            ToolRetried(
                call_id=self.item.call.id,
                tool_name=self.item.tool.name,
                attempt=self.attempt,
                delay=delay,
                error=str(error) or type(error).__name__,
            )
        )
        return delay

    def started(self) -> None:
        item = self.item
        self.started_calls.add(item.index)
        arguments = shown_arguments(item.tool, item.arguments)
        self.emit(ToolStarted(call_id=item.call.id, tool_name=item.tool.name, arguments=arguments))


def _custom(call_id: str, name: str, data: object) -> Event:
    return Custom(call_id=call_id, name=name, data=data)


def run_inline(attempts: Attempts, cancellation: Cancellation) -> Outcome:
    """Run a synchronous call inline, retrying in place (``time.sleep`` between tries)."""
    item = attempts.item
    kwargs = item.arguments
    if item.tool.injections:
        runtime = attempts.runtime(cancellation, None)
        kwargs = bind(dict(kwargs), item.tool.injections, runtime)
    attempts.started()
    return continue_inline(attempts, kwargs, None)


def continue_inline(
    attempts: Attempts, kwargs: dict[str, object], error: Exception | None
) -> Outcome:
    """The inline attempt loop; ``error``: what the first attempt (made elsewhere) raised."""
    item = attempts.item
    fn = item.tool.fn
    assert fn is not None
    while True:
        if error is not None:
            wait = attempts.wait_or_outcome(error)
            if not isinstance(wait, float):
                return wait
            time.sleep(wait)
        try:
            return Ran(wrap_return(fn(**kwargs)))
        except Exception as caught:
            error = caught


async def continue_async(
    attempts: Attempts, kwargs: dict[str, object], error: Exception
) -> Outcome:
    """The retry loop of a call with no timeout, entered with its first attempt's error."""
    item = attempts.item
    fn = item.tool.fn
    assert fn is not None
    while True:
        wait = attempts.wait_or_outcome(error)
        if not isinstance(wait, float):
            return wait
        await anyio.sleep(wait)
        try:
            value = fn(**kwargs)
            if item.tool.is_async:
                value = await value  # type: ignore[misc]
            return Ran(wrap_return(value))
        except Exception as caught:
            error = caught


async def _attempt(item: Admitted, kwargs: dict[str, object], in_thread: bool) -> object:
    """One attempt: await an async tool, or run a sync one in a thread or inline."""
    fn = item.tool.fn
    assert fn is not None
    if item.tool.is_async:
        return await fn(**kwargs)  # type: ignore[misc]
    if in_thread:
        call = functools.partial(fn, **kwargs)
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
    return fn(**kwargs)


async def run_async(
    attempts: Attempts, cancellation: Cancellation, deadline: float | None
) -> Outcome:
    """Run one call under the event loop, with its timeout and retries."""
    item, env = attempts.item, attempts.env
    fn = item.tool.fn
    assert fn is not None
    kwargs = item.arguments
    if item.tool.injections:  # the runtime is built only for a tool that injects
        runtime = attempts.runtime(cancellation, deadline)
        kwargs = bind(dict(kwargs), item.tool.injections, runtime)
    timeout = timeout_of(item, env)
    in_thread = threaded(item, env)
    attempts.started()
    while True:
        try:
            if timeout is None:
                # No cancel scope (~6 us on trio) and, for an async tool, no extra
                # coroutine frame: awaited directly.
                if item.tool.is_async:
                    return Ran(wrap_return(await fn(**kwargs)))  # type: ignore[misc]
                return Ran(wrap_return(await _attempt(item, kwargs, in_thread)))
            with anyio.move_on_after(timeout):
                return Ran(wrap_return(await _attempt(item, kwargs, in_thread)))
            cancellation.cancel()  # an abandoned thread can still see it should stop
            return Failed(
                "TimeoutError", f"Tool `{item.tool.name}` timed out after {timeout:g} seconds."
            )
        except Exception as error:
            wait = attempts.wait_or_outcome(error)
            if not isinstance(wait, float):
                return wait
            await anyio.sleep(wait)
