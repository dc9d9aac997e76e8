"""What one dispatch was asked: :class:`DispatchInputs`, the arguments of ``dispatch`` and
``dispatch_sync`` as one frozen value, from which ``state.new_run`` builds the run.

A dispatch keyword is a field here, read by the stage that uses it
(docs/concepts/pipeline.md: "to add a dispatch keyword, touch …").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable

import msgspec

from tinytools._artifacts import ArtifactStore
from tinytools._declare.registry import AnyTool, Registry
from tinytools._inject import Cancellation, Context
from tinytools._middleware import Stack
from tinytools._wire import ToolCall
from tinytools.events import Event
from tinytools.policies import RunPolicy
from tinytools.toolsets._base import Toolset

from .effects import EffectLedger
from .resume import DeferredToolResults

__all__ = ["DEFAULT_POLICY", "DispatchInputs", "EventHandler"]

#: dispatch's default policy (recognised by identity: it has no limits).
DEFAULT_POLICY = RunPolicy()

#: What ``on_event`` may be: a plain callable, or an async one.
EventHandler = Callable[[Event], object] | Callable[[Event], Awaitable[object]]


class DispatchInputs(msgspec.Struct, frozen=True):
    """``dispatch``'s and ``dispatch_sync``'s arguments, as the caller passed them (one
    value per keyword, named as the keyword is), which ``state.new_run`` builds a run from.

    Nothing is checked here: each stage checks what it reads (``state.new_run`` the types
    of most). The run keeps it (``Run.inputs``): a keyword added here is read from there
    by the stage that uses it, and the inline ``on_deferred`` resume copies it with the
    first pass's resolved registry, middleware and context (``api._resumed``).

    A frozen msgspec ``Struct`` rather than attrs: built once per dispatch, in C (about
    0.2 µs with every keyword given; a frozen attrs class takes about 1.3 µs, a quarter
    of a plain ``dispatch_sync``).
    """

    calls: Iterable[ToolCall]
    tools: Registry | Toolset | Iterable[AnyTool]
    policy: RunPolicy = DEFAULT_POLICY
    middleware: Iterable[object] | Stack = ()
    context: Context | None = None
    advertised: Collection[str] | None = None
    approvals: DeferredToolResults | None = None
    ledger: EffectLedger | None = None
    on_event: EventHandler | None = None
    artifacts: ArtifactStore | None = None
    cancellation: Cancellation | None = None
