"""The ``Toolset`` protocol and how a toolset is resolved, once, for a dispatch.

A toolset answers two questions for a context: which tools this run may expose
and call (``tools``), and why each tool it left out or changed was left out or
changed (``explain``). Adaptors are frozen values over other toolsets; each one
turns its members' :class:`Resolution` into its own (``_apply``).

Resolving is cached so that an unchanged composition costs almost nothing per
dispatch: every adaptor remembers its last few results together with the
resolutions of its members they were made from (compared by identity) and the
context (compared by identity, and only for an adaptor that reads it:
``Filtered``, ``Prepared``). A ``Prepared`` step, a ``Filtered`` given a new
context, a toolset of the host's own and a live MCP session are asked again,
but when they answer with the same tools as last time their previous
resolution is reused, so the adaptors above them stay cached. The registry a dispatch runs
against is made once per resolution.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, ClassVar, Protocol, cast, runtime_checkable

import attrs

from tinytools._declare.exposure import ExposureExplanation
from tinytools._declare.registry import AnyTool, Registry
from tinytools._declare.spec import Tool
from tinytools._memo import remember
from tinytools.errors import ToolDefinitionError

if TYPE_CHECKING:
    from tinytools._inject import Context
    from tinytools._wire import ToolCall

__all__ = [
    "Adaptor",
    "Remote",
    "Resolution",
    "Toolset",
    "ToolsetRegistry",
    "When",
    "Wrapper",
    "is_remote",
    "label",
    "registry_for",
    "resolve",
    "unnamable",
    "withheld",
]

#: ``ApprovalRequired``'s condition: ``when(call, context) -> bool``.
When = Callable[["ToolCall", "Context | None"], bool]

_REMEMBERED = 4


@runtime_checkable
class Toolset(Protocol):
    """What a run may expose and call, and why anything else is not there.

    ``Registry`` is a toolset; so is every adaptor in ``tinytools.toolsets``, and
    any object of the host's own with these two methods (synchronous: dispatch
    resolves a toolset before any call runs). One whose method raises, or answers
    with anything but an iterable of tools (of explanations), is a
    ``ToolDefinitionError`` naming it and what it did, raised from its own error,
    before any call runs; it is asked again on the next dispatch.
    """

    def tools(self, context: Context | None = None) -> tuple[AnyTool, ...]:
        """The tools this run may expose and call, in order, each with its exposure."""
        ...

    def explain(self, context: Context | None = None) -> tuple[ExposureExplanation, ...]:
        """Every tool this toolset left out or changed, and why."""
        ...


class ToolsetRegistry(Registry):
    """The registry a toolset resolves to: a ``Registry`` that also knows which calls
    of ``ApprovalRequired(when=...)`` tools wait for approval."""

    __slots__ = ("_gates",)

    _gates: Mapping[str, tuple[When, ...]]

    def __init__(self, tools: Iterable[AnyTool], gates: Mapping[str, tuple[When, ...]]) -> None:
        super().__init__(tools)
        object.__setattr__(self, "_gates", gates)

    def approval_needed(self, call: ToolCall, context: Context) -> bool:
        """Whether a call of an approval-gated tool waits for approval: always, unless
        the tool is gated only by ``ApprovalRequired(when=...)`` conditions and none of
        them holds. A condition that raises counts as holding (fail closed)."""
        whens = self._gates.get(call.name)
        if whens is None:
            return True
        for when in whens:
            try:
                if when(call, context):
                    return True
            except Exception:
                return True
        return False


class Remote:
    """The base of the function of a tool that a remote server lists and runs
    (``McpToolset``'s). Where such a tool's name is taken by another tool (one of the
    host's, discovery's ``tool_search`` / ``tool_call``, an earlier remote one), or an
    adaptor would make it invalid (``Prefixed`` past 64 characters), the remote tool is
    left out, explained, rather than the composition refused: a server must not be able
    to take the host's whole toolset down by what it lists."""

    __slots__ = ()


def is_remote(tool: AnyTool) -> bool:
    """Whether ``tool`` is run by a remote server (see :class:`Remote`)."""
    return isinstance(tool.fn, Remote)


def withheld(name: str, taken_by: str, where: str) -> ExposureExplanation:
    """The explanation of the remote tool ``name`` (as the step ``where`` received it),
    left out because ``taken_by`` has the name it would have."""
    reason = (
        f"left out: the remote server's tool has the name of {taken_by}; to offer it "
        "too, give it another name (Prefixed or Renamed)"
    )
    return ExposureExplanation(name, reason, where)


def unnamable(name: str, problem: str, where: str) -> ExposureExplanation:
    """The explanation of the remote tool ``name``, left out because the name the step
    ``where`` would give it is no valid tool name (``problem`` says why)."""
    reason = (
        f"left out: the remote server's tool cannot take the name this step gives it: "
        f"{problem}; to offer it, give it a shorter name first (Renamed, inside this step)"
    )
    return ExposureExplanation(name, reason, where)


class Resolution:
    """What a toolset resolved to for one context (treat it as immutable).

    Attributes:
        tools: The tools, in order.
        explanations: Why tools were left out or changed, innermost step first.
        gates: Tool name → the ``ApprovalRequired`` conditions that gate it (a
            tool gated for every call has no entry).
        withheld: The explanations (among ``explanations``) of the remote tools left
            out on the way here because their name was taken or made invalid: dispatch
            reports each as a ``ToolWithheld`` event.
    """

    __slots__ = ("_registry", "explanations", "gates", "tools", "withheld")

    def __init__(
        self,
        tools: tuple[AnyTool, ...],
        explanations: tuple[ExposureExplanation, ...] = (),
        gates: Mapping[str, tuple[When, ...]] | None = None,
        withheld: tuple[ExposureExplanation, ...] = (),
    ) -> None:
        self.tools = tools
        self.explanations = explanations
        self.gates: Mapping[str, tuple[When, ...]] = gates or {}
        self.withheld = withheld
        self._registry: Registry | None = None

    def registry(self) -> Registry:
        """The registry a dispatch runs against (made on first use, then kept).

        Raises:
            ToolDefinitionError: Two tools share a name.
        """
        registry = self._registry
        if registry is None:
            if self.gates:
                registry = ToolsetRegistry(self.tools, self.gates)
            else:
                registry = Registry(self.tools)
            if self.withheld:
                object.__setattr__(registry, "_withheld", self.withheld)
            self._registry = registry
        return registry

    def same_tools(self, tools: tuple[AnyTool, ...]) -> bool:
        """Whether ``tools`` are these tools, the very same objects in the same order."""
        mine = self.tools
        return len(mine) == len(tools) and all(a is b for a, b in zip(mine, tools, strict=True))


def label(value: object) -> str:
    """A short readable name for a function or object, for explanations and errors."""
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    return str(name) if name else repr(value)


def checked_tools(source: str, items: Iterable[object]) -> tuple[AnyTool, ...]:
    """``items`` as a tuple of tools.

    Raises:
        ToolDefinitionError: An item is not a ``Tool`` (every such item named).
    """
    tools = tuple(items)
    problems = [
        f"{item!r} is not a Tool; decorate it with @tool first"
        for item in tools
        if not isinstance(item, Tool)
    ]
    if problems:
        raise ToolDefinitionError(source, problems)
    return tools  # type: ignore[return-value]


class _Memo:
    """An adaptor's cache (mutable, inside a frozen value; it changes nothing but speed)."""

    __slots__ = ("bound", "entries", "top", "volatile")

    def __init__(self) -> None:
        #: (member resolutions, context or None, result), most recent last.
        self.entries: list[tuple[tuple[Resolution, ...], object, Resolution]] = []
        #: (context or None, whether the context counts, registry) of the last dispatch,
        #: for compositions that nothing asks again (no Prepared step, no foreign toolset).
        self.top: tuple[object, bool, Registry] | None = None
        self.bound: bool | None = None  # something below reads the context
        self.volatile: bool | None = None  # something below must be asked every time


@attrs.frozen
class Adaptor:
    """The base of the adaptors: resolution, caching and the two protocol methods.

    A subclass lists its member toolsets (``members``) and turns their
    resolutions into its own (``_apply``). Class flags: ``reads_context`` (its
    result depends on the context), ``asks_every_time`` (it must be asked on every
    resolution, as ``Prepared`` is). An adaptor over one toolset derives from
    :class:`Wrapper` instead, and overrides only what it changes.
    """

    _memo: _Memo = attrs.field(init=False, factory=_Memo, eq=False, hash=False, repr=False)

    reads_context: ClassVar[bool] = False
    asks_every_time: ClassVar[bool] = False

    def members(self) -> tuple[object, ...]:
        """The toolsets this adaptor is over."""
        raise NotImplementedError

    def _apply(self, inputs: tuple[Resolution, ...], context: Context | None) -> Resolution:
        raise NotImplementedError

    def label(self) -> str:
        """How explanations and errors name this adaptor."""
        return type(self).__name__

    def tools(self, context: Context | None = None) -> tuple[AnyTool, ...]:
        """The tools this run may expose and call, in order.

        Raises:
            ToolDefinitionError: The composition cannot be resolved (two tools
                with one name, a bad name, a ``keep`` or ``prepare`` function that
                raised or returned something that is not a tool...).
        """
        return resolve(self, context).tools

    def explain(self, context: Context | None = None) -> tuple[ExposureExplanation, ...]:
        """Every tool left out or changed on the way here, and why, innermost step first.

        Raises:
            ToolDefinitionError: As :meth:`tools`.
        """
        return resolve(self, context).explanations

    def _flags(self) -> tuple[bool, bool]:
        memo = self._memo
        if memo.bound is None or memo.volatile is None:
            bound, volatile = self.reads_context, self.asks_every_time
            for member in self.members():
                if isinstance(member, Adaptor):
                    b, v = member._flags()
                    bound, volatile = bound or b, volatile or v
                elif not isinstance(member, Registry):
                    bound = volatile = True  # a toolset of the host's own, or a live session
            memo.bound, memo.volatile = bound, volatile
        return memo.bound, memo.volatile


@attrs.frozen
class Wrapper(Adaptor):
    """An adaptor over one toolset that, as it stands, passes everything through.

    Its one member is ``toolset``; what it resolves to is what ``toolset`` resolves
    to, named after its class. A subclass overrides only what it changes:
    ``_adapt`` (the tools, explanations and approval gates it makes of its member's),
    ``label`` (when its arguments belong in its name), the class flags.

    Args:
        toolset: The toolset it is over.
    """

    toolset: Toolset

    def members(self) -> tuple[object, ...]:
        return (self.toolset,)

    def _apply(self, inputs: tuple[Resolution, ...], context: Context | None) -> Resolution:
        (inner,) = inputs
        return self._adapt(inner, context)

    def _adapt(self, inner: Resolution, context: Context | None) -> Resolution:
        """What this adaptor makes of its member's resolution ``inner``."""
        return inner


def resolve(toolset: object, context: Context | None) -> Resolution:
    """What ``toolset`` resolves to in ``context`` (cached: see the module docstring).

    Raises:
        ToolDefinitionError: The toolset cannot be resolved.
        TypeError: ``toolset`` is not a toolset.
    """
    if isinstance(toolset, Adaptor):
        inputs = tuple(resolve(member, context) for member in toolset.members())
        memo = toolset._memo
        # The members' resolutions stand for everything below (compared by identity);
        # the context counts only for an adaptor that reads it itself.
        key = context if toolset.reads_context else None
        if not toolset.asks_every_time:
            for made_from, made_for, result in memo.entries:
                if made_for is key and all(a is b for a, b in zip(made_from, inputs, strict=True)):
                    return result
        result = toolset._apply(inputs, context)
        below = tuple(w for resolution in inputs for w in resolution.withheld)
        if below and all(result is not resolution for resolution in inputs):
            result.withheld = (*below, *result.withheld)  # (made just now by _apply)
        entries = memo.entries
        if entries:  # the same answer as last time: keep the old one, so caches above hold
            previous = entries[-1][2]
            if (
                previous.same_tools(result.tools)
                and previous.explanations == result.explanations
                and previous.gates == result.gates
            ):
                result = previous
        if len(entries) >= _REMEMBERED:
            del entries[0]
        entries.append((inputs, key, result))
        return result
    if isinstance(toolset, Registry):
        return _of_registry(toolset)
    return _of_foreign(toolset, context)


def _of_registry(registry: Registry) -> Resolution:
    try:
        return registry._resolution  # type: ignore[attr-defined,no-any-return]
    except AttributeError:
        resolution = Resolution(registry.tools(), registry.explain())
        resolution._registry = registry
        object.__setattr__(registry, "_resolution", resolution)
        return resolution


_FOREIGN: dict[int, tuple[object, Resolution]] = {}


def _of_foreign(toolset: object, context: Context | None) -> Resolution:
    """A toolset of the host's own (or a live session): asked every time; the previous
    resolution is kept when it answers with the same tools and explanations."""
    tools_of = getattr(toolset, "tools", None)
    explain = getattr(toolset, "explain", None)
    if not callable(tools_of) or not callable(explain):
        raise TypeError(
            f"{toolset!r} is not a toolset: give a Registry, an adaptor from "
            "tinytools.toolsets, or an object with tools(context) and explain(context)"
        )
    source = f"toolset {label(type(toolset))}"
    tools = host_tools(toolset, tools_of, context)
    answer = _asked(source, "explain", explain, context)
    for item in answer:
        if not isinstance(item, ExposureExplanation):
            raise ToolDefinitionError(
                source, [f"explain() returned {item!r}, not an ExposureExplanation"]
            )
    explanations = cast("tuple[ExposureExplanation, ...]", answer)  # (each checked above)
    known = _FOREIGN.get(id(toolset))
    if known is not None and known[0] is toolset:
        previous = known[1]
        if previous.same_tools(tools) and previous.explanations == explanations:
            return previous
    resolution = Resolution(tools, explanations)
    try:
        resolution.registry()  # (made now, once per new answer: dispatch needs it anyway)
    except ToolDefinitionError as error:  # two tools of one name
        problems = [f"in what tools(context) returned, {p}" for p in error.problems]
        raise ToolDefinitionError(source, problems) from None
    remember(_FOREIGN, id(toolset), (toolset, resolution))
    return resolution


def host_tools(
    toolset: object, ask: Callable[[Context | None], object], context: Context | None
) -> tuple[AnyTool, ...]:
    """What a toolset of the host's own lists: ``ask`` (its ``tools`` method) answered
    for ``context``, checked. Dispatch and the formats' ``declarations``/``render`` read
    a host's toolset through here, so both say the same when it fails.

    Raises:
        ToolDefinitionError: Naming the toolset, as :func:`_asked` and
            :func:`checked_tools` say.
    """
    source = f"toolset {label(type(toolset))}"
    return checked_tools(source, _asked(source, "tools", ask, context))


def _asked(
    source: str, method: str, ask: Callable[[Context | None], object], context: Context | None
) -> tuple[object, ...]:
    """What a toolset of the host's own answered to ``tools(context)`` or
    ``explain(context)``, read into a tuple.

    The toolset is the host's code: whatever goes wrong in it is said in the host's
    terms, naming the toolset and the method, before any call of the batch runs; what
    it raised is the ``__cause__`` (a ``ToolDefinitionError``, which says what is wrong
    itself, an interrupt, or anything that is not an ``Exception``, propagates as it is).

    Raises:
        ToolDefinitionError: The method raised (also while its answer was read: a
            generator failing halfway), or answered with something that is not an
            iterable of items (``None``, a number, a str, a mapping, an awaitable).
    """
    try:
        answer = ask(context)
    except ToolDefinitionError:
        raise  # it says what is wrong itself (McpToolset never listed, an adaptor's)
    except Exception as error:
        raise ToolDefinitionError(source, [f"{method}(context) raised {error!r}"]) from error
    if (
        isinstance(answer, (str, bytes, Mapping))
        or not isinstance(answer, Iterable)
        or inspect.isawaitable(answer)
    ):
        if inspect.iscoroutine(answer):
            answer.close()  # (never awaited: without this, a RuntimeWarning later)
        what = "a list or tuple of tools" if method == "tools" else "ExposureExplanations"
        hint = (
            "; resolving is synchronous: fetch what it lists beforehand (as "
            "McpToolset.refresh() does)"
            if inspect.isawaitable(answer)
            else ""
        )
        raise ToolDefinitionError(
            source,
            [f"{method}(context) returned {_shown(answer)}; return {what}{hint}"],
        )
    try:
        return tuple(answer)
    except Exception as error:
        raise ToolDefinitionError(
            source, [f"{method}(context) raised {error!r} while its answer was read"]
        ) from error


def _shown(value: object) -> str:
    """``value``'s type and repr, cut short (the repr of a host's object may raise)."""
    try:
        shown = f"{value!r:.60}"
    except Exception:
        shown = "?"
    return f"{type(value).__name__} {shown}"


def registry_for(tools: object, context: Context | None) -> Registry:
    """The registry a dispatch runs against: a ``Registry`` as it is, a toolset resolved
    with the dispatch's ``context`` (cached), an iterable of tools made into a registry.

    Raises:
        ToolDefinitionError: The toolset cannot be resolved, or the tools
            cannot form a registry.
    """
    if isinstance(tools, Adaptor):
        memo = tools._memo
        top = memo.top
        if top is not None and top[0] is (context if top[1] else None):
            return top[2]  # an unchanged composition: the common case, kept cheap
        registry = resolve(tools, context).registry()
        bound, volatile = tools._flags()
        if not volatile:
            memo.top = (context if bound else None, bound, registry)
        return registry
    if isinstance(tools, Registry):
        return tools
    if callable(getattr(tools, "explain", None)) and callable(getattr(tools, "tools", None)):
        return resolve(tools, context).registry()
    return Registry(tools)  # type: ignore[arg-type]
