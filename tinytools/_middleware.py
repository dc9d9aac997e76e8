"""Middleware: plain values that see each call before and after its tool runs.

A middleware is any object with an optional ``before_tool`` and an optional
``after_tool`` method (both synchronous, both pure data transforms):

* ``before_tool(call, env) -> ToolCall | Allow | Deny | Defer`` runs
  before name resolution and validation: return the call (adjusted or not)
  to go on, :class:`Allow` to go on approved past every approval gate,
  :class:`Deny` to answer the model with a message (status ``denied``), or
  :class:`Defer` to take the call out of the batch for later. Under
  ``dispatch`` (not ``dispatch_sync``) the hook may return an awaitable of
  these, for example to ask a human asynchronously.
* ``after_tool(call, result, env) -> ToolResult`` runs after the tool, before
  the result becomes a message; it may rewrite the result.
* ``wrap_tool(call, env, proceed) -> ToolResult`` runs around a synchronous tool, on the
  thread that runs its body, and ``async awrap_tool(call, env, proceed) -> ToolResult``
  around an async tool, in its task: ``call`` holds the validated arguments, and
  ``proceed()`` (awaited in ``awrap_tool``) runs the rest of the chain and the tool, its
  retries and timeout included, and returns its ``ToolResult``. A wrap may skip it, call
  it again or raise; called once the call has ended (kept for later), it raises
  ``RuntimeError`` rather than run the tool outside dispatch. A synchronous wrap does not
  wrap async tools, nor an async wrap synchronous ones (``tinytools._engine.execute.wraps``
  runs them).

The stack is composed once per middleware sequence (:func:`composed`): ``before_tool``
hooks run in the order given, ``after_tool`` hooks in reverse (an onion, as
in ASGI); wraps nest in the order given, the first outermost. :func:`before_tool`,
:func:`after_tool` and :func:`wrap_tool` turn a plain function into a middleware.

``Allow``, ``Deny`` and ``Defer`` are the one approval vocabulary of the
package: a ``before_tool`` hook returns them, a ``HumanApprovalMiddleware``
callback returns them, and ``Deny`` is also what ``DeferredToolResults.deny``
records. A hook may adjust a call's name and arguments, never its id: the id
is what the call's answer, approval and deferral are keyed by.

An approval is bound to the call it was given for. ``Allow`` approves the call
as it stands after that hook (or ``Allow(call)``'s replacement); when a later
hook changes that call's name or arguments, the approval is withdrawn, so the
changed call meets the approval gates again.
"""

from __future__ import annotations

import operator
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

import attrs

from ._memo import remember
from ._text import printable
from ._wire import ToolCall, ToolResult, json_problem

if TYPE_CHECKING:
    from ._engine.env import DispatchEnv
    from ._engine.result import DispatchResult
    from .events import Event


__all__ = [
    "After",
    "Allow",
    "Before",
    "BeforeOutcome",
    "Defer",
    "Deny",
    "HookFailed",
    "Middleware",
    "Stack",
    "NO_MIDDLEWARE",
    "AsyncWrap",
    "Wrap",
    "after_tool",
    "before_tool",
    "wrap_tool",
    "compose",
    "composed",
    "described",
]


@attrs.frozen(repr=False)
class Allow:
    """Go on, approved: no approval gate defers the call (dispatch emits ``ToolApproved``).

    Attributes:
        call: The call to go on with instead (same id; its name or arguments
            may differ), or None to go on with the call as it is. The approval
            covers exactly this call.
    """

    call: ToolCall | None = None

    def __repr__(self) -> str:
        return "Allow()" if self.call is None else f"Allow({self.call!r})"


def described(outcome: object) -> str:
    """What a hook or callback returned, for an error message that refuses it: the class
    it named, a constant, else only its type — never its contents, which may hold the
    call and so the arguments a tool's policy redacts (error messages reach logs)."""
    if isinstance(outcome, type):
        return f"the class {outcome.__name__} (not an instance)"
    if outcome is None or isinstance(outcome, (bool, int, float)):
        return repr(outcome)
    return f"a {type(outcome).__name__}"


def _denial(message: object) -> str:
    """A denial's message as the model and ``ToolDenied`` read it: a ``str`` (a subclass
    as the text it holds), lone surrogates escaped so that every result encodes."""
    if not issubclass(type(message), str):
        raise TypeError(
            f"Deny takes the message the model reads, a str; got {type(message).__name__}"
        )
    return printable(str.__str__(message))


@attrs.frozen
class Deny:
    """Do not run the call; the model reads ``message`` (status ``denied``, ``ToolDenied``).

    Raises:
        TypeError: ``message`` is not a ``str``.
    """

    message: str = attrs.field(converter=_denial)


def _freeze(value: Mapping[str, object]) -> dict[str, object]:
    metadata = dict(value)
    problem = json_problem(metadata)
    if problem is not None:  # a result carries it to the host: refused when made
        raise TypeError(f"Defer's metadata must be JSON a result can carry: {problem}")
    return metadata


@attrs.frozen
class Defer:
    """Take the call out of the batch; it is returned in ``DispatchResult.deferred``.

    Attributes:
        metadata: What the host (or the approver) should know about the call.
        kind: ``"approval"`` puts the call in ``DeferredToolRequests.approvals``
            (a human decides); ``"deferred"`` (the default) in ``.calls`` (the
            host completes it).
    """

    metadata: dict[str, object] = attrs.field(factory=dict, converter=_freeze)
    kind: Literal["deferred", "approval"] = "deferred"


#: What a ``before_tool`` hook returns (under ``dispatch``, possibly awaitable).
BeforeOutcome: TypeAlias = "ToolCall | Allow | Deny | Defer"
#: A ``before_tool`` hook.
Before: TypeAlias = "Callable[[ToolCall, DispatchEnv], BeforeOutcome | Awaitable[BeforeOutcome]]"
#: An ``after_tool`` hook.
After: TypeAlias = "Callable[[ToolCall, ToolResult, DispatchEnv], ToolResult]"
#: A ``wrap_tool`` hook: ``proceed()`` runs the rest of the chain and the tool.
Wrap: TypeAlias = "Callable[[ToolCall, DispatchEnv, Callable[[], ToolResult]], ToolResult]"
#: An ``awrap_tool`` hook: ``await proceed()`` runs the rest of the chain and the tool.
AsyncWrap: TypeAlias = (
    "Callable[[ToolCall, DispatchEnv, Callable[[], Awaitable[ToolResult]]], Awaitable[ToolResult]]"
)


class Middleware(Protocol):
    """Marker protocol: an object with any of ``before_tool``, ``after_tool``,
    ``wrap_tool`` and ``awrap_tool``."""


@attrs.frozen
class _BeforeOnly:
    before_tool: Before

    def __repr__(self) -> str:
        return f"before_tool({getattr(self.before_tool, '__qualname__', self.before_tool)!r})"


@attrs.frozen
class _AfterOnly:
    after_tool: After

    def __repr__(self) -> str:
        return f"after_tool({getattr(self.after_tool, '__qualname__', self.after_tool)!r})"


@attrs.frozen
class _WrapOnly:
    wrap_tool: Wrap

    def __repr__(self) -> str:
        return f"wrap_tool({getattr(self.wrap_tool, '__qualname__', self.wrap_tool)!r})"


@attrs.frozen
class _AsyncWrapOnly:
    awrap_tool: AsyncWrap

    def __repr__(self) -> str:
        return f"wrap_tool({getattr(self.awrap_tool, '__qualname__', self.awrap_tool)!r})"


def before_tool(fn: Before) -> Middleware:
    """A middleware whose ``before_tool`` is ``fn``."""
    return _BeforeOnly(fn)


def after_tool(fn: After) -> Middleware:
    """A middleware whose ``after_tool`` is ``fn``."""
    return _AfterOnly(fn)


def wrap_tool(fn: Wrap | AsyncWrap) -> Middleware:
    """A middleware whose wrap hook is ``fn``: ``wrap_tool`` (around synchronous tools)
    when ``fn`` is a plain function, ``awrap_tool`` (around async tools) when it is a
    coroutine function."""
    from ._declare.spec import is_async_function

    if is_async_function(fn):
        return _AsyncWrapOnly(fn)  # type: ignore[arg-type]
    return _WrapOnly(fn)  # type: ignore[arg-type]


#: A middleware's private event hook (``_tinytools_on_event(event, env)``): see :class:`Stack`.
Observer: TypeAlias = "Callable[[Event, DispatchEnv], None]"
#: Its private result hook (``_tinytools_on_result(result, env)``): see :class:`Stack`.
Finisher: TypeAlias = "Callable[[DispatchResult, DispatchEnv], None]"
#: Its private gate (``_tinytools_quiet()``): see :class:`Stack`.
Gate: TypeAlias = "Callable[[], bool]"


@attrs.frozen
class Stack:
    """The composed hooks: ``befores`` in order, ``afters`` already reversed, ``wraps``
    (synchronous tools) and ``awraps`` (async tools) in order, the first outermost.

    ``observers`` are the ``_tinytools_on_event`` methods of this package's own
    middleware (``tinytools.otel.OpenTelemetry``), in order: each is handed every event
    of the batch as it is recorded, on the thread that records it. A call refused,
    denied or deferred at admission gets no other hook, and the end of a call cut off
    while it ran is known only from its event; the hook is private (not part of the
    middleware protocol) and must not raise. ``finishers`` (their
    ``_tinytools_on_result(result, env)``) are handed the batch's result when it is made:
    a call cut off before it started (the batch cancelled, past its deadline, over its
    ``max_tool_calls``) is answered there with no event.

    ``gates`` pair such a middleware with its ``_tinytools_quiet()``, which says whether
    it would record nothing if a dispatch started now (``OpenTelemetry`` while the global
    providers it follows are unset): each dispatch takes the stack :meth:`now` gives,
    without the hooks of every middleware quiet at that moment, so a middleware that
    records nothing costs the batch nothing, and one that may record again (a provider
    set since) has its hooks back at the next dispatch.
    """

    befores: tuple[Before, ...] = ()
    afters: tuple[After, ...] = ()
    wraps: tuple[Wrap, ...] = ()
    awraps: tuple[AsyncWrap, ...] = ()
    observers: tuple[Observer, ...] = ()
    finishers: tuple[Finisher, ...] = ()
    gates: tuple[Gate, ...] = ()
    #: The middleware composed, and those with a gate, in the order of ``gates`` (kept
    #: only when there are gates: see :meth:`now`).
    items: tuple[object, ...] = attrs.field(default=(), eq=False)
    gated: tuple[object, ...] = attrs.field(default=(), eq=False)
    #: The stacks without the quiet middleware, by which gates said quiet.
    variants: dict[tuple[bool, ...], Stack] = attrs.field(factory=dict, eq=False)

    def now(self) -> Stack:
        """The stack for a dispatch starting now: without the middleware whose gate says
        it would record nothing (composed once per set of quiet middleware)."""
        quiet: tuple[bool, ...] = ()
        for gate in self.gates:  # (a loop: a comprehension's frame costs more than one gate)
            quiet += (gate(),)
        if True not in quiet:
            return self
        stack = self.variants.get(quiet)
        if stack is None:
            out = [m for m, q in zip(self.gated, quiet, strict=True) if q]
            left = [m for m in self.items if not any(m is o for o in out)]
            stack = compose(left) if left else NO_MIDDLEWARE
            self.variants[quiet] = stack
        return stack


class HookFailed(Exception):
    """A middleware hook raised: dispatch aborts the batch (``__cause__`` is the error)."""

    def __init__(self, kind: Literal["before_tool", "after_tool"], hook: object, error: Exception):
        self.error = error
        super().__init__(f"{kind} hook {hook!r} raised {error!r}")


def compose(middleware: Iterable[object]) -> Stack:
    """Compose middleware once.

    Raises:
        TypeError: An item has none of the hook methods.
    """
    items = tuple(middleware)
    for item in items:
        if not any(callable(getattr(item, kind, None)) for kind in _KINDS):
            raise TypeError(
                f"middleware {item!r} has none of the methods before_tool, after_tool, "
                "wrap_tool, awrap_tool; make one of a plain function with "
                "tinytools.before_tool(...), after_tool(...) or wrap_tool(...)"
            )
    befores = tuple(h for m in items if callable(h := _hook(m, "before_tool")))
    afters = tuple(h for m in reversed(items) if callable(h := _hook(m, "after_tool")))
    wraps = tuple(h for m in items if callable(h := _hook(m, "wrap_tool")))
    awraps = tuple(h for m in items if callable(h := _hook(m, "awrap_tool")))
    observers = tuple(h for m in items if callable(h := _hook(m, "_tinytools_on_event")))
    finishers = tuple(h for m in items if callable(h := _hook(m, "_tinytools_on_result")))
    gated = tuple(m for m in items if callable(_hook(m, "_tinytools_quiet")))
    gates = tuple(m._tinytools_quiet for m in gated)  # type: ignore[attr-defined]
    return Stack(
        befores, afters, wraps, awraps, observers, finishers, gates, items if gates else (), gated
    )


#: The hook methods a middleware may have.
_KINDS = ("before_tool", "after_tool", "wrap_tool", "awrap_tool")


def _hook(middleware: object, kind: str) -> Any:
    """``middleware``'s hook of ``kind``, unless it says the hook would hand every call
    (or result) back unchanged: a middleware of this package may list the hooks its
    settings need in ``_tinytools_hooks`` (``ToolPolicyMiddleware`` without result
    rules needs no ``after_tool``), and dispatch then does not call the others."""
    needed = getattr(middleware, "_tinytools_hooks", None)
    if needed is not None and kind not in needed:
        return None
    return getattr(middleware, kind, None)


#: The stack of a dispatch without middleware.
NO_MIDDLEWARE = Stack()
#: Stacks remembered by the sequence given (tuple or list) and by its items.
_BY_SEQUENCE: dict[int, tuple[object, object, Stack]] = {}
_BY_ITEMS: dict[tuple[int, ...], tuple[tuple[object, ...], Stack]] = {}
#: The last entry of ``_BY_SEQUENCE`` found or made (most hosts pass one sequence).
_last: tuple[object, object, Stack] = (None, None, NO_MIDDLEWARE)


def composed(middleware: Iterable[object] | Stack) -> Stack:
    """The composed stack for ``dispatch``'s ``middleware``: composed once, then remembered.

    The same tuple or list object passed again (the common case: a host keeps its
    middleware in one place; the last one is checked first) is found by its
    identity — a list compared with the copy it was composed from, since a list can
    change (item by item with ``==``, as the registry's memo of a tool list does);
    any other sequence of the same objects by the identities of its items. Both
    memos are bounded and change nothing but speed.

    Raises:
        TypeError: An item has none of the hook methods.
    """
    global _last
    # The previous dispatch's sequence, read once (threads may replace it); a tuple is
    # its own snapshot, so comparing it is an identity test in C.
    sequence, snapshot, stack = _last
    if sequence is middleware and snapshot == middleware:
        return stack
    known = _BY_SEQUENCE.get(id(middleware))
    if (
        known is not None
        and known[0] is middleware
        and (known[1] is middleware or known[1] == middleware)  # a tuple is its own snapshot
    ):
        _last = known
        return known[2]
    kind = type(middleware)
    if kind is Stack:
        return middleware  # type: ignore[return-value]  # already composed (a resumed pass)
    items: tuple[object, ...] = middleware if kind is tuple else tuple(middleware)  # type: ignore[assignment,arg-type]
    if not items:
        return NO_MIDDLEWARE
    key = tuple(map(id, items))
    found = _BY_ITEMS.get(key)
    if found is not None and all(map(operator.is_, found[0], items)):
        stack = found[1]
    else:
        stack = compose(items)
        remember(_BY_ITEMS, key, (items, stack))
    if kind is tuple or kind is list:
        snapshot = items if kind is tuple else list(items)
        _last = (middleware, snapshot, stack)
        remember(_BY_SEQUENCE, id(middleware), _last)
    return stack
