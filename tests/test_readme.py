"""Every Python code block in README.md runs, in order, in one namespace (with Sybil).

Sybil parses the README (``python`` fenced blocks, and its ``<!-- skip: next -->``
comments); each block is one test, and a block sees the names earlier blocks defined,
as a reader following the README would. Other fences (``sh``) are not run.

Blocks that cannot run standalone — they need the network or an API key — are skipped
by the rule in :data:`NEEDS_OUTSIDE` (a pattern on the block's source), until README.md
marks them with ``<!-- skip: next "needs an API key" -->`` before the fence.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sybil import Example, Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser

README = Path(__file__).resolve().parents[1] / "README.md"

#: Blocks needing what a test run has not: a real provider client, an API key, a server.
NEEDS_OUTSIDE = re.compile(
    r"""
      \b(OpenAI|AsyncOpenAI|Anthropic|AsyncAnthropic|genai\.Client)\(   # provider clients
    | _API_KEY\b | \bapi_key\s*=                                       # credentials
    | https?://(?!example\.)                                           # the network
    """,
    re.VERBOSE,
)

_DOCUMENT = Sybil(parsers=[PythonCodeBlockParser(), SkipParser()]).parse(README)
_EXAMPLES: list[Example] = list(_DOCUMENT)
_DONE: set[int] = set()


def _run_through(index: int) -> None:
    """Evaluate the blocks up to ``index`` that have not run yet (they share a namespace)."""
    for position, example in enumerate(_EXAMPLES[: index + 1]):
        if position in _DONE:
            continue
        _DONE.add(position)
        source = str(getattr(example.parsed, "source", example.parsed))
        if NEEDS_OUTSIDE.search(source):
            if position == index:
                pytest.skip(f"README.md:{example.line} needs the network or an API key")
            continue
        example.evaluate()


def test_readme_has_python_blocks() -> None:
    """The README shows Python, so this module is not silently empty."""
    assert _EXAMPLES


@pytest.mark.parametrize("index", range(len(_EXAMPLES)), ids=[f"line-{e.line}" for e in _EXAMPLES])
def test_readme_block(index: int) -> None:
    """The README block runs (after the blocks before it)."""
    _run_through(index)
