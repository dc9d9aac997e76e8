"""Runtime injection: what a tool may receive that the model never sees.

A parameter annotated ``Inject[T]`` is filled by tinytools when the call runs,
never by the model: it is left out of the schema, and a model argument with
its name is a schema violation (invariant 4). What ``T`` draws from:

=========================  ===================================================
``RunContext``             run id, thread id, depth and deadline of this run
``CallId``                 the id of the call being executed
``ToolCall``               the admitted call itself
``Cancellation``           a handle to observe cancellation of the batch
``Emit``                   emits a ``Custom`` event tied to this call
``Store[T]``               the context's ``store``
``State[T]``               the context's ``state`` (the caller's state object)
any other type ``T``       ``Context.values[T]`` (looked up by exact type)
=========================  ===================================================

``Inject[T | None]`` (or a parameter with a default) is satisfied even when
the context has nothing to give; every other injection the context cannot
satisfy is reported by :func:`check_context` as one ``ToolDefinitionError``
before any tool runs.

This module is the one place injection is resolved: :func:`plan_injection`
classifies a parameter once, at decoration; :func:`bind` fills the keyword
arguments for one call.
"""

from __future__ import annotations

import contextlib
import enum
import itertools
import os
import threading
import types
import typing
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, NewType, Protocol, TypeAlias, TypeVar, Union

import attrs

from ._wire import ToolCall
from .errors import ToolDefinitionError

__all__ = [
    "CallId",
    "CallRuntime",
    "Cancellation",
    "Context",
    "Emit",
    "Inject",
    "Injection",
    "RunContext",
    "Source",
    "State",
    "Store",
    "bind",
    "check_context",
    "check_context_type",
    "plan_injection",
]

T = TypeVar("T")


class _Marker:
    """An ``Annotated`` metadata marker with a readable repr."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"tinytools.{self._name}"


_INJECT = _Marker("Inject")
_STATE = _Marker("State")
_STORE = _Marker("Store")

#: ``Inject[T]``: a parameter of type ``T`` filled at run time, hidden from the model.
Inject: TypeAlias = Annotated[T, _INJECT]
#: ``State[T]``: the caller's state object (``Context.state``), typed as ``T``.
State: TypeAlias = Annotated[T, _STATE]
#: ``Store[T]``: the context's store (``Context.store``), typed as ``T``.
Store: TypeAlias = Annotated[T, _STORE]
#: The id of the call being executed (a ``str``).
CallId = NewType("CallId", str)


# Run ids: a random per-process prefix and a counter — unique, and far cheaper than a
# uuid4 per dispatch (which reads the OS's entropy source every time). A forked child
# draws a prefix of its own: it would otherwise repeat its parent's ids, and a ledger
# shared by the two would refuse the child's calls as already started.
_RUN_PREFIX = uuid.uuid4().hex[:12]
_RUN_COUNTER = itertools.count(1)


def _new_run_id() -> str:
    return f"run-{_RUN_PREFIX}-{next(_RUN_COUNTER)}"


def _new_run_prefix() -> None:
    global _RUN_PREFIX, _RUN_COUNTER
    _RUN_PREFIX = uuid.uuid4().hex[:12]
    _RUN_COUNTER = itertools.count(1)


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_new_run_prefix)


def _run_id(value: str | None) -> str:
    # `Context(run_id=None)` (the documented default, spelt out) also gets a fresh id.
    return _new_run_id() if value is None else value


_NO_VALUES: Mapping[type[object], object] = types.MappingProxyType({})


def _freeze_values(values: Mapping[type[object], object]) -> Mapping[type[object], object]:
    return types.MappingProxyType(dict(values)) if values else _NO_VALUES


@attrs.frozen
class Context:
    """What injection draws from; passed to dispatch as ``context=``.

    Attributes:
        run_id: This run's id; a fresh one when not given (unique within the process
            and the processes forked from it).
        thread_id: The conversation thread, if the host has one.
        depth: Nesting depth (0 for a top-level run, 1 for a sub-agent, …).
        state: The caller's state object, injected as ``State[T]``.
        store: The caller's store, injected as ``Store[T]``.
        values: Type → instance, injected for ``Inject[ThatType]``.
    """

    run_id: str = attrs.field(default=None, converter=_run_id)
    thread_id: str | None = None
    depth: int = 0
    state: object = None
    store: object = None
    values: Mapping[type[object], object] = attrs.field(
        default=_NO_VALUES, converter=_freeze_values
    )


@attrs.frozen
class RunContext:
    """The run as one call sees it (built from the :class:`Context` per call).

    Attributes:
        run_id: The run's id.
        thread_id: The conversation thread, if any.
        depth: Nesting depth of the run.
        deadline: The run's deadline on the event loop's clock, if any.
        approved: Whether a human approved this call (a tool that raises
            ``ApprovalRequired`` checks it so it does not ask twice).
    """

    run_id: str
    thread_id: str | None = None
    depth: int = 0
    deadline: float | None = None
    approved: bool = False


class Cancellation:
    """A cancellation flag: a caller cancels a batch with it, a tool observes it.

    Pass one to ``dispatch(..., cancellation=handle)`` and call
    :meth:`cancel` (from any thread) to stop the batch: calls not yet run
    are answered as interrupted, running async calls are cancelled. A tool
    that injects ``Inject[Cancellation]`` gets its call's own handle, set when
    the batch is cancelled or the call times out; long-running synchronous
    tools should poll :attr:`cancelled` and stop early. One handle may be shared
    by many batches at once, in several threads or event loops (a server's
    shutdown): cancelling it stops them all; the callbacks a batch registers are
    removed when it ends.
    """

    __slots__ = ("_callbacks", "_cancelled", "_lock")

    def __init__(self) -> None:
        self._cancelled = False
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        """True once cancelled."""
        return self._cancelled

    def cancel(self) -> None:
        """Cancel (idempotent; safe from any thread).

        Every callback registered with :meth:`on_cancel` is called, newest first (as a
        stack unwinds: the running calls a batch linked to this handle are told before
        the batch's event loop is woken to cancel them, so an async tool finds its own
        handle set when the cancellation reaches it), even when one raises (a handle
        shared by many batches stops them all); then the first exception a callback
        raised, if any, is raised here.
        """
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks, self._callbacks = self._callbacks, []
        failed: BaseException | None = None
        for callback in reversed(callbacks):
            try:
                callback()
            except BaseException as error:  # the others are still told; raised below
                if failed is None:
                    failed = error
        if failed is not None:
            try:
                raise failed
            finally:
                del failed  # no cycle through this frame's traceback

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` when cancelled (now, if already); returns an unsubscribe."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return lambda: self._forget(callback)
        callback()
        return lambda: None

    def _forget(self, callback: Callable[[], None]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    def __repr__(self) -> str:
        return f"Cancellation(cancelled={self.cancelled})"


@attrs.frozen
class Emit:
    """Emits a custom event tied to the running call: ``emit("progress", {"pct": 40})``.

    The event reaches dispatch's ``on_event`` handler while the tool runs (see
    ``dispatch``), and an MCP client as a progress notification (``formats.mcp.server``).
    """

    _sink: Callable[[str, object], None] = attrs.field(alias="sink")

    def __call__(self, name: str, data: object = None) -> None:
        """Emit event ``name`` with a JSON-encodable ``data`` payload."""
        self._sink(name, data)


class Source(enum.Enum):
    """Where an injected value comes from."""

    RUN_CONTEXT = "run_context"
    CALL_ID = "call_id"
    TOOL_CALL = "tool_call"
    CANCELLATION = "cancellation"
    EMIT = "emit"
    STORE = "store"
    STATE = "state"
    VALUE = "value"


_BUILTIN: dict[object, Source] = {
    RunContext: Source.RUN_CONTEXT,
    CallId: Source.CALL_ID,
    ToolCall: Source.TOOL_CALL,
    Cancellation: Source.CANCELLATION,
    Emit: Source.EMIT,
}


@attrs.frozen
class Injection:
    """One injected parameter, classified once at decoration.

    Attributes:
        name: The parameter name.
        source: Where its value comes from.
        key: For ``Source.VALUE``, the type looked up in ``Context.values``.
        optional: True when nothing to inject is acceptable (the annotation
            admits ``None``, or the parameter has a default).
        default: The parameter's default, used when optional and unsatisfied.
    """

    name: str
    source: Source
    key: type[object] | None = None
    optional: bool = False
    default: object = None


def _strip_none(tp: object) -> tuple[object, bool]:
    """Split ``X | None`` into ``(X, True)``; anything else into ``(tp, False)``."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(args) < len(typing.get_args(tp)):
            return args[0], True
    return tp, False


def marker_of(metadata: Iterable[object]) -> Source | None:
    """The injection marker among ``Annotated`` metadata: ``STATE``/``STORE``, or ``None``."""
    for item in metadata:
        if item is _STATE:
            return Source.STATE
        if item is _STORE:
            return Source.STORE
    return None


def is_injected(metadata: Iterable[object]) -> bool:
    """True when ``Annotated`` metadata carries the ``Inject`` marker."""
    return any(item is _INJECT for item in metadata)


def builtin_source(tp: object) -> Source | None:
    """The built-in injectable ``tp`` names, if any."""
    try:
        return _BUILTIN.get(tp)
    except TypeError:  # unhashable annotation objects
        return None


def plan_injection(
    name: str, base: object, metadata: Iterable[object], *, default: object, has_default: bool
) -> Injection | str:
    """Classify one ``Inject[...]`` parameter, or say why it cannot be injected.

    Args:
        name: The parameter name.
        base: The annotation with ``Annotated`` stripped.
        metadata: The ``Annotated`` metadata (markers included).
        default: The parameter's default (ignored unless ``has_default``).
        has_default: Whether the parameter has a default.

    Returns:
        The :class:`Injection`, or a problem sentence for a definition error.
    """
    metadata = tuple(metadata)
    inner, nullable = _strip_none(base)
    optional = nullable or has_default
    fallback = default if has_default else None
    source = marker_of(metadata) or builtin_source(inner)
    if source is not None:
        return Injection(name, source, optional=optional, default=fallback)
    # Before Python 3.11 `isinstance(list[int], type)` is True: a subscripted generic is no class.
    if not isinstance(inner, types.GenericAlias) and isinstance(inner, type):
        return Injection(name, Source.VALUE, key=inner, optional=optional, default=fallback)
    return (
        f"parameter `{name}`: cannot inject `{base!r}`; inject a class (looked up in "
        "Context.values) or one of RunContext, CallId, ToolCall, Cancellation, Emit, "
        "Store[T], State[T]"
    )


@attrs.frozen
class CallRuntime:
    """Everything a call's injections may draw from (built by dispatch per call)."""

    context: Context
    call: ToolCall
    run_context: RunContext
    cancellation: Cancellation = attrs.field(factory=Cancellation)
    emit: Emit | None = None


_MISSING = object()


def _lookup(injection: Injection, runtime: CallRuntime) -> object:
    source = injection.source
    if source is Source.RUN_CONTEXT:
        return runtime.run_context
    if source is Source.CALL_ID:
        return CallId(runtime.call.id)
    if source is Source.TOOL_CALL:
        return runtime.call
    if source is Source.CANCELLATION:
        return runtime.cancellation
    if source is Source.EMIT:
        return runtime.emit if runtime.emit is not None else _MISSING
    if source is Source.STORE:
        return runtime.context.store if runtime.context.store is not None else _MISSING
    if source is Source.STATE:
        return runtime.context.state if runtime.context.state is not None else _MISSING
    assert injection.key is not None
    return runtime.context.values.get(injection.key, _MISSING)


def bind(
    arguments: dict[str, object], injections: tuple[Injection, ...], runtime: CallRuntime
) -> dict[str, object]:
    """The function's keyword arguments: validated model arguments plus injections.

    ``arguments`` must come from ``Tool.validate``; it is extended in place
    and returned, so a tool without injections costs nothing here.

    Raises:
        ToolDefinitionError: A required injection has nothing to draw from
            (:func:`check_context` reports this before anything runs).
    """
    for injection in injections:
        value = _lookup(injection, runtime)
        if value is _MISSING:
            if not injection.optional:
                raise ToolDefinitionError(runtime.call.name, [_unsatisfied(injection)])
            value = injection.default
        arguments[injection.name] = value
    return arguments


def _unsatisfied(injection: Injection) -> str:
    where = {
        Source.STORE: "the context has no store (pass Context(store=...))",
        Source.STATE: "the context has no state (pass Context(state=...))",
        Source.EMIT: "no event sink is available outside dispatch",
    }.get(injection.source)
    if where is None:
        key = getattr(injection.key, "__qualname__", repr(injection.key))
        where = f"Context.values has no `{key}` (pass Context(values={{{key}: ...}}))"
    return (
        f"parameter `{injection.name}` cannot be injected: {where}; "
        "or give the parameter a default or an `| None` annotation"
    )


class _Injecting(Protocol):
    """What :func:`check_context` reads of a tool."""

    @property
    def name(self) -> str: ...

    @property
    def injections(self) -> tuple[Injection, ...]: ...


def check_context_type(context: object) -> None:
    """Refuse a ``context`` that is no :class:`Context` (a dict of its fields, say),
    saying how to make one, before any tool runs.

    Raises:
        TypeError: ``context`` is not a ``Context``.
    """
    if not isinstance(context, Context):
        raise TypeError(
            f"context must be a Context, got {type(context).__name__}: make one with "
            "Context(store=..., state=..., values={...})"
        )


def check_context(tools: Iterable[_Injecting], context: Context) -> None:
    """Raise one ``ToolDefinitionError`` for every injection ``context`` cannot satisfy.

    Args:
        tools: The tools (``registry.tools()``, or any ``Tool`` values).
        context: The context the tools will run with.

    Raises:
        ToolDefinitionError: An injection cannot be satisfied.
        TypeError: ``context`` is not a ``Context``.
    """
    check_context_type(context)
    probe = CallRuntime(
        context=context,
        call=ToolCall("", "", {}),
        run_context=RunContext(context.run_id),
        emit=Emit(lambda _name, _data: None),
    )
    problems = [
        f"tool `{tool.name}`: {_unsatisfied(injection)}"
        for tool in tools
        for injection in tool.injections
        if not injection.optional and _lookup(injection, probe) is _MISSING
    ]
    if problems:
        raise ToolDefinitionError("context", problems)
