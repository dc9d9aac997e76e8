"""Tests for `tinytools.formats.mcp.server` through the MCP SDK's own client.

The server (``tests/mcp_served.py``) is reached three ways: in-process on the SDK's
direct path (the 2026 protocol), in-process over JSON-RPC on memory streams (the
handshake protocol), and as a stdio subprocess; each under trio and asyncio (the
subprocess runs its server on the same backend as the test; one for the module's tests
on a backend, see ``stdio_client``, but for a test that needs its own).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp.server.lowlevel", reason="needs the mcp extra (SDK 2.x)")

import mcp_served
from mcp import Client, StdioServerParameters, types
from mcp.shared.exceptions import MCPError
from mcp_served import SECRET, TOOLS

from tinytools import (
    DeferredToolRequests,
    DeferredToolResults,
    Emit,
    FatalToolError,
    Inject,
    Registry,
    RunPolicy,
    tool,
)
from tinytools.discovery import Discovery
from tinytools.events import Custom, Event, ToolCompleted, ToolStarted
from tinytools.formats import mcp
from tinytools.policies import Fail

SERVED = Path(mcp_served.__file__)


class Database:
    """What a tool injects, and no context provides."""


#: A bound on each live test, so that a broken one fails rather than hangs.
LIMIT = 30


@asynccontextmanager
async def connect(how: str, backend: str, **options: Any) -> AsyncIterator[Client]:
    """A client of ``mcp_served.server``, connected as ``how`` says."""
    if how == "stdio":
        target: Any = StdioServerParameters(command=sys.executable, args=[str(SERVED), backend])
    else:
        target = options.pop("server", mcp_served.server)
    mode = "legacy" if how == "memory-jsonrpc" else "auto"
    async with Client(target, mode=mode, **options) as client:
        yield client


CONNECTIONS = ["memory", "memory-jsonrpc", "stdio"]
IN_PROCESS = ["memory", "memory-jsonrpc"]

#: A client of the server as a test's ``how`` says, to enter with ``async with``.
Served = Callable[[], AbstractAsyncContextManager[Client]]


@pytest.fixture(scope="module", params=["trio", "asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Each backend (as tests/conftest.py's), held for the module: the stdio server below
    lives across its tests."""
    return str(request.param)


@pytest.fixture(scope="module")
async def stdio_client(anyio_backend: str) -> AsyncIterator[Client]:
    """One stdio server process per backend, for the tests that need no fresh server (a
    server process cost a second and a half of CPU, mostly its imports, and a test each;
    every call still crosses the real transport). Tests hold its waiting tools with gates
    of their own, so they leave nothing behind for the next."""
    async with connect("stdio", anyio_backend) as client:
        yield client


@pytest.fixture
def served(how: str, anyio_backend: str, request: pytest.FixtureRequest) -> Served:
    """How a test of ``TestServed`` reaches the server: a new in-process connection, or
    the module's stdio server (see ``stdio_client``)."""
    if how != "stdio":
        return lambda: connect(how, anyio_backend)
    client: Client = request.getfixturevalue("stdio_client")

    @asynccontextmanager
    async def shared() -> AsyncIterator[Client]:
        yield client

    return shared


def text(result: types.CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def call_with_progress(
    client: Client, name: str, arguments: dict[str, Any]
) -> tuple[types.CallToolResult, list[tuple[float, float | None, str | None]]]:
    received: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        received.append((progress, total, message))

    with anyio.fail_after(LIMIT):
        result = await client.call_tool(name, arguments, progress_callback=on_progress)
    return result, received


@pytest.mark.anyio
@pytest.mark.parametrize("how", CONNECTIONS)
class TestServed:
    async def test_listed(self, served: Served) -> None:
        """tools/list holds the Direct tools as declarations() writes them: input and
        output schemas (a list wrapped as ``result``) and the policy's hints; no hidden
        or deferred tool."""
        async with served() as client:
            listed = (await client.list_tools()).tools
        got = {t.name: t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed}
        expected = {d["name"]: d for d in mcp.declarations(TOOLS)}
        assert expected == got
        assert {"host_only", "rarely_used"}.isdisjoint(got)
        assert {"readOnlyHint": True, "openWorldHint": True} == got["forecast"]["annotations"]
        assert {
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": True,
            "openWorldHint": False,
        } == got["delete_note"]["annotations"]
        assert {
            "type": "object",
            "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
            "required": ["result"],
        } == got["squares"]["outputSchema"]
        assert ["city", "high_c"] == got["forecast"]["outputSchema"]["required"]

    async def test_calls(self, served: Served) -> None:
        """A call is answered with its text and structured content; the client checks the
        content against the output schema (a list as ``{"result": [...]}``)."""
        async with served() as client:
            forecast = await client.call_tool("forecast", {"city": "Oslo"})
            squares = await client.call_tool("squares", {"n": 4})
        assert not forecast.is_error
        assert {"city": "Oslo", "high_c": 21.5} == forecast.structured_content
        assert {"city": "Oslo", "high_c": 21.5} == json.loads(text(forecast))
        assert ("[0,1,4,9]", {"result": [0, 1, 4, 9]}) == (
            text(squares),
            squares.structured_content,
        )

    async def test_invalid_arguments_answered(self, served: Served) -> None:
        """Arguments that break the schema are an error result the model can act on (the
        tool does not run): MCP's tool execution error, not a protocol error."""
        async with served() as client:
            wrong_type = await client.call_tool("squares", {"n": "four"})
            too_big = await client.call_tool("squares", {"n": 51})
            missing = await client.call_tool("forecast", {})
        for result in (wrong_type, too_big, missing):
            assert result.is_error
            assert result.structured_content is None
        assert "Invalid arguments for tool `squares` at `$.n`" in text(wrong_type)
        assert "`$.n`" in text(too_big)
        assert "city" in text(missing)

    async def test_unknown_tool_is_a_protocol_error(self, served: Served) -> None:
        """A tool the server does not offer — no such tool, a hidden one, a deferred one —
        is a JSON-RPC error (INVALID_PARAMS) with dispatch's unknown-tool message."""
        async with served() as client:
            for name in ("no_such_tool", "host_only", "rarely_used"):
                with pytest.raises(MCPError) as raised:
                    await client.call_tool(name, {})
                assert types.INVALID_PARAMS == raised.value.code
                assert f"Unknown tool `{name}`" in raised.value.message

    async def test_hostile_requests(self, served: Served) -> None:
        """A huge name, a number past any bound, data nested 150 deep: each is answered
        (a bounded error or a result), never a crash. (Deeper, around 196 levels, the SDK's
        stdio transport cannot parse the request, and drops it unanswered.)"""
        nested: object = "x"
        for _ in range(150):
            nested = [nested]
        async with served() as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("x" * 100_000, {})
            huge = await client.call_tool("squares", {"n": 10**400})
            deep, received = await call_with_progress(
                client, "report", {"name": "deep", "data": nested}
            )
        assert types.INVALID_PARAMS == raised.value.code
        assert len(raised.value.message) < 1000
        assert huge.is_error
        assert "`$.n`" in text(huge)
        assert ("reported", [(1.0, None, "deep")]) == (text(deep), received)

    async def test_a_raising_tool(self, served: Served) -> None:
        """A tool that raises is an error result saying what it raised."""
        async with served() as client:
            result = await client.call_tool("fail", {"reason": "disk on fire"})
        assert result.is_error
        assert "Tool `fail` failed: ValueError: disk on fire" == text(result)

    async def test_a_deferred_call(self, served: Served) -> None:
        """A call that needs approval, on a server with no on_deferred, is not run: an
        error result says so."""
        async with served() as client:
            result = await client.call_tool("wipe_disk", {"disk": "sda"})
        assert result.is_error
        assert "not run: tool `wipe_disk` needs approval" in text(result)

    @pytest.mark.parametrize("host", ["no on_event", "async on_event"])
    @pytest.mark.parametrize("waiter", ["wait_in_thread", "wait_async"])
    async def test_progress_arrives_as_the_tool_runs(
        self, served: Served, how: str, anyio_backend: str, waiter: str, host: str
    ) -> None:
        """An Inject[Emit] event is a progress notification while the tool still runs,
        from a worker thread (blocking=True) or the event loop: the tool waits until the
        client, having seen the first notification, releases it with a second call.
        Defect: with an async on_event of the host's, the progress waited for the call's
        end (dispatch handed events to an async handler only then)."""
        gate = uuid.uuid4().hex
        received: list[tuple[float, float | None, str | None]] = []
        heard: list[Event] = []

        async def record(event: Event) -> None:
            heard.append(event)

        if host == "no on_event":
            opened = served()
        elif how == "stdio":
            pytest.skip("the stdio server is mcp_served's, with no on_event")
        else:
            server = mcp.server(TOOLS, name="observed", on_event=record)
            opened = connect(how, anyio_backend, server=server)
        async with opened as client, anyio.create_task_group() as tasks:

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                received.append((progress, total, message))
                if len(received) == 1:
                    tasks.start_soon(client.call_tool, "release", {"gate": gate})

            with anyio.fail_after(LIMIT):
                result = await client.call_tool(
                    waiter, {"gate": gate}, progress_callback=on_progress
                )
        assert "released" == text(result)
        assert (1.0, 2.0, f"waiting for {gate}") == received[0]
        assert (2.0, 2.0, "released") == received[-1]
        if host == "async on_event":  # (the host's handler also heard the release call's)
            waited = next(e.call_id for e in heard if isinstance(e, Custom))
            own = [type(e) for e in heard if getattr(e, "call_id", None) == waited]
            assert [ToolStarted, Custom, Custom, ToolCompleted] == own

    async def test_concurrent_calls(self, served: Served) -> None:
        """Calls run at once: three wait while a fourth opens their gate."""
        gate = uuid.uuid4().hex
        started = anyio.Event()
        waiting = 0
        answers: list[str] = []
        async with served() as client:

            async def wait(name: str) -> None:
                async def on_progress(*_: object) -> None:
                    nonlocal waiting
                    waiting += 1
                    if waiting == 3:
                        started.set()

                result = await client.call_tool(name, {"gate": gate}, progress_callback=on_progress)
                answers.append(text(result))

            with anyio.fail_after(LIMIT):
                async with anyio.create_task_group() as tasks:
                    for name in ("wait_async", "wait_in_thread", "wait_async"):
                        tasks.start_soon(wait, name)
                    await started.wait()
                    await client.call_tool("release", {"gate": gate})
        assert ["released"] * 3 == answers

    async def test_a_secret_never_leaves(
        self, how: str, anyio_backend: str, caplog: pytest.LogCaptureFixture, capfd: Any
    ) -> None:
        """A redacted argument is in no result, notification or log line: a tool's error
        quoting it, arguments refused with it, the tool's progress."""
        caplog.set_level(logging.DEBUG)
        seen: list[str] = []

        async def every_message(message: object) -> None:
            seen.append(repr(message))

        async with connect(how, anyio_backend, message_handler=every_message) as client:
            failed, progress = await call_with_progress(
                client, "login", {"user": "ann", "password": SECRET}
            )
            refused = await client.call_tool("login", {"user": "ann", "password": SECRET, "x": 1})
        assert "Tool `login` failed: PermissionError: wrong password '[redacted]' for ann" == text(
            failed
        )
        assert [(1.0, None, "checking ann")] == progress
        assert "Invalid arguments" in text(refused)
        out, err = capfd.readouterr()
        said = [text(failed), text(refused), repr(progress), *seen, out, err, caplog.text]
        assert [] == [s for s in said if SECRET in s]


@pytest.mark.anyio
@pytest.mark.parametrize("how", IN_PROCESS)
class TestProgress:
    @pytest.mark.parametrize(
        ("name", "data", "expected"),
        [
            ("note", "plain words", (1.0, None, "plain words")),
            ("step", {"progress": 3, "total": 10, "message": "3 of 10"}, (3.0, 10.0, "3 of 10")),
            ("step", {"pct": 40}, (1.0, None, "step")),
            ("step", {"progress": True, "total": "ten"}, (1.0, None, "step")),
            ("step", {"progress": 10**400, "total": 2.5}, (1.0, 2.5, "step")),
            ("step", {"message": ["not", "text"]}, (1.0, None, "step")),
            ("step", None, (1.0, None, "step")),
        ],
    )
    async def test_what_an_event_says(
        self, how: str, anyio_backend: str, name: str, data: object, expected: object
    ) -> None:
        """Progress and total are the event's own numbers (else its count), the message
        its text (else the event's name); nothing else of its data is sent."""
        async with connect(how, anyio_backend) as client:
            result, received = await call_with_progress(
                client, "report", {"name": name, "data": data}
            )
        assert "reported" == text(result)
        assert [expected] == received

    async def test_progress_only_increases(self, how: str, anyio_backend: str) -> None:
        """MCP's progress must increase: an event going back is not sent; the last one
        before the answer always is."""
        async with connect(how, anyio_backend) as client:
            _, received = await call_with_progress(client, "report_many", {"values": [5, 3, 7]})
        values = [progress for progress, _, _ in received]
        assert 7.0 == values[-1]
        assert 3.0 not in values
        assert values == sorted(set(values))

    async def test_none_unless_asked(self, how: str, anyio_backend: str) -> None:
        """A request without a progress token gets no progress notification."""
        seen: list[object] = []

        async def every_message(message: object) -> None:
            seen.append(message)

        async with connect(how, anyio_backend, message_handler=every_message) as client:
            result = await client.call_tool("report", {"name": "step", "data": {"progress": 1}})
        assert "reported" == text(result)
        assert [] == [m for m in seen if isinstance(m, types.ProgressNotification)]

    async def test_async_on_event(self, how: str, anyio_backend: str) -> None:
        """The host's on_event gets every event, sync or async, beside the progress."""
        synced: list[Event] = []
        awaited: list[Event] = []

        async def record(event: Event) -> None:
            awaited.append(event)

        for handler, events in ((synced.append, synced), (record, awaited)):
            server = mcp.server(TOOLS, name="observed", on_event=handler)
            async with connect(how, anyio_backend, server=server) as client:
                _, received = await call_with_progress(
                    client, "report", {"name": "step", "data": {"progress": 4}}
                )
            assert [(4.0, None, "step")] == received
            assert [ToolStarted, Custom, ToolCompleted] == [type(e) for e in events]
            assert len({e.call_id for e in events}) == 1  # type: ignore[attr-defined]


@pytest.mark.anyio
@pytest.mark.parametrize("how", IN_PROCESS)
class TestServerOptions:
    async def test_on_deferred_decides(self, how: str, anyio_backend: str) -> None:
        """With on_deferred, an approval-gated call runs once approved, and a denied one
        is answered as denied."""

        def approve(pending: DeferredToolRequests) -> DeferredToolResults:
            [call] = pending.approvals
            if call.arguments == {"disk": "sdb"}:
                return pending.approve_all()
            return pending.deny(call.id, "not that disk")

        server = mcp.server(TOOLS, name="approving", on_deferred=approve)
        async with connect(how, anyio_backend, server=server) as client:
            approved = await client.call_tool("wipe_disk", {"disk": "sdb"})
            denied = await client.call_tool("wipe_disk", {"disk": "sda"})
        assert (False, "wiped sdb") == (approved.is_error, text(approved))
        assert denied.is_error
        assert "not that disk" in text(denied)

    async def test_allowlist(self, how: str, anyio_backend: str) -> None:
        """Only allowed tools are listed; another is a protocol error, as an unknown one."""
        server = mcp.server(TOOLS, name="allowing", policy=RunPolicy(allowlist={"squares"}))
        async with connect(how, anyio_backend, server=server) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            with pytest.raises(MCPError) as raised:
                await client.call_tool("forecast", {"city": "Oslo"})
        assert ["squares"] == listed
        assert types.INVALID_PARAMS == raised.value.code

    async def test_discovery(self, how: str, anyio_backend: str) -> None:
        """Behind Discovery a deferred tool is called through tool_call; tool_call naming
        no tool is the model's mistake, answered as an error result."""
        server = mcp.server(Discovery(TOOLS), name="discovering")
        async with connect(how, anyio_backend, server=server) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            found = await client.call_tool("tool_call", {"name": "rarely_used", "arguments": {}})
            missing = await client.call_tool("tool_call", {"name": "no_such", "arguments": {}})
        assert {"tool_search", "tool_call", "forecast"} <= listed
        assert "rarely_used" not in listed
        assert "rare" == text(found)
        assert missing.is_error
        assert "Unknown tool `no_such`" in text(missing)

    async def test_aborted_batch(
        self, how: str, anyio_backend: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A batch dispatch aborts (a Fail policy, FatalToolError) is answered with the
        call's message and logged, secrets redacted in both."""

        @tool
        def halt() -> str:
            """Stop everything."""
            raise FatalToolError("the world is ending")

        tools = Registry.of(*TOOLS.values(), halt)
        server = mcp.server(tools, name="failing", policy=RunPolicy(invalid_args=Fail()))
        async with connect(how, anyio_backend, server=server) as client:
            halted = await client.call_tool("halt", {})
            refused = await client.call_tool("login", {"user": "ann", "password": SECRET, "x": 1})
        assert halted.is_error
        assert "the world is ending" in text(halted)
        assert refused.is_error
        assert "Invalid arguments" in text(refused)
        warnings = [r for r in caplog.records if r.name == "tinytools.formats.mcp"]
        assert 2 == len(warnings)
        assert SECRET not in caplog.text

    async def test_a_server_error(
        self, how: str, anyio_backend: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A tool whose injection the context cannot satisfy is the server's fault: an
        INTERNAL_ERROR, the reason in the server's log only."""

        @tool
        def query(sql: str, db: Inject[Database]) -> str:
            """Query."""
            return sql

        server = mcp.server([query], name="broken")
        async with connect(how, anyio_backend, server=server) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("query", {"sql": "select 1"})
        assert types.INTERNAL_ERROR == raised.value.code
        assert "could not run tool 'query'; its log says why" in raised.value.message
        assert "Database" not in raised.value.message
        assert "Database" in caplog.text

    async def test_emit_after_the_answer_is_dropped(self, how: str, anyio_backend: str) -> None:
        """A threaded tool that timed out and emits later sends nothing more."""
        gate = uuid.uuid4().hex
        emitted = threading.Event()

        @tool(blocking=True, timeout=0.001)
        def late(emit: Inject[Emit]) -> str:
            """Times out, then emits."""
            mcp_served._thread_gate(gate).wait(mcp_served.PATIENCE)
            emit("late", "too late")
            emitted.set()
            return "done"

        server = mcp.server([late, mcp_served.release], name="late")
        async with connect(how, anyio_backend, server=server) as client:
            result, received = await call_with_progress(client, "late", {})
            await client.call_tool("release", {"gate": gate})
            assert await anyio.to_thread.run_sync(emitted.wait, LIMIT)
        assert "timed out" in text(result)
        assert [] == received


def test_no_sdk_imported_until_called() -> None:
    """Importing the format module loads no MCP SDK."""
    import subprocess

    code = "import sys, tinytools.formats.mcp; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "False" == out.stdout.strip()
