"""OpenAI Agents SDK (``openai-agents``): ``function_tool(fn)`` and ``on_invoke_tool``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agents import function_tool
from agents.items import ItemHelpers
from agents.tool_context import ToolContext
from openai.types.responses import ResponseFunctionToolCall

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
