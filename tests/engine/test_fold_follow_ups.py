"""Tests for `tinytools._engine.fold` on a tool's follow-up: cut to the byte limit as its call's
message is (``fold.bounded``), and encodable whatever the tool put in it."""

from __future__ import annotations

import msgspec
import pytest

from tinytools import (
    Registry,
    RunPolicy,
    ToolCall,
    ToolPolicy,
    ToolPolicyMiddleware,
    ToolResult,
    dispatch_sync,
    tool,
)
from tinytools._wire import ContentBlock, FileBlock, ImageBlock, JsonBlock, TextBlock

LONG = "OCR " * 50_000
IMAGE = ImageBlock("image/png", data=b"\x89PNG" + b"\0" * 5_000)
FILE = FileBlock("scan.pdf", "application/pdf", uri="file:///scan.pdf")

returned: list[tuple[ContentBlock, ...]] = []


@tool
def shot() -> ToolResult:
    """Answer with the follow-up the test put in ``returned``."""
    return ToolResult.success("see below", follow_up=returned[-1])


@tool(policy=ToolPolicy().with_runtime(max_result_bytes=100))
def shot_own() -> ToolResult:
    """Same, with a byte limit of its own."""
    return ToolResult.success("see below", follow_up=returned[-1])


TOOLS = Registry.of(shot, shot_own)


def follow_up(
    blocks: tuple[ContentBlock, ...],
    name: str = "shot",
    limit: int | None = None,
    middleware: tuple[object, ...] = (),
) -> tuple[ContentBlock, ...]:
    """The one follow-up of a call of ``name`` returning ``blocks``."""
    returned.append(blocks)
    result = dispatch_sync(
        [ToolCall("c", name, {})],
        TOOLS,
        policy=RunPolicy(max_result_bytes=limit),
        middleware=middleware,
    )
    [one] = result.follow_ups
    msgspec.json.encode(result)  # every result encodes
    return one.content


def text_bytes(blocks: tuple[ContentBlock, ...]) -> int:
    """The UTF-8 bytes of the text the limit counts."""
    return sum(len(b.text.encode()) for b in blocks if isinstance(b, TextBlock))


class TestCutToTheLimit:
    def test_the_runs_limit(self) -> None:
        """``RunPolicy.max_result_bytes`` cuts a follow-up's text, marker included, to the
        text ``ToolPolicyMiddleware.enforce_result_bytes`` cuts it to."""
        cut = follow_up((TextBlock(LONG),), limit=100)
        assert 100 >= text_bytes(cut)
        assert cut[0].text.startswith("OCR OCR")  # type: ignore[union-attr]
        assert "[truncated: 200000 bytes" in cut[0].text  # type: ignore[union-attr]
        middleware = (ToolPolicyMiddleware().enforce_result_bytes(100),)
        assert follow_up((TextBlock(LONG),), middleware=middleware) == cut

    def test_the_tools_own_limit(self) -> None:
        """A tool's own ``max_result_bytes`` cuts its follow-up, and the stricter of it and
        the run's limit holds."""
        assert 100 >= text_bytes(follow_up((TextBlock(LONG),), name="shot_own"))
        assert 100 >= text_bytes(follow_up((TextBlock(LONG),), name="shot_own", limit=5_000))
        assert 50 >= text_bytes(follow_up((TextBlock(LONG),), name="shot_own", limit=50))

    def test_text_and_json_blocks_cut_together_images_and_files_kept(self) -> None:
        """The text and JSON blocks, rendered as the model reads them, are cut into one
        text block where the first of them stood; image and file blocks are neither
        counted nor cut, and keep their places."""
        blocks = (IMAGE, TextBlock("a" * 80), FILE, JsonBlock({"k": "b" * 80}), TextBlock("c"))
        cut = follow_up(blocks, limit=100)
        assert [ImageBlock, TextBlock, FileBlock] == [type(b) for b in cut]
        assert (IMAGE, FILE) == (cut[0], cut[2])
        assert 100 >= text_bytes(cut)
        assert cut[1].text.startswith("a" * 40)  # type: ignore[union-attr]

    def test_within_the_limit_unchanged(self) -> None:
        """A follow-up whose text fits is returned as the tool made it, images and all."""
        blocks = (TextBlock("short"), IMAGE, JsonBlock([1, 2]))
        assert blocks == follow_up(blocks, limit=100)


class TestEncodable:
    @pytest.mark.parametrize(
        ("block", "escaped"),
        [
            (TextBlock("text of scan\udc80.png"), TextBlock("text of scan\\udc80.png")),
            (JsonBlock({"file": "scan\udc80.png"}), TextBlock('{"file":"scan\\\\udc80.png"}')),
            (
                ImageBlock("image/png", url="https://x/\udc80"),
                ImageBlock("image/png", url="https://x/\\udc80"),
            ),
            (
                FileBlock("scan\udc80.pdf", uri="file:///\udc80"),
                FileBlock("scan\\udc80.pdf", uri="file:///\\udc80"),
            ),
        ],
        ids=["text", "json", "image url", "file name and uri"],
    )
    def test_a_lone_surrogate_is_escaped(self, block: ContentBlock, escaped: ContentBlock) -> None:
        """A lone surrogate in a follow-up block's text is written as its escape, as in
        the message's content, so the result encodes."""
        assert (escaped,) == follow_up((block,))
