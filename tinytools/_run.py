"""One dispatch's state: the event sink, the options, the run being filled in.

:func:`prepare` builds it once per batch and every stage fills it; nothing here
decides anything (admission, execution and folding do). :func:`assemble` turns
it into the ``DispatchResult`` in call order, answering whatever is left
unanswered as interrupted, and :func:`abort_batch` wraps that in the
``DispatchAborted`` an aborted batch raises.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Collection, Iterable

import attrs
import msgspec

from ._admit import Abort, Admitted, Answered, Deferred, Resolved, Skipped, Verdict, error_message
from ._approvals import DeferredToolRequests, DeferredToolResults
from ._artifacts import ArtifactStore
from ._dispatch_env import DispatchEnv
from ._effects import EffectLedger
from ._execute import Attempts
from ._fold import Fatal, Folded, Outcome, fold
from ._inject import Context
from ._middleware import Stack, compose
from ._registry import AnyTool, Registry
from ._result import DispatchAborted, DispatchResult, FollowUp
from ._spec import is_async_function
from ._wire import ToolCall, ToolMessage
from .events import Event
from .policies import RunPolicy

__all__ = [
    "EventHandler",
    "NO_MIDDLEWARE",
    "Options",
    "Run",
    "Sink",
    "abort_batch",
    "assemble",
    "middleware_stack",
    "prepare",
]

#: What ``on_event`` may be: a plain callable, or an async one.
EventHandler = Callable[[Event], object] | Callable[[Event], Awaitable[object]]


class Sink:
    """Collects events in order and hands them to ``on_event`` live."""

    def __init__(self, on_event: EventHandler | None) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()
        self._async = is_async_function(on_event)
        self._handler = on_event
        self._pending: list[Event] = []

    @property
    def is_async(self) -> bool:
        return self._async

    def emit(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)
            if self._async:
                self._pending.append(event)
            elif self._handler is not None:
                self._handler(event)

    @property
    def pending(self) -> bool:
        """Whether events wait for an async ``on_event``."""
        return bool(self._pending)

    async def flush(self) -> None:
        while self._pending:
            with self._lock:
                batch, self._pending = self._pending, []
            for event in batch:
                await self._handler(event)  # type: ignore[misc]


@attrs.define
class Run:
    """One dispatch's state: built by :func:`_prepare`, filled as calls finish."""

    calls: tuple[ToolCall, ...]
    env: DispatchEnv
    stack: Stack
    sink: Sink
    store: ArtifactStore | None
    ledger: EffectLedger | None
    resume: DeferredToolResults | None = None
    verdicts: list[Verdict] = attrs.Factory(list)
    folded: dict[int, Folded] = attrs.Factory(dict)
    resolved: dict[int, Folded] = attrs.Factory(dict)
    started: set[int] = attrs.Factory(set)
    fatal: str | None = None
    _admitted: list[Admitted] | None = None

    def is_fatal(self) -> bool:
        return self.fatal is not None

    def admitted(self) -> list[Admitted]:
        if self._admitted is None:
            self._admitted = [v for v in self.verdicts if isinstance(v, Admitted)]
        return self._admitted

    def attempts(self, item: Admitted) -> Attempts:
        return Attempts(item, self.env, self.sink.emit, self.started)

    def settle(self, item: Admitted, outcome: Outcome) -> None:
        """:meth:`finish`, then abort the batch if the call was fatal.

        Raises:
            DispatchAborted: The call raised ``FatalToolError``.
        """
        self.finish(item, outcome)
        if self.fatal is not None:
            raise abort_batch(self, self.fatal)

    def finish(self, item: Admitted, outcome: Outcome) -> None:
        """Fold a call's outcome, record it, emit its events, settle the ledger."""
        folded = fold(item, outcome, self.env, self.stack, self.store)
        self.folded[item.index] = folded
        for event in folded.events:
            self.sink.emit(event)
        if self.ledger is not None and folded.message is not None:
            self.ledger.settled(self.env.context.run_id, item.call.id, folded.message.status)
        if isinstance(outcome, Fatal) and self.fatal is None:
            self.fatal = outcome.message


class Options(msgspec.Struct, frozen=True):
    """The dispatch arguments every stage reads (a resumed batch shares them too)."""

    policy: RunPolicy
    stack: Stack  # the middleware, composed once: a resumed batch reads an iterator too
    context: Context | None
    advertised: Collection[str] | None
    ledger: EffectLedger | None
    artifacts: ArtifactStore | None


def _registry(tools: Registry | Iterable[AnyTool]) -> Registry:
    return tools if isinstance(tools, Registry) else Registry(tools)


def prepare(
    calls: Iterable[ToolCall],
    tools: Registry | Iterable[AnyTool],
    o: Options,
    approvals: DeferredToolResults | None,
    sink: Sink,
) -> Run:
    """Check the inputs and build the run's state (registry, callable names, middleware)."""
    policy, advertised = o.policy, o.advertised
    batch = tuple(calls)
    for call in batch:
        if not isinstance(call, ToolCall):
            raise TypeError(f"dispatch takes ToolCall values, got {type(call).__name__}: {call!r}")
    if approvals is not None and not isinstance(approvals, DeferredToolResults):
        raise TypeError(f"approvals must be a DeferredToolResults, got {type(approvals).__name__}")
    registry = _registry(tools)
    offered = None if advertised is None else frozenset(advertised)
    env = DispatchEnv(registry, policy, o.context or Context(), offered)
    return Run(batch, env, o.stack, sink, o.artifacts, o.ledger, approvals)


NO_MIDDLEWARE = Stack()


def middleware_stack(middleware: Iterable[object]) -> Stack:
    """Compose ``dispatch``'s middleware argument once (see :func:`compose`)."""
    return NO_MIDDLEWARE if middleware == () else compose(middleware)


def abort_batch(run: Run, reason: str) -> DispatchAborted:
    """The exception for an aborted batch, its result answering every call."""
    return DispatchAborted(reason, assemble(run, aborted=reason))


_INTERRUPTED = "Tool call not run: the batch was {why}."


def assemble(run: Run, *, aborted: str | None = None, why: str = "cancelled") -> DispatchResult:
    """The result in call order; calls left unanswered are answered as interrupted."""
    why = "aborted" if aborted is not None else why
    messages: list[ToolMessage] = []
    deferred_calls: list[ToolCall] = []
    approvals: list[ToolCall] = []
    deferred_meta: dict[str, dict[str, object]] = {}
    follow_ups: list[FollowUp] = []
    metadata: dict[str, dict[str, object]] = {}
    executed: list[str] = []
    for index, call in enumerate(run.calls):
        verdict = run.verdicts[index] if index < len(run.verdicts) else None
        folded = run.folded.get(index)
        if isinstance(verdict, Skipped):
            continue
        if isinstance(verdict, (Answered, Abort)):
            messages.append(verdict.message)
        elif isinstance(verdict, Resolved) and index in run.resolved:
            answer = run.resolved[index].message
            assert answer is not None
            messages.append(answer)
        elif isinstance(verdict, Deferred) and aborted is None:
            (approvals if verdict.kind == "approval" else deferred_calls).append(verdict.call)
            deferred_meta[call.id] = verdict.metadata
        elif folded is not None:
            executed.append(call.id)
            if folded.postponed is not None:
                assert isinstance(verdict, Admitted)  # only admitted calls are folded
                kind = folded.postponed.kind
                (approvals if kind == "approval" else deferred_calls).append(verdict.call)
                deferred_meta[call.id] = folded.postponed.metadata
                continue
            assert folded.message is not None
            messages.append(folded.message)
            if folded.follow_up:
                follow_ups.append(FollowUp(call.id, folded.follow_up))
            if folded.metadata:
                metadata[call.id] = folded.metadata
        else:
            messages.append(error_message(call, _INTERRUPTED.format(why=why), "interrupted"))
    deferred = None
    if deferred_calls or approvals:
        deferred = DeferredToolRequests(tuple(deferred_calls), tuple(approvals), deferred_meta)
    return DispatchResult(
        tuple(messages),
        tuple(run.sink.events),
        deferred,
        tuple(follow_ups),
        metadata,
        tuple(executed),
    )
