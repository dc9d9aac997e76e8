"""LangGraph (``langgraph``): ``ToolNode.invoke`` on an ``AIMessage`` carrying one tool call."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

#: One call through the prebuilt tool node; a plain synchronous call.
DISPATCH_LABEL = "LangGraph ToolNode.invoke"
DISPATCH_LOOP = "sync"

# Outside a compiled graph, ToolNode (langgraph >= 1.0) finds its runtime under this private
# config key, which a graph sets for each node it runs; older versions ignore it.
_RUNTIME_KEY = "__pregel_runtime"


def dispatcher(fn: Callable[..., object], raw: str) -> Callable[[], object]:
    """One call of ``fn`` on ``raw`` JSON arguments, answered with a ``ToolMessage``.

    The state holds the model's ``AIMessage`` (decoded arguments, built once); ``invoke``
    validates, runs the tool (through a thread pool, as ToolNode runs every batch) and
    returns ``{"messages": [ToolMessage]}``.
    """
    node = ToolNode([StructuredTool.from_function(fn, parse_docstring=True)])
    call = {"name": fn.__name__, "args": json.loads(raw), "id": "call_1", "type": "tool_call"}
    state: Any = {"messages": [AIMessage(content="", tool_calls=[call])]}
    config: Any = {"configurable": {_RUNTIME_KEY: Runtime()}}
    return lambda: node.invoke(state, config)


#: The same call through a compiled one-node graph (how an application runs ToolNode).
GRAPH_LABEL = "LangGraph one-node StateGraph.invoke"


def graph_dispatcher(fn: Callable[..., object], raw: str) -> Callable[[], object]:
    """The same call as :func:`dispatcher`, through ``StateGraph`` → ToolNode → end."""
    from langgraph.graph import END, START, MessagesState, StateGraph

    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([StructuredTool.from_function(fn, parse_docstring=True)]))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    compiled = graph.compile()
    call = {"name": fn.__name__, "args": json.loads(raw), "id": "call_1", "type": "tool_call"}
    state: Any = {"messages": [AIMessage(content="", tool_calls=[call])]}
    return lambda: compiled.invoke(state)
