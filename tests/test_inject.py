"""Tests for `tinytools._inject`."""

from __future__ import annotations

import attrs
import pytest

from tinytools import (
    CallId,
    Cancellation,
    Context,
    Emit,
    Inject,
    RunContext,
    State,
    Store,
    ToolCall,
    ToolDefinitionError,
    check_context,
    tool,
)
from tinytools._inject import CallRuntime, bind


@attrs.frozen
class Db:
    url: str


@attrs.frozen
class Cart:
    items: tuple[str, ...] = ()


@tool
def everything(
    q: str,
    ctx: Inject[RunContext],
    call_id: Inject[CallId],
    call: Inject[ToolCall],
    cancel: Inject[Cancellation],
    emit: Inject[Emit],
    store: Inject[Store[dict[str, str]]],
    cart: Inject[State[Cart]],
    db: Inject[Db],
) -> None:
    """Use every injectable."""


def runtime(context: Context, events: list[tuple[str, object]] | None = None) -> CallRuntime:
    """A runtime for call ``c1`` of ``everything``."""
    sink = events.append if events is not None else (lambda _e: None)
    return CallRuntime(
        context=context,
        call=ToolCall("c1", "everything", '{"q": "x"}'),
        run_context=RunContext(context.run_id, depth=context.depth),
        emit=Emit(lambda name, data: sink((name, data))),
    )


FULL = Context(run_id="r1", state=Cart(("apple",)), store={"k": "v"}, values={Db: Db("sqlite://")})


class TestBind:
    def test_every_builtin(self) -> None:
        """Each built-in injectable and `Context.values` fill their parameters."""
        events: list[tuple[str, object]] = []
        rt = runtime(FULL, events)
        kwargs = bind(everything.validate('{"q": "x"}'), everything.injections, rt)
        assert kwargs["q"] == "x"
        assert RunContext("r1") == kwargs["ctx"]
        assert kwargs["call_id"] == "c1"
        assert rt.call is kwargs["call"]
        assert rt.cancellation is kwargs["cancel"]
        assert kwargs["store"] == {"k": "v"}
        assert Cart(("apple",)) == kwargs["cart"]
        assert Db("sqlite://") == kwargs["db"]
        emit = kwargs["emit"]
        assert isinstance(emit, Emit)
        emit("progress", {"pct": 50})
        assert events == [("progress", {"pct": 50})]

    def test_optional_injection_falls_back(self) -> None:
        """`Inject[T | None]` gets None and a defaulted injection its default when unsatisfied."""

        @tool
        def f(db: Inject[Db | None], cart: Inject[State[Cart]] = Cart(("d",))) -> None: ...

        kwargs = bind(f.validate("{}"), f.injections, runtime(Context()))
        assert {"db": None, "cart": Cart(("d",))} == kwargs

    def test_unsatisfied_raises(self) -> None:
        """Binding a required injection with nothing to draw from is a definition error."""
        with pytest.raises(ToolDefinitionError, match="the context has no store"):
            bind(everything.validate('{"q": "x"}'), everything.injections, runtime(Context()))

    def test_unknown_injectable_form(self) -> None:
        """Injecting something that is neither a class nor a built-in is a definition error."""
        with pytest.raises(ToolDefinitionError, match="cannot inject"):

            @tool
            def f(x: Inject[list[int]]) -> None: ...


class TestCheckContext:
    def test_reports_every_unsatisfiable_injection(self) -> None:
        """Every injection a context cannot satisfy is named, for every tool, at once."""
        with pytest.raises(ToolDefinitionError) as info:
            check_context([everything], Context())
        text = str(info.value)
        assert len(info.value.problems) == 3
        for needle in ("`store`", "`cart`", "`db`"):
            assert needle in text

    def test_full_context_passes(self) -> None:
        """A context with a store, a state and the values raises nothing."""
        check_context([everything], FULL)


class TestContext:
    def test_fresh_run_ids(self) -> None:
        """Each context gets its own run id unless one is given."""
        assert Context().run_id != Context().run_id
        assert Context(run_id=None).run_id not in (None, Context(run_id=None).run_id)
        assert Context(run_id="r").run_id == "r"

    def test_values_frozen(self) -> None:
        """`Context.values` is a read-only copy of what was given."""
        given: dict[type[object], object] = {Db: Db("a")}
        context = Context(values=given)
        given[Cart] = Cart()
        assert [Db] == list(context.values)
        with pytest.raises(TypeError):
            context.values[Cart] = Cart()  # type: ignore[index]


class TestCancellation:
    def test_observed(self) -> None:
        """A cancellation handle reports cancellation once cancelled."""
        handle = Cancellation()
        assert not handle.cancelled
        handle.cancel()
        assert handle.cancelled
