"""Tests for examples/local_model.py: the prompt-guided loop, with a scripted model.

The real run needs llama-cpp-python and the Gemma GGUF (``nox -s local_model``); here a
plain function stands in for the model, so what the example counts is checked.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "local_model.py"


@pytest.fixture(scope="module")
def example():
    if not EXAMPLE.is_file():
        pytest.skip(f"the examples folder is not at {EXAMPLE.parent} (an installed package?)")
    spec = importlib.util.spec_from_file_location("_tinytools_local_model_example", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # type hints resolve through the module's name
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


#: What the scripted model writes first for each request, and the outcome it must count as.
SCRIPT = {
    "What's the weather in Paris?": (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
        "valid",
    ),
    "What time is it in Tokyo?": (
        "<tool_call>{'name': 'get_weather', 'arguments': {'city': 'Tokyo',}}</tool_call>",
        "repaired",
    ),
    "Convert 100 EUR to USD.": (
        '<tool_call>{"name": "convert_currency", "arguments": '
        '{"amount": 100, "source": "euro", "target": "USD"}}</tool_call>',
        "refused",
    ),
    "Remind me to call Anna tomorrow at 9.": (
        '<tool_call>{"name": "set_reminder", "arguments": {"text": "call Anna"}}</tool_call>',
        "refused",
    ),
    "Weather in Tokyo, please.": ("It is sunny in Tokyo.", "no call"),
}

#: The tool each scripted request needs.
EXPECTED = {
    "What's the weather in Paris?": "get_weather",
    "What time is it in Tokyo?": "get_time",
    "Convert 100 EUR to USD.": "convert_currency",
    "Remind me to call Anna tomorrow at 9.": "add_reminder",
    "Weather in Tokyo, please.": "get_weather",
}


class TestLocalModelLoop:
    def test_counts(self, example):
        """Each first turn is counted as valid, repaired, refused or no call."""
        prompts: list[str] = []

        def complete(prompt: str) -> str:
            prompts.append(prompt)
            request, after = prompt.rsplit("Request: ", 1)[1].split("<end_of_turn>", 1)
            if "<start_of_turn>user" in after:  # a later turn: the results came back
                return "Done."
            return SCRIPT[request][0]

        report = example.run(complete, [(r, EXPECTED[r]) for r in SCRIPT])

        assert {"valid": 1, "repaired": 1, "refused": 2, "no call": 1} == report["outcomes"]
        assert 1 == report["right_tool"]  # get_time for a weather request is valid, not right
        assert [outcome for _, outcome in SCRIPT.values()] == [
            d["outcome"] for d in report["details"]
        ]

    def test_catalogue_reaches_the_model(self, example):
        """The first prompt holds the catalogue in a user turn, in Gemma's turn format."""
        seen: list[str] = []

        def complete(prompt: str) -> str:
            seen.append(prompt)
            return "No tool needed."

        example.run(complete, [("What's the weather in Paris?", "get_weather")])

        [prompt] = seen
        assert prompt.startswith("<start_of_turn>user\nYou can call tools.")
        assert "- get_weather: Get the current weather for a city." in prompt
        assert "<tool_call>" in prompt
        assert prompt.endswith(
            "<start_of_turn>user\nRequest: What's the weather in Paris?<end_of_turn>\n"
            "<start_of_turn>model\n"
        )

    def test_results_go_back(self, example):
        """After a call, the next prompt carries its result as a [Tool results] user turn."""
        seen: list[str] = []

        def complete(prompt: str) -> str:
            seen.append(prompt)
            if len(seen) == 1:
                return '<tool_call>{"name": "get_time", "arguments": {"city": "Lima"}}</tool_call>'
            return "It is 14:05 in Lima."

        example.run(complete, [("Current time in Lima?", "get_time")])

        assert 2 == len(seen)
        assert "<start_of_turn>user\n[Tool results]\n<tool_result" in seen[1]
        assert "It is 14:05 in Lima" in seen[1]

    def test_zero_shot(self, example):
        """With shots=0 the catalogue and the request make the one and only first user turn."""
        seen: list[str] = []

        def complete(prompt: str) -> str:
            seen.append(prompt)
            return "No tool needed."

        report = example.run(complete, [("Weather in Oslo?", "get_weather")], shots=0)

        assert 1 == seen[0].count("<start_of_turn>user")
        assert seen[0].startswith("<start_of_turn>user\nYou can call tools.")
        assert "Request: Weather in Oslo?<end_of_turn>" in seen[0]
        assert {"valid": 0, "repaired": 0, "refused": 0, "no call": 1} == report["outcomes"]

    def test_first_turn_model(self, example):
        """``first`` writes each request's first turn, ``complete`` the later ones."""
        firsts: list[str] = []

        def first(prompt: str) -> str:
            firsts.append(prompt)
            return '<tool_call>\n{"name": "get_time", "arguments": {"city": "Lima"}}\n</tool_call>'

        def complete(prompt: str) -> str:
            assert "[Tool results]" in prompt
            return "It is 14:05 in Lima."

        report = example.run(complete, [("Current time in Lima?", "get_time")], first=first)

        assert 1 == len(firsts)
        assert {"valid": 1, "repaired": 0, "refused": 0, "no call": 0} == report["outcomes"]

    def test_hermes_prompt(self, example):
        """``prompt="hermes"`` gives the tools as JSON signatures inside <tools>."""
        seen: list[str] = []

        def complete(prompt: str) -> str:
            seen.append(prompt)
            return "No tool needed."

        example.run(complete, [("Weather in Oslo?", "get_weather")], shots=0, prompt="hermes")

        signatures = seen[0].split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
        names = [json.loads(line)["function"]["name"] for line in signatures.splitlines()]
        assert names == list(example.TOOLS.names)

    def test_grammar_is_the_tools(self, example):
        """The grammar ``--grammar`` applies asks for calls of the example's tools only."""
        assert "required" == example.CONSTRAINT.choice
        text = example.CONSTRAINT.gbnf().text
        assert not example.CONSTRAINT.gbnf().lazy
        assert all(f'\\"{name}\\"' in text for name in example.TOOLS.names)

    def test_twenty_requests(self, example):
        """The fixed set has 20 distinct requests, each needing one of the example's tools."""
        assert 20 == len({request for request, _ in example.REQUESTS})
        assert {tool for _, tool in example.REQUESTS} == set(example.TOOLS.names)


DOCS = EXAMPLE.parents[1] / "docs"


#: The runs docs/how-to/local-model.md shows, each with its row's first cell.
RUNS = [
    ("local-model-results.json", "catalogue, one worked exchange first (`--shots 1`)"),
    ("local-model-results-zero-shot.json", "catalogue and request only (`--shots 0`)"),
    ("local-model-results-grammar.json", "`--grammar`, one worked exchange first"),
    ("local-model-results-grammar-zero-shot.json", "`--grammar`, zero-shot"),
    ("local-model-results-grammar-hermes.json", "`--grammar --prompt hermes`, one worked exchange"),
    ("local-model-results-grammar-hermes-zero-shot.json", "`--grammar --prompt hermes`, zero-shot"),
]


def table_row(recorded: dict[str, object], row: str) -> str:
    """The docs' table row for a recorded run."""
    outcomes = recorded["outcomes"]
    assert isinstance(outcomes, dict)
    counts = [outcomes[k] for k in ("valid", "repaired", "refused", "no call")]
    cells = [row, *counts, recorded["right_tool"]]
    cells += [recorded["ms_per_token"], recorded["first_turns_at_token_limit"]]
    return "| " + " | ".join(map(str, cells)) + " |"


@pytest.mark.parametrize(("results", "row"), RUNS)
def test_docs_table_is_the_recorded_run(results: str, row: str) -> None:
    """The counts docs/how-to/local-model.md shows are those of the run it points to."""
    page = DOCS / "how-to" / "local-model.md"
    if not page.is_file():
        pytest.skip(f"the docs folder is not at {DOCS} (an installed package?)")
    recorded = json.loads((DOCS / results).read_text(encoding="utf-8"))
    assert table_row(recorded, row) in page.read_text(encoding="utf-8").splitlines()
    outcomes = recorded["outcomes"]
    assert sum(outcomes.values()) == recorded["requests"] == len(recorded["details"])
