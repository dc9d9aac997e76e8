"""Tests for `tinytools._declare.schema_check`: `Tool.from_schema` refuses a schema that is not JSON
Schema in its dialect when the tool is built, never at the first call."""

from __future__ import annotations

import urllib.request

import pytest

from tinytools import Tool, ToolDefinitionError
from tinytools._declare.schema_dialect import Enforce

DRAFT7 = "http://json-schema.org/draft-07/schema#"
DRAFT2020 = "https://json-schema.org/draft/2020-12/schema"


def obj(**properties: object) -> dict[str, object]:
    return {"type": "object", "properties": properties}


def refusal(schema: dict[str, object], enforce: Enforce = "full") -> str:
    with pytest.raises(ToolDefinitionError) as caught:
        Tool.from_schema("t", "", schema, enforce=enforce)
    return str(caught.value)


class TestMetaSchema:
    @pytest.mark.parametrize("dialect", [DRAFT7, DRAFT2020, None])
    @pytest.mark.parametrize("enforce", ["full", "subset"])
    def test_unknown_type(self, dialect: str | None, enforce: Enforce) -> None:
        """An unknown `type` is refused in every dialect and mode, naming its path and the fix."""
        schema = obj(rate={"type": "float"})
        if dialect is not None:
            schema["$schema"] = dialect
        message = refusal(schema, enforce)
        assert "at `$.properties.rate.type`" in message
        assert '"float" is not a type; use one of array, boolean, integer' in message

    @pytest.mark.parametrize(
        ("schema", "where"),
        [
            (obj(n={"type": "integer", "minimum": "1"}), "$.properties.n.minimum"),
            (obj(s={"type": "string", "maxLength": -1}), "$.properties.s.maxLength"),
            (obj(s={"type": "string", "pattern": "(("}), "$.properties.s.pattern"),
            (obj(a={"type": "array", "minItems": 1.5}), "$.properties.a.minItems"),
            ({"type": "object", "required": "q"}, "$.required"),
            (obj(x={"oneOf": []}), "$.properties.x.oneOf"),
            ({**obj(), "$defs": {"P": {"type": "strin"}}}, "$.$defs.P.type"),
            (obj(x={"enum": "a"}), "$.properties.x.enum"),
            ({"type": "object", "patternProperties": {"((": {}}}, "$.patternProperties"),
        ],
    )
    def test_invalid_keyword_values(self, schema: dict[str, object], where: str) -> None:
        """A keyword whose value the meta-schema refuses is refused at that path."""
        assert f"at `{where}`" in refusal(schema)

    def test_array_items_in_2020_12(self) -> None:
        """Array-form `items` is draft 7's tuple; in 2020-12 the error says how to write it."""
        schema = obj(pair={"type": "array", "items": [{"type": "string"}]})
        assert "write a tuple as `prefixItems`" in refusal(schema)
        Tool.from_schema("t", "", {**schema, "$schema": DRAFT7})
        Tool.from_schema("t", "", schema, enforce="draft7")

    def test_valid_schemas_of_both_dialects(self) -> None:
        """Schemas real servers send (2020-12 `$defs`, draft-7 `definitions`) are accepted."""
        Tool.from_schema(
            "t",
            "",
            {
                **obj(
                    p={"$ref": "#/$defs/Place"},
                    when={"type": "string", "format": "date-time"},
                    n={"type": "integer", "minimum": 1, "maximum": 10},
                    pair={"type": "array", "prefixItems": [{"type": "string"}], "items": False},
                ),
                "$defs": {"Place": obj(city={"type": "string", "minLength": 1})},
                "required": ["p"],
            },
        )
        Tool.from_schema(
            "t",
            "",
            {
                "$schema": DRAFT7,
                **obj(p={"$ref": "#/definitions/P"}, t={"items": [{}], "additionalItems": False}),
                "definitions": {"P": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
            },
        )

    def test_every_problem_at_once(self) -> None:
        """A schema problem is reported with the tool's other definition problems."""
        with pytest.raises(ToolDefinitionError) as caught:
            Tool.from_schema("t", "", obj(x={"type": "float"}), enforce="loose")  # type: ignore[arg-type]
        assert 'enforce must be one of "full", "subset"' in str(caught.value)

    def test_fn_that_cannot_be_called(self) -> None:
        """A non-callable ``fn`` is refused when the tool is built, not when a call fails."""
        with pytest.raises(ToolDefinitionError, match="fn must be the function that runs the tool"):
            Tool.from_schema("t", "", obj(), fn="run")  # type: ignore[call-overload]


class TestDialect:
    @pytest.mark.parametrize(
        "uri",
        [
            DRAFT7,
            "http://json-schema.org/draft-07/schema",
            "https://json-schema.org/draft-07/schema#",
            "http://json-schema.org/draft-06/schema#",
            DRAFT2020,
            DRAFT2020 + "#",
        ],
    )
    def test_supported(self, uri: str) -> None:
        """Draft 7 (and its subset draft 6) and 2020-12 are recognised, scheme and `#` aside."""
        Tool.from_schema("t", "", {**obj(), "$schema": uri})

    @pytest.mark.parametrize(
        "uri", ["http://json-schema.org/draft-04/schema#", "https://example.com/mine", 7]
    )
    def test_other_dialects_are_refused(self, uri: object) -> None:
        """A `$schema` naming another dialect is refused with the two that are checked."""
        message = refusal({**obj(), "$schema": uri})
        assert "tinytools checks and enforces JSON Schema draft 7" in message


class TestReferences:
    def test_dangling(self) -> None:
        """A `$ref` that resolves to nothing in the schema is refused at its path."""
        message = refusal(obj(p={"$ref": "#/$defs/Missing"}))
        assert "'#/$defs/Missing' at `$.properties.p.$ref`, which is not a schema" in message

    @pytest.mark.parametrize(
        "ref", ["http://169.254.169.254/latest", "other.json#/x", "file:///etc/passwd", "#anchor"]
    )
    def test_outside_the_schema_is_never_fetched(
        self, ref: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A reference outside the schema is refused; nothing is fetched, now or later."""

        def no_network(*args: object, **kwargs: object) -> object:
            raise AssertionError("a schema reference was fetched")

        monkeypatch.setattr(urllib.request, "urlopen", no_network)
        for enforce in ("full", "subset"):
            assert "only references inside the schema" in refusal(obj(p={"$ref": ref}), enforce)

    def test_escaped_pointers_resolve(self) -> None:
        """JSON-pointer escapes (`~1`, `~0`, percent-encoding) and `#` itself resolve."""
        schema = {
            **obj(
                a={"$ref": "#/$defs/a~1b"}, b={"$ref": "#/$defs/t~0"}, c={"$ref": "#/$defs/x%20y"}
            ),
            "$defs": {"a/b": {"type": "string"}, "t~": {"type": "integer"}, "x y": {}},
        }
        tool = Tool.from_schema("t", "", schema)
        assert {"a": "s", "b": 1, "c": None} == tool.validate({"a": "s", "b": 1, "c": None})
        Tool.from_schema("t", "", obj(child={"$ref": "#"}))

    def test_nested_id(self) -> None:
        """A subschema's `$id` (which would rebase its references) is refused."""
        message = refusal({**obj(), "$defs": {"A": {"$id": "https://example.com/a"}}})
        assert "sets `$id` at `$.$defs.A`" in message

    def test_every_place_a_reference_can_sit(self) -> None:
        """References are followed through every kind of subschema position."""
        for place in (
            {"additionalProperties": {"$ref": "#/$defs/no"}},
            {"items": {"$ref": "#/$defs/no"}},
            {"anyOf": [{"$ref": "#/$defs/no"}]},
            {"dependentSchemas": {"a": {"$ref": "#/$defs/no"}}},
            {"not": {"$ref": "#/$defs/no"}},
        ):
            assert "which is not a schema" in refusal(
                {"type": "object", "properties": {"x": place}}
            )

    @pytest.mark.parametrize(
        ("schema", "where"),
        [
            (
                {
                    **obj(x={"$ref": "#/$defs/A"}),
                    "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}},
                },
                "$.$defs.",
            ),
            (
                {
                    **obj(x={"$ref": "#/$defs/A"}),
                    "$defs": {"A": {"allOf": [{"$ref": "#/$defs/A"}]}},
                },
                "$.$defs.A",
            ),
            ({**obj(), "allOf": [{"$ref": "#"}]}, "`$`"),
            ({**obj(), "not": {"if": {"$ref": "#"}}}, "`$`"),
        ],
    )
    def test_a_loop_that_never_steps_into_the_value(
        self, schema: dict[str, object], where: str
    ) -> None:
        """A `$ref` loop that never steps into the value would recurse forever on every call
        (the model would be told its arguments nest too deeply): refused when built."""
        message = refusal(schema)
        assert "refers back to" in message
        assert where in message

    def test_recursion_through_the_value_is_fine(self) -> None:
        """A schema that refers back through `properties` or `items` (a tree) is built, and
        so are references shared by several places."""
        tree = {
            **obj(
                root={"$ref": "#/$defs/N"},
                again={"anyOf": [{"$ref": "#/$defs/N"}, {"$ref": "#/$defs/S"}]},
            ),
            "$defs": {
                "N": {
                    "type": "object",
                    "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/N"}}},
                },
                "S": {"allOf": [{"$ref": "#/$defs/T"}]},
                "T": {"type": "string"},
            },
        }
        tool = Tool.from_schema("t", "", tree)
        assert {"root": {"kids": [{}]}} == tool.validate({"root": {"kids": [{}]}})
        Tool.from_schema("t", "", obj(child={"$ref": "#"}))


def nested(kind: str, depth: int) -> dict[str, object]:
    inner: dict[str, object] = {"type": "string"}
    for _ in range(depth):
        if kind == "properties":
            inner = {"type": "object", "properties": {"a": inner}}
        else:
            inner = {"type": "array", kind: inner}
    return {"type": "object", "properties": {"x": inner}}


class TestDepth:
    @pytest.mark.parametrize(("kind", "depth"), [("items", 30), ("contains", 12), ("items", 700)])
    def test_too_deep_for_the_validator_is_refused_when_built(self, kind: str, depth: int) -> None:
        """A schema nested deeper inline than the generated validator can nest is refused
        when the tool is built, saying how to flatten it (never a crash at the first call)."""
        assert "move inner parts into `$defs`" in refusal(nested(kind, depth))

    def test_deep_but_enforceable(self) -> None:
        """Deep schemas the validator can nest are built and enforced at every level."""
        tool = Tool.from_schema("t", "", nested("properties", 30))
        value: object = "s"
        for _ in range(30):
            value = {"a": value}
        assert {"x": value} == tool.validate({"x": value})

    def test_deeper_than_python_can_copy(self) -> None:
        """A schema nested past the interpreter's recursion limit is a definition error."""
        assert "nested too deeply" in refusal(nested("properties", 100_000))
