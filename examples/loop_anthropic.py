"""An agent loop over the Anthropic Messages API, streamed or not.

Without streaming, the SDK's ``message.content`` goes back as the assistant
turn. Streamed, the loop uses ``client.messages.create(..., stream=True)`` and
feeds each raw event to ``anthropic.ToolCallAccumulator``: that is the
supported way to stream tool calls. (The SDK's ``client.messages.stream()``
helper parses partial JSON itself and raises from inside the SDK when a model
writes broken arguments; with raw events such a call reaches dispatch as an
invalid call, which the model is told about.) ``anthropic.tool_results`` puts
every result of the turn in one user message, as Anthropic requires.

Run it::

    ANTHROPIC_API_KEY=... python examples/loop_anthropic.py "Weather in Paris?" [--stream]
"""

from __future__ import annotations

import sys
from typing import Any

from tinytools import Registry, dispatch_sync, tool
from tinytools.formats import anthropic


@tool
def get_weather(city: str) -> dict[str, object]:
    """Get the current weather for a city.

    Args:
        city: The city, such as "Paris".
    """
    return {"city": city, "celsius": 21, "sky": "clear"}


TOOLS = Registry.of(get_weather)


def run(client: Any, question: str, *, model: str = "claude-sonnet-5", stream: bool = False) -> str:
    """Ask ``question`` and answer every ``tool_use`` until the model replies in text.

    Args:
        client: An ``anthropic.Anthropic`` client.
        question: The user's message.
        model: The model to ask.
        stream: Stream each message from its raw events.
    """
    messages: list[Any] = [{"role": "user", "content": question}]
    tools = anthropic.declarations(TOOLS)
    for _ in range(10):
        request = {"model": model, "max_tokens": 1024, "messages": messages, "tools": tools}
        if stream:
            accumulator = anthropic.ToolCallAccumulator()
            for event in client.messages.create(**request, stream=True):
                accumulator.add(event)
            calls, text, turn = accumulator.calls(), accumulator.text(), accumulator.message()
        else:
            message = client.messages.create(**request)
            calls = anthropic.parse_calls(message)
            text = "".join(block.text for block in message.content if block.type == "text")
            turn = {"role": "assistant", "content": message.content}
        if not calls:
            return text
        messages.append(turn)
        messages += anthropic.tool_results(dispatch_sync(calls, TOOLS).messages)
    raise RuntimeError("the model was still calling tools after 10 turns")


if __name__ == "__main__":
    from anthropic import Anthropic

    print(run(Anthropic(), sys.argv[1], stream="--stream" in sys.argv))
