"""Tests for `tinytools.Tool.from_schema` validators against the JSON-Schema-Test-Suite corpus.

Each suite case has a schema ``S`` and tests, each a datum ``d`` with its
verdict. ``from_schema`` takes only object schemas, so ``S`` becomes the one
required property of ``{"type": "object", "properties": {"v": S},
"required": ["v"]}`` and ``d`` is checked as ``{"v": d}``, both as a mapping
and as the raw JSON text a provider sends. References into ``S`` (``#/...``)
are re-rooted to ``#/properties/v/...``, so ``$defs``/``definitions`` keep
resolving where they are.

The default ``enforce="subset"`` checks only the keywords of
``tinytools._validate.ENFORCED_KEYWORDS``, so a case whose schema uses any
other keyword cannot get the suite's verdicts. Such a case is listed in
``SKIPPED`` with the keywords it uses (annotations such as ``$comment`` do not
count: they never change a verdict). Its tests of *valid* data still run: the
subset drops constraints, so it must accept everything the full schema
accepts. ``SKIPPED`` is checked to be exact: a listed case that is gone from
the corpus, that no longer leaves the subset, or (for a hand-written reason)
that now passes fails ``TestSkipped``.

Draft-7 files run a second time with ``enforce="draft7"``, which must give
every verdict. The 2020-12 files run under the subset only (``prefixItems``
is translated to draft 7's array-form ``items``; fastjsonschema knows no
2020-12).
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

from tinytools import Tool, ToolArgumentsError
from tinytools._validate import ENFORCED_KEYWORDS, Enforce

SUITE = CORPORA / "json-schema-test-suite"
DRAFTS = ("draft2020-12", "draft7")

#: Keywords that never change a verdict; they do not take a case out of the subset.
ANNOTATIONS = frozenset({"$schema", "$comment", "title", "description", "default", "examples"})

#: Every case whose tests do not all run, keyed by (file, case description).
#: "uses ...: outside the enforced subset" reasons are checked against the
#: schema; any other reason must name a case that still fails.
SKIPPED: dict[tuple[str, str], str] = {
    (
        "draft2020-12/additionalProperties.json",
        "additionalProperties does not look in applicators",
    ): "uses allOf: outside the enforced subset",
    (
        "draft2020-12/additionalProperties.json",
        "additionalProperties with propertyNames",
    ): "uses maxLength, propertyNames: outside the enforced subset",
    (
        "draft2020-12/additionalProperties.json",
        "dependentSchemas with additionalProperties",
    ): "uses dependentSchemas: outside the enforced subset",
    (
        "draft2020-12/items.json",
        "items does not look in applicators, valid case",
    ): "uses allOf, minimum: outside the enforced subset",
    (
        "draft2020-12/properties.json",
        "properties, patternProperties, additionalProperties interaction",
    ): "uses maxItems, minItems: outside the enforced subset",
    (
        "draft7/additionalItems.json",
        "additionalItems does not look in applicators, invalid case",
    ): "uses allOf: outside the enforced subset",
    (
        "draft7/additionalProperties.json",
        "additionalProperties does not look in applicators",
    ): "uses allOf: outside the enforced subset",
    (
        "draft7/properties.json",
        "properties, patternProperties, additionalProperties interaction",
    ): "uses maxItems, minItems: outside the enforced subset",
}

# Where subschemas sit, by keyword (draft 7 and 2020-12 together).
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_SCHEMA_MAPS_MORE = frozenset({"dependentSchemas", "dependencies"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SCHEMA_VALUES = frozenset(
    {
        "items",
        "additionalItems",
        "additionalProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
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


@cache
def cases() -> tuple[Case, ...]:
    """Every case of both drafts, in file order; none when the corpus is absent."""
    found = []
    for draft in DRAFTS:
        for path in sorted((SUITE / draft).glob("*.json")):
            for case in json.loads(path.read_text(encoding="utf-8")):
                found.append(
                    Case(
                        f"{draft}/{path.name}",
                        case["description"],
                        case["schema"],
                        tuple(case["tests"]),
                    )
                )
    return tuple(found)


def map_subschemas(schema: object, change: Callable[[object], object]) -> object:
    """A copy of ``schema`` with ``change`` applied to each of its direct subschemas."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, object] = {}
    for key, value in schema.items():
        if key in _SCHEMA_MAPS | _SCHEMA_MAPS_MORE and isinstance(value, dict):
            out[key] = {name: change(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [change(sub) for sub in value]
        elif key in _SCHEMA_VALUES:
            out[key] = change(value)
        else:
            out[key] = value
    return out


def keywords(schema: object) -> frozenset[str]:
    """Every keyword used anywhere in ``schema`` (property names and data excluded)."""
    found: set[str] = set()

    def visit(sub: object) -> object:
        if isinstance(sub, dict):
            found.update(sub)
            map_subschemas(sub, visit)
        return sub

    visit(schema)
    return frozenset(found)


def outside_subset(case: Case) -> frozenset[str]:
    """The keywords of the case's schema that ``enforce="subset"`` does not check."""
    return keywords(case.schema) - ENFORCED_KEYWORDS - ANNOTATIONS


def outside_reason(outside: frozenset[str]) -> str:
    return f"uses {', '.join(sorted(outside))}: outside the enforced subset"


def reroot(schema: object) -> object:
    """``schema`` with its local references (``#...``) moved under ``#/properties/v``."""
    rerooted = map_subschemas(schema, reroot)
    ref = rerooted.get("$ref") if isinstance(rerooted, dict) else None
    if isinstance(rerooted, dict) and isinstance(ref, str) and ref.startswith("#"):
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
def tool_for(index: int, enforce: Enforce) -> Tool[..., object]:
    """The (cached) schema-only tool for ``cases()[index]``."""
    case = cases()[index]
    return Tool.from_schema(
        "suite_case",
        "A JSON-Schema-Test-Suite case.",
        wrap(case.schema, case.file.split("/")[0]),
        enforce=enforce,
    )


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


def still_fails(index: int) -> bool:
    """Whether some test of ``cases()[index]`` gets a wrong verdict under the subset."""
    tool = tool_for(index, "subset")
    return any(
        (test["valid"], test["valid"]) != verdicts(tool, test["data"])
        for test in cases()[index].tests
    )


class SuiteTest(NamedTuple):
    case: int
    test: int


def suite_tests(drafts: tuple[str, ...]) -> list[object]:
    """One parameter per suite test of ``drafts``, with a readable id."""
    params: list[object] = []
    for index, case in enumerate(cases()):
        if case.file.split("/")[0] not in drafts:
            continue
        for number, test in enumerate(case.tests):
            name = f"{case.file.removesuffix('.json')}: {case.description}: {test['description']}"
            params.append(pytest.param(SuiteTest(index, number), id=name))
    return params or [pytest.param(None, id="corpus-absent")]


#: Outcomes per run, printed when the module finishes: (draft, enforce) -> outcome -> count.
TALLY: dict[tuple[str, str], Counter[str]] = {}


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
    TALLY.setdefault((case.file.split("/")[0], enforce), Counter())[outcome] += 1


class TestSubset:
    @pytest.mark.parametrize("param", suite_tests(DRAFTS))
    def test_verdict(self, corpora: Path, param: SuiteTest) -> None:
        """The subset gives the suite's verdicts; on a SKIPPED case it still accepts valid data."""
        case, test = cases()[param.case], cases()[param.case].tests[param.test]
        reason = SKIPPED.get(case.key)
        actual = verdicts(tool_for(param.case, "subset"), test["data"])
        if reason is not None and not (test["valid"] and outside_subset(case)):
            record(case, "subset", f"{case.file}: {case.description}: {reason}")
            pytest.skip(reason)
        assert (test["valid"], test["valid"]) == actual
        record(case, "subset", "passed")


class TestWhole:
    @pytest.mark.parametrize("param", suite_tests(DRAFTS))
    def test_verdict(self, corpora: Path, param: SuiteTest) -> None:
        """The default, whole-schema enforcement gives the suite's verdict for every case of
        both drafts (the dialect read from the ``$schema`` the case is wrapped in)."""
        case, test = cases()[param.case], cases()[param.case].tests[param.test]
        actual = verdicts(tool_for(param.case, "full"), test["data"])
        assert (test["valid"], test["valid"]) == actual
        record(case, "full", "passed")


class TestSkipped:
    def test_exact(self, corpora: Path) -> None:
        """SKIPPED names each case outside the subset with its keywords, and only failing others."""
        expected = {}
        for index, case in enumerate(cases()):
            outside = outside_subset(case)
            if outside:
                expected[case.key] = outside_reason(outside)
            elif case.key in SKIPPED and still_fails(index):
                expected[case.key] = SKIPPED[case.key]
        assert len(cases()) == len({case.key for case in cases()}), "descriptions must be unique"
        assert expected == SKIPPED

    def test_counts(self, corpora: Path) -> None:
        """The corpus holds the cases and tests its README announces."""
        counted: Counter[str] = Counter()
        for case in cases():
            draft = case.file.split("/")[0]
            counted[f"{draft} cases"] += 1
            counted[f"{draft} tests"] += len(case.tests)
        expected = {
            "draft2020-12 cases": 79,
            "draft2020-12 tests": 310,
            "draft7 cases": 81,
            "draft7 tests": 306,
        }
        assert expected == dict(counted)
