"""Tests for ``dispatch_sync(backend=...)`` and `tinytools._runtime.detect`.

Async tools under ``dispatch_sync`` run on asyncio by default, or on trio when
asked; a tool written for the other event loop is the host's mistake, so it
aborts the batch with a message naming the fix instead of becoming a tool error
the model reads.
"""

from __future__ import annotations

import asyncio

import anyio
import pytest
import trio

from tinytools import DispatchAborted, ToolCall, dispatch, dispatch_sync, tool


@tool
async def asyncio_nap(seconds: float = 0.001) -> str:
    """Sleep with asyncio."""
    await asyncio.sleep(seconds)
    return "asyncio ok"


@tool
async def trio_nap(seconds: float = 0.001) -> str:
    """Sleep with trio."""
    await trio.sleep(seconds)
    return "trio ok"


@tool
async def anyio_nap(seconds: float = 0.001) -> str:
    """Sleep with anyio."""
    await anyio.sleep(seconds)
    return "anyio ok"


@tool
async def says_no_loop() -> str:
    """Raise the text asyncio uses, on its own account."""
    raise RuntimeError("no running event loop")


TOOLS = [asyncio_nap, trio_nap, anyio_nap, says_no_loop]


def call(name: str) -> list[ToolCall]:
    return [ToolCall("c1", name, {})]


class TestBackend:
    def test_default_is_asyncio(self) -> None:
        """By default an asyncio tool runs under dispatch_sync."""
        [message] = dispatch_sync(call("asyncio_nap"), TOOLS).messages
        assert ("ok", "asyncio ok") == (message.status, message.content)

    def test_trio(self) -> None:
        """backend="trio" runs a trio tool."""
        [message] = dispatch_sync(call("trio_nap"), TOOLS, backend="trio").messages
        assert ("ok", "trio ok") == (message.status, message.content)

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_anyio_tools_run_on_both(self, backend: str) -> None:
        """A tool written with anyio runs on either backend."""
        [message] = dispatch_sync(call("anyio_nap"), TOOLS, backend=backend).messages  # type: ignore[arg-type]
        assert "anyio ok" == message.content

    def test_unknown_backend(self) -> None:
        """An unknown backend is refused up front, naming the choices."""
        with pytest.raises(ValueError, match="backend must be one of 'asyncio', 'trio'"):
            dispatch_sync(call("asyncio_nap"), TOOLS, backend="curio")  # type: ignore[arg-type]

    def test_sync_tools_need_no_loop(self) -> None:
        """A batch of sync tools runs the same whatever the backend."""

        @tool
        def echo(text: str) -> str:
            """Echo."""
            return text

        calls = [ToolCall("c1", "echo", {"text": "hi"})]
        assert "hi" == dispatch_sync(calls, [echo], backend="trio").messages[0].content


class TestWrongLoop:
    @pytest.mark.parametrize(
        ("name", "backend", "needed"),
        [("trio_nap", "asyncio", "trio"), ("asyncio_nap", "trio", "asyncio")],
    )
    def test_is_a_developer_error(self, name: str, backend: str, needed: str) -> None:
        """A tool for the other loop aborts the batch with the backend to pass."""
        with pytest.raises(DispatchAborted, match=f'backend="{needed}"') as caught:
            dispatch_sync(call(name), TOOLS, backend=backend)  # type: ignore[arg-type]
        [message] = caught.value.result.messages
        assert "c1" == message.tool_call_id  # the call is still answered in the result

    def test_other_calls_answered(self) -> None:
        """The other calls of the aborted batch are answered too."""
        calls = [ToolCall("a", "trio_nap", {}), ToolCall("b", "anyio_nap", {})]
        with pytest.raises(DispatchAborted) as caught:
            dispatch_sync(calls, TOOLS)
        assert ["a", "b"] == [m.tool_call_id for m in caught.value.result.messages]

    def test_own_runtime_error_is_a_tool_error(self) -> None:
        """A tool that raises such text where its loop is fine fails as any tool does."""
        [message] = dispatch_sync(call("says_no_loop"), TOOLS).messages
        assert ("error", True) == (message.status, "no running event loop" in message.content)

    @pytest.mark.anyio
    async def test_dispatch_under_the_other_loop(self, anyio_backend: str) -> None:
        """Awaited dispatch says the same when the caller's loop is the wrong one."""
        name = "trio_nap" if anyio_backend == "asyncio" else "asyncio_nap"
        with pytest.raises(DispatchAborted, match="is written for"):
            await dispatch(call(name), TOOLS)
