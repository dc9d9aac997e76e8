"""``dispatch``/``dispatch_sync``'s ``middleware`` and ``tools`` arguments: every hook
given runs, a tool list changed between dispatches is seen."""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import pytest

from tests.engine.calls import add, call, transfer
from tinytools import (
    Deny,
    before_tool,
    dispatch_sync,
    tool,
)


class _HooksSayingEmpty:
    """Middleware given as an iterable whose ``__len__`` says 0 (a lazy view of hooks)."""

    def __len__(self) -> int:
        return 0

    def __iter__(self) -> Iterator[object]:
        return iter([before_tool(lambda call, env: Deny("not today"))])


class TestMiddlewareArgument:
    @pytest.mark.parametrize(
        "middleware",
        [
            _HooksSayingEmpty(),
            (hook for hook in [before_tool(lambda call, env: Deny("not today"))]),
            [before_tool(lambda call, env: Deny("not today"))],
        ],
        ids=["len-0 iterable", "generator", "list"],
    )
    def test_every_hook_given_runs(self, middleware: object) -> None:
        """Defect: middleware told "none" by truthiness skipped the hooks of an
        iterable whose ``__len__`` said 0 (a Deny among them) in silence."""
        result = dispatch_sync([call("a", "add", {"a": 1})], [add], middleware=middleware)  # type: ignore[arg-type]
        assert [(m.status, m.content) for m in result.messages] == [("denied", "not today")]
        assert result.executed == ()

    @pytest.mark.parametrize("middleware", [(), [], iter(())], ids=["()", "[]", "empty iterator"])
    def test_no_hooks_is_a_plain_dispatch(self, middleware: object) -> None:
        result = dispatch_sync([call("a", "add", {"a": 1})], [add], middleware=middleware)  # type: ignore[arg-type]
        assert [m.content for m in result.messages] == ["1"]


class TestToolsArgument:
    def test_a_list_changed_between_dispatches_is_seen(self) -> None:
        """A list of tools is remembered between dispatches, never trusted: a tool removed
        from it can no longer be called, one added can."""
        tools = [add]
        assert dispatch_sync([call("1", "transfer", {"amount": 1})], tools).messages[0].is_error
        tools.append(transfer)
        deferred = dispatch_sync([call("1", "transfer", {"amount": 1})], tools).deferred
        assert deferred is not None
        tools.remove(transfer)
        assert dispatch_sync([call("1", "transfer", {"amount": 1})], tools).messages[0].is_error

    def test_a_called_tool_replaced_in_place_is_seen(self) -> None:
        """The cheap check of a list (the called tools' positions) sees a called tool
        replaced in place, and a tool moved to another position."""

        @tool(name="add")
        def add_ten(a: int, b: int = 0) -> int:
            """Add, plus ten."""
            return a + b + 10

        tools = [add, transfer]
        assert dispatch_sync([call("1", "add", {"a": 1})], tools).messages[0].content == "1"
        tools[0] = add_ten
        assert dispatch_sync([call("1", "add", {"a": 1})], tools).messages[0].content == "11"
        tools[:] = [transfer, add]
        assert dispatch_sync([call("1", "add", {"a": 1})], tools).messages[0].content == "1"

    def test_a_new_name_in_a_replaced_slot_is_seen_when_called(self) -> None:
        """A call to a name the remembered registry lacks compares the whole list."""

        @tool
        def double(a: int) -> int:
            """Double a number."""
            return 2 * a

        tools = [add, transfer]
        assert dispatch_sync([call("1", "add", {"a": 1})], tools).messages[0].content == "1"
        tools[1] = double
        assert dispatch_sync([call("1", "double", {"a": 4})], tools).messages[0].content == "8"
        assert dispatch_sync([call("1", "transfer", {"amount": 1})], tools).messages[0].is_error

    def test_a_tuple_is_used_as_given(self) -> None:
        tools = (add, transfer)
        for _ in range(2):
            assert dispatch_sync([call("1", "add", {"a": 4})], tools).messages[0].content == "4"


class TestToolSpec:
    def test_is_async_follows_fn(self) -> None:
        """Defect: attrs.evolve(tool, fn=async_fn) left is_async False."""

        async def aadd(a: int, b: int = 0) -> int:
            return a + b

        evolved = attrs.evolve(add, fn=aadd)
        assert evolved.is_async
        assert (
            dispatch_sync([call("e", "add", {"a": 2, "b": 3})], [evolved]).messages[0].content
            == "5"
        )
