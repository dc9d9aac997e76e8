"""Tests for pydantic v2 models as parameter types (`tinytools._declare.models`, through
`@tool`, `Tool.validate`, dispatch, redaction and `tinytools.testing`)."""

from __future__ import annotations

import dataclasses
import datetime
import subprocess
import sys
import textwrap
import uuid

import attrs
import msgspec
import pydantic
import pytest
from hypothesis import given, settings
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.json_schema import models_json_schema

from tinytools import (
    Registry,
    Tool,
    ToolArgumentsError,
    ToolCall,
    ToolDefinitionError,
    ToolPolicy,
    dispatch_sync,
    tool,
)
from tinytools._declare.schema_check import schema_problems
from tinytools._redact import MARKER
from tinytools.events import InvalidToolArgs, ToolStarted
from tinytools.formats._providers import strict_schema
from tinytools.testing import check_dispatch_invariants, invalid_arguments, valid_arguments
from tinytools.toolsets import Prepared


class Item(BaseModel):
    """One line of an order."""

    sku: str = Field(min_length=1, max_length=12, description="Stock keeping unit")
    qty: int = Field(ge=1, le=1000)


class Order(BaseModel):
    """An order."""

    customer: str
    items: list[Item] = Field(min_length=1, max_length=4)
    note: str | None = None

    @field_validator("customer")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("customer must not be blank")
        return value


@tool
def place(order: Order, rush: bool = False) -> str:
    """Place an order.

    Args:
        order: What to place.
        rush: Ship today.
    """
    assert isinstance(order, Order)
    return f"{order.customer}: {sum(i.qty for i in order.items)} items"


ORDER = {"customer": "ann", "items": [{"sku": "A1", "qty": 2}]}


def refusal(t: object, arguments: object) -> tuple[str, str]:
    """The path and detail of the ``ToolArgumentsError`` ``t.validate(arguments)`` raises."""
    with pytest.raises(ToolArgumentsError) as info:
        t.validate(arguments)  # type: ignore[attr-defined]
    return info.value.path, info.value.detail


class TestSchema:
    def test_the_models_own_schema(self) -> None:
        """A model parameter refers to the model's own JSON schema (pydantic's, validation
        mode), hoisted into the tool's ``$defs`` with the definitions it refers to; the
        docstring's description stays on the property."""
        _, generated = models_json_schema([(Order, "validation")], ref_template="#/$defs/{model}")
        assert {
            "type": "object",
            "properties": {
                "order": {"description": "What to place.", "$ref": "#/$defs/Order"},
                "rush": {"description": "Ship today.", "type": "boolean", "default": False},
            },
            "required": ["order"],
            "additionalProperties": False,
            "$defs": generated["$defs"],
        } == place.parameters

    def test_a_valid_schema_that_strict_mode_can_say(self) -> None:
        """The tool's schema is valid JSON Schema 2020-12 (every `$ref` resolves) and
        OpenAI's strict mode can express it."""
        assert [] == schema_problems(place.parameters, "draft2020-12")
        strict = strict_schema(place.parameters)
        assert {"Order", "Item"} == set(strict["$defs"])  # type: ignore[arg-type]

    def test_nested_optional_and_inside_other_types(self) -> None:
        """A model in a list, a dict, an Optional and a dataclass field is declared by
        reference to its one definition, and validated into instances."""

        @tool
        def ship(boxes: list[Box], spare: Item | None, by_name: dict[str, Item]) -> None:
            """Ship."""

        properties = ship.parameters["properties"]
        assert {"type": "array", "items": {"$ref": "#/$defs/Box"}} == properties["boxes"]  # type: ignore[index]
        assert {"anyOf": [{"$ref": "#/$defs/Item"}, {"type": "null"}]} == properties["spare"]  # type: ignore[index]
        assert [] == schema_problems(ship.parameters, "draft2020-12")
        got = ship.validate(
            {
                "boxes": [{"item": {"sku": "A", "qty": 1}, "label": "fragile"}],
                "spare": None,
                "by_name": {"x": {"sku": "B", "qty": 2}},
            }
        )
        assert Box(Item(sku="A", qty=1), "fragile") == got["boxes"][0]  # type: ignore[index]
        assert {"x": Item(sku="B", qty=2)} == got["by_name"]

    def test_a_dataclass_and_a_model_of_one_name(self) -> None:
        """A dataclass and a pydantic model that share a class name get a definition each,
        and each reference points at its own."""

        @tool
        def write(first: LineDc, second: LineModel) -> None:  # type: ignore[valid-type]
            """Write."""

        defs = write.parameters["$defs"]
        assert isinstance(defs, dict)
        first = write.parameters["properties"]["first"]["$ref"].rpartition("/")[2]  # type: ignore[index]
        second = write.parameters["properties"]["second"]["$ref"].rpartition("/")[2]  # type: ignore[index]
        assert first != second
        assert {"n"} == set(defs[first]["properties"])
        assert {"text"} == set(defs[second]["properties"])
        assert [] == schema_problems(write.parameters, "draft2020-12")
        got = write.validate({"first": {"n": 1}, "second": {"text": "t"}})
        assert LineDc(1) == got["first"]
        assert "t" == got["second"].text  # type: ignore[attr-defined]

    def test_a_model_default(self) -> None:
        """A model default is advertised as JSON and copied for each call (a mutable model
        is never shared between calls)."""

        @tool
        def add(item: Item = Item(sku="A", qty=1)) -> None:  # noqa: B008
            """Add."""

        assert {"sku": "A", "qty": 1} == add.parameters["properties"]["item"]["default"]  # type: ignore[index]
        first, second = add.validate({}), add.validate({})
        assert Item(sku="A", qty=1) == first["item"]
        assert first["item"] is not second["item"]

    def test_a_union_beside_another_type_is_refused(self) -> None:
        """A union of a model and anything but None is a definition error that says
        what to do instead."""
        with pytest.raises(ToolDefinitionError, match="a union may hold a pydantic model only"):

            @tool
            def pick(choice: Item | int) -> None:
                """Pick."""


@dataclasses.dataclass
class Box:
    item: Item
    label: str


@dataclasses.dataclass
class LineDc:
    n: int


LineDc.__name__ = LineDc.__qualname__ = "Line"  # (msgspec names its definition after it)
#: A pydantic model of the same name.
LineModel = pydantic.create_model("Line", text=(str, ...))


class TestValidate:
    def test_valid_arguments_become_instances(self) -> None:
        """Raw JSON and decoded arguments both reach the function as model instances."""
        text = msgspec.json.encode({"order": ORDER}).decode()
        expected = {"order": Order.model_validate(ORDER), "rush": False}
        assert expected == place.validate(text)
        assert expected == place.validate({"order": ORDER})

    @pytest.mark.parametrize(
        ("order", "path", "detail"),
        [
            (
                {"customer": "ann", "items": [{"sku": "A", "qty": 0}]},
                "$.order.items[0].qty",
                "Input should be greater than or equal to 1",
            ),
            (
                {"customer": "  ", "items": [{"sku": "A", "qty": 1}]},
                "$.order.customer",
                "Value error, customer must not be blank",
            ),
            ({"customer": "ann"}, "$.order.items", "Field required"),
            (
                {"customer": "ann", "items": []},
                "$.order.items",
                "List should have at least 1 item after validation, not 0",
            ),
            (
                {"customer": 7, "items": [{"sku": "A", "qty": 1}]},
                "$.order.customer",
                "Input should be a valid string, got `integer`",
            ),
            ([1, 2], "$.order", "Input should be an object, got `array`"),
            (
                {"customer": 7, "items": [{"sku": "", "qty": 1}]},
                "$.order.customer",
                "Input should be a valid string, got `integer` (and 1 more error in this object)",
            ),
        ],
        ids=["ge", "validator", "missing", "min_length", "type", "not-object", "two-errors"],
    )
    def test_refused_where_and_why(self, order: object, path: str, detail: str) -> None:
        """The model's constraints and validators are enforced; the error names the JSON
        path inside the model and the model's reason, from raw JSON and dicts alike."""
        assert (path, detail) == refusal(place, {"order": order})
        assert (path, detail) == refusal(place, msgspec.json.encode({"order": order}))

    def test_the_message_is_written_for_the_model(self) -> None:
        """The error reads as every other argument error does, with no pydantic internals
        (no documentation URL, no ``input_value``)."""
        with pytest.raises(ToolArgumentsError) as info:
            place.validate({"order": {"customer": "ann", "items": [{"sku": "A", "qty": 0}]}})
        assert (
            "Invalid arguments for tool `place` at `$.order.items[0].qty`: "
            "Input should be greater than or equal to 1."
        ) == str(info.value)

    @pytest.mark.parametrize(
        "bad", ["sk-live-SECRET-zzzz", "2024-99-99T99:99:99"], ids=["uuid", "datetime"]
    )
    def test_the_value_is_never_echoed(self, bad: str) -> None:
        """A value the model refuses to parse is not quoted back, not even in part."""

        @tool
        def look(key: Lookup) -> None:
            """Look up."""

        field = "id" if bad.startswith("sk") else "when"
        arguments = {"key": {"id": str(uuid.UUID(int=1)), "when": "2024-01-01T00:00:00Z"}}
        arguments["key"][field] = bad
        path, detail = refusal(look, arguments)
        assert f"$.key.{field}" == path
        assert "found" not in detail
        assert not any(part in detail for part in ("SECRET", "zzzz", "99"))

    def test_the_models_own_mode(self) -> None:
        """A model validates as its config says: a lax model takes ``"3"`` for an int; a
        strict one refuses it, and still reads a date from JSON text."""

        @tool
        def count(lax: Item, strict: Strict) -> None:
            """Count."""

        got = count.validate(
            {"lax": {"sku": "A", "qty": "3"}, "strict": {"n": 1, "on": "2024-01-02"}}
        )
        assert 3 == got["lax"].qty  # type: ignore[attr-defined]
        assert datetime.date(2024, 1, 2) == got["strict"].on  # type: ignore[attr-defined]
        path, _ = refusal(
            count, {"lax": {"sku": "A", "qty": 1}, "strict": {"n": "3", "on": "2024-01-02"}}
        )
        assert "$.strict.n" == path

    def test_hostile_input(self) -> None:
        """Deep nesting, numbers past any float, repeated keys and lone surrogates inside a
        model's part are refused as argument errors, never raised as anything else."""
        deep = "[" * 1000 + "]" * 1000
        for text in (
            '{"order": {"customer": "a", "items": [{"sku": "A", "qty": 1}], "note": ' + deep + "}}",
            '{"order": {"customer": "a", "items": [{"sku": "A", "qty": 1e999}]}}',
            '{"order": {"customer": "a", "customer": "b", "items": [{"sku": "A", "qty": 1}]}}',
            '{"order": {"customer": "\\ud800", "items": [{"sku": "A", "qty": 1}]}}',
            '{"order": {"customer": "a", "items": [{"sku": "A", "qty": ' + "9" * 5000 + "}]}}",
        ):
            with pytest.raises(ToolArgumentsError):
                place.validate(text)
        nested: list[object] = []
        for _ in range(300):  # (past what pydantic's own JSON reader takes)
            nested = [nested]
        assert (
            "$.order",
            "Value nested too deeply to validate; send a flatter value",
        ) == refusal(place, {"order": {"customer": "a", "items": [], "note": nested}})
        huge = 2**200
        assert ("$.order.items[0].qty", "Input should be less than or equal to 1000") == refusal(
            place, {"order": {"customer": "a", "items": [{"sku": "A", "qty": huge}]}}
        )


class Lookup(BaseModel):
    id: uuid.UUID
    when: datetime.datetime


class Strict(BaseModel):
    model_config = ConfigDict(strict=True)
    n: int
    on: datetime.date


class Auth(BaseModel):
    user: str
    token: str = Field(alias="apiToken")

    @field_validator("token")
    @classmethod
    def _long(cls, value: str) -> str:
        if len(value) < 12:
            raise ValueError(f"token {value} is too short")
        return value


class _Recording:
    """An effect ledger that records the arguments it is given to keep."""

    def __init__(self) -> None:
        self.logged: list[object] = []

    def started(self, run_id: str, call_id: str, name: str, arguments: object) -> None:
        self.logged.append(arguments)

    def settled(self, run_id: str, call_id: str, status: str) -> None:
        pass


class TestDispatch:
    def test_end_to_end(self) -> None:
        """Through ``dispatch_sync`` the function gets model instances; events encode as
        JSON (a model shown as the object of its fields, by their JSON names); the
        ledger keeps arguments the tool validates again; the invariants hold."""
        received: list[object] = []

        @tool(read_only=True)
        def sign_in(auth: Auth, backups: list[Auth] | None = None) -> str:
            """Sign in."""
            received.append(auth)
            return f"hello {auth.user}"

        tools = Registry.of(sign_in)
        sent = {"auth": {"user": "ann", "apiToken": "tok-0123456789"}}
        calls = [
            ToolCall("1", "sign_in", msgspec.json.encode(sent).decode()),
            ToolCall("2", "sign_in", '{"auth": {"user": "bob", "apiToken": "tok-0123456789",}}'),
        ]
        ledger = _Recording()
        result = dispatch_sync(calls, tools, ledger=ledger)
        assert ["hello ann", "hello bob"] == [m.content for m in result.messages]
        assert [Auth(user="ann", apiToken="tok-0123456789")] == received[:1]
        started = [e for e in result.events if isinstance(e, ToolStarted)]
        assert {**sent, "backups": None} == started[0].arguments
        msgspec.json.encode(result.events)
        assert [{**sent, "backups": None}] == ledger.logged[:1]
        assert received[0] == sign_in.validate(ledger.logged[0])["auth"]  # type: ignore[arg-type]
        check_dispatch_invariants(calls, result, tools)

    def test_refused_arguments_are_the_models_answer(self) -> None:
        """A model's refusal is the call's argument error: an ``InvalidToolArgs`` event and
        an error message naming the path; the tool does not run."""
        tools = Registry.of(place)
        call = ToolCall("1", "place", {"order": {"customer": "ann", "items": []}})
        result = dispatch_sync([call], tools)
        [message] = result.messages
        assert message.is_error
        assert message.content.startswith(
            "Invalid arguments for tool `place` at `$.order.items`: List should have at least 1"
        )
        assert [] == list(result.executed)
        assert any(isinstance(e, InvalidToolArgs) for e in result.events)
        check_dispatch_invariants([call], result, tools)

    def test_a_prepared_tool(self) -> None:
        """A tool whose schema a ``Prepared`` step narrowed still gets model instances,
        and its events still encode as JSON."""

        def narrow(_: object, tools: tuple[Tool[..., object], ...]) -> list[Tool[..., object]]:
            schema = {**place.parameters, "properties": dict(place.parameters["properties"])}  # type: ignore[call-overload]
            del schema["properties"]["rush"]
            return [attrs.evolve(t, parameters=schema) for t in tools]

        call = ToolCall("1", "place", {"order": ORDER})
        result = dispatch_sync([call], Prepared(Registry.of(place), narrow))
        assert ["ann: 2 items"] == [m.content for m in result.messages]
        [started] = [e for e in result.events if isinstance(e, ToolStarted)]
        assert {"order": ORDER | {"note": None}, "rush": False} == started.arguments
        msgspec.json.encode(result.events)


@tool(policy=ToolPolicy(redact=("apiToken",)))
def connect(auth: Auth) -> str:
    """Connect, or fail quoting the credentials."""
    raise ValueError(f"refused {auth!r} with {auth.token}")


class TestRedaction:
    def test_a_secret_inside_a_model_is_never_shown(self) -> None:
        """A secret field of a model argument (by its JSON name) is the marker in events
        and the ledger, and scrubbed from the tool's error, which quotes it."""
        ledger = _Recording()
        call = ToolCall("c", connect.name, {"auth": {"user": "ann", "apiToken": "tok-SECRET-0001"}})
        result = dispatch_sync([call], Registry.of(connect), ledger=ledger)
        text = (
            msgspec.json.encode(result.events).decode()
            + msgspec.json.encode(result.messages).decode()
            + msgspec.json.encode(ledger.logged).decode()
        )
        assert "tok-SECRET-0001" not in text
        [started] = [e for e in result.events if isinstance(e, ToolStarted)]
        assert {"auth": {"user": "ann", "apiToken": MARKER}} == started.arguments
        assert "refused Auth(user='ann', token='[redacted]')" in result.messages[0].content
        check_dispatch_invariants([call], result, Registry.of(connect))

    def test_a_refusal_quoting_the_secret_is_scrubbed(self) -> None:
        """A model validator that quotes a secret it refuses does not carry it into the
        event or the message."""
        call = ToolCall("c", connect.name, {"auth": {"user": "ann", "apiToken": "hunter22"}})
        result = dispatch_sync([call], Registry.of(connect))
        text = msgspec.json.encode(result.events).decode() + result.messages[0].content
        assert "hunter22" not in text
        assert "$.auth.apiToken" in result.messages[0].content


class TestTestingKit:
    @settings(max_examples=60, deadline=None)
    @given(valid_arguments(place))
    def test_valid_arguments(self, arguments: dict[str, object]) -> None:
        """``valid_arguments`` draws from the model's schema what the model accepts."""
        assert isinstance(place.validate(arguments)["order"], Order)

    @settings(max_examples=60, deadline=None)
    @given(invalid_arguments(place))
    def test_invalid_arguments(self, arguments: dict[str, object]) -> None:
        """``invalid_arguments`` breaks the model's schema where the model enforces it."""
        with pytest.raises(ToolArgumentsError):
            place.validate(arguments)


def test_pydantic_is_never_imported_unless_a_tool_uses_it() -> None:
    """``import tinytools``, declaring tools of every other kind of type, validating and
    dispatching their calls (and the testing kit) load no pydantic."""
    code = textwrap.dedent(
        """
        import dataclasses, sys
        from typing import TypedDict
        import msgspec
        import tinytools
        from tinytools import Registry, ToolCall, dispatch_sync, tool
        from tinytools.testing import valid_arguments

        @dataclasses.dataclass
        class Point:
            x: int

        class Tag(TypedDict):
            name: str

        class Size(msgspec.Struct):
            w: int

        @tool
        def draw(p: Point, tags: list[Tag], size: Size | None = None) -> str:
            "Draw."
            return "ok"

        call = ToolCall("1", "draw", '{"p": {"x": 1}, "tags": [{"name": "a"}]}')
        assert dispatch_sync([call], Registry.of(draw)).messages[0].content == "ok"
        valid_arguments(draw).example()
        assert "pydantic" not in sys.modules, "pydantic was imported"
        assert "pydantic_core" not in sys.modules, "pydantic_core was imported"
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
