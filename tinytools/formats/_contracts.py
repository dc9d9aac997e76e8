"""What a format module provides, written down: one Protocol per kind of module.

A new provider or dialect module is one more module that satisfies its Protocol here
(type checkers check the modules below against them) and passes the conformance test
(``tests/formats/test_contracts.py``), which holds every module to the same promises.

**A provider module** (:class:`ProviderModule`: ``openai_chat``, ``openai_responses``,
``anthropic``, ``gemini``, ``mcp``) promises:

* ``declarations(tools, *, context=None)`` declares every ``Direct`` tool, by its name, and
  no other (a toolset is resolved with ``context``); what it returns encodes as JSON.
* ``parse_calls(turn)`` reads the calls of the turn that carries them (the assistant
  message, a response's output, MCP's ``tools/call`` requests): a turn built from calls
  gives back each call's id, name and arguments, in order. Text, a stream or an object that
  is no turn is a ``TypeError`` or ``ValueError`` saying what was expected, never a guess.
* ``tool_results(messages)`` answers every message, in order: each result names the call it
  answers (MCP's, which go back in the JSON-RPC reply to each request, answer by
  position), and what it returns encodes as JSON. A provider whose tool results cannot
  carry an image or a file may add the message that carries them after the results.

Each also builds the turn that holds the model's calls, for the history
(:class:`AssistantMessage`: ``assistant_message(calls, text=None)``; ``openai_responses``
names it ``assistant_items`` and returns the output items).

**A text dialect** (:class:`TextDialect`: ``xml``, ``ptype``, ``json_in_tag``, and the
parse-only families ``mistral``, ``llama_json``, ``deepseek``) promises:

* ``parse(text, tools)`` never raises, whatever the text, and returns a ``Parsed``: the
  calls, the prose left, the fragments it could not read (as invalid calls holding their
  raw text). It never invents a name: every call names a tool the text names, and text
  inside ``<think>…</think>`` is never a call.
* ``render_call(call, tools)`` writes a call as the dialect's model would, and ``parse``
  reads it back: the same name and arguments, and no prose, no error.

A dialect a system prompt teaches (:class:`PromptDialect`: ``xml``, ``ptype``,
``json_in_tag``) also writes that prompt's catalogue: ``render(tools)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tinytools._inject import Context
    from tinytools._wire import ToolCall, ToolMessage

    from ._parsed import Parsed
    from ._tools import Tools

__all__ = ["AssistantMessage", "PromptDialect", "ProviderModule", "TextDialect"]


class ProviderModule(Protocol):
    """What a provider module provides (see the module docstring for its promises)."""

    def declarations(
        self, tools: Tools, /, *, context: Context | None = None
    ) -> list[dict[str, object]]:
        """The provider's declaration of every ``Direct`` tool of ``tools``."""
        ...

    def parse_calls(self, turn: object, /) -> list[ToolCall]:
        """The calls ``turn`` holds, in order."""
        ...

    def tool_results(self, messages: Iterable[ToolMessage], /) -> list[dict[str, object]]:
        """``messages`` in the provider's shape, each call answered, in order."""
        ...


class AssistantMessage(Protocol):
    """A provider module that builds the assistant turn holding the model's calls."""

    def assistant_message(
        self, calls: Iterable[ToolCall], text: str | None = None, /
    ) -> dict[str, object]:
        """The assistant turn holding ``calls`` (after ``text``, when given)."""
        ...


class TextDialect(Protocol):
    """What a text dialect module provides (see the module docstring for its promises)."""

    def parse(self, text: str, tools: Tools = ..., /) -> Parsed:
        """The calls in ``text``, the prose left and the fragments that could not be read."""
        ...

    def render_call(self, call: ToolCall, tools: Tools, /) -> str:
        """``call`` as the dialect's model writes it."""
        ...


class PromptDialect(TextDialect, Protocol):
    """A text dialect taught by a system prompt, which holds its catalogue of tools."""

    def render(self, tools: Tools, /) -> str:
        """The catalogue of ``tools`` for the system prompt."""
        ...


if TYPE_CHECKING:  # every module, checked against its Protocol by the type checker
    from . import (
        anthropic,
        deepseek,
        gemini,
        json_in_tag,
        llama_json,
        mcp,
        mistral,
        openai_chat,
        openai_responses,
        ptype,
        xml,
    )

    _PROVIDERS: tuple[ProviderModule, ...] = (
        openai_chat,
        openai_responses,
        anthropic,
        gemini,
        mcp,
    )
    _ASSISTANT_MESSAGES: tuple[AssistantMessage, ...] = (openai_chat, anthropic, gemini, mcp)
    _PROMPT_DIALECTS: tuple[PromptDialect, ...] = (xml, ptype, json_in_tag)
    _TEXT_DIALECTS: tuple[TextDialect, ...] = (mistral, llama_json, deepseek)
