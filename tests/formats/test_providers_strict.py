"""Tests for `tinytools.formats.openai_chat.strict_schema` (OpenAI's strict mode)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Literal

import fastjsonschema
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinytools import tool
from tinytools.formats.openai_chat import strict_schema


@dataclasses.dataclass
class Place:
    city: str
    country: str | None = None


@tool
def forecast(
    city: str,
    days: int = 3,
    unit: Literal["c", "f"] = "c",
    tags: list[str] | None = None,
    near: Place | None = None,
) -> str:
    """Forecast the weather."""
    return city


PROJECTED = strict_schema(forecast.parameters)
ORIGINAL_VALID = fastjsonschema.compile(forecast.parameters)
PROJECTED_VALID = fastjsonschema.compile(PROJECTED)


def accepts(validate: object, value: object) -> bool:
    try:
        validate(value)  # type: ignore[operator]
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def obj(**properties: object) -> dict[str, object]:
    return {"type": "object", "properties": properties}


junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.sampled_from(["city", "country", "x"]), st.text(max_size=3), max_size=3),
)
place = st.fixed_dictionaries({"city": st.text(), "country": st.none() | st.text()})
valid_values = {
    "city": st.text(),
    "days": st.integers(),
    "unit": st.sampled_from(["c", "f"]),
    "tags": st.none() | st.lists(st.text(), max_size=3),
    "near": st.none() | place,
}


class TestStrictSchema:
    def test_forecast(self) -> None:
        """Every property becomes required, objects close, non-null defaults are stated."""
        properties = PROJECTED["properties"]
        assert ["city", "days", "unit", "tags", "near"] == PROJECTED["required"]
        assert {"type": "integer", "description": "default=3"} == properties["days"]  # type: ignore[index]
        assert {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]} == (
            properties["tags"]  # type: ignore[index]
        )
        assert False is PROJECTED["$defs"]["Place"]["additionalProperties"]  # type: ignore[index]
        assert ["city", "country"] == PROJECTED["$defs"]["Place"]["required"]  # type: ignore[index]

    def test_input_untouched(self) -> None:
        """The projection builds a new schema and leaves the tool's alone."""
        before = copy.deepcopy(forecast.parameters)
        strict_schema(forecast.parameters)
        assert before == forecast.parameters

    def test_ref_with_siblings_moves_into_any_of(self) -> None:
        """A $ref with a description becomes a one-item anyOf (strict mode refuses siblings)."""
        schema = obj(p={"$ref": "#/$defs/P", "description": "A place."})
        schema["$defs"] = {"P": obj(x={"type": "string"})}
        expected = {"anyOf": [{"$ref": "#/$defs/P"}], "description": "A place."}
        assert expected == strict_schema(schema)["properties"]["p"]  # type: ignore[index]

    @pytest.mark.parametrize(
        ("node", "expected"),
        [
            ({"oneOf": [{"type": "string"}]}, {"anyOf": [{"type": "string"}]}),
            ({"type": "string", "format": "date-time"}, {"type": "string", "format": "date-time"}),
            (
                {"type": "string", "format": "uri"},
                {"type": "string", "description": 'format="uri"'},
            ),
            ({"type": "string", "pattern": "^a+$"}, {"type": "string", "pattern": "^a+$"}),
            (
                {"type": "string", "pattern": "^(?!x)"},
                {"type": "string", "description": 'pattern="^(?!x)"'},
            ),
            (
                {"type": "array", "items": {"type": "integer"}, "uniqueItems": True, "maxItems": 3},
                {
                    "type": "array",
                    "items": {"type": "integer"},
                    "maxItems": 3,
                    "description": "uniqueItems=true",
                },
            ),
            ({"type": "string", "title": "T", "examples": ["a"]}, {"type": "string"}),
            ({"type": ["string", "null"], "default": None}, {"type": ["string", "null"]}),
            (
                {"type": "string", "description": "Name.", "minLength": 2, "x-tag": 1},
                {"type": "string", "description": "Name. (minLength=2, x-tag=1)"},
            ),
        ],
    )
    def test_keywords(self, node: dict[str, object], expected: dict[str, object]) -> None:
        """Each keyword is kept, rewritten, dropped or stated in the description."""
        assert expected == strict_schema(obj(v=node))["properties"]["v"]  # type: ignore[index]

    def test_root_without_properties(self) -> None:
        """A schema-only tool without properties becomes a closed object taking `{}`."""
        expected = {
            "type": "object",
            "properties": {},
            "required": [],
            "additionalProperties": False,
        }
        assert expected == strict_schema({"type": "object"})

    @pytest.mark.parametrize(
        ("node", "message"),
        [
            ({}, r"\$.v: strict mode cannot express a value of any type"),
            ({"type": "object"}, "free-form object"),
            ({"type": "object", "additionalProperties": {"type": "string"}}, "free-form object"),
            (obj(a={"type": "string"}) | {"additionalProperties": True}, "free-form object"),
            ({"type": "array"}, "type of an array's items"),
            ({"allOf": [{"type": "string"}]}, "cannot express allOf"),
            ({"type": "array", "prefixItems": [{"type": "string"}]}, "cannot express prefixItems"),
            ({"$ref": "https://example.com/s.json"}, "cannot express this \\$ref"),
            ({"$ref": "#/$defs/A", "anyOf": [{"type": "null"}]}, "cannot express this \\$ref"),
            ({"type": "array", "items": True}, r"\$.v.items: strict mode needs a schema object"),
        ],
    )
    def test_inexpressible(self, node: dict[str, object], message: str) -> None:
        """What strict mode cannot say is a ValueError naming the JSON path."""
        with pytest.raises(ValueError, match=message):
            strict_schema(obj(v=node))

    @given(st.fixed_dictionaries(valid_values))
    def test_complete_valid_arguments_still_validate(self, arguments: dict[str, object]) -> None:
        """Arguments that give every property a valid value pass both schemas and the tool."""
        assert accepts(ORIGINAL_VALID, arguments)
        assert accepts(PROJECTED_VALID, arguments)
        forecast.validate(arguments)

    @given(
        st.fixed_dictionaries(valid_values),
        st.sampled_from([*valid_values, "extra"]),
        junk,
        st.booleans(),
    )
    def test_projection_never_widens(
        self, arguments: dict[str, object], key: str, value: object, corrupt: bool
    ) -> None:
        """Whatever the projected schema accepts, the original accepts too."""
        if corrupt:
            arguments[key] = value
        if accepts(PROJECTED_VALID, arguments):
            assert accepts(ORIGINAL_VALID, arguments)

    @given(st.fixed_dictionaries({}, optional=valid_values))
    def test_omitted_properties_are_refused(self, arguments: dict[str, object]) -> None:
        """Strict mode asks for every property: omitting one is refused by the projection only."""
        assert ("city" in arguments) == accepts(ORIGINAL_VALID, arguments)  # city is required
        assert accepts(PROJECTED_VALID, arguments) == (arguments.keys() == valid_values.keys())


class Circle(msgspec.Struct, tag="circle"):
    radius: float


class Square(msgspec.Struct, tag="square"):
    side: float


@tool
def draw(shape: Circle | Square, label: str = "") -> str:
    """Draw a shape."""
    return label


class TestDefinitionsAndChoices:
    def test_unreferenced_definitions_are_pruned(self) -> None:
        """Definitions nothing refers to (even ones strict mode cannot express) are dropped;
        those referred to, directly, through another or into one, are kept."""
        schema = {
            **obj(p={"$ref": "#/$defs/P"}, q={"$ref": "#/definitions/Q/properties/x"}),
            "$defs": {
                "P": obj(inner={"$ref": "#/$defs/Inner"}),
                "Inner": obj(n={"type": "integer"}),
                "Unused": {"type": "object"},  # free-form: strict mode would refuse it
            },
            "definitions": {"Q": obj(x={"type": "string"}), "Dead": {"allOf": []}},
        }
        projected = strict_schema(schema)
        assert ["Inner", "P"] == sorted(projected["$defs"])  # type: ignore[call-overload]
        assert ["Q"] == list(projected["definitions"])  # type: ignore[call-overload]
        assert "$defs" not in strict_schema({**obj(a={"type": "string"}), "$defs": {"U": {}}})

    def test_choice_of_closed_objects_is_closed(self) -> None:
        """An object whose oneOf/anyOf branches are all closed objects is declared as that
        choice (the type stays in the branches), instead of being refused."""
        schema = obj(
            shape={
                "type": "object",
                "description": "The shape.",
                "oneOf": [
                    {"$ref": "#/$defs/Circle"},
                    obj(side={"type": "number"}) | {"additionalProperties": False},
                ],
            }
        )
        schema["$defs"] = {"Circle": obj(radius={"type": "number"})}
        expected = {
            "description": "The shape.",
            "anyOf": [
                {"$ref": "#/$defs/Circle"},
                {
                    "type": "object",
                    "properties": {"side": {"type": "number"}},
                    "required": ["side"],
                    "additionalProperties": False,
                },
            ],
        }
        projected = strict_schema(schema)
        assert expected == projected["properties"]["shape"]  # type: ignore[index]
        validate = fastjsonschema.compile(projected)
        assert accepts(validate, {"shape": {"side": 2}})
        assert not accepts(validate, {"shape": {"side": 2, "extra": 1}})

    def test_choice_of_objects_from_a_signature(self) -> None:
        """A tagged union (msgspec's anyOf of `$ref`s) projects and stays closed."""
        projected = strict_schema(draw.parameters)
        validate = fastjsonschema.compile(projected)
        assert accepts(validate, {"shape": {"type": "square", "side": 1}, "label": ""})
        assert not accepts(validate, {"shape": {"type": "square", "side": 1, "x": 0}, "label": ""})

    @pytest.mark.parametrize(
        "node",
        [
            {"type": "object", "anyOf": [obj(a={"type": "string"}), {"type": "string"}]},
            {"type": "object", "anyOf": [{"type": "object"}]},
            {"type": "object", "properties": {"a": {}}, "anyOf": [obj(a={"type": "string"})]},
        ],
    )
    def test_other_choices_are_still_refused(self, node: dict[str, object]) -> None:
        """A choice with a branch that is not a closed object is still refused with its path."""
        with pytest.raises(ValueError, match=r"\$\.v"):
            strict_schema(obj(v=node))

    def test_choice_at_the_root_is_refused(self) -> None:
        """The root must be one object: a root choice of objects is refused, by path."""
        root = {"type": "object", "anyOf": [obj(a={"type": "string"}), obj(b={"type": "string"})]}
        with pytest.raises(ValueError, match=r"^\$: strict mode needs one object at the root"):
            strict_schema(root)
