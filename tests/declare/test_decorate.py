"""Tests for `tinytools._declare.decorate` (and the schema it builds through
`tinytools._declare.schema`)."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import sys
import uuid
from typing import Annotated, Literal

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # typing.TypedDict only understands NotRequired from 3.11 on
    from typing_extensions import NotRequired, TypedDict

import attrs
import msgspec
import pytest

from tinytools import (
    Exposure,
    Inject,
    PType,
    RunContext,
    State,
    Tool,
    ToolDefinitionError,
    ToolPolicy,
    Xml,
    tool,
)


def props(t: Tool[..., object]) -> dict[str, object]:
    """The schema's properties of ``t``."""
    value = t.parameters["properties"]
    assert isinstance(value, dict)
    return value


class Opaque:
    """Not JSON-describable."""


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


@attrs.define
class Box:
    width: float
    label: str = "box"


class Line(msgspec.Struct):
    start: Point
    end: Point


class Movie(TypedDict):
    title: str
    year: NotRequired[int]


class Tags(TypedDict, total=False):
    names: list[str]


@dataclasses.dataclass
class Tree:
    value: int
    children: list[Tree] = dataclasses.field(default_factory=list)


class TestToolDecorator:
    def test_bare_and_with_options(self) -> None:
        """`@tool` works bare and with keyword options, and options win."""

        @tool
        def ping() -> str:
            """Reply pong."""
            return "pong"

        @tool(name="pong2", description="Explicit.", exposure="hidden", format=Xml())
        def pong() -> str:
            """Ignored summary."""
            return "ping"

        assert (ping.name, ping.description) == ("ping", "Reply pong.")
        assert ("pong2", "Explicit.", Exposure.Hidden, Xml()) == (
            pong.name,
            pong.description,
            pong.exposure,
            pong.format,
        )

    def test_still_callable(self) -> None:
        """A tool is called exactly like its function."""

        @tool
        def add(a: int, b: int = 2) -> int:
            return a + b

        assert add(3) == 5
        assert add(a=3, b=4) == 7

    @pytest.mark.anyio
    async def test_async_stays_async(self) -> None:
        """An async function makes an async tool whose call returns an awaitable."""

        @tool
        async def later(x: int) -> int:
            return x * 2

        assert later.is_async
        assert await later(2) == 4

    def test_policy_kept(self) -> None:
        """The policy given to `@tool` is the tool's policy; the default is unclassified."""

        @tool(policy=ToolPolicy.read_only())
        def a() -> None: ...

        @tool
        def b() -> None: ...

        assert ToolPolicy.read_only() == a.policy
        assert not b.policy.classified

    def test_ptype_format(self) -> None:
        """A PType format keeps its ordered parameter names."""

        @tool(format=PType(["q", "n"]))
        def search(q: str, n: int) -> None: ...

        assert search.format.parameters == ("q", "n")  # type: ignore[union-attr]


class TestSchema:
    def test_primitives_in_signature_order(self) -> None:
        """Property order is signature order; required lists the parameters without defaults."""

        @tool
        def f(s: str, i: int, x: float, b: bool, n: None, o: int | None = None) -> None: ...

        assert list(props(f)) == ["s", "i", "x", "b", "n", "o"]
        assert f.parameters["required"] == ["s", "i", "x", "b", "n"]
        assert props(f)["s"] == {"type": "string"}
        assert props(f)["o"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
        assert f.parameters["additionalProperties"] is False

    def test_collections(self) -> None:
        """Lists, tuples, sets, frozensets and string-keyed dicts map to arrays and objects."""

        @tool
        def f(
            a: list[int],
            t: tuple[int, str],
            v: tuple[int, ...],
            s: set[str],
            fs: frozenset[int],
            d: dict[str, float],
        ) -> None: ...

        p = props(f)
        assert p["a"] == {"type": "array", "items": {"type": "integer"}}
        assert p["t"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]  # type: ignore[index]
        assert p["v"] == {"type": "array", "items": {"type": "integer"}}
        assert p["s"] == {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
        assert True is p["fs"]["uniqueItems"]  # type: ignore[index]
        assert p["d"] == {"type": "object", "additionalProperties": {"type": "number"}}

    def test_literal_and_enum(self) -> None:
        """Literals and Enums become `enum`; an Enum is a shared `$defs` entry."""

        @tool
        def f(mode: Literal["a", "b"], colour: Colour = Colour.RED) -> None: ...

        assert props(f)["mode"] == {"enum": ["a", "b"]}
        assert props(f)["colour"] == {"$ref": "#/$defs/Colour", "default": "red"}
        assert f.parameters["$defs"]["Colour"] == {"title": "Colour", "enum": ["blue", "red"]}  # type: ignore[index]

    def test_classes_and_recursion(self) -> None:
        """Dataclasses, attrs classes, Structs, TypedDicts and recursive types land in `$defs`."""

        @tool
        def f(p: Point, b: Box, line: Line, m: Movie, tags: Tags, tree: Tree) -> None: ...

        defs = f.parameters["$defs"]
        assert isinstance(defs, dict)
        assert {"Point", "Box", "Line", "Movie", "Tags", "Tree"} == set(defs)
        assert defs["Movie"]["required"] == ["title"]
        assert defs["Tags"]["required"] == []
        assert defs["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}

    def test_formats(self) -> None:
        """Dates, times with offsets, UUIDs and Decimals carry their string formats."""

        @tool
        def f(
            d: datetime.date,
            ts: Annotated[datetime.datetime, msgspec.Meta(tz=True)],
            u: uuid.UUID,
            n: decimal.Decimal,
            plain: datetime.datetime,
        ) -> None: ...

        p = props(f)
        assert p["d"]["format"] == "date"  # type: ignore[index]
        assert p["ts"]["format"] == "date-time"  # type: ignore[index]
        assert p["u"]["format"] == "uuid"  # type: ignore[index]
        assert p["n"]["format"] == "decimal"  # type: ignore[index]
        assert p["plain"] == {"type": "string"}

    def test_descriptions_and_constraints(self) -> None:
        """Descriptions: Meta first, then Annotated text, then the docstring; constraints stay."""

        @tool
        def f(
            a: Annotated[int, msgspec.Meta(ge=1, le=10, description="From Meta.")],
            b: Annotated[str, "From Annotated."],
            c: str,
        ) -> None:
            """Do it.

            Args:
                a: Loses to Meta.
                b: Loses to Annotated.
                c: From the docstring.
            """

        p = props(f)
        assert (p["a"]) == {
            "type": "integer",
            "minimum": 1,
            "maximum": 10,
            "description": "From Meta.",
        }
        assert p["b"]["description"] == "From Annotated."  # type: ignore[index]
        assert p["c"]["description"] == "From the docstring."  # type: ignore[index]

    def test_defaults(self) -> None:
        """JSON-encodable defaults are advertised; other defaults are not, yet still apply."""
        sentinel = object()

        @tool
        def f(
            a: int = 3,
            items: list[int] = [1, 2],  # noqa: B006 - the point of the test
            other: int | None = sentinel,  # type: ignore[assignment]
        ) -> None: ...

        assert props(f)["a"]["default"] == 3  # type: ignore[index]
        assert props(f)["items"]["default"] == [1, 2]  # type: ignore[index]
        assert "default" not in props(f)["other"]  # type: ignore[operator]
        assert {"a": 3, "items": [1, 2], "other": sentinel} == f.validate("{}")

    def test_mutable_default_is_fresh_per_call(self) -> None:
        """A mutable default is a fresh copy for each validation, never shared."""

        @tool
        def f(items: list[int] = [1]) -> None: ...  # noqa: B006 - the point of the test

        first = f.validate("{}")["items"]
        assert isinstance(first, list)
        first.append(2)
        assert f.validate("{}") == {"items": [1]}

    def test_docstring_description_without_sections(self) -> None:
        """The description is the docstring's summary and body; sections never leak."""

        @tool
        def f(x: int) -> int:
            """Summary line.

            Body paragraph.

            Args:
                x: The x.

            Returns:
                Something.

            Raises:
                ValueError: Never.
            """
            return x

        assert f.description == "Summary line.\n\nBody paragraph."
        assert props(f)["x"]["description"] == "The x."  # type: ignore[index]


class TestInjectedParameters:
    def test_hidden_at_any_position(self) -> None:
        """`Inject[...]` parameters are left out of the schema wherever they stand."""

        @tool
        def f(
            ctx: Inject[RunContext], q: str, state: Inject[State[dict[str, int]]], n: int
        ) -> None: ...

        assert list(props(f)) == ["q", "n"]
        assert f.injected == ("ctx", "state")

    def test_model_cannot_set_injected(self) -> None:
        """A model argument named like an injected parameter is a schema violation."""

        @tool
        def f(q: str, ctx: Inject[RunContext]) -> None: ...

        assert "unknown field `ctx`" in _error(f, '{"q": "x", "ctx": {}}')


def _error(t: Tool[..., object], raw: str) -> str:
    from tinytools import ToolArgumentsError

    with pytest.raises(ToolArgumentsError) as info:
        t.validate(raw)
    return str(info.value)


class TestDefinitionErrors:
    def test_every_problem_at_once(self) -> None:
        """All problems are reported together, naming the function."""

        def bad(a, *args: int, c: RunContext, d: object = None, **kw: int) -> None:  # type: ignore[no-untyped-def]
            """Bad.

            Args:
                ghost: Not a parameter.
            """

        with pytest.raises(ToolDefinitionError) as info:
            tool(bad)
        error = info.value
        assert "bad" in error.subject
        assert len(error.problems) == 5
        text = str(error)
        for needle in (
            "`a` has no type annotation",
            "`*args`",
            "`**kw`",
            "`c` has an injectable",
            "`ghost`",
        ):
            assert needle in text

    def test_local_class_named(self) -> None:
        """A hint naming a class the function's globals cannot see is reported per parameter."""

        class LocalOnly:
            pass

        def f(ok: int, thing: LocalOnly) -> None: ...

        with pytest.raises(ToolDefinitionError) as info:
            tool(f)
        assert len(info.value.problems) == 1
        assert "parameter `thing`" in info.value.problems[0]
        assert "cannot be resolved" in info.value.problems[0]

    def test_unsupported_type_named(self) -> None:
        """An unsupported parameter type is named with the parameter."""

        def f(ok: int, thing: Opaque) -> None: ...

        with pytest.raises(ToolDefinitionError) as info:
            tool(f)
        assert len(info.value.problems) == 1
        assert "parameter `thing`: type `Opaque` cannot be described" in info.value.problems[0]

    def test_object_is_any_value(self) -> None:
        """`object` parameters accept any JSON value and advertise an empty schema."""

        @tool
        def f(d: object, m: dict[str, object]) -> None: ...

        assert props(f)["d"] == {}
        assert props(f)["m"] == {"type": "object", "additionalProperties": {}}
        assert f.validate('{"d": [1, "a"], "m": {"k": null}}') == {"d": [1, "a"], "m": {"k": None}}

    def test_positional_only_rejected(self) -> None:
        """Positional-only parameters are refused with the fix."""

        def f(a: int, /) -> None: ...

        with pytest.raises(ToolDefinitionError, match="positional-only"):
            tool(f)

    def test_invalid_name(self) -> None:
        """A name providers cannot accept is refused at decoration."""
        with pytest.raises(ToolDefinitionError, match="not accepted by every provider"):

            @tool(name="has space")
            def f() -> None: ...

    def test_already_a_tool(self) -> None:
        """Decorating a tool twice is refused."""

        @tool
        def f() -> None: ...

        with pytest.raises(ToolDefinitionError, match="already a Tool"):
            tool(f)  # type: ignore[arg-type]

    def test_unresolvable_hint(self) -> None:
        """A forward reference that cannot be resolved is reported, not raised raw."""

        def f(x: Missing) -> None: ...  # type: ignore[name-defined] # noqa: F821

        with pytest.raises(ToolDefinitionError, match="cannot be resolved"):
            tool(f)
