"""``ToolPolicyMiddleware``: enforce what tools declare in their ``ToolPolicy``.

A policy only states facts; this middleware acts on them, with rules chosen
through builders that work on the class (start from no rules) and on a
middleware (add a rule)::

    guard = ToolPolicyMiddleware.require_classification().require_sandbox()
    exposure = guard.expose(tools, context)            # what may be advertised, and why not
    result = dispatch_sync(calls, tools, middleware=[guard], context=context,
                           advertised=exposure.allowed)

Each rule acts twice. At exposure time, :meth:`ToolPolicyMiddleware.expose`
leaves out the tools that break a rule and says why
(:class:`ExposureExplanation`). At execution time, ``before_tool`` refuses a
call of such a tool with a message naming the rule (dispatch answers it as
``denied`` and emits ``ToolDenied``), so a model that calls a tool it was
never shown still gets nowhere. ``require_approval`` defers calls instead
(until the host approves them), and ``enforce_result_bytes`` cuts results in
``after_tool``.

The workspace the run happens in comes from the context:
``Context(values={Workspace: Workspace(sandboxed=True)})``. Without one, the
run is taken as not sandboxed and attended (fail closed for the sandbox rule).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from typing import (
    TYPE_CHECKING,
    Concatenate,
    Generic,
    Literal,
    ParamSpec,
    TypeAlias,
    cast,
    get_args,
)

import attrs
import msgspec

from ._declare.exposure import ExposureExplanation
from ._declare.registry import AnyTool, Registry
from ._declare.spec import Exposure
from ._declare.tool_policy import BYTES, ToolPolicy, reads_only
from ._engine.fold import render, stricter, truncate
from ._inject import Context
from ._middleware import Defer, Deny
from ._wire import ContentBlock, FileBlock, ImageBlock, TextBlock, ToolCall, ToolResult

if TYPE_CHECKING:
    from ._engine.env import DispatchEnv
    from .toolsets import Toolset

__all__ = [
    "ExposureExplanation",
    "PolicyExposure",
    "SideEffect",
    "ToolPolicyMiddleware",
    "Workspace",
]

#: A side effect a tool may declare (a ``ToolSideEffects`` field other than ``read_only``).
SideEffect: TypeAlias = Literal[
    "writes_files", "network", "installs_dependencies", "destructive", "external_service", "payment"
]
_SIDE_EFFECTS: tuple[SideEffect, ...] = get_args(SideEffect)

_P = ParamSpec("_P")


def _roots(value: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):  # tuple("/srv") would be ('/', 's', 'r', 'v')
        raise TypeError(f"roots must be a sequence of paths such as ({value!r},); got {value!r}")
    return tuple(value)


@attrs.frozen
class Workspace:
    """Where the run happens, as the host describes it (put it in ``Context.values``).

    Attributes:
        sandboxed: Tools run inside a sandbox.
        background: Nobody is watching the run (a scheduled or background job).
        roots: The paths the workspace covers.
    """

    sandboxed: bool = False
    background: bool = False
    roots: tuple[str, ...] = attrs.field(default=(), converter=_roots)


@attrs.frozen
class PolicyExposure:
    """What :meth:`ToolPolicyMiddleware.expose` decided.

    Attributes:
        allowed: The names that may be advertised, in registry order (pass them
            to dispatch as ``advertised=``).
        hidden: Every other tool, with the reason it was left out.
    """

    allowed: tuple[str, ...]
    hidden: tuple[ExposureExplanation, ...]


def resolve(call: ToolCall, env: DispatchEnv) -> AnyTool | None:
    """The tool dispatch will run for ``call``, or None when it is not callable.

    ``before_tool`` hooks see a call before name resolution, so a call that
    the run's ``Rewrite`` policy will retarget is judged as its target:
    otherwise an unknown name would carry a call past every rule.
    """
    found = env.resolve(call.name)
    return None if found is None else found[1]


def workspace_of(context: Context | None) -> Workspace:
    """The context's workspace; none (or a value of another type) reads as the default."""
    found = None if context is None else context.values.get(Workspace)
    return found if isinstance(found, Workspace) else Workspace()


class _builder(Generic[_P]):  # lower case: used as a decorator, like `classmethod`
    """A rule builder: on the class it starts from no rules, on a middleware it adds one."""

    def __init__(
        self, fn: Callable[Concatenate[ToolPolicyMiddleware, _P], ToolPolicyMiddleware]
    ) -> None:
        self._fn = fn
        self.__doc__ = fn.__doc__

    def __get__(
        self, instance: ToolPolicyMiddleware | None, owner: type[ToolPolicyMiddleware]
    ) -> Callable[_P, ToolPolicyMiddleware]:
        target = owner() if instance is None else instance
        return cast("Callable[_P, ToolPolicyMiddleware]", types.MethodType(self._fn, target))


def _side_effects(kinds: Iterable[str]) -> tuple[SideEffect, ...]:
    chosen = set(kinds)
    if unknown := sorted(chosen - set(_SIDE_EFFECTS)):
        raise TypeError(
            f"unknown side effect {', '.join(map(repr, unknown))}; "
            f"valid side effects: {', '.join(_SIDE_EFFECTS)}"
        )
    return tuple(kind for kind in _SIDE_EFFECTS if kind in chosen)


@attrs.frozen(repr=False)
class ToolPolicyMiddleware:
    """Enforcement of tools' declared policies (see the module docstring).

    Build it with the rule builders rather than the fields; its ``repr`` is
    the builder chain that makes it.

    Attributes:
        classification: Refuse unclassified tools.
        sandbox: Refuse ``sandbox="required"`` tools outside a sandboxed workspace.
        approval: Defer calls of tools not classified read-only until approved.
        background_safe: Refuse tools not ``background_safe`` in a background workspace.
        denied: Refuse tools declaring any of these side effects.
        result_bytes: Cut results to ``max_result_bytes`` and the tools' own limits.
        max_result_bytes: The run-wide result limit (None: only the tools' own).
    """

    classification: bool = False
    sandbox: bool = False
    approval: bool = False
    background_safe: bool = False
    denied: tuple[SideEffect, ...] = attrs.field(default=(), converter=_side_effects)
    result_bytes: bool = False
    max_result_bytes: int | None = attrs.field(default=None, validator=BYTES)

    @_builder
    def strict(self) -> ToolPolicyMiddleware:
        """Every fail-closed rule: classification, sandbox, approval, background, result bytes.

        Side effects are not denied (which to deny is the host's choice); a
        tool that is not classified read-only waits for approval instead.
        """
        chain = self.require_classification().require_sandbox().require_approval()
        return chain.require_background_safe().enforce_result_bytes()

    @_builder
    def require_classification(self) -> ToolPolicyMiddleware:
        """Refuse tools whose policy is unclassified (nobody stated what they do)."""
        return attrs.evolve(self, classification=True)

    @_builder
    def require_sandbox(self) -> ToolPolicyMiddleware:
        """Refuse tools with ``runtime.sandbox == "required"`` unless the workspace is sandboxed."""
        return attrs.evolve(self, sandbox=True)

    @_builder
    def require_approval(self) -> ToolPolicyMiddleware:
        """Defer calls of tools not classified read-only until a human approves them.

        An unclassified ``read_only`` flag is a claim nobody reviewed, and one next to a
        side effect that writes (``destructive``, ``payment``, ...) contradicts itself:
        both wait for approval (see ``reads_only``).
        """
        return attrs.evolve(self, approval=True)

    @_builder
    def require_background_safe(self) -> ToolPolicyMiddleware:
        """Refuse tools not marked ``access.background_safe`` when the workspace is background."""
        return attrs.evolve(self, background_safe=True)

    @_builder
    def deny_side_effects(self, *kinds: SideEffect) -> ToolPolicyMiddleware:
        """Refuse tools declaring any of ``kinds`` (default: every side effect).

        Raises:
            TypeError: A kind is not a side effect; the message lists the valid ones.
        """
        return attrs.evolve(self, denied=(*self.denied, *(kinds or _SIDE_EFFECTS)))

    @_builder
    def enforce_result_bytes(self, limit: int | None = None) -> ToolPolicyMiddleware:
        """Cut the text the model reads to ``limit`` bytes, or a tool's own stricter limit.

        With ``limit=None`` only tools that declare ``runtime.max_result_bytes``
        are cut. Chained twice, the stricter limit wins.
        """
        return attrs.evolve(
            self, result_bytes=True, max_result_bytes=stricter(self.max_result_bytes, limit)
        )

    def expose(
        self, tools: Registry | Toolset | Iterable[AnyTool], context: Context | None = None
    ) -> PolicyExposure:
        """Which tools may be advertised in ``context``, and why each other one may not.

        Host-only (``Exposure.Hidden``) tools are never allowed. Deferred tools
        are judged like the rest: whether to advertise one now is discovery's call.
        """
        workspace = workspace_of(context)
        allowed: list[str] = []
        hidden: list[ExposureExplanation] = []
        # A Registry or any toolset (resolved with `context`), or the tools themselves.
        method = getattr(tools, "tools", None)
        listed = cast("Iterable[AnyTool]", method(context) if callable(method) else tools)
        for tool in listed:
            if tool.exposure is Exposure.Hidden:
                hidden.append(ExposureExplanation(tool.name, "host-only (exposure is hidden)"))
            elif (refusal := self.refusal(tool.policy, workspace)) is not None:
                hidden.append(ExposureExplanation(tool.name, f"{refusal[0]}: {refusal[1]}"))
            else:
                allowed.append(tool.name)
        return PolicyExposure(tuple(allowed), tuple(hidden))

    @property
    def _tinytools_hooks(self) -> tuple[str, ...]:
        """The hooks these rules need (dispatch calls no other: see ``_middleware._hook``)."""
        needed = ("before_tool",) if self._refuses or self.approval else ()
        return (*needed, "after_tool") if self.result_bytes else needed

    @property
    def _refuses(self) -> bool:
        """Whether any rule can refuse a tool (see :meth:`refusal`)."""
        return self.classification or self.sandbox or self.background_safe or bool(self.denied)

    def refusal(self, policy: ToolPolicy, workspace: Workspace) -> tuple[str, str] | None:
        """The first rule ``policy`` breaks in ``workspace``, as (rule, reason), or None."""
        if self.classification and not policy.classified:
            return "require_classification", "its safety policy is unclassified"
        if self.denied:
            declared = [kind for kind in self.denied if getattr(policy.side_effects, kind)]
            if declared:
                joined = ", ".join(declared)
                return "deny_side_effects", f"it declares denied side effects: {joined}"
        if self.sandbox and policy.runtime.sandbox == "required" and not workspace.sandboxed:
            return "require_sandbox", "it must run in a sandbox and this workspace is not sandboxed"
        if self.background_safe and workspace.background and not policy.access.background_safe:
            return (
                "require_background_safe",
                "it is not marked safe to run unattended and this run is in the background",
            )
        return None

    def before_tool(self, call: ToolCall, env: DispatchEnv) -> ToolCall | Deny | Defer:
        """Refuse or defer a call of a tool that breaks a rule; pass every other call on."""
        tool = resolve(call, env)
        if tool is None:
            return call  # unknown this turn: dispatch's unknown-tool handling answers it
        # Only the sandbox and background rules read the workspace (and so the context).
        workspace = workspace_of(env.context) if self.sandbox or self.background_safe else _ANY
        refusal = self.refusal(tool.policy, workspace)
        if refusal is not None:
            rule, reason = refusal
            return Deny(f"Tool `{tool.name}` was not run: {reason} (policy rule: {rule}).")
        if self.approval and not env.is_call_approved(call.id) and not reads_only(tool.policy):
            reason = "it is not classified read-only, so a human must approve the call"
            return Defer({"rule": "require_approval", "reason": reason}, kind="approval")
        return call

    def after_tool(self, call: ToolCall, result: ToolResult, env: DispatchEnv) -> ToolResult:
        """Cut the result's content and follow-up to the byte limit (``enforce_result_bytes``)."""
        if not self.result_bytes:
            return result
        tool = env.tools.get(call.name)
        declared = None if tool is None else tool.policy.runtime.max_result_bytes
        limit = stricter(self.max_result_bytes, declared)
        if limit is None:
            return result
        content, follow_up = _cut(result.content, limit), _cut(result.follow_up, limit)
        if content is result.content and follow_up is result.follow_up:
            return result
        return msgspec.structs.replace(result, content=content, follow_up=follow_up)

    def __repr__(self) -> str:
        if self == ToolPolicyMiddleware.strict():
            return "ToolPolicyMiddleware.strict()"
        flags = (self.classification, self.sandbox, self.approval, self.background_safe)
        rules = [f".{name}()" for name, on in zip(_FLAG_BUILDERS, flags, strict=True) if on]
        if self.denied:
            rules.append(f".deny_side_effects({', '.join(map(repr, self.denied))})")
        if self.result_bytes:
            limit = "" if self.max_result_bytes is None else f"limit={self.max_result_bytes}"
            rules.append(f".enforce_result_bytes({limit})")
        return "ToolPolicyMiddleware" + ("".join(rules) or "()")


#: The workspace rules that do not read it are judged in.
_ANY = Workspace()

_FLAG_BUILDERS = (
    "require_classification",
    "require_sandbox",
    "require_approval",
    "require_background_safe",
)


def _cut(blocks: tuple[ContentBlock, ...], limit: int) -> tuple[ContentBlock, ...]:
    """``blocks`` unchanged when their text fits, else that text cut to one block.

    The model reads blocks as their rendered text (images and files as
    placeholders), so cutting the rendering keeps exactly what it would read. The
    limit bounds that text, not the images and files a provider sends beside it:
    they are kept, after the cut text, with their placeholders (when even those
    do not fit, the cut text alone stands).
    """
    text = render(blocks)
    cut = truncate(text, limit)
    if cut is text:
        return blocks
    attached = tuple(b for b in blocks if type(b) in _ATTACHMENTS)
    room = limit - len(render(attached).encode("utf-8", "surrogatepass")) - 1
    if not attached or room < 0:
        return (TextBlock(cut),)
    words = render(tuple(b for b in blocks if type(b) not in _ATTACHMENTS))
    return (TextBlock(truncate(words, room)), *attached)


_ATTACHMENTS = (ImageBlock, FileBlock)
