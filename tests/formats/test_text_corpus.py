"""Tests for every text dialect of `tinytools.formats` on the text-tool-calls corpus.

Each case of ``corpora/text-tool-calls/cases.jsonl`` is in a format one of
the dialects reads (none is out of scope), and must parse to exactly its
``calls`` (name and arguments), with
no broken fragments, and — where the case says what prose remains — to that
``content``. The tools are the case's own schemas when it has them, else
permissive ``{"type": "object"}`` tools with the expected names (names no
tool may carry, such as ``get current temperature``, are left out: the
``<function=…>`` form returns them as unknown calls all the same).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType

import pytest

from tinytools import Tool
from tinytools._declare.spec import check_name
from tinytools.formats import deepseek, json_in_tag, llama_json, mistral, ptype, xml
from tinytools.formats._parsed import Parsed

Case = Mapping[str, object]

#: Which dialect reads which corpus format.
DIALECTS: Mapping[str, ModuleType] = {
    "hermes": json_in_tag,
    "hermes_unclosed_at_eos": json_in_tag,
    "pythonic": ptype,
    "llama4_pythonic": ptype,
    "lfm2_pythonic": ptype,
    "qwen3_coder_xml": xml,
    "qwen3_coder_xml_no_outer_tag": xml,
    "glm_xml": xml,
    "gemma4": json_in_tag,
    "llama3_json": llama_json,
    "llama31_python_tag_json": llama_json,
    "llama31_function_tag": llama_json,
    "bare_json": llama_json,
    "json_list": llama_json,
    "mistral_pre_v11": mistral,
    "mistral_v11": mistral,
    "deepseek_v3": deepseek,
}

#: Every dialect that reads model text.
ALL_DIALECTS = [deepseek, json_in_tag, llama_json, mistral, ptype, xml]


def load(corpora: Path) -> list[Case]:
    """Every case of the corpus, in file order."""
    path = corpora / "text-tool-calls" / "cases.jsonl"
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def tools_for(case: Case) -> list[Tool[..., object]]:
    """The case's tools, or permissive tools named after its expected calls."""
    declared = case.get("tools")
    if isinstance(declared, list):
        functions = [entry["function"] for entry in declared]
        return [
            Tool.from_schema(f["name"], f.get("description", ""), json_schema(f["parameters"]))
            for f in functions
        ]
    names = {call["name"] for call in case["calls"]}  # type: ignore[attr-defined]
    # A name no tool may carry is left out: only the unambiguous forms return it.
    return [
        Tool.from_schema(name, "", {"type": "object"})
        for name in sorted(names)
        if check_name(name) is None
    ]


def json_schema(parameters: dict[str, object]) -> dict[str, object]:
    """``parameters`` with the type names some projects' tests use (vLLM's ``"float"``)
    spelled as JSON Schema's: ``Tool.from_schema`` refuses a schema that is not JSON
    Schema, while the text dialects read either spelling alike."""
    aliases = {"float": "number", "int": "integer", "bool": "boolean", "str": "string"}
    properties = parameters.get("properties")
    if not isinstance(properties, dict):
        return parameters
    fixed = {
        name: {**prop, "type": aliases.get(prop.get("type"), prop.get("type"))}
        if isinstance(prop, dict) and "type" in prop
        else prop
        for name, prop in properties.items()
    }
    return {**parameters, "properties": fixed}


def outcome(parsed: Parsed) -> list[dict[str, object]]:
    return [{"name": call.name, "arguments": call.arguments} for call in parsed.calls]


def check(case: Case, parse: Callable[..., Parsed]) -> str | None:
    """Why ``case`` does not parse as the corpus says, or ``None`` when it does."""
    parsed = parse(case["raw"], tools_for(case))
    if parsed.errors:
        return f"broken fragments {parsed.errors!r}"
    if case["calls"] != outcome(parsed):
        return f"calls {outcome(parsed)!r}, expected {case['calls']!r}"
    if "content" in case and (case["content"] or "") != parsed.text:
        return f"text {parsed.text!r}, expected {case['content']!r}"
    return None


class TestCorpus:
    @pytest.mark.parametrize("form", sorted(DIALECTS))
    def test_format(self, corpora: Path, form: str) -> None:
        """Every case of a supported format parses to its calls and its remaining text."""
        cases = [case for case in load(corpora) if case["format"] == form]
        failures = [
            f"{case['source']}: {problem}"
            for case in cases
            if (problem := check(case, DIALECTS[form].parse)) is not None
        ]
        print(f"{form} ({DIALECTS[form].__name__}): {len(cases) - len(failures)}/{len(cases)}")
        assert [] == failures
        assert cases

    @pytest.mark.parametrize("dialect", ALL_DIALECTS, ids=lambda m: m.__name__)
    def test_no_call(self, corpora: Path, dialect: ModuleType) -> None:
        """Text without a call is prose, whole, in every dialect."""
        cases = [case for case in load(corpora) if case["format"] == "none"]
        assert [] == [case["raw"] for case in cases if check(case, dialect.parse) is not None]
        assert cases

    def test_every_format_is_read(self, corpora: Path) -> None:
        """Each corpus format is read by a dialect: none is out of scope."""
        counts = Counter(str(case["format"]) for case in load(corpora))
        assert set() == set(counts) - set(DIALECTS) - {"none"}

    @pytest.mark.parametrize("dialect", ALL_DIALECTS, ids=lambda m: m.__name__)
    def test_every_case_parses_cleanly(self, corpora: Path, dialect: ModuleType) -> None:
        """Every case, in any format, gives a result in every dialect (never an exception)."""
        for case in load(corpora):
            parsed = dialect.parse(case["raw"], tools_for(case))
            assert isinstance(parsed, Parsed)
            assert all(error.invalid for error in parsed.errors)
