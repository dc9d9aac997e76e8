"""OpenAI Agents SDK (``openai-agents``): ``function_tool(fn)``, ``on_invoke_tool`` and an agent
turn (``Runner.run`` with a scripted ``Model``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, function_tool
from agents.items import ItemHelpers
from agents.tool_context import ToolContext
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from benchmarks._turn import CALLS, FINAL, USER

LABEL = "openai-agents function_tool"
#: One call through the tool's invoker, as the runner makes it; awaited in an asyncio loop.
DISPATCH_LABEL = "openai-agents FunctionTool.on_invoke_tool"
DISPATCH_LOOP = "asyncio"


def build(fn: Callable[..., object]) -> object:
    """A tool with its JSON schema (built eagerly by ``function_tool``).

    ``strict_mode=False`` because the SDK's strict mode rejects ``dict[str, str]`` parameters
    (the 20-parameter tool has one); strict mode would only add a pass over the schema.
    """
    return function_tool(fn, strict_mode=False)


def dispatcher(fn: Callable[..., object], raw: str) -> Callable[[], Awaitable[object]]:
    """One call of ``fn`` on ``raw`` JSON arguments, answered with a function-call output item.

    The model's ``ResponseFunctionToolCall`` is built once; per call the runner's
    ``ToolContext`` is made, ``on_invoke_tool`` parses, validates and runs the tool (a
    synchronous one in a worker thread), and the output item for the next request is built.
    """
    made = function_tool(fn, strict_mode=False)
    call = ResponseFunctionToolCall(
        arguments=raw, call_id="call_1", name=made.name, type="function_call"
    )

    async def invoke() -> object:
        context = ToolContext(
            None, tool_name=made.name, tool_call_id="call_1", tool_arguments=raw, tool_call=call
        )
        output = await made.on_invoke_tool(context, raw)
        return ItemHelpers.tool_call_output_item(call, output)

    return invoke


#: One agent turn (``benchmarks/_turn.py``): ``Runner.run`` with a scripted ``Model``.
TURN_LABEL = "openai-agents Runner.run, scripted Model"


class _Scripted(Model):
    """The turn's model: the three calls for the question, the final text after the
    tools' outputs (whose call ids go to ``seen``). A response is made per request, as the
    SDK's own models make one; its output items are built once."""

    def __init__(self, seen: list[str] | None) -> None:
        self.seen = seen
        self.calls = [
            ResponseFunctionToolCall(arguments=raw, call_id=i, name=n, type="function_call")
            for i, n, raw in CALLS
        ]
        text = ResponseOutputText(text=FINAL, type="output_text", annotations=[])
        self.text = ResponseOutputMessage(
            id="msg_1", content=[text], role="assistant", status="completed", type="message"
        )

    async def get_response(
        self, system_instructions: object, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        outputs = (
            []
            if isinstance(input, str)
            else [item["call_id"] for item in input if item.get("type") == "function_call_output"]
        )
        if not outputs:
            return ModelResponse(output=list(self.calls), usage=Usage(), response_id=None)
        if self.seen is not None:
            self.seen.extend(outputs)
        return ModelResponse(output=[self.text], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the benchmark's turn does not stream")


def turn(
    functions: Sequence[Callable[..., object]], seen: list[str] | None = None
) -> Callable[[], Awaitable[str]]:
    """The turn of ``benchmarks/_turn.py`` through ``Runner.run``.

    The runner calls the scripted model (:class:`_Scripted`), parses and validates each
    call's arguments, runs the tools (a synchronous one in a worker thread; the calls of a
    response at once), builds the next input from the output items and ends the run on the
    text. Tracing is off (``RunConfig(tracing_disabled=True)``): on, it would export spans
    to OpenAI's servers.
    """
    agent = Agent(
        name="turn",
        model=_Scripted(seen),
        tools=[function_tool(fn, strict_mode=False) for fn in functions],
    )
    config = RunConfig(tracing_disabled=True)

    async def run() -> str:
        return str((await Runner.run(agent, USER, run_config=config)).final_output)

    return run
