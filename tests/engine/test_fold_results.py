"""Folding a tool's result into its message: error results, follow-ups, metadata and
artifacts, attachments, and the byte limit on every message."""

from __future__ import annotations

import base64
import json

import attrs
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
    Artifact,
    ArtifactRef,
    Context,
    Deny,
    DirectoryArtifactStore,
    DispatchAborted,
    FatalToolError,
    FileBlock,
    ImageBlock,
    MemoryArtifactStore,
    Registry,
    RunPolicy,
    TextBlock,
    Tool,
    ToolCall,
    ToolMessage,
    ToolOutput,
    ToolPolicy,
    ToolResult,
    after_tool,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools._engine.env import DispatchEnv
from tinytools.events import (
    Event,
    ToolCompleted,
    ToolStarted,
)


async def _never_awaited() -> None:
    """What an artifact store's ``put`` returns when it is not awaited."""


def kinds(events: tuple[Event, ...]) -> list[str]:
    """The ``kind`` tag of each event."""
    return [json.loads(msgspec.json.encode(e))["kind"] for e in events]


@tool
def no_city(city: str) -> ToolResult:
    """Fail the way a tool that knows why does: with an error result."""
    ran.append(("no_city", city))
    return ToolResult.error(
        f"No city named {city}; send a capital.", structured={"city": city}, metadata={"ms": 3}
    )


@tool
async def no_city_async(city: str) -> ToolResult:
    """The same, async."""
    ran.append(("no_city_async", city))
    return ToolResult.error(f"No city named {city}; send a capital.")


class TestErrorResult:
    """A tool returning ``ToolResult.error`` was checked for its status only by a property
    test: it ran and answered, so its message is an error the model reads, word for word,
    and its end is ``ToolCompleted`` with ``is_error`` (not ``ToolFailed``: nothing raised)."""

    def test_answered_as_an_error_with_its_own_words(self) -> None:
        result = dispatch_sync([call("c", "no_city", '{"city": "Atlantis"}')], [no_city])
        assert [
            ToolMessage(
                tool_call_id="c",
                name="no_city",
                content="No city named Atlantis; send a capital.",
                is_error=True,
                artifact=ToolOutput(structured={"city": "Atlantis"}),
                status="error",
            )
        ] == list(result.messages)
        assert [
            ToolStarted(call_id="c", tool_name="no_city", arguments={"city": "Atlantis"}),
            ToolCompleted(call_id="c", tool_name="no_city", is_error=True, metadata={"ms": 3}),
        ] == list(result.events)
        assert (("c",), {"c": {"ms": 3}}) == (result.executed, result.metadata)
        assert [("no_city", "Atlantis")] == ran  # once: an error result is not retried

    @pytest.mark.anyio
    async def test_async_tool_under_await_dispatch(self) -> None:
        result = await dispatch([call("c", "no_city_async", {"city": "Atlantis"})], [no_city_async])
        [message] = result.messages
        assert (True, "error", "No city named Atlantis; send a capital.") == (
            message.is_error,
            message.status,
            message.content,
        )
        assert ["tool_started", "tool_completed"] == kinds(result.events)
        assert isinstance(result.events[-1], ToolCompleted)
        assert result.events[-1].is_error


class TestFold:
    def test_follow_up_metadata_artifacts(self) -> None:
        """Follow-ups and metadata are collected; artifacts become store references."""
        store = MemoryArtifactStore()
        context = Context(run_id="r")
        result = dispatch_sync([call("c", "report")], TOOLS, artifacts=store, context=context)
        [message] = result.messages
        assert "done" == message.content
        assert isinstance(message.artifact, ToolOutput)
        [ref] = message.artifact.artifacts
        assert b"a,b\n1,2\n" == store.get(ref.uri).data  # type: ignore[union-attr]
        assert {"c": {"ms": 5}} == result.metadata
        assert "Now summarise the report." == result.follow_ups[0].content[0].text  # type: ignore[union-attr]

    def test_directory_store(self, tmp_path: object) -> None:
        """The directory store writes each artifact under run/call and keeps a file URI."""
        store = DirectoryArtifactStore(tmp_path)  # type: ignore[arg-type]
        result = dispatch_sync(
            [call("../c", "report")], TOOLS, artifacts=store, context=Context(run_id="r")
        )
        [ref] = result.messages[0].artifact.artifacts  # type: ignore[union-attr]
        assert ref.uri.startswith("file://")
        assert ref.uri.endswith("/r/_c/r.csv")

    @pytest.mark.parametrize(
        ("returned", "says"),
        [
            (lambda: None, "its put() returned NoneType"),
            (lambda: "memory://r/c/r.csv", "its put() returned str"),
            (lambda: _never_awaited(), "its put() returned coroutine"),
            (
                lambda: ArtifactRef("r.csv", "text/csv", "memory://x", "8"),  # type: ignore[arg-type]
                "Expected `int`, got `str` - at `$.size`",
            ),
            (
                lambda: ArtifactRef("r.csv", "text/csv", object(), 8),  # type: ignore[arg-type]
                "Encoding objects of type object is unsupported",
            ),
        ],
        ids=["none", "str", "coroutine", "size-str", "uri-object"],
    )
    def test_a_store_answering_without_a_reference_aborts_with_every_call_answered(
        self, returned: object, says: str
    ) -> None:
        """Defect: what ``put`` returned went into the message as it was: a result holding
        ``None`` or a coroutine (which then never ran) as its artifact reference, or one
        that no longer encodes. A wrong answer found once the tool ran aborts the batch,
        as a failing store does, every call answered and the result encoding."""

        class Store:
            def put(self, run_id: str, call_id: str, artifact: Artifact) -> object:
                return returned()  # type: ignore[operator]

        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(
                [call("c", "report"), call("a", "add", '{"a": 1}')], TOOLS, artifacts=Store()
            )
        # The store raised nothing: the reason says what it returned (it read "raised").
        assert info.value.reason.startswith("the artifact store failed: its put() returned")
        assert "raised" not in info.value.reason
        assert isinstance(info.value.__cause__, TypeError)
        assert says in str(info.value.__cause__)
        assert "return ArtifactRef(name, media_type, uri, size)" in str(info.value.__cause__)
        lost, skipped = info.value.result.messages
        assert "ran, but its result was lost" in lost.content
        assert "interrupted" == skipped.status
        assert [] == ran  # the abort stops the batch: no call starts after it
        msgspec.json.encode(info.value.result)

    def test_truncation(self) -> None:
        """Content over max_result_bytes is cut on a character boundary with a marker."""
        result = dispatch_sync([call("c", "big")], TOOLS, policy=RunPolicy(max_result_bytes=120))
        content = result.messages[0].content
        assert len(content.encode()) <= 120
        assert content.startswith("é")
        assert "[truncated: 1000 bytes, showing the first" in content

    def test_return_of_an_unhashable_type_is_that_calls_error(self) -> None:
        """A value whose type cannot even be hashed is an error message for its call,
        never an abort of the batch."""

        class Unhashable(type):
            __hash__ = None  # type: ignore[assignment]

        class Odd(metaclass=Unhashable):
            pass

        @tool
        def odd() -> object:
            """Return what no JSON can carry."""
            return Odd()

        result = dispatch_sync([call("c", "odd", "{}"), call("d", "add", '{"a": 1}')], [odd, add])
        first, second = result.messages
        assert (True, "error") == (first.is_error, first.status)
        assert "Tool `odd` returned a bad value" in first.content
        assert "2" == second.content


def _wide_tool(limit: int | None = None) -> Tool[..., object]:
    """A tool whose schema alone is about 2 KB, and which returns 5,000 bytes."""
    schema = {
        "type": "object",
        "properties": {f"field_{i}": {"type": "string", "maxLength": 3} for i in range(60)},
        "additionalProperties": False,
    }
    policy = ToolPolicy().with_runtime(max_result_bytes=limit)
    return Tool.from_schema(
        "wide", "Take many fields.", schema, fn=lambda **_: "x" * 5000, policy=policy
    )


#: A one-pixel PNG image.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)


@tool
def chart(words: str = "the chart") -> ToolResult:
    """Draw a chart and write its report."""
    return ToolResult.success(
        [
            TextBlock(words),
            ImageBlock("image/png", PNG),
            FileBlock("r.pdf", "application/pdf", b"%PDF-1.7"),
        ]
    )


class TestAttachments:
    """A result's images and files reach its message as ``attachments``, which each
    provider module sends in its own form; the content names each where it stood."""

    def test_attached_in_order(self) -> None:
        """The message carries the images and files in order, and its text names them;
        it encodes and decodes with them."""
        result = dispatch_sync([call("c", "chart")], Registry.of(chart))
        [message] = result.messages
        assert "the chart\n[image image/png]\n[file r.pdf (application/pdf)]" == message.content
        image, document = message.attachments
        assert (ImageBlock("image/png", PNG), "r.pdf") == (image, document.name)  # type: ignore[union-attr]
        assert message == msgspec.json.decode(msgspec.json.encode(message), type=ToolMessage)

    def test_text_only(self) -> None:
        """A result of text alone has no attachments."""
        assert () == dispatch_sync([call("c", "add", '{"a": 1}')], TOOLS).messages[0].attachments

    def test_limit_bounds_the_text(self) -> None:
        """``max_result_bytes`` cuts the text the model reads; the attachments, which a
        provider sends beside it (and a model reads by their pixels, not their bytes), are
        kept whole, run limit and tool limit alike."""
        long = call("c", "chart", json.dumps({"words": "x" * 500}))
        limited = ToolPolicy().with_runtime(max_result_bytes=60)
        for policy, tools in (
            (RunPolicy(max_result_bytes=60), Registry.of(chart)),
            (RunPolicy(), Registry.of(attrs.evolve(chart, policy=limited))),
        ):
            [message] = dispatch_sync([long], tools, policy=policy).messages
            assert 60 >= len(message.content.encode())
            assert "[truncated: " in message.content
            assert 2 == len(message.attachments)

    def test_added_by_a_hook(self) -> None:
        """An image an ``after_tool`` hook adds is attached like a tool's own."""

        @after_tool
        def screenshot(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
            image = ImageBlock("image/png", url="https://example.com/shot.png")
            return msgspec.structs.replace(result, content=(*result.content, image))

        result = dispatch_sync([call("c", "add", '{"a": 1}')], TOOLS, middleware=[screenshot])
        [message] = result.messages
        assert "2\n[image image/png https://example.com/shot.png]" == message.content
        assert (ImageBlock("image/png", url="https://example.com/shot.png"),) == (
            message.attachments
        )

    @pytest.mark.parametrize(
        ("block", "says"),
        [
            (ImageBlock("png", PNG), "has the media_type 'png', which is no media type"),
            (ImageBlock("application/pdf", b"%PDF"), "which is no image type"),
            (ImageBlock("image/png"), "has neither data nor a url"),
            (FileBlock("r.pdf", "application/pdf"), "has neither data nor a uri"),
        ],
        ids=repr,
    )
    def test_malformed_block_is_the_calls_error(self, block: object, says: str) -> None:
        """An image or file no provider could use is its call's error, saying what is
        wrong; the batch's other calls are answered as usual."""

        @tool
        def broken() -> ToolResult:
            """Return a malformed block."""
            return ToolResult(content=(TextBlock("see"), block))  # type: ignore[arg-type]

        result = dispatch_sync(
            [call("c", "broken"), call("d", "add", '{"a": 1}')], Registry.of(broken, add)
        )
        failed, added = result.messages
        assert ("error", ()) == (failed.status, failed.attachments)
        assert says in failed.content
        assert "2" == added.content


class TestResultBytes:
    """``RunPolicy.max_result_bytes`` bounds every message: a tool's result and every
    answer dispatch writes itself (refusals, suggestions, denials, interruptions), each
    cut with the same marker."""

    LIMIT = 60

    @staticmethod
    def _deny(call: ToolCall, env: DispatchEnv) -> object:
        return Deny("Refused by the operator: " + "this call may not run today. " * 10)

    @pytest.mark.parametrize(
        ("calls", "middleware"),
        [
            ([ToolCall("c", "wide", {"field_1": "too long"})], ()),
            ([ToolCall("c", "nope_" + "x" * 40, {"text": "y" * 500})], ()),
            ([ToolCall("c", "wide", '{"field_1": ')], ()),
            ([ToolCall("i" * 100, "wide", {}), ToolCall("i" * 100, "wide", {})], ()),
            ([ToolCall("c", "wide", {})], ("deny",)),
        ],
        ids=["invalid arguments", "unknown name", "malformed text", "repeated id", "denied"],
    )
    def test_what_dispatch_writes(self, calls: list[ToolCall], middleware: tuple[str, ...]) -> None:
        """Each message fits the limit, in UTF-8 bytes, and says it was cut."""
        hooks = [before_tool(self._deny)] if middleware else []
        result = dispatch_sync(
            calls,
            Registry.of(_wide_tool(), add),
            policy=RunPolicy(max_result_bytes=self.LIMIT),
            middleware=hooks,
        )
        for message in result.messages:
            assert self.LIMIT >= len(message.content.encode())
            assert "[truncated: " in message.content

    def test_interrupted_calls(self) -> None:
        """A call the batch's end cut off is answered within the limit too."""

        @tool
        def halt() -> str:
            """Abort the batch."""
            raise FatalToolError("stop")

        limit = 20  # below "Tool call not run: the batch was aborted."
        calls = [ToolCall("1", "halt", {}), ToolCall("2", "add", {"a": 1})]
        with pytest.raises(DispatchAborted) as info:
            dispatch_sync(calls, Registry.of(halt, add), policy=RunPolicy(max_result_bytes=limit))
        assert "interrupted" == info.value.result.messages[1].status
        for message in info.value.result.messages:
            assert limit >= len(message.content.encode())

    def test_the_run_limit_bounds_a_tool_with_a_larger_own_limit(self) -> None:
        """A tool's own ``max_result_bytes`` only ever makes its limit stricter: the run's
        limit bounds every message (a tool's larger limit overrode it)."""
        result = dispatch_sync(
            [ToolCall("c", "wide", {})],
            Registry.of(_wide_tool(limit=4000)),
            policy=RunPolicy(max_result_bytes=300),
        )
        assert 300 >= len(result.messages[0].content.encode())

    def test_a_tools_own_stricter_limit_bounds_its_refusals_too(self) -> None:
        """A tool's own limit bounds what dispatch writes about its calls, with or without
        a run limit."""
        for policy in (RunPolicy(), RunPolicy(max_result_bytes=5000)):
            result = dispatch_sync(
                [ToolCall("a", "wide", {}), ToolCall("b", "wide", {"field_1": "long"})],
                Registry.of(_wide_tool(limit=100)),
                policy=policy,
            )
            assert ["ok", "error"] == [m.status for m in result.messages]
            for message in result.messages:
                assert 100 >= len(message.content.encode())
