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
import json
from collections.abc import Mapping

import llguidance
from llguidance.gbnf_to_lark import GrammarParser, resolve

__all__ = ["accepts", "compiled", "lark_of_gbnf", "lark_of_structural_tag"]

_BYTES = llguidance.LLTokenizer("byte")


@functools.lru_cache(maxsize=256)
def compiled(lark: str) -> str:
    """The grammar, compiled and checked (a grammar llguidance refuses fails the test);
    one in llguidance's JSON form (several grammars, see :func:`lark_of_structural_tag`)
    as it is."""
    grammar = lark if lark.startswith("{") else llguidance.LLMatcher.grammar_from_lark(lark)
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


def lark_of_structural_tag(tag: Mapping[str, object]) -> str:
    """The calls an xgrammar structural tag takes, as one llguidance grammar (its JSON
    form): each format a rule, each ``grammar`` content a grammar of its own (from its
    GBNF). ``triggered_tags`` reads as its tags alone, one after another unless it stops
    after the first (its prose is not modelled here, only the calls)."""
    grammars: list[dict[str, str]] = []
    rules: list[str] = []

    def rule(fmt: object) -> str:
        assert isinstance(fmt, Mapping), fmt
        name = f"r{len(rules)}"
        rules.append("")
        kind = fmt["type"]
        if kind == "const_string":
            body = json.dumps(fmt["value"])
        elif kind == "tag":
            ends = [json.dumps(fmt[key]) if fmt[key] else "" for key in ("begin", "end")]
            body = f"{ends[0]} {rule(fmt['content'])} {ends[1]}"
        elif kind == "sequence":
            body = " ".join(rule(element) for element in fmt["elements"])
        elif kind == "or":
            body = " | ".join(rule(element) for element in fmt["elements"])
        elif kind == "grammar":
            inner = f"g{len(grammars)}"
            grammars.append({"name": inner, "lark_grammar": lark_of_gbnf(fmt["grammar"])})
            body = f"@{inner}"
        elif kind in ("triggered_tags", "tags_with_separator"):
            one = "(" + " | ".join(rule(element) for element in fmt["tags"]) + ")"
            between = json.dumps(fmt.get("separator", ""))
            body = one if fmt["stop_after_first"] else f"{one} ({between} {one})*"
            body = body if fmt["at_least_one"] else f"({body})?"
        else:
            raise AssertionError(f"no reading for {kind!r}")
        rules[int(name[1:])] = f"{name}: {body}"
        return name

    top = rule(tag["format"])
    main = "\n".join([f"start: {top}", *rules])
    return json.dumps({"grammars": [{"name": "main", "lark_grammar": main}, *grammars]})
