"""Tests for `tinytools.formats.ptype.parse`: which names a call in the text may have."""

from __future__ import annotations

import pytest

from tinytools import Registry, tool
from tinytools.formats import ptype


@tool
def search(query: str) -> str:
    """Search the web."""
    return query


TOOLS = Registry.of(search)


def named(text: str) -> list[tuple[str, object]]:
    parsed = ptype.parse(text, TOOLS)
    assert () == parsed.errors
    return [(call.name, call.arguments) for call in parsed.calls]


class TestDefaultApiInProse:
    """Defect: Gemma 3's ``default_api.`` made any name a call wherever it stood, so a
    sentence quoting ``default_api.rm(path='/')`` parsed as a call to an unoffered ``rm``.
    It is read where a bare call is: a name that is no tool is prose outside a wrapper."""

    @pytest.mark.parametrize(
        "text",
        [
            "Never run default_api.rm(path='/') in production: it deletes everything.",
            "You could write print(default_api.drop_table(name='users')) but please don't.",
            "Never run rm(path='/') in production.",
            "The docs say [rm(path='/')] is how to call it.",
        ],
    )
    def test_an_unknown_name_in_prose_is_prose(self, text: str) -> None:
        """No call, and the whole text kept as prose."""
        parsed = ptype.parse(text, TOOLS)
        assert ((), text, ()) == (parsed.calls, parsed.text, parsed.errors)

    @pytest.mark.parametrize(
        "text",
        [
            "Let me look. default_api.search(query='x') then more.",
            "Let me look. print(default_api.search(query='x')) then more.",
        ],
    )
    def test_a_tools_name_in_prose_is_a_call(self, text: str) -> None:
        """A tool's name is read with ``default_api.`` as without it."""
        assert [("search", {"query": "x"})] == named(text)

    @pytest.mark.parametrize(
        "text",
        [
            "rm(path='/')",
            " default_api.rm(path='/')\n",
            "print(default_api.rm(path='/'))",
            "```tool_code\nprint(default_api.rm(path='/'))\n```",
            "Sure.\n<|python_start|>default_api.rm(path='/')<|python_end|>",
        ],
    )
    def test_any_name_as_the_whole_message_or_wrapped(self, text: str) -> None:
        """As the whole message or inside a wrapper, a call keeps the name it has, for
        dispatch's unknown-tool policy to answer."""
        assert [("rm", {"path": "/"})] == named(text)
