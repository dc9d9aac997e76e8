"""Admission: one call in, one verdict out — pure and synchronous.

For each call, in this order: limits (cancellation, deadline,
``max_tool_calls``); before-middleware (adjust, reject or defer); name
resolution against what is callable this turn, with the unknown-tool policy;
argument decoding (strict, then relaxed repair, then the always-on
parse-error answer); schema validation with the invalid-args policy; then
deferral of external and approval-gated tools.

The verdicts — :class:`Admitted`, :class:`Answered`, :class:`Resolved`,
:class:`Deferred`, :class:`Skipped`, :class:`Abort` — are plain values;
events are handed to ``emit`` as they happen. Nothing here runs a tool, so
``dispatch`` and ``dispatch_sync`` share it and every gate is checked before
anything executes.

The walk of a call through the ``before_tool`` hooks is written once
(:func:`_admit`, and :func:`_walk` from the first hook that answers other than with
the call as it is: a generator, the sans-I/O pattern): when a hook returns an
awaitable, the generator yields it and the driver sends back its value —
:func:`admit_batch` refuses awaitables (there is no event loop in
``dispatch_sync``), :func:`admit_batch_async` awaits them. Everything else, the
walk of the hooks included, is shared.

On resume (``approvals`` given), each call's decision is looked up first
(never consumed): approved calls go through the whole pipeline marked
approved, denied and host-answered calls become :class:`Resolved`, calls
without a decision are :class:`Skipped`, and a call whose id carries a
decision bound to another call is :class:`Deferred` again for approval.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import Literal, Protocol, TypeAlias

import msgspec

from tinytools import _suggest, repair
from tinytools._declare.coerce import coerced
from tinytools._declare.json_values import plain_values, text_problem
from tinytools._declare.registry import AnyTool
from tinytools._declare.spec import Exposure
from tinytools._engine.env import DispatchEnv
from tinytools._engine.resume import (
    ApproveWithArgs,
    Decision,
    DeferredToolResults,
    Respond,
    same_call,
)
from tinytools._engine.stops import Stop, limit_reached, not_run
from tinytools._middleware import Allow, Defer, Deny, HookFailed, Stack, described
from tinytools._redact import Redactor, every_secret, rewritten, shown_reason
from tinytools._text import json_text, preview, printable
from tinytools._unread import UnreadCall, is_fragment, unnamed_text
from tinytools._wire import MessageStatus, ToolCall, ToolMessage, ToolResult, plain_call, plain_text
from tinytools.errors import ToolArgumentsError
from tinytools.events import (
    Event,
    InvalidToolArgs,
    ToolApproved,
    ToolDeferred,
    ToolDenied,
    UnknownToolCall,
)
from tinytools.policies import Coerce, Fail, NormalizeThenReturnToolError

from .discovery import opening as discovery_opening

__all__ = [
    "Abort",
    "Admission",
    "Admitted",
    "Answered",
    "Deferred",
    "Resolved",
    "Skipped",
    "Verdict",
    "admit_batch",
    "carried",
    "error_message",
    "past_deadline",
    "shown_name",
    "admit_batch_async",
]


class Admitted(msgspec.Struct, frozen=True):
    """The call may run: ``arguments`` passed the schema (injections not yet bound).

    Tracked by the garbage collector like any container: a ``before_tool`` hook may
    store what it is given (the run) inside a call's arguments, and an untracked
    ``Admitted`` would then hide that cycle from the collector, leaking the run.
    """

    index: int
    call: ToolCall
    tool: AnyTool
    arguments: dict[str, object]


class Answered(msgspec.Struct, frozen=True):
    """The call is answered without running its tool."""

    index: int
    message: ToolMessage


class Deferred(msgspec.Struct, frozen=True):
    """The call leaves the batch without a result."""

    index: int
    call: ToolCall
    kind: Literal["approval", "external", "deferred"]
    metadata: dict[str, object]


class Resolved(msgspec.Struct, frozen=True):
    """On resume: a denied or host-answered call, answered through the fold, never run."""

    index: int
    call: ToolCall
    result: ToolResult
    status: MessageStatus


class Skipped(msgspec.Struct, frozen=True):
    """On resume: a call the results do not decide (it gets no message and does not run)."""

    index: int


class Abort(msgspec.Struct, frozen=True):
    """A ``Fail`` policy fired: the batch is aborted before anything runs."""

    index: int
    message: ToolMessage
    reason: str


Verdict: TypeAlias = "Admitted | Answered | Resolved | Deferred | Skipped | Abort"
Emit: TypeAlias = Callable[[Event], None]
#: One call's admission: yields awaitables from hooks, returns the verdict.
#: The rest of a call's walk through the hooks: yields each awaitable a hook returns, is
#: sent back its value, and returns the call's verdict.
_Walk: TypeAlias = Generator[Awaitable[object], object, Verdict]


_DIRECT = Exposure.Direct


def error_message(call: ToolCall, content: str, status: MessageStatus = "error") -> ToolMessage:
    """The error message answering ``call`` without running its tool (where the call's
    name may be no tool's, pass it through :func:`shown_name` first)."""
    return ToolMessage(
        tool_call_id=call.id, name=call.name, content=content, is_error=True, status=status
    )


class Admission(Protocol):
    """The mutable bookkeeping admission reads and fills (kept out of the verdicts), and
    the batch-wide view it hands the hooks (``env``).

    A protocol, not a base class: the run (``state.Run``) holds these fields among its
    own, and admission reads nothing else of it. What only the opening of calls reads
    (``seen``, ``resume``, the limits and stop checks) is stored when ``opens`` is first
    set (``Run._open_calls``), and read only while it is; the rest is stored when the
    run is built.
    """

    #: What the hooks receive as ``env``: the registry, the policy, the context, the
    #: advertised names, the approvals (a separate object: no hook sees the run).
    env: DispatchEnv
    stack: Stack
    emit: Emit
    #: Whether admission opens each call (repeated ids, discovery, a resume's decisions,
    #: limits) before it checks the call.
    opens: bool
    #: The verdicts so far, in call order (kept when a hook aborts admission midway).
    verdicts: list[Verdict]
    #: The Admitted verdicts, in call order: the verdicts themselves until ``preflight``
    #: (set when a verdict is not Admitted) makes a list of its own.
    admitted: list[Admitted]
    #: Whether the batch needs dispatch's checks between admission and execution: a
    #: call was not admitted, an admitted tool needs more than an inline call (see
    #: ``Plan.plain``), or the run resumes, records to a ledger, hands events to an
    #: async handler or has a tool timeout.
    preflight: bool
    # Stored, and read, only once ``opens`` is set:
    #: The host's decisions, on resume.
    resume: DeferredToolResults | None
    #: The ids of the calls admitted so far (made only for a batch that repeats an id).
    seen: set[str] | None
    #: Whether the limits are checked as each call is opened (else skipped outright).
    limited: bool
    #: The stop checks.
    cancelled: Callable[[], bool] | None
    expired: Callable[[], bool] | None
    #: The ``max_tool_calls`` slots used: each call admission opens takes one when
    #: ``limited``; a batch that cannot reach its limit takes them all at once (see
    #: ``state.new_run``); a deferred call gives its slot back.
    used: int
    #: Whether an admitted tool injects (dispatch checks the context before any runs).
    injecting: bool


def admit_batch(calls: Sequence[ToolCall], batch: Admission) -> list[Verdict]:
    """A verdict for every call, in call order (``dispatch_sync``): :func:`_admit`, and
    the synchronous driver of its :func:`_walk`, which refuses an awaitable a hook
    returns (there is no loop to await it on).

    Args:
        calls: The batch.
        batch: The admission state (its pass begun with ``Run.admission``): the env,
            the middleware, where events go, the host's decisions on resume.

    Raises:
        TypeError: A ``before_tool`` hook returned an awaitable.
        Exception: Whatever a ``before_tool`` hook raised (dispatch aborts).
    """
    verdicts = batch.verdicts
    plain = not batch.opens and not batch.stack.befores
    # The index counted by hand and verdicts.append called where it is used: no
    # enumerate object, index tuple or bound method made per dispatch (together about
    # 1.3k instructions of a one-call batch, more on CPython 3.12+).
    index = -1
    verdict: Verdict | _Walk
    for call in calls:
        index += 1
        if plain:  # no hook and nothing to open (the common batch): the call is checked
            verdict = _checked(index, call, batch)
        elif type(verdict := _admit(index, call, batch)) is _GENERATOR:  # a hook answered
            walk: _Walk = verdict
            try:
                pending = walk.send(None)
            except StopIteration as done:
                verdict = done.value
            else:
                walk.close()
                raise _not_awaited(pending)
        if type(verdict) is not Admitted:
            batch.preflight = True  # dispatch answers it before anything runs
        verdicts.append(verdict)  # type: ignore[arg-type]  # (not a walk: driven above)
    return verdicts


def _not_awaited(pending: Awaitable[object]) -> TypeError:
    """The error for a ``before_tool`` hook that returned an awaitable to
    ``dispatch_sync``, which has no loop to await it on (the awaitable closed)."""
    if inspect.iscoroutine(pending):
        pending.close()
    return TypeError(
        "a before_tool hook returned an awaitable, which dispatch_sync cannot wait "
        "for; use `await dispatch(...)` or make the hook synchronous"
    )


async def admit_batch_async(calls: Sequence[ToolCall], batch: Admission) -> list[Verdict]:
    """:func:`admit_batch` for ``dispatch``: :func:`_admit`, and the asynchronous driver
    of its :func:`_walk`, which awaits what ``before_tool`` hooks return."""
    if not batch.stack.befores:  # no hook can return an awaitable: nothing to await
        return admit_batch(calls, batch)
    verdicts = batch.verdicts
    for index, call in enumerate(calls):
        verdict = _admit(index, call, batch)
        if type(verdict) is _GENERATOR:  # a hook answered: the rest of its walk
            walk: _Walk = verdict
            sent: object = None
            failure: Exception | None = None
            while True:
                try:
                    if failure is None:
                        pending = walk.send(sent)
                    else:
                        pending, failure = walk.throw(failure), None
                except StopIteration as done:
                    verdict = done.value
                    break
                try:
                    sent = await pending
                except Exception as error:
                    failure = error
        if type(verdict) is not Admitted:
            batch.preflight = True
        verdicts.append(verdict)  # type: ignore[arg-type]  # (not a walk: driven above)
    return verdicts


def past_deadline(calls: Sequence[ToolCall], batch: Admission) -> None:
    """Answer as interrupted the calls admission did not reach: the batch's deadline
    passed while :func:`admit_batch_async` awaited a hook (the call it waited on
    included), so none of them is opened, let alone run."""
    verdicts = batch.verdicts
    for index in range(len(verdicts), len(calls)):
        call = shown_name(plain_call(calls[index]))
        text = not_run(Stop.DEADLINE)
        verdicts.append(Answered(index, error_message(call, text, "interrupted")))
        batch.preflight = True


def _repeated(index: int, call: ToolCall, batch: Admission) -> Answered:
    """The answer for a call whose id an earlier call of the batch already used."""
    # Approvals, results and transcripts are keyed by call id: a repeated id could
    # inherit another call's approval, so it never runs (fail closed).
    text = (
        f"Tool call not run: its id `{call.id}` repeats an earlier call's id in this "
        "batch; every call needs its own id."
    )
    batch.emit(ToolDenied(call_id=call.id, tool_name=printable(call.name), message=text))
    return Answered(index, error_message(shown_name(call), text))


def _opening(index: int, call: ToolCall, batch: Admission) -> ToolCall | Verdict:
    """Repeated ids, the host's decision on resume, the limits: the call going on, or its verdict.

    A call going on has taken its ``max_tool_calls`` slot. Admission skips it when the
    batch has none of these (``batch.opens`` is false).
    """
    seen = batch.seen
    if seen is not None:
        if call.id in seen:
            return _repeated(index, call, batch)
        seen.add(call.id)
    if batch.env._intrinsics is not None:  # tool_call unwrapped, tool_search answered
        opened = discovery_opening(call, batch)
        if type(opened) is ToolMessage:
            return Answered(index, opened)
        call = opened  # type: ignore[assignment]
    if batch.resume is not None:
        decided = _decided(index, call, batch)
        if not isinstance(decided, ToolCall):
            return decided
        call = decided
    if batch.limited:
        # The common case (no stop checks, the budget not spent) costs a comparison.
        most = batch.env.policy.max_tool_calls
        if (
            batch.cancelled is not None
            or batch.expired is not None
            or (most is not None and batch.used >= most)
        ):
            limit = _limits(call, batch)
            if limit is not None:
                return Answered(index, limit)
        batch.used += 1
    return call


_GENERATOR = types.GeneratorType


def _admit(index: int, call: ToolCall, batch: Admission) -> Verdict | _Walk:
    """Admit one call: open it, hand it to the ``before_tool`` hooks, check it.

    While every hook hands the call back as it is (the common answer), nothing else is
    read and the call's verdict is returned. The first hook that answers otherwise
    leaves the rest of the walk to :func:`_walk`, a generator both entry points drive:
    :func:`admit_batch` (``dispatch_sync``) and :func:`admit_batch_async` (``dispatch``).
    The common walk makes no generator (about 0.4 µs a call, with the value returned
    through ``StopIteration``).
    """
    if batch.opens:  # repeated ids, discovery, a resume's decisions, limits
        opened = _opening(index, call, batch)
        # (a call of a ToolCall subclass goes on too: only a verdict is recorded)
        if not isinstance(opened, ToolCall):
            return opened
        call = opened
    env = batch.env
    position = -1
    for hook in batch.stack.befores:
        position += 1
        try:
            outcome: object = hook(call, env)
        except Exception as error:
            raise HookFailed("before_tool", hook, error) from error
        if outcome is not call:
            return _walk(index, call, batch, position, outcome)
    return _checked(index, call, batch)


def _walk(index: int, call: ToolCall, batch: Admission, position: int, outcome: object) -> _Walk:
    """The rest of a call's walk through the ``before_tool`` hooks, from the hook at
    ``position``, which answered ``outcome``: yields each awaitable a hook returns (the
    driver sends back its value, or refuses it), and returns the call's verdict."""
    env = batch.env
    befores = batch.stack.befores
    # The approval standing for the call as the hooks before this one handed it on.
    approved = call if env.is_call_approved(call.id) else None
    while True:
        hook = befores[position]
        if outcome is not call:
            if inspect.isawaitable(outcome):
                try:
                    outcome = yield outcome
                except Exception as error:
                    raise HookFailed("before_tool", hook, error) from error
            went = _went(index, hook, call, approved, outcome, batch)
            if not isinstance(went, tuple):
                return went
            call, approved = went
        position += 1
        if position == len(befores):
            return _checked(index, call, batch)
        hook = befores[position]
        try:
            outcome = hook(call, env)
        except Exception as error:
            raise HookFailed("before_tool", hook, error) from error


def _adjusted(
    hook: object, call: ToolCall, returned: ToolCall, approved: ToolCall | None, env: DispatchEnv
) -> tuple[ToolCall, ToolCall | None]:
    """The call a hook returned (same id) and the approval still standing for it: the
    approval covered the call as it was, so a changed call meets the gates again."""
    call = _kept_id(hook, call, returned)
    if approved is not None and call is not approved and not same_call(approved, call):
        env.approved.discard(call.id)
        approved = None
    return call, approved


def _changed(
    index: int,
    hook: object,
    call: ToolCall,
    returned: ToolCall,
    approved: ToolCall | None,
    batch: Admission,
) -> tuple[ToolCall, ToolCall | None] | Deferred:
    """The call a hook returned and the approval still standing for it (:func:`_adjusted`)
    — or, on resume, the changed call deferred again for approval: the host's decision
    answered the call as it was, and no gate that passed it for that decision (say
    ``ToolPolicyMiddleware.require_approval``, earlier in the stack) judged this one."""
    adjusted, still = _adjusted(hook, call, returned, approved, batch.env)
    if approved is None or still is not None or not batch.opens or batch.resume is None:
        return adjusted, still
    name = getattr(hook, "__qualname__", None) or type(hook).__qualname__
    reason = (
        f"before_tool hook `{name}` changed the call after the decision for call id "
        f"`{call.id}` approved it; decide the changed call itself"
    )
    return _defer(index, adjusted, "approval", {"reason": reason}, batch)


def _went(
    index: int,
    hook: object,
    call: ToolCall,
    approved: ToolCall | None,
    outcome: object,
    batch: Admission,
) -> tuple[ToolCall, ToolCall | None] | Verdict:
    """What a hook's (awaited) answer other than the bare call means: the call going on
    and its approval, or the verdict (``Deny``, ``Defer``)."""
    env = batch.env
    if isinstance(outcome, Deny):
        batch.emit(
            ToolDenied(call_id=call.id, tool_name=printable(call.name), message=outcome.message)
        )
        return Answered(index, error_message(shown_name(call), outcome.message, "denied"))
    if isinstance(outcome, Defer):
        return _defer(index, call, outcome.kind, outcome.metadata, batch)
    if isinstance(outcome, Allow):
        call = approved = _kept_id(hook, call, outcome.call or call)
        if call.id not in env.approved:
            env.approved.add(call.id)
            batch.emit(ToolApproved(call_id=call.id, tool_name=printable(call.name)))
        return call, approved
    if isinstance(outcome, ToolCall):
        return _changed(index, hook, call, outcome, approved, batch)
    raise TypeError(
        f"before_tool hook {hook!r} returned {described(outcome)}; return the call, "
        "Allow(), Allow(call), Deny(message) or Defer() (instances, not the classes)"
    )


def _kept_id(hook: object, call: ToolCall, returned: ToolCall) -> ToolCall:
    """``returned``, when it keeps ``call``'s id (answers and approvals are keyed by it),
    its id and name plain ``str`` (as dispatch reads a host's calls: ``host_calls``).

    Raises:
        TypeError: The hook changed the id, or gave the call a name that is no text.
    """
    if returned.id != call.id:
        raise TypeError(
            f"before_tool hook {hook!r} changed the call id from {call.id!r} to "
            f"{returned.id!r}; a hook may change a call's name or arguments, never its id"
        )
    if type(returned.id) is not str or type(returned.name) is not str:
        name = plain_text(returned.name)
        if name is None:
            raise TypeError(
                f"before_tool hook {hook!r} returned a call whose name is a "
                f"{type(returned.name).__name__}; give it the tool's name as a str"
            )
        returned = msgspec.structs.replace(returned, id=call.id, name=name)
    return returned


def _decided(index: int, call: ToolCall, batch: Admission) -> ToolCall | Verdict:
    """On resume: the call to admit (approved), or the verdict its decision gives.

    Decisions are looked up, never consumed: resuming is pure. A decision bound
    to another call under this id (another tool or other arguments) does not
    answer this one: the call is deferred again for approval and nothing runs.
    """
    assert batch.resume is not None
    decision = batch.resume.decisions.get(call.id)
    if decision is None:
        return Skipped(index)
    if not decision.answers(call):
        return _redeferred(index, call, decision, batch)
    answer = decision.answer
    if isinstance(answer, Deny):
        batch.emit(
            ToolDenied(call_id=call.id, tool_name=printable(call.name), message=answer.message)
        )
        return Resolved(index, call, ToolResult.error(answer.message), "denied")
    batch.emit(ToolApproved(call_id=call.id, tool_name=printable(call.name)))
    if isinstance(answer, Respond):
        return Resolved(index, call, answer.result, "ok")
    if isinstance(answer, ApproveWithArgs):
        call = msgspec.structs.replace(call, arguments=dict(answer.arguments), invalid=None)
    batch.env.approved.add(call.id)
    return call


def _redeferred(index: int, call: ToolCall, decision: Decision, batch: Admission) -> Deferred:
    """A call whose id carries a decision made for another call: back among the approvals."""
    assert decision.call is not None
    other = (
        "the same tool with other arguments"
        if decision.call.name == call.name
        else f"tool `{decision.call.name}`"
    )
    reason = (
        f"the decision for call id `{call.id}` was made for another call ({other}); "
        "decide this call itself"
    )
    metadata: dict[str, object] = {"reason": reason}
    batch.emit(
        ToolDeferred(
            call_id=call.id, tool_name=printable(call.name), reason="approval", metadata=metadata
        )
    )
    return Deferred(index, carried(call), "approval", metadata)


def _checked(index: int, call: ToolCall, batch: Admission) -> Verdict:
    """Name resolution, argument checks and the deferral gates.

    The common case — a callable name, arguments that validate, a tool no gate holds —
    costs a lookup, the validation and one verdict; every other case leaves through
    the function that answers it.
    """
    env = batch.env
    # DispatchEnv.lookup's common cases written out (one frame fewer): a directly exposed
    # tool, with no allow-list or advertised set, or on the allow-list with no advertised
    # set; anything else asks lookup itself.
    found = env.tools._tools.get(call.name)
    if (
        found is None
        or found.exposure is not _DIRECT
        or not (
            env._open
            or (
                env.advertised is None
                and (allowlist := env.policy.allowlist) is not None
                and call.name in allowlist
            )
        )
    ):
        found = env.lookup(call.name)
    if found is None:
        resolved = _resolve(index, plain_call(call), batch)  # (its text, if a subclass's)
        if not isinstance(resolved, tuple):
            return resolved
        call, found = resolved
    if call.invalid is None:
        try:
            arguments = found.validate(call.arguments)
        except ToolArgumentsError as error:
            # (raw text of a str subclass, an SDK's own string type, is answered as its
            # text: events and deferrals carry it, and msgspec encodes no subclass)
            if type(call.arguments) is not str:  # (the common text costs no call)
                call = plain_call(call)
            answer = _refused(index, call, found, error, batch)
            if not isinstance(answer, dict):
                return answer
            arguments = answer
    else:
        answer = _arguments(index, plain_call(call), found, batch)
        if not isinstance(answer, dict):
            return answer
        arguments = answer
    plan = found._plan
    if not plan.plain:
        if plan.external:
            return _defer(index, call, "external", {}, batch)
        if (
            plan.gated
            and not env.is_call_approved(call.id)
            and env.tools.approval_needed(call, env.context)  # ApprovalRequired(when=...)
        ):
            return _defer(index, call, "approval", {}, batch)
        batch.preflight = True
        if plan.injections:
            batch.injecting = True
    return Admitted(index, call, found, arguments)


def _limits(call: ToolCall, batch: Admission) -> ToolMessage | None:
    call = shown_name(call)  # (opened before its name is resolved)
    if batch.cancelled is not None and batch.cancelled():
        return error_message(call, not_run(Stop.CANCELLED), "interrupted")
    if batch.expired is not None and batch.expired():
        return error_message(call, not_run(Stop.DEADLINE), "interrupted")
    limit = batch.env.policy.max_tool_calls
    if limit is not None and batch.used >= limit:
        return error_message(call, limit_reached(limit))
    return None


def _defer(
    index: int,
    call: ToolCall,
    kind: Literal["approval", "external", "deferred"],
    metadata: dict[str, object],
    batch: Admission,
) -> Deferred:
    if batch.used:  # slots are counted (each call has taken one by now)
        batch.used -= 1  # a deferred call takes a slot only when it runs
    call = carried(call)  # (a hook's deferral comes before any check of the call)
    batch.emit(
        ToolDeferred(
            call_id=call.id, tool_name=printable(call.name), reason=kind, metadata=metadata
        )
    )
    return Deferred(index, call, kind, metadata)


def carried(call: ToolCall) -> ToolCall:
    """``call`` as ``DeferredToolRequests`` carries it back to the host: as it is when a
    result can encode it; else its name, raw text and provider reason with lone
    surrogates escaped and arguments JSON cannot carry as printable JSON text (each reads
    back as the same value — refused again when admitted — and no tool has such a
    name). Only a call's id is never changed (the host matches answers by it)."""
    try:
        msgspec.json.encode(call)
    except (TypeError, ValueError, OverflowError, RecursionError):
        invalid = call.invalid
        return msgspec.structs.replace(
            call,
            name=printable(call.name),
            arguments=_encodable(call.arguments),
            invalid=None if invalid is None else printable(invalid),
        )
    return call


def shown_name(call: ToolCall) -> ToolCall:
    """``call`` as a result carries it back to the host: its name with a lone surrogate
    escaped (no tool has such a name, so the call stays unknown on resume)."""
    name = printable(call.name)
    return call if name == call.name else msgspec.structs.replace(call, name=name)


def _resolve(
    index: int, call: ToolCall, batch: Admission
) -> tuple[ToolCall, AnyTool] | Answered | Abort:
    """The tool ``call`` names (a plain ``str``: dispatch refused any other up front, see
    ``host_calls``), or the unknown-tool policy's answer."""
    found = batch.env.resolve(call.name)
    if found is not None:
        name, tool = found
        if name == call.name:
            return call, tool
        batch.emit(_unknown(call, f"rewrite:{name}", batch.env))
        return msgspec.structs.replace(call, name=name), rewritten(tool, batch.env.tools)
    policy = batch.env.policy.unknown_tool
    recovery = "fail" if isinstance(policy, Fail) else "tool_error"
    event = _unknown(call, recovery, batch.env)
    batch.emit(event)
    # Named by what the model may call this turn, at most a handful (never the whole
    # registry); the arguments as the event shows them (redacted when a registered
    # tool redacts).
    requested = preview(call.name, 80, raw_text=True)
    names, complete = _suggestions(call.name, batch.env)
    listed = ", ".join(f"`{n}`" for n in names)
    if complete:
        hint = f"Available tools: {listed or 'none'}."
    else:
        hint = f"Closest available tools: {listed or 'none with a similar name'}."
    received = preview(event.arguments, 200, raw_text=True)
    text = (
        f"Unknown tool `{requested}`: no tool of that name can be called this turn. "
        f"{hint} Arguments received: {received}."
    )
    if call.invalid is not None and not call.name:
        text = f"{unnamed_text(shown_reason(call, None, batch.env.tools))} {hint}"
    answer = error_message(msgspec.structs.replace(call, name=printable(call.name)), text)
    if recovery == "fail":
        return Abort(index, answer, f"unknown tool {requested!r}")
    return Answered(index, answer)


def _suggestions(name: str, env: DispatchEnv) -> tuple[list[str], bool]:
    """The names the message offers, and whether they are every callable name.

    At most ``_suggest.LIMIT`` names (never the whole registry): when the model may
    call no more than that many, all of them; otherwise the closest few, from the
    registry's index (see ``_suggest``). ``env.callable`` is never built here.
    """
    few = [c for c in (env.advertised, env.policy.allowlist) if c is not None]
    among = min(few, key=len) if few else None
    universe = among if among is not None else env.tools.keys()
    if len(universe) <= _suggest.LIMIT:
        index = env.tools.name_index()
        every = [n for n in env.tools if n in universe and env.lookup(n) is not None]
        first = [n for n in index.variants(name) if n in every]
        return first + sorted(n for n in every if n not in first), True
    suggested = env.tools.name_index().suggest(
        name, lambda n: env.lookup(n) is not None, among=among
    )
    return suggested, False


def _unknown(call: ToolCall, recovery: str, env: DispatchEnv) -> UnknownToolCall:
    """The event for an unknown call: arguments verbatim, but never a secret.

    No one tool owns an unknown call's arguments (the name may be a variant, a
    misspelling or a rewrite of any tool's), so the redaction of every registered
    tool applies (:func:`every_secret`); arguments JSON cannot carry are shown as
    printable text.
    """
    arguments: dict[str, object] | str = call.arguments
    redactor = every_secret(env.tools)
    if redactor is not None:
        arguments = redactor.raw(call.arguments)[0]
    return UnknownToolCall(
        call_id=call.id,
        requested_name=printable(call.name),
        arguments=_encodable(arguments),
        recovery=recovery,
    )


def _encodable(arguments: dict[str, object] | str) -> dict[str, object] | str:
    """``arguments`` as they are when JSON can carry them (values of a ``str``, ``int``
    or ``float`` subclass as the plain values they hold, as validation reads them),
    else as printable text."""
    if type(arguments) is str:  # text fails to encode only for a lone surrogate
        return arguments if arguments.isascii() else printable(arguments)
    try:
        msgspec.json.encode(arguments)
    except (TypeError, ValueError, OverflowError, RecursionError):
        if isinstance(arguments, str):  # a str subclass: msgspec encodes no subclass
            return printable(str.__str__(arguments))
        try:
            plain = plain_values(arguments)
            msgspec.json.encode(plain)
        except (TypeError, ValueError, OverflowError, RecursionError):
            return printable(json_text(arguments))
        return plain  # type: ignore[return-value]  # a dict, as arguments was
    return arguments


def _arguments(
    index: int, call: ToolCall, tool: AnyTool, batch: Admission
) -> dict[str, object] | Answered | Abort:
    """The validated arguments, or the answer for malformed or invalid ones.

    ``Tool.validate`` tells malformed text (a transport defect: repaired if it can be
    without guessing, else answered with the parse error, whatever the invalid-args
    policy says) from well-formed arguments that break the schema.
    """
    try:
        if is_fragment(call):
            raise UnreadCall(tool.name, shown_reason(call, tool, batch.env.tools))
        if call.invalid is not None:
            raise ToolArgumentsError(
                tool.name, shown_reason(call, tool, batch.env.tools), malformed=True
            )
        return tool.validate(call.arguments)
    except ToolArgumentsError as error:
        return _refused(index, call, tool, error, batch)


def _refused(
    index: int, call: ToolCall, tool: AnyTool, error: ToolArgumentsError, batch: Admission
) -> dict[str, object] | Answered | Abort:
    """Malformed text is repaired or answered; well-formed arguments that break the
    schema meet the invalid-args policy."""
    if error.malformed:
        return _repaired(index, call, tool, error, batch)
    return _invalid(index, call, tool, error, call.arguments, batch)


def _secrets(
    redactor: Redactor, call: ToolCall, value: object
) -> tuple[dict[str, object] | str, list[object]]:
    """The call's arguments redacted, and every secret in them or in ``value``.

    ``value`` is what was validated in the end (repaired or normalised arguments):
    its secrets are scrubbed too, whatever the raw text looked like.
    """
    arguments, secrets = redactor.raw(call.arguments)
    if isinstance(value, Mapping):
        secrets += redactor.arguments(value)[1]
    elif value is not None and value is not call.arguments:
        secrets += redactor.raw(value)[1]
    return arguments, secrets


def _invalid_event(
    call: ToolCall, tool: AnyTool, error: ToolArgumentsError, recovery: str, value: object = None
) -> Event:
    arguments, text = call.arguments, str(error)
    if tool.policy.redact:
        redactor = Redactor(tool.policy.redact, loose=True)
        arguments, secrets = _secrets(redactor, call, value)
        text = redactor.scrub(text, secrets)
    if type(arguments) is not str or not arguments.isascii():  # ASCII text is JSON's as is
        arguments = _encodable(arguments)
    return InvalidToolArgs(
        call_id=call.id,
        tool_name=tool.name,
        arguments=arguments,
        error=text if text.isascii() else printable(text),
        recovery=recovery,
    )


def _error_answer(
    index: int, call: ToolCall, tool: AnyTool, error: ToolArgumentsError, value: object = None
) -> Answered:
    """The model's answer for bad arguments: the error (secrets scrubbed) and the schema.

    Only the error, which may echo what the model sent, is scrubbed: the schema is the
    tool's own text (scrubbing it of a short secret, such as malformed text of one
    character, garbled it).
    """
    text = str(error)
    if tool.policy.redact:
        redactor = Redactor(tool.policy.redact, loose=True)
        text = redactor.scrub(text, _secrets(redactor, call, value)[1])
    text = f"{text} Expected arguments (JSON schema): {tool._plan.schema_text(tool.parameters)}"
    if not text.isascii():
        text = printable(text)
    return Answered(index, error_message(call, text))


def _repaired(
    index: int, call: ToolCall, tool: AnyTool, error: ToolArgumentsError, batch: Admission
) -> dict[str, object] | Answered | Abort:
    """Relaxed repair of malformed JSON, else the always-on parse-error answer.

    The repaired text is validated as text, so a repeated field is refused as on
    every other route; its secrets are scrubbed from the event and the message.
    Text the tool reads as its arguments is one JSON object already: its generic
    decode (the object, for redaction and the invalid-args policy) is made only
    when something reads it.
    """
    raw = call.arguments
    rewritten = repair.rewrite_relaxed_text(raw) if isinstance(raw, str) else None
    strict = None if rewritten is None else rewritten[0]
    if strict is not None and not tool.policy.redact:
        try:
            arguments = tool.validate(strict)
        except ToolArgumentsError:
            pass  # a repeated object, not an object, or a schema error: below
        else:
            batch.emit(_invalid_event(call, tool, error, "repaired"))
            return arguments
    fixed = None if strict is None else repair.decode_rewritten(strict)
    if fixed is None:
        # Repaired into JSON that holds what no arguments can (a lone surrogate escape,
        # a number beyond range): that is what the model hears, as for strict text.
        problem = None if strict is None else text_problem(strict)
        if problem is not None:
            refusal = ToolArgumentsError(tool.name, problem[1], path=problem[0])
            return _invalid(index, call, tool, refusal, strict, batch)
        batch.emit(_invalid_event(call, tool, error, "tool_error"))
        return _error_answer(index, call, tool, error)
    text, value = fixed
    batch.emit(_invalid_event(call, tool, error, "repaired", value))
    try:
        return tool.validate(text)
    except ToolArgumentsError as schema_error:
        return _invalid(index, call, tool, schema_error, value, batch)


def _invalid(
    index: int,
    call: ToolCall,
    tool: AnyTool,
    error: ToolArgumentsError,
    value: object,
    batch: Admission,
) -> dict[str, object] | Answered | Abort:
    """The invalid-args policy for well-formed arguments that break the schema."""
    policy = batch.env.policy.invalid_args
    if isinstance(policy, Coerce) or tool.policy.runtime.coerce:
        fixed = coerced(tool, call.arguments, value)
        if fixed is not None:
            batch.emit(_invalid_event(call, tool, error, "coerced", fixed[1]))
            return fixed[0]
    if isinstance(policy, NormalizeThenReturnToolError):
        try:
            decoded = msgspec.json.decode(value) if isinstance(value, (str, bytes)) else value
        except msgspec.DecodeError:  # text JSON reads, msgspec cannot (a number like 1e400)
            normalized = None
        else:
            normalized = repair.normalize_arguments(decoded, tool.parameters)
        if normalized is not None:
            batch.emit(_invalid_event(call, tool, error, "normalized", normalized.value))
            try:
                return tool.validate(normalized.value)
            except ToolArgumentsError as still:
                error = still
    if isinstance(policy, Fail):
        batch.emit(_invalid_event(call, tool, error, "fail", value))
        answer = _error_answer(index, call, tool, error, value)
        return Abort(index, answer.message, f"invalid arguments for tool `{tool.name}`")
    batch.emit(_invalid_event(call, tool, error, "tool_error", value))
    return _error_answer(index, call, tool, error, value)
