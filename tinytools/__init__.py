"""tinytools: plain Python functions as LLM tools, with model tool calls executed safely.

Module map, in the order data flows (every module but the public ones is
private; its public names are re-exported here):

* declare — ``_declare`` (a function or a schema → an immutable ``Tool``: ``@tool``,
  introspection, docstrings, the JSON schema, the argument validators, ``ToolPolicy``,
  ``ToolFormat``, ``ExposureExplanation``, ``Registry``, BFCL's schema dialect; its
  docstring lists its modules in build order), ``_inject`` (``Inject[...]``,
  ``Context``, binding)
* wire — ``_wire`` (``ToolCall``, ``ToolResult``, ``ToolMessage``); ``_text`` (names,
  previews and JSON text that always encode, for messages, events and errors)
* expose — ``toolsets`` (the ``Toolset`` protocol and its adaptors; resolved once
  per dispatch, cached), ``discovery`` (``Catalog``, ``Discovery``)
* admit — ``_middleware`` (``before_tool``/``after_tool``, the wrap hooks),
  ``_engine.env`` (what is callable this turn), ``_engine.admit`` (``admission``: one
  call → a verdict, pure; ``discovery``: ``tool_call`` unwrapped, ``tool_search``
  answered, before admission)
* policy — ``_policy_middleware`` (``ToolPolicyMiddleware``, ``Workspace``),
  ``_human`` (``HumanApprovalMiddleware``), ``_engine.resume`` (deferred calls and
  their resolution), ``_redact`` (secret argument values)
* execute — ``_plan`` (what a tool needs at run time, planned once), ``_engine.execute``
  (one call's attempts, an inline and an event-loop driver, the wrap hooks; the batch
  serial or bounded, deadline, cancellation), ``_engine.stops`` and ``_engine.outcome``,
  ``_runtime`` (long-lived tool threads, dispatch_sync's event loop, asyncio tasks)
* fold — ``_engine.fold`` (result → message, byte limits), ``_artifacts`` (stores),
  ``_engine.result`` (``DispatchResult``), ``_engine.state`` (one dispatch's state and
  its result), ``_engine.api`` (``dispatch``, ``dispatch_sync``), ``_engine.effects``
  (the ledger hook); ``_engine``'s docstring lists its modules in the order a batch flows
* public modules — ``errors``, ``events``, ``policies``, ``repair``, ``formats``
  (``formats.bfcl`` imports BFCL tool definitions), ``toolsets`` (``toolsets.mcp``:
  an MCP client session as a toolset), ``discovery``, ``ledger``, ``testing``
  (hypothesis strategies and ``check_dispatch_invariants``; needs the ``testing``
  extra and is never imported by ``import tinytools``)
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

__version__ = "0.1.0.dev0"

if _typing.TYPE_CHECKING:  # what type checkers and IDEs see; at run time, __getattr__ below
    from ._artifacts import ArtifactRef as ArtifactRef
    from ._artifacts import ArtifactStore as ArtifactStore
    from ._artifacts import DirectoryArtifactStore as DirectoryArtifactStore
    from ._artifacts import MemoryArtifactStore as MemoryArtifactStore
    from ._artifacts import ToolOutput as ToolOutput
    from ._declare.decorate import ToolDecorator as ToolDecorator
    from ._declare.decorate import tool as tool
    from ._declare.registry import AnyTool as AnyTool
    from ._declare.registry import Registry as Registry
    from ._declare.spec import Exposure as Exposure
    from ._declare.spec import Tool as Tool
    from ._declare.tool_format import Json as Json
    from ._declare.tool_format import PType as PType
    from ._declare.tool_format import ToolFormat as ToolFormat
    from ._declare.tool_format import Xml as Xml
    from ._declare.tool_policy import ToolAccess as ToolAccess
    from ._declare.tool_policy import ToolPolicy as ToolPolicy
    from ._declare.tool_policy import ToolRuntime as ToolRuntime
    from ._declare.tool_policy import ToolSideEffects as ToolSideEffects
    from ._engine.api import DeferredToolHandler as DeferredToolHandler
    from ._engine.api import EventHandler as EventHandler
    from ._engine.api import dispatch as dispatch
    from ._engine.api import dispatch_sync as dispatch_sync
    from ._engine.result import DispatchAborted as DispatchAborted
    from ._engine.result import DispatchResult as DispatchResult
    from ._engine.result import FollowUp as FollowUp
    from ._engine.resume import DeferredToolRequests as DeferredToolRequests
    from ._engine.resume import DeferredToolResults as DeferredToolResults
    from ._human import ApprovalCallback as ApprovalCallback
    from ._human import ApprovalOutcome as ApprovalOutcome
    from ._human import HumanApprovalMiddleware as HumanApprovalMiddleware
    from ._inject import CallId as CallId
    from ._inject import Cancellation as Cancellation
    from ._inject import Context as Context
    from ._inject import Emit as Emit
    from ._inject import Inject as Inject
    from ._inject import RunContext as RunContext
    from ._inject import State as State
    from ._inject import Store as Store
    from ._inject import check_context as check_context
    from ._middleware import Allow as Allow
    from ._middleware import Defer as Defer
    from ._middleware import Deny as Deny
    from ._middleware import Middleware as Middleware
    from ._middleware import after_tool as after_tool
    from ._middleware import before_tool as before_tool
    from ._middleware import wrap_tool as wrap_tool
    from ._policy_middleware import ExposureExplanation as ExposureExplanation
    from ._policy_middleware import PolicyExposure as PolicyExposure
    from ._policy_middleware import SideEffect as SideEffect
    from ._policy_middleware import ToolPolicyMiddleware as ToolPolicyMiddleware
    from ._policy_middleware import Workspace as Workspace
    from ._wire import Artifact as Artifact
    from ._wire import ContentBlock as ContentBlock
    from ._wire import FileBlock as FileBlock
    from ._wire import ImageBlock as ImageBlock
    from ._wire import JsonBlock as JsonBlock
    from ._wire import TextBlock as TextBlock
    from ._wire import ToolCall as ToolCall
    from ._wire import ToolMessage as ToolMessage
    from ._wire import ToolResult as ToolResult
    from .errors import ApprovalRequired as ApprovalRequired
    from .errors import CallDeferred as CallDeferred
    from .errors import FatalToolError as FatalToolError
    from .errors import ModelRetry as ModelRetry
    from .errors import RetryableError as RetryableError
    from .errors import TinytoolsError as TinytoolsError
    from .errors import ToolArgumentsError as ToolArgumentsError
    from .errors import ToolDefinitionError as ToolDefinitionError
    from .policies import RunPolicy as RunPolicy

__all__ = [
    "Allow",
    "AnyTool",
    "ApprovalCallback",
    "ApprovalOutcome",
    "ApprovalRequired",
    "Artifact",
    "ArtifactRef",
    "ArtifactStore",
    "CallDeferred",
    "CallId",
    "Cancellation",
    "ContentBlock",
    "Context",
    "Defer",
    "DeferredToolHandler",
    "DeferredToolRequests",
    "DeferredToolResults",
    "Deny",
    "DirectoryArtifactStore",
    "DispatchAborted",
    "DispatchResult",
    "Emit",
    "EventHandler",
    "Exposure",
    "ExposureExplanation",
    "FatalToolError",
    "FileBlock",
    "FollowUp",
    "HumanApprovalMiddleware",
    "ImageBlock",
    "Inject",
    "Json",
    "JsonBlock",
    "MemoryArtifactStore",
    "Middleware",
    "ModelRetry",
    "PType",
    "PolicyExposure",
    "Registry",
    "RetryableError",
    "RunContext",
    "RunPolicy",
    "SideEffect",
    "State",
    "Store",
    "TextBlock",
    "TinytoolsError",
    "Tool",
    "ToolAccess",
    "ToolArgumentsError",
    "ToolCall",
    "ToolDecorator",
    "ToolDefinitionError",
    "ToolFormat",
    "ToolMessage",
    "ToolOutput",
    "ToolPolicy",
    "ToolPolicyMiddleware",
    "ToolResult",
    "ToolRuntime",
    "ToolSideEffects",
    "Workspace",
    "Xml",
    "after_tool",
    "before_tool",
    "check_context",
    "dispatch",
    "dispatch_sync",
    "tool",
    "wrap_tool",
]

#: Where each public name is defined. ``import tinytools`` imports none of these modules:
#: each is imported the first time one of its names is read (PEP 562), so declaring a
#: tool loads no event loop, and a script that only validates loads no toolset, format,
#: ledger or discovery module.
_HOMES: dict[str, str] = {
    "Allow": "._middleware",
    "AnyTool": "._declare.registry",
    "ApprovalCallback": "._human",
    "ApprovalOutcome": "._human",
    "ApprovalRequired": ".errors",
    "Artifact": "._wire",
    "ArtifactRef": "._artifacts",
    "ArtifactStore": "._artifacts",
    "CallDeferred": ".errors",
    "CallId": "._inject",
    "Cancellation": "._inject",
    "ContentBlock": "._wire",
    "Context": "._inject",
    "Defer": "._middleware",
    "DeferredToolHandler": "._engine.api",
    "DeferredToolRequests": "._engine.resume",
    "DeferredToolResults": "._engine.resume",
    "Deny": "._middleware",
    "DirectoryArtifactStore": "._artifacts",
    "DispatchAborted": "._engine.result",
    "DispatchResult": "._engine.result",
    "Emit": "._inject",
    "EventHandler": "._engine.api",
    "Exposure": "._declare.spec",
    "ExposureExplanation": "._policy_middleware",
    "FatalToolError": ".errors",
    "FileBlock": "._wire",
    "FollowUp": "._engine.result",
    "HumanApprovalMiddleware": "._human",
    "ImageBlock": "._wire",
    "Inject": "._inject",
    "Json": "._declare.tool_format",
    "JsonBlock": "._wire",
    "MemoryArtifactStore": "._artifacts",
    "Middleware": "._middleware",
    "ModelRetry": ".errors",
    "PType": "._declare.tool_format",
    "PolicyExposure": "._policy_middleware",
    "Registry": "._declare.registry",
    "RetryableError": ".errors",
    "RunContext": "._inject",
    "RunPolicy": ".policies",
    "SideEffect": "._policy_middleware",
    "State": "._inject",
    "Store": "._inject",
    "TextBlock": "._wire",
    "TinytoolsError": ".errors",
    "Tool": "._declare.spec",
    "ToolAccess": "._declare.tool_policy",
    "ToolArgumentsError": ".errors",
    "ToolCall": "._wire",
    "ToolDecorator": "._declare.decorate",
    "ToolDefinitionError": ".errors",
    "ToolFormat": "._declare.tool_format",
    "ToolMessage": "._wire",
    "ToolOutput": "._artifacts",
    "ToolPolicy": "._declare.tool_policy",
    "ToolPolicyMiddleware": "._policy_middleware",
    "ToolResult": "._wire",
    "ToolRuntime": "._declare.tool_policy",
    "ToolSideEffects": "._declare.tool_policy",
    "Workspace": "._policy_middleware",
    "Xml": "._declare.tool_format",
    "after_tool": "._middleware",
    "before_tool": "._middleware",
    "check_context": "._inject",
    "dispatch": "._engine.api",
    "dispatch_sync": "._engine.api",
    "tool": "._declare.decorate",
    "wrap_tool": "._middleware",
}


if not _typing.TYPE_CHECKING:  # (hidden from type checkers, which then refuse a typo)

    def __getattr__(name: str) -> object:
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(_importlib.import_module(home, __name__), name)
        _report_tinytools(value)
        globals()[name] = value  # (read once: later reads find it without this function)
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _report_tinytools(value: object) -> None:
    """Report ``tinytools`` as the home of an exported class or function."""
    if isinstance(value, type) or callable(value):
        try:
            if str(getattr(value, "__module__", "")).startswith("tinytools."):
                value.__module__ = __name__
        except (AttributeError, TypeError):  # builtins and aliases refuse it
            pass
