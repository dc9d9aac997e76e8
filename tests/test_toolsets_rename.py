"""Tests for `tinytools.toolsets._rename`: names an adaptor gives to a remote server's tools."""

from __future__ import annotations

import pytest

from tinytools import Registry, ToolCall, ToolDefinitionError, dispatch_sync, tool
from tinytools.events import ToolWithheld
from tinytools.toolsets import Combined, Prefixed
from tinytools.toolsets.mcp import McpToolset


@tool
def local_add(a: int, b: int) -> int:
    """Add two integers (a local tool)."""
    return a + b


class _Session:
    """A session whose tools are loaded by hand; nothing here calls the server."""

    async def list_tools(self, *args: object, **kwargs: object) -> object:
        raise AssertionError("never listed")

    async def call_tool(self, name: str, arguments: dict[str, object] | None = None) -> object:
        raise AssertionError("never called")


LONG = "x" * 60  # a valid name, 67 characters once prefixed with "github_"


def _remote(*names: str) -> McpToolset:
    remote = McpToolset(_Session())
    remote.load([{"name": name, "inputSchema": {"type": "object"}} for name in names])
    return remote


class TestPrefixedRemoteNames:
    """Defect: a server listing a valid 60-character name under ``Prefixed(..., "github_")``
    made every dispatch of the composition, local calls included, raise
    ``ToolDefinitionError``; the remote tool is left out, explained and reported instead."""

    def test_left_out_explained_and_reported(self) -> None:
        """The local call runs; the long remote tool is withheld, its neighbour kept."""
        prefixed = Prefixed(_remote("ok_tool", LONG), "github_")
        toolset = Combined(Registry.of(local_add), prefixed)
        result = dispatch_sync([ToolCall("c", "local_add", {"a": 1, "b": 2})], toolset)
        assert ["3"] == [m.content for m in result.messages]
        assert ["local_add", "github_ok_tool"] == [t.name for t in toolset.tools()]
        [explained] = [e for e in toolset.explain() if e.name == LONG]
        assert ("Prefixed('github_')", True) == (explained.adaptor, explained.left_out)
        assert "67 characters" in explained.reason
        expected = ToolWithheld(
            tool_name=LONG, reason=explained.reason, adaptor="Prefixed('github_')"
        )
        assert [expected] == [e for e in result.events if isinstance(e, ToolWithheld)]
        assert expected == result.events[0]

    def test_not_explained_as_renamed(self) -> None:
        """A tool left out is not also said to be renamed; the kept one is."""
        explained = Prefixed(_remote("ok_tool", LONG), "github_").explain()
        assert [("ok_tool", "renamed: the model sees it as 'github_ok_tool'")] == [
            (e.name, e.reason) for e in explained if e.name == "ok_tool"
        ]
        assert [True] == [e.left_out for e in explained if e.name == LONG]

    def test_a_local_tools_long_name_stays_an_error(self) -> None:
        """The host's own tool made too long is the host's mistake: refused, as before."""

        @tool(name=LONG)
        def long_local() -> str:
            """A local tool with a long name."""
            return "ok"

        with pytest.raises(ToolDefinitionError, match="67 characters"):
            Prefixed(Registry.of(long_local), "github_").tools()
