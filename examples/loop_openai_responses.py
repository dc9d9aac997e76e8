"""An agent loop over the OpenAI Responses API, streamed or not.

Without streaming the loop is stateful: each request names the previous
response (``previous_response_id``) and sends only the tool results. Streamed,
it is stateless: the accumulator's finished ``items()`` (reasoning included)
and the results extend the input, which is what a ``store=False`` or
zero-data-retention setup needs.

Run it::

    OPENAI_API_KEY=... python examples/loop_openai_responses.py "Weather in Paris?" [--stream]
"""

from __future__ import annotations

import sys
from typing import Any

from tinytools import Registry, dispatch_sync, tool
from tinytools.formats import openai_responses


@tool
def get_weather(city: str) -> dict[str, object]:
    """Get the current weather for a city.

    Args:
        city: The city, such as "Paris".
    """
    return {"city": city, "celsius": 21, "sky": "clear"}


TOOLS = Registry.of(get_weather)


def run(client: Any, question: str, *, model: str = "gpt-4.1-mini", stream: bool = False) -> str:
    """Ask ``question`` and answer every function call until the model replies in text.

    Args:
        client: An ``openai.OpenAI`` client.
        question: The user's message.
        model: The model to ask.
        stream: Stream each response and keep the conversation on this side.
    """
    tools = openai_responses.declarations(TOOLS)
    if stream:
        return _streamed(client, question, model, tools)
    response = client.responses.create(model=model, input=question, tools=tools)
    for _ in range(10):
        calls = openai_responses.parse_calls(response)
        if not calls:
            return str(response.output_text)
        result = dispatch_sync(calls, TOOLS)
        response = client.responses.create(
            model=model,
            input=openai_responses.tool_results(result.messages),
            previous_response_id=response.id,
            tools=tools,
        )
    raise RuntimeError("the model was still calling tools after 10 turns")


def _streamed(client: Any, question: str, model: str, tools: list[dict[str, object]]) -> str:
    items: list[Any] = [{"role": "user", "content": question}]
    for _ in range(10):
        accumulator = openai_responses.ToolCallAccumulator()
        for event in client.responses.create(model=model, input=items, tools=tools, stream=True):
            accumulator.add(event)
        calls = accumulator.calls()
        if not calls:
            return accumulator.text()
        items += accumulator.items()  # the whole turn, reasoning included
        items += openai_responses.tool_results(dispatch_sync(calls, TOOLS).messages)
    raise RuntimeError("the model was still calling tools after 10 turns")


if __name__ == "__main__":
    from openai import OpenAI

    print(run(OpenAI(), sys.argv[1], stream="--stream" in sys.argv))
