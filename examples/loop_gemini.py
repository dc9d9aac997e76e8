"""An agent loop over Google Gemini (``google-genai``), streamed or not.

The model's own ``Content`` goes back as its turn (Gemini 3 needs the thought
signatures it carries); streamed, ``gemini.ToolCallAccumulator.message()``
rebuilds it with the signatures kept. ``gemini.tool_results`` puts every
result in one user ``Content`` of ``functionResponse`` parts, with a tool's
JSON output as an object. A call Gemini could not produce
(``MALFORMED_FUNCTION_CALL`` and the like) raises ``ToolCallsFailed`` saying
what to do, instead of looking like a plain answer with no calls.

Run it::

    GEMINI_API_KEY=... python examples/loop_gemini.py "Weather in Paris?" [--stream]
"""

from __future__ import annotations

import sys
from typing import Any

from tinytools import Registry, dispatch_sync, tool
from tinytools.formats import gemini


@tool
def get_weather(city: str) -> dict[str, object]:
    """Get the current weather for a city.

    Args:
        city: The city, such as "Paris".
    """
    return {"city": city, "celsius": 21, "sky": "clear"}


TOOLS = Registry.of(get_weather)


def run(
    client: Any, question: str, *, model: str = "gemini-2.5-flash", stream: bool = False
) -> str:
    """Ask ``question`` and answer every function call until the model replies in text.

    Args:
        client: A ``google.genai.Client``.
        question: The user's message.
        model: The model to ask.
        stream: Stream each response chunk by chunk.
    """
    contents: list[Any] = [{"role": "user", "parts": [{"text": question}]}]
    config = {"tools": gemini.declarations(TOOLS)}
    for _ in range(10):
        if stream:
            accumulator = gemini.ToolCallAccumulator()
            chunks = client.models.generate_content_stream(
                model=model, contents=contents, config=config
            )
            for chunk in chunks:
                accumulator.add(chunk)
            calls, text, turn = accumulator.calls(), accumulator.text(), accumulator.message()
        else:
            response = client.models.generate_content(model=model, contents=contents, config=config)
            calls = gemini.parse_calls(response)
            text, turn = response.text or "", response.candidates[0].content
        if not calls:
            return text
        contents.append(turn)
        contents += gemini.tool_results(dispatch_sync(calls, TOOLS).messages)
    raise RuntimeError("the model was still calling tools after 10 turns")


if __name__ == "__main__":
    from google import genai

    print(run(genai.Client(), sys.argv[1], stream="--stream" in sys.argv))
