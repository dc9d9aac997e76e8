"""Property: a call is answered the same whether its id, name, raw text and argument
values are plain ``str``/``int``/``float`` values or of subclasses (an SDK's own types,
which msgspec does not encode), on every route, and every result encodes.

Admission reads such text and values as the plain ones they hold (``_engine.host_calls``,
``Tool.validate``, ``_validate.plain_values``); any route that kept one would leave a
message, event or deferred call msgspec cannot encode, or answer differently.
"""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from tests.json_strategies import json_objects
from tests.sdk_types import SdkText, sdk_typed
from tinytools import (
    DispatchAborted,
    Registry,
    RunPolicy,
    Tool,
    ToolAccess,
    ToolCall,
    ToolPolicy,
    dispatch_sync,
    tool,
)
from tinytools.policies import Fail, NormalizeThenReturnToolError


@tool
def search(query: str = "", limit: int = 3, extra: Any = None) -> dict[str, object]:
    """Search."""
    return {"query": query, "limit": limit, "extra": extra}


@tool(policy=ToolPolicy(redact=("query",)))
def secret(query: str = "") -> str:
    """Redacts its query."""
    return "found"


@tool(policy=ToolPolicy(access=ToolAccess(approval_required=True)))
def gated(limit: int = 0) -> int:
    """Needs approval."""
    return limit


FIND = Tool.from_schema(
    "find", "Find.", {"type": "object", "properties": {"limit": {"type": "integer"}}}, fn=dict
)
LOOKUP = Tool.from_schema("lookup", "Host-executed.", {"type": "object"})
TOOLS = Registry.of(search, secret, gated, FIND, LOOKUP)
NAMES = st.sampled_from(["search", "secret", "gated", "find", "lookup", "nope", "Search"])
POLICIES = st.sampled_from(
    [
        RunPolicy(),
        RunPolicy(invalid_args=NormalizeThenReturnToolError()),
        RunPolicy(invalid_args=Fail(), unknown_tool=Fail()),
        RunPolicy(allowlist=frozenset({"search", "find"})),
    ]
)


def _answer(calls: list[ToolCall], policy: RunPolicy) -> bytes:
    try:
        result = dispatch_sync(calls, TOOLS, policy=policy)
    except DispatchAborted as aborted:
        return b"aborted " + msgspec.json.encode(aborted.result)
    return msgspec.json.encode(result)


@given(
    arguments=json_objects()
    | st.fixed_dictionaries({"query": st.text(), "limit": st.integers() | st.floats()}),
    name=NAMES,
    as_text=st.booleans(),
    policy=POLICIES,
)
def test_subclasses_are_answered_as_their_plain_values(
    arguments: dict[str, object], name: str, as_text: bool, policy: RunPolicy
) -> None:
    try:
        text = msgspec.json.encode(arguments).decode()
    except (TypeError, ValueError, OverflowError):  # NaN or infinity: dict arguments only
        as_text = False
        text = ""
    plain = [
        ToolCall("a", "search", '{"query": "x"}'),
        ToolCall("c", name, text if as_text else arguments),
    ]
    sdk = [
        plain[0],
        ToolCall(
            SdkText("c"),
            SdkText(name),
            SdkText(text) if as_text else sdk_typed(arguments),  # type: ignore[arg-type]
        ),
    ]
    assert _answer(sdk, policy) == _answer(plain, policy)


def _with_key(value: object, key: object, depth: int) -> object:
    """``value`` with ``key`` added to the object ``depth`` objects down (or the deepest)."""
    if not isinstance(value, dict):
        return value
    copied: dict[object, object] = dict(value)
    inner = [k for k, v in copied.items() if isinstance(v, dict)]
    if depth and inner:
        copied[inner[0]] = _with_key(copied[inner[0]], key, depth - 1)
    else:
        copied[key] = "x"
    return copied


@given(
    arguments=json_objects(),
    key=st.integers() | st.floats(allow_nan=False) | st.tuples(st.integers()),
    depth=st.integers(0, 3),
    name=NAMES,
    policy=POLICIES,
)
def test_a_key_that_is_no_string_is_never_handed_to_a_tool(
    arguments: dict[str, object], key: object, depth: int, name: str, policy: RunPolicy
) -> None:
    """JSON object keys are strings: dict arguments holding any other key, at any depth,
    never run a tool (a known name answers the call's invalid arguments naming the key;
    any other is unknown, deferred or aborted), and every result encodes."""
    call = ToolCall("c", name, _with_key(arguments, key, depth))  # type: ignore[arg-type]
    try:
        result = dispatch_sync([call], TOOLS, policy=policy)
    except DispatchAborted as aborted:
        result = aborted.result
    msgspec.json.encode(result)
    for message in result.messages:
        assert message.is_error or message.status == "interrupted", message
        if message.content.startswith("Invalid arguments"):
            assert "Expected a `string` object key" in message.content
