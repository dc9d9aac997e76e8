"""Tests for opt-in scalar coercion: `tinytools.policies.Coerce` and `ToolRuntime.coerce`.

The pure step (`tinytools._declare.coerce.coerce_scalars`: which strings become which
numbers and booleans, where in a schema) and its place in admission (only after the
arguments failed, validated again, the event, the fallback, redaction, repaired text,
discovery's `tool_call`).
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

import msgspec
import pytest

from tinytools import (
    DispatchAborted,
    Exposure,
    Registry,
    Tool,
    ToolCall,
    ToolPolicy,
    dispatch_sync,
    tool,
)
from tinytools._declare.coerce import coerce_scalars
from tinytools.discovery import Discovery
from tinytools.events import InvalidToolArgs
from tinytools.policies import Coerce, Fail, NormalizeThenReturnToolError, RunPolicy
from tinytools.testing import check_dispatch_invariants

COERCE = RunPolicy(invalid_args=Coerce())
received: list[dict[str, object]] = []


@tool
def settings(
    count: int,
    ratio: float = 0.0,
    on: bool = False,
    level: Literal[1, 2] = 1,
    maybe: int | None = None,
    limit: int | Literal["all"] = 0,
    either: int | str = 0,
    small: Annotated[int, msgspec.Meta(ge=0, le=10)] = 0,
    label: str = "",
    counts: list[int] | None = None,
    by_name: dict[str, int] | None = None,
) -> str:
    """Record the arguments."""
    received.append(
        {
            "count": count,
            "ratio": ratio,
            "on": on,
            "level": level,
            "maybe": maybe,
            "limit": limit,
            "either": either,
            "small": small,
            "label": label,
            "counts": counts,
            "by_name": by_name,
        }
    )
    return "ok"


def _schema_tool(run: object = None) -> Tool[..., object]:
    return Tool.from_schema(
        "page",
        "Fetch a page.",
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 1, "maximum": 100},
                "x": {"type": "number"},
                "flag": {"type": "boolean"},
                "item": {"$ref": "#/$defs/Item"},
            },
            "required": ["n"],
            "additionalProperties": False,
            "$defs": {
                "Item": {
                    "type": "object",
                    "properties": {"size": {"type": "integer"}, "tags": {"type": "array"}},
                }
            },
        },
        run,  # type: ignore[arg-type]
    )


def _one(arguments: object, policy: RunPolicy = COERCE, tools: object = None) -> object:
    received.clear()
    return dispatch_sync(
        [ToolCall("c", "settings", arguments)],  # type: ignore[arg-type]
        tools or [settings],  # type: ignore[arg-type]
        policy=policy,
    )


def _recoveries(result: object) -> list[str]:
    return [e.recovery for e in result.events if isinstance(e, InvalidToolArgs)]  # type: ignore[attr-defined]


INTEGER = {"type": "object", "properties": {"v": {"type": "integer"}}}
NUMBER = {"type": "object", "properties": {"v": {"type": "number"}}}
BOOLEAN = {"type": "object", "properties": {"v": {"type": "boolean"}}}


class TestSpelling:
    """Which strings are numbers and booleans: JSON's spellings, exactly."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [("3", 3), ("-0", 0), ("-12", -12), ("2.5", 2.5), ("1e2", 100.0), ("-1.5E-3", -0.0015)],
    )
    def test_numbers(self, text: str, expected: object) -> None:
        """A JSON number in a string is read as JSON reads it."""
        found = coerce_scalars(NUMBER, {"v": text})
        assert {"v": expected} == found
        assert type(expected) is type(found["v"])  # type: ignore[index]

    @pytest.mark.parametrize(
        "text",
        [
            " 5", "5 ", "+5", "0x10", "1_000", "5.", ".5", "05", "1e", "NaN", "nan",
            "Infinity", "-Infinity", "", "-", "\u0663", "\uff15", "1,000", "5\n", "true",
            "1e999999", "-1e400", "1" * 4301,
        ],
    )  # fmt: skip
    def test_not_numbers(self, text: str) -> None:
        """Anything else is left as it is: other grammars, spaces, non-ASCII digits, a
        number Python cannot hold."""
        assert coerce_scalars(NUMBER, {"v": text}) is None
        assert coerce_scalars(INTEGER, {"v": text}) is None

    def test_long_integer(self) -> None:
        """An integer of 1,000 digits is an integer (its bounds are checked later)."""
        assert {"v": int("7" * 1000)} == coerce_scalars(INTEGER, {"v": "7" * 1000})

    @pytest.mark.parametrize(("text", "expected"), [("3", 3), ("3.0", 3.0), ("1e2", 100.0)])
    def test_integral_only_for_integers(self, text: str, expected: object) -> None:
        """An ``integer`` takes only integral values (3.0 as JSON reads it)."""
        assert {"v": expected} == coerce_scalars(INTEGER, {"v": text})

    @pytest.mark.parametrize("text", ["3.5", "1e-2"])
    def test_fractions_are_not_integers(self, text: str) -> None:
        assert coerce_scalars(INTEGER, {"v": text}) is None

    @pytest.mark.parametrize(("text", "expected"), [("true", True), ("false", False)])
    def test_booleans(self, text: str, expected: bool) -> None:
        assert {"v": expected} == coerce_scalars(BOOLEAN, {"v": text})

    @pytest.mark.parametrize("text", ["True", "FALSE", "1", "0", "yes", "on", " true", "null"])
    def test_not_booleans(self, text: str) -> None:
        assert coerce_scalars(BOOLEAN, {"v": text}) is None

    def test_lone_surrogate(self) -> None:
        assert coerce_scalars(INTEGER, {"v": "\ud800"}) is None

    def test_str_subclass(self) -> None:
        """A string of an SDK's own ``str`` type is read as the text it holds."""

        class Text(str):
            def __eq__(self, other: object) -> bool:
                return True

            __hash__ = str.__hash__

        assert {"v": 4} == coerce_scalars(INTEGER, {"v": Text("4")})


class TestPositions:
    """Where strings are coerced: only where the schema refuses them."""

    def test_valid_arguments_are_never_changed(self) -> None:
        arguments = {"count": 1, "label": "5", "either": "5", "limit": "all", "level": 2}
        assert coerce_scalars(settings.parameters, arguments) is None

    def test_strings_and_keys_stay(self) -> None:
        """A ``string`` field, a union that takes strings and object keys are left."""
        schema = {
            "type": "object",
            "properties": {
                "s": {"type": "string"},
                "u": {"type": ["string", "integer"]},
                "m": {"type": "object", "additionalProperties": {"type": "integer"}},
            },
        }
        found = coerce_scalars(schema, {"s": "5", "u": "5", "m": {"5": "6"}})
        assert {"s": "5", "u": "5", "m": {"5": 6}} == found

    def test_unions(self) -> None:
        """A union coerces only when no branch may take the string as it is."""
        arguments = {"count": 1, "maybe": "4", "limit": "7", "either": "9"}
        found = coerce_scalars(settings.parameters, arguments)
        assert {"count": 1, "maybe": 4, "limit": 7, "either": "9"} == found

    def test_a_string_branch_that_may_match_keeps_it(self) -> None:
        """A string branch with constraints is not second-guessed: the string stays."""
        schema = {
            "type": "object",
            "properties": {"v": {"anyOf": [{"type": "integer"}, {"pattern": "^x"}]}},
        }
        assert coerce_scalars(schema, {"v": "5"}) is None

    def test_enum_of_numbers(self) -> None:
        """``Literal[1, 2]`` (an enum of integers) takes ``"1"`` as 1."""
        assert {"count": 1, "level": 2} == coerce_scalars(
            settings.parameters, {"count": 1, "level": "2"}
        )

    def test_nested(self) -> None:
        """Inside ``$ref``, arrays, ``prefixItems``, ``additionalProperties`` and ``allOf``."""
        schema = {
            "type": "object",
            "properties": {
                "item": {"$ref": "#/$defs/Item"},
                "pair": {"type": "array", "prefixItems": [{"type": "boolean"}, {"type": "string"}]},
                "both": {"allOf": [{"$ref": "#/$defs/Item"}, {"required": ["size"]}]},
                "one": {"anyOf": [{"$ref": "#/$defs/Item"}, {"type": "null"}]},
            },
            "$defs": {
                "Item": {
                    "type": "object",
                    "properties": {"size": {"type": "integer"}},
                    "additionalProperties": {"type": "array", "items": {"type": "number"}},
                }
            },
        }
        arguments = {
            "item": {"size": "1", "xs": ["1.5", 2, "x"]},
            "pair": ["true", "7"],
            "both": {"size": "3"},
            "one": {"size": "4"},
        }
        before = json.dumps(arguments)
        assert {
            "item": {"size": 1, "xs": [1.5, 2, "x"]},
            "pair": [True, "7"],
            "both": {"size": 3},
            "one": {"size": 4},
        } == coerce_scalars(schema, arguments)
        assert before == json.dumps(arguments)  # (copies: the arguments are not changed)

    def test_ambiguous_union_is_not_entered(self) -> None:
        """An object matching two object branches: neither is known to apply."""
        branch = {"type": "object", "properties": {"size": {"type": "integer"}}}
        schema = {"type": "object", "properties": {"v": {"anyOf": [branch, {"type": "object"}]}}}
        assert coerce_scalars(schema, {"v": {"size": "1"}}) is None

    def test_pattern_properties_are_left(self) -> None:
        schema = {
            "type": "object",
            "patternProperties": {"^n": {"type": "integer"}},
            "additionalProperties": {"type": "integer"},
        }
        assert coerce_scalars(schema, {"n1": "1", "m": "2"}) is None

    def test_references_to_themselves_end(self) -> None:
        schema = {"type": "object", "properties": {"v": {"$ref": "#/$defs/A"}}}
        schema["$defs"] = {"A": {"$ref": "#/$defs/A"}, "B": {"$ref": "#/nowhere"}}
        assert coerce_scalars(schema, {"v": "1"}) is None

    def test_nested_a_thousand_deep(self) -> None:
        """A recursive schema and arguments 1,000 deep: no crash, nothing past the depth."""
        schema = {"$ref": "#/$defs/Node"}
        schema["$defs"] = {
            "Node": {
                "type": "object",
                "properties": {"n": {"type": "integer"}, "next": {"$ref": "#/$defs/Node"}},
            }
        }
        arguments: dict[str, object] = {"n": "1"}
        for _ in range(1000):
            arguments = {"n": "2", "next": arguments}
        found = coerce_scalars(schema, arguments)
        assert isinstance(found, dict)
        assert 2 == found["n"]
        self_holding: dict[str, object] = {"n": "1"}
        self_holding["next"] = self_holding
        assert isinstance(coerce_scalars(schema, self_holding), dict)


class TestAdmission:
    """Through dispatch: opt-in, after validation failed, validated again."""

    def test_off_by_default(self) -> None:
        """Under the default policy a quoted number is refused and the tool never runs."""
        result = _one('{"count": "3"}', RunPolicy())
        assert (["tool_error"], []) == (_recoveries(result), received)
        for policy in (RunPolicy(invalid_args=NormalizeThenReturnToolError()),):
            assert ["tool_error"] == _recoveries(_one('{"count": "3"}', policy))

    def test_coerced(self) -> None:
        """The tool gets the values; the event says ``coerced`` and shows what was sent."""
        sent = (
            '{"count": "3", "ratio": "2.5", "on": "true", "level": "2", "maybe": "4", '
            '"limit": "all", "either": "9", "small": "10", "label": "5", '
            '"counts": ["1", 2], "by_name": {"a": "-0"}}'
        )
        result = _one(sent)
        assert ["ok"] == [m.content for m in result.messages]  # type: ignore[attr-defined]
        assert [
            {
                "count": 3,
                "ratio": 2.5,
                "on": True,
                "level": 2,
                "maybe": 4,
                "limit": "all",
                "either": "9",
                "small": 10,
                "label": "5",
                "counts": [1, 2],
                "by_name": {"a": 0},
            }
        ] == received
        (event,) = result.events[:1]  # type: ignore[attr-defined]
        assert isinstance(event, InvalidToolArgs)
        assert ("coerced", sent) == (event.recovery, event.arguments)
        calls = [ToolCall("c", "settings", sent)]
        check_dispatch_invariants(calls, result, [settings], policy=COERCE)  # type: ignore[arg-type]

    def test_dict_arguments(self) -> None:
        sent = {"count": "3", "on": "false"}
        result = _one(sent)
        assert [3] == [r["count"] for r in received]
        assert sent == result.events[0].arguments  # type: ignore[attr-defined]

    def test_integral_float_as_validation_takes_it(self) -> None:
        """``"3.0"`` for an int reaches the tool as a sent 3.0 does."""
        _one('{"count": 3.0}', RunPolicy())
        sent_number = received[0]
        _one('{"count": "3.0"}')
        assert [sent_number] == received

    def test_valid_arguments_are_untouched(self) -> None:
        result = _one('{"count": 3, "label": "7"}')
        assert ([], "7") == (_recoveries(result), received[0]["label"])

    def test_bounds_hold_and_the_original_error_answers(self) -> None:
        """Coerced values that still fail (past ``le=10``) are refused with the error
        about the arguments as sent; the tool never runs."""
        result = _one('{"count": 3, "small": "11"}')
        message = result.messages[0]  # type: ignore[attr-defined]
        assert message.is_error
        assert not received
        assert "at `$.small`: Expected `integer`, got `string`" in message.content
        assert ["tool_error"] == _recoveries(result)

    def test_fail_is_the_fallback_of_a_tool_that_coerces(self) -> None:
        """A tool's own coercion under ``Fail``: what coercion cannot fix aborts."""
        strict = Tool.from_schema(
            "page",
            "",
            _schema_tool().parameters,
            lambda **kw: json.dumps(kw, sort_keys=True),
            policy=ToolPolicy().with_runtime(coerce=True),
        )
        policy = RunPolicy(invalid_args=Fail())
        result = dispatch_sync([ToolCall("c", "page", '{"n": "5"}')], [strict], policy=policy)
        assert (['{"n": 5}'], ["coerced"]) == (
            [m.content for m in result.messages],
            _recoveries(result),
        )
        with pytest.raises(DispatchAborted):
            dispatch_sync([ToolCall("c", "page", '{"n": "500"}')], [strict], policy=policy)

    def test_schema_tools(self) -> None:
        page = _schema_tool(lambda **kw: json.dumps(kw, sort_keys=True))
        sent = '{"n": "5", "x": "1e-1", "flag": "false", "item": {"size": "2", "tags": ["3"]}}'
        result = dispatch_sync([ToolCall("c", "page", sent)], [page], policy=COERCE)
        expected = {"flag": False, "item": {"size": 2, "tags": ["3"]}, "n": 5, "x": 0.1}
        assert json.dumps(expected, sort_keys=True) == result.messages[0].content
        refused = dispatch_sync([ToolCall("c", "page", '{"n": "0"}')], [page], policy=COERCE)
        assert "Expected `integer`, got `string`" in refused.messages[0].content

    def test_relaxed_text(self) -> None:
        """Relaxed JSON is repaired, then coerced."""
        result = _one("{count: '3', on: True,}")
        assert (["repaired", "coerced"], [3]) == (
            _recoveries(result),
            [r["count"] for r in received],
        )

    @pytest.mark.parametrize(
        "sent",
        ['{"count": "3", "count": 4}', '{"count": 4, "count": "3"}', "{count: 4, count: '3'}"],
    )
    def test_repeated_fields_are_never_coerced(self, sent: str) -> None:
        """Text that repeats a field is refused as sent: decoding it would pick one."""
        result = _one(sent)
        assert not received
        assert "repeats field" in result.messages[0].content  # type: ignore[attr-defined]

    def test_hostile_values(self) -> None:
        """Numbers past range, lone surrogates, deep nesting: answered, never a crash."""
        deep: object = "1"
        for _ in range(1000):
            deep = [deep]
        for sent in (
            {"count": "1e999999"},
            '{"count": "1e999999"}',
            {"count": "\ud800"},
            '{"count": "\\ud800"}',
            {"count": 1, "counts": deep},
            {"count": "9" * 5000},
            '{"count": 1, "by_name": {"a": ' + "[" * 1000 + '"1"' + "]" * 1000 + "}}",
        ):
            result = _one(sent)
            assert result.messages[0].is_error, sent  # type: ignore[attr-defined]
            assert not received

    def test_tool_call_through_discovery(self) -> None:
        """A call reached through discovery's ``tool_call`` is coerced for the real tool."""
        hidden = Discovery(Registry.of(Tool.from_schema(
            "page", "", _schema_tool().parameters, lambda n: str(n + 1),
            exposure=Exposure.Deferred,
        )))  # fmt: skip
        wrapped = {"name": "page", "arguments": {"n": "41"}}
        result = dispatch_sync([ToolCall("c", "tool_call", wrapped)], hidden, policy=COERCE)
        assert "42" == result.messages[0].content
        (event,) = [e for e in result.events if isinstance(e, InvalidToolArgs)]
        shown = (event.tool_name, event.recovery, event.arguments)
        assert ("page", "coerced", {"n": "41"}) == shown

    def test_secrets_stay_hidden(self) -> None:
        """A redacted argument coerced or not: its value is in no event and no message."""
        pins: list[int] = []

        @tool(policy=ToolPolicy(redact=("pin",)))
        def unlock(pin: int, door: int = 0) -> str:
            """Unlock."""
            pins.append(pin)
            return "open"

        for sent in ('{"pin": "9081726354"}', {"pin": "9081726354", "door": "x"}):
            result = dispatch_sync([ToolCall("c", "unlock", sent)], [unlock], policy=COERCE)
            shown = msgspec.json.encode([result.events, result.messages]).decode()
            assert "9081726354" not in shown, shown
        assert [9081726354] == pins
