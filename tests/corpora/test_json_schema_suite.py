"""Tests for `tinytools.Tool.from_schema` validators against the JSON-Schema-Test-Suite corpus.

Each suite case has a schema ``S`` and tests, each a datum ``d`` with its
verdict. ``from_schema`` takes only object schemas, so ``S`` becomes the one
required property of ``{"$schema": <the file's draft>, "type": "object",
"properties": {"v": S}, "required": ["v"]}`` and ``d`` is checked as
``{"v": d}``, both as a mapping and as the raw JSON text a provider sends.
References into ``S`` (``#`` and ``#/...``) are re-rooted to
``#/properties/v/...``, so ``$defs``/``definitions`` keep resolving where they
are.

Which files run: every keyword file of ``draft7/`` and ``draft2020-12/`` the
corpus holds, and ``optional/format/<name>.json`` for each format of
``ENFORCED_FORMATS``. The shared corpus holds the files of the seed's subset
(type, properties, required, additionalProperties, items, prefixItems,
additionalItems, enum, const, boolean_schema); the suite's other keyword files
(minimum … uniqueItems, allOf/anyOf/oneOf/not, if-then-else, ref, defs,
dependencies, dependentRequired/dependentSchemas, contains, pattern,
patternProperties, propertyNames, format, …) run wherever the corpus has them
too (the JSON-Schema-Test-Suite copy in the jsonschema 4.26.0 sdist has them
all).

``TestWhole``: the default ``enforce="full"`` must give every verdict of every
case, except:

* ``EXCLUDED_FILES``: whole files about what is not enforced locally, each with
  its reason;
* cases using a construct of ``UNSUPPORTED`` (found in the schema, so never
  listed by hand): such a schema is refused when the tool is built, or, when
  it is built, it must still accept every valid datum (what is not enforced
  only ever loosens the check);
* ``LENIENT_FORMATS``: a format check that accepts some invalid strings
  (never refuses a valid one);
* ``EXCLUDED_CASES``: listed by hand with the reason; each must still fail.

``TestSubset``: ``enforce="subset"`` checks only ``ENFORCED_KEYWORDS``; a case
using another keyword (annotations aside) runs its valid data only, which the
subset must accept. Every exclusion list is checked to be exact.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import NamedTuple

import pytest
from locations import CORPORA

from tinytools import Tool, ToolArgumentsError, ToolDefinitionError
from tinytools._declare.schema_dialect import ENFORCED_FORMATS, ENFORCED_KEYWORDS, Enforce

SUITE = CORPORA / "json-schema-test-suite"
DRAFTS = ("draft2020-12", "draft7")

#: Keywords that never change a verdict; they do not take a case out of the subset.
ANNOTATIONS = frozenset({"$schema", "$comment", "title", "description", "default", "examples"})

#: Whole files left out of TestWhole, and why.
EXCLUDED_FILES = {
    "draft2020-12/anchor.json": "`$anchor` references are refused when the tool is built",
    "draft2020-12/dynamicRef.json": "`$dynamicRef` is not enforced locally",
    "draft2020-12/refRemote.json": "tinytools never fetches a schema: remote `$ref`s are refused",
    "draft7/refRemote.json": "tinytools never fetches a schema: remote `$ref`s are refused",
    "draft2020-12/unevaluatedItems.json": "`unevaluatedItems` is not enforced locally",
    "draft2020-12/unevaluatedProperties.json": "`unevaluatedProperties` is not enforced locally",
    "draft2020-12/minContains.json": "`minContains` is not enforced locally",
    "draft2020-12/maxContains.json": "`maxContains` is not enforced locally",
    "draft2020-12/vocabulary.json": "custom meta-schemas (`$vocabulary`) are not supported",
    "draft2020-12/defs.json": "checks a schema against the meta-schema by a remote `$ref`",
    "draft7/definitions.json": "checks a schema against the meta-schema by a remote `$ref`",
    "draft2020-12/format.json": (
        "`format` is an annotation in 2020-12; tinytools asserts the formats of "
        "ENFORCED_FORMATS, as the format-assertion vocabulary does"
    ),
}

#: Excluded files about a constraint that is not enforced: their valid data still runs
#: (what is not enforced must only ever loosen the check).
LOOSER_FILES = frozenset(
    {
        *("draft2020-12/unevaluatedItems.json", "draft2020-12/unevaluatedProperties.json"),
        *("draft2020-12/minContains.json", "draft2020-12/maxContains.json"),
        "draft2020-12/dynamicRef.json",
    }
)

#: Constructs tinytools refuses or does not enforce, found by walking a case's schema.
UNSUPPORTED = {
    "$anchor": "`$anchor` references are refused",
    "$dynamicRef": "`$dynamicRef` is not enforced",
    "$dynamicAnchor": "`$dynamicRef` is not enforced",
    "$recursiveRef": "`$recursiveRef` is not enforced",
    "unevaluatedProperties": "`unevaluatedProperties` is not enforced",
    "unevaluatedItems": "`unevaluatedItems` is not enforced",
    "minContains": "`minContains` is not enforced",
    "maxContains": "`maxContains` is not enforced",
    "$id": "a subschema's `$id` is refused (it would rebase references)",
    "$ref outside": "references outside the schema are refused",
}

#: Format checks that accept some invalid strings (each must still do so somewhere).
LENIENT_FORMATS = {
    "date-time": "leap seconds are not checked against the time; non-ASCII digits pass",
    "date": "non-ASCII digits pass",
    "time": "the offset is optional; leap seconds and single-digit fields pass",
    "email": "the domain is not checked",
}

#: Single cases left out of TestWhole by hand, each of which must still fail.
EXCLUDED_CASES = {
    (
        "draft2020-12/ref.json",
        "naive replacement of $ref with its destination is not correct",
    ): "a `$ref`-shaped value inside `enum` cannot be re-rooted by this test's wrapper",
    (
        "draft7/ref.json",
        "naive replacement of $ref with its destination is not correct",
    ): "a `$ref`-shaped value inside `enum` cannot be re-rooted by this test's wrapper",
}

# Where subschemas sit, by keyword (draft 7 and 2020-12 together).
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SCHEMA_VALUES = frozenset(
    {
        *("items", "additionalItems", "additionalProperties", "not", "if", "then", "else"),
        *("contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties"),
    }
)


class Case(NamedTuple):
    """One suite case: its file (``draft7/type.json``), description, schema and tests."""

    file: str
    description: str
    schema: object
    tests: tuple[dict[str, object], ...]

    @property
    def key(self) -> tuple[str, str]:
        return (self.file, self.description)

    @property
    def draft(self) -> str:
        return self.file.split("/")[0]

    @property
    def format(self) -> str | None:
        """The format an ``optional/format`` file tests, else None."""
        if "/optional/format/" not in self.file:
            return None
        return self.file.rpartition("/")[2].removesuffix(".json")


def suite_files(draft: str) -> list[Path]:
    """The files of ``draft`` that run: every keyword file, and the enforced formats'."""
    folder = SUITE / draft
    formats = [folder / "optional" / "format" / f"{name}.json" for name in sorted(ENFORCED_FORMATS)]
    return sorted(folder.glob("*.json")) + [path for path in formats if path.is_file()]


@cache
def cases() -> tuple[Case, ...]:
    """Every case of both drafts, in file order; none when the corpus is absent."""
    found = []
    for draft in DRAFTS:
        for path in suite_files(draft):
            name = f"{draft}/{path.relative_to(SUITE / draft).as_posix()}"
            for case in json.loads(path.read_text(encoding="utf-8")):
                found.append(Case(name, case["description"], case["schema"], tuple(case["tests"])))
    return tuple(found)


def map_subschemas(schema: object, change: Callable[[object], object]) -> object:
    """A copy of ``schema`` with ``change`` applied to each of its direct subschemas."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, object] = {}
    for key, value in schema.items():
        if key in _SCHEMA_MAPS | {"dependencies"} and isinstance(value, dict):
            out[key] = {name: change(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [change(sub) for sub in value]
        elif key in _SCHEMA_VALUES:
            out[key] = change(value)
        else:
            out[key] = value
    return out


def keywords(schema: object) -> frozenset[str]:
    """Every keyword used anywhere in ``schema`` (property names and data excluded), plus
    ``"$ref outside"`` for a reference that is not ``#`` or ``#/...``."""
    found: set[str] = set()

    def visit(sub: object) -> object:
        if isinstance(sub, dict):
            found.update(sub)
            ref = sub.get("$ref")
            if isinstance(ref, str) and not (ref == "#" or ref.startswith("#/")):
                found.add("$ref outside")
            map_subschemas(sub, visit)
        return sub

    visit(schema)
    return frozenset(found)


def outside_subset(case: Case) -> frozenset[str]:
    """The keywords of the case's schema that ``enforce="subset"`` does not check."""
    return keywords(case.schema) - ENFORCED_KEYWORDS - ANNOTATIONS - {"$ref outside"}


def unsupported(case: Case) -> frozenset[str]:
    """The constructs of the case's schema that tinytools refuses or does not enforce."""
    return keywords(case.schema) & UNSUPPORTED.keys()


def reroot(schema: object) -> object:
    """``schema`` with its local references (``#``, ``#/...``) moved under ``#/properties/v``."""
    rerooted = map_subschemas(schema, reroot)
    ref = rerooted.get("$ref") if isinstance(rerooted, dict) else None
    if isinstance(rerooted, dict) and isinstance(ref, str) and (ref == "#" or ref[:2] == "#/"):
        rerooted["$ref"] = "#/properties/v" + ref[1:]
    return rerooted


#: The ``$schema`` each draft's cases are wrapped in (its files leave it out, or set it
#: on the case's own schema, which becomes a subschema once wrapped).
DIALECT_URIS = {
    "draft7": "http://json-schema.org/draft-07/schema#",
    "draft2020-12": "https://json-schema.org/draft/2020-12/schema",
}


def wrap(schema: object, draft: str) -> dict[str, object]:
    """The ``draft`` object schema whose required property ``v`` is ``schema``."""
    return {
        "$schema": DIALECT_URIS[draft],
        "type": "object",
        "properties": {"v": reroot(schema)},
        "required": ["v"],
    }


@cache
def tool_for(index: int, enforce: Enforce) -> Tool[..., object] | ToolDefinitionError:
    """The (cached) schema-only tool for ``cases()[index]``, or why it was refused."""
    case = cases()[index]
    try:
        return Tool.from_schema(
            "suite_case",
            "A JSON-Schema-Test-Suite case.",
            wrap(case.schema, case.draft),
            enforce=enforce,
        )
    except ToolDefinitionError as error:
        return error


def built(index: int, enforce: Enforce) -> Tool[..., object]:
    tool = tool_for(index, enforce)
    if isinstance(tool, ToolDefinitionError):
        raise tool
    return tool


def accepts(tool: Tool[..., object], arguments: object) -> bool:
    """Whether ``tool`` accepts ``arguments`` (a mapping or JSON text), returning them unchanged."""
    try:
        returned = tool.validate(arguments)  # type: ignore[arg-type]
    except ToolArgumentsError as error:
        rejection = error
    else:
        assert (json.loads(arguments) if isinstance(arguments, str) else arguments) == returned
        return True
    assert not rejection.malformed, str(rejection)
    return False


def verdicts(tool: Tool[..., object], datum: object) -> tuple[bool, bool]:
    """Whether ``tool`` accepts ``{"v": datum}`` as a mapping, and as JSON text."""
    arguments = {"v": datum}
    return accepts(tool, arguments), accepts(tool, json.dumps(arguments))


class SuiteTest(NamedTuple):
    case: int
    test: int


def suite_tests(drafts: tuple[str, ...]) -> list[object]:
    """One parameter per suite test of ``drafts``, with a readable id."""
    params: list[object] = []
    for index, case in enumerate(cases()):
        if case.draft not in drafts:
            continue
        for number, test in enumerate(case.tests):
            name = f"{case.file.removesuffix('.json')}: {case.description}: {test['description']}"
            params.append(pytest.param(SuiteTest(index, number), id=name))
    return params or [pytest.param(None, id="corpus-absent")]


#: Outcomes per run, printed when the module finishes: (draft, enforce) -> outcome -> count.
TALLY: dict[tuple[str, str], Counter[str]] = {}
#: Formats whose leniency was met (checked by TestExclusions once the verdicts ran).
LENIENCY_SEEN: set[str] = set()


@pytest.fixture(scope="module", autouse=True)
def summary() -> Iterator[None]:
    """Print passed/skipped counts per draft and enforcement once the module's tests ran."""
    yield
    if not TALLY:
        return
    print("\nJSON-Schema-Test-Suite through Tool.from_schema:")
    for (draft, enforce), outcomes in sorted(TALLY.items()):
        skipped = sum(n for outcome, n in outcomes.items() if outcome != "passed")
        print(f"  {draft} enforce={enforce!r}: {outcomes['passed']} passed, {skipped} skipped")
        for outcome, n in sorted(outcomes.items()):
            if outcome != "passed":
                print(f"    {n} skipped: {outcome}")


def record(case: Case, enforce: str, outcome: str) -> None:
    TALLY.setdefault((case.draft, enforce), Counter())[outcome] += 1


def skip(case: Case, enforce: str, reason: str) -> None:
    record(case, enforce, f"{case.file}: {reason}")
    pytest.skip(reason)


class TestWhole:
    @pytest.mark.parametrize("param", suite_tests(DRAFTS))
    def test_verdict(self, corpora: Path, param: SuiteTest) -> None:
        """The default, whole-schema enforcement gives the suite's verdict (the dialect read
        from the ``$schema`` the case is wrapped in), outside the listed exclusions."""
        case, test = cases()[param.case], cases()[param.case].tests[param.test]
        tool = tool_for(param.case, "full")
        if case.file in EXCLUDED_FILES and (
            case.file not in LOOSER_FILES or not test["valid"] or isinstance(tool, Exception)
        ):
            skip(case, "full", EXCLUDED_FILES[case.file])
        if case.key in EXCLUDED_CASES:
            skip(case, "full", EXCLUDED_CASES[case.key])
        missing = unsupported(case)
        if missing and isinstance(tool, ToolDefinitionError):
            skip(case, "full", "; ".join(sorted({UNSUPPORTED[k] for k in missing})))
        actual = verdicts(built(param.case, "full"), test["data"])
        lenient = LENIENT_FORMATS.get(case.format or "")
        if (missing or lenient) and not test["valid"] and actual == (True, True):
            LENIENCY_SEEN.add(case.format or "")
            skip(case, "full", lenient or "; ".join(sorted({UNSUPPORTED[k] for k in missing})))
        assert (test["valid"], test["valid"]) == actual
        record(case, "full", "passed")


class TestSubset:
    @pytest.mark.parametrize("param", suite_tests(DRAFTS))
    def test_verdict(self, corpora: Path, param: SuiteTest) -> None:
        """The subset gives the suite's verdicts; on a case outside it, it accepts valid data."""
        case, test = cases()[param.case], cases()[param.case].tests[param.test]
        outside = outside_subset(case)
        tool = tool_for(param.case, "subset")
        if isinstance(tool, ToolDefinitionError) and unsupported(case):
            skip(case, "subset", "; ".join(sorted({UNSUPPORTED[k] for k in unsupported(case)})))
        if case.key in EXCLUDED_CASES:
            skip(case, "subset", EXCLUDED_CASES[case.key])
        actual = verdicts(built(param.case, "subset"), test["data"])
        if outside and not test["valid"]:
            skip(case, "subset", f"uses {', '.join(sorted(outside))}: outside the enforced subset")
        assert (test["valid"], test["valid"]) == actual
        record(case, "subset", "passed")


def passes(index: int) -> bool:
    """Whether the whole-schema tool gives every verdict of ``cases()[index]``."""
    tool = tool_for(index, "full")
    try:
        return not isinstance(tool, ToolDefinitionError) and all(
            (t["valid"], t["valid"]) == verdicts(tool, t["data"]) for t in cases()[index].tests
        )
    except ToolDefinitionError:  # compiling it failed
        return False


class TestExclusions:
    def test_excluded_cases_still_fail(self, corpora: Path) -> None:
        """Each hand-listed case still gets some wrong verdict (or a refused schema)."""
        for index, case in enumerate(cases()):
            if case.key not in EXCLUDED_CASES:
                continue
            assert not passes(index), f"{case.key} passes now: remove it from EXCLUDED_CASES"

    def test_refusals_name_the_unsupported_construct(self, corpora: Path) -> None:
        """A suite schema is refused at build time only for a construct tinytools refuses."""
        for index, case in enumerate(cases()):
            if case.file in EXCLUDED_FILES or case.key in EXCLUDED_CASES:
                continue
            tool = tool_for(index, "full")
            if isinstance(tool, ToolDefinitionError):
                assert unsupported(case), f"{case.key} refused: {tool}"

    def test_lenient_formats_are_lenient(self, corpora: Path) -> None:
        """Every format listed as lenient accepts some invalid string of the suite."""
        for index, case in enumerate(cases()):
            if case.format in LENIENT_FORMATS:
                tool = built(index, "full")
                if any(not t["valid"] and all(verdicts(tool, t["data"])) for t in case.tests):
                    LENIENCY_SEEN.add(case.format)
        present = {case.format for case in cases()} & LENIENT_FORMATS.keys()
        assert present == LENIENCY_SEEN & present

    def test_shared_corpus_counts(self, corpora: Path) -> None:
        """The shared corpus holds the cases and tests its README announces."""
        readme = SUITE / "README.md"
        if not readme.is_file() or "limited to the keywords" not in readme.read_text("utf-8"):
            pytest.skip(f"{SUITE} is not the shared subset of the suite (another copy)")
        announced = {
            "additionalItems", "additionalProperties", "boolean_schema", "const", "enum",
            "items", "prefixItems", "properties", "required", "type",
        }  # fmt: skip
        counted: Counter[str] = Counter()
        for case in cases():
            if case.file.rpartition("/")[2].removesuffix(".json") in announced:
                counted[f"{case.draft} cases"] += 1
                counted[f"{case.draft} tests"] += len(case.tests)
        expected = {
            "draft2020-12 cases": 79,
            "draft2020-12 tests": 310,
            "draft7 cases": 81,
            "draft7 tests": 306,
        }
        assert expected == dict(counted)
        assert len(cases()) == len({case.key for case in cases()}), "descriptions must be unique"
