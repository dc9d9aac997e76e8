"""Checking decoding constraints with llguidance's byte tokenizer: no model needed.

``accepts(grammar, text)`` says whether a Lark grammar matches the whole text;
``lark_of_gbnf`` reads a GBNF grammar with llguidance's own GBNF reader
(``llguidance.gbnf_to_lark``). That converter makes every regular rule one
lexeme, and llguidance's lexer is greedy, so a rule such as ``(", " "\"b\"" …)?``
followed by ``(", " "\"c\"" …)?`` would fail on ``, "c`` — a limit of the
conversion, not of GBNF, which llama.cpp matches without a lexer. Here every
rule stays a rule (each literal and class its own lexeme), which matches what
llama.cpp matches.
"""

from __future__ import annotations

import functools

import llguidance
from llguidance.gbnf_to_lark import GrammarParser, resolve

__all__ = ["accepts", "compiled", "lark_of_gbnf"]

_BYTES = llguidance.LLTokenizer("byte")


@functools.lru_cache(maxsize=256)
def compiled(lark: str) -> str:
    """The grammar, compiled and checked (a grammar llguidance refuses fails the test)."""
    grammar = llguidance.LLMatcher.grammar_from_lark(lark)
    error = llguidance.LLMatcher.validate_grammar(grammar, _BYTES)
    assert not error, f"{error}\n{lark[:2000]}"
    return grammar


@functools.lru_cache(maxsize=256)
def lark_of_gbnf(gbnf: str) -> str:
    """The GBNF grammar in Lark, every rule a rule (see the module doc)."""
    rules = GrammarParser().parse(gbnf)
    resolve(rules)
    for rule in rules.values():
        rule.rule_is_terminal = False
        rule.name = rule.name.lower()
    return "%llguidance {}\n\n" + "\n".join(str(rule) for rule in rules.values()) + "\n"


def accepts(lark: str, text: str) -> bool:
    """Whether the grammar matches all of ``text`` (and may end there)."""
    matcher = llguidance.LLMatcher(_BYTES, compiled(lark), log_level=0)
    consumed = matcher.consume_tokens(_BYTES.tokenize_str(text))
    return bool(consumed) and not matcher.is_error() and matcher.is_accepting()
