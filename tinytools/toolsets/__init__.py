"""Toolsets: compose which tools a run may expose and call, and explain the rest.

A toolset answers ``tools(context)`` (what this run may expose and call, in
order, each with its ``exposure``) and ``explain(context)`` (every tool it left
out or changed, and why). ``Registry`` is a toolset; the adaptors here are
frozen values over other toolsets that compose in any order::

    toolset = Combined(
        Registry.of(search, read_file),
        Prefixed(github_tools, "gh_"),
        ApprovalRequired(Registry.of(delete_file)),
    )
    dispatch_sync(calls, toolset, context=context)     # resolved once, cached

``dispatch``, ``dispatch_sync`` and every ``formats.*.declarations`` accept a
toolset. ``tinytools.toolsets.mcp.McpToolset`` (extra ``mcp``) turns a live MCP
client session into one; ``tinytools.discovery.Discovery`` adds deferred
discovery.
"""

from __future__ import annotations

from tinytools._declare.exposure import ExposureExplanation
from tinytools._declare.spec import Exposure

from ._base import Toolset
from .approval import ApprovalRequired
from .combined import Combined
from .external import External
from .filtered import Filtered
from .prefixed import Prefixed
from .prepared import Prepared
from .renamed import Renamed

__all__ = [
    "ApprovalRequired",
    "Combined",
    "Exposure",
    "ExposureExplanation",
    "External",
    "Filtered",
    "Prefixed",
    "Prepared",
    "Renamed",
    "Toolset",
]
