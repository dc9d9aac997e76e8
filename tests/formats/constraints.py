"""Checking decoding constraints with llguidance's byte tokenizer: no model needed.

``accepts(grammar, text)`` says whether a Lark grammar matches the whole text;
``lark_of_gbnf`` reads a GBNF grammar with llguidance's own GBNF reader
(``llguidance.gbnf_to_lark``). That converter makes every regular rule one
lexeme, and llguidance's lexer is greedy, so a rule such as ``(", " "\"b\"" …)?``
followed by ``(", " "\"c\"" …)?`` would fail on ``, "c`` — a limit of the
conversion, not of GBNF, which llama.cpp matches without a lexer. Here every
rule stays a rule and every character is its own lexeme (a literal is split
into its characters), which matches what llama.cpp matches: a lexeme of several
characters would still be taken greedily, so ``"\"" [a] "\"" | "\"ab\""`` would
refuse ``"a"`` (the lexer, on ``"a``, follows ``"ab"`` and cannot go back).
"""

from __future__ import annotations

import functools
import json
import os
import re
import string
from collections.abc import Mapping

import llguidance
from llguidance.gbnf_to_lark import (
    ASTNode,
    GrammarParser,
    LiteralNode,
    Position,
    SequenceNode,
    resolve,
)

# (xgrammar's runtime would load torch's DLPack extension: no tensor is made here)
os.environ.setdefault("TVM_FFI_DISABLE_TORCH_C_DLPACK", "1")
try:
    import xgrammar
except ImportError:  # (``nox -s xgrammar`` installs it: see :func:`xgrammar_form`)
    if os.environ.get("TINYTOOLS_REQUIRE_XGRAMMAR"):
        raise
    xgrammar = None

__all__ = [
    "accepts",
    "compiled",
    "lark_of_gbnf",
    "lark_of_structural_tag",
    "llama_cpp_limit",
    "xgrammar_form",
]

_BYTES = llguidance.LLTokenizer("byte")
_XGRAMMAR = "xgrammar:"


@functools.lru_cache(maxsize=256)
def compiled(lark: str) -> str:
    """The grammar, compiled and checked (a grammar llguidance refuses fails the test);
    one in llguidance's JSON form (several grammars, see :func:`lark_of_structural_tag`)
    as it is."""
    grammar = lark if lark.startswith("{") else llguidance.LLMatcher.grammar_from_lark(lark)
    error = llguidance.LLMatcher.validate_grammar(grammar, _BYTES)
    assert not error, f"{error}\n{lark[:2000]}"
    return grammar


class _CharByChar(GrammarParser):
    """llguidance's GBNF reader, each literal read as a sequence of one-character ones, and
    ``\\uXXXX`` kept whole (llguidance strips the digits' leading zeros, which leaves
    ``\\u`` for U+0000 and ``\\u1f`` for U+001F: no escape in its regular expressions)."""

    def _parse_char(self, pos: Position) -> tuple[str, Position]:
        escape = pos.peek(2)
        if escape in ("\\u", "\\U"):
            width = 4 if escape == "\\u" else 8
            digits = pos.peek(2 + width)[2:]
            if len(digits) == width and all(c in string.hexdigits for c in digits):
                return escape + digits, pos.advance(2 + width)
        return super()._parse_char(pos)

    def _parse_literal(self, pos: Position) -> tuple[ASTNode, Position]:
        literal, end = super()._parse_literal(pos)
        assert isinstance(literal, LiteralNode)
        chars: list[ASTNode] = []
        pos = pos.advance()  # the opening quote; escapes as _parse_char reads them
        while pos.pos < end.pos - 1:
            char, pos = self._parse_char(pos)
            chars.append(LiteralNode(char))
        return (chars[0] if len(chars) == 1 else SequenceNode(chars)), end


@functools.lru_cache(maxsize=256)
def lark_of_gbnf(gbnf: str) -> str:
    """The GBNF grammar in Lark, every rule a rule, every character a lexeme (see the
    module doc)."""
    rules = _CharByChar().parse(gbnf)
    resolve(rules)
    for rule in rules.values():
        rule.rule_is_terminal = False
        rule.name = rule.name.lower()
    return "%llguidance {}\n\n" + "\n".join(str(rule) for rule in rules.values()) + "\n"


def xgrammar_form(tag: Mapping[str, object]) -> dict[str, str]:
    """``{"xgrammar": …}``, the structural tag as xgrammar itself reads it, for
    :func:`accepts`; empty where xgrammar is not installed.

    xgrammar's package imports torch, transformers and triton for helpers these checks
    never call, so ``nox -s xgrammar`` (and CI) installs xgrammar without them, puts the
    stand-ins of ``tests/formats/xgrammar_standins`` first on the path and sets
    ``TINYTOOLS_REQUIRE_XGRAMMAR``, so that a missing xgrammar fails there."""
    return {} if xgrammar is None else {"xgrammar": _XGRAMMAR + json.dumps(tag)}


@functools.lru_cache(maxsize=256)
def _xgrammar_compiled(tag: str) -> object:
    compiler = xgrammar.GrammarCompiler(xgrammar.TokenizerInfo([]), cache_enabled=False)
    return compiler.compile_grammar(xgrammar.Grammar.from_structural_tag(tag))


def accepts(lark: str, text: str) -> bool:
    """Whether the grammar matches all of ``text`` (and may end there); one from
    :func:`xgrammar_form` by xgrammar's own matcher."""
    if lark.startswith(_XGRAMMAR):
        grammar = _xgrammar_compiled(lark.removeprefix(_XGRAMMAR))
        checker = xgrammar.GrammarMatcher(grammar, terminate_without_stop_token=True)
        return bool(checker.accept_string(text)) and bool(checker.is_terminated())
    matcher = llguidance.LLMatcher(_BYTES, compiled(lark), log_level=0)
    consumed = matcher.consume_tokens(_BYTES.tokenize_str(text))
    return bool(consumed) and not matcher.is_error() and matcher.is_accepting()


def lark_of_structural_tag(tag: Mapping[str, object]) -> str:
    """The calls an xgrammar structural tag takes, as one Lark grammar: the tag spelt as
    GBNF, each ``grammar`` element's rules renamed apart, then read as :func:`lark_of_gbnf`
    reads GBNF. ``triggered_tags`` reads as its tags alone, one after another unless it
    stops after the first (its prose is not modelled here, only the calls; a ``grammar``
    element's prose is)."""
    rules: list[str] = []

    def rule(fmt: object) -> str:
        assert isinstance(fmt, Mapping), fmt
        name = f"r{len(rules)}"
        rules.append("")
        kind = fmt["type"]
        if kind == "const_string":
            body = _gbnf_literal(str(fmt["value"]))
        elif kind == "tag":
            ends = [_gbnf_literal(str(fmt[key])) for key in ("begin", "end")]
            body = f"{ends[0]} {rule(fmt['content'])} {ends[1]}"
        elif kind == "sequence":
            body = " ".join(rule(element) for element in fmt["elements"])
        elif kind == "or":
            body = " | ".join(rule(element) for element in fmt["elements"])
        elif kind == "grammar":
            body = _renamed(str(fmt["grammar"]), f"{name}-", rules)
        elif kind in ("triggered_tags", "tags_with_separator"):
            one = "(" + " | ".join(rule(element) for element in fmt["tags"]) + ")"
            between = _gbnf_literal(str(fmt.get("separator", "")))
            body = one if fmt["stop_after_first"] else f"{one} ({between} {one})*"
            body = body if fmt["at_least_one"] else f"({body})?"
        else:
            raise AssertionError(f"no reading for {kind!r}")
        rules[int(name[1:])] = f"{name} ::= {body}"
        return name

    top = rule(tag["format"])
    return lark_of_gbnf("\n".join([f"root ::= {top}", *rules]) + "\n")


def _gbnf_literal(text: str) -> str:
    """``text`` as a GBNF literal (``""`` for none)."""
    escaped = (f"\\u{ord(c):04x}" if ord(c) < 0x20 or c in '"\\' else c for c in text)
    return '"' + "".join(escaped) + '"'


def _renamed(gbnf: str, prefix: str, rules: list[str]) -> str:
    """The root's body of ``gbnf``, its rules added to ``rules`` with ``prefix`` before
    every rule name."""
    root = ""
    for line in gbnf.splitlines():
        if not line.strip():
            continue
        name, body = line.split(" ::= ", 1)
        spelt = "".join(
            f" {prefix}{m['name']}" if m["name"] else m.group(0) for m in _GBNF_TOKEN.finditer(body)
        )
        if name == "root":
            root = f"({spelt})"
        else:
            rules.append(f"{prefix}{name} ::= {spelt}")
    return root


_GBNF_TOKEN = re.compile(
    r'\s*(?:(?P<lit>"(?:[^"\\]|\\.)*")|(?P<cls>\[(?:[^\]\\]|\\.)*\])|(?P<name>[A-Za-z0-9-]+)'
    r"|\{\s*(?P<low>\d+)\s*(?P<comma>,\s*(?P<high>\d*))?\s*\}|(?P<op>[()|*+?.]))"
)


def llama_cpp_limit(gbnf: str) -> str | None:
    """The first repetition llama.cpp's GBNF parser refuses as past its "sane defaults",
    or ``None``; as its ``parse_sequence`` counts (llama-grammar.cpp, 0.3.x): the rules a
    repeated item makes (1 for a literal, class or rule name; for a group, the rules made
    while reading it: the group's own, each rule name seen for the first time, one per
    optional step of each repetition inside) times the repetition's bound must not pass
    2,000. llama-cpp-python's ``LlamaGrammar`` does not report such a refusal: the
    completion runs unconstrained."""
    counter = _RuleCounter()
    for line in gbnf.splitlines():
        if line.strip() and (refused := counter.rule(line)) is not None:
            return refused
    return None


class _RuleCounter:
    """llama.cpp's count of the rules a grammar makes, one rule line at a time."""

    def __init__(self) -> None:
        self.symbols: set[str] = set()
        self.made = 0
        self.tokens: list[re.Match[str]] = []
        self.pos = 0
        self.line = ""

    def count(self) -> int:
        return len(self.symbols) + self.made

    def rule(self, line: str) -> str | None:
        name, body = line.split(" ::= ", 1)
        self.symbols.add(name)
        self.tokens, self.pos, self.line = list(_GBNF_TOKEN.finditer(body)), 0, line
        assert "".join(m.group(0) for m in self.tokens).strip() == body.strip(), line
        return self.alternates()

    def alternates(self) -> str | None:
        while True:
            if (refused := self.sequence()) is not None:
                return refused
            if self.pos < len(self.tokens) and self.tokens[self.pos]["op"] == "|":
                self.pos += 1
                continue
            return None

    def sequence(self) -> str | None:
        rules = 1
        while self.pos < len(self.tokens):
            token = self.tokens[self.pos]
            op = token["op"]
            if op in ("|", ")"):
                return None
            self.pos += 1
            if token["name"]:
                self.symbols.add(token["name"])
                rules = 1
            elif op == "(":
                before = self.count()
                self.made += 1
                if (refused := self.alternates()) is not None:
                    return refused
                assert self.tokens[self.pos]["op"] == ")", self.line
                self.pos += 1
                rules = max(1, self.count() - before)
            elif op in ("*", "+", "?") or token["low"] is not None:
                low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}.get(op, (0, 0))
                if token["low"] is not None:
                    low = int(token["low"])
                    high = low if not token["comma"] else int(token["high"] or 0) or None
                total = high if high else (low or 1)
                if rules * total > 2000:
                    return f"{rules} rules x {total} in: {self.line[:300]}"
                self.made += 1 if high is None else high - low
                rules *= total
            else:
                rules = 1
        return None
