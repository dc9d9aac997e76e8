"""One agent turn, the same on every side: a scripted model, three tools, the final text.

The user asks one question; the model answers with one response holding three tool calls
(:data:`CALLS`: :func:`search_docs`, :func:`get_weather`, :func:`convert_currency`, each
with fixed JSON arguments); the loop runs the three tools and sends the model a next
request holding the assistant turn and the three results; the model answers with the final
text (:data:`FINAL`). No network and no real model: each side's model is a script that
returns the calls when the request ends with the user's question and the final text when it
ends with tool results. What each side does around that is the loop a user writes or the
framework runs:

* **floor** (:func:`floor_turn`): the least an OpenAI Chat loop does by hand with msgspec —
  for each call of the response (a plain dict, as JSON-decoded), a typed decode of its
  arguments (one ``msgspec.json.Decoder`` per tool, built once), the call, the value encoded
  as JSON text in a ``{"role": "tool"}`` message; the response's own assistant message and
  the tool messages appended to the conversation; the model called again; its text read.
  No checks at all: no unknown names, no schema beyond the types, no error answers.
* **tinytools** (:func:`tinytools_turn`): the same loop over
  ``tinytools.formats.openai_chat`` — ``parse_calls`` of the response, ``dispatch_sync``
  (or ``await dispatch`` for async tools, three at once as the peers run them), then
  ``assistant_message`` and ``tool_results`` for the next request's messages; the model is
  called again and its response parsed (no calls: the loop ends with its text). The tools'
  declarations (``openai_chat.declarations``) are built once, before the loop, as a user
  builds them, and handed to the model with every request.
* the peers (``benchmarks/peers``): Pydantic AI's ``Agent.run`` with a ``FunctionModel``,
  the OpenAI Agents SDK's ``Runner.run`` with a ``Model`` subclass, each scripted the same
  way and building its own next request (message history, run state, tracing off).

The response a side's model returns is ready-made in each side's own type (a dict for the
OpenAI Chat loops; the framework's response object for a peer): converting a provider's
HTTP response is no side's cost here.

:func:`tool_functions` makes the three tools; given a journal, they record every call
(name, arguments) into it, which ``tests/test_bench_turn.py`` reads to check that every
side made the same calls; the benchmark gives none.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgspec

import tinytools
from tinytools.formats import openai_chat

__all__ = [
    "CALLS",
    "FINAL",
    "USER",
    "ChatModel",
    "Journal",
    "chat_model",
    "expected_journal",
    "floor_turn",
    "tinytools_turn",
    "tinytools_turn_async",
    "tool_functions",
]

USER = "Find the docs on rotating a PDF page, the weather in Paris, and 100 EUR in dollars."
#: The model's first response: three calls, ``(id, tool name, raw JSON arguments)``.
CALLS = (
    ("call_1", "search_docs", '{"query": "rotate a pdf page", "limit": 3, "exact": false}'),
    ("call_2", "get_weather", '{"city": "Paris", "unit": "celsius"}'),
    ("call_3", "convert_currency", '{"amount": 100.0, "source": "EUR", "target": "USD"}'),
)
#: The model's second response, which ends the turn.
FINAL = "Use Page > Rotate; Paris is 18 degrees; 100 EUR is 108 USD."

#: ``(tool name, arguments)`` per call a tool received, when the tools record them.
Journal = list[tuple[str, dict[str, object]]]


def tool_functions(journal: Journal | None = None) -> tuple[Callable[..., object], ...]:
    """The three tools, as plain synchronous functions (each side wraps them its own way)."""

    def search_docs(query: str, limit: int = 10, exact: bool = False) -> list[str]:
        """Search the documentation.

        Args:
            query: Words to look for.
            limit: The most results to return.
            exact: Match the whole phrase only.
        """
        if journal is not None:
            journal.append(("search_docs", {"query": query, "limit": limit, "exact": exact}))
        return [f"{query}: Page > Rotate"] * min(limit, 1)

    def get_weather(city: str, unit: str = "celsius") -> dict[str, object]:
        """The current weather in a city.

        Args:
            city: The city's name.
            unit: celsius or fahrenheit.
        """
        if journal is not None:
            journal.append(("get_weather", {"city": city, "unit": unit}))
        return {"city": city, "temperature": 18, "unit": unit}

    def convert_currency(amount: float, source: str, target: str) -> float:
        """Convert an amount of money from one currency to another.

        Args:
            amount: How much, in the source currency.
            source: The ISO 4217 code to convert from.
            target: The ISO 4217 code to convert to.
        """
        if journal is not None:
            journal.append(
                ("convert_currency", {"amount": amount, "source": source, "target": target})
            )
        return round(amount * 1.08, 2)

    return search_docs, get_weather, convert_currency


def expected_journal() -> Journal:
    """What the tools record for one turn: the arguments of :data:`CALLS`, decoded."""
    return [(name, msgspec.json.decode(raw)) for _, name, raw in CALLS]


# --- the OpenAI Chat side: the scripted model and the two loops --------------------------------

Message = dict[str, object]


def _completion(message: Message, finish: str) -> dict[str, object]:
    """A Chat Completions response, as the JSON decodes."""
    return {
        "id": "chatcmpl-turn",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }


_CALLING = _completion(
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": name, "arguments": raw}}
            for i, name, raw in CALLS
        ],
    },
    "tool_calls",
)
_FINAL = _completion({"role": "assistant", "content": FINAL}, "stop")


def chat_model(seen: list[str] | None = None) -> Callable[[list[Message], object], object]:
    """The scripted Chat Completions model: the calls for the question, then the final text.

    ``seen`` gets the ``tool_call_id`` of each tool message of the request that ends the
    turn (the test's check that the next request holds every result).
    """

    def complete(messages: list[Message], tools: object) -> object:
        if messages[-1]["role"] == "user":
            return _CALLING
        if seen is not None:
            seen.extend(str(m["tool_call_id"]) for m in messages if m["role"] == "tool")
        return _FINAL

    return complete


ChatModel = Callable[[list[Message], object], object]


def tinytools_turn(
    functions: Sequence[Callable[..., object]],
    seen: list[str] | None = None,
    *,
    model: ChatModel | None = None,
) -> Callable[[], str]:
    """The turn through ``openai_chat`` and ``dispatch_sync`` (see the module's docstring),
    with :func:`chat_model` unless another ``model`` is given."""
    registry = tinytools.Registry([tinytools.tool(fn) for fn in functions])
    declared = openai_chat.declarations(registry)
    complete = chat_model(seen) if model is None else model
    parse_calls, dispatch_sync = openai_chat.parse_calls, tinytools.dispatch_sync
    assistant_message, tool_results = openai_chat.assistant_message, openai_chat.tool_results

    def turn() -> str:
        messages: list[Message] = [{"role": "user", "content": USER}]
        while True:
            response: Any = complete(messages, declared)
            calls = parse_calls(response)
            if not calls:
                return str(response["choices"][0]["message"]["content"])
            result = dispatch_sync(calls, registry)
            messages.append(assistant_message(calls))
            messages += tool_results(result.messages)

    return turn


def tinytools_turn_async(
    functions: Sequence[Callable[..., Awaitable[object]]], seen: list[str] | None = None
) -> Callable[[], Awaitable[str]]:
    """:func:`tinytools_turn` for async tools: ``await dispatch``, the three calls at once."""
    registry = tinytools.Registry([tinytools.tool(fn) for fn in functions])
    declared = openai_chat.declarations(registry)
    complete = chat_model(seen)
    policy = tinytools.RunPolicy(max_concurrency=len(CALLS))
    parse_calls, dispatch = openai_chat.parse_calls, tinytools.dispatch
    assistant_message, tool_results = openai_chat.assistant_message, openai_chat.tool_results

    async def turn() -> str:
        messages: list[Message] = [{"role": "user", "content": USER}]
        while True:
            response: Any = complete(messages, declared)
            calls = parse_calls(response)
            if not calls:
                return str(response["choices"][0]["message"]["content"])
            result = await dispatch(calls, registry, policy=policy)
            messages.append(assistant_message(calls))
            messages += tool_results(result.messages)

    return turn


def floor_turn(
    functions: Sequence[Callable[..., object]], seen: list[str] | None = None
) -> Callable[[], str]:
    """The turn by hand with msgspec, with no checks (see the module's docstring)."""
    decoders = {fn.__name__: msgspec.json.Decoder(_arguments_struct(fn)) for fn in functions}
    by_name = {fn.__name__: fn for fn in functions}
    complete = chat_model(seen)
    asdict, encode = msgspec.structs.asdict, msgspec.json.encode

    def turn() -> str:
        messages: list[Message] = [{"role": "user", "content": USER}]
        while True:
            response: Any = complete(messages, None)
            message = response["choices"][0]["message"]
            calls = message.get("tool_calls")
            if not calls:
                return str(message["content"])
            messages.append(message)
            for call in calls:
                name, raw = call["function"]["name"], call["function"]["arguments"]
                value = by_name[name](**asdict(decoders[name].decode(raw)))
                text = encode(value).decode()
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})

    return turn


def _arguments_struct(fn: Callable[..., object]) -> type[msgspec.Struct]:
    """The msgspec Struct of ``fn``'s parameters (the floor's typed decode)."""
    fields: list[tuple[str, object] | tuple[str, object, object]] = []
    for parameter in inspect.signature(fn, eval_str=True).parameters.values():
        if parameter.default is inspect.Parameter.empty:
            fields.append((parameter.name, parameter.annotation))
        else:
            fields.append((parameter.name, parameter.annotation, parameter.default))
    return msgspec.defstruct(
        f"{fn.__name__}_args", fields, kw_only=True, forbid_unknown_fields=True
    )
