"""Property: ``RunPolicy.max_result_bytes`` bounds every message of a batch, in UTF-8 bytes.

Whatever the batch (``tinytools.testing.tool_calls``: valid calls, unknown names,
malformed and relaxed text, schema violations, repeated ids) and whatever the limit,
each message's content fits it: a tool's result (long text, non-ASCII, a failure), and
every answer dispatch writes itself — a refusal quoting a tool's whole schema, an
unknown name's suggestions and the arguments it received, a repeated id, a hook's
denial, discovery's ``tool_search`` results and ``tool_call`` refusals, the calls an
aborted batch never ran — and each follow-up's text. A tool's own ``max_result_bytes``
only makes its limit stricter. The checker then finds every invariant kept (a cut
refusal is still one).
"""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools import (
    Deny,
    DispatchAborted,
    Exposure,
    Registry,
    RunPolicy,
    Tool,
    ToolCall,
    ToolPolicy,
    ToolResult,
    before_tool,
    dispatch_sync,
    tool,
)
from tinytools._engine.env import DispatchEnv
from tinytools._engine.fold import render
from tinytools._wire import ImageBlock, JsonBlock, TextBlock
from tinytools.discovery import Discovery
from tinytools.policies import Fail, ReturnToolError
from tinytools.testing import check_dispatch_invariants, tool_calls


@tool
def echo(text: str, times: int = 1) -> str:
    """Repeat a text."""
    return text * min(max(times, 0), 50)


@tool(policy=ToolPolicy().with_runtime(max_result_bytes=5000))
def essay(topic: str) -> str:
    """Write at length, with its own (larger) byte limit."""
    return f"On {topic}: " + "pensées et éléments " * 400


@tool(policy=ToolPolicy().with_runtime(max_result_bytes=40))
def brief(topic: str) -> str:
    """Answer in a few words, with its own (smaller) byte limit."""
    return f"In short, {topic} is " + "fine " * 30


@tool
def shows(caption: str) -> ToolResult:
    """Answer with a long follow-up: text, an image and JSON (images are not text the
    limit counts)."""
    return ToolResult.success(
        "see below",
        follow_up=(
            TextBlock(caption * 200),
            ImageBlock("image/png", data=b"\0" * 3000),
            JsonBlock([caption] * 50),
        ),
    )


@tool
def fails(reason: str) -> str:
    """Always fail, saying why at length."""
    raise ValueError(reason * 20)


WIDE = Tool.from_schema(
    "wide",
    "Take many short fields. " * 10,
    {
        "type": "object",
        "properties": {f"field_{i}": {"type": "string", "maxLength": 3} for i in range(40)},
        "required": ["field_0"],
        "additionalProperties": False,
    },
    fn=lambda **fields: sorted(fields),
)
TOOLS = Registry.of(echo, essay, brief, shows, fails, WIDE)
#: The same tools, all but ``echo`` behind discovery's ``tool_search`` / ``tool_call``.
DISCOVERY = Discovery(
    Registry(
        [echo, *(attrs.evolve(t, exposure=Exposure.Deferred) for t in (essay, brief, fails, WIDE))]
    )
)


def _discovery_calls() -> st.SearchStrategy[list[ToolCall]]:
    search = st.builds(
        lambda n, q, k: ToolCall(f"s{n}", "tool_search", {"query": q, "limit": k}),
        st.integers(0, 3),
        st.sampled_from(["fields", "write at length", "answer", "fail", "x" * 300]),
        st.integers(1, 10),
    )
    wrapped = st.builds(
        lambda n, name, arguments: ToolCall(
            f"t{n}", "tool_call", {"name": name, "arguments": arguments}
        ),
        st.integers(0, 3),
        st.sampled_from(["wide", "essay", "brief", "nope", "tool_search"]),
        st.sampled_from([{}, {"field_0": "abcdef"}, {"topic": "tea"}, ["x"] * 50, "{"]),
    )
    return st.lists(search | wrapped, max_size=4)


@settings(max_examples=150, deadline=None)
@given(
    calls=tool_calls(TOOLS, max_size=6),
    extra=_discovery_calls(),
    limit=st.integers(1, 3000),
    discovered=st.booleans(),
    denied=st.sets(st.integers(0, 9), max_size=3),
    fail=st.booleans(),
)
def test_every_message_fits_the_limit(
    calls: list[ToolCall],
    extra: list[ToolCall],
    limit: int,
    discovered: bool,
    denied: set[int],
    fail: bool,
) -> None:
    """Each message's content is at most ``limit`` UTF-8 bytes (a lone surrogate's
    escape counted as written)."""
    batch = calls + extra if discovered else calls

    def deny(call: ToolCall, env: DispatchEnv) -> object:
        if any(call is batch[i] for i in denied if i < len(batch)):
            return Deny("The operator refused this call: " + "not today, " * 30)
        return call

    policy = RunPolicy(
        max_result_bytes=limit,
        unknown_tool=Fail() if fail else ReturnToolError(),
        invalid_args=Fail() if fail else ReturnToolError(),
    )
    try:
        result = dispatch_sync(
            batch,
            DISCOVERY if discovered else TOOLS,
            policy=policy,
            middleware=[before_tool(deny)],
        )
    except DispatchAborted as aborted:
        result = aborted.result
    for message in result.messages:
        size = len(message.content.encode("utf-8", "surrogatepass"))
        assert size <= limit, f"{message.name!r}: {size} bytes over {limit}: {message!r}"
    for follow_up in result.follow_ups:  # (its text: text and JSON blocks as the model reads them)
        text = render([b for b in follow_up.content if isinstance(b, (TextBlock, JsonBlock))])
        size = len(text.encode("utf-8", "surrogatepass"))
        assert size <= limit, f"follow-up of {follow_up.call_id!r}: {size} bytes over {limit}"
    if not discovered and not denied:
        check_dispatch_invariants(batch, result, TOOLS, policy=policy)
