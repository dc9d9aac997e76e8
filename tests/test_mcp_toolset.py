"""Tests for `tinytools.toolsets.mcp.McpToolset` against a real MCP server.

The server (``tests/mcp_server.py``) is built with the SDK's own ``MCPServer``; it is
reached in-process through the SDK's memory streams and as a stdio subprocess.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest

pytest.importorskip("mcp.server.mcpserver", reason="needs the mcp extra (SDK 2.x)")

import attrs
from mcp import Client, StdioServerParameters

from tinytools import Registry, ToolCall, ToolDefinitionError, dispatch, dispatch_sync, tool
from tinytools.discovery import Discovery
from tinytools.events import Event, ToolWithheld
from tinytools.toolsets import ApprovalRequired, Combined, Filtered, Prefixed, Renamed
from tinytools.toolsets.mcp import McpToolset

SERVER = Path(__file__).with_name("mcp_server.py")


@asynccontextmanager
async def in_process(name: str = "server") -> AsyncIterator[Any]:
    import mcp_server

    async with Client(getattr(mcp_server, name)) as client:
        yield client.session


@asynccontextmanager
async def over_stdio() -> AsyncIterator[Any]:
    parameters = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    async with Client(parameters) as client:
        yield client.session


CONNECTIONS = [pytest.param(in_process, id="memory"), pytest.param(over_stdio, id="stdio")]


@pytest.fixture
def anyio_backend() -> str:
    """The MCP SDK's clients run under asyncio here."""
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("connect", CONNECTIONS)
async def test_end_to_end(connect: Any) -> None:
    """Listed with their schemas; called through the session; results, structured content
    and isError answered — in-process and over stdio."""
    async with connect() as session:
        toolset = await McpToolset(session).refresh()
        tools = {t.name: t for t in toolset.tools()}
        assert {"add", "forecast", "fail"} == set(tools)
        assert ["a", "b"] == sorted(tools["add"].parameters["properties"])  # type: ignore[arg-type]
        calls = [
            ToolCall("1", "add", {"a": 2, "b": 3}),
            ToolCall("2", "forecast", {"city": "Oslo"}),
            ToolCall("3", "fail", {"reason": "nope"}),
        ]
        added, forecast, failed = (await dispatch(calls, toolset)).messages
        assert ("ok", "5") == (added.status, added.content)
        assert {"city": "Oslo", "sky": "clear", "high_c": 21} == forecast.artifact.structured  # type: ignore[attr-defined]
        assert failed.is_error


@pytest.mark.anyio
@pytest.mark.parametrize("connect", [in_process])
class TestMcpToolset:
    async def test_structured_content_kept(self, connect: Any) -> None:
        """Structured content is the result's structured value."""
        async with connect() as session:
            toolset = await McpToolset(session).refresh()
            result = await dispatch([ToolCall("1", "forecast", {"city": "Oslo"})], toolset)
            (message,) = result.messages
            expected = {"city": "Oslo", "sky": "clear", "high_c": 21}
            assert expected == message.artifact.structured  # type: ignore[attr-defined]
            assert expected == json.loads(message.content)

    async def test_is_error_answered_as_error(self, connect: Any) -> None:
        """An isError result is an error message."""
        async with connect() as session:
            toolset = await McpToolset(session).refresh()
            result = await dispatch([ToolCall("1", "fail", {"reason": "nope"})], toolset)
            (message,) = result.messages
            assert message.is_error
            assert "fail" in message.content

    async def test_validated_before_sending(self, connect: Any) -> None:
        """Arguments that break the server's schema never reach the server."""
        async with connect() as session:
            toolset = await McpToolset(session).refresh()
            result = await dispatch([ToolCall("1", "add", {"a": "two"})], toolset)
            (message,) = result.messages
            assert "Invalid arguments" in message.content
            assert () == result.executed

    async def test_unusable_name_explained(self, connect: Any) -> None:
        """A server tool whose name providers refuse is left out and explained."""
        async with connect() as session:
            toolset = await McpToolset(session).refresh()
            (explained,) = toolset.explain()
            assert ("dotted.name", None) == (explained.name, explained.exposed_as)

    async def test_composed(self, connect: Any) -> None:
        """Prefixed and gated: called under the prefixed name, deferred for approval."""
        async with connect() as session:
            mcp = await McpToolset(session).refresh()
            toolset = Combined(
                Prefixed(Filtered(mcp, lambda t, _c: t.name != "fail"), "calc_"),
                ApprovalRequired(Prefixed(Filtered(mcp, lambda t, _c: t.name == "fail"), "x_")),
            )
            calls = [
                ToolCall("1", "calc_add", {"a": 1, "b": 1}),
                ToolCall("2", "x_fail", {"reason": "r"}),
            ]
            result = await dispatch(calls, toolset)
            assert [("calc_add", "2")] == [(m.name, m.content) for m in result.messages]
            assert result.deferred is not None
            assert ["x_fail"] == [c.name for c in result.deferred.approvals]

    async def test_discovered(self, connect: Any) -> None:
        """An MCP tool deferred behind Discovery is found and called through tool_call."""
        async with connect() as session:
            import attrs

            from tinytools import Exposure, Registry

            mcp = await McpToolset(session).refresh()
            deferred = Registry([attrs.evolve(t, exposure=Exposure.Deferred) for t in mcp.tools()])
            toolset = Discovery(deferred)
            calls = [
                ToolCall("s", "tool_search", {"query": "add two integers"}),
                ToolCall("c", "tool_call", {"name": "add", "arguments": {"a": 4, "b": 5}}),
            ]
            result = await dispatch(calls, toolset)
            assert "add" == json.loads(result.messages[0].content)["tools"][0]["name"]
            assert "9" == result.messages[1].content


@tool
def add(a: int, b: int) -> str:
    """Add two integers, here."""
    return f"local {a + b}"


@tool(exposure="deferred")
def convert(amount: float) -> str:
    """Convert an amount of money into euros."""
    return f"{amount} EUR"


@pytest.mark.anyio
class TestNamesTaken:
    """Defect: a live MCP session that listed a name a local tool (or discovery's
    ``tool_search``) already had made every dispatch of the composition raise
    ``ToolDefinitionError``: a remote server could take the host's whole toolset down.
    The remote tool is left out, explained, and reported by each dispatch."""

    @staticmethod
    def withheld(name: str, taken_by: str, adaptor: str) -> ToolWithheld:
        reason = (
            f"left out: the remote server's tool has the name of {taken_by}; to offer it "
            "too, give it another name (Prefixed or Renamed)"
        )
        return ToolWithheld(tool_name=name, reason=reason, adaptor=adaptor)

    @pytest.mark.parametrize("local_first", [True, False], ids=["local-first", "remote-first"])
    async def test_a_local_tools_name(self, local_first: bool) -> None:
        """The host's tool keeps its name wherever it stands among the members."""
        async with in_process("shadowing") as session:
            remote = await McpToolset(session).refresh()
            local = Registry.of(add)
            toolset = Combined(local, remote) if local_first else Combined(remote, local)
            result = await dispatch([ToolCall("1", "add", {"a": 2, "b": 3})], toolset)
            assert ["local 5"] == [m.content for m in result.messages]
            member = 0 if local_first else 1
            expected = self.withheld(
                "add", f"a tool of member {member} ({toolset.toolsets[member]!r})", "Combined"
            )
            assert expected == result.events[0]
            explained = [e for e in toolset.explain() if e.name == "add"]
            assert [(expected.reason, "Combined", None)] == [
                (e.reason, e.adaptor, e.exposed_as) for e in explained
            ]
            sync = dispatch_sync([ToolCall("2", "add", {"a": 1, "b": 1})], toolset)
            assert (expected, "local 2") == (sync.events[0], sync.messages[0].content)
            encoded = msgspec.json.encode(result.events)
            assert list(result.events) == msgspec.json.decode(encoded, type=list[Event])
            assert b'"kind":"tool_withheld"' in encoded

    async def test_an_earlier_servers_name(self) -> None:
        """Between two servers, the first member's tool keeps the name."""
        async with in_process() as first, in_process("shadowing") as second:
            toolset = Combined(
                await McpToolset(first).refresh(), await McpToolset(second).refresh()
            )
            result = await dispatch([ToolCall("1", "add", {"a": 2, "b": 3})], toolset)
            assert ["5"] == [m.content for m in result.messages]
            expected = self.withheld(
                "add", f"a tool of member 0 ({toolset.toolsets[0]!r})", "Combined"
            )
            assert [expected] == [e for e in result.events if isinstance(e, ToolWithheld)]

    async def test_discoverys_tool_search(self) -> None:
        """A server's ``tool_search`` is left out; discovery's own answers."""
        async with in_process("shadowing") as session:
            remote = await McpToolset(session).refresh()
            toolset = Discovery(Combined(Registry.of(convert), remote))
            search = ToolCall("1", "tool_search", {"query": "money euros"})
            result = await dispatch([search], toolset)
            assert ["convert"] == [
                t["name"] for t in json.loads(result.messages[0].content)["tools"]
            ]
            taken = "discovery's intrinsic tool_search"
            assert self.withheld("tool_search", taken, "Discovery()") == result.events[0]
            assert "tool_search" in [e.name for e in toolset.explain() if e.left_out]

    async def test_a_renamed_tools_name(self) -> None:
        """A host's tool renamed to a name the server lists keeps it."""
        async with in_process() as session:
            remote = await McpToolset(session).refresh()
            toolset = Renamed(
                Combined(remote, Registry.of(attrs.evolve(add, name="plus"))), {"plus": "add"}
            )
            result = await dispatch([ToolCall("1", "add", {"a": 2, "b": 3})], toolset)
            assert ["local 5"] == [m.content for m in result.messages]
            renamed = "the tool 'plus' (renamed 'add')"
            assert self.withheld("add", renamed, toolset.label()) == result.events[0]


def test_local_tools_of_one_name_stay_a_definition_error() -> None:
    """Two of the host's own tools of one name, or one named like discovery's intrinsic
    tool, are the host's mistake: refused, as before."""

    @tool(name="add")
    def other_add(a: int, b: int) -> int:
        """Add, again."""
        return a + b

    @tool(name="tool_search")
    def search(query: str) -> str:
        """Search."""
        return query

    with pytest.raises(ToolDefinitionError, match="in member 0"):
        Combined(Registry.of(add), Registry.of(other_add)).tools()
    with pytest.raises(ToolDefinitionError, match="would both be named 'add'"):
        Renamed(Registry.of(add, attrs.evolve(other_add, name="plus")), {"plus": "add"}).tools()
    with pytest.raises(ToolDefinitionError, match="discovery's intrinsic tool uses"):
        Discovery(Registry.of(search, convert)).tools()


def test_tools_before_refresh() -> None:
    """Asking for the tools before listing them says what to do."""
    with pytest.raises(ToolDefinitionError, match="refresh"):
        McpToolset(object()).tools()  # type: ignore[arg-type]


class _Scripted:
    """A session that lists one tool and answers every call with ``answer`` (no server: the
    shapes a careless server sends)."""

    def __init__(self, answer: object) -> None:
        self.answer = answer

    async def list_tools(self) -> dict[str, object]:
        return {"tools": [{"name": "fetch", "inputSchema": {"type": "object"}}]}

    async def call_tool(self, name: str, arguments: dict[str, object]) -> object:
        return self.answer


#: What the model reads when the server's answer is no valid tool result.
MALFORMED = "The MCP server's answer is not a valid tool result: "


@pytest.mark.parametrize(
    ("answer", "status", "expected"),
    [
        (None, "error", MALFORMED + "it has no content list (it sent null)"),
        ([1, 2], "error", MALFORMED + "it has no content list (it sent [1,2])"),
        ({"result": "x"}, "error", MALFORMED + 'it has no content list (it sent {"result":"x"})'),
        ({"content": [], "structuredContent": {"a": 1}}, "ok", '{"a":1}'),
        ({"content": [{"type": "text", "text": "hi"}], "isError": False}, "ok", "hi"),
        ({"isError": True, "content": [{"type": "text", "text": " "}]}, "error", "The MCP server"),
        (
            {"isError": True, "content": [{"type": "image", "data": "", "mimeType": "image/png"}]},
            "error",
            "The MCP server reported an error without a message.",
        ),
        # content that is not a list of content blocks
        (
            {"content": 5},
            "error",
            MALFORMED + "its content must be a list of content blocks, not 5",
        ),
        (
            {"content": True},
            "error",
            MALFORMED + "its content must be a list of content blocks, not true",
        ),
        (
            {"content": b"abc"},
            "error",
            MALFORMED + "its content must be a list of content blocks, not ",
        ),
        (
            {"content": {"type": "text", "text": "one block"}},
            "error",
            MALFORMED + 'its content must be a list of content blocks, not {"type":"text"',
        ),
        (
            {"content": "plain text, off the spec"},
            "error",
            MALFORMED + 'its content must be a list of content blocks, not "plain text, off',
        ),
        ({"structuredContent": {"a": 1}}, "error", MALFORMED + "it has no content list"),
        # content items that are not content blocks
        ({"content": [5]}, "error", MALFORMED + "its content[0] is not a content block (5)"),
        ({"content": ["hi"]}, "error", MALFORMED + 'its content[0] is not a content block ("hi")'),
        ({"content": [None]}, "error", MALFORMED + "its content[0] is not a content block (null)"),
        (
            {"content": [{"type": "text", "text": "a"}, [{"type": "text"}]]},
            "error",
            MALFORMED + "its content[1] is not a content block",
        ),
        (
            {"content": [{"type": "x" * 100_000}]},
            "error",
            MALFORMED + 'its content[0] has a type tinytools does not read ("xxx',
        ),
        (
            {"content": [{"text": "no type"}]},
            "error",
            MALFORMED + "its content[0] is not a content",
        ),
        ({"content": [{"type": "text", "text": 5}]}, "error", MALFORMED + "its content[0] (text)"),
        ({"content": [{"type": "text"}]}, "error", MALFORMED + "its content[0] (text) has no text"),
        (
            {"content": [{"type": "image", "data": "not base64!", "mimeType": "image/png"}]},
            "error",
            MALFORMED + "its content[0] (image) data is not valid base64",
        ),
        (
            {"content": [{"type": "image", "data": 5, "mimeType": "image/png"}]},
            "error",
            MALFORMED + "its content[0] (image) has no base64 data",
        ),
        (
            {"content": [{"type": "audio", "data": "AAAA"}]},
            "error",
            MALFORMED + "its content[0] (audio) has no mimeType",
        ),
        (
            {"content": [{"type": "resource", "resource": "file:///x"}]},
            "error",
            MALFORMED + "its content[0] (resource) has no resource with a uri",
        ),
        (
            {"content": [{"type": "resource", "resource": {"uri": "file:///x"}}]},
            "error",
            MALFORMED + "its content[0] (resource) has neither text nor a base64 blob",
        ),
        (
            {"content": [{"type": "resource_link", "uri": "file:///x"}]},
            "error",
            MALFORMED + "its content[0] (resource_link) has no name",
        ),
        # isError and structuredContent of the wrong kind
        (
            {"content": [{"type": "text", "text": "fine"}], "isError": "false"},
            "error",
            MALFORMED + 'its isError must be true or false, not "false"',
        ),
        (
            {"content": [{"type": "text", "text": "fine"}], "isError": 0},
            "error",
            MALFORMED + "its isError must be true or false, not 0",
        ),
        (
            {"content": [], "structuredContent": [1, 2]},
            "error",
            MALFORMED + "its structuredContent must be a JSON object, not [1,2]",
        ),
        (
            {"content": [], "structuredContent": "text"},
            "error",
            MALFORMED + 'its structuredContent must be a JSON object, not "text"',
        ),
    ],
    ids=[
        "none",
        "list",
        "no-result-fields",
        "structured-only",
        "text",
        "error-blank-text",
        "error-image-only",
        "content-number",
        "content-bool",
        "content-bytes",
        "content-one-unlisted-block",
        "content-string",
        "content-missing",
        "item-number",
        "item-string",
        "item-null",
        "item-list",
        "item-huge-type",
        "item-no-type",
        "text-not-string",
        "text-missing",
        "image-bad-base64",
        "image-data-not-string",
        "audio-no-mime-type",
        "resource-not-object",
        "resource-no-text-or-blob",
        "resource-link-no-name",
        "is-error-string",
        "is-error-number",
        "structured-array",
        "structured-string",
    ],
)
def test_hostile_server_answers(answer: object, status: str, expected: str) -> None:
    """What a hostile or broken server answers: an answer that is no tool result, or whose
    content is no list of content blocks (a number, a bool, bytes, one unlisted block), was
    an empty success; structured content alone reached the model as nothing, an error with
    blank text said nothing, and an unknown content type was echoed whole. Every malformed
    answer is the call's error, naming what the server sent wrong."""
    import anyio

    async def run() -> Any:
        toolset = await McpToolset(_Scripted(answer)).refresh()  # type: ignore[arg-type]
        return await dispatch([ToolCall("1", "fetch", {})], toolset)

    result = anyio.run(run)
    [message] = result.messages
    assert (status, expected) == (message.status, message.content[: len(expected)])
    assert len(message.content) < 1000
    assert msgspec.json.encode(result)


def _nested(depth: int) -> object:
    value: object = []
    for _ in range(depth):
        value = [value]
    return value


class _Listing:
    """A session that lists ``tools`` as a hostile server would."""

    def __init__(self, tools: object) -> None:
        self.listed = tools

    async def list_tools(self) -> dict[str, object]:
        return {"tools": self.listed}

    async def call_tool(self, name: str, arguments: dict[str, object]) -> object:
        return {"content": [{"type": "text", "text": "ran"}]}


@pytest.mark.parametrize(
    ("listed", "kept", "explained"),
    [
        ([{"name": _nested(5000)}], [], ["left out: a tool name must be a str, not list"]),
        ([{"name": "f\ud800"}], [], ["left out: tool name 'f\\ud800' is not accepted"]),
        ([{"name": "x" * 1_000_000}], [], ["left out: tool name 'xxxxxxxxxxxxxxxxxxxx'…"]),
        ([{"name": "f", "inputSchema": "garbage"}], [], ["left out: its input schema is not"]),
        ([{"name": "f", "inputSchema": [1]}], [], ["left out: its input schema is not"]),
        ([{"name": "f", "inputSchema": True}], ["f"], []),
        ([{"name": "f", "description": _nested(5000)}], ["f"], []),
        ("fetch", [], []),
        (
            [{"name": "f", "description": "one"}, {"name": "f", "description": "two"}],
            ["f"],
            ["left out: the server listed two tools of this name"],
        ),
        ([{"name": "a b"}], [], ["left out: tool name 'a b' is not accepted"]),
        ([{"name": ""}], [], ["left out: a tool name must not be empty"]),
        ([{"name": "9lives"}], [], ["left out: tool name '9lives' is not accepted"]),
        ([{"name": "x" * 65}], [], ["left out: tool name 'xxxxxxxxxxxxxxxxxxxx'… is 65"]),
        ([{"name": "tool_search"}, {"name": "tool_call"}], ["tool_search", "tool_call"], []),
    ],
    ids=[
        "nested-name",
        "surrogate-name",
        "huge-name",
        "string-schema",
        "array-schema",
        "true-schema",
        "nested-description",
        "tools-as-text",
        "two-of-one-name",
        "spaced-name",
        "empty-name",
        "digit-first-name",
        "65-character-name",
        "discovery-names",
    ],
)
def test_hostile_tool_lists(listed: object, kept: list[str], explained: list[str]) -> None:
    """A nested name or description raised RecursionError out of refresh(); a lone
    surrogate in a left-out name made the explanation unencodable; a schema that is no
    object schema gave a tool taking any arguments; tools sent as text were its letters."""
    import anyio

    async def run() -> McpToolset:
        return await McpToolset(_Listing(listed)).refresh()  # type: ignore[arg-type]

    toolset = anyio.run(run)
    assert kept == [t.name for t in toolset.tools()]
    reasons = toolset.explain()
    assert len(explained) == len(reasons)
    for expected, reason in zip(explained, reasons, strict=True):
        assert reason.reason.startswith(expected)
        assert len(reason.name) <= 80
    assert msgspec.json.encode([(r.name, r.reason) for r in reasons])
