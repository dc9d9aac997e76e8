"""Tests for `tinytools.formats._providers` and `tinytools.formats._choose`."""

from __future__ import annotations

import attrs
import pytest

from tinytools import Exposure, Json, PType, Registry, Tool, ToolCall, Xml, tool
from tinytools.formats import _parsed, anthropic, gemini, mcp, openai_chat, openai_responses
from tinytools.formats._choose import Exposed, split_by_format
from tinytools.formats._parsed import SyntheticIds
from tinytools.formats._providers import exposed_tools, make_call

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key


weather = Tool.from_schema("get_weather", "Weather for a city.", SCHEMA)
search_xml = attrs.evolve(lookup, name="search_xml", format=Xml())
search_p = attrs.evolve(lookup, name="search_p", format=PType(["key"]))
hidden = attrs.evolve(lookup, name="hidden", exposure=Exposure.Hidden)
deferred = attrs.evolve(lookup, name="deferred", exposure=Exposure.Deferred)
REGISTRY = Registry.of(lookup, weather, search_xml, search_p, hidden, deferred)

PROVIDERS = [openai_chat, openai_responses, anthropic, gemini, mcp]


def declared_names(module: object, tools: object) -> list[str]:
    """The names a provider module declares, whatever its shape."""
    found = module.declarations(tools)  # type: ignore[attr-defined]
    if module is gemini:
        found = found[0]["functionDeclarations"] if found else []
    elif module is openai_chat:
        found = [item["function"] for item in found]
    return [item["name"] for item in found]


class TestExposedTools:
    def test_hidden_skipped_order_kept(self) -> None:
        """Hidden and deferred tools are not declared, and registration order is kept."""
        expected = ("lookup", "get_weather", "search_xml", "search_p")
        assert expected == tuple(t.name for t in exposed_tools(REGISTRY))

    def test_iterable_of_tools(self) -> None:
        """A plain list of tools is accepted like a registry."""
        assert (weather, lookup) == exposed_tools([weather, hidden, lookup])

    def test_not_a_tool(self) -> None:
        """An item that is not a tool is refused with a TypeError naming it."""
        with pytest.raises(TypeError, match="'oops' is not a Tool"):
            exposed_tools([lookup, "oops"])  # type: ignore[list-item]

    @pytest.mark.parametrize("module", PROVIDERS)
    def test_every_provider_skips_hidden(self, module: object) -> None:
        """Every provider declares what it is given except hidden and deferred tools."""
        expected = ["lookup", "get_weather", "search_xml", "search_p"]
        assert expected == declared_names(module, REGISTRY)
        assert [] == declared_names(module, [hidden])
        assert [] == declared_names(module, [deferred])

    @pytest.mark.parametrize("module", PROVIDERS)
    def test_declarations_are_copies(self, module: object) -> None:
        """Editing a returned declaration never reaches the tool's schema."""
        before = weather.parameters["properties"]
        text = repr(module.declarations([weather]))  # type: ignore[attr-defined]
        for item in module.declarations([weather]):  # type: ignore[attr-defined]
            item.clear()
        assert {"city": {"type": "string"}} == before
        assert text == repr(module.declarations([weather]))  # type: ignore[attr-defined]


class TestMakeCall:
    def test_well_formed(self) -> None:
        """A complete call is kept as given."""
        call = make_call("c1", "get_weather", {"city": "Oslo"}, ids=SyntheticIds(""), index=0)
        assert ToolCall("c1", "get_weather", {"city": "Oslo"}) == call

    def test_missing_id_is_synthetic_and_deterministic(self) -> None:
        """A call without an id gets the synthetic id of its source and position."""
        call = make_call(None, "f", {}, ids=SyntheticIds("response"), index=2)
        assert _parsed.synthetic_id("response", 2) == call.id
        assert call == make_call(None, "f", {}, ids=SyntheticIds("response"), index=2)

    def test_ids_are_derived_only_when_missing(self) -> None:
        """The response text is made for synthetic ids only when a call lacks an id."""
        made: list[str] = []

        def text() -> str:
            made.append("text")
            return "response"

        ids = SyntheticIds(text)
        make_call("c1", "f", {}, ids=ids, index=0)
        assert [] == made
        first, second = (make_call(None, "f", {}, ids=ids, index=i).id for i in (0, 1))
        assert (["text"], _parsed.synthetic_id("response", 1)) == (made, second)
        assert _parsed.is_synthetic(first)
        assert not _parsed.is_synthetic("call_abc")

    def test_integer_id_as_text(self) -> None:
        """A numeric id (JSON-RPC) is kept as its text."""
        assert "7" == make_call(7, "f", {}, ids=SyntheticIds(""), index=0).id

    def test_missing_name_fails_closed(self) -> None:
        """A call without a name keeps the empty name and says why it is invalid."""
        call = make_call("c1", None, {"a": 1}, ids=SyntheticIds(""), index=0)
        assert ("", {"a": 1}) == (call.name, call.arguments)
        assert "no tool name" in str(call.invalid)

    @pytest.mark.parametrize(
        ("arguments", "text", "kind"),
        [([1, 2], "[1,2]", "an array"), (None, "null", "null"), ("{}", '"{}"', "a string")],
    )
    def test_non_object_arguments_fail_closed(
        self, arguments: object, text: str, kind: str
    ) -> None:
        """Arguments that are not an object are kept as JSON text, never replaced by {}."""
        call = make_call("c1", "f", arguments, ids=SyntheticIds(""), index=0)
        assert text == call.arguments
        assert f"must be a JSON object, not {kind}" in str(call.invalid)

    def test_raw_string_kept_verbatim(self) -> None:
        """With raw_string, malformed JSON text is kept exactly and not judged here."""
        call = make_call("c1", "f", '{"city": "Par', ids=SyntheticIds(""), index=0, raw_string=True)
        assert ToolCall("c1", "f", '{"city": "Par') == call


class TestSplitByFormat:
    def test_native(self) -> None:
        """With a native channel, Json tools are declared and the others prompted."""
        exposed = split_by_format(REGISTRY, native_tool_calling=True)
        assert Exposed((lookup, weather), (search_xml, search_p)) == exposed

    def test_no_native_channel(self) -> None:
        """Without a native channel every direct tool is prompted, Json ones included."""
        exposed = split_by_format(REGISTRY, native_tool_calling=False)
        assert Exposed((), (lookup, weather, search_xml, search_p)) == exposed
        assert (lookup, weather) == exposed.prompted_as(Json)
        assert (search_xml,) == exposed.prompted_as(Xml)
        assert (search_p,) == exposed.prompted_as(PType)

    def test_hidden_and_deferred_never_chosen(self) -> None:
        """Hidden and deferred tools are never offered."""
        exposed = split_by_format([hidden, deferred], native_tool_calling=True)
        assert Exposed() == exposed
        assert frozenset() == exposed.advertised

    def test_advertised_and_formats(self) -> None:
        """Every offered name is advertised, and each keeps its format on record."""
        exposed = split_by_format(REGISTRY, native_tool_calling=True)
        assert {"lookup", "get_weather", "search_xml", "search_p"} == exposed.advertised
        expected = {
            "lookup": Json(),
            "get_weather": Json(),
            "search_xml": Xml(),
            "search_p": PType(["key"]),
        }
        assert expected == exposed.formats

    def test_frozen(self) -> None:
        """The choice is an immutable value."""
        exposed = split_by_format(REGISTRY, native_tool_calling=True)
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            exposed.native = ()  # type: ignore[misc]
