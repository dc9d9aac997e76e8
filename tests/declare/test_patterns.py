"""Tests for schema patterns (`tinytools._declare.patterns`): matched by RE2, in time linear in the
model's text, with ECMA-262's meaning; a pattern RE2 cannot run is left to the tool."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinytools import Tool, ToolArgumentsError, ToolCall, dispatch_sync
from tinytools._declare.patterns import linear

#: Patterns Python's backtracking `re` takes exponential time on (about 2**n steps for a
#: text of n characters that almost matches).
EVIL = {
    "nested": (r"^(a+)+$", "a"),
    "alternation": (r"^(a|a)*$", "a"),
    "overlap": (r"^(a|aa)+$", "a"),
    "star-star": (r"^(a*)*b$", "a"),
    "words": (r"^(\w+\s?)*$", "ab "),
}


def tool_for(schema: dict[str, object], enforce: str = "full") -> Tool[..., object]:
    return Tool.from_schema("t", "A tool.", schema, fn=lambda **kw: "ran", enforce=enforce)  # type: ignore[arg-type]


def accepts(schema: dict[str, object], arguments: dict[str, object]) -> bool:
    try:
        tool_for(schema).validate(arguments)
    except ToolArgumentsError:
        return False
    return True


def value_schema(pattern: str) -> dict[str, object]:
    return {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}}


class TestHostileText:
    def test_backtracking_patterns_answer_every_call(self) -> None:
        """Each pattern, wherever the schema holds it, answers a call whose text would make
        a backtracking engine run for years (2**5000 steps): the calls run in a child
        process, so a hang fails this test at its deadline instead of freezing the suite."""
        code = textwrap.dedent(
            """
            import json, sys
            from tinytools import Tool, ToolCall, dispatch_sync
            evil = json.loads(sys.argv[1])
            n = 5000
            for name, (pattern, unit) in evil.items():
                text = unit * n + "!"
                places = {
                    "pattern": ({"properties": {"v": {"type": "string", "pattern": pattern}}},
                                {"v": text}),
                    "patternProperties": ({"patternProperties": {pattern: {"type": "integer"}},
                                           "additionalProperties": False}, {text: 1}),
                    "propertyNames": ({"propertyNames": {"pattern": pattern}}, {text: 1}),
                    "not": ({"properties": {"v": {"not": {"pattern": pattern}}}},
                            {"v": text}),
                    "anyOf": ({"properties": {"v": {"anyOf": [{"type": "integer"},
                               {"$ref": "#/$defs/p"}]}}, "$defs": {"p": {"pattern": pattern}}},
                              {"v": text}),
                }
                for place, (schema, arguments) in places.items():
                    for enforce in ("full", "subset"):
                        tool = Tool.from_schema("t", "A tool.", {"type": "object", **schema},
                                                fn=lambda **kw: "ran", enforce=enforce)
                        call = ToolCall("1", "t", json.dumps(arguments))
                        result = dispatch_sync([call], [tool])
                        assert [m.tool_call_id for m in result.messages] == ["1"], (name, place)
                        if enforce == "full" or place == "patternProperties":
                            refused = place != "not"
                            assert result.messages[0].is_error == refused, (name, place)
            print("answered")
            """
        )
        import json

        try:
            out = subprocess.run(
                [sys.executable, "-c", code, json.dumps(EVIL)],
                capture_output=True,
                text=True,
                timeout=300,
            )
        except subprocess.TimeoutExpired:
            pytest.fail("a schema pattern backtracked on model text: dispatch hung")
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "answered"

    @pytest.mark.parametrize("name", sorted(EVIL))
    def test_the_pattern_still_decides(self, name: str) -> None:
        """Linear matching changes no verdict: the short matching text passes, the
        almost-matching one is refused with the pattern named."""
        pattern, unit = EVIL[name]
        schema = value_schema(pattern)
        good = unit * 3 + ("b" if name == "star-star" else "")
        assert accepts(schema, {"v": good})
        with pytest.raises(ToolArgumentsError, match="matching regex"):
            tool_for(schema).validate({"v": unit * 3 + "!"})


class TestEcmaMeaning:
    @pytest.mark.parametrize(
        ("pattern", "text", "matches"),
        [
            (r"^\s$", "\u00a0", True),  # ECMA-262 white space includes NBSP, U+FEFF, U+3000
            (r"^\s$", "\ufeff", True),
            (r"^\S$", "\u3000", False),
            (r"^[\s]$", "\u2028", True),
            (r"^.$", "\u2028", False),  # `.` stops at every line terminator
            (r"^.$", "\r", False),
            (r"^.$", "é", True),
            (r"^\d$", "\u0663", False),  # `\d` and `\w` are ASCII in ECMA-262
            (r"^\w$", "é", False),
            (r"^a$", "a\n", False),  # `$` ends the text (no match before a final newline)
            (r"^\u00e9$", "é", True),
            (r"^\x41$", "A", True),
            (r"^\0$", "\x00", True),
            (r"^a{,2}$", "a{,2}", True),  # `{,2}` is not a quantifier in ECMA-262
            (r"^a{,2}$", "aa", False),
            (r"^[^\s]+$", "ab", True),
        ],
    )
    def test_pattern_means_what_ecma_262_says(self, pattern: str, text: str, matches: bool) -> None:
        assert matches == accepts(value_schema(pattern), {"v": text})

    def test_control_escape(self) -> None:
        """`\\cJ` is a line feed (Python's `re`, which checks the schema, refuses it)."""
        compiled = linear(r"^\cJ$")
        assert compiled is not None
        assert compiled.search("\n")

    ORDINARY = (
        r"^[a-z]+$",
        r"^(ab)*c?$",
        r"x{2,3}",
        r"^\w+@\d+\.?$",
        r"^[^-]*-[0-9]{1,3}$",
        r"a|bc|",
        r"^(?:foo|ba[rz])+$",
        r"^[A-Z]{3}-[0-9]{3}$",
    )

    @given(st.sampled_from(ORDINARY), st.text(alphabet="abcxyzAZ019@.-_ ", max_size=12))
    def test_ordinary_patterns_keep_their_verdicts(self, pattern: str, text: str) -> None:
        """On patterns and ASCII text where Python's `re` means what ECMA-262 does, RE2
        gives the verdicts the backtracking engine gave."""
        compiled = linear(pattern)
        assert compiled is not None
        assert compiled.search(text) == bool(re.search(pattern, text))


class TestLeftToTheTool:
    """A pattern RE2 cannot run is not enforced locally: never a hang, never stricter."""

    @pytest.mark.parametrize(
        "pattern",
        [r"^(?=.*\d)\w+$", r"^(?!x)", r"(?<=a)b", r"^(a)\1$", r"^a{1001}$", r"[]a]"],
    )
    def test_unrunnable_pattern_is_not_enforced(self, pattern: str) -> None:
        assert linear(pattern) is None
        assert accepts(value_schema(pattern), {"v": "anything"})

    def test_not_holding_one_is_skipped_whole(self) -> None:
        """Under `not`, dropping the pattern alone would refuse every value: the whole
        `not` goes, so what the schema allows still passes."""
        schema = {"type": "object", "properties": {"v": {"not": {"pattern": r"^(?=a)"}}}}
        assert accepts(schema, {"v": "xyz"})

    def test_one_of_holding_one_is_skipped_whole(self) -> None:
        schema = {
            "type": "object",
            "properties": {"v": {"oneOf": [{"pattern": r"(?<!b)a"}, {"pattern": "^x"}]}},
        }
        assert accepts(schema, {"v": "xa"})

    def test_pattern_property_takes_its_fields_from_additional_properties(self) -> None:
        """Dropping a `patternProperties` name alone would hand its fields to
        `additionalProperties: false`: the two go together."""
        schema = {
            "type": "object",
            "patternProperties": {r"^(?=x)": {"type": "integer"}, "^n_": {"type": "integer"}},
            "additionalProperties": False,
        }
        assert accepts(schema, {"x1": "not checked", "other": 1})
        assert not accepts(schema, {"n_1": "still checked"})
        assert accepts(schema, {"n_1": 1})

    def test_subset_keeps_the_rule_too(self) -> None:
        schema = {
            "type": "object",
            "patternProperties": {r"^(?=x)": {"type": "integer"}},
            "additionalProperties": False,
        }
        tool = tool_for(schema, enforce="subset")
        assert tool.validate({"x1": "s"}) == {"x1": "s"}

    def test_the_call_still_runs(self) -> None:
        tool = tool_for(value_schema(r"^(?=.*\d).+$"))
        result = dispatch_sync([ToolCall("1", "t", '{"v": "no digit"}')], [tool])
        assert result.messages[0].content == "ran"
