"""``dispatch`` and ``dispatch_sync``: a batch of tool calls in, a result out.

One engine serves both. The stages, top to bottom: the run (:class:`Run`: the registry, the
composed middleware, the run's state — nothing the arguments do not ask for) →
admit every call (pure; :mod:`.admit`) → begin (answer resolved calls, check
injections, write the ledger's started rows) → execute the admitted calls → fold
each into its message as it finishes → the ``DispatchResult`` in call order.

Every stage is cheap when the batch does not ask for its features, by a test on
what the run already knows — no second copy of any stage: admission opens a call
(repeated ids, discovery, resume, limits) only when the run has one of those;
begin runs only when the run's ``preflight`` says something needs it (a call was not
admitted, a tool needs more than an inline call, a resume, a ledger, an async
event handler, a run-wide timeout); the result is read straight from the answers when
every call was admitted and answered.

Only execution differs between the two entry points. ``dispatch_sync`` runs
synchronous tools inline, with no event loop at all; a batch that holds an async
tool or an async ``on_event`` handler (or several threaded calls allowed to run at
once) runs its execution stage on this thread's long-lived asyncio loop
(``_runtime.loop.loop_holder``), never a new loop per call. ``dispatch`` runs it under
the caller's event loop, trio or asyncio (``_engine.execute.loop``, imported on first use).

Invariants kept here (docs/concepts/invariants.md): every call id is answered exactly once in
call order unless deferred — also when tools raise, time out, or the batch is
cancelled or aborted, and across the inline ``on_deferred`` resolution; nothing that
admission refused runs; no tool runs on arguments that failed its schema.
"""

from __future__ import annotations

import contextvars
import inspect
import time
from collections.abc import Awaitable, Callable, Collection, Iterable

import msgspec

from tinytools._artifacts import ArtifactStore
from tinytools._declare.registry import AnyTool, Registry
from tinytools._declare.spec import is_async_function
from tinytools._inject import Cancellation, Context, check_context, check_context_type
from tinytools._middleware import HookFailed
from tinytools._runtime.detect import refuse_nested_loop
from tinytools._runtime.loop import Backend, check_backend, run_on
from tinytools._wire import ToolCall
from tinytools.events import Custom, ToolWithheld
from tinytools.policies import RunPolicy
from tinytools.toolsets._base import Toolset

from .admit.admission import (
    Abort,
    Admitted,
    Resolved,
    admit_batch,
    admit_batch_async,
    past_deadline,
)
from .effects import EffectLedger, record_started, refusal, release_unstarted
from .execute.inline import execute_inline
from .inputs import DEFAULT_POLICY, DispatchInputs, EventHandler
from .result import DispatchAborted, DispatchResult
from .resume import DeferredToolRequests, DeferredToolResults
from .state import HostFailed, Run, new_run
from .stops import Stop

__all__ = ["DEFAULT_POLICY", "DeferredToolHandler", "EventHandler", "dispatch", "dispatch_sync"]

#: Resolves a batch's deferred calls inline (sync, or async under ``dispatch``).
DeferredToolHandler = (
    Callable[[DeferredToolRequests], DeferredToolResults]
    | Callable[[DeferredToolRequests], Awaitable[DeferredToolResults]]
)

_UNMATCHED = {"reason": "no call of the batch has this decision's id; it was ignored"}


# --- admit and begin -------------------------------------------------------------------


def _expiry(deadline: float | None, clock: Callable[[], float]) -> Callable[[], bool] | None:
    if deadline is None:
        return None
    return lambda: clock() >= deadline


def _cancelled(run: Run) -> Callable[[], bool] | None:
    cancellation = run.cancellation
    if cancellation is None:
        return None
    if not isinstance(cancellation, Cancellation):  # read before any call starts
        raise TypeError(
            "cancellation must be a Cancellation (make one with `Cancellation()` and call "
            f"its `.cancel()`), got {type(cancellation).__name__}"
        )
    return lambda: cancellation.cancelled


def _check_on_deferred(on_deferred: object, sync: bool) -> None:
    """Refuse an ``on_deferred`` dispatch cannot call (``dispatch_sync``: nor await).

    Raises:
        TypeError: Saying what to pass, before anything runs.
    """
    if not callable(on_deferred):
        raise TypeError(
            "on_deferred must be a function of the deferred calls returning the host's "
            "decisions, such as `lambda pending: pending.approve_all()`; got "
            f"{type(on_deferred).__name__}"
        )
    if sync and is_async_function(on_deferred):
        raise TypeError(
            "on_deferred is an async function, which dispatch_sync cannot await: use "
            "`await dispatch(...)`, or a synchronous handler"
        )


def _new_run(
    inputs: DispatchInputs, caller: contextvars.Context, on_deferred: object, *, sync: bool
) -> Run:
    """The run of one ``dispatch`` or ``dispatch_sync``: ``on_deferred`` checked before
    anything runs, the caller's context kept for the tools, the calls' positions kept where
    a second pass will be merged into the first, the remote tools left out reported."""
    if on_deferred is not None:
        _check_on_deferred(on_deferred, sync)
    run = new_run(inputs)
    run.caller_context = caller
    if on_deferred is not None:
        run.keep_positions()  # the two passes are merged by position
    if run.env.tools._withheld:
        _withheld(run)
    return run


def _withheld(run: Run) -> None:
    """Report the remote tools the toolset left out because their names were taken (once
    per dispatch, before any call's events)."""
    for left in run.env.tools._withheld:
        run.emit(ToolWithheld(tool_name=left.name, reason=left.reason, adaptor=left.adaptor))


def _abort_for(run: Run, error: Exception) -> DispatchAborted:
    """The abort for a hook or host callback that raised, naming it; raise it from the
    original error."""
    aborted = run.abort(str(error))
    aborted.__cause__ = error.error if isinstance(error, (HookFailed, HostFailed)) else error
    return aborted


def _begin(run: Run, answer: bool = True) -> bool:
    """After admission: abort on a ``Fail`` verdict; answer resolved calls; check
    injections; write the ledger's started rows — all before any tool runs. Returns
    whether ``dispatch_sync`` needs an event loop for the batch's execution (with
    ``answer`` false, under ``await dispatch``, that is not asked: no admitted call is
    looked at unless one injects).

    Raises:
        DispatchAborted: A ``Fail`` policy fired, or a hook or host callback raised.
        ToolDefinitionError: An admitted tool's injection cannot be satisfied.
    """
    verdicts = run.verdicts
    if run.opens and run.resume is not None:  # a decision for another call's id re-defers it
        present = {call.id for call in run.calls}
        for call_id in run.resume.unmatched(run.calls):
            if call_id not in present:
                run.emit(Custom(call_id=call_id, name="unmatched_decision", data=_UNMATCHED))
    run.admitted = admitted = [v for v in verdicts if type(v) is Admitted]
    if len(admitted) != len(verdicts):
        for verdict in verdicts:  # the host's answers stand, even in a batch that aborts
            if type(verdict) is Resolved:
                run.resolved(verdict)
        for verdict in verdicts:
            if type(verdict) is Abort:
                raise run.abort(verdict.reason)
    if not run.preflight:  # nothing admitted needs more than an inline call
        return False
    run_timeout = run.env.policy.tool_timeout
    needs_loop = run.sink is not None and run.sink.is_async
    injecting = None
    threaded = 0
    for item in admitted if answer or run.injecting else ():
        plan = item.tool._plan
        if plan.plain and run_timeout is None:
            continue
        if plan.is_async:
            needs_loop = True
        elif plan.threaded(plan.timeout_under(run_timeout)):
            threaded += 1
        if plan.injections:
            injecting = [*(injecting or ()), item.tool]
    if injecting:
        check_context(injecting, run.env.context)
    needs_loop = needs_loop or (threaded > 1 and run.env.policy.max_concurrency > 1)
    if needs_loop and answer:  # dispatch_sync: refused inside a running loop, now
        refuse_nested_loop()  # (recorded as started, its calls would never run again)
    if run.ledger is not None and admitted:
        _started(run, admitted)
    if run.halted and run.failure is not None:  # (no tool has run: it is not a fatal call)
        raise _abort_for(run, run.failure)
    return needs_loop


def _started(run: Run, admitted: list[Admitted]) -> None:
    """The ledger's started rows (one transaction where the ledger can), before any tool
    of the batch runs; a call already started elsewhere is answered and does not run."""
    assert run.ledger is not None
    context = run.env.context
    check_context_type(context)  # (the host's argument, not the ledger's failure)
    try:
        refused = record_started(run.ledger, context.run_id, admitted)
    except Exception as error:
        run.fail(HostFailed("the effect ledger's started()", error))
        return
    run.recorded = True
    for item in refused:
        event, answer = refusal(item)
        run.emit(event)
        run.verdicts[item.index] = answer
        admitted.remove(item)


def _left(run: Run) -> None:
    """The host's exception (its task or scope cancelled, ``KeyboardInterrupt``) leaves the
    batch's execution: the ledger's rows of the calls that never started are undone
    (:func:`release_unstarted`); those that started stay unresolved."""
    if run.ledger is None or not run.recorded:
        return
    answers, extras = run.answers, run.extras
    postponed = extras[2] if extras is not None else {}
    unstarted = [
        item.call.id
        for item in run.admitted
        if item.index not in answers and item.index not in postponed
    ]
    if unstarted:
        release_unstarted(run.ledger, run.env.context.run_id, unstarted)


def _finished(run: Run, stop: Stop | None) -> DispatchResult:
    """The result of a halted run: the abort a fatal call or a failed hook/callback calls
    for (a run that did not halt is answered by ``run.result``)."""
    failure = run.failure
    if failure is not None:
        raise _abort_for(run, failure)
    if run.fatal is not None:
        raise run.abort(run.fatal)
    return run.result(stop)


# --- dispatch_sync ---------------------------------------------------------------------


async def _on_loop(run: Run, remaining: float | None) -> Stop | None:
    from .execute.loop import current_time, execute

    if run.sink is not None:
        await run.sink.flush()
    deadline = None if remaining is None else current_time() + remaining
    stop = await execute(run, deadline)
    if run.sink is not None:
        await run.sink.flush()
    return stop


def _pass_sync(
    run: Run, deadline: float | None, used: int, backend: Backend = "asyncio"
) -> DispatchResult:
    if run.cancellation is not None or deadline is not None or used:
        run.admission(_cancelled(run), _expiry(deadline, time.monotonic), used)
    try:
        admit_batch(run.calls, run)
    except HookFailed as failed:
        raise _abort_for(run, failed) from failed.error
    stop = None
    if run.preflight and _begin(run):
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            stop = run_on(backend, _on_loop, run, remaining)
        except BaseException:
            _left(run)
            raise
    else:  # every admitted call is synchronous: run on this thread, in order
        try:
            stop = execute_inline(run, deadline)
        except BaseException:
            _left(run)
            raise
    return run.result(stop) if not run.halted else _finished(run, stop)


def dispatch_sync(
    calls: Iterable[ToolCall],
    tools: Registry | Toolset | Iterable[AnyTool],
    *,
    policy: RunPolicy = DEFAULT_POLICY,
    middleware: Iterable[object] = (),
    context: Context | None = None,
    advertised: Collection[str] | None = None,
    approvals: DeferredToolResults | None = None,
    ledger: EffectLedger | None = None,
    on_event: EventHandler | None = None,
    artifacts: ArtifactStore | None = None,
    cancellation: Cancellation | None = None,
    on_deferred: DeferredToolHandler | None = None,
    backend: Backend = "asyncio",
) -> DispatchResult:
    """:func:`dispatch` for synchronous callers; same arguments, same result.

    Synchronous tools run inline on this thread, in call order, with no event loop
    (a deadline or a cancellation then takes effect between calls, and while a
    threaded call waits). A batch that holds an async tool or an async ``on_event``
    handler (or several blocking/timed calls with ``max_concurrency`` above 1) runs
    its execution stage on this thread's own asyncio event loop, made on first use
    and kept for later calls — so by default async tools run under **asyncio** here;
    ``backend="trio"`` runs that stage under a fresh ``trio.run`` instead, for tools
    written for trio. A tool that needs the other event loop (it raised "no running
    event loop" or "must be called from async context") aborts the batch with
    ``DispatchAborted`` naming the backend to pass: the model is never told. A sync tool
    with a timeout, or marked ``blocking``, runs on a long-lived worker thread.
    ``before_tool`` hooks and ``on_deferred`` must be synchronous here: an ``async def``
    ``on_deferred`` is refused with ``TypeError`` before anything runs, and a handler
    that returns an awaitable anyway (or anything but ``DeferredToolResults``) aborts
    with ``DispatchAborted`` carrying the first pass's answers, as one that raises does.

    It is safe to call from several threads at once, all sharing one registry or
    toolset, middleware list, ledger, artifact store, ``on_event`` handler and
    ``Cancellation``: each thread's batch runs on that thread's own event loop, and
    timed or blocking tools share one bounded pool of worker threads. The host's own
    callbacks must then be thread-safe themselves: a synchronous ``on_event`` handler
    is called from the thread that emits the event (a tool's worker thread included).
    A tool, a middleware hook, an ``on_event`` handler or ``on_deferred`` may call it
    again (nested). Inside a running event loop (asyncio or trio), a batch that needs
    no loop runs inline and blocks that loop; one that needs a loop raises
    ``RuntimeError`` before any tool of it runs and before the ledger records it (await
    :func:`dispatch` there). A tool that does so from its own batch's loop aborts that
    batch with ``DispatchAborted`` (a tool declared ``blocking=True`` runs on a worker
    thread, where it may). A forked child makes its own loop and worker threads.
    """
    caller = contextvars.copy_context()  # (first: what the caller's tools run in)
    if backend != "asyncio":
        check_backend(backend)
    run = _new_run(
        DispatchInputs(
            calls,
            tools,
            policy=policy,
            middleware=middleware,
            context=context,
            advertised=advertised,
            approvals=approvals,
            ledger=ledger,
            on_event=on_event,
            artifacts=artifacts,
            cancellation=cancellation,
        ),
        caller,
        on_deferred,
        sync=True,
    )
    deadline = None if policy.deadline is None else time.monotonic() + policy.deadline
    result = _pass_sync(run, deadline, 0, backend)
    if result.deferred is None or on_deferred is None:
        return result
    decided = _decided(on_deferred, result)
    if inspect.isawaitable(decided):
        if inspect.iscoroutine(decided):
            decided.close()
        error = TypeError(
            "it returned an awaitable, which dispatch_sync cannot wait for; use "
            "`await dispatch(...)` or make the handler synchronous"
        )
        raise _handler_failed(on_deferred, result, error, raised=False) from error
    again = _resumed(run, result, _checked_decisions(on_deferred, decided, result))
    try:
        resumed = _pass_sync(again, deadline, run.used, backend)
    except DispatchAborted as aborted:
        raise _merged_abort(run, result, again, aborted) from aborted.__cause__
    return _merge(run, result, again, resumed)


# --- dispatch --------------------------------------------------------------------------


async def _pass_async(run: Run, deadline: float | None, used: int) -> DispatchResult:
    from .execute.loop import current_time, execute

    if run.cancellation is not None or deadline is not None or used:
        run.admission(_cancelled(run), _expiry(deadline, current_time), used)
    try:
        if deadline is None:
            await admit_batch_async(run.calls, run)
        else:  # an awaited hook (a human's approval) waits no longer than the batch may take
            import anyio

            with anyio.move_on_at(deadline):
                await admit_batch_async(run.calls, run)
            past_deadline(run.calls, run)
    except HookFailed as failed:
        raise _abort_for(run, failed) from failed.error
    if run.sink is not None:
        await run.sink.flush()
    if run.preflight:  # else every verdict is Admitted: nothing to answer or check first
        _begin(run, False)
    try:
        stop = await execute(run, deadline)
    except BaseException:
        _left(run)
        raise
    if run.sink is not None:
        await run.sink.flush()
    return run.result(stop) if not run.halted else _finished(run, stop)


async def dispatch(
    calls: Iterable[ToolCall],
    tools: Registry | Toolset | Iterable[AnyTool],
    *,
    policy: RunPolicy = DEFAULT_POLICY,
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

    Each tool body runs in its own copy of the ``contextvars`` context current when
    ``dispatch`` is called (read in the caller's task, before anything else), whichever
    thread or task runs it: a span or request id the caller set is current inside the
    tool, and what the tool sets stays in its call.

    Args:
        calls: The calls the model made, in order.
        tools: A ``Registry``, a toolset (``tinytools.toolsets``; resolved once
            with ``context``, and cached while the composition and the context
            are unchanged) or the tools themselves (a tuple or list is made into a
            registry once and remembered; a list is checked on each dispatch at the
            positions of the called tools, so after replacing an uncalled tool in place
            (``tools[i] = other``) pass a new list or a ``Registry``).
        policy: How calls are admitted and run.
        middleware: Objects with ``before_tool``, ``after_tool``, ``wrap_tool`` or
            ``awrap_tool`` hooks (composed once per sequence of the same objects;
            docs/concepts/pipeline.md says where each runs).
        context: What injection draws from (a fresh one when omitted).
        advertised: The tool names offered to the model this turn; a call to
            any other tool is treated as unknown (fail closed).
        approvals: The host's decisions, to resume deferred calls (pass the
            pending calls as ``calls``; see ``DeferredToolResults``). A decision
            for an id no call of the batch has is ignored and reported as a
            ``Custom`` event named ``"unmatched_decision"`` under that id; a
            decision made for another call under a batch call's id leaves that
            call deferred again, with the reason in its metadata.
        ledger: An effect ledger told when each call starts and settles. Its rows
            are keyed by ``context.run_id``: give every dispatch of a run the same
            ``Context(run_id=...)`` (without a context each dispatch is a run of its
            own, and a second dispatch of the same calls runs them again).
        on_event: Receives each event as it happens (sync or async callable), a
            tool's ``Emit`` events while the tool runs: a sync handler at once, on
            the thread that emits (a threaded tool's worker thread included); an
            async one on the event loop, at an async tool's next ``await`` or at once
            from a worker thread (an inline sync tool's events, as it ends). In order,
            each once, none after dispatch returns. If it raises, the batch is
            aborted (``DispatchAborted``, every call answered) at the next stage
            boundary; so it is when a handler that is not ``async def`` returns an
            awaitable (``lambda e: queue.put(e)``), which nothing would await.
        artifacts: Where tools' artifacts are persisted: an object with a synchronous
            ``put(run_id, call_id, artifact)`` returning an ``ArtifactRef`` (one
            without is refused with ``TypeError`` before any tool runs).
        cancellation: Cancel the batch with ``cancellation.cancel()``, from any
            thread.
        on_deferred: Resolves the batch's deferred calls inline, once: it gets
            the ``DeferredToolRequests`` and returns ``DeferredToolResults``;
            what it leaves undecided stays deferred. The resumed calls share the
            batch's ``max_tool_calls`` budget and deadline; an async handler still
            deciding at the deadline is cancelled and decides nothing (every
            deferred call stays deferred). A handler that raises
            or returns anything else aborts the batch (``DispatchAborted``, with
            the first pass's answers).

    Returns:
        One message per call in call order (deferred calls excepted), the
        events, deferred calls, follow-ups, metadata and executed call ids.

    Raises:
        DispatchAborted: A ``Fail`` policy, ``FatalToolError``, a failing
            middleware or host callback aborted the batch; ``.result`` answers
            every call.
        ToolDefinitionError: An admitted tool's injection cannot be satisfied
            by ``context`` (raised before any tool runs).
        TypeError: An argument of the wrong kind (see each; a call whose id or name
            is not a ``str`` included), before any tool runs.
    """
    caller = contextvars.copy_context()  # (first: what the caller's tools run in)
    from .execute.loop import current_time

    run = _new_run(
        DispatchInputs(
            calls,
            tools,
            policy=policy,
            middleware=middleware,
            context=context,
            advertised=advertised,
            approvals=approvals,
            ledger=ledger,
            on_event=on_event,
            artifacts=artifacts,
            cancellation=cancellation,
        ),
        caller,
        on_deferred,
        sync=False,
    )
    deadline = None if policy.deadline is None else current_time() + policy.deadline
    result = await _pass_async(run, deadline, 0)
    if result.deferred is None or on_deferred is None:
        return result
    decided = _decided(on_deferred, result)
    if inspect.isawaitable(decided):
        try:
            if deadline is None:
                decided = await decided
            else:  # a handler still deciding at the deadline decides nothing
                import anyio

                with anyio.move_on_at(deadline) as waited:
                    decided = await decided
                if waited.cancelled_caught:
                    return result
        except Exception as error:
            raise _handler_failed(on_deferred, result, error) from error
    again = _resumed(run, result, _checked_decisions(on_deferred, decided, result))
    try:
        resumed = await _pass_async(again, deadline, run.used)
    except DispatchAborted as aborted:
        raise _merged_abort(run, result, again, aborted) from aborted.__cause__
    return _merge(run, result, again, resumed)


# --- on_deferred: the two passes as one result ------------------------------------------


def _decided(on_deferred: DeferredToolHandler, first: DispatchResult) -> object:
    """What ``on_deferred`` decides (or the awaitable of it); a handler that raises aborts
    the batch, the first pass's answers kept."""
    assert first.deferred is not None
    try:
        return on_deferred(first.deferred)
    except Exception as error:
        raise _handler_failed(on_deferred, first, error) from error


def _handler_failed(
    on_deferred: object, first: DispatchResult, error: Exception, *, raised: bool = True
) -> DispatchAborted:
    """The abort for an ``on_deferred`` handler that raised ``error`` (or, ``raised``
    False, answered so that ``error`` says what is wrong): the first pass's tools have
    run, so its result (every call answered) goes with the abort."""
    name = getattr(on_deferred, "__name__", None) or repr(on_deferred)
    if not raised:
        return DispatchAborted(f"the on_deferred handler {name} failed: {error}", first)
    return DispatchAborted(f"the on_deferred handler {name} raised {error!r}", first)


def _checked_decisions(
    on_deferred: object, decided: object, first: DispatchResult
) -> DeferredToolResults:
    """``decided`` when it is the host's decisions.

    Raises:
        DispatchAborted: The handler returned something else (the abort carries the
            first pass's result; its cause is a ``TypeError`` saying what to return).
    """
    if not isinstance(decided, DeferredToolResults):
        error = TypeError(
            f"it returned {type(decided).__name__}; return the host's decisions as "
            "DeferredToolResults, for example `pending.approve_all()` or "
            "`pending.deny(call_id, reason)`"
        )
        raise _handler_failed(on_deferred, first, error, raised=False) from error
    return decided


def _resumed(run: Run, first: DispatchResult, decided: DeferredToolResults) -> Run:
    """The run that resumes ``first``'s deferred calls with the inline decisions: every
    keyword as the first pass had it, but the registry, composed middleware and context
    (so the same run id) as that pass resolved them."""
    assert first.deferred is not None
    again = new_run(
        msgspec.structs.replace(
            run.inputs,
            calls=first.deferred.all,
            tools=run.env.tools,
            middleware=run.stack,
            context=run.env.context,
            approvals=decided,
        )
    )
    again.caller_context = run.caller_context
    again.keep_positions()
    return again


def _merged_abort(
    run: Run, first: DispatchResult, again: Run, aborted: DispatchAborted
) -> DispatchAborted:
    """An abort of the resumed pass, its result holding the first pass's answers too."""
    return DispatchAborted(aborted.reason, _merge(run, first, again, aborted.result))


def _merge(run: Run, first: DispatchResult, again: Run, resumed: DispatchResult) -> DispatchResult:
    """The first pass (``run``) and its inline resolution (``again``, whose calls are the
    first pass's deferred ones) as one result, in call order.

    Merged by position, not by id: a batch may repeat an id (a call answered as a
    repeat), and only positions tell which call each message answers.
    """
    calls = run.calls
    one, two = run.positioned(), again.positioned()
    assert len(one.answered) == len(first.messages)
    assert len(two.answered) == len(resumed.messages)
    origin = one.deferred  # the resumed pass's call j is the batch's call origin[j]
    slots = dict(zip(one.answered, first.messages, strict=True))
    slots.update(zip([origin[j] for j in two.answered], resumed.messages, strict=True))
    still = first.deferred
    assert still is not None
    later = resumed.deferred or DeferredToolRequests()
    # Pending after both passes: what the resumed pass deferred again replaces what the
    # first pass deferred (an approved external call moves from approvals to calls);
    # what it answered is no longer pending; what it skipped (undecided) stays.
    pending: dict[int, tuple[bool, ToolCall]] = {}
    for j, call in enumerate(still.all):
        pending[origin[j]] = (j >= len(still.calls), call)
    for j in two.answered:
        pending.pop(origin[j], None)
    for j, call in enumerate(later.all):
        pending[origin[two.deferred[j]]] = (j >= len(later.calls), call)
    kept = sorted(pending.items())
    metadata = {
        call.id: {**still.metadata.get(call.id, {}), **later.metadata.get(call.id, {})}
        for _, (_, call) in kept
    }
    deferred = DeferredToolRequests(
        tuple(call for _, (approval, call) in kept if not approval),
        tuple(call for _, (approval, call) in kept if approval),
        {k: v for k, v in metadata.items() if v},
    )
    executed = sorted({*one.executed, *(origin[j] for j in two.executed)})
    return DispatchResult(
        tuple(slots[index] for index in sorted(slots)),
        first.events + resumed.events,
        deferred if deferred.all else None,
        first.follow_ups + resumed.follow_ups,
        {**first.metadata, **resumed.metadata},
        tuple(calls[index].id for index in executed),
    )
