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
* public modules — ``errors``, ``repair``
"""

from __future__ import annotations

from ._decorate import ToolDecorator as ToolDecorator
from ._decorate import tool as tool
from ._format import Json as Json
from ._format import PType as PType
from ._format import ToolFormat as ToolFormat
from ._format import Xml as Xml
from ._import import schema_from_bfcl as schema_from_bfcl
from ._import import tool_from_bfcl as tool_from_bfcl
from ._inject import CallId as CallId
from ._inject import CallRuntime as CallRuntime
from ._inject import Cancellation as Cancellation
from ._inject import Context as Context
from ._inject import Emit as Emit
from ._inject import Inject as Inject
from ._inject import RunContext as RunContext
from ._inject import State as State
from ._inject import Store as Store
from ._inject import bind as bind
from ._inject import check_context as check_context
from ._registry import AnyTool as AnyTool
from ._registry import Registry as Registry
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
from ._wire import wrap_return as wrap_return
from .errors import ApprovalRequired as ApprovalRequired
from .errors import CallDeferred as CallDeferred
from .errors import FatalToolError as FatalToolError
from .errors import ModelRetry as ModelRetry
from .errors import RetryableError as RetryableError
from .errors import TinytoolsError as TinytoolsError
from .errors import ToolArgumentsError as ToolArgumentsError
from .errors import ToolDefinitionError as ToolDefinitionError

__version__ = "0.1.0.dev0"

__all__ = [
    "AnyTool",
    "ApprovalRequired",
    "Artifact",
    "CallDeferred",
    "CallId",
    "CallRuntime",
    "Cancellation",
    "ContentBlock",
    "Context",
    "Emit",
    "Exposure",
    "FatalToolError",
    "FileBlock",
    "ImageBlock",
    "Inject",
    "Json",
    "JsonBlock",
    "ModelRetry",
    "PType",
    "Registry",
    "RetryableError",
    "RunContext",
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
    "ToolPolicy",
    "ToolResult",
    "ToolRuntime",
    "ToolSideEffects",
    "Xml",
    "bind",
    "check_context",
    "schema_from_bfcl",
    "tool",
    "tool_from_bfcl",
    "wrap_return",
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
