"""LangChain (``langchain-core``): ``StructuredTool.from_function`` and the tool-call schema."""

from __future__ import annotations

from collections.abc import Callable

from langchain_core.tools import StructuredTool

LABEL = "LangChain StructuredTool.from_function"


def build(fn: Callable[..., object]) -> object:
    """A tool with its JSON schema, as a user gets it ready to send.

    ``parse_docstring=True`` so descriptions come from the docstring, as in tinytools; the
    schema is generated lazily by LangChain, so it is asked for here.
    """
    made = StructuredTool.from_function(fn, parse_docstring=True)
    made.tool_call_schema.model_json_schema()  # type: ignore[union-attr]
    return made
