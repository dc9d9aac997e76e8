"""Tests for the batch a host hands dispatch (`tinytools._engine.host_calls`): a call whose id or
name is no text is the host's ``TypeError`` before anything runs; text of a ``str``
subclass (an SDK's own string type) is read as the text it holds."""

from __future__ import annotations

import msgspec
import pytest

from tests.sdk_types import SdkText
from tinytools import (
    DispatchAborted,
    Registry,
    RunPolicy,
    Tool,
    ToolCall,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools.policies import Fail

ran: list[object] = []


@tool
def search(query: str) -> str:
    """Search."""
    ran.append(query)
    return f"found {query}"


lookup = Tool.from_schema("lookup", "Host-executed.", {"type": "object", "properties": {}})
TOOLS = Registry.of(search, lookup)


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


NOT_TEXT = [["search"], ("search",), {"search": 1}, None, b"search", 3]
NOT_TEXT_IDS = ["list", "tuple", "dict", "none", "bytes", "int"]


class TestIdsAndNamesThatAreNoText:
    @pytest.mark.parametrize("name", NOT_TEXT, ids=NOT_TEXT_IDS)
    @pytest.mark.parametrize("alone", [True, False], ids=["alone", "in-a-batch"])
    @pytest.mark.anyio
    async def test_a_name_is_refused_before_anything_runs(self, name: object, alone: bool) -> None:
        """A list (unhashable) name raised "unhashable type: 'list'" from the name lookup;
        every name that is no str is the same TypeError, naming the call."""
        bad = ToolCall("2", name, '{"query": "x"}')  # type: ignore[arg-type]
        calls = [bad] if alone else [ToolCall("1", "search", '{"query": "a"}'), bad]
        says = rf"ToolCall.name must be a str, got {type(name).__name__} in call '2'"
        with pytest.raises(TypeError, match=says):
            dispatch_sync(calls, TOOLS)
        with pytest.raises(TypeError, match=says):
            await dispatch(calls, TOOLS)
        assert ran == []

    @pytest.mark.parametrize("call_id", NOT_TEXT, ids=NOT_TEXT_IDS)
    @pytest.mark.parametrize("alone", [True, False], ids=["alone", "in-a-batch"])
    @pytest.mark.anyio
    async def test_an_id_is_refused_before_anything_runs(
        self, call_id: object, alone: bool
    ) -> None:
        """A list id was accepted and came back as the answer's ``tool_call_id`` (in a
        batch: "unhashable type"); every id that is no str is a TypeError naming the call."""
        bad = ToolCall(call_id, "search", '{"query": "x"}')  # type: ignore[arg-type]
        calls = [bad] if alone else [ToolCall("1", "search", '{"query": "a"}'), bad]
        position = 0 if alone else 1
        says = (
            rf"ToolCall.id must be a str, got {type(call_id).__name__} in the call at "
            rf'position {position} \(name "search"\)'
        )
        with pytest.raises(TypeError, match=says):
            dispatch_sync(calls, TOOLS)
        with pytest.raises(TypeError, match=says):
            await dispatch(calls, TOOLS)
        assert ran == []

    @pytest.mark.parametrize("name", [["search"], None], ids=["list", "none"])
    def test_a_hook_that_names_a_call_with_no_text_is_refused(self, name: object) -> None:
        hook = before_tool(lambda call, env: ToolCall(call.id, name, call.arguments))  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="returned a call whose name is a"):
            dispatch_sync([ToolCall("1", "search", '{"query": "a"}')], TOOLS, middleware=[hook])
        assert ran == []


class TestTextOfAStrSubclass:
    @pytest.mark.parametrize(
        ("name", "arguments", "policy"),
        [
            ("search", '{"query": "a"}', None),  # runs
            ("search", '{"query": 1}', None),  # invalid arguments
            ("search", '{"query": 1}', RunPolicy(invalid_args=Fail())),  # aborts
            ("nope", "{}", None),  # unknown
            ("nope", "{}", RunPolicy(unknown_tool=Fail())),  # aborts
            ("search", '{"query": "a"}', RunPolicy(allowlist=frozenset())),  # not allowed
            ("lookup", "{}", None),  # external: deferred
        ],
        ids=["ok", "invalid", "invalid-fail", "unknown", "unknown-fail", "disallowed", "deferred"],
    )
    @pytest.mark.parametrize("which", ["id", "name", "both"])
    @pytest.mark.parametrize("alone", [True, False], ids=["alone", "in-a-batch"])
    @pytest.mark.anyio
    async def test_is_read_as_its_text(
        self, name: str, arguments: str, policy: RunPolicy | None, which: str, alone: bool
    ) -> None:
        """An id or name of a ``str`` subclass was carried into messages, events and
        deferred calls, which msgspec then could not encode: it is read as its text, and
        the call is answered exactly as the plain call is."""
        call_id = SdkText("c") if which in ("id", "both") else "c"
        called = SdkText(name) if which in ("name", "both") else name
        before = [] if alone else [ToolCall("a", "search", '{"query": "b"}')]
        options = {} if policy is None else {"policy": policy}
        expected = [ToolCall("c", name, arguments)]
        found = [ToolCall(call_id, called, arguments)]
        for calls in (expected, found):
            calls[:0] = before
        plain = _answered(expected, options)
        assert _answered(found, options) == plain
        assert await _answered_async(found, options) == plain


def _answered(calls: list[ToolCall], options: dict[str, object]) -> bytes:
    """The result (an abort's result) as JSON: it must encode."""
    try:
        result = dispatch_sync(calls, TOOLS, **options)  # type: ignore[arg-type]
    except DispatchAborted as aborted:
        result = aborted.result
    return msgspec.json.encode(result)


async def _answered_async(calls: list[ToolCall], options: dict[str, object]) -> bytes:
    try:
        result = await dispatch(calls, TOOLS, **options)  # type: ignore[arg-type]
    except DispatchAborted as aborted:
        result = aborted.result
    return msgspec.json.encode(result)


class TestNoBatch:
    @pytest.mark.anyio
    async def test_one_call_not_in_a_list_says_to_wrap_it(self) -> None:
        """It was "'ToolCall' object is not iterable"."""
        one = ToolCall("1", "search", '{"query": "a"}')
        with pytest.raises(TypeError, match=r"got one ToolCall: wrap it in a list, `\[call\]`"):
            dispatch_sync(one, TOOLS)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"got one ToolCall: wrap it in a list, `\[call\]`"):
            await dispatch(one, TOOLS)  # type: ignore[arg-type]
        assert ran == []

    @pytest.mark.parametrize("calls", [None, 5, search], ids=["none", "int", "tool"])
    @pytest.mark.anyio
    async def test_nothing_iterable_says_what_to_pass(self, calls: object) -> None:
        says = rf"dispatch takes a list of ToolCall values, got {type(calls).__name__}"
        with pytest.raises(TypeError, match=says):
            dispatch_sync(calls, TOOLS)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=says):
            await dispatch(calls, TOOLS)  # type: ignore[arg-type]

    def test_deferred_requests_as_the_batch_say_how_to_resume(self) -> None:
        pending = dispatch_sync([ToolCall("1", "lookup", "{}")], TOOLS).deferred
        with pytest.raises(TypeError, match=r"pass `pending.all` as the calls"):
            dispatch_sync(pending, TOOLS)  # type: ignore[arg-type]

    @pytest.mark.parametrize("calls", ["abc", {"id": "1", "name": "search"}], ids=["str", "dict"])
    def test_text_or_a_dict_as_the_batch_says_so(self, calls: object) -> None:
        with pytest.raises(TypeError, match=r"got str at position 0: .* \(is the batch a str"):
            dispatch_sync(calls, TOOLS)  # type: ignore[arg-type]

    def test_a_type_error_while_reading_the_calls_stands(self) -> None:
        """A generator that raises TypeError itself is not told it is no batch."""

        def calls():  # type: ignore[no-untyped-def]
            yield ToolCall("1", "search", '{"query": "a"}')
            raise TypeError("the host's own mistake")

        with pytest.raises(TypeError, match="the host's own mistake"):
            dispatch_sync(calls(), TOOLS)
        assert ran == []
