"""``dispatch`` and ``dispatch_sync`` end to end: every call answered in order, the inputs
they accept (iterators, subclasses of ``ToolCall`` and ``str``), and the run policy's
limits checked when made."""

from __future__ import annotations

import msgspec
import pytest

from tests.engine.dispatch_tools import (
    TOOLS,
    _reset,  # noqa: F401 (autouse: clears `ran`)
    call,
    ran,
)
from tinytools import (
    Artifact,
    ArtifactRef,
    Context,
    DeferredToolResults,
    Registry,
    RunPolicy,
    ToolCall,
    ToolOutput,
    dispatch,
    dispatch_sync,
)
from tinytools.events import (
    ToolCompleted,
    ToolStarted,
)


class _NoStore:
    """An artifact store never reached (what it stores is not the point)."""

    def put(self, run_id: str, call_id: str, artifact: Artifact) -> ArtifactRef:
        raise AssertionError("never called")


class _PutIsNoFunction:
    """An artifact store whose ``put`` is an attribute that cannot be called."""

    put = 3


class _AsyncPut:
    """An artifact store whose ``put`` is a coroutine function (never awaited by fold)."""

    async def put(self, run_id: str, call_id: str, artifact: Artifact) -> object:
        raise AssertionError("never called")


class TestAnswers:
    def test_every_call_answered_in_order(self) -> None:
        """Each call gets one message in call order, whatever happened to it."""
        calls = [call("1", "add", '{"a": 1}'), call("2", "nope"), call("3", "add", "{")]
        result = dispatch_sync(calls, TOOLS)
        assert ["1", "2", "3"] == [m.tool_call_id for m in result.messages]
        assert ["ok", "error", "error"] == [m.status for m in result.messages]
        assert ("1",) == result.executed

    def test_events_in_order(self) -> None:
        """A plain call emits started then completed, each with its call id."""
        result = dispatch_sync([call("c", "add", '{"a": 2}')], TOOLS)
        assert [
            ToolStarted(call_id="c", tool_name="add", arguments={"a": 2, "b": 1}),
            ToolCompleted(call_id="c", tool_name="add"),
        ] == list(result.events)

    def test_value_wrapped(self) -> None:
        """A plain return value becomes JSON text with its structured value on the message."""
        [message] = dispatch_sync([call("c", "add", {"a": 2, "b": 2})], TOOLS).messages
        assert ("4", ToolOutput(structured=4)) == (message.content, message.artifact)


class TestInputs:
    def test_calls_as_an_iterator(self) -> None:
        """Calls given as a one-shot iterator are all answered, on every path."""
        calls = [call("1", "add", '{"a": 1}'), call("2", "nope")]
        assert ["1", "2"] == [m.tool_call_id for m in dispatch_sync(iter(calls), TOOLS).messages]
        gated = [call("1", "add", '{"a": 1}'), call("2", "pay", '{"amount": 1}')]
        result = dispatch_sync(
            iter(gated), TOOLS, on_deferred=lambda requests: requests.approve_all()
        )
        assert ["1", "2"] == [m.tool_call_id for m in result.messages]

    @pytest.mark.parametrize(
        ("advertised", "expected"),
        [("add", r"not one string; pass \['add'\]"), (3, "tool names .* got int")],
        ids=["str", "int"],
    )
    def test_advertised_that_is_not_names(self, advertised: object, expected: str) -> None:
        """A single name (read as its letters, it would deny every tool) is refused at once."""
        with pytest.raises(TypeError, match=expected):
            dispatch_sync([call("c", "add", '{"a": 1}')], TOOLS, advertised=advertised)  # type: ignore[arg-type]
        assert [] == ran

    @pytest.mark.parametrize(
        "keywords",
        [
            {},
            {"policy": RunPolicy(max_tool_calls=2)},
            {"policy": RunPolicy(max_tool_calls=1)},
            {"approvals": DeferredToolResults().approve("1").approve("2")},
        ],
        ids=["plain", "limited", "over-the-limit", "resumed"],
    )
    @pytest.mark.parametrize("fresh", [False, True], ids=["known-registry", "new-registry"])
    @pytest.mark.anyio
    async def test_calls_of_a_toolcall_subclass_run(
        self, keywords: dict[str, object], fresh: bool
    ) -> None:
        """A call of a ``ToolCall`` subclass is a call like any other, under every
        admission (a repeated id, a limit, a resume, a registry's first batch): it runs, or
        is refused for what it is — never answered as a cancelled batch."""

        class ProviderCall(ToolCall):
            pass

        first, second = ProviderCall("1", "add", '{"a": 1}'), ProviderCall("2", "add", '{"a": 2}')
        for batch in ([first], [first, second], [first, second, first]):
            plain = [ToolCall(c.id, c.name, c.arguments) for c in batch]
            expected = dispatch_sync(plain, TOOLS, **keywords)  # type: ignore[arg-type]
            registry = Registry.of(*TOOLS.tools()) if fresh else TOOLS
            for result in (
                dispatch_sync(batch, registry, **keywords),  # type: ignore[arg-type]
                await dispatch(batch, registry, **keywords),  # type: ignore[arg-type]
            ):
                assert [(m.tool_call_id, m.status, m.content) for m in result.messages] == [
                    (m.tool_call_id, m.status, m.content) for m in expected.messages
                ]
                assert result.executed == expected.executed

    @pytest.mark.parametrize(
        ("name", "text", "status"),
        [
            ("add", '{"a": 1}', "ok"),
            ("add", "{a: 1,}", "ok"),  # repaired
            ("add", '{"a": "x"}', "error"),
            ("add", "{", "error"),
            ("lookup", '{"q": 1}', None),  # an external tool: deferred
            ("nope", '{"a": 1}', "error"),
        ],
    )
    @pytest.mark.anyio
    async def test_arguments_as_a_str_subclass_are_read_as_their_text(
        self, name: str, text: str, status: str | None
    ) -> None:
        """Raw arguments of a ``str`` subclass (an SDK's own string type) are the text they
        hold: dispatch raised msgspec's TypeError, or answered with events msgspec could
        not encode. Each call is answered as its plain text's is, and the result encodes."""

        class SdkText(str):
            pass

        expected = dispatch_sync([call("1", name, text)], TOOLS)
        for result in (
            dispatch_sync([call("1", name, SdkText(text))], TOOLS),
            await dispatch([call("1", name, SdkText(text))], TOOLS),
        ):
            assert [m.status for m in result.messages] == ([status] if status else [])
            assert result.messages == expected.messages
            assert msgspec.json.encode(result) == msgspec.json.encode(expected)

    @pytest.mark.anyio
    async def test_an_object_posing_as_a_toolcall_is_refused(self) -> None:
        """An object whose ``__class__`` says ``ToolCall`` is not one (msgspec cannot
        encode it, nor rebuild it for a rewrite): dispatch refuses it up front, saying
        what it got, and nothing runs."""

        class Posing:
            __class__ = ToolCall  # type: ignore[assignment]

            def __init__(self, call_id: str, name: str, arguments: str) -> None:
                self.id, self.name, self.arguments, self.invalid = call_id, name, arguments, None

        for batch in (
            [Posing("1", "add", '{"a": 1}')],
            [call("0", "add"), Posing("1", "lookup", "{}")],
        ):
            with pytest.raises(TypeError, match="dispatch takes ToolCall values, got Posing"):
                dispatch_sync(batch, TOOLS)  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="dispatch takes ToolCall values, got Posing"):
                await dispatch(batch, TOOLS)  # type: ignore[arg-type]
        assert ran == []

    @pytest.mark.parametrize(
        ("keyword", "value", "says"),
        [
            ("on_event", 5, "on_event must be a function of the event"),
            ("on_event", "print", "on_event must be a function of the event"),
            ("on_deferred", 5, "on_deferred must be a function of the deferred calls"),
            ("cancellation", True, "cancellation must be a Cancellation"),
            ("cancellation", 5, "cancellation must be a Cancellation"),
        ],
    )
    @pytest.mark.anyio
    async def test_host_callbacks_of_the_wrong_kind_are_refused_before_anything_runs(
        self, keyword: str, value: object, says: str
    ) -> None:
        """A handler that cannot be called (or a cancellation that is no handle) is a
        TypeError saying what to pass, before any tool runs: a non-callable ``on_event``
        let the first call run and then aborted the batch, and a bad ``cancellation`` was
        an AttributeError."""
        calls = [call("1", "add", '{"a": 1}'), call("2", "pay", '{"amount": 1}')]
        with pytest.raises(TypeError, match=says):
            dispatch_sync(calls, TOOLS, **{keyword: value})  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=says):
            await dispatch(calls, TOOLS, **{keyword: value})  # type: ignore[arg-type]
        assert [] == ran

    @pytest.mark.parametrize(
        ("store", "says"),
        [
            (object(), "got object, and it has no `put` method"),
            ("/tmp/artifacts", "got str, and it has no `put` method"),
            (_PutIsNoFunction(), "its `put` is int, which cannot be called"),
            (_AsyncPut(), "its `put` is async, which dispatch does not await"),
        ],
        ids=["object", "a path", "put-not-callable", "async-put"],
    )
    @pytest.mark.anyio
    async def test_an_artifact_store_without_a_put_to_call_is_refused_before_anything_runs(
        self, store: object, says: str
    ) -> None:
        """Defect: a store without a usable ``put`` was found only once a tool had returned
        artifacts, after the batch's tools ran (their side effects done, that tool's result
        lost in the abort); now a TypeError saying what to pass, before any tool runs."""
        calls = [call("1", "add", '{"a": 1}'), call("2", "report")]
        refused = "artifacts must be an artifact store"
        with pytest.raises(TypeError, match=refused) as synchronous:
            dispatch_sync(calls, TOOLS, artifacts=store)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=refused) as awaited:
            await dispatch(calls, TOOLS, artifacts=store)  # type: ignore[arg-type]
        for info in (synchronous, awaited):
            assert says in str(info.value)
            assert "MemoryArtifactStore()" in str(info.value)
        assert [] == ran

    @pytest.mark.parametrize("context", [{"store": {"k": "v"}}, "run-1"], ids=["dict", "str"])
    @pytest.mark.anyio
    async def test_a_context_that_is_no_context_is_refused_before_anything_runs(
        self, context: object
    ) -> None:
        """An injecting tool, a ledger or an artifact store reads the context: one that is
        no ``Context`` is a TypeError saying how to make one (it was an AttributeError, or
        blamed on the ledger or the store), before any tool runs."""

        class Ledger:
            def started(self, *args: object) -> None:
                ran.append(("started", args))

            def settled(self, *args: object) -> None:
                pass

            def unresolved(self, run_id: str | None = None) -> tuple[()]:
                return ()

        for calls, options in (
            ([call("1", "stored", '{"key": "k"}')], {}),
            ([call("1", "add", '{"a": 1}')], {"ledger": Ledger()}),
            # the store is told the context's run_id: it was blamed on the store, the
            # tool having run and its result lost
            ([call("1", "add", '{"a": 1}'), call("2", "report")], {"artifacts": _NoStore()}),
        ):
            with pytest.raises(TypeError, match="context must be a Context"):
                dispatch_sync(calls, TOOLS, context=context, **options)  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="context must be a Context"):
                await dispatch(calls, TOOLS, context=context, **options)  # type: ignore[arg-type]
        assert [] == ran

    @pytest.mark.parametrize("name", [None, 3], ids=["none", "int"])
    @pytest.mark.anyio
    async def test_a_call_whose_name_is_no_str_is_refused_saying_so(self, name: object) -> None:
        """A hand-built call with a name that is no str (msgspec does not check fields at
        construction) is a TypeError naming the call, before any tool runs (it was
        "'NoneType' object is not subscriptable" from the suggestion index)."""
        calls = [call("1", "add", '{"a": 1}'), ToolCall("2", name, "{}")]  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"ToolCall.name must be a str, got .* in call '2'"):
            dispatch_sync(calls, TOOLS)
        with pytest.raises(TypeError, match=r"ToolCall.name must be a str, got .* in call '2'"):
            await dispatch(calls, TOOLS)
        assert [] == ran

    def test_cancellation_handle_reused(self) -> None:
        """A handle reused across batches does not accumulate the batches' callbacks."""
        from tinytools import Cancellation

        handle = Cancellation()
        context = Context(store={"k": "v"})
        for _ in range(20):
            dispatch_sync(
                [call("c", "stored", '{"key": "k"}')], TOOLS, context=context, cancellation=handle
            )
        # A leaked callback has no visible effect (its call is over); only the handle's
        # list of callbacks shows the leak, so the test reads it.
        assert [] == handle._callbacks


class TestRunPolicyLimits:
    @pytest.mark.parametrize("field", ["deadline", "tool_timeout"])
    @pytest.mark.parametrize(
        "value", [0, -1, float("inf"), float("nan"), True, "1", 10**400], ids=lambda v: repr(v)[:20]
    )
    def test_bad_seconds(self, field: str, value: object) -> None:
        """A time limit is a finite number of seconds > 0; the error names the field (an
        int past float range too: dispatch raised OverflowError adding it to the clock)."""
        with pytest.raises(ValueError, match=f"{field} must be a finite number of seconds > 0"):
            RunPolicy(**{field: value})  # type: ignore[arg-type]

    @pytest.mark.parametrize("value", [0, -1, 1.5, True, "1"], ids=repr)
    def test_bad_result_bytes(self, value: object) -> None:
        """A result limit is an int > 0 (a float would later fail to cut the text)."""
        with pytest.raises(ValueError, match="max_result_bytes must be an int > 0"):
            RunPolicy(max_result_bytes=value)  # type: ignore[arg-type]

    def test_good_limits(self) -> None:
        """Positive limits, or None, are accepted as given."""
        policy = RunPolicy(deadline=1.5, tool_timeout=2, max_result_bytes=10)
        assert (1.5, 2, 10) == (policy.deadline, policy.tool_timeout, policy.max_result_bytes)
