"""``dispatch`` and ``dispatch_sync``: a batch of tool calls in, a result out.

The pipeline, top to bottom: prepare (registry, callable names, middleware,
event sink) → admit every call (pure) → check injections → execute the
admitted calls (serially or bounded-concurrent; the only stage that differs
between the two entry points) → fold each into its message → assemble the
``DispatchResult`` in call order.

Invariants kept here (see DESIGN.md): every call id is answered exactly once
in call order unless deferred — also when tools raise, time out, or the
batch is cancelled or aborted; nothing that admission refused runs; no tool
runs on arguments that failed its schema.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence

import anyio
import anyio.from_thread
import anyio.lowlevel
import trio

from . import _fastpath
from ._admit import (
    Abort,
    Admitted,
    Resolved,
    admit_batch,
    admit_batch_async,
)
from ._approvals import DeferredToolRequests, DeferredToolResults
from ._artifacts import ArtifactStore
from ._concurrency import execute
from ._effects import EffectLedger
from ._execute import UNSEEN, run_inline, threaded
from ._fold import fold_resolved
from ._handover import promote_async, promote_spread, promote_sync
from ._inject import Cancellation, Context, check_context
from ._middleware import HookFailed
from ._redact import shown_arguments
from ._registry import AnyTool, Registry
from ._result import DispatchAborted, DispatchResult
from ._run import (
    EventHandler,
    Options,
    Run,
    Sink,
    abort_batch,
    assemble,
    middleware_stack,
    prepare,
)
from ._wire import ToolCall, ToolMessage
from .events import ToolStarted
from .policies import RunPolicy

__all__ = ["DeferredToolHandler", "EventHandler", "dispatch", "dispatch_sync"]

#: Resolves a batch's deferred calls inline (sync, or async under ``dispatch``).
DeferredToolHandler = (
    Callable[[DeferredToolRequests], DeferredToolResults]
    | Callable[[DeferredToolRequests], Awaitable[DeferredToolResults]]
)


def _admit_sync(
    run: Run, cancellation: Cancellation | None, expired: Callable[[], bool]
) -> Abort | None:
    """Admit every call without an event loop; returns the first ``Fail`` verdict, if any."""
    try:
        run.verdicts = admit_batch(
            run.calls,
            run.env,
            run.stack,
            run.sink.emit,
            cancelled=_cancelled(cancellation),
            expired=expired,
            resume=run.resume,
        )
    except HookFailed as failed:
        raise abort_batch(run, str(failed)) from failed.error
    return _admitted(run)


async def _admit_async(
    run: Run, cancellation: Cancellation | None, expired: Callable[[], bool]
) -> Abort | None:
    """Admit every call, awaiting async hooks; returns the first ``Fail`` verdict, if any."""
    try:
        run.verdicts = await admit_batch_async(
            run.calls,
            run.env,
            run.stack,
            run.sink.emit,
            cancelled=_cancelled(cancellation),
            expired=expired,
            resume=run.resume,
        )
    except HookFailed as failed:
        raise abort_batch(run, str(failed)) from failed.error
    await run.sink.flush()
    return _admitted(run)


def _aborted(run: Run, error: Exception) -> DispatchAborted:
    """The abort for an error raised while settling calls, saying where it came from.

    Concurrent execution raises what its tasks raised inside an exception group: the
    reason names the first of them (:func:`_cause` says what to raise it from).
    """
    leaves = _leaves(error)
    first = leaves[0]
    if isinstance(first, HookFailed):
        reason = str(first)
    else:  # not a tool (their errors are answers) and not a hook: the host's own callbacks
        where = "an on_event handler, the effect ledger or the artifact store"
        reason = f"{first!r} was raised outside the tools, by {where}"
    if len(leaves) > 1:
        reason += f" (and {len(leaves) - 1} more errors)"
    return abort_batch(run, reason)


def _cause(error: Exception) -> BaseException:
    """What an abort by ``error`` is raised from: the one failure inside, or the group."""
    leaves = _leaves(error)
    if len(leaves) > 1:
        return error
    return leaves[0].error if isinstance(leaves[0], HookFailed) else leaves[0]


def _leaves(error: BaseException) -> list[BaseException]:
    """The errors inside an exception group (nested ones included), or ``[error]``."""
    inner = getattr(error, "exceptions", None)  # BaseExceptionGroup, or its 3.10 backport
    if not isinstance(inner, tuple) or not inner:
        return [error]
    return [leaf for member in inner for leaf in _leaves(member)]


def _cancelled(cancellation: Cancellation | None) -> Callable[[], bool]:
    return (lambda: False) if cancellation is None else (lambda: cancellation.cancelled)


def _admitted(run: Run) -> Abort | None:
    """After admission: the abort verdict, else answer resolved calls and check injections."""
    if all(type(v) is Admitted for v in run.verdicts):  # the common case: one pass
        run._admitted = run.verdicts  # type: ignore[assignment]
    else:
        abort = next((v for v in run.verdicts if isinstance(v, Abort)), None)
        if abort is not None:
            return abort
        for verdict in run.verdicts:
            if isinstance(verdict, Resolved):
                _answer_resolved(run, verdict)
    injecting = [item.tool for item in run.admitted() if item.tool.injections]
    if injecting:
        check_context(injecting, run.env.context)
    if run.ledger is not None:
        for item in run.admitted():
            arguments = shown_arguments(item.tool, item.arguments)
            run.ledger.started(run.env.context.run_id, item.call.id, item.tool.name, arguments)
    return None


def _answer_resolved(run: Run, verdict: Resolved) -> None:
    """A denied or host-answered call: started, after-middleware, completed — never executed."""
    call = verdict.call
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    run.sink.emit(ToolStarted(call_id=call.id, tool_name=call.name, arguments=arguments))
    try:
        folded = fold_resolved(verdict, run.env, run.stack, run.store)
    except Exception as error:
        raise _aborted(run, error) from _cause(error)
    run.resolved[verdict.index] = folded
    for event in folded.events:
        run.sink.emit(event)


async def dispatch(
    calls: Iterable[ToolCall],
    tools: Registry | Iterable[AnyTool],
    *,
    policy: RunPolicy = _fastpath.DEFAULT_POLICY,
    middleware: Iterable[object] = (),
    context: Context | None = None,
    advertised: Collection[str] | None = None,
    approvals: DeferredToolResults | None = None,
    ledger: EffectLedger | None = None,
    on_event: EventHandler | None = None,
    artifacts: ArtifactStore | None = None,
    cancellation: Cancellation | None = None,
    on_deferred: DeferredToolHandler | None = None,
) -> DispatchResult:
    """Admit, run and answer a batch of tool calls.

    Args:
        calls: The calls the model made, in order.
        tools: A ``Registry`` or the tools themselves.
        policy: How calls are admitted and run.
        middleware: Objects with ``before_tool`` / ``after_tool`` hooks.
        context: What injection draws from (a fresh one when omitted).
        advertised: The tool names offered to the model this turn; a call to
            any other tool is treated as unknown (fail closed).
        approvals: The host's decisions, to resume deferred calls (pass the
            pending calls as ``calls``; see ``DeferredToolResults``).
        ledger: An effect ledger told when each call starts and settles.
        on_event: Receives each event as it happens (sync or async callable).
        artifacts: Where tools' artifacts are persisted.
        cancellation: Cancel the batch with ``cancellation.cancel()``.
        on_deferred: Resolves the batch's deferred calls inline, once: it gets
            the ``DeferredToolRequests`` and returns ``DeferredToolResults``;
            what it leaves undecided stays deferred.

    Returns:
        One message per call in call order (deferred calls excepted), the
        events, deferred calls, follow-ups, metadata and executed call ids.

    Raises:
        DispatchAborted: A ``Fail`` policy, ``FatalToolError`` or a failing
            middleware aborted the batch; ``.result`` answers every call.
        ToolDefinitionError: An admitted tool's injection cannot be satisfied
            by ``context`` (raised before any tool runs).
    """
    batch = calls if type(calls) is tuple else tuple(calls)  # read an iterator once
    if type(tools) is Registry and _fastpath.eligible(
        policy, middleware, on_event, approvals, ledger, artifacts, cancellation, advertised
    ):
        if policy.max_concurrency == 1 or len(batch) == 1:
            fast = await _fastpath.run_async(batch, tools, policy, context, promote_async)
        elif policy.max_concurrency >= len(batch):
            fast = await _fastpath.run_concurrent(batch, tools, policy, context, promote_spread)
        else:
            fast = None
        if fast is not None:
            return fast
    sink = Sink(on_event)
    options = Options(policy, middleware_stack(middleware), context, advertised, ledger, artifacts)
    result = await _dispatch_async(batch, tools, options, approvals, sink, cancellation)
    if result.deferred is None or on_deferred is None:
        return result
    decided = on_deferred(result.deferred)
    if inspect.isawaitable(decided):
        decided = await decided
    pending = result.deferred.all
    resumed = await _dispatch_async(pending, tools, options, decided, sink, cancellation)
    return _merge(batch, result, resumed, sink)


async def _dispatch_async(
    calls: Iterable[ToolCall],
    tools: Registry | Iterable[AnyTool],
    o: Options,
    approvals: DeferredToolResults | None,
    sink: Sink,
    cancellation: Cancellation | None,
) -> DispatchResult:
    run = prepare(calls, tools, o, approvals, sink)
    start = anyio.current_time()
    deadline = None if o.policy.deadline is None else start + o.policy.deadline
    abort = await _admit_async(
        run, cancellation, lambda: deadline is not None and anyio.current_time() >= deadline
    )
    if abort is not None:
        raise abort_batch(run, abort.reason)
    return await _finish_async(run, cancellation, deadline)


def _merge(
    calls: Sequence[ToolCall], first: DispatchResult, resumed: DispatchResult, sink: Sink
) -> DispatchResult:
    """The first pass and its inline resolution as one result, in call order."""
    answers: dict[str, list[ToolMessage]] = {}
    for message in (*first.messages, *resumed.messages):
        answers.setdefault(message.tool_call_id, []).append(message)
    ordered = [answers[c.id].pop(0) for c in calls if answers.get(c.id)]
    answered = {m.tool_call_id for m in resumed.messages}
    still = first.deferred
    assert still is not None
    remaining_calls = tuple(c for c in still.calls if c.id not in answered)
    remaining_approvals = tuple(c for c in still.approvals if c.id not in answered)
    again = resumed.deferred or DeferredToolRequests()
    deferred = DeferredToolRequests(
        remaining_calls + tuple(c for c in again.calls if c not in remaining_calls),
        remaining_approvals + tuple(c for c in again.approvals if c not in remaining_approvals),
        {k: v for k, v in {**still.metadata, **again.metadata}.items() if k not in answered},
    )
    executed = set(first.executed) | set(resumed.executed)
    return DispatchResult(
        tuple(ordered),
        tuple(sink.events),
        deferred if deferred.all else None,
        first.follow_ups + resumed.follow_ups,
        {**first.metadata, **resumed.metadata},
        tuple(c.id for c in calls if c.id in executed),
    )


async def _finish_async(
    run: Run, cancellation: Cancellation | None, deadline: float | None
) -> DispatchResult:
    try:
        why = await execute(run, cancellation, deadline)
    except Exception as error:
        raise _aborted(run, error) from _cause(error)
    await run.sink.flush()
    if run.fatal is not None:
        raise abort_batch(run, run.fatal)
    return assemble(run, why=why)


# --- sync execution ------------------------------------------------------------


def _needs_loop(run: Run) -> bool:
    return run.sink.is_async or any(
        item.tool.is_async or threaded(item, run.env) for item in run.admitted()
    )


def _execute_inline(run: Run, cancellation: Cancellation | None, deadline: float | None) -> str:
    """Run every admitted (synchronous) call inline, in order; returns why any stopped."""
    for item in run.admitted():
        if cancellation is not None and cancellation.cancelled:
            return "cancelled"
        if deadline is not None and time.monotonic() >= deadline:
            return "past its deadline"
        # Only an injecting tool can see its handle: the others share one that never fires.
        handle = Cancellation() if item.tool.injections else UNSEEN
        forget = (
            cancellation.on_cancel(handle.cancel)
            if cancellation is not None and item.tool.injections
            else None
        )
        try:
            outcome = run_inline(run.attempts(item), handle)
            run.finish(item, outcome)
        except Exception as error:
            raise _aborted(run, error) from _cause(error)
        finally:
            if forget is not None:
                forget()  # the caller's handle must not keep this call's handle alive
        if run.fatal is not None:
            raise abort_batch(run, run.fatal)  # outside the try: it is no hook's failure
    return "cancelled"


def dispatch_sync(
    calls: Iterable[ToolCall],
    tools: Registry | Iterable[AnyTool],
    *,
    policy: RunPolicy = _fastpath.DEFAULT_POLICY,
    middleware: Iterable[object] = (),
    context: Context | None = None,
    advertised: Collection[str] | None = None,
    approvals: DeferredToolResults | None = None,
    ledger: EffectLedger | None = None,
    on_event: EventHandler | None = None,
    artifacts: ArtifactStore | None = None,
    cancellation: Cancellation | None = None,
    on_deferred: DeferredToolHandler | None = None,
) -> DispatchResult:
    """:func:`dispatch` for synchronous callers; same arguments, same result.

    When every admitted tool is synchronous, none needs a worker thread (no
    ``blocking`` policy, no timeout) and ``on_event`` is not async, the batch
    runs inline with no event loop at all, in call order (a deadline or a
    cancellation then takes effect between calls). Otherwise it starts trio
    for the execution stage; admission has already happened either way.
    ``before_tool`` hooks and ``on_deferred`` must be synchronous here. Do
    not call it from inside a running event loop: await :func:`dispatch`.
    """
    batch = calls if type(calls) is tuple else tuple(calls)  # read an iterator once
    if type(tools) is Registry and _fastpath.eligible(
        policy, middleware, on_event, approvals, ledger, artifacts, cancellation, advertised
    ):
        fast = _fastpath.run_sync(batch, tools, policy, context, promote_sync)
        if fast is not None:
            return fast
    sink = Sink(on_event)
    options = Options(policy, middleware_stack(middleware), context, advertised, ledger, artifacts)
    result = _dispatch_sync(batch, tools, options, approvals, sink, cancellation)
    if result.deferred is None or on_deferred is None:
        return result
    decided = on_deferred(result.deferred)
    if inspect.isawaitable(decided):
        if inspect.iscoroutine(decided):
            decided.close()
        raise TypeError("on_deferred returned an awaitable; use `await dispatch(...)` for it")
    resumed = _dispatch_sync(result.deferred.all, tools, options, decided, sink, cancellation)
    return _merge(batch, result, resumed, sink)


def _dispatch_sync(
    calls: Iterable[ToolCall],
    tools: Registry | Iterable[AnyTool],
    o: Options,
    approvals: DeferredToolResults | None,
    sink: Sink,
    cancellation: Cancellation | None,
) -> DispatchResult:
    run = prepare(calls, tools, o, approvals, sink)
    start = time.monotonic()
    deadline = None if o.policy.deadline is None else start + o.policy.deadline
    abort = _admit_sync(
        run, cancellation, lambda: deadline is not None and time.monotonic() >= deadline
    )
    if abort is not None:
        raise abort_batch(run, abort.reason)
    if not _needs_loop(run):
        return assemble(run, why=_execute_inline(run, cancellation, deadline))
    remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
    return trio.run(functools.partial(_finish_in_trio, run, cancellation, remaining))


async def _finish_in_trio(
    run: Run, cancellation: Cancellation | None, remaining: float | None
) -> DispatchResult:
    await run.sink.flush()
    deadline = None if remaining is None else anyio.current_time() + remaining
    return await _finish_async(run, cancellation, deadline)
