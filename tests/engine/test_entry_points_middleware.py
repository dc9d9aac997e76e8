"""``dispatch``/``dispatch_sync``'s ``middleware`` argument as a sequence: composed once,
in order, whatever kind of sequence it is."""

from __future__ import annotations

from tests.engine.one_add import CALLS, TOOLS
from tinytools import (
    ToolCall,
    before_tool,
    dispatch_sync,
)


class TestMiddlewareSequence:
    """The hooks that run are those of the sequence passed, however it was passed before."""

    def test_list_changed_between_dispatches(self) -> None:
        """A hook added to (or replaced in) the same list object runs from the next dispatch."""
        ran: list[str] = []

        def hook(label: str) -> object:
            def record(call: ToolCall, env: object) -> ToolCall:
                ran.append(label)
                return call

            return before_tool(record)

        middleware = [hook("a")]
        dispatch_sync(CALLS, TOOLS, middleware=middleware)
        middleware.append(hook("b"))
        dispatch_sync(CALLS, TOOLS, middleware=middleware)
        middleware[0] = hook("c")
        dispatch_sync(CALLS, TOOLS, middleware=middleware)
        middleware.clear()
        dispatch_sync(CALLS, TOOLS, middleware=middleware)
        assert ran == ["a", "a", "b", "c", "b"]

    def test_generator(self) -> None:
        """Middleware given as a one-shot iterable runs."""
        ran: list[str] = []

        def record(call: ToolCall, env: object) -> ToolCall:
            ran.append(call.id)
            return call

        dispatch_sync(CALLS, TOOLS, middleware=(m for m in [before_tool(record)]))
        assert ran == ["c1"]
