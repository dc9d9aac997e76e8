"""Tests for `tinytools._wire`."""

from __future__ import annotations

import dataclasses

import msgspec
import pytest

from tinytools import (
    FileBlock,
    ImageBlock,
    JsonBlock,
    TextBlock,
    ToolCall,
    ToolMessage,
    ToolResult,
)
from tinytools._wire import wrap_return


@dataclasses.dataclass
class Weather:
    city: str
    celsius: float


class TestToolCall:
    def test_round_trip(self) -> None:
        """Calls with decoded or raw arguments survive a JSON round trip unchanged."""
        for call in (
            ToolCall("c1", "search", {"q": "x"}),
            ToolCall("c2", "search", '{"q": ', invalid="truncated"),
        ):
            assert call == msgspec.json.decode(msgspec.json.encode(call), type=ToolCall)


class TestWrapReturn:
    def test_string_is_text(self) -> None:
        """A returned string becomes one text block and no structured value."""
        assert ToolResult(content=(TextBlock("sunny"),)) == wrap_return("sunny")

    def test_value_is_json_and_structured(self) -> None:
        """Any encodable value becomes compact JSON text plus `structured`."""
        value = Weather("Paris", 21.5)
        result = wrap_return(value)
        assert (TextBlock('{"city":"Paris","celsius":21.5}'),) == result.content
        assert value is result.structured
        assert (TextBlock("null"),) == wrap_return(None).content

    def test_result_kept(self) -> None:
        """A ToolResult is returned as it is."""
        result = ToolResult.error("no such city")
        assert result is wrap_return(result)

    def test_unencodable_named(self) -> None:
        """A value JSON cannot encode is refused, naming its type (with no article to get
        wrong: "a int") and the fix."""
        with pytest.raises(
            TypeError, match=r"tool returned a value of type `object`.*return a str"
        ):
            wrap_return(object())
        with pytest.raises(TypeError, match=r"tool returned a value of type `int`, which cannot"):
            wrap_return(10**5000)


class TestToolResult:
    def test_helpers(self) -> None:
        """`success` and `error` build results with text blocks, follow-ups and metadata."""
        ok = ToolResult.success("done", follow_up="look again", metadata={"ms": 3})
        assert (TextBlock("done"),) == ok.content
        assert (TextBlock("look again"),) == ok.follow_up
        assert ok.metadata == {"ms": 3}
        assert not ok.is_error
        assert ToolResult.error("bad").is_error

    def test_blocks_tagged(self) -> None:
        """Content blocks encode with a `type` tag and decode back to the same blocks."""
        result = ToolResult.success([TextBlock("a"), JsonBlock({"b": 1})])
        data = msgspec.json.encode(result)
        assert b'"type":"text"' in data
        assert result == msgspec.json.decode(data, type=ToolResult)

    @pytest.mark.parametrize(
        ("block", "says"),
        [
            (ImageBlock("image", b"x"), "media_type 'image', which is no media type"),
            (ImageBlock("image/png\n", b"x"), "which is no media type"),
            (ImageBlock("image/\udc80", b"x"), "which is no media type"),
            (ImageBlock("text/html", b"x"), "which is no image type; give image/png"),
            (ImageBlock("image/png"), "has neither data nor a url"),
            (ImageBlock("image/png", url=""), "has neither data nor a url"),
            (FileBlock("a.pdf", "application/pdf"), "has neither data nor a uri"),
            (FileBlock("a.pdf", "pdf", b"%PDF"), "which is no media type"),
        ],
        ids=repr,
    )
    def test_unusable_image_or_file_refused(self, block: object, says: str) -> None:
        """An image or file no model could be sent is refused, in content or follow-up,
        naming the block and what to give instead."""
        for field in ("content", "follow_up"):
            result = ToolResult(**{field: (TextBlock("see"), block)})  # type: ignore[arg-type]
            with pytest.raises(TypeError, match=rf"`{field}\[1\]` \(\w+Block\) .*{says}"):
                wrap_return(result)

    @pytest.mark.parametrize(
        "block",
        [
            ImageBlock("image/png", b"\x89PNG"),
            ImageBlock("IMAGE/SVG+XML", url="https://example.com/a.svg"),
            FileBlock("notes.txt", "text/plain; charset=utf-8", b"x"),
            FileBlock(
                "a",
                "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                uri="s3://b/a",
            ),
        ],
        ids=repr,
    )
    def test_usable_image_or_file_kept(self, block: object) -> None:
        """Any ``type/subtype`` (parameters allowed), with data or a reference, is kept."""
        result = ToolResult(content=(block,))  # type: ignore[arg-type]
        assert result is wrap_return(result)

    def test_cannot_be_subclassed(self) -> None:
        """A subclass's results were answered as their JSON dump (an error as "ok") on the
        plain path and as results where a hook saw them: subclassing is refused, saying
        what to return instead."""
        with pytest.raises(TypeError, match=r"ToolResult cannot be subclassed.*metadata"):

            class Mine(ToolResult):
                pass


class TestToolMessage:
    def test_defaults(self) -> None:
        """A message is ok and not an error unless said otherwise."""
        message = ToolMessage(tool_call_id="c1", name="t", content="x")
        assert (message.status, message.is_error, message.artifact) == ("ok", False, None)
        assert () == message.attachments

    def test_attachments_round_trip(self) -> None:
        """A message's images and files encode (data as base64) and decode back."""
        message = ToolMessage(
            tool_call_id="c1",
            name="t",
            content="[image image/png]",
            attachments=(ImageBlock("image/png", b"\x89PNG"), FileBlock("a", uri="s3://b/a")),
        )
        assert message == msgspec.json.decode(msgspec.json.encode(message), type=ToolMessage)


class TestDecodingFromTheFacade:
    def test_every_struct_decodes(self) -> None:
        """Each wire Struct decodes after the facade re-homed it in `tinytools`."""
        samples = [
            ToolCall("c", "t", {"a": 1}),
            ToolResult.success("x", structured={"a": [1]}),
            ToolMessage(tool_call_id="c", name="t", content="x", status="denied"),
        ]
        for sample in samples:
            assert sample == msgspec.json.decode(msgspec.json.encode(sample), type=type(sample))
