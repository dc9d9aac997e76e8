"""``External``: tools the host executes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from tinytools._declare.exposure import ExposureExplanation

from ._base import Resolution, Wrapper
from ._intrinsic import is_intrinsic

if TYPE_CHECKING:
    from tinytools._inject import Context

__all__ = ["External"]


@attrs.frozen
class External(Wrapper):
    """The tools of ``toolset``, executed by the host, not by dispatch.

    Their calls are admitted like any other (names, allow-list, schema) and
    then deferred into ``DispatchResult.deferred.calls``; the host runs them
    and resumes with ``DeferredToolResults.respond(call_id, result)``.
    Discovery's ``tool_search`` and ``tool_call`` are left as they are.

    Args:
        toolset: The toolset whose tools the host executes.
    """

    def _adapt(self, inner: Resolution, context: Context | None) -> Resolution:
        reason = "external: the host executes its calls (they are deferred to it)"
        tools = tuple(
            t if t.fn is None or is_intrinsic(t) else attrs.evolve(t, fn=None) for t in inner.tools
        )
        explained = tuple(
            ExposureExplanation(t.name, reason, "External", t.name)
            for t in inner.tools
            if t.fn is not None and not is_intrinsic(t)
        )
        return Resolution(tools, (*inner.explanations, *explained), inner.gates)
