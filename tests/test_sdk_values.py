"""Values of an SDK's own types (subclasses of ``str``, ``int``, ``float``; msgspec
encodes none of them) in a call's arguments: read as the plain values they hold on
every route, so the tool gets plain values and every result encodes."""

from __future__ import annotations

import msgspec
import pytest

from tinytools import (
    CallDeferred,
    Registry,
    Tool,
    ToolArgumentsError,
    ToolCall,
    dispatch,
    dispatch_sync,
    tool,
)

seen: list[dict[str, object]] = []


@tool
def search(query: str, limit: int = 3) -> dict[str, object]:
    """Search."""
    seen.append({"query": query, "limit": limit})
    return {"query": query, "limit": limit}


@tool
def later(query: str) -> str:
    """Deferred by the tool itself."""
    raise CallDeferred()


def _schema_fn(**arguments: object) -> dict[str, object]:
    seen.append(arguments)
    return arguments


SCHEMA = Tool.from_schema(
    "find",
    "Find.",
    {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
    fn=_schema_fn,
)
TOOLS = Registry.of(search, later, SCHEMA)


@pytest.fixture(autouse=True)
def _reset() -> None:
    seen.clear()


class SdkText(str):
    """An SDK's own string type."""


class TestRawTextOfAStrSubclass:
    @pytest.mark.parametrize("built", [search, SCHEMA], ids=["signature", "schema"])
    def test_validate_reads_it_as_its_text(self, built: Tool) -> None:
        """``Tool.validate`` raised msgspec's TypeError ("a bytes-like object is
        required"); it reads the text as dispatch does."""
        text = '{"query": "a", "limit": 2}'
        assert built.validate(SdkText(text)) == built.validate(text)
        for bad in ('{"query": 1}', '{"query": '):
            with pytest.raises(ToolArgumentsError) as plain:
                built.validate(bad)
            with pytest.raises(ToolArgumentsError) as sdk:
                built.validate(SdkText(bad))
            assert str(sdk.value) == str(plain.value)

    @pytest.mark.anyio
    async def test_a_call_the_tool_defers_is_carried_as_its_text(self) -> None:
        """A tool that raised ``CallDeferred`` on arguments of a str subclass left the
        subclass in ``DeferredToolRequests``: the result did not encode."""
        expected = dispatch_sync([ToolCall("c", "later", '{"query": "a"}')], TOOLS)
        calls = [ToolCall("c", "later", SdkText('{"query": "a"}'))]
        for result in (dispatch_sync(calls, TOOLS), await dispatch(calls, TOOLS)):
            assert result.deferred is not None
            assert [type(c.arguments) for c in result.deferred.calls] == [str]
            assert msgspec.json.encode(result) == msgspec.json.encode(expected)
