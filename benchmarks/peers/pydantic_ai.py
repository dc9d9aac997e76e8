"""Pydantic AI (``pydantic-ai-slim``): ``Tool(fn)`` and ``ToolManager.handle_call``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic_ai import RunContext, Tool
from pydantic_ai.messages import ToolCallPart, ToolReturnPart
from pydantic_ai.models.test import TestModel
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import RunUsage

LABEL = "pydantic-ai Tool(fn)"
#: One call through the dispatcher an agent run uses; awaited in an asyncio event loop.
DISPATCH_LABEL = "pydantic-ai ToolManager.handle_call"
DISPATCH_LOOP = "asyncio"


def build(fn: Callable[..., object]) -> object:
    """A tool with its definition (the schema is built eagerly by ``Tool``)."""
    made = Tool(fn)
    _ = made.tool_def
    return made


def dispatcher(fn: Callable[..., object], raw: str) -> Callable[[], Awaitable[object]]:
    """One call of ``fn`` on ``raw`` JSON arguments, answered with a ``ToolReturnPart``.

    The model's ``ToolCallPart`` (raw JSON arguments) is built once, as the model adapter
    would; ``handle_call`` validates, runs the tool (a synchronous one in a worker thread)
    and retries; the return part is what the agent graph appends to the history. The tool
    manager is prepared for its run step on the first call, inside the event loop.
    """
    call = ToolCallPart(tool_name=fn.__name__, args=raw, tool_call_id="call_1")
    managers: list[ToolManager[None]] = []

    async def handle() -> object:
        if not managers:
            context = RunContext(deps=None, model=TestModel(), usage=RunUsage())
            managers.append(await ToolManager(FunctionToolset([fn])).for_run_step(context))
        value = await managers[0].handle_call(call)
        return ToolReturnPart(tool_name=call.tool_name, content=value, tool_call_id="call_1")

    return handle
