"""``ExposureExplanation``: why a tool is not shown to the model as it was defined.

Toolset adaptors (``tinytools.toolsets``), discovery's manifest budget and
``ToolPolicyMiddleware.expose`` all answer "why can't the model see X?" with
these values.
"""

from __future__ import annotations

import attrs

__all__ = ["ExposureExplanation"]


@attrs.frozen
class ExposureExplanation:
    """Why the tool ``name`` was left out, or how it was changed.

    Attributes:
        name: The tool's name as the explaining step received it.
        reason: What happened and why, in words for a person.
        adaptor: The step that decided (``"Filtered(keep_public)"``,
            ``"Prefixed('gh_')"``, ``"Registry"``...); empty when a policy
            middleware explains.
        exposed_as: The name the tool goes on under when it was changed
            (renamed, re-described, made approval-gated, demoted to
            ``Deferred``...); ``None`` when it was left out.
    """

    name: str
    reason: str
    adaptor: str = ""
    exposed_as: str | None = None

    @property
    def left_out(self) -> bool:
        """Whether the step left the tool out (rather than changing it)."""
        return self.exposed_as is None
