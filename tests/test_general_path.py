"""Tests for the features a dispatch adds on top of a plain call: ``on_event`` handlers of
every shape, middleware, and the run policy's trivial limits (answers unchanged by the
shortcuts that keep them cheap)."""

from __future__ import annotations

import enum
import functools
import weakref
from collections.abc import Callable, Collection

import attrs
import msgspec
import pytest

from tinytools import (
    Allow,
    Artifact,
    Cancellation,
    Context,
    Defer,
    Deny,
    DispatchAborted,
    Registry,
    RunPolicy,
    TextBlock,
    ToolCall,
    ToolPolicy,
    ToolPolicyMiddleware,
    ToolResult,
    Workspace,
    after_tool,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools._engine.env import DispatchEnv
from tinytools.events import Event, ToolCompleted, ToolStarted


@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


TOOLS = Registry([add])
CALLS = [ToolCall("c1", "add", '{"a": 1}')]
KINDS = [ToolStarted, ToolCompleted]


class Recorder:
    """Handlers of every shape, recording what they are handed."""

    def __init__(self) -> None:
        self.seen: list[Event] = []

    def sync(self, event: Event) -> None:
        self.seen.append(event)

    async def asynchronous(self, event: Event) -> None:
        self.seen.append(event)


def _async_decorated(recorder: Recorder) -> Callable[[Event], object]:
    """An async handler behind a ``functools.wraps`` decorator (sync on the outside)."""

    async def record(event: Event) -> None:
        recorder.seen.append(event)

    @functools.wraps(record)
    def wrapper(event: Event) -> object:
        return record(event)

    return wrapper


class TestEventHandlerShapes:
    """Each handler shape gets every event, in order: sync ones called, async ones awaited."""

    def test_bound_method(self) -> None:
        """A bound method, made afresh for each dispatch, is called."""
        recorder = Recorder()
        for _ in range(2):
            result = dispatch_sync(CALLS, TOOLS, on_event=recorder.sync)
            assert [type(e) for e in result.events] == KINDS
        assert [type(e) for e in recorder.seen] == KINDS * 2

    def test_builtin(self) -> None:
        """A builtin (``list.append``) is called."""
        seen: list[Event] = []
        result = dispatch_sync(CALLS, TOOLS, on_event=seen.append)
        assert list(result.events) == seen

    def test_lambda(self) -> None:
        """A lambda made per dispatch is called."""
        seen: list[Event] = []
        result = dispatch_sync(CALLS, TOOLS, on_event=lambda event: seen.append(event))
        assert list(result.events) == seen

    def test_async_bound_method_under_dispatch_sync(self) -> None:
        """An async bound method is awaited (dispatch_sync runs it on its loop)."""
        recorder = Recorder()
        result = dispatch_sync(CALLS, TOOLS, on_event=recorder.asynchronous)
        assert list(result.events) == recorder.seen

    @pytest.mark.anyio
    async def test_async_bound_method(self) -> None:
        """An async bound method is awaited under ``dispatch``."""
        recorder = Recorder()
        result = await dispatch(CALLS, TOOLS, on_event=recorder.asynchronous)
        assert list(result.events) == recorder.seen

    def test_decorated_async_function(self) -> None:
        """A ``functools.wraps`` wrapper of an async function is read as async."""
        recorder = Recorder()
        result = dispatch_sync(CALLS, TOOLS, on_event=_async_decorated(recorder))
        assert list(result.events) == recorder.seen

    def test_function_with_attributes(self) -> None:
        """A plain function carrying attributes of its own is still called."""
        seen: list[Event] = []

        def record(event: Event) -> None:
            seen.append(event)

        record.label = "mine"  # type: ignore[attr-defined]
        result = dispatch_sync(CALLS, TOOLS, on_event=record)
        assert list(result.events) == seen

    def test_same_handler_every_dispatch(self) -> None:
        """One module-level handler passed to every dispatch gets every event of each;
        an async handler passed between them is still awaited, and a handler that
        returns an awaitable still fails the run."""
        _RECORDED.clear()
        for _ in range(3):
            result = dispatch_sync(CALLS, TOOLS, on_event=_record)
            assert [type(e) for e in result.events] == KINDS
        assert [type(e) for e in _RECORDED] == KINDS * 3
        recorder = Recorder()
        result = dispatch_sync(CALLS, TOOLS, on_event=recorder.asynchronous)
        assert list(result.events) == recorder.seen
        with pytest.raises(DispatchAborted, match="async def"):
            dispatch_sync(CALLS, TOOLS, on_event=lambda event: recorder.asynchronous(event))
        _RECORDED.clear()
        result = dispatch_sync(CALLS, TOOLS, on_event=_record)
        assert _RECORDED == list(result.events)

    def test_handler_object_is_not_kept(self) -> None:
        """Once dispatch returns, nothing of it keeps the handler's object alive (a bound
        method's ``self``, or the list behind ``events.append``)."""
        recorder, bag = Recorder(), _Bag()
        owner, held = weakref.ref(recorder), weakref.ref(bag)
        dispatch_sync(CALLS, TOOLS, on_event=recorder.sync)
        dispatch_sync(CALLS, TOOLS, on_event=bag.append)
        assert len(bag) == len(KINDS)
        del recorder, bag
        assert owner() is None
        assert held() is None

    def test_handler_sees_the_inline_resume(self) -> None:
        """The pass that ``on_deferred`` resumes hands its events to the same handler."""

        @tool(approval_required=True)
        def pay(amount: int) -> int:
            """Pay."""
            return amount

        seen: list[Event] = []
        result = dispatch_sync(
            [ToolCall("p", "pay", '{"amount": 1}')],
            Registry([pay]),
            on_event=seen.append,
            on_deferred=lambda pending: pending.approve_all(),
        )
        assert [m.status for m in result.messages] == ["ok"]
        assert list(result.events) == seen
        assert [type(e) for e in seen][-2:] == KINDS


_RECORDED: list[Event] = []


class _Bag(list[Event]):
    """A list that can be referred to weakly."""


def _record(event: Event) -> None:
    _RECORDED.append(event)


class Colour(str, enum.Enum):
    RED = "red"


class PosingAsStr:
    """A value whose ``__class__`` says ``str`` (as a proxy's may): ``isinstance`` is
    fooled, but it is no string."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return str

    def __repr__(self) -> str:
        return "PosingAsStr()"


class _Posing:
    """A value whose ``__class__`` says it is of ``kind``, which it is not."""

    def __init__(self, kind: type) -> None:
        self._kind = kind

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return self._kind

    def __repr__(self) -> str:
        return f"_Posing({self._kind.__name__})"


RETURNS: list[object] = [
    "plain text",
    "caf\u00e9 \u2603",
    "lone \udc80 surrogate",
    Colour.RED,
    ["a", 1, None],
    {"k": [1.5, True]},
    None,
    0,
    "x" * 500,
    float("nan"),
    {1, 2},
    PosingAsStr(),
]


def _returning(value: object) -> Registry:
    def give() -> object:
        return value

    return Registry([tool(give)])


def _copy(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
    return msgspec.structs.replace(result)


def _same(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
    return result


class TestAfterHookPassThrough:
    """An ``after_tool`` hook that hands the result back changes nothing in the answer."""

    @pytest.mark.parametrize("value", RETURNS, ids=repr)
    @pytest.mark.parametrize("hook", [_same, _copy], ids=["same", "copy"])
    @pytest.mark.parametrize("limit", [None, 60])
    def test_answer_as_without_hooks(
        self,
        value: object,
        hook: Callable[[ToolCall, ToolResult, object], ToolResult],
        limit: int | None,
    ) -> None:
        """Message and events are those of the same call without middleware."""
        registry = _returning(value)
        calls = [ToolCall("c1", "give", "{}")]
        policy = RunPolicy(max_result_bytes=limit)
        bare = dispatch_sync(calls, registry, policy=policy)
        hooked = dispatch_sync(calls, registry, policy=policy, middleware=[after_tool(hook)])
        assert hooked.messages == bare.messages
        assert hooked.events == bare.events
        assert msgspec.json.encode(hooked.events)

    @pytest.mark.parametrize("hooked", [False, True])
    def test_a_value_posing_as_a_str_is_that_calls_error(self, hooked: bool) -> None:
        """It is answered as the bad value it is: the batch is not aborted (nor the
        artifact store blamed), and no exception escapes dispatch."""
        middleware = [after_tool(_same)] if hooked else []
        result = dispatch_sync(
            [ToolCall("c1", "give", "{}")], _returning(PosingAsStr()), middleware=middleware
        )
        (message,) = result.messages
        assert message.is_error
        assert "Tool `give` returned a bad value" in message.content
        assert msgspec.json.encode(result)

    @pytest.mark.parametrize(
        "value",
        [
            _Posing(ToolResult),
            ToolResult(content=(_Posing(TextBlock),)),  # type: ignore[arg-type]
            ToolResult(follow_up=(_Posing(TextBlock),)),  # type: ignore[arg-type]
            ToolResult(artifacts=(_Posing(Artifact),)),  # type: ignore[arg-type]
        ],
        ids=["result", "content", "follow_up", "artifacts"],
    )
    @pytest.mark.parametrize("hooked", [False, True])
    def test_a_value_posing_as_a_result_or_its_parts_is_that_calls_error(
        self, value: object, hooked: bool
    ) -> None:
        """A value (or a result's block or artifact) whose ``__class__`` says
        ``ToolResult``, ``TextBlock`` or ``Artifact`` is no such thing: the call is
        answered as the bad value it is, the batch goes on, and the result encodes."""
        middleware = [after_tool(_same)] if hooked else []
        calls = [ToolCall("c1", "give", "{}"), ToolCall("c2", "give", "{}")]
        result = dispatch_sync(calls, _returning(value), middleware=middleware)
        assert [m.tool_call_id for m in result.messages] == ["c1", "c2"]
        for message in result.messages:
            assert message.is_error
            assert "Tool `give` returned a bad value" in message.content
        assert msgspec.json.encode(result)

    def test_hook_sees_the_wrapped_value(self) -> None:
        """The hook receives the text and the structured value, as ``wrap_return`` makes them."""
        seen: list[ToolResult] = []

        def look(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
            seen.append(result)
            return result

        dispatch_sync(CALLS, TOOLS, middleware=[after_tool(look)])
        assert seen == [ToolResult(content=(TextBlock("2"),), structured=2)]

    def test_metadata_added_in_place(self) -> None:
        """Metadata a hook writes into the result it hands back reaches the result and event."""

        def tag(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
            result.metadata["seen"] = True
            return result

        result = dispatch_sync(CALLS, TOOLS, middleware=[after_tool(tag)])
        assert result.metadata == {"c1": {"seen": True}}
        assert isinstance(result.events[-1], ToolCompleted)
        assert result.events[-1].metadata == {"seen": True}

    def test_rewritten_result(self) -> None:
        """A hook's new result is what the model reads."""

        def shout(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
            return ToolResult.success("LOUD", follow_up="later")

        result = dispatch_sync(CALLS, TOOLS, middleware=[after_tool(shout)])
        assert result.messages[0].content == "LOUD"
        assert result.messages[0].artifact is None
        assert result.follow_ups[0].content == (TextBlock("later"),)


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


def _answer(kind: str) -> Callable[[ToolCall, object], object]:
    def hook(call: ToolCall, env: object) -> object:
        if kind == "same":
            return call
        if kind == "adjusted":
            return msgspec.structs.replace(call, arguments={"a": 5})
        if kind == "allow":
            return Allow()
        if kind == "deny":
            return Deny("no")
        return Defer({"why": "later"})

    return hook


KINDS_OF_ANSWER = ["same", "adjusted", "allow", "deny", "defer"]
CHAINS = [(a,) for a in KINDS_OF_ANSWER] + [
    (a, b) for a in KINDS_OF_ANSWER for b in KINDS_OF_ANSWER if a not in ("deny", "defer")
]


class TestBeforeHookChains:
    """``dispatch_sync`` and ``dispatch`` agree on every chain of ``before_tool`` answers."""

    @pytest.mark.parametrize("chain", CHAINS, ids="-".join)
    @pytest.mark.anyio
    async def test_sync_matches_async(self, chain: tuple[str, ...]) -> None:
        """Same messages, events and deferred calls, whichever entry point ran the hooks."""
        middleware = [before_tool(_answer(kind)) for kind in chain]
        synced = dispatch_sync(CALLS, TOOLS, middleware=middleware)
        awaited = await dispatch(CALLS, TOOLS, middleware=middleware)
        assert synced == awaited
        if "deny" in chain:
            assert synced.messages[0].status == "denied"
        elif "defer" in chain:
            assert synced.deferred is not None
        else:
            assert synced.messages[0].content == ("6" if "adjusted" in chain else "2")

    @pytest.mark.anyio
    async def test_an_approval_covers_the_call_as_it_stood(self) -> None:
        """A hook approves the call (``env.approved``) and hands it back; a later hook
        changes its arguments: the approval covered the call as it was, so the changed
        call waits for approval under both entry points (``dispatch`` let it run)."""
        ran: list[int] = []

        @tool(approval_required=True)
        def pay(amount: int) -> int:
            """Pay."""
            ran.append(amount)
            return amount

        def approve(call: ToolCall, env: DispatchEnv) -> ToolCall:
            env.approved.add(call.id)
            return call

        def change(call: ToolCall, env: object) -> ToolCall:
            return msgspec.structs.replace(call, arguments={"amount": 9})

        middleware = [before_tool(approve), before_tool(change)]
        calls = [ToolCall("p1", "pay", '{"amount": 1}')]
        synced = dispatch_sync(calls, Registry.of(pay), middleware=middleware)
        awaited = await dispatch(calls, Registry.of(pay), middleware=middleware)
        assert synced == awaited
        assert synced.deferred is not None
        assert ["p1"] == [c.id for c in synced.deferred.approvals]
        assert [] == ran


THREE = [ToolCall(f"c{i}", "add", '{"a": 1}') for i in range(3)]


class TestTrivialLimits:
    """``max_tool_calls`` and the allow-list refuse exactly what they should, alone or with
    the stop checks beside them."""

    @pytest.mark.parametrize("cancellation", [None, Cancellation()])
    @pytest.mark.parametrize("deadline", [None, 60.0])
    @pytest.mark.parametrize("limit", [None, 0, 2])
    def test_max_tool_calls(
        self, limit: int | None, deadline: float | None, cancellation: Cancellation | None
    ) -> None:
        """The first ``limit`` calls run; the rest are answered with the limit reached."""
        policy = RunPolicy(max_tool_calls=limit, deadline=deadline)
        result = dispatch_sync(THREE, TOOLS, policy=policy, cancellation=cancellation)
        ran = 3 if limit is None else limit
        assert [m.status for m in result.messages] == ["ok"] * ran + ["error"] * (3 - ran)
        assert all("limit of" in m.content for m in result.messages[ran:])

    @pytest.mark.parametrize(
        ("allowlist", "fail_closed", "runs"),
        [
            (None, True, True),
            ({"add"}, True, True),
            ({"other"}, True, False),
            (set(), True, False),
            (set(), False, True),
            ({"other"}, False, False),
        ],
    )
    def test_allowlist(self, allowlist: set[str] | None, fail_closed: bool, runs: bool) -> None:
        """A listed tool runs; an unlisted one is unknown; empty denies all unless opted out."""
        policy = RunPolicy(allowlist=allowlist, fail_closed_allowlist=fail_closed)
        result = dispatch_sync(CALLS, TOOLS, policy=policy)
        assert (result.messages[0].status == "ok") is runs
        assert result.executed == (("c1",) if runs else ())


@tool(policy=ToolPolicy.classified().with_runtime(sandbox="required"))
def boxed(text: str) -> str:
    """Echo inside a sandbox."""
    return text


class TestToolPolicyMiddlewareRules:
    """Each rule still acts when only its own hooks are composed."""

    def test_no_rules_changes_nothing(self) -> None:
        """A middleware without rules answers as no middleware."""
        bare = dispatch_sync(CALLS, TOOLS)
        guarded = dispatch_sync(CALLS, TOOLS, middleware=[ToolPolicyMiddleware()])
        assert guarded == bare

    def test_result_bytes_only(self) -> None:
        """``enforce_result_bytes`` alone cuts the text the model reads."""
        calls = [ToolCall("c1", "boxed", {"text": "y" * 200})]
        guard = ToolPolicyMiddleware.enforce_result_bytes(40)
        result = dispatch_sync(calls, Registry([boxed]), middleware=[guard])
        assert len(result.messages[0].content.encode()) <= 40

    @pytest.mark.parametrize("sandboxed", [False, True])
    def test_sandbox_reads_the_workspace(self, sandboxed: bool) -> None:
        """``require_sandbox`` refuses outside a sandboxed workspace, runs inside one."""
        calls = [ToolCall("c1", "boxed", {"text": "hi"})]
        context = Context(values={Workspace: Workspace(sandboxed=sandboxed)})
        guard = ToolPolicyMiddleware.require_sandbox()
        result = dispatch_sync(calls, Registry([boxed]), middleware=[guard], context=context)
        assert result.messages[0].status == ("ok" if sandboxed else "denied")

    def test_deny_side_effects(self) -> None:
        """A denied side effect refuses the tool declaring it, whatever the workspace."""
        calls = [ToolCall("c1", "boxed", {"text": "hi"})]
        networked = attrs.evolve(boxed, policy=boxed.policy.with_side_effects(network=True))
        guard = ToolPolicyMiddleware.deny_side_effects("network")
        result = dispatch_sync(calls, Registry([networked]), middleware=[guard])
        assert result.messages[0].status == "denied"
        assert "network" in result.messages[0].content


class TestAdvertised:
    """``advertised`` restricts the call to the names given, in any collection."""

    @pytest.mark.parametrize("kind", [set, frozenset, tuple, list])
    def test_collections(self, kind: Callable[[list[str]], Collection[str]]) -> None:
        """A listed tool runs and an unlisted one is unknown, whatever the collection."""
        listed = kind(["add"])
        other = kind(["other"])
        for _ in range(2):  # the second time from the remembered set
            assert dispatch_sync(CALLS, TOOLS, advertised=listed).messages[0].status == "ok"
            refused = dispatch_sync(CALLS, TOOLS, advertised=other).messages[0]
            assert refused.status == "error"
            assert "Unknown tool" in refused.content


def _bad_content(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
    return ToolResult(content="abc")  # type: ignore[arg-type]


def _bad_structured(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
    return ToolResult(content=(TextBlock("ok"),), structured=object())


def _bad_metadata_in_place(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
    result.metadata["when"] = object()
    return result


class TestMalformedHookResults:
    """A malformed ``ToolResult`` from an ``after_tool`` hook aborts the batch naming the
    hook (a host bug), every call still answered and the result still encodable."""

    @pytest.mark.parametrize(
        ("hook", "field"),
        [
            (_bad_content, "content"),
            (_bad_structured, "structured"),
            (_bad_metadata_in_place, "metadata"),
        ],
    )
    def test_aborts_naming_the_hook(
        self, hook: Callable[[ToolCall, ToolResult, object], ToolResult], field: str
    ) -> None:
        """DispatchAborted says an after_tool hook returned the bad field."""
        with pytest.raises(DispatchAborted) as raised:
            dispatch_sync(CALLS, TOOLS, middleware=[after_tool(hook)])
        assert "after_tool" in raised.value.reason
        assert f"an after_tool hook returned a ToolResult whose `{field}`" in raised.value.reason
        result = raised.value.result
        assert [m.tool_call_id for m in result.messages] == ["c1"]
        assert result.messages[0].is_error
        assert msgspec.json.encode(result.messages)

    @pytest.mark.parametrize(
        ("returned", "says"),
        [
            (_Posing(ToolResult), "after_tool hooks return a ToolResult, got _Posing"),
            (ToolResult(content=(TextBlock(5),)), "malformed block or artifact"),  # type: ignore[arg-type]
            (ToolResult(content=(_Posing(TextBlock),)), "whose `content` is (_Posing(TextBlock),)"),  # type: ignore[arg-type]
        ],
        ids=["posing-result", "int-text", "posing-block"],
    )
    def test_aborts_naming_the_hook_whatever_is_malformed(
        self, returned: object, says: str
    ) -> None:
        """A hook's result posing as a ``ToolResult``, or holding a malformed or posing
        block, is the hook's fault (not the artifact store's)."""
        with pytest.raises(DispatchAborted) as raised:
            dispatch_sync(CALLS, TOOLS, middleware=[after_tool(lambda call, result, env: returned)])
        assert "after_tool hook" in raised.value.reason
        assert says in raised.value.reason
        assert "artifact store" not in raised.value.reason
        result = raised.value.result
        assert [m.tool_call_id for m in result.messages] == ["c1"]
        assert msgspec.json.encode(result)


class TestHandlerReturningAnAwaitable:
    """A handler that looks synchronous but returns an awaitable (``lambda e: q.put(e)``)
    lost every event in silence (a "never awaited" warning at best): the batch aborts
    and says to make the handler ``async def``; no tool runs after it."""

    @staticmethod
    def _handler() -> tuple[list[Event], Callable[[Event], object]]:
        seen: list[Event] = []

        async def record(event: Event) -> None:
            seen.append(event)

        return seen, lambda event: record(event)

    def test_dispatch_sync(self) -> None:
        seen, handler = self._handler()
        calls = [ToolCall("c1", "add", '{"a": 1}'), ToolCall("c2", "add", '{"a": 2}')]
        with pytest.raises(DispatchAborted, match="async def") as raised:
            dispatch_sync(calls, TOOLS, on_event=handler)
        assert [m.status for m in raised.value.result.messages] == ["ok", "interrupted"]
        assert seen == []
        # Nothing raised: the reason says what the handler returned (it read "raised").
        assert raised.value.reason.startswith("the on_event handler <lambda> failed: ")
        assert "it returned coroutine, which dispatch does not await" in raised.value.reason
        assert "raised" not in raised.value.reason

    @pytest.mark.anyio
    async def test_dispatch(self) -> None:
        seen, handler = self._handler()
        with pytest.raises(DispatchAborted, match="async def"):
            await dispatch(CALLS, TOOLS, on_event=handler)
        assert seen == []
