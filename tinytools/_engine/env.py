"""What every stage of one dispatch sees: :class:`DispatchEnv` (built once per batch).

Hooks receive it as their last argument (``before_tool(call, env)``,
``after_tool(call, result, env)``), so its attributes are what a middleware may
read: the registry, the run policy, the context, the advertised names.
"""

from __future__ import annotations

from collections.abc import Collection

from tinytools._declare.registry import AnyTool, Registry
from tinytools._declare.spec import Exposure
from tinytools._inject import Context
from tinytools._memo import remember
from tinytools.policies import Rewrite, RunPolicy

from .admit.discovery import Intrinsics, intrinsics_of

__all__ = ["DispatchEnv"]


#: Tuples of advertised names already made into sets, by identity (a tuple cannot
#: change; bounded, and it changes nothing but speed).
_ADVERTISED: dict[int, tuple[Collection[str], frozenset[str]]] = {}


def advertised_names(advertised: Collection[str] | None) -> Collection[str] | None:
    """``dispatch``'s ``advertised`` as it is checked: a set is used as it is (not copied
    per dispatch); a tuple (``PolicyExposure.allowed``) becomes a frozenset once and is
    remembered; any other collection becomes a frozenset."""
    if advertised is None or type(advertised) in (frozenset, set):
        return advertised
    if type(advertised) is not tuple:
        if isinstance(advertised, str):  # frozenset("add") would be {"a", "d"}
            raise TypeError(
                f"advertised must be a collection of tool names, not one string; "
                f"pass [{advertised!r}]"
            )
        try:
            return frozenset(advertised)
        except TypeError:
            raise TypeError(
                f"advertised must be a collection of tool names (a list or set of str), "
                f"got {type(advertised).__name__}"
            ) from None
    known = _ADVERTISED.get(id(advertised))
    if known is not None and known[0] is advertised:
        return known[1]
    names = frozenset(advertised)
    remember(_ADVERTISED, id(advertised), (advertised, names))
    return names


class DispatchEnv:
    """The batch-wide inputs of dispatch.

    Attributes:
        tools: The registry calls are resolved against.
        policy: The run policy.
        context: What injection draws from (a fresh ``Context`` is made the first
            time something asks, when dispatch was given none).
        advertised: The names offered to the model this turn, if restricted.
        approved: Ids of the calls a human approved (on resume, or by a hook returning
            ``Allow``);
            grows as admission goes on.
        discovery: The registry's discovery tools (``tool_search``/``tool_call``), if any.
        reached: The ``Deferred`` tool the call being admitted reached through
            ``tool_call`` (callable for that call only), if any.

    A dispatch's run holds one (``Run.env``), built once per batch, and hands it to every
    hook: it is the middleware's whole view, and nothing of the run's own state is
    reachable from it. It has slots only, no ``__dict__`` (a hook keeps its own state
    elsewhere).
    """

    __slots__ = (
        "__weakref__",  # (a middleware may key its per-batch state by the env, weakly)
        "_approved",
        "_context",
        "_intrinsics",
        "_notes",  # (set only for a run whose middleware observes events: see Observed)
        "_open",
        "_reached",
        "advertised",
        "policy",
        "tools",
    )

    advertised: Collection[str] | None
    _intrinsics: Intrinsics | None
    _reached: str | None
    _approved: set[str] | None  # made on first use: most batches approve nothing
    _notes: dict[object, object]  # unset unless the run's middleware observes events

    def __init__(
        self,
        tools: Registry,
        policy: RunPolicy,
        context: Context | None = None,
        advertised: Collection[str] | None = None,
    ) -> None:
        self.tools = tools
        self.policy = policy
        self._context = context
        # No allow-list and no advertised set: a lookup is the exposure's alone.
        self._open = True
        self.advertised = self._approved = self._intrinsics = self._reached = None
        if advertised is not None:
            self._restrict(advertised)
        elif policy.allowlist is not None:  # every lookup checks it
            self._open = False
        if tools._discovery is not None:  # type: ignore[attr-defined]
            self._discover()

    def _restrict(self, advertised: Collection[str] | None) -> None:
        """An allow-list or advertised names: every lookup checks them."""
        self._open = False
        if advertised is not None:  # a set as it is (no call), else advertised_names
            self.advertised = (
                advertised
                if type(advertised) is set or type(advertised) is frozenset
                else advertised_names(advertised)
            )

    def _discover(self) -> None:
        """The registry's discovery tools (found once per registry: its ``_discovery`` is
        None once the registry is known to hold none); admission opens every call of a
        batch that has them."""
        self._intrinsics = intrinsics_of(self.tools)

    @property
    def discovery(self) -> Intrinsics | None:
        """The registry's discovery tools, if any."""
        return self._intrinsics

    @property
    def reached(self) -> str | None:
        """The ``Deferred`` tool the call being admitted reached through ``tool_call``."""
        return self._reached

    @property
    def context(self) -> Context:
        """The context injection draws from."""
        context = self._context
        if context is None:
            context = self._context = Context()
        return context

    @property
    def approved(self) -> set[str]:
        """Ids of the calls a human approved (see the class docstring)."""
        approved = self._approved
        if approved is None:
            approved = self._approved = set()
        return approved

    def is_call_approved(self, call_id: str) -> bool:
        """Whether a human approved ``call_id``."""
        return (approved := self._approved) is not None and call_id in approved

    def lookup(self, name: str) -> AnyTool | None:
        """The tool ``name`` names, when the model may call it this turn (fail closed)."""
        tool = self.tools._tools.get(name)
        if tool is None:
            return None
        if self._open:
            return tool if tool.exposure is Exposure.Direct or name == self._reached else None
        if tool.exposure is Exposure.Hidden:
            return None
        allowlist = self.policy.allowlist  # RunPolicy.allows, written out (one frame fewer)
        if (
            allowlist is not None
            and name not in allowlist
            and (allowlist or self.policy.fail_closed_allowlist)
        ):
            return None
        if self.advertised is None:
            return None if tool.exposure is Exposure.Deferred and name != self._reached else tool
        return tool if name in self.advertised or name == self._reached else None

    def resolve(self, name: str) -> tuple[str, AnyTool] | None:
        """The tool a call of ``name`` runs and the name it runs under, or None.

        A name the model may not call reaches the ``Rewrite`` policy's target, when
        there is one: admission and every ``before_tool`` hook judge that same tool.
        """
        tool = self.lookup(name)
        if tool is not None:
            return name, tool
        policy = self.policy.unknown_tool
        if isinstance(policy, Rewrite):
            target = self.lookup(policy.tool_name)
            if target is not None:
                return policy.tool_name, target
        return None

    @property
    def callable(self) -> frozenset[str]:
        """Every name the model may call this turn (computed on demand: it reads the
        whole registry)."""
        return frozenset(name for name in self.tools if self.lookup(name) is not None)

    def __repr__(self) -> str:
        return f"DispatchEnv(tools={self.tools!r}, policy={self.policy!r})"
