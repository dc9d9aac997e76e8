"""Tests for `tinytools.repair`."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from json_strategies import JSONISH_TEXT, json_objects, json_values, relaxed_pairs

from tinytools import _relaxed, repair
from tinytools.repair import (
    REPAIR_KINDS,
    Normalized,
    Repaired,
    normalize_arguments,
    recover_relaxed_object,
    repair_relaxed_object,
)

# --- Scanners --------------------------------------------------------------------------------

try:
    from tinytools import _relaxed_speedups
except ImportError:  # installed without a C compiler
    _relaxed_speedups = None  # type: ignore[assignment]


@pytest.fixture(scope="module", params=["compiled", "pure-python"])
def scanner(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run a test class with each scanner `repair` can use."""
    if request.param == "compiled":
        if _relaxed_speedups is None:
            pytest.skip("the compiled scanner is not built (no C compiler at install time)")
        yield request.param
        return
    compiled = repair._scan
    repair._scan = _relaxed.rewrite
    try:
        yield request.param
    finally:
        repair._scan = compiled


# --- Corpus ---------------------------------------------------------------------------------


def _argument_cases(corpora: Path) -> list[dict[str, object]]:
    path = corpora / "malformed-tool-calls" / "cases.jsonl"
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [case for case in cases if case["scope"] == "arguments" and case["intended"] is not None]


@pytest.mark.usefixtures("scanner")
class TestRecoverRelaxedObject:
    def test_corpus_is_recovered_exactly_or_refused(self, corpora: Path) -> None:
        """Each real malformed argument payload repairs to its intended object or to None."""
        cases = _argument_cases(corpora)
        results = [(case, recover_relaxed_object(str(case["raw"]))) for case in cases]
        wrong = [case["kind"] for case, result in results if result not in (None, case["intended"])]
        recovered = sum(result is not None for _, result in results)
        print(
            f"malformed-tool-calls, scope=arguments: {recovered} recovered, "
            f"{len(cases) - recovered} refused, {len(cases)} total"
        )
        assert [] == wrong

    def test_corpus_figures_in_the_docs(self, corpora: Path) -> None:
        """The corpus counts docs/concepts/decisions.md gives are the ones repair gets."""
        cases = _argument_cases(corpora)
        recovered = sum(recover_relaxed_object(str(case["raw"])) is not None for case in cases)
        doubled = sum("double_encoded" in str(case["kind"]) for case in cases)
        page = (Path(__file__).resolve().parents[1] / "docs/concepts/decisions.md").read_text()
        claim = (
            f"the {len(cases)} argument cases with a known intended value) it recovers "
            f"{recovered} exactly and refuses {len(cases) - recovered} — and returns a "
            f"different value for none; `NormalizeThenReturnToolError` recovers {doubled} more"
        )
        assert claim in " ".join(page.split())

    def test_corpus_recovers_the_repairable_kinds(self, corpora: Path) -> None:
        """The corpus cases made only of supported defects are all recovered."""
        supported = {"single_quotes", "single_quotes_nested", "python_literal_True", "unquoted_key"}
        cases = [case for case in _argument_cases(corpora) if case["kind"] in supported]
        actual = [recover_relaxed_object(str(case["raw"])) for case in cases]
        assert [case["intended"] for case in cases] == actual

    def test_corpus_with_normalisation_recovers_double_encoding(self, corpora: Path) -> None:
        """Strict decode, then repair, then normalisation also recovers double-encoded objects."""
        cases = [case for case in _argument_cases(corpora) if "double_encoded" in str(case["kind"])]
        actual = []
        for case in cases:
            decoded = msgspec.json.decode(str(case["raw"]))
            normalized = normalize_arguments(decoded, {"type": "object"})
            actual.append(None if normalized is None else normalized.value)
        print(f"malformed-tool-calls, double-encoded: {len(cases)} recovered by normalisation")
        assert [case["intended"] for case in cases] == actual

    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            pytest.param('{city:"Paris"}', {"city": "Paris"}, id="unquoted-key"),
            pytest.param("{a: {b: [{c: 1}]}}", {"a": {"b": [{"c": 1}]}}, id="nested-keys"),
            pytest.param("{a-b: 1, $c: 2, città: 3}", {"a-b": 1, "$c": 2, "città": 3}, id="ids"),
            pytest.param('{{"a": 1}}', {"a": 1}, id="double-braces"),
            pytest.param('{{{{"a": 1}}}}', {"a": 1}, id="quadruple-braces"),
            pytest.param('{"x": [{{"a": 1}}]}', {"x": [{"a": 1}]}, id="braces-in-array"),
            pytest.param("{ {a: 1} , }", {"a": 1}, id="braces-trailing-comma"),
            pytest.param("{{}}", {}, id="braces-around-empty"),
            pytest.param(
                '{<|"|>q<|"|>: <|">c:\\Users "x"<|">}', {"q": 'c:\\Users "x"'}, id="tokens"
            ),
            pytest.param('{"a": [1, 2,], }', {"a": [1, 2]}, id="trailing-commas"),
            pytest.param(
                "{'a': 'say \"hi\"', 'b': 'it\\'s'}", {"a": 'say "hi"', "b": "it's"}, id="sq"
            ),
            pytest.param("{'a': '\\u00e9\\n'}", {"a": "é\n"}, id="sq-escapes"),
            pytest.param(
                '{"a": True, "b": [False, None]}', {"a": True, "b": [False, None]}, id="py"
            ),
            pytest.param(
                "{True-x: 1, Trueish: None, isTrue: False}",
                {"True-x": 1, "Trueish": None, "isTrue": False},
                id="py-words",
            ),
            pytest.param('```json\n{"a": 1,}\n```', {"a": 1}, id="fence"),
            pytest.param('```{"a": 1}```', {"a": 1}, id="one-line-fence"),
            pytest.param('\ufeff  {"a": 1}\n', {"a": 1}, id="bom"),
            pytest.param(
                '{"a": "{b: True, \'c\',}"}', {"a": "{b: True, 'c',}"}, id="inside-string"
            ),
            pytest.param('{"a": 1e5, b: -1.5E+3}', {"a": 100000.0, "b": -1500.0}, id="numbers"),
            pytest.param("{'a': 'x\x01y'}", {"a": "x\x01y"}, id="control-character"),
            pytest.param(
                '{"a": "line 1\nline 2\ttab"}', {"a": "line 1\nline 2\ttab"}, id="raw-newline"
            ),
            pytest.param(
                '{"a": "\x00\x08\x0c\r\x1f", "b": "\\n"}',
                {"a": "\x00\x08\x0c\r\x1f", "b": "\n"},
                id="every-control",
            ),
            pytest.param(
                '{\n  // the city\n  "city": "Paris", /* a note */\n  "n": 1, // last\n}',
                {"city": "Paris", "n": 1},
                id="comments",
            ),
            pytest.param("{/**/a/**/:/**/1}", {"a": 1}, id="comments-between-tokens"),
            pytest.param(
                '{"a": "// not a comment /* */"}', {"a": "// not a comment /* */"}, id="in-string"
            ),
            pytest.param('{"a": 1}<|call|>', {"a": 1}, id="leaked-call"),
            pytest.param('{"a": 1}\n<|im_end|>\n<|endoftext|>', {"a": 1}, id="leaked-tokens"),
            pytest.param('{"a": 1}</s>', {"a": 1}, id="leaked-eos"),
            pytest.param(
                '{"a": 1}<\uff5cend\u2581of\u2581sentence\uff5c>', {"a": 1}, id="leaked-deepseek"
            ),
            pytest.param('```json\n{"a": 1}<|im_end|>\n```', {"a": 1}, id="leaked-in-fence"),
            pytest.param('json\n{"a": 1}', {"a": 1}, id="language-word"),
            pytest.param("JSON\r\n\n  {a: 1}", {"a": 1}, id="language-word-crlf"),
            pytest.param('{"a": 1}\n{"a": 1}', {"a": 1}, id="repeated"),
            pytest.param("{a: 'x'}{a: 'x'} {a: 'x'}", {"a": "x"}, id="repeated-relaxed"),
        ],
    )
    def test_repairs(self, raw: str, expected: dict[str, object]) -> None:
        """Each supported malformation is undone without changing meaning."""
        assert expected == recover_relaxed_object(raw)

    @pytest.mark.parametrize(
        "raw",
        [
            pytest.param('{"a": 1', id="truncated"),
            pytest.param('{"a": "b}', id="unclosed-string"),
            pytest.param("{'a': 'b}", id="unclosed-single-quote"),
            pytest.param('{a: <|"|>b}', id="unclosed-token-string"),
            pytest.param('{"a": 1}}', id="extra-brace"),
            pytest.param('{{"a": 1}', id="missing-brace"),
            pytest.param('{"a": 1} {"b": 2}', id="two-values"),
            pytest.param('{{"a": 1}, {"b": 2}}', id="braces-around-two-objects"),
            pytest.param('{{"a": 1}, "b": 2}', id="braces-around-object-and-member"),
            pytest.param('{"x": [{{"a": 1}, 2}]}', id="braces-around-object-and-number"),
            pytest.param('{"x": [{{"a": 1}, {"b": 2}}]}', id="nested-braces-around-two-objects"),
            pytest.param("[1, 2]", id="array"),
            pytest.param('"{\\"a\\": 1}"', id="string"),
            pytest.param("{format: fahrenheit}", id="unquoted-value"),
            pytest.param("{'a': 'it's'}", id="apostrophe"),
            pytest.param('{"a": "b<|"|>}', id="mixed-quote-and-token"),
            pytest.param("{True: 1}", id="python-literal-key"),
            pytest.param("{null: 1}", id="json-literal-key"),
            pytest.param("{1a: 1}", id="digit-key"),
            pytest.param('{"a": [,]}', id="hole"),
            pytest.param("{,}", id="comma-only"),
            pytest.param('{"a": (1, 2)}', id="tuple"),
            pytest.param('{"a": 1_000}', id="underscore-number"),
            pytest.param('Here it is: {"a": 1}', id="prose"),
            pytest.param('{"a": NaN}', id="nan"),
            pytest.param('{"a": Infinity, "b": -Infinity}', id="infinity"),
            pytest.param('{"a": 0x10}', id="hex-number"),
            pytest.param("{'a': '\\x41'}", id="python-escape"),
            pytest.param('{"a": "x\\\ny"}', id="escaped-raw-newline"),
            pytest.param('{"a": 1 /* never closed }', id="unclosed-comment"),
            pytest.param('{"a": 1} // after the object', id="comment-after-object"),
            pytest.param("{url: http://example.com}", id="url-value"),
            pytest.param('{"a": 1}{"a": 2}', id="two-different-objects"),
            pytest.param('{"a": 1}{"a": 1.0}', id="equal-but-not-identical"),
            pytest.param('{"a": 1}\n{"a": 1}x', id="repeated-then-prose"),
            pytest.param('{"a": 1}<|im_end|> and more', id="token-then-prose"),
            pytest.param('{"a": 1}<|"|>', id="quote-token-after"),
            pytest.param('<|im_start|>{"a": 1}', id="token-before"),
            pytest.param('json {"a": 1}', id="language-word-same-line"),
            pytest.param('python\n{"a": 1}', id="other-language-word"),
            pytest.param('{"a": "\ud800"}', id="lone-surrogate"),
            pytest.param("", id="empty"),
        ],
    )
    def test_refusals(self, raw: str) -> None:
        """Anything whose repair would have to guess is refused."""
        assert None is recover_relaxed_object(raw)

    @pytest.mark.parametrize(
        ("raw", "expected"),
        [
            pytest.param("{" * 100_000, None, id="100k-open-braces"),
            pytest.param("{" * 100_000 + "}" * 100_000, {}, id="100k-balanced-braces"),
            pytest.param("{a:" * 50_000, None, id="50k-nested-open"),
            pytest.param("{a:" * 50_000 + "1" + "}" * 50_000, None, id="50k-nested-closed"),
            pytest.param("[" * 100_000 + "{}" + "]" * 100_000, None, id="100k-brackets"),
            pytest.param('{"a": "' + "x" * 2_000_000 + '"}', {"a": "x" * 2_000_000}, id="2mb"),
            pytest.param("{'a': '" + "x" * 2_000_000 + "'}", {"a": "x" * 2_000_000}, id="2mb-sq"),
            pytest.param('{"a": "' + '\\"' * 500_000 + "}", None, id="unclosed-escapes"),
            pytest.param("{" + "'" * 100_001 + "}", None, id="100k-quotes"),
            pytest.param("{" + '<|"' * 100_000 + "}", None, id="100k-token-starts"),
            pytest.param("{" + "a" * 1_000_000 + "}", None, id="1m-word"),
            pytest.param("{" + ("1" * 1000 + ":") * 1000 + "}", None, id="digit-runs"),
        ],
    )
    def test_adversarial_inputs_return(self, raw: str, expected: object) -> None:
        """Huge or deeply nested inputs return a value or None, never RecursionError."""
        assert expected == recover_relaxed_object(raw)

    def test_100k_keys(self) -> None:
        """A document with 100,000 unquoted keys is repaired in full."""
        raw = "{" + ", ".join(f"k{i}: {i}" for i in range(100_000)) + "}"
        assert {f"k{i}": i for i in range(100_000)} == recover_relaxed_object(raw)

    @given(json_objects())
    def test_strict_objects_are_unchanged(self, obj: dict[str, object]) -> None:
        """Repairing the strict encoding of any object gives that object back."""
        assert obj == recover_relaxed_object(msgspec.json.encode(obj).decode())

    @given(relaxed_pairs())
    def test_relaxed_objects_are_recovered(self, pair: tuple[dict[str, object], str]) -> None:
        """Every combination of meaning-preserving malformations is undone exactly."""
        obj, raw = pair
        assert obj == recover_relaxed_object(raw)

    @given(relaxed_pairs(), st.data())
    def test_truncation_never_changes_meaning(
        self, pair: tuple[dict[str, object], str], data: st.DataObject
    ) -> None:
        """A prefix of a relaxed document repairs to the same object or is refused."""
        obj, raw = pair
        prefix = raw[: data.draw(st.integers(0, len(raw)))]
        assert recover_relaxed_object(prefix) in (None, obj)

    @given(st.text() | JSONISH_TEXT)
    def test_arbitrary_text_never_raises(self, raw: str) -> None:
        """Any text gives an object or None."""
        result = recover_relaxed_object(raw)
        assert result is None or isinstance(result, dict)

    @given(json_values().filter(lambda value: not isinstance(value, dict)))
    def test_non_objects_are_refused(self, value: object) -> None:
        """A strictly valid document that is not an object is refused."""
        assert None is recover_relaxed_object(msgspec.json.encode(value).decode())


@pytest.mark.usefixtures("scanner")
class TestRepairRelaxedObject:
    def test_kinds_order(self) -> None:
        """The repair kinds are reported in the order the module documents."""
        expected = (
            "unquoted_keys",
            "redundant_braces",
            "template_quote_tokens",
            "trailing_commas",
            "single_quotes",
            "python_literals",
            "control_characters",
            "comments",
            "markdown_fence",
            "bom",
            "whitespace",
            "fence_language",
            "leaked_tokens",
            "repeated_object",
        )
        assert expected == REPAIR_KINDS

    def test_reports_every_kind_in_order(self) -> None:
        """A document with every defect reports every kind, in the documented order."""
        one = "{{a: True, 'b': <|\"|>x<|\"|>, /* c */ 'c': 'l\tm',}}"
        raw = f"\u00a0\ufeff```\njson\n{one}\n{one}<|im_end|>\n```"
        expected = Repaired({"a": True, "b": "x", "c": "l\tm"}, REPAIR_KINDS)
        assert expected == repair_relaxed_object(raw)

    @pytest.mark.parametrize(
        ("raw", "kinds"),
        [
            pytest.param('{"a": 1}', (), id="strict"),
            pytest.param(' \n{"a": 1}\t', (), id="json-whitespace"),
            pytest.param("\u00a0{}", ("whitespace",), id="other-whitespace"),
            pytest.param("{a: 1}", ("unquoted_keys",), id="keys"),
            pytest.param("{{}}", ("redundant_braces",), id="braces"),
            pytest.param('{"a": <|">x<|">}', ("template_quote_tokens",), id="tokens"),
            pytest.param('{"a": [1,],}', ("trailing_commas",), id="commas"),
            pytest.param("{'a': 1}", ("single_quotes",), id="single-quotes"),
            pytest.param('{"a": None}', ("python_literals",), id="literals"),
            pytest.param("```\n{}\n```", ("markdown_fence",), id="fence"),
            pytest.param("\ufeff{}", ("bom",), id="bom"),
            pytest.param('{"a": "\n"}', ("control_characters",), id="control"),
            pytest.param("{} // x", None, id="comment-after"),
            pytest.param("{/* x */}", ("comments",), id="comment"),
            pytest.param("json\n{}", ("fence_language",), id="language-word"),
            pytest.param("{}<|eot_id|>", ("leaked_tokens",), id="leaked"),
            pytest.param("{} {}", ("repeated_object",), id="repeated"),
        ],
    )
    def test_reports_each_kind(self, raw: str, kinds: tuple[str, ...]) -> None:
        """Each repair is reported under its own kind, and nothing else is."""
        repaired = repair_relaxed_object(raw)
        assert kinds == (None if repaired is None else repaired.kinds)

    def test_refusal_is_none(self) -> None:
        """A refused document gives None rather than an empty report."""
        assert None is repair_relaxed_object('{"a": 1')

    @given(relaxed_pairs())
    def test_agrees_with_recover(self, pair: tuple[dict[str, object], str]) -> None:
        """The reported value is what recover_relaxed_object returns."""
        _, raw = pair
        repaired = repair_relaxed_object(raw)
        assert recover_relaxed_object(raw) == (None if repaired is None else repaired.value)


class TestNormalizeArguments:
    OBJECT: Mapping[str, object] = {"type": "object"}
    WITH_PROPERTIES: Mapping[str, object] = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
    }
    REQUIRED: Mapping[str, object] = {**WITH_PROPERTIES, "required": ["city"]}

    @pytest.mark.parametrize(
        "value",
        [
            pytest.param('{"city": "Paris"}', id="plain"),
            pytest.param(' \n{"city": "Paris"}\n', id="whitespace"),
            pytest.param('```json\n{"city": "Paris"}\n```', id="fence"),
            pytest.param('\ufeff{"city": "Paris"}', id="bom"),
        ],
    )
    def test_json_string(self, value: str) -> None:
        """An object encoded as a JSON string becomes that object, even with required names."""
        expected = Normalized({"city": "Paris"}, "json_string")
        assert expected == normalize_arguments(value, self.REQUIRED)

    @pytest.mark.parametrize(
        "value", [[{"city": "Paris"}], [{"city": "Paris", "extra": 1}]], ids=repr
    )
    def test_single_item_array(self, value: list[dict[str, object]]) -> None:
        """A list holding one object becomes that object, required names or not."""
        expected = Normalized(dict(value[0]), "single_item_array")
        assert expected == normalize_arguments(value, self.REQUIRED)

    @pytest.mark.parametrize(
        "value", [[{"city": "a"}, {"city": "b"}], [[{"city": "a"}]], ["Paris"]], ids=repr
    )
    def test_other_arrays_are_left(self, value: list[object]) -> None:
        """Two objects, a nested list or a non-object are not guessed at."""
        assert None is normalize_arguments(value, self.REQUIRED)

    def test_single_item_array_only_for_object_schemas(self) -> None:
        schema = {"type": ["object", "array"]}
        assert None is normalize_arguments([{"city": "a"}], schema)

    @pytest.mark.parametrize("value", [None, "", "  \n", []], ids=repr)
    def test_empty_value(self, value: object) -> None:
        """An empty value becomes {} when the schema has no required names."""
        assert Normalized({}, "empty_value") == normalize_arguments(value, self.WITH_PROPERTIES)

    @pytest.mark.parametrize("value", ["Paris", 0, False, [1], '"x"', "[1]"], ids=repr)
    def test_ignored_value(self, value: object) -> None:
        """Any non-object becomes {} for a schema that declares no properties at all."""
        schema = {"type": "object", "properties": {}, "additionalProperties": False}
        assert Normalized({}, "ignored_value") == normalize_arguments(value, schema)

    @pytest.mark.parametrize("value", ["Paris", 0, False, [1], "{city: 'Paris'}"], ids=repr)
    def test_meaningful_value_is_kept(self, value: object) -> None:
        """A non-empty non-object is not dropped when the schema has properties."""
        assert None is normalize_arguments(value, self.WITH_PROPERTIES)

    @pytest.mark.parametrize("value", [None, "", []], ids=repr)
    def test_required_names_keep_empty_values(self, value: object) -> None:
        """An empty value is left alone when {} would miss required names."""
        assert None is normalize_arguments(value, self.REQUIRED)

    @pytest.mark.parametrize(
        "schema",
        [
            pytest.param({}, id="no-type"),
            pytest.param({"properties": {}}, id="properties-without-type"),
            pytest.param({"type": ["object", "null"]}, id="object-or-null"),
            pytest.param({"type": "string"}, id="string"),
            pytest.param({"type": "array"}, id="array"),
            pytest.param({"anyOf": [{"type": "object"}, {"type": "string"}]}, id="any-of"),
            pytest.param({"type": "object", "nullable": True}, id="nullable"),
        ],
    )
    def test_non_object_schemas_are_untouched(self, schema: Mapping[str, object]) -> None:
        """Schemas whose top level may accept a primitive or an array are left alone."""
        values: list[object] = ['{"a": 1}', None, "x", []]
        actual = [normalize_arguments(value, schema) for value in values]
        assert [None, None, None, None] == actual

    @pytest.mark.parametrize(
        "schema",
        [
            pytest.param({"type": "object", "minProperties": 1}, id="min-properties"),
            pytest.param({"type": "object", "anyOf": [{"required": ["a"]}]}, id="any-of"),
            pytest.param({"type": "object", "$ref": "#/$defs/x"}, id="ref"),
            pytest.param({"type": "object", "additionalProperties": True}, id="free-form"),
        ],
    )
    def test_conservative_schemas_keep_values(self, schema: Mapping[str, object]) -> None:
        """A schema that {} might not satisfy, or that takes any property, keeps "Paris"."""
        assert None is normalize_arguments("Paris", schema)

    def test_type_list_with_only_object(self) -> None:
        """A type list holding only "object" is an object schema."""
        assert Normalized({}, "empty_value") == normalize_arguments(None, {"type": ["object"]})

    def test_objects_are_untouched(self) -> None:
        """An object needs no normalisation, even one that fails the schema."""
        assert None is normalize_arguments({"town": "Paris"}, self.REQUIRED)

    def test_bare_object_schema_declares_no_properties(self) -> None:
        """A schema with just type object declares no properties, so "Paris" is ignored."""
        assert Normalized({}, "ignored_value") == normalize_arguments("Paris", self.OBJECT)
