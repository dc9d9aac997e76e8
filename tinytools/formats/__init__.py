"""Model-facing formats: provider declarations, text dialects, prompt-guided messages.

Provider modules (``openai_chat``, ``openai_responses``, ``anthropic``,
``gemini``, ``mcp``) render native declarations, parse provider responses to
``ToolCall``s (a response that reports a failed call raises
:class:`ToolCallsFailed`; an object that is no response, a ``TypeError``),
accumulate streamed calls (``ToolCallAccumulator``), build the assistant turn
holding the calls (``assistant_message``; ``assistant_items`` for Responses)
and shape ``ToolMessage``s as each provider expects. Text
dialect modules (``xml``, ``ptype``, ``json_in_tag``) render a catalogue for
the system prompt and parse model text back to ``ToolCall``s; the
parse-only open-model families (``mistral``, ``llama_json``, ``deepseek``)
read the calls those models write natively and write calls back for history. The message
helpers (``messages``) shape an OpenAI-format transcript for models without
a native tool channel. Nothing here imports a provider SDK.
"""

from __future__ import annotations

from . import anthropic as anthropic
from . import deepseek as deepseek
from . import gemini as gemini
from . import json_in_tag as json_in_tag
from . import llama_json as llama_json
from . import mcp as mcp
from . import mistral as mistral
from . import openai_chat as openai_chat
from . import openai_responses as openai_responses
from . import ptype as ptype
from . import xml as xml
from ._choose import Exposed as Exposed
from ._choose import split_by_format as split_by_format
from ._constraint import MAX_PARALLEL_CALLS as MAX_PARALLEL_CALLS
from ._constraint import Constraint as Constraint
from ._constraint import Gbnf as Gbnf
from ._parsed import Parsed as Parsed
from ._parsed import synthetic_id as synthetic_id
from ._received import ToolCallsFailed as ToolCallsFailed
from .messages import coalesce_tool_results as coalesce_tool_results
from .messages import ensure_resolvable_user_turn as ensure_resolvable_user_turn
from .messages import pair_tool_cycles as pair_tool_cycles
from .messages import with_tool_instructions as with_tool_instructions

__all__ = [
    "MAX_PARALLEL_CALLS",
    "Constraint",
    "Exposed",
    "Gbnf",
    "Parsed",
    "ToolCallsFailed",
    "anthropic",
    "coalesce_tool_results",
    "deepseek",
    "ensure_resolvable_user_turn",
    "gemini",
    "json_in_tag",
    "llama_json",
    "mcp",
    "mistral",
    "openai_chat",
    "openai_responses",
    "pair_tool_cycles",
    "ptype",
    "split_by_format",
    "synthetic_id",
    "with_tool_instructions",
    "xml",
]
