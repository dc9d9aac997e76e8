"""Type-checked, never run: `@tool` keeps the function's call signature.

`tests/test_typing.py` runs mypy over this file; an `assert_type` that does
not hold, or a `type: ignore` that is not needed, fails the test.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, assert_type

from tinytools import Inject, RunContext, Tool, ToolPolicy, tool


@tool
def search(query: str, limit: int = 5) -> list[str]:
    return [query] * limit


@tool(name="fetch", policy=ToolPolicy.read_only())
async def fetch(url: str, ctx: Inject[RunContext]) -> bytes:
    return url.encode()


def check() -> None:
    assert_type(search("x"), list[str])
    assert_type(search("x", limit=2), list[str])
    assert_type(search.name, str)
    assert_type(search.validate('{"query": "x"}'), dict[str, object])
    pending = assert_type(fetch("u", RunContext("r")), Coroutine[Any, Any, bytes])
    pending.close()
    reveal_type(search)  # noqa: F821 - mypy's builtin
    search(1)  # type: ignore[arg-type]
    search("x", limit="2")  # type: ignore[arg-type]
    search("x", nope=1)  # type: ignore[call-arg]
    any_tool: Tool[..., object] = search
    assert_type(any_tool.is_async, bool)
