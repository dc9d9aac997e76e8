"""Tests for whole-schema enforcement of `Tool.from_schema` tools
(`tinytools._declare.schema_dialect`, `tinytools._declare.validate.SchemaValidator`): every
keyword of draft 7 and 2020-12 that the compiled validator supports, lazily compiled once per
tool, with model-readable errors."""

from __future__ import annotations

from typing import Annotated

import fastjsonschema
import pytest
from pydantic import Field  # the `mcp` server below reads its annotations from here

from tinytools import Registry, Tool, ToolArgumentsError, ToolCall, dispatch, dispatch_sync
from tinytools._declare.schema_dialect import Enforce

DRAFT7 = "http://json-schema.org/draft-07/schema#"
DRAFT2020 = "https://json-schema.org/draft/2020-12/schema"

#: An MCP server's tool, as `tools/list` returns it (GitHub's `list_issues`, trimmed).
LIST_ISSUES = {
    "type": "object",
    "properties": {
        "owner": {"type": "string", "description": "Repository owner"},
        "repo": {"type": "string", "description": "Repository name"},
        "state": {"type": "string", "enum": ["open", "closed", "all"]},
        "labels": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "since": {"type": "string", "format": "date-time"},
        "page": {"type": "number", "minimum": 1},
        "perPage": {"type": "number", "minimum": 1, "maximum": 100},
    },
    "required": ["owner", "repo"],
}


def error_of(tool: Tool[..., object], arguments: object) -> ToolArgumentsError:
    with pytest.raises(ToolArgumentsError) as caught:
        tool.validate(arguments)  # type: ignore[arg-type]
    return caught.value


def prop(schema: dict[str, object], dialect: str | None = None) -> Tool[..., object]:
    """A tool whose one property `v` has ``schema``, in ``dialect``."""
    parameters: dict[str, object] = {"type": "object", "properties": {"v": schema}}
    if dialect is not None:
        parameters["$schema"] = dialect
    return Tool.from_schema("t", "", parameters)


class TestMcpServerSchema:
    def test_minimum_is_refused_to_the_model_first(self) -> None:
        """A server's `minimum: 1` is the model's error: the tool never runs, the message
        names the path, the bound and what was sent."""
        ran: list[dict[str, object]] = []
        tool = Tool.from_schema("list_issues", "", LIST_ISSUES, lambda **kw: ran.append(kw))
        call = ToolCall("c1", "list_issues", '{"owner": "o", "repo": "r", "perPage": 0}')
        message = dispatch_sync([call], Registry.of(tool)).messages[0]
        assert ("error", []) == (message.status, ran)
        assert "at `$.perPage`: Expected `integer` >= 1, got 0" in message.content

    @pytest.mark.parametrize(
        ("arguments", "path", "detail"),
        [
            ({"perPage": 101}, "$.perPage", "Expected `integer` <= 100, got 101"),
            ({"labels": []}, "$.labels", "Expected `array` of length >= 1, got 0 items"),
            ({"since": "yesterday"}, "$.since", 'in format `date-time`, got "yesterday"'),
            ({"state": "any"}, "$.state", 'Expected one of ["open", "closed", "all"], got "any"'),
        ],
    )
    def test_each_constraint(self, arguments: dict[str, object], path: str, detail: str) -> None:
        """Each constraint of the server's schema is enforced, its message ready for a model."""
        tool = Tool.from_schema("list_issues", "", LIST_ISSUES)
        error = error_of(tool, {"owner": "o", "repo": "r", **arguments})
        assert path == error.path
        assert detail in error.detail

    def test_subset_is_the_opt_out(self) -> None:
        """`enforce="subset"` leaves bounds and formats to the server."""
        tool = Tool.from_schema("list_issues", "", LIST_ISSUES, enforce="subset")
        arguments = {"owner": "o", "repo": "r", "perPage": 0, "since": "yesterday"}
        assert arguments == tool.validate(arguments)


class TestRealMcpServer:
    @pytest.mark.anyio
    async def test_server_bound_refused_before_the_server(self) -> None:
        """A live MCP server's tool (the `mcp` SDK's `MCPServer`, schema from pydantic's
        `Field(ge=1)`) wrapped with `Tool.from_schema`: an out-of-range argument is the
        model's error, and the server is never called; a valid call reaches it."""
        from mcp import Client
        from mcp.server.mcpserver import MCPServer

        server = MCPServer("issues")
        served: list[int] = []

        @server.tool()
        def list_issues(repo: str, per_page: Annotated[int, Field(ge=1, le=100)] = 30) -> str:
            """List a repository's issues."""
            served.append(per_page)
            return f"{repo}: {per_page} issues"

        async with Client(server) as client:
            [listed] = (await client.list_tools()).tools
            assert 1 == listed.input_schema["properties"]["per_page"]["minimum"]

            async def forward(**arguments: object) -> str:
                result = await client.call_tool(listed.name, arguments)
                return str(result.content[0].text)  # type: ignore[union-attr]

            tool = Tool.from_schema(
                listed.name, listed.description or "", listed.input_schema, forward
            )
            calls = [
                ToolCall("c1", "list_issues", '{"repo": "r", "per_page": 0}'),
                ToolCall("c2", "list_issues", '{"repo": "r", "per_page": 5}'),
            ]
            refused, answered = (await dispatch(calls, Registry.of(tool))).messages
        assert "error" == refused.status
        assert "at `$.per_page`: Expected `integer` >= 1, got 0" in refused.content
        assert ("ok", "r: 5 issues") == (answered.status, answered.content)
        assert [5] == served


#: (schema of `v`, an accepted value, a refused value, words of the refusal), each run in
#: draft 7 and in 2020-12.
KEYWORDS = [
    ({"type": "integer", "exclusiveMinimum": 0}, 1, 0, "Expected `integer` > 0, got 0"),
    ({"type": "number", "exclusiveMaximum": 1}, 0.5, 1, "Expected `integer` < 1, got 1"),
    ({"type": "integer", "multipleOf": 5}, 10, 12, "Expected a multiple of 5, got 12"),
    ({"type": "string", "minLength": 2}, "ab", "a", "length >= 2, got 1 characters"),
    ({"type": "string", "maxLength": 2}, "ab", "abc", "length <= 2, got 3 characters"),
    ({"type": "string", "pattern": "^[a-z]+$"}, "abc", "ABC", 'matching regex "^[a-z]+$"'),
    ({"type": "array", "maxItems": 1}, [1], [1, 2], "length <= 1, got 2 items"),
    ({"type": "array", "uniqueItems": True}, [1, True], [1, 1], "unique items"),
    ({"type": "array", "contains": {"const": 1}}, [0, 1], [0], "matching `contains`"),
    ({"type": "object", "minProperties": 1}, {"a": 1}, {}, "with >= 1 fields, got 0"),
    ({"type": "object", "maxProperties": 1}, {"a": 1}, {"a": 1, "b": 2}, "<= 1 fields"),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, None, 1, "at least one schema"),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, 1, 3, "exactly one schema"),
    ({"allOf": [{"minimum": 1}, {"maximum": 3}]}, 2, 4, "<= 3, got 4"),
    ({"not": {"type": "string"}}, 1, "s", "the `not` schema refuses"),
    ({"if": {"type": "string"}, "then": {"minLength": 2}}, "ab", "a", "length >= 2"),
    ({"type": "object", "propertyNames": {"maxLength": 1}}, {"a": 1}, {"ab": 1}, "propertyNames"),
    ({"type": "string", "format": "uuid"}, "a8098c1a-f86e-11da-bd1a-00112444be1e", "x", "uuid"),
    ({"type": "string", "format": "email"}, '"a@b"@example.com', "a@", "format `email`"),
    ({"type": "string", "format": "date"}, "2024-02-29", "2024-13-01", "format `date`"),
    ({"type": "string", "format": "ipv4"}, "10.0.0.1", "10.0.0.256", "format `ipv4`"),
]


class TestKeywords:
    @pytest.mark.parametrize("dialect", [DRAFT7, DRAFT2020, None])
    @pytest.mark.parametrize(("schema", "good", "bad", "words"), KEYWORDS)
    def test_enforced_in_both_dialects(
        self, dialect: str | None, schema: dict[str, object], good: object, bad: object, words: str
    ) -> None:
        """Each keyword accepts what it allows and refuses the rest, at the value's path."""
        tool = prop(schema, dialect)
        assert {"v": good} == tool.validate({"v": good})
        error = error_of(tool, {"v": bad})
        assert ("$.v", False) == (error.path, error.malformed)
        assert words in error.detail

    def test_unknown_format_is_an_annotation(self) -> None:
        """A format outside the enforced list (or an unknown one) never refuses a value."""
        for fmt in ("idn-hostname", "x-custom", "iri", "regex"):
            assert {"v": "((∅ not that"} == prop({"type": "string", "format": fmt}).validate(
                {"v": "((∅ not that"}
            )

    def test_ref_siblings_follow_the_dialect(self) -> None:
        """2020-12 applies the siblings of `$ref`; draft 7 ignores them."""
        schema = {
            "type": "object",
            "properties": {"v": {"$ref": "#/$defs/S", "maxLength": 2}},
            "$defs": {"S": {"type": "string"}},
        }
        assert "length <= 2" in error_of(Tool.from_schema("t", "", schema), {"v": "abc"}).detail
        draft7 = Tool.from_schema("t", "", {**schema, "$schema": DRAFT7})
        assert {"v": "abc"} == draft7.validate({"v": "abc"})

    def test_recursive_ref(self) -> None:
        """A recursive `$ref` is enforced at every depth, with the path to the bad value."""
        schema = {
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/Node"}},
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "n": {"type": "integer", "minimum": 0},
                        "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                }
            },
        }
        tool = Tool.from_schema("t", "", schema)
        bad = {"tree": {"n": 1, "kids": [{"n": 2}, {"n": -1}]}}
        assert "$.tree.kids[1].n" == error_of(tool, bad).path

    def test_2020_12_dependencies(self) -> None:
        """`dependentRequired` and `dependentSchemas` are enforced (draft 7's `dependencies`)."""
        tool = Tool.from_schema(
            "t",
            "",
            {
                "type": "object",
                "dependentRequired": {"card": ["cvv"]},
                "dependentSchemas": {"card": {"properties": {"cvv": {"maxLength": 4}}}},
            },
        )
        assert {"card": "1", "cvv": "123"} == tool.validate({"card": "1", "cvv": "123"})
        assert "$" == error_of(tool, {"card": "1"}).path
        assert "length <= 4" in error_of(tool, {"card": "1", "cvv": "12345"}).detail

    def test_prefix_items_pointer(self) -> None:
        """A 2020-12 pointer into `prefixItems` resolves once translated for fastjsonschema."""
        schema = {
            "type": "object",
            "properties": {
                "pair": {
                    "prefixItems": [
                        {"type": "integer"},
                        {"$ref": "#/properties/pair/prefixItems/0"},
                    ]
                }
            },
        }
        tool = Tool.from_schema("t", "", schema)
        assert {"pair": [1, 2]} == tool.validate({"pair": [1, 2]})
        assert "$.pair[1]" == error_of(tool, {"pair": [1, "x"]}).path

    @pytest.mark.parametrize(
        ("schema", "valid"),
        [
            (
                {"not": {"properties": {"a": {"type": "integer"}}, "unevaluatedProperties": False}},
                {"a": 1, "b": 1},
            ),
            (
                {
                    "oneOf": [
                        {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False},
                        {"type": "object", "required": ["b"]},
                    ]
                },
                {"a": 1, "b": 1},
            ),
            ({"if": {"minContains": 2, "contains": {"const": 1}}, "then": {"maxItems": 0}}, [1]),
        ],
        ids=["not", "oneOf", "if"],
    )
    def test_unenforced_constraints_never_make_it_stricter(
        self, schema: dict[str, object], valid: object
    ) -> None:
        """A constraint left unenforced under `not`/`oneOf`/`if` never refuses a valid value
        (each value here would be refused if only that constraint were dropped)."""
        assert {"v": valid} == prop(schema).validate({"v": valid})


class TestLazyCompilation:
    def test_no_compilation_when_building(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Building 1,000 schema tools and their registry compiles nothing; a tool's first
        call compiles its validator once, and later calls reuse it."""
        Tool.from_schema("warm", "", LIST_ISSUES)  # the meta-schema, compiled once per process
        compiled: list[object] = []
        real = fastjsonschema.compile

        def counting(definition: object, *args: object, **kwargs: object) -> object:
            compiled.append(definition)
            return real(definition, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(fastjsonschema, "compile", counting)
        tools = [Tool.from_schema(f"t{i}", "", LIST_ISSUES) for i in range(1000)]
        registry = Registry(tools)
        assert 0 == len(compiled)
        arguments = {"owner": "o", "repo": "r"}
        for _ in range(3):
            assert arguments == registry.get("t7").validate(arguments)  # type: ignore[union-attr]
        assert 1 == len(compiled)
        tools[8].validate(arguments)
        assert 2 == len(compiled)

    @pytest.mark.parametrize("enforce", ["full", "subset", "draft7", "draft2020-12"])
    def test_every_mode_is_lazy(self, enforce: Enforce, monkeypatch: pytest.MonkeyPatch) -> None:
        """No enforcement mode compiles at build time."""
        Tool.from_schema("warm", "", {"type": "object", "$schema": DRAFT7}, enforce=enforce)
        monkeypatch.setattr(fastjsonschema, "compile", pytest.fail)
        Tool.from_schema("t", "", LIST_ISSUES, enforce=enforce)


class TestHostileNumbers:
    def test_huge_integer_against_a_float_multiple(self) -> None:
        """An integer past any float, checked against `multipleOf`, is an error at its path."""
        tool = prop({"type": "array", "items": {"multipleOf": 0.5}})
        for arguments in ({"v": [1, 10**400]}, '{"v": [1, 1' + "0" * 400 + "]}"):
            error = error_of(tool, arguments)
            assert ("$.v[1]", False) == (error.path, error.malformed)
            assert "Number too large" in error.detail

    def test_multiple_of_is_exact_for_integral_floats(self) -> None:
        """A float past 2**53 meets an integer `multipleOf` exactly, so `oneOf` counts right."""
        tool = prop({"oneOf": [{"type": "integer", "minimum": 0}, {"multipleOf": 3}]})
        assert {"v": 4.473605561387322e16} == tool.validate({"v": 4.473605561387322e16})
        assert "exactly one" in error_of(tool, {"v": 3.0e16}).detail

    @pytest.mark.parametrize("digits", [3999, 4000, 4299])
    def test_mid_sized_integers_read_alike(self, digits: int) -> None:
        """An integer msgspec reads is accepted by every route, escapes or not (such ints
        were once refused, only beside a `\\u` escape)."""
        tool = prop({"type": "integer"})
        number = "-1" + "0" * (digits - 1)
        for text in (f'{{"v": {number}}}', f'{{"v": {number}, "s": "\\u0041"}}'):
            assert tool.validate(text)["v"] == int(number)

    def test_too_long_integer_has_a_real_path(self) -> None:
        """An integer msgspec cannot read is refused at its path (never msgspec's `$[...]`)."""
        tool = prop({"type": "object"})
        for number in ("1" + "0" * 4300, "-1" + "0" * 4299):
            error = error_of(tool, f'{{"v": {{"deep": [0, {number}]}}}}')
            assert ("$.v.deep[1]", "Integer value out of range") == (
                error.path,
                error.detail.split(";")[0],
            )
