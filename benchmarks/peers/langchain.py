"""LangChain (``langchain-core``): ``StructuredTool.from_function`` and ``.invoke``."""

from __future__ import annotations

import json
from collections.abc import Callable

from langchain_core.tools import StructuredTool

LABEL = "LangChain StructuredTool.from_function"
#: One call through ``StructuredTool.invoke`` with a tool-call dict; a plain synchronous call.
DISPATCH_LABEL = "LangChain StructuredTool.invoke(ToolCall)"
DISPATCH_LOOP = "sync"


def build(fn: Callable[..., object]) -> object:
    """A tool with its JSON schema, as a user gets it ready to send.

    ``parse_docstring=True`` so descriptions come from the docstring, as in tinytools; the
    schema is generated lazily by LangChain, so it is asked for here.
    """
    made = StructuredTool.from_function(fn, parse_docstring=True)
    made.tool_call_schema.model_json_schema()  # type: ignore[union-attr]
    return made


def dispatcher(fn: Callable[..., object], raw: str) -> Callable[[], object]:
    """One call of ``fn`` on ``raw`` JSON arguments, answered with a ``ToolMessage``.

    LangChain's tool-call dict carries decoded arguments (its chat models decode them when
    they build the ``AIMessage``), so the dict is built once; ``invoke`` validates, runs the
    tool and returns the ``ToolMessage``.
    """
    made = StructuredTool.from_function(fn, parse_docstring=True)
    call = {"name": made.name, "args": json.loads(raw), "id": "call_1", "type": "tool_call"}
    return lambda: made.invoke(call)
