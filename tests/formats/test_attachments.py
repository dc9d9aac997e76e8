"""Tests for `tinytools.formats._attachments`: a result's images and files in each provider
module's ``tool_results``, in the provider's own form (Chat Completions: in the user message
after the tool messages), and what each provider cannot take left out with a line saying so."""

from __future__ import annotations

from types import ModuleType

import pytest
from media import PDF, PNG, b64

from tinytools import (
    FileBlock,
    ImageBlock,
    Registry,
    TextBlock,
    ToolCall,
    ToolMessage,
    ToolResult,
    dispatch_sync,
    tool,
)
from tinytools.formats import anthropic, gemini, mcp, openai_chat, openai_responses

PROVIDERS = [openai_chat, openai_responses, anthropic, gemini, mcp]
EACH = pytest.mark.parametrize("module", PROVIDERS, ids=lambda m: m.__name__.rsplit(".")[-1])
IMAGE = ImageBlock("image/png", PNG)
REPORT = FileBlock("report.pdf", "application/pdf", PDF)


def message(*attachments: object, content: str = "here it is", **fields: object) -> ToolMessage:
    return ToolMessage(
        tool_call_id="call_1",
        name="chart",
        content=content,
        attachments=attachments,  # type: ignore[arg-type]
        **fields,  # type: ignore[arg-type]
    )


def text_of(module: ModuleType, results: list[dict[str, object]]) -> str:
    """The text the model reads for the first result, whatever the provider's shape."""
    first = results[0]
    if module is anthropic:
        content = first["content"][0]["content"]  # type: ignore[index]
        return content if isinstance(content, str) else content[0]["text"]  # type: ignore[no-any-return]
    if module is openai_responses:
        output = first["output"]
        return output if isinstance(output, str) else output[0]["text"]  # type: ignore[index,return-value]
    if module is gemini:
        response = first["parts"][0]["functionResponse"]["response"]  # type: ignore[index]
        return response.get("output", response.get("error"))  # type: ignore[no-any-return]
    if module is mcp:
        return first["content"][0]["text"]  # type: ignore[index,no-any-return]
    return first["content"]  # type: ignore[return-value]


def sent_data(module: ModuleType, results: list[dict[str, object]]) -> list[str]:
    """The base64 data (or URL) of every attachment sent with the first result, in order."""
    first = results[0]
    if module is anthropic:
        content = first["content"][0]["content"]  # type: ignore[index]
        blocks = [] if isinstance(content, str) else content[1:]
        return [b["source"].get("data") or b["source"]["url"] for b in blocks]
    if module is openai_responses:
        output = first["output"]
        parts = [] if isinstance(output, str) else output[1:]  # type: ignore[index]
        return [p.get("image_url") or p.get("file_data") or p["file_url"] for p in parts]
    if module is gemini:
        parts = first["parts"][0]["functionResponse"].get("parts", [])  # type: ignore[index]
        return [p["inlineData"]["data"] for p in parts]
    if module is mcp:
        parts = first["content"][1:]  # type: ignore[index]
        return [p.get("data") or p.get("uri") or p["resource"]["blob"] for p in parts]
    carried = results[-1]["content"][1::2] if len(results) > 1 else []  # type: ignore[index]
    return [p.get("image_url", {}).get("url") or p["file"]["file_data"] for p in carried]


def bare(found: list[str]) -> list[str]:
    """Base64 data without a ``data:`` URL's prefix."""
    return [item.partition(";base64,")[2] or item for item in found]


class TestNative:
    def test_anthropic(self) -> None:
        """Images and PDFs go in the ``tool_result`` after its text, as base64 or by URL."""
        url = ImageBlock("image/jpeg", url="https://example.com/a.jpg")
        [result] = anthropic.tool_results([message(IMAGE, REPORT, url)])
        [block] = result["content"]  # type: ignore[misc]
        assert [
            {"type": "text", "text": "here it is"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)},
            },
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)},
                "title": "report.pdf",
            },
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}},
        ] == block["content"]
        assert (False, "call_1") == (block["is_error"], block["tool_use_id"])

    def test_anthropic_plain_text_document(self) -> None:
        """A UTF-8 text file is a text document; one that is no UTF-8 is left out."""
        notes = FileBlock("notes.txt", "text/plain; charset=utf-8", "café".encode())
        latin = FileBlock("old.txt", "text/plain", "café".encode("latin-1"))
        [result] = anthropic.tool_results([message(notes, latin)])
        [block] = result["content"]  # type: ignore[misc]
        text, document = block["content"]
        assert {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "café"},
            "title": "notes.txt",
        } == document
        assert text["text"].endswith(
            "[attachment 2 (text/plain) not sent: its data is no UTF-8 text]"
        )

    def test_openai_responses(self) -> None:
        """Images are ``input_image`` and files ``input_file`` content of the output."""
        csv = b"a,b\n1,2\n"
        sheet = FileBlock("q3.csv", "text/csv", csv)
        [item] = openai_responses.tool_results([message(IMAGE, sheet, REPORT)])
        assert {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": [
                {"type": "input_text", "text": "here it is"},
                {"type": "input_image", "image_url": f"data:image/png;base64,{b64(PNG)}"},
                {
                    "type": "input_file",
                    "filename": "q3.csv",
                    "file_data": f"data:text/csv;base64,{b64(csv)}",
                },
                {
                    "type": "input_file",
                    "filename": "report.pdf",
                    "file_data": f"data:application/pdf;base64,{b64(PDF)}",
                },
            ],
        } == item

    def test_openai_chat_follow_up(self) -> None:
        """A tool message takes text only: the images and PDFs follow in one user message
        after every tool message, each named by its call and number, and the tool message
        says where they are."""
        plain = ToolMessage(tool_call_id="call_2", name="add", content="3")
        out = openai_chat.tool_results([message(IMAGE, REPORT), plain])
        chart, added, carried = out
        assert {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "here it is\n[the next user message holds attachments 1, 2]",
        } == chart
        assert {"role": "tool", "tool_call_id": "call_2", "content": "3"} == added
        assert {
            "role": "user",
            "content": [
                {"type": "text", "text": "Call call_1 (chart), attachment 1 (image/png):"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}},
                {"type": "text", "text": "Call call_1 (chart), attachment 2 (application/pdf):"},
                {
                    "type": "file",
                    "file": {
                        "filename": "report.pdf",
                        "file_data": f"data:application/pdf;base64,{b64(PDF)}",
                    },
                },
            ],
        } == carried

    def test_openai_chat_audio(self) -> None:
        """WAV and MP3 audio are ``input_audio`` parts of the user message."""
        wav = FileBlock("say.wav", "audio/wav", b"RIFF\x00\x00\x00\x00WAVE")
        out = openai_chat.tool_results([message(wav)])
        assert {
            "type": "input_audio",
            "input_audio": {"data": b64(b"RIFF\x00\x00\x00\x00WAVE"), "format": "wav"},
        } == out[-1]["content"][1]  # type: ignore[index]

    def test_gemini(self) -> None:
        """Media go in the function response's ``parts`` as inline data."""
        [content] = gemini.tool_results([message(IMAGE, REPORT)])
        [part] = content["parts"]  # type: ignore[misc]
        assert {
            "name": "chart",
            "id": "call_1",
            "response": {"output": "here it is"},
            "parts": [
                {"inlineData": {"mimeType": "image/png", "data": b64(PNG)}},
                {"inlineData": {"mimeType": "application/pdf", "data": b64(PDF)}},
            ],
        } == part["functionResponse"]

    def test_mcp(self) -> None:
        """Images, audio, files and references are MCP content after the text."""
        audio = FileBlock("audio", "audio/mpeg", b"ID3\x03")
        link = FileBlock("big.zip", "application/zip", uri="https://example.com/big.zip")
        [result] = mcp.tool_results([message(IMAGE, audio, REPORT, link)])
        assert [
            {"type": "text", "text": "here it is"},
            {"type": "image", "data": b64(PNG), "mimeType": "image/png"},
            {"type": "audio", "data": b64(b"ID3\x03"), "mimeType": "audio/mpeg"},
            {
                "type": "resource",
                "resource": {
                    "uri": "attachment:report.pdf",
                    "mimeType": "application/pdf",
                    "blob": b64(PDF),
                },
            },
            {
                "type": "resource_link",
                "uri": "https://example.com/big.zip",
                "name": "big.zip",
                "mimeType": "application/zip",
            },
        ] == result["content"]

    @EACH
    def test_what_dispatch_makes(self, module: ModuleType) -> None:
        """A tool returning text and an image reaches every provider with the image's bytes,
        and its text names the image where it stood."""

        @tool
        def chart() -> ToolResult:
            """Draw the chart."""
            return ToolResult.success([TextBlock("here it is"), IMAGE])

        result = dispatch_sync([ToolCall("call_1", "chart", {})], Registry.of(chart))
        out = module.tool_results(result.messages)
        assert [b64(PNG)] == bare(sent_data(module, out))
        assert text_of(module, out).startswith("here it is\n[image image/png]")

    @EACH
    def test_no_attachments_unchanged(self, module: ModuleType) -> None:
        """A message without attachments is sent as before: its text alone."""
        plain = ToolMessage(tool_call_id="call_1", name="chart", content="3")
        out = module.tool_results([plain])
        assert "3" == text_of(module, out)
        assert [] == sent_data(module, out)
        if module is openai_chat:
            assert 1 == len(out)  # no user message after it


class TestLeftOut:
    @pytest.mark.parametrize(
        ("module", "block", "why"),
        [
            (anthropic, FileBlock("a.wav", "audio/wav", b"RIFF"), "Anthropic takes JPEG"),
            (anthropic, ImageBlock("image/png", url="ftp://example.com/a.png"), "http(s) URL"),
            (anthropic, FileBlock("a.txt", "text/plain", uri="https://e.com/a"), "not by URL"),
            (openai_responses, FileBlock("a.wav", "audio/wav", b"RIFF"), "no other images"),
            (openai_responses, ImageBlock("image/tiff", b"II*\x00"), "no other images"),
            (openai_responses, ImageBlock("image/png", url="s3://b/a.png"), "http(s) URL"),
            (openai_chat, FileBlock("a.csv", "text/csv", b"a,b"), "PDF files"),
            (openai_chat, FileBlock("a.pdf", "application/pdf", uri="https://e.com/a"), "not by"),
            (gemini, ImageBlock("image/gif", b"GIF89a"), "Gemini takes PNG"),
            (gemini, ImageBlock("image/png", url="https://example.com/a.png"), "not by URL"),
        ],
        ids=repr,
    )
    def test_what_a_provider_cannot_take(self, module: ModuleType, block: object, why: str) -> None:
        """What the provider cannot take in a tool result is left out, never sent for the
        provider to refuse the whole request; a line tells the model which and why."""
        out = module.tool_results([message(IMAGE, block)])
        assert [b64(PNG)] == bare(sent_data(module, out))
        note = text_of(module, out).split("\n")[1]
        assert note.startswith("[attachment 2 (")
        assert " not sent: " in note
        assert why in note

    @EACH
    def test_over_the_limit(self, module: ModuleType) -> None:
        """An attachment with more data than ``max_attachment_bytes`` is left out whole,
        saying its size and the limit; ``None`` sends any size."""
        big = ImageBlock("image/png", PNG + b"\x00" * 100)
        out = module.tool_results([message(IMAGE, big)], max_attachment_bytes=100)
        assert [b64(PNG)] == bare(sent_data(module, out))
        assert (
            "[attachment 2 (image/png) not sent: its data has 169 bytes, over the 100-byte "
            "limit for one attachment (max_attachment_bytes)]"
        ) == text_of(module, out).split("\n")[1]
        unbounded = module.tool_results([message(big)], max_attachment_bytes=None)
        assert [b64(big.data)] == bare(sent_data(module, unbounded))  # type: ignore[arg-type]

    def test_default_limit(self) -> None:
        """By default an attachment may have 3,932,160 bytes: 5 MiB in base64, the most
        Anthropic takes for one image."""
        fits = ImageBlock("image/png", PNG + b"\x00" * (3_932_160 - len(PNG)))
        over = ImageBlock("image/png", PNG + b"\x00" * (3_932_161 - len(PNG)))
        [result] = anthropic.tool_results([message(fits, over)])
        [block] = result["content"]  # type: ignore[misc]
        assert 5 * 1024 * 1024 == len(block["content"][1]["source"]["data"])
        assert "3,932,161 bytes, over the 3,932,160-byte limit" in block["content"][0]["text"]

    @EACH
    @pytest.mark.parametrize(
        ("block", "what"),
        [
            (ImageBlock("image/png", b"GIF89a..."), "no PNG file"),
            (ImageBlock("image/jpeg", PNG), "no JPEG file"),
            (ImageBlock("image/webp", b"RIFF0000WAVE"), "no WebP file"),
            (FileBlock("a.pdf", "application/pdf", b"<html>"), "no PDF file"),
        ],
        ids=repr,
    )
    def test_data_not_what_its_type_says(
        self, module: ModuleType, block: object, what: str
    ) -> None:
        """Data that is not what its media type says is left out (a provider refuses the
        whole request for it, and every later turn that carries it)."""
        out = module.tool_results([message(block)])
        assert [] == sent_data(module, out)
        assert f"not sent: its data is {what}, as its media type says]" in text_of(module, out)

    def test_jpg_read_as_jpeg(self) -> None:
        """``image/jpg``, a common misspelling, is sent as ``image/jpeg``."""
        jpeg = ImageBlock("image/jpg", b"\xff\xd8\xff\xe0")
        [result] = anthropic.tool_results([message(jpeg)])
        assert "image/jpeg" == result["content"][0]["content"][1]["source"]["media_type"]  # type: ignore[index]

    @EACH
    @pytest.mark.parametrize(
        "attachments",
        [
            ("not a block",),
            (5, None),
            (TextBlock("text is content, not an attachment"),),
            (ImageBlock(3),),  # type: ignore[arg-type]
            (ImageBlock("image/png", data=object()),),  # type: ignore[arg-type]
            (ImageBlock("image/png", data="not base64!"),),  # type: ignore[arg-type]
            (ImageBlock("image/png", data=b""),),
            (ImageBlock("image/png"),),
            (ImageBlock("text/plain", b"x"),),
            (ImageBlock("image/png", url=5),),  # type: ignore[arg-type]
            (FileBlock(b"name", "application/pdf", PDF),),  # type: ignore[arg-type]
            (FileBlock("a", "\udc80/x", b"x"),),
            (FileBlock("a", "a/b\r\nX-Header: 1", b"x"),),
        ],
        ids=repr,
    )
    def test_hand_built_garbage(self, module: ModuleType, attachments: tuple[object, ...]) -> None:
        """A message built by hand may hold anything in ``attachments``: each item that is
        no usable image or file is left out with a line saying why, never an exception."""
        out = module.tool_results([message(*attachments)])
        assert [] == sent_data(module, out)
        lines = text_of(module, out).split("\n")
        assert len(attachments) + 1 == len(lines)
        assert all(" not sent: " in line for line in lines[1:])

    @EACH
    def test_one_block_not_a_tuple(self, module: ModuleType) -> None:
        """One block given as ``attachments`` (not in a tuple) is read as that block."""
        out = module.tool_results([_one(IMAGE)])
        assert [b64(PNG)] == bare(sent_data(module, out))

    def test_base64_text_and_buffers(self) -> None:
        """Data given as base64 text (which msgspec takes for bytes), a bytearray or a
        memoryview is sent as the bytes it holds."""
        for data in (b64(PNG), bytearray(PNG), memoryview(PNG)):
            block = ImageBlock("image/png", data)  # type: ignore[arg-type]
            assert [b64(PNG)] == sent_data(mcp, mcp.tool_results([message(block)]))

    def test_escaped_names(self) -> None:
        """A lone surrogate in a file's name or URL is sent as its escape (the request must
        encode as UTF-8)."""
        odd = FileBlock("r\udc80.pdf", "application/pdf", PDF)
        [item] = openai_responses.tool_results([message(odd)])
        assert "r\\udc80.pdf" == item["output"][1]["filename"]  # type: ignore[index]


def _one(block: object) -> ToolMessage:
    return ToolMessage(tool_call_id="call_1", name="chart", content="x", attachments=block)  # type: ignore[arg-type]
