"""Deferral at admission: external and approval-gated tools, ``CallDeferred``, a hook's
``Defer``; a deferred call takes no slot and its metadata must encode."""

from __future__ import annotations

import msgspec
import pytest

from tests.engine.dispatch_tools import (
    TOOLS,
    _reset,  # noqa: F401 (autouse: clears `ran`)
    add,
    call,
    ran,
)
from tinytools import (
    ApprovalRequired,
    CallDeferred,
    Defer,
    RunPolicy,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools.events import (
    ToolDeferred,
)


class TestDeferral:
    def test_external_approval_and_raised(self) -> None:
        """External tools, approval gates and tools raising deferrals leave the batch."""
        calls = [
            call("1", "lookup"),
            call("2", "pay", '{"amount": 5}'),
            call("3", "needs_ok"),
            call("4", "later"),
            call("5", "add", '{"a": 1}'),
        ]
        result = dispatch_sync(calls, TOOLS)
        assert ["5"] == [m.tool_call_id for m in result.messages]
        assert result.deferred is not None
        assert (["1", "4"], ["2", "3"]) == (
            [c.id for c in result.deferred.calls],
            [c.id for c in result.deferred.approvals],
        )
        assert {"why": "large"} == result.deferred.metadata["3"]
        assert [] == [r for r in ran if r[0] == "pay"]
        assert 4 == sum(isinstance(e, ToolDeferred) for e in result.events)

    @pytest.mark.parametrize(
        "metadata",
        [{"at": object()}, {"ms": float("nan")}, {"k": "\ud800"}, {"n": 10**5000}],
        ids=["object", "nan", "surrogate", "huge-int"],
    )
    @pytest.mark.parametrize("raised", [ApprovalRequired, CallDeferred])
    @pytest.mark.anyio
    async def test_a_deferral_whose_metadata_json_cannot_carry_is_that_calls_error(
        self, raised: type[Exception], metadata: dict[str, object]
    ) -> None:
        """A tool deferring with metadata no result can carry (the result failed to
        encode, or NaN became null) is answered with that call's error."""

        @tool
        def defers() -> str:
            """Defer with bad metadata."""
            raise raised(metadata)

        for result in (
            dispatch_sync([call("1", "defers"), call("2", "add", '{"a": 1}')], [defers, add]),
            await dispatch([call("1", "defers"), call("2", "add", '{"a": 1}')], [defers, add]),
        ):
            assert result.deferred is None
            assert [(m.tool_call_id, m.status) for m in result.messages] == [
                ("1", "error"),
                ("2", "ok"),
            ]
            assert "metadata" in result.messages[0].content
            assert msgspec.json.encode(result)

    @pytest.mark.parametrize(
        "metadata", [{"at": object()}, {"ms": float("nan")}], ids=["object", "nan"]
    )
    def test_a_hooks_deferral_metadata_must_be_json(self, metadata: dict[str, object]) -> None:
        """``Defer(metadata)`` refuses what no result can carry, when it is made."""
        with pytest.raises(TypeError, match="Defer's metadata"):
            Defer(metadata)

    def test_deferred_takes_no_slot(self) -> None:
        """A deferred call does not count against max_tool_calls."""
        calls = [call("1", "lookup"), call("2", "add", '{"a": 1}')]
        result = dispatch_sync(calls, TOOLS, policy=RunPolicy(max_tool_calls=1))
        assert ["ok"] == [m.status for m in result.messages]
