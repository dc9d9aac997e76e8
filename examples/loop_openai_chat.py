"""An agent loop over the OpenAI Chat Completions API, streamed or not.

The loop declares the tools, reads the model's calls, runs them with
``dispatch_sync`` and sends the results back, until the model answers in
text. No message is built by hand: ``openai_chat.assistant_message`` (or the
accumulator's ``message()`` for a stream) writes the assistant turn and
``openai_chat.tool_results`` the tool messages.

Run it against OpenAI (or any OpenAI-compatible server, with ``OPENAI_BASE_URL``)::

    OPENAI_API_KEY=... python examples/loop_openai_chat.py "Weather in Paris?" [--stream]
"""

from __future__ import annotations

import sys
from typing import Any

from tinytools import Registry, dispatch_sync, tool
from tinytools.formats import openai_chat


@tool
def get_weather(city: str) -> dict[str, object]:
    """Get the current weather for a city.

    Args:
        city: The city, such as "Paris".
    """
    return {"city": city, "celsius": 21, "sky": "clear"}


TOOLS = Registry.of(get_weather)


def run(client: Any, question: str, *, model: str = "gpt-4.1-mini", stream: bool = False) -> str:
    """Ask ``question`` and answer every tool call until the model replies in text.

    Args:
        client: An ``openai.OpenAI`` client.
        question: The user's message.
        model: The model to ask.
        stream: Stream each completion (the calls are then accumulated from chunks).
    """
    messages: list[Any] = [{"role": "user", "content": question}]
    tools = openai_chat.declarations(TOOLS)
    for _ in range(10):
        if stream:
            accumulator = openai_chat.ToolCallAccumulator()
            chunks = client.chat.completions.create(
                model=model, messages=messages, tools=tools, stream=True
            )
            for chunk in chunks:
                accumulator.add(chunk)
            calls, text, turn = accumulator.calls(), accumulator.text(), accumulator.message()
        else:
            completion = client.chat.completions.create(model=model, messages=messages, tools=tools)
            calls = openai_chat.parse_calls(completion)
            text = completion.choices[0].message.content or ""
            turn = openai_chat.assistant_message(calls, text or None)
        if not calls:
            return text
        messages.append(turn)
        result = dispatch_sync(calls, TOOLS)  # every call is answered, errors included
        messages += openai_chat.tool_results(result.messages)
    raise RuntimeError("the model was still calling tools after 10 turns")


if __name__ == "__main__":
    from openai import OpenAI

    print(run(OpenAI(), sys.argv[1], stream="--stream" in sys.argv))
