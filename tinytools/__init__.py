"""tinytools: plain Python functions as LLM tools, with model tool calls executed safely.

Module map, in the order data flows (every module but the public ones is
private; its public names are re-exported here):

* declare — ``_decorate`` (``@tool``), ``_introspect`` (signature → params),
  ``_docstrings`` (parameter descriptions), ``_inject`` (``Inject[...]``,
  ``Context``, binding)
* spec — ``_spec`` (``Tool``), ``_schema`` (params → JSON schema),
  ``_validate`` (compiled validators), ``_tool_policy`` (``ToolPolicy``),
  ``_format`` (``ToolFormat``), ``_registry`` (``Registry``), ``_import``
  (foreign schema dialects such as BFCL's)
* wire — ``_wire`` (``ToolCall``, ``ToolResult``, ``ToolMessage``)
* expose — ``toolsets`` (the ``Toolset`` protocol and its adaptors; resolved once
  per dispatch, cached), ``_exposure`` (``ExposureExplanation``), ``discovery``
  (``Catalog``, ``Discovery``)
* admit — ``_dispatch_env`` (what is callable this turn), ``_middleware``
  (``before_tool``/``after_tool``), ``_discovery_calls`` (``tool_call`` unwrapped,
  ``tool_search`` answered, before admission), ``_admit`` (one call → a verdict, pure)
* policy — ``_policy_middleware`` (``ToolPolicyMiddleware``, ``Workspace``),
  ``_human`` (``HumanApprovalMiddleware``), ``_approvals`` (deferred calls and
  their resolution), ``_redact`` (secret argument values)
* execute — ``_plan`` (what a tool needs at run time, planned once), ``_execute``
  (one call without an event loop: inject, run, timeout, retry, classify),
  ``_concurrency`` (one call and the batch under an event loop: serial or bounded,
  deadline, cancellation), ``_workers`` (long-lived tool threads and event loop)
* fold — ``_fold`` (result → message, byte limits), ``_artifacts`` (stores),
  ``_result`` (``DispatchResult``), ``_run`` (one dispatch's state and its result),
  ``_dispatch`` (``dispatch``, ``dispatch_sync``), ``_effects`` (the ledger hook)
* public modules — ``errors``, ``events``, ``policies``, ``repair``, ``formats``
  (``formats.bfcl`` imports BFCL tool definitions), ``toolsets`` (``toolsets.mcp``:
  an MCP client session as a toolset), ``discovery``, ``ledger``, ``testing``
  (hypothesis strategies and ``check_dispatch_invariants``; needs the ``testing``
  extra and is never imported by ``import tinytools``)
"""

from __future__ import annotations

from ._approvals import DeferredToolRequests as DeferredToolRequests
from ._approvals import DeferredToolResults as DeferredToolResults
from ._artifacts import ArtifactRef as ArtifactRef
from ._artifacts import ArtifactStore as ArtifactStore
from ._artifacts import DirectoryArtifactStore as DirectoryArtifactStore
from ._artifacts import MemoryArtifactStore as MemoryArtifactStore
from ._artifacts import ToolOutput as ToolOutput
from ._decorate import ToolDecorator as ToolDecorator
from ._decorate import tool as tool
from ._dispatch import DeferredToolHandler as DeferredToolHandler
from ._dispatch import EventHandler as EventHandler
from ._dispatch import dispatch as dispatch
from ._dispatch import dispatch_sync as dispatch_sync
from ._format import Json as Json
from ._format import PType as PType
from ._format import ToolFormat as ToolFormat
from ._format import Xml as Xml
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
from ._registry import AnyTool as AnyTool
from ._registry import Registry as Registry
from ._result import DispatchAborted as DispatchAborted
from ._result import DispatchResult as DispatchResult
from ._result import FollowUp as FollowUp
from ._spec import Exposure as Exposure
from ._spec import Tool as Tool
from ._tool_policy import ToolAccess as ToolAccess
from ._tool_policy import ToolPolicy as ToolPolicy
from ._tool_policy import ToolRuntime as ToolRuntime
from ._tool_policy import ToolSideEffects as ToolSideEffects
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

__version__ = "0.1.0.dev0"

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


def _fix_module_names() -> None:
    """Report ``tinytools`` as the home of every exported class and function."""
    for name in __all__:
        value = globals()[name]
        if isinstance(value, type) or callable(value):
            try:
                if str(getattr(value, "__module__", "")).startswith("tinytools."):
                    value.__module__ = __name__
            except (AttributeError, TypeError):  # builtins and aliases refuse it
                pass


_fix_module_names()
