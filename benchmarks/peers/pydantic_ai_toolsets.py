"""Pydantic AI (``pydantic-ai-slim``): resolving a composition of toolsets (``get_tools``).

The composition mirrors ``bench_toolsets``' five adaptors: two ``FunctionToolset`` halves
combined, filtered, prefixed, renamed and approval-gated, over the same 1,000 tool names.
``get_tools(ctx)`` is what an agent run awaits each step; it is awaited in an asyncio loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic_ai import RunContext, Tool
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import CombinedToolset, FunctionToolset
from pydantic_ai.usage import RunUsage

LABEL = "pydantic-ai get_tools"
LOOP = "asyncio"


def _function(query: str, limit: int = 10) -> str:
    """Search something."""
    return query


def resolver(names: list[str]) -> Callable[[], Awaitable[object]]:
    """One ``get_tools`` of the five-adaptor composition over tools named ``names``."""
    half = len(names) // 2
    first = FunctionToolset([Tool(_function, name=n) for n in names[:half]])
    second = FunctionToolset([Tool(_function, name=n) for n in names[half:]])
    toolset = (
        CombinedToolset([first, second])
        .filtered(lambda _ctx, td: not td.name.startswith("delete_"))
        .prefixed("x")
        .renamed({"first": f"x_{names[0]}"})
        .approval_required(lambda _ctx, td, _args: td.name.startswith("x_send"))
    )
    context = RunContext(deps=None, model=TestModel(), usage=RunUsage())

    async def resolve() -> object:
        return await toolset.get_tools(context)

    return resolve
