"""What every stage of one dispatch sees: :class:`DispatchEnv` (built once per batch)."""

from __future__ import annotations

import attrs

from ._inject import Context
from ._registry import AnyTool, Registry
from ._spec import Exposure
from .policies import Rewrite, RunPolicy

__all__ = ["DispatchEnv"]


@attrs.frozen
class DispatchEnv:
    """The batch-wide inputs of dispatch.

    Attributes:
        tools: The registry calls are resolved against.
        policy: The run policy.
        context: What injection draws from.
        advertised: The names offered to the model this turn, if restricted.
        approved: Ids of the calls a human approved (on resume, or by middleware
            returning ``Approved``); grows as admission goes on.
    """

    tools: Registry
    policy: RunPolicy
    context: Context
    advertised: frozenset[str] | None = None
    approved: set[str] = attrs.field(factory=set, eq=False)

    def is_call_approved(self, call_id: str) -> bool:
        """Whether a human approved ``call_id``."""
        return call_id in self.approved

    def lookup(self, name: str) -> AnyTool | None:
        """The tool ``name`` names, when the model may call it this turn (fail closed)."""
        tool = self.tools.get(name)
        if tool is None or tool.exposure is Exposure.Hidden or not self.policy.allows(name):
            return None
        if self.advertised is None:
            return None if tool.exposure is Exposure.Deferred else tool
        return tool if name in self.advertised else None

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
        """Every name the model may call this turn (computed on demand, for messages)."""
        return frozenset(name for name in self.tools if self.lookup(name) is not None)
