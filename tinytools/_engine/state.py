"""One dispatch's state: the event sink, the run being filled in, and its result.

:class:`Run` is built once per batch (cheaply: nothing is made that the batch's
arguments do not ask for) and every stage fills it; nothing here decides
anything — admission, execution and folding do. :meth:`Run.result` turns it into
the ``DispatchResult`` in call order, answering whatever is left unanswered as
interrupted, and :meth:`Run.abort` wraps that in the ``DispatchAborted`` an
aborted batch raises.
"""

from __future__ import annotations

import contextvars
import inspect
import operator
import types
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import NamedTuple, Protocol

import msgspec

from tinytools._artifacts import ArtifactStore, PutReturned, check_store
from tinytools._declare.registry import AnyTool, Registry
from tinytools._declare.spec import is_async_function
from tinytools._inject import Cancellation, Context, check_context_type
from tinytools._memo import remember
from tinytools._middleware import NO_MIDDLEWARE, HookFailed, Stack, composed
from tinytools._redact import shown_arguments
from tinytools._text import printable
from tinytools._wire import ContentBlock, ToolCall, ToolMessage, ToolResult
from tinytools.events import Event, ToolCompleted, ToolDeferred, ToolStarted
from tinytools.policies import RunPolicy
from tinytools.toolsets._base import Toolset, registry_for

from .admit.admission import (
    Abort,
    Admitted,
    Answered,
    Deferred,
    Resolved,
    Skipped,
    Verdict,
    carried,
    error_message,
    shown_name,
)
from .effects import EffectLedger, release, settle_answered
from .env import DispatchEnv
from .fold import Failed, Fatal, Folded, Postponed, bounded, fold, own_limits, plain_message
from .host_calls import host_calls, refuse_non_batch
from .inputs import DEFAULT_POLICY, DispatchInputs, EventHandler
from .result import DispatchAborted, DispatchResult, FollowUp
from .resume import DeferredToolRequests, DeferredToolResults
from .stops import Stop, interrupted, not_run
from .tool_lists import registry_of

__all__ = [
    "HostFailed",
    "Positions",
    "Run",
    "Sink",
    "Stop",
    "new_run",
]


class HostFailed(Exception):
    """One of the host's callbacks raised (``on_event``, the ledger, the artifact store),
    or, ``raised`` False, returned what dispatch cannot use: ``error`` says what it
    returned (nothing raised, so the reason does not say so)."""

    def __init__(self, where: str, error: Exception, *, raised: bool = True) -> None:
        self.error = error
        super().__init__(f"{where} raised {error!r}" if raised else f"{where} failed: {error}")


#: What :func:`is_async_function` said of a handler, by id, held weakly (a memo must
#: not keep a handler, or what it closes over, alive; a dead entry never answers).
_HANDLERS: dict[int, tuple[weakref.ref[object], bool]] = {}
#: dispatch's default ``middleware`` (the empty tuple, one object in CPython): told by
#: identity. Not by truthiness: an iterable of hooks whose ``__len__`` or ``__bool__``
#: says empty would have its hooks skipped in silence (a ``Deny`` among them).
_NO_HOOKS: tuple[()] = ()
_call_id = operator.attrgetter("id")
_BUILTIN = types.BuiltinFunctionType
_FUNCTION = types.FunctionType
_METHOD = types.MethodType
_CO_COROUTINE = inspect.CO_COROUTINE


#: The last ``on_event`` handler found synchronous: most hosts pass the same one to
#: every dispatch, and :func:`new_run` then knows it by identity alone (a one-entry memo,
#: which changes nothing but speed; a handler is read once, so mark it a coroutine
#: function before its first dispatch). Held weakly: a handler closing over its host's
#: state must die with it, and an id reused after that is never mistaken for it.
_LAST_SYNC_HANDLER: list[weakref.ref[object] | Callable[[], None]] = [lambda: None]


def _is_async_handler(handler: object) -> bool:
    """Whether ``on_event`` returns awaitables (remembering a synchronous one:
    :data:`_LAST_SYNC_HANDLER`).

    Raises:
        TypeError: It cannot be called (see :func:`_reads_async`).
    """
    answer = _reads_async(handler)
    kind = type(handler)
    if answer or kind is _METHOD or kind is _BUILTIN:
        # (a bound method, ``events.append`` included, is made afresh for each dispatch:
        # never found again, and it would keep its object alive)
        return answer
    try:
        held = weakref.ref(handler)
    except TypeError:  # not weakly referenceable: read each time
        return answer
    _LAST_SYNC_HANDLER[0] = held
    return answer


def _reads_async(handler: object) -> bool:
    """Whether ``on_event`` returns awaitables, as its type and code say.

    The common handlers, also made afresh per dispatch (``events.append``,
    ``self.on_event``, a lambda), are answered from their type: a builtin never is;
    a plain function or bound method is when its code is a coroutine's — unless it
    carries attributes (``__wrapped__``, a coroutine mark), which
    :func:`is_async_function` reads. What that reads is remembered per object (a
    bounded memo, which changes nothing but speed).

    Raises:
        TypeError: The handler cannot be called (refused before any call runs: else the
            first call would run before the handler failed on its event).
    """
    kind = type(handler)
    if kind is _FUNCTION:
        if not handler.__dict__:
            return handler.__code__.co_flags & _CO_COROUTINE != 0  # type: ignore[attr-defined,no-any-return]
    elif kind is _BUILTIN:
        return False
    elif kind is _METHOD:
        fn = handler.__func__  # type: ignore[attr-defined]
        if type(fn) is _FUNCTION and not fn.__dict__:
            return fn.__code__.co_flags & _CO_COROUTINE != 0
    if not callable(handler):  # (else the first call would run before the handler failed)
        raise TypeError(
            "on_event must be a function of the event (sync or async), such as "
            f"`events.append`; got {type(handler).__name__}: {handler!r:.80}"
        )
    known = _HANDLERS.get(id(handler))
    if known is not None and known[0]() is handler:
        return known[1]
    answer = is_async_function(handler)
    try:
        held: weakref.ref[object] = weakref.ref(handler)
    except TypeError:  # not weakly referenceable: read again each time
        return answer
    remember(_HANDLERS, id(handler), (held, answer))
    return answer


def _name(fn: object) -> str:
    return str(getattr(fn, "__name__", None) or repr(fn))


def _registry(
    tools: Registry | Toolset | Iterable[AnyTool],
    context: Context | None,
    calls: tuple[ToolCall, ...],
) -> Registry:
    """The registry for ``dispatch``'s ``tools``: a ``Registry`` as it is; a tuple or list
    of tools made into one once and remembered (checked against the batch's calls in
    time proportional to the batch, not the list: :mod:`.tool_lists`); a toolset
    resolved with the dispatch's ``context`` (cached: ``toolsets._base``)."""
    if type(tools) is Registry:
        return tools
    kind = type(tools)
    if kind is tuple or kind is list:
        return registry_of(tools, calls)  # type: ignore[arg-type]
    return registry_for(tools, context)


class _Idle(Protocol):
    """What a flush waiting for another one waits on (an ``anyio.Event``)."""

    def set(self) -> None: ...

    async def wait(self) -> None: ...


class Sink:
    """Collects events for an async ``on_event`` handler, which :meth:`flush` awaits.

    The run's ``emit`` is :meth:`queue`: an event is recorded at once and handed to the
    handler in order, by whichever task flushes first: dispatch's, at its next await
    point, or — while the batch's calls run — a task that ``wake`` (set by the engine
    for that time) wakes for each event, so an event a tool emits reaches the handler
    while the tool still runs (``_engine.execute.loop``). An exception from the
    handler is kept as the run's failure (the first one), and dispatch aborts the
    batch at the next stage boundary, with every call answered. The sink holds its run
    weakly: the run holds the sink, and a cycle would leave every dispatch's state to
    the cyclic garbage collector. (A synchronous handler needs no sink: see
    :class:`Handled`.)
    """

    __slots__ = ("_handler", "_idle", "_run", "events", "flushing", "pending", "wake")

    #: The handler returns awaitables (dispatch reads it to know the run needs a loop).
    is_async = True

    def __init__(self, run: Run, on_event: EventHandler) -> None:
        self._run = weakref.ref(run)
        self.events = run.events
        self._handler = on_event
        #: The events waiting for the handler.
        self.pending: deque[Event] = deque()
        self.flushing = False
        #: Called (from any thread) for each event queued while someone listens for
        #: them: the engine's live hand-off while the batch's calls run, else None.
        self.wake: Callable[[], None] | None = None
        #: Set when the running flush ends, made when another task waits for that.
        self._idle: _Idle | None = None

    def queue(self, event: Event) -> None:
        """Record ``event`` for the async handler, which :meth:`flush` awaits (from any
        thread: a tool's worker thread too)."""
        self.events.append(event)
        self.pending.append(event)
        wake = self.wake
        if wake is not None:
            wake()

    def _failed(self, error: Exception) -> None:
        run = self._run()
        if run is not None:  # else the dispatch is over (an abandoned thread's late event)
            run.fail(HostFailed(f"the on_event handler {_name(self._handler)}", error))

    async def flush(self) -> None:
        """Await the async handler for every event waiting for it, in order: one task
        flushes at a time, and a flush that finds another running waits for it to end
        (a call's task does not go on to its next call before the handler has seen the
        events so far, whichever task hands them over)."""
        while self.flushing:
            idle = self._idle
            if idle is None:
                import anyio  # (under a running loop: only an async handler's flush waits)

                idle = self._idle = anyio.Event()
            await idle.wait()
        if not self.pending:
            return
        self.flushing = True
        try:
            await self._drain()
        finally:
            self.flushing = False
            idle, self._idle = self._idle, None
            if idle is not None:
                idle.set()

    async def _drain(self) -> None:
        """Hand the waiting events to the handler, in order.

        A handler interrupted by a cancellation (the batch's own ``Cancellation`` or
        deadline cutting off the flush a call's task makes; or the host's) gets that
        event again at the next flush: dispatch flushes once more after the batch has
        stopped, outside the batch's cancel scope, so the handler sees every event to
        the end — the interrupted one twice, rather than never (a UI would otherwise wait
        for a ``tool_completed`` that never comes). The host's own cancellation leaves
        dispatch, and no flush follows.
        """
        pending = self.pending
        while pending:
            event = pending.popleft()
            try:
                await self._handler(event)  # type: ignore[misc]
            except Exception as error:
                self._failed(error)
            except BaseException:
                pending.appendleft(event)
                raise


class Observed(list):  # type: ignore[type-arg]
    """The events of a run whose middleware observes them (``Stack.observers``): every
    event is recorded here, whatever the ``on_event`` handler (none, sync or async), so
    each observer is handed it as it is appended. Holds the run weakly (the run holds
    the list); an observer that raises is the run's failure, as a handler's is.
    ``notes`` is where that middleware keeps what it knows of the run, by middleware: it
    lives as long as the run (a thread the batch gave up on still finds it), and its
    hooks find it from the env they are handed (``DispatchEnv._notes``)."""

    __slots__ = ("_observers", "_run", "notes")

    def __init__(self, run: Run) -> None:
        super().__init__()
        self._run = weakref.ref(run)
        self._observers = run.stack.observers
        self.notes: dict[object, object] = {}

    def append(self, event: Event) -> None:
        list.append(self, event)
        run = self._run()
        if run is None:  # an abandoned thread's late event, after the dispatch
            return
        for observer in self._observers:
            try:
                observer(event, run.env)
            except Exception as error:
                run.fail(HostFailed(f"the event hook {_name(observer)}", error))

    def finished(self, result: DispatchResult) -> None:
        """Hand the batch's result to the middleware's result hooks (they must not raise:
        the result is made)."""
        run = self._run()
        if run is None:
            return
        for finisher in run.stack.finishers:
            finisher(result, run.env)


class Positions(NamedTuple):
    """Where a result's calls went, by their position in the batch: ids may repeat, so
    only positions tell which call a message answers (``api`` merges the two
    passes of ``on_deferred`` by them)."""

    #: The call each of ``DispatchResult.messages`` answers, in order.
    answered: tuple[int, ...]
    #: The call each of ``DispatchResult.deferred.all`` is, in order.
    deferred: tuple[int, ...]
    #: The calls that ran (``DispatchResult.executed``), in call order.
    executed: tuple[int, ...]


#: What a :meth:`Run.keep_positions` run's result recorded while it was the common one
#: (every call admitted, ran and answered): :meth:`Run.positioned` makes it on demand.
_COMMON = Positions((), (), ())

#: A batch's follow-ups, metadata by call id, and postponed calls by index.
_Extras = tuple[list[FollowUp], dict[str, dict[str, object]], dict[int, Postponed]]


class Run:
    """One dispatch's state, filled as the batch goes through the stages.

    It holds the middleware's view (``env``, a :class:`DispatchEnv`: the only object a
    hook receives) and keeps admission's bookkeeping among its own fields (what
    :class:`Admission` names: one object rather than two, see
    docs/concepts/performance.md).

    Every attribute is a slot, and there are no class-level defaults: a class-level
    default set on an instance would make its ``__dict__``, after which CPython 3.13
    no longer specializes the run's method calls (``run.finish``, ``run.result``) — nor
    3.11 and 3.12 once the process has made many runs (the shared keys of the type's
    instances then take no new name). Storing a slot costs each build, so
    :func:`new_run` builds one and stores the batch's
    inputs and what every batch reads; what only an unusual batch reads is stored when
    that batch needs it, and read only then: the failure and the fatal message once
    ``halted`` is set, ``recorded`` with a ledger, the postponed calls with the
    follow-ups and metadata (``extras``, made on first need). A dispatch given a
    synchronous ``on_event`` handler gets a :class:`Handled`.
    """

    __slots__ = (
        "__weakref__",
        "admitted",
        "answers",
        "caller_context",
        "calls",
        "cancellation",
        "cancelled",
        "emit",
        "env",
        "escaped",
        "events",
        "expired",
        "extras",
        "failure",
        "fatal",
        "halted",
        "injecting",
        "inputs",
        "ledger",
        "limited",
        "opens",
        "positions",
        "preflight",
        "recorded",
        "resume",
        "seen",
        "sink",
        "stack",
        "store",
        "used",
        "verdicts",
    )

    # Admission's fields (what :class:`Admission` names; documented there).
    env: DispatchEnv
    stack: Stack
    emit: Callable[[Event], None]
    opens: bool
    verdicts: list[Verdict]
    admitted: list[Admitted]
    preflight: bool
    resume: DeferredToolResults | None
    seen: set[str] | None
    limited: bool
    cancelled: Callable[[], bool] | None
    expired: Callable[[], bool] | None
    used: int
    injecting: bool

    #: The arguments dispatch was called with (a stage reads a keyword no other stage
    #: reads from here).
    inputs: DispatchInputs
    calls: tuple[ToolCall, ...]
    #: The ``contextvars`` context current when ``dispatch`` / ``dispatch_sync`` was
    #: called: each call's tool body runs in a copy of it (see ``_engine.execute``).
    caller_context: contextvars.Context
    events: list[Event]
    #: A call's answer by index; None from its start until it is answered (a call that
    #: is postponed leaves it).
    answers: dict[int, ToolMessage | None]
    #: The batch's follow-ups, metadata and postponed calls (by index), made on first
    #: need (most batches have none).
    extras: _Extras | None
    sink: Sink | None
    store: ArtifactStore | None
    ledger: EffectLedger | None
    cancellation: Cancellation | None
    #: Fatal or failed: no further call may start.
    halted: bool
    # Stored, and read, only once ``halted`` is set:
    #: The first hook or host callback that raised.
    failure: Exception | None
    #: The first fatal call's message.
    fatal: str | None
    #: What the host's ``on_event`` handler raised through a tool's ``Emit`` and the run
    #: does not keep (a ``BaseException`` that is no ``Exception``): the tool's failure
    #: handling re-raises it (stored, and read, only then: ``classify.next_attempt``).
    escaped: BaseException
    #: The ledger holds the admitted calls' started rows (stored, and read, only with a
    #: ledger).
    recorded: bool
    #: None, or a result records where its calls went (``on_deferred`` merges two passes
    #: by it): what the last result that is not the common one (every call ran and was
    #: answered) recorded, or :data:`_COMMON` (see :meth:`keep_positions`).
    positions: Positions | None

    # --- what the stages ask ------------------------------------------------------

    def _open_calls(self) -> None:
        """Admission opens each call from now on: the state it reads then is stored."""
        if not self.opens:
            self.opens = True
            self.seen = self.resume = self.cancelled = self.expired = None
            self.limited = False

    def admission(
        self, cancelled: Callable[[], bool] | None, expired: Callable[[], bool] | None, used: int
    ) -> None:
        """The stop checks and the slots already used, when a pass has any."""
        if not self.opens:
            self._open_calls()
        self.cancelled = cancelled
        self.expired = expired
        self.used = used
        self.limited = True

    def fail(self, error: Exception) -> None:
        """Record the first hook or host callback that raised: the batch must abort."""
        self._halt()
        if self.failure is None:
            self.failure = error

    def _halt(self) -> None:
        """No further call may start; ``failure`` and ``fatal`` are stored from now on."""
        if not self.halted:
            self.halted = True
            self.failure = self.fatal = None

    def keep_positions(self) -> None:
        """Have each result record where the batch's calls went (see :meth:`positioned`)."""
        self.positions = _COMMON

    # --- one call -----------------------------------------------------------------

    def start(self, item: Admitted) -> None:
        """The call's tool is about to run: record it and emit ``ToolStarted``.

        The call's answer slot holds None from here until :meth:`finish` fills it: a
        call with a slot started (its id is among ``executed``); every stage calls
        this before the tool, and :meth:`finish` only after it.
        """
        self.answers[item.index] = None
        tool = item.tool
        redactor = tool._plan.redactor  # shown_arguments, written out (one frame fewer)
        arguments = item.arguments if redactor is None else redactor.arguments(item.arguments)[0]
        self.emit(ToolStarted(call_id=item.call.id, tool_name=tool.name, arguments=arguments))

    def finish(self, item: Admitted, outcome: object) -> None:
        """Fold a call's outcome, record its answer and events, settle the ledger.

        Called once per call, after :meth:`start`. A hook or host callback that raises
        is recorded (:meth:`failed`): the call keeps no answer, and the batch aborts.
        """
        kind = type(outcome)
        if kind is Postponed:
            self._postpone(item, outcome)  # type: ignore[arg-type]
            return
        call, tool = item.call, item.tool
        name = tool.name
        if (
            not self.stack.afters
            and kind is not Failed
            and kind is not Fatal
            and kind is not ToolResult
            and (message := plain_message(call, name, outcome)) is not None
        ):
            # A plain value no hook sees (the common call): its message, as fold makes it.
            self.answers[item.index] = message
            self.emit(ToolCompleted(call_id=call.id, tool_name=name, metadata={}))
            if self.ledger is not None:
                self._settle(call, message)
            return
        try:
            message, event, follow_up, metadata = fold(
                call, name, outcome, self.stack.afters, self.env, self.store
            )
        except Exception as error:  # an after_tool hook, or the artifact store
            # A tool that raised, timed out or was interrupted is answered with that, as
            # no hook saw it; only a result the tool did return can have been lost.
            kept = outcome if kind is Failed or kind is Fatal else None
            message, event, follow_up, metadata = self._lost(error, call, name, kept)
        self.answers[item.index] = message
        if follow_up or metadata:
            self._extras(call, follow_up, metadata)
        self.emit(event)
        if self.ledger is not None:
            self._settle(call, message)
        if kind is Fatal:
            self._halt()
            if self.fatal is None:
                self.fatal = outcome.message  # type: ignore[attr-defined]

    def _postpone(self, item: Admitted, outcome: Postponed) -> None:
        """The tool raised ``ApprovalRequired`` or ``CallDeferred``: the call is deferred."""
        call = item.call
        self._extra()[2][item.index] = outcome
        self.answers.pop(item.index, None)  # started, and answered by no message
        if self.ledger is not None:  # deferred before acting: it may start again
            self._release(call)
        self.emit(
            ToolDeferred(
                call_id=call.id,
                tool_name=item.tool.name,
                reason=outcome.kind,
                metadata=outcome.metadata,
            )
        )

    def resolved(self, verdict: Resolved) -> None:
        """A denied or host-answered call (on resume): answered like any other, never run."""
        call = verdict.call
        tool = self.env.tools.get(call.name)
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        if tool is not None:
            arguments = shown_arguments(tool, arguments)
        name = tool.name if tool else printable(call.name)  # (a lone surrogate escaped)
        self.emit(ToolStarted(call_id=call.id, tool_name=name, arguments=arguments))
        result = verdict.result
        message, event, follow_up, metadata = self._fold(call, name, result, result)
        if verdict.status == "denied":  # denied stays denied, whatever the hooks made of it
            message = msgspec.structs.replace(message, is_error=True, status="denied")
            if isinstance(event, ToolCompleted):
                event = msgspec.structs.replace(event, is_error=True)
        self._answer(verdict.index, call, message, event, follow_up, metadata)
        if self.ledger is not None:  # its tool may have deferred it: close its row
            self._settle(call, message, answered=True)

    def _fold(self, call: ToolCall, name: str, outcome: object, fallback: object) -> Folded:
        """:func:`fold` through the ``after_tool`` hooks (see :meth:`_lost` when one raises)."""
        try:
            return fold(call, name, outcome, self.stack.afters, self.env, self.store)
        except Exception as error:
            return self._lost(error, call, name, fallback)

    def _lost(self, error: Exception, call: ToolCall, name: str, fallback: object) -> Folded:
        """An ``after_tool`` hook (or the artifact store) raised while a call was folded:
        the failure is recorded (the batch aborts) and the call is still answered — with
        ``fallback`` as no hook saw it, or, for a call whose tool ran, an error saying its
        result was lost."""
        failed = (
            error
            if isinstance(error, HookFailed)
            else HostFailed("the artifact store", error, raised=not isinstance(error, PutReturned))
        )
        self.fail(failed)
        if fallback is None:  # the model hears what happened, not the host's internals
            where = "an after_tool hook" if isinstance(error, HookFailed) else "storing it"
            fallback = Failed(
                type(failed).__name__,
                f"Tool `{name}` ran, but its result was lost: {where} failed.",
            )
        return fold(call, name, fallback, (), self.env, None)

    def _answer(
        self,
        index: int,
        call: ToolCall,
        message: ToolMessage,
        event: Event,
        follow_up: tuple[ContentBlock, ...],
        metadata: dict[str, object] | None,
    ) -> None:
        started = index in self.answers
        self.answers[index] = message
        if follow_up or metadata:
            self._extras(call, follow_up, metadata)
        self.emit(event)
        if self.ledger is not None and started:
            self._settle(call, message)

    def _extras(
        self,
        call: ToolCall,
        follow_up: tuple[ContentBlock, ...],
        metadata: dict[str, object] | None,
    ) -> None:
        if follow_up:
            self._extra()[0].append(FollowUp(call.id, follow_up))
        if metadata:
            self._extra()[1][call.id] = metadata

    def _extra(self) -> _Extras:
        """The batch's follow-ups, metadata and postponed calls (made on first need: most
        batches have none)."""
        extras = self.extras
        if extras is None:
            extras = self.extras = ([], {}, {})
        return extras

    def _settle(self, call: ToolCall, message: ToolMessage, answered: bool = False) -> None:
        """Settle the call's row (a host-answered deferred call: see ``settle_answered``).

        A ledger that fails is recorded (the batch aborts). The calls that never ran are
        still settled (a lost connection is made again), but a write that fails while the
        batch is already aborting is the batch's last: a locked database or a server
        that is down is not waited out once per call; the rows left open read as
        unresolved, which ``reconcile`` answers.
        """
        assert self.ledger is not None
        try:
            if answered:
                settle_answered(self.ledger, self.env.context.run_id, call.id, message.status)
            else:
                self.ledger.settled(self.env.context.run_id, call.id, message.status)
        except Exception as error:
            if self.halted and self.failure is not None:  # aborting: no further write
                self.ledger = None
            self.fail(HostFailed("the effect ledger's settled()", error))

    def _release(self, call: ToolCall) -> None:
        assert self.ledger is not None
        try:
            release(self.ledger, self.env.context.run_id, call.id)
        except Exception as error:
            if self.halted and self.failure is not None:  # (as _settle)
                self.ledger = None
            self.fail(HostFailed("the effect ledger's release()", error))

    def interrupt(self, stop: Stop) -> None:
        """Answer started-but-unfinished calls as interrupted (their events included)."""
        answers = self.answers
        for item in self.admitted:
            index = item.index
            if index in answers and answers[index] is None:  # started, not answered
                self.finish(item, interrupted(stop))

    # --- the result ---------------------------------------------------------------

    def result(self, stop: Stop | None = None) -> DispatchResult:
        """The result in call order; calls left unanswered are answered as interrupted
        (by ``stop``: the batch was cancelled, when no stop is given). Every message is
        cut to its byte limit here, and only here (``fold.bounded``): a tool's result
        and every answer dispatch wrote itself alike."""
        calls, answers = self.calls, self.answers
        count = len(calls)
        done = None
        if len(answers) == count and len(self.admitted) == count and self.extras is None:
            # Every call admitted, run and (unless one is still marked started) answered,
            # no follow-up or metadata: the messages are the answers (read with map,
            # which makes no frame per dispatch as a comprehension does; one call, the
            # most common batch, needs no iterator at all).
            if count == 1:
                answer = answers[0]
                if answer is not None:  # (every field given by position: no keyword to match)
                    done = DispatchResult(
                        (answer,), tuple(self.events), None, (), {}, (calls[0].id,)
                    )
            elif None not in answers.values():
                done = DispatchResult(
                    tuple(map(answers.__getitem__, range(count))),  # type: ignore[arg-type]
                    tuple(self.events),
                    executed=tuple(map(_call_id, calls)),
                )
        if done is None:
            done = self._collected(stop)
        limit = self.env.policy.max_result_bytes
        try:  # own_limits, its memo read written out (one frame fewer)
            limited = limit is not None or self.env.tools._limited
        except AttributeError:
            limited = own_limits(self.env.tools)
        if type(self.events) is Observed:  # (its middleware is told of every answer)
            self.events.finished(done)
        return bounded(done, self.env.tools, limit) if limited else done

    def _collected(self, stop: Stop | None) -> DispatchResult:
        """:meth:`result` of a batch not every call of which ran and was answered plainly
        (before any cut): the verdicts' answers, the deferred calls, what is left
        answered as interrupted."""
        calls, answers = self.calls, self.answers
        extras = self.extras
        follow_ups: tuple[FollowUp, ...] = ()
        metadata: dict[str, dict[str, object]] = {}
        postponements: dict[int, Postponed] = {}
        if extras is not None:
            follow_ups, metadata, postponements = tuple(extras[0]), extras[1], extras[2]
        if stop is None:
            stop = Stop.CANCELLED
        aborted = stop is Stop.ABORTED
        messages = []
        deferred_calls: list[ToolCall] = []
        approvals: list[ToolCall] = []
        deferred_meta: dict[str, dict[str, object]] = {}
        executed = []
        # Positions, alongside: the call each message answers, each deferred call (host
        # calls, approvals), each call that ran.
        answered_at: list[int] = []
        calls_at: list[int] = []
        approvals_at: list[int] = []
        executed_at: list[int] = []
        verdicts = self.verdicts
        for index, call in enumerate(calls):
            verdict = verdicts[index] if index < len(verdicts) else None
            kind = type(verdict)
            if kind is Admitted:
                postponed = postponements.get(index)
                if index in answers or postponed is not None:  # it started
                    executed.append(call.id)
                    executed_at.append(index)
                if postponed is not None:
                    carry = carried(call)  # (as admission defers a call: it encodes)
                    if postponed.kind == "approval":
                        approvals.append(carry)
                        approvals_at.append(index)
                    else:
                        deferred_calls.append(carry)
                        calls_at.append(index)
                    deferred_meta[call.id] = postponed.metadata
                    continue
            elif kind is Skipped:
                continue
            elif kind is Answered or kind is Abort:
                messages.append(verdict.message)  # type: ignore[union-attr]
                answered_at.append(index)
                continue
            elif kind is Deferred and not aborted:
                assert isinstance(verdict, Deferred)
                if verdict.kind == "approval":
                    approvals.append(verdict.call)
                    approvals_at.append(index)
                else:
                    deferred_calls.append(verdict.call)
                    calls_at.append(index)
                deferred_meta[call.id] = verdict.metadata
                continue
            answer = answers.get(index)
            if answer is None:
                answer = error_message(shown_name(call), not_run(stop), "interrupted")
                if kind is Admitted and self.ledger is not None and self.recorded:
                    # in the ledger, never ran
                    self._settle(call, answer)
            messages.append(answer)
            answered_at.append(index)
        deferred = None
        if deferred_calls or approvals:
            deferred = DeferredToolRequests(tuple(deferred_calls), tuple(approvals), deferred_meta)
        if self.positions is not None:  # kept only for on_deferred's merge
            self.positions = Positions(
                tuple(answered_at), tuple(calls_at + approvals_at), tuple(executed_at)
            )
        return DispatchResult(
            tuple(messages), tuple(self.events), deferred, follow_ups, metadata, tuple(executed)
        )

    def positioned(self) -> Positions:
        """Where the calls of the last :meth:`result` went, by position in the batch (a
        run told to :meth:`keep_positions`)."""
        positions = self.positions
        if positions is not None and positions is not _COMMON:
            return positions
        every = tuple(range(len(self.calls)))  # the common result: every call ran, answered
        return Positions(every, (), every)

    def abort(self, reason: str) -> DispatchAborted:
        """The exception for an aborted batch, its result answering every call."""
        return DispatchAborted(reason, self.result(Stop.ABORTED))


class Handled(Run):
    """The run of a dispatch given a synchronous ``on_event`` handler, which gets each
    event as it happens.

    Its :meth:`emit` is a method of the run itself — no sink object per dispatch, no
    weak reference, and one frame per event. (An async handler's run is a plain
    :class:`Run`, whose ``emit`` is its :class:`Sink`'s ``queue``.)

    No lock is held while the handler runs (a handler may cancel the batch, or be
    called from a tool's worker thread). An exception from the handler does not unwind
    the stage that emitted the event: the first one is kept as the run's failure, and
    dispatch aborts the batch at the next stage boundary, with every call answered. A
    late event from an abandoned tool thread is recorded on a run whose dispatch is
    over, and changes nothing.
    """

    __slots__ = ("on_event",)

    #: The synchronous handler (unset for an async one, whose sink has it).
    on_event: Callable[[Event], object]

    def emit(self, event: Event) -> None:
        """Record ``event`` and hand it to the handler."""
        self.events.append(event)
        handler = self.on_event  # a slot: read, then called (no method lookup)
        try:
            returned = handler(event)
        except Exception as error:
            self.fail(HostFailed(f"the on_event handler {_name(handler)}", error))
        else:
            if returned is not None and inspect.isawaitable(returned):
                self._unawaited(returned)

    def _unawaited(self, returned: Awaitable[object]) -> None:
        """A handler read as synchronous returned an awaitable (``lambda e: queue.put(e)``):
        nothing would await it, so the event would be lost in silence — the run fails."""
        if inspect.iscoroutine(returned):
            returned.close()
        error = TypeError(
            f"it returned {type(returned).__name__}, which dispatch does not await: "
            "make the handler an `async def` function (or `await` inside one)"
        )
        self.fail(HostFailed(f"the on_event handler {_name(self.on_event)}", error, raised=False))


def new_run(inputs: DispatchInputs) -> Run:
    """Check dispatch's inputs and build the batch's :class:`Run` from them (the
    registry ``tools`` stands for, the composed middleware).

    A function rather than ``Run.__init__``: calling a class whose ``__init__`` is
    written in Python costs about 0.2 µs more per dispatch on CPython 3.11 (the call
    goes through the type's C slots); this makes the bare object (``Run`` has
    object's ``__init__``) and fills it.

    Raises:
        TypeError: ``calls`` is not a sequence of ``ToolCall`` values (one call not in a
            list included), a call's id or name is not a ``str`` (see ``host_calls``),
            ``policy``/``approvals`` has the wrong type, ``on_event`` cannot be called,
            or ``store`` has no ``put`` to call (or comes with a ``context`` that is no
            ``Context``: the store is told its ``run_id``).
    """
    calls = inputs.calls
    tools = inputs.tools
    policy = inputs.policy
    context = inputs.context
    on_event = inputs.on_event
    if type(calls) is not tuple:
        try:
            calls = tuple(calls)  # read an iterator once
        except TypeError:
            refuse_non_batch(calls)  # one ToolCall, or nothing iterable: say so
            raise
    if (  # (one call of plain text: no iterator made)
        len(calls) != 1
        or type(call := calls[0]) is not ToolCall
        or type(call.id) is not str
        or type(call.name) is not str
    ):
        calls = host_calls(calls)
        # One call cannot repeat an id, nor can a batch whose ids are all distinct
        # (told at once, in C): only a batch that repeats one checks each call's id.
        repeats = len(calls) > 1 and len(set(map(_call_id, calls))) != len(calls)
    else:
        repeats = False
    queued = None  # an async on_event handler, which the run's Sink awaits
    if on_event is None:
        run: Run = Run()
    elif _LAST_SYNC_HANDLER[0]() is on_event or not _is_async_handler(on_event):
        # The run (a Handled) hands each event to the handler itself: no sink to build,
        # no weak reference. A handler that raises halts the run, and no call starts
        # after that (see dispatch).
        run = Handled()
        run.on_event = on_event
    else:
        run = Run()
        queued = on_event
    if type(tools) is not Registry:
        tools = _registry(tools, context, calls)
    run.env = env = DispatchEnv(tools, policy, context, inputs.advertised)
    run.inputs = inputs
    # (what only an unusual batch reads is stored when it is needed: see Run)
    run.opens = run.preflight = run.injecting = False
    run.positions = run.extras = run.sink = None
    if env._intrinsics is not None:  # discovery's tools: admission opens every call
        run._open_calls()
    run.calls = calls
    # (any other empty sequence is found empty by composed)
    middleware = inputs.middleware
    if middleware is _NO_HOOKS:
        run.stack = NO_MIDDLEWARE
    else:  # (a middleware that would record nothing now is left out: Stack.now)
        stack = composed(middleware)
        run.stack = stack.now() if stack.gates else stack
    store = inputs.artifacts
    if store is not None:  # (used only once a tool returned artifacts: checked now)
        check_store(store)
        if context is not None:  # the store is told the context's run_id
            check_context_type(context)
    run.store = store
    run.ledger = ledger = inputs.ledger
    run.cancellation = inputs.cancellation
    run.halted = False  # fatal or failed: no further call may start
    run.used = 0  # no max_tool_calls slot taken yet
    if run.stack.observers:  # this package's own middleware (tinytools.otel) observes
        run.events = events = Observed(run)
        env._notes = events.notes  # what it keeps of the batch, found from its hooks' env
    else:
        run.events = []
    # A call's answer by index; None from its start until it is answered (a call
    # that is postponed leaves it).
    run.answers = {}
    # The admitted calls are the verdicts themselves while every verdict is Admitted
    # (dispatch's preflight keeps a list of its own once one is not).
    run.verdicts = run.admitted = []  # type: ignore[assignment]
    if on_event is None:
        run.emit = run.events.append
    elif queued is not None:  # an async handler needs the event loop
        sink = run.sink = Sink(run, queued)
        run.emit = sink.queue
        run.preflight = True
    if repeats:
        run._open_calls()
        run.seen = set()
    if (resume := inputs.approvals) is not None:
        if not isinstance(resume, DeferredToolResults):  # (here: no cost without one)
            raise TypeError(f"approvals must be a DeferredToolResults, got {type(resume).__name__}")
        run._open_calls()
        run.resume = resume
        run.preflight = True
    if ledger is not None:
        run.preflight = True
        run.recorded = False
    if policy is not DEFAULT_POLICY:  # its limits (the default policy has none)
        if not isinstance(policy, RunPolicy):  # (here: the default policy pays nothing)
            raise TypeError(f"policy must be a RunPolicy, got {type(policy).__name__}")
        if policy.tool_timeout is not None:
            run.preflight = True
        most = policy.max_tool_calls
        if most is not None:
            # A batch that nothing else opens and that cannot reach the limit takes
            # every call's slot at once (a deferred call gives its back): admission
            # checks nothing per call. Otherwise each call takes its slot as admission
            # opens it. (A pass with stop checks or slots already used sets both anew:
            # Admission.admission.)
            count = len(calls)
            if run.opens or count > most:
                run._open_calls()
                run.limited = True
            else:
                run.used = count
    return run
