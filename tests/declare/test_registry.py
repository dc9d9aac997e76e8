"""Tests for `tinytools._declare.registry` and the tool name rules."""

from __future__ import annotations

import attrs
import pytest

from tinytools import Registry, ToolCall, ToolDefinitionError, dispatch_sync, tool
from tinytools.discovery import Catalog
from tinytools.formats import openai_chat, xml


@tool
def alpha() -> None: ...


@tool
def beta() -> None: ...


#: What takes ``tools`` and must refuse what is no collection of tools, saying what to pass.
TAKERS = [
    Registry,
    lambda t: dispatch_sync([ToolCall("1", "alpha", {})], t),
    openai_chat.declarations,
    xml.render,
    Catalog,
]
TAKER_IDS = ["Registry", "dispatch_sync", "declarations", "render", "Catalog"]


class TestRegistry:
    def test_lookup_by_exact_name(self) -> None:
        """Tools are found by their exact name, in registration order."""
        registry = Registry.of(alpha, beta)
        assert alpha is registry["alpha"]
        assert registry.names == ("alpha", "beta")
        assert (alpha, beta) == registry.tools()
        assert "Alpha" not in registry
        assert "alpha " not in registry
        assert len(registry) == 2

    def test_immutable(self) -> None:
        """A registry cannot be changed after it is built."""
        registry = Registry([alpha])
        with pytest.raises(AttributeError):
            registry._tools = {}  # type: ignore[misc]
        with pytest.raises(TypeError):
            registry["beta"] = beta  # type: ignore[index]

    def test_every_problem_at_once(self) -> None:
        """Duplicates and non-tools are all reported together."""
        with pytest.raises(ToolDefinitionError) as info:
            Registry([alpha, alpha, beta, "gamma"])  # type: ignore[list-item]
        assert len(info.value.problems) == 2
        assert "two tools are named 'alpha'" in info.value.problems[0]
        assert "'gamma' is not a Tool" in info.value.problems[1]

    @pytest.mark.parametrize("build", TAKERS, ids=TAKER_IDS)
    def test_one_tool_where_tools_go(self, build: object) -> None:
        """A single tool given as ``tools`` is refused with the fix, not "not iterable"."""
        with pytest.raises(TypeError, match=r"got Tool; wrap the one tool in a list \(\[tool\]\)"):
            build(alpha)  # type: ignore[operator]
        with pytest.raises(TypeError, match="got int; pass a Registry, a toolset or a list"):
            build(3)  # type: ignore[operator]

    @pytest.mark.parametrize("build", TAKERS, ids=TAKER_IDS)
    def test_a_name_or_a_mapping_where_tools_go(self, build: object) -> None:
        """Defect: a tool's name (a str) or a mapping of names to tools given as ``tools``
        was read character by character, or key by key, into one "is not a Tool" problem
        each. It is refused as no collection of tools, saying what to pass."""
        with pytest.raises(TypeError, match="got str; a name is not a tool: pass the @tool"):
            build("alpha")  # type: ignore[operator]
        with pytest.raises(TypeError, match=r"got dict; pass its tools, such as list\(mapping"):
            build({"alpha": alpha})  # type: ignore[operator]

    def test_thousand_tools(self) -> None:
        """A registry holds a thousand tools, each under its own name."""
        tools = [attrs.evolve(alpha, name=f"tool_{i}") for i in range(1000)]
        assert len(Registry(tools)) == 1000


class TestNames:
    @pytest.mark.parametrize(
        "name",
        ["", "has space", "dotted.name", "é", "1starts_with_digit", "x" * 65, "trailing "],
    )
    def test_rejected(self, name: str) -> None:
        """Empty, spaced, dotted, non-ASCII, digit-led, over-long names are rejected."""
        with pytest.raises(ToolDefinitionError):
            attrs.evolve(alpha, name=name)

    @pytest.mark.parametrize("name", ["a", "_private", "get-weather", "CamelCase", "x" * 64])
    def test_accepted(self, name: str) -> None:
        """Names every provider accepts are kept as given."""
        assert name == attrs.evolve(alpha, name=name).name


def test_a_registry_built_from_a_registry() -> None:
    """Defect: ``Registry(registry)`` was refused as a mapping of names. A registry is
    read as the collection of its tools: a new registry of the same tools, in order;
    ``Registry.of`` and a registry passed to dispatch are unchanged."""
    first = Registry.of(alpha, beta)
    again = Registry(first)
    assert again is not first
    assert again.tools() == (alpha, beta)
    assert dict(again) == dict(first)
    assert Registry(Registry.of(alpha)).names == ("alpha",)
    result = dispatch_sync([ToolCall("1", "alpha", {})], tools=again)
    assert not result.messages[0].is_error
    with pytest.raises(ToolDefinitionError, match="two tools are named 'alpha'"):
        Registry([*first.values(), *Registry(first).values()])
