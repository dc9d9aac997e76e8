"""``ApprovalRequired``: calls wait for a human's approval."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from tinytools._declare.exposure import ExposureExplanation
from tinytools._declare.registry import AnyTool
from tinytools._declare.spec import Tool

from ._base import Resolution, When, Wrapper, label
from ._intrinsic import is_intrinsic

if TYPE_CHECKING:
    from tinytools._inject import Context

__all__ = ["ApprovalRequired"]


def _gated(tool: AnyTool) -> AnyTool:
    access = attrs.evolve(tool.policy.access, approval_required=True)
    return attrs.evolve(tool, policy=attrs.evolve(tool.policy, access=access))


@attrs.frozen
class ApprovalRequired(Wrapper):
    """The tools of ``toolset``, their calls deferred until a human approves them.

    A deferred call lands in ``DispatchResult.deferred.approvals`` and resumes
    through ``DeferredToolResults`` like any approval-gated call. The tools'
    policies say ``access.approval_required``, so ``HumanApprovalMiddleware``
    asks about them too (and ``when`` decides there as well). Discovery's
    ``tool_search`` and ``tool_call`` are left as they are: the real tool a
    ``tool_call`` reaches is what is gated.

    Args:
        toolset: The toolset to gate.
        when: ``when(call, context) -> bool``: whether this call needs approval
            (default: every call). It sees the call as the model sent it; one
            that raises counts as ``True``.
    """

    when: When | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.is_callable())
    )

    def label(self) -> str:
        return (
            "ApprovalRequired()" if self.when is None else f"ApprovalRequired({label(self.when)})"
        )

    def _adapt(self, inner: Resolution, context: Context | None) -> Resolution:
        when, where = self.when, self.label()
        gates = dict(inner.gates)
        tools: list[Tool[..., object]] = []
        explained: list[ExposureExplanation] = []
        for tool in inner.tools:
            if is_intrinsic(tool):
                tools.append(tool)
                continue
            already = tool.policy.access.approval_required
            if already and (tool.name not in gates or when is not None):
                if when is not None and tool.name in gates:
                    gates[tool.name] = (*gates[tool.name], when)
                tools.append(tool)  # gated for every call already (or one more condition)
                continue
            if when is None:
                gates.pop(tool.name, None)
                reason = "every call waits for a human's approval"
            else:
                gates[tool.name] = (when,)
                reason = f"calls for which {label(when)}(call, context) holds wait for approval"
            tools.append(tool if already else _gated(tool))
            explained.append(ExposureExplanation(tool.name, reason, where, tool.name))
        return Resolution(tuple(tools), (*inner.explanations, *explained), gates)
