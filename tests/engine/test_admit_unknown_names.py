"""Admission of an unknown tool name: at most five close names, only names the model may
call."""

from __future__ import annotations

from tests.engine.hostile import _answered
from tinytools import (
    Registry,
    Tool,
    ToolCall,
)


class TestItem2Suggestions:
    def test_names_at_most_five_close_callable_names(self) -> None:
        tools = [Tool.from_schema(f"tool_{i}", "t", {"type": "object"}) for i in range(10_000)]
        tools.append(Tool.from_schema("Search_Docs", "t", {"type": "object"}))
        tools.append(Tool.from_schema("search_docs_v2", "t", {"type": "object"}))
        hidden = Tool.from_schema("search-docs", "t", {"type": "object"}, exposure="hidden")
        registry = Registry([*tools, hidden])
        [message] = _answered([ToolCall("c", "search_docs", {})], registry).messages
        assert len(message.content) < 500
        assert "`Search_Docs`, `search_docs_v2`" in message.content
        assert "search-docs" not in message.content

    def test_only_names_the_model_may_call(self) -> None:
        [message] = _answered([ToolCall("c", "get_wether", {})], advertised=["login"]).messages
        assert "get_weather" not in message.content
