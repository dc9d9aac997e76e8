"""Tests for `tinytools.formats.bfcl.tool_from_bfcl` on the Berkeley Function Calling Leaderboard.

Every function definition of ``bfcl/data`` becomes a schema-only tool, built
once and shared by the module's tests. Every ground-truth call of
``bfcl/possible_answer`` is checked against its tool with each parameter's
first acceptable value (``""`` first means "may be left out", so the
parameter is omitted), sent as the raw JSON text a provider would send.

The calls that cannot be checked or do not validate are listed below by
reason, each with the JSON path at fault; the tests fail when a listed call
validates, fails elsewhere, or disappears, and when an unlisted call fails.

Compiling a validator costs milliseconds (fastjsonschema generates code), so
only one tool per distinct schema is compiled without a call to check, plus
every tool that has calls: identical schemas compile identically.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import attrs
import pytest
from locations import corpus_sample

from tinytools import Tool, ToolArgumentsError, ToolDefinitionError
from tinytools.formats.bfcl import tool_from_bfcl

#: Categories with ground truth (``possible_answer/BFCL_v4_<category>.json``).
ANSWERED = (
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_simple",
    "multiple",
    "parallel",
    "parallel_multiple",
    "simple_java",
    "simple_javascript",
    "simple_python",
)
#: Categories whose right answer is no call, or any relevant call.
UNANSWERED = ("irrelevance", "live_irrelevance", "live_relevance")
#: Function definitions in the corpus (its README's total).
DEFINITIONS = 8726

JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
# BFCL's names for the types whose answers BFCL's checker reads one level deep.
_DICT_TYPES = frozenset({"dict", "HashMap"})
_ARRAY_TYPES = frozenset({"array", "tuple", "Array", "ArrayList"})

NO_VALUE = "a parameter lists no acceptable value (`[]`), so no call can match"
VARIABLE = (
    "a value is a variable name or code expression (a string) where the schema declares "
    "another type; BFCL's checker accepts such strings as variables"
)
UNCHECKABLE: dict[str, dict[str, str]] = {
    NO_VALUE: {
        "live_simple_106-63-0[0]": "$.auto_loan_payment_start",
        "live_simple_112-68-0[0]": "$.acc_routing_start",
    },
    VARIABLE: {
        "parallel_multiple_21[1]": "$.x",
        "simple_java_26[0]": "$.resultSetType",
        "simple_java_35[0]": "$.destination",
        "simple_java_38[0]": "$.filteredSource",
        "simple_java_45[0]": "$.environ",
        "simple_java_58[0]": "$.values",
        "simple_java_69[0]": "$.buf",
        "simple_java_72[0]": "$.ch",
        "simple_java_82[0]": "$.args",
        "simple_java_87[0]": "$.suspendPolicy",
        "simple_java_88[0]": "$.suspendPolicy",
        "simple_javascript_5[0]": "$.store.initialState",
        "simple_javascript_9[0]": "$.jsonPayload",
        "simple_javascript_11[0]": "$.items",
        "simple_javascript_15[0]": "$.labels",
        "simple_javascript_19[0]": "$.property",
        "simple_javascript_32[0]": "$.queue",
        "simple_javascript_37[0]": "$.statements",
        "simple_javascript_39[0]": "$.parameters",
    },
}
INVALID: dict[str, dict[str, str]] = {
    "a value contradicts the declared type": {
        "live_multiple_552-153-1[0]": "$.is_unisex",
        "live_multiple_595-158-1[0]": "$.number_of_rooms",
        "live_multiple_596-158-2[0]": "$.number_of_rooms",
        "live_multiple_731-167-2[0]": "$.in_unit_laundry",
        "live_multiple_733-167-4[0]": "$.in_unit_laundry",
        "live_multiple_735-167-6[0]": "$.in_unit_laundry",
        "parallel_multiple_94[0]": "$.elements[0]",
    },
    "a value is null where a string is declared with default null (Python's Optional)": {
        "live_multiple_1038-265-0[0]": "$.start_date",
        "live_multiple_1041-268-0[0]": "$.t0",
    },
    "a value is not in the declared enum": {
        "live_multiple_87-38-4[0]": "$.type",
        "live_multiple_750-169-5[0]": "$.genre",
        "live_multiple_756-169-11[0]": "$.genre",
        "live_multiple_835-178-10[0]": "$.genre",
        "live_multiple_871-182-8[0]": "$.genre",
        "live_multiple_947-197-0[0]": "$.duration",
        "live_parallel_multiple_2-2-0[1]": "$.command",
    },
    "the definition puts `enum` on an array parameter (meaning its items), so no array matches": {
        "live_multiple_152-58-6[0]": "$.metrics",
        "live_simple_71-35-0[0]": "$.metrics",
    },
    'the first choice leaves out (`""`) a parameter the schema requires': {
        "live_multiple_144-56-0[0]": "$",
        "live_multiple_507-149-4[0]": "$",
        "live_multiple_834-178-9[0]": "$",
        "live_multiple_964-207-0[0]": "$",
        "simple_python_200[0]": "$",
    },
}


def jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSON Lines file (BFCL's ``.json`` files are JSON Lines)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


class Key(NamedTuple):
    """A function definition: the entry that declares it and its BFCL name."""

    entry: str
    name: str


@attrs.define(repr=False)
class Corpus:
    """The BFCL corpus, with one tool built per function definition."""

    category: dict[str, str] = attrs.Factory(dict)
    definitions: dict[Key, dict[str, object]] = attrs.Factory(dict)
    tools: dict[Key, Tool[..., object]] = attrs.Factory(dict)
    problems: dict[Key, str] = attrs.Factory(dict)
    answers: dict[str, list[dict[str, Any]]] = attrs.Factory(dict)

    @classmethod
    def load(cls, folder: Path) -> Corpus:
        corpus = cls()
        for path in sorted((folder / "data").glob("BFCL_v4_*.json")):
            for entry in jsonl(path):
                corpus.category[str(entry["id"])] = path.stem.removeprefix("BFCL_v4_")
                for function in entry["function"]:
                    corpus.build(Key(str(entry["id"]), function["name"]), function)
        for path in sorted((folder / "possible_answer").glob("BFCL_v4_*.json")):
            corpus.answers[path.stem.removeprefix("BFCL_v4_")] = jsonl(path)
        return corpus

    def build(self, key: Key, function: dict[str, object]) -> None:
        if key in self.definitions:
            self.problems[key] = "defined twice in its entry"
        self.definitions[key] = function
        try:
            self.tools[key] = tool_from_bfcl(function)
        except Exception as error:  # every failure is reported, not only the first
            self.problems[key] = f"{type(error).__name__}: {error}"


@pytest.fixture(scope="module")
def bfcl(corpora: Path) -> Corpus:
    return Corpus.load(corpora / "bfcl")


#: What the module's tests counted, printed when the module finishes.
TALLY: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def summary() -> Iterator[None]:
    """Print the counts (tools built, calls validated, calls not checked) once the module ran."""
    yield
    if not TALLY:
        return
    print("\nBFCL through tool_from_bfcl:")
    for label, count in TALLY.items():
        print(f"  {count:5} {label}")


def declared_types(schema: object) -> Iterator[object]:
    """Every ``type`` value of an object schema, its properties, items and extra properties."""
    if not isinstance(schema, Mapping):
        return
    if "type" in schema:
        yield schema["type"]
    properties = schema.get("properties")
    for sub in properties.values() if isinstance(properties, Mapping) else ():
        yield from declared_types(sub)
    for key in ("items", "additionalProperties"):
        yield from declared_types(schema.get(key))


class TestToolFromBfcl:
    def test_every_definition_builds(self, bfcl: Corpus) -> None:
        """Every function definition of every category becomes a tool."""
        assert {} == bfcl.problems
        assert DEFINITIONS == len(bfcl.tools)
        TALLY["function definitions built into tools"] = len(bfcl.tools)

    def test_names_replace_dots(self, bfcl: Corpus) -> None:
        """A tool is named after its definition, with dots made underscores."""
        renamed = {
            key: tool.name
            for key, tool in bfcl.tools.items()
            if tool.name != key.name.replace(".", "_")
        }
        assert {} == renamed

    def test_schemas_use_json_schema_types(self, bfcl: Corpus) -> None:
        """No BFCL type name (dict, float, tuple, any, String...) is left in a tool's schema."""
        foreign = {
            key: types
            for key, tool in bfcl.tools.items()
            if (types := [t for t in declared_types(tool.parameters) if t not in JSON_TYPES])
        }
        assert {} == foreign
        assert {"object"} == {tool.parameters["type"] for tool in bfcl.tools.values()}

    def test_every_validator_compiles(self, bfcl: Corpus) -> None:
        """The validator of every distinct schema compiles (one tool each, with calls if any;
        a sample under the "compat" profile: see corpus_sample)."""
        answered = {
            Key(str(entry["id"]), name)
            for entries in bfcl.answers.values()
            for entry in entries
            for call in entry["ground_truth"]
            for name in call
        }
        chosen: dict[str, Key] = {}
        for key, tool in bfcl.tools.items():
            schema = json.dumps(tool.parameters, sort_keys=True)
            if schema not in chosen or key in answered:
                chosen[schema] = key
        failures = {}
        for key in corpus_sample(list(chosen.values())):
            try:
                bfcl.tools[key].validate({})  # compiles the validator first
            except ToolArgumentsError:
                pass
            except ToolDefinitionError as error:
                failures[key] = str(error)
        assert {} == failures
        TALLY["distinct schemas compiled"] = len(chosen)


OMIT = object()


class NoAcceptableValue(Exception):
    """A ground-truth parameter lists no acceptable value."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def first_choice(values: object, path: str) -> object:
    """The first acceptable value of an answer's list, or ``OMIT`` when it is ``""``."""
    if not isinstance(values, list):  # one nested answer writes a plain value
        return values
    if not values:
        raise NoAcceptableValue(path)
    return OMIT if values[0] == "" else values[0]


def arguments_from(
    answer: Mapping[str, object], properties: Mapping[str, object], path: str = "$"
) -> dict[str, object]:
    """The arguments a ground-truth answer means, each parameter's first choice.

    As in BFCL's checker, the value of a dict parameter, and each dict of a
    list-of-dicts parameter, is itself an answer (its keys list acceptable
    values), one level deep.

    Raises:
        NoAcceptableValue: A parameter lists no acceptable value.
    """
    arguments = {}
    for name, values in answer.items():
        value = first_choice(values, f"{path}.{name}")
        if value is OMIT:
            continue
        declared = properties.get(name)
        declared = declared if isinstance(declared, Mapping) else {}
        items = declared.get("items")
        if declared.get("type") in _DICT_TYPES and isinstance(value, Mapping):
            value = arguments_from(value, {}, f"{path}.{name}")
        elif (
            declared.get("type") in _ARRAY_TYPES
            and isinstance(items, Mapping)
            and items.get("type") in _DICT_TYPES
            and isinstance(value, list)
        ):
            value = [
                arguments_from(item, {}, f"{path}.{name}[{i}]")
                if isinstance(item, Mapping)
                else item
                for i, item in enumerate(value)
            ]
        arguments[name] = value
    return arguments


def check(bfcl: Corpus, entry: str, name: str, answer: Mapping[str, object]) -> str | None:
    """``None`` when the call validates against its tool, else the JSON path at fault."""
    key = Key(entry, name)
    if key not in bfcl.tools:
        return f"no tool `{name}` in the entry"
    parameters = bfcl.definitions[key].get("parameters")
    properties = parameters.get("properties", {}) if isinstance(parameters, Mapping) else {}
    try:
        arguments = arguments_from(answer, properties)
    except NoAcceptableValue as missing:
        return missing.path
    try:
        validated = bfcl.tools[key].validate(json.dumps(arguments))
    except ToolArgumentsError as error:
        return error.path
    assert arguments == validated
    return None


def explained(category: str, bfcl: Corpus) -> dict[str, str]:
    """The listed calls of ``category``: call id → JSON path at fault."""
    return {
        call: path
        for reasons in (UNCHECKABLE, INVALID)
        for listed in reasons.values()
        for call, path in listed.items()
        if bfcl.category.get(call.rsplit("[", 1)[0]) == category
    }


def calls(bfcl: Corpus, category: str) -> Iterator[tuple[str, str, str, Mapping[str, object]]]:
    """(call id, entry id, function name, answer) for each ground-truth call of ``category``."""
    for entry in bfcl.answers.get(category, ()):
        for index, call in enumerate(entry["ground_truth"]):
            ((name, answer),) = call.items()
            yield f"{entry['id']}[{index}]", str(entry["id"]), name, answer


class TestGroundTruth:
    def test_categories(self, bfcl: Corpus) -> None:
        """The corpus has the categories these tests read, answers for exactly those listed."""
        assert sorted(ANSWERED + UNANSWERED) == sorted(set(bfcl.category.values()))
        assert sorted(ANSWERED) == sorted(bfcl.answers)

    def test_listed_calls_exist(self, bfcl: Corpus) -> None:
        """Every call listed as unchecked or invalid is a ground-truth call of the corpus."""
        listed = {call for r in (UNCHECKABLE, INVALID) for c in r.values() for call in c}
        known = {call for category in ANSWERED for call, *_ in calls(bfcl, category)}
        assert set() == listed - known

    def test_integer_for_float_validates(self, bfcl: Corpus) -> None:
        """An integer answer for a BFCL float (parallel_84's acceleration 0) is a JSON number."""
        _, entry, name, answer = next(
            c for c in calls(bfcl, "parallel") if c[0] == "parallel_84[2]"
        )
        properties: Any = bfcl.tools[Key(entry, name)].parameters["properties"]
        assert ("number", [0]) == (properties["acceleration"]["type"], answer["acceleration"])
        assert check(bfcl, entry, name, answer) is None

    @pytest.mark.parametrize("category", ANSWERED)
    def test_calls_validate(self, bfcl: Corpus, category: str) -> None:
        """Each ground-truth call validates against its tool, unless listed with its reason."""
        failed = {}
        checked = 0
        for call, entry, name, answer in calls(bfcl, category):
            checked += 1
            where = check(bfcl, entry, name, answer)
            if where is not None:
                failed[call] = where
        assert explained(category, bfcl) == failed
        TALLY["ground-truth calls"] += checked
        TALLY["calls validated"] += checked - len(failed)
        for title, reasons in (("not checkable", UNCHECKABLE), ("invalid", INVALID)):
            for reason, listed in reasons.items():
                TALLY[f"calls {title}: {reason}"] += sum(c in failed for c in listed)
