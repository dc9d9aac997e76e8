"""A prompt-guided agent loop over a local OpenAI-compatible server (llama.cpp, LM Studio, Ollama).

Small local models are often served without a native tool channel (or with
one that breaks on their chat template). This loop teaches the model the
``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` protocol in the
system prompt (``json_in_tag.render``), reads the calls back from its text
(``json_in_tag.parse``: broken fragments come back as invalid calls, which
dispatch answers so the model can correct itself), and keeps the history in
the OpenAI shape (``openai_chat.assistant_message`` and ``tool_results``).
Before each request, ``coalesce_tool_results`` turns that history into plain
text turns any chat template accepts.

Run it against a local server::

    python examples/loop_local_server.py "Weather in Paris?" http://localhost:8080/v1
"""

from __future__ import annotations

import sys
from typing import Any

from tinytools import Registry, dispatch_sync, tool
from tinytools.formats import (
    coalesce_tool_results,
    ensure_resolvable_user_turn,
    json_in_tag,
    openai_chat,
    pair_tool_cycles,
    with_tool_instructions,
)


@tool
def get_weather(city: str) -> dict[str, object]:
    """Get the current weather for a city.

    Args:
        city: The city, such as "Paris".
    """
    return {"city": city, "celsius": 21, "sky": "clear"}


TOOLS = Registry.of(get_weather)


def run(client: Any, question: str, *, model: str = "local-model") -> str:
    """Ask ``question`` and answer every call the model writes until it replies in prose.

    Args:
        client: An ``openai.OpenAI`` client whose ``base_url`` is the local server.
        question: The user's message.
        model: The model name the server expects.
    """
    history: list[Any] = [{"role": "user", "content": question}]
    catalogue = json_in_tag.render(TOOLS)
    for _ in range(10):
        send = coalesce_tool_results(pair_tool_cycles(history))
        send = ensure_resolvable_user_turn(with_tool_instructions(send, catalogue))
        completion = client.chat.completions.create(model=model, messages=send)
        parsed = json_in_tag.parse(completion.choices[0].message.content or "", TOOLS)
        calls = [*parsed.calls, *parsed.errors]
        if not calls:
            return parsed.text
        history.append(openai_chat.assistant_message(calls, parsed.text or None))
        # status=True: the results' ok/error status is shown to the model with each result.
        history += openai_chat.tool_results(dispatch_sync(calls, TOOLS).messages, status=True)
    raise RuntimeError("the model was still calling tools after 10 turns")


if __name__ == "__main__":
    from openai import OpenAI

    base_url = sys.argv[2] if len(sys.argv) > 2 else "http://localhost:8080/v1"
    print(run(OpenAI(base_url=base_url, api_key="local"), sys.argv[1]))
