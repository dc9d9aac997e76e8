"""One dispatch's state: the event sink, the options, and the run being filled in.

Built once per batch by ``_dispatch._prepare`` and passed to every stage; nothing
here decides anything (admission, execution and folding do).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Callable, Collection, Iterable

import attrs
import msgspec

from ._admit import Admitted, Verdict
from ._approvals import DeferredToolResults
from ._artifacts import ArtifactStore
from ._dispatch_env import DispatchEnv
from ._effects import EffectLedger
from ._execute import Attempts
from ._fold import Fatal, Folded, Outcome, fold
from ._inject import Context
from ._middleware import Stack
from ._wire import ToolCall
from .events import Event
from .policies import RunPolicy

__all__ = ["EventHandler", "Options", "Run", "Sink"]

#: What ``on_event`` may be: a plain callable, or an async one.
EventHandler = Callable[[Event], object] | Callable[[Event], Awaitable[object]]


class Sink:
    """Collects events in order and hands them to ``on_event`` live."""

    def __init__(self, on_event: EventHandler | None) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()
        self._async = on_event is not None and inspect.iscoroutinefunction(on_event)
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
        def emit(event: Event) -> None:
            if event.__class__.__name__ == "ToolStarted":
                self.started.add(item.index)
            self.sink.emit(event)

        return Attempts(item, self.env, emit)

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
    middleware: Iterable[object]
    context: Context | None
    advertised: Collection[str] | None
    ledger: EffectLedger | None
    artifacts: ArtifactStore | None
