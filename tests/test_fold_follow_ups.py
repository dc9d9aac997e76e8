"""Tests for `tinytools._fold` on a tool's follow-up: encodable whatever the tool put in it."""

from __future__ import annotations

import msgspec
import pytest

from tinytools import (
    Registry,
    RunPolicy,
    ToolCall,
    ToolResult,
    dispatch_sync,
    tool,
)
from tinytools._wire import ContentBlock, FileBlock, ImageBlock, JsonBlock, TextBlock

returned: list[tuple[ContentBlock, ...]] = []


@tool
def shot() -> ToolResult:
    """Answer with the follow-up the test put in ``returned``."""
    return ToolResult.success("see below", follow_up=returned[-1])


TOOLS = Registry.of(shot)


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
