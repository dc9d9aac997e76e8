"""Property: the repair step of dispatch answers the same whichever way it goes.

Dispatch validates a relaxed call's rewritten text first and decodes its object only when
something reads it (redaction, the invalid-args policy); a redacting tool always decodes
it. For any text, a tool and its twin that redacts a name no argument has must answer
alike: the same content, status and recoveries, and the same arguments reach the tool.
"""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st
from json_strategies import JSONISH_TEXT, relaxed_pairs

from tinytools import RunPolicy, Tool, ToolCall, ToolPolicy, dispatch_sync, tool
from tinytools.events import InvalidToolArgs
from tinytools.policies import NormalizeThenReturnToolError

_NEVER = ToolPolicy(redact=("never_an_argument_name_here",))
received: list[tuple[str, object]] = []


def _typed(a: int = 0, b: str = "", c: list[int] | None = None) -> str:
    """Typed parameters: most drawn objects break this schema."""
    received.append(("typed", {"a": a, "b": b, "c": c}))
    return "ok"


def _tools() -> list[tuple[Tool[..., Any], Tool[..., Any]]]:
    def echo(**arguments: object) -> object:
        received.append(("echo", arguments))
        return arguments

    schema = {"type": "object"}
    pairs = []
    for policy in (ToolPolicy(), _NEVER):
        pairs.append(
            (
                tool(_typed, policy=policy),
                Tool.from_schema("echo", "Echo the arguments.", schema, echo, policy=policy),
            )
        )
    return [(pairs[0][0], pairs[1][0]), (pairs[0][1], pairs[1][1])]


TOOLS = _tools()


def _answer(text: str, subject: Tool[..., Any], policy: RunPolicy) -> tuple[object, ...]:
    received.clear()
    result = dispatch_sync([ToolCall("c", subject.name, text)], [subject], policy=policy)
    [message] = result.messages
    recoveries = [e.recovery for e in result.events if isinstance(e, InvalidToolArgs)]
    msgspec.json.encode(result)  # every result encodes
    return message.content, message.status, recoveries, list(received)


@given(
    st.one_of(relaxed_pairs().map(lambda pair: pair[1]), JSONISH_TEXT),
    st.sampled_from([RunPolicy(), RunPolicy(invalid_args=NormalizeThenReturnToolError())]),
)
def test_repair_answers_alike_with_and_without_redaction(text: str, policy: RunPolicy) -> None:
    for plain, redacting in TOOLS:
        assert _answer(text, plain, policy) == _answer(text, redacting, policy)
