"""Pydantic AI (``pydantic-ai-slim``): ``Tool(fn)``, ``ToolManager.handle_call`` and an agent
turn (``Agent.run`` with a ``FunctionModel``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai.usage import RunUsage

from benchmarks._turn import CALLS, FINAL, USER

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


#: One agent turn (``benchmarks/_turn.py``): ``Agent.run`` with a scripted ``FunctionModel``.
TURN_LABEL = "pydantic-ai Agent.run, FunctionModel"


def turn(
    functions: Sequence[Callable[..., object]], seen: list[str] | None = None
) -> Callable[[], Awaitable[str]]:
    """The turn of ``benchmarks/_turn.py`` through ``Agent.run``.

    The scripted model answers the question with one response of three ``ToolCallPart``
    (raw JSON arguments) and the request holding the tool returns with the final text
    (``seen`` gets those returns' call ids); a response is made per request, as a model
    adapter makes one (the agent keeps it in the run's history). The agent validates and
    runs the tools (a synchronous one in a worker thread; the calls of a response at once),
    builds the next request and ends the run on the text.
    """

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts
        returns = [p.tool_call_id for p in last if isinstance(p, ToolReturnPart)]
        if not returns:
            return ModelResponse(
                [ToolCallPart(tool_name=n, args=raw, tool_call_id=i) for i, n, raw in CALLS]
            )
        if seen is not None:
            seen.extend(returns)
        return ModelResponse([TextPart(FINAL)])

    agent = Agent(FunctionModel(respond), tools=[Tool(fn) for fn in functions])

    async def run() -> str:
        return (await agent.run(USER)).output

    return run
