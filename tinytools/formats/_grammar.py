"""A small grammar IR, and its spellings for llama.cpp (GBNF) and llguidance (Lark).

The decoding constraints (:mod:`tinytools.formats._constraint`) build one
:class:`Grammar` of named rules over six node kinds — a literal, a character
class, a sequence, an alternation, a bounded repetition and a reference to a
rule — and each backend's text is written from it: :func:`gbnf` (also the
EBNF xgrammar reads) and :func:`lark`. One grammar, so the backends cannot
disagree about what they accept.

Names are generated collision-free from hints (a tool's name, a parameter's)
as ``[a-z][a-z0-9-]*``, the alphabet GBNF allows (llama.cpp refuses ``_``);
Lark spells them with ``_`` for ``-``, in upper case for terminals (one
lexeme, which llguidance matches far faster than a rule per character). A
*lazy* rule is text that ends at the first occurrence of a fixed string; Lark
marks it ``[lazy]``, because llguidance's lexer is greedy and would otherwise
read the text past where the fixed string begins. For the same reason only
leaf values (strings, numbers, literals) are made terminals.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Final, Literal

__all__ = [
    "EMPTY",
    "REPEAT_CAP",
    "ROOT",
    "Alt",
    "Chars",
    "Grammar",
    "Lit",
    "Node",
    "Ref",
    "Rep",
    "Seq",
    "gbnf",
    "lark",
    "opt",
]


class Lit:
    """Exactly this text."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class Chars:
    """One character of a set, given as inclusive code-point ranges (or their complement)."""

    __slots__ = ("negated", "ranges")

    def __init__(self, ranges: Iterable[tuple[int, int]], *, negated: bool = False) -> None:
        self.ranges = _merge(ranges)
        self.negated = negated

    @classmethod
    def of(cls, chars: str, *, negated: bool = False) -> Chars:
        return cls(((ord(c), ord(c)) for c in chars), negated=negated)

    def without(self, chars: str) -> Chars:
        """This set less ``chars``."""
        if self.negated:
            return Chars([*self.ranges, *((ord(c), ord(c)) for c in chars)], negated=True)
        drop = {ord(c) for c in chars}
        kept: list[tuple[int, int]] = []
        for low, high in self.ranges:
            start = low
            for point in sorted(p for p in drop if low <= p <= high):
                if start < point:
                    kept.append((start, point - 1))
                start = point + 1
            if start <= high:
                kept.append((start, high))
        return Chars(kept)

    def holds(self, char: str) -> bool:
        point = ord(char)
        inside = any(low <= point <= high for low, high in self.ranges)
        return inside != self.negated


class Seq:
    """The items one after another."""

    __slots__ = ("items",)

    def __init__(self, *items: Node) -> None:
        self.items = items


class Alt:
    """Any one of the items."""

    __slots__ = ("items",)

    def __init__(self, *items: Node) -> None:
        self.items = items


class Rep:
    """The item ``low`` to ``high`` times (``high=None``: no upper bound)."""

    __slots__ = ("high", "item", "low")

    def __init__(self, item: Node, low: int = 0, high: int | None = None) -> None:
        self.item, self.low, self.high = item, low, high


class Ref:
    """The rule of this name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


Node = Lit | Chars | Seq | Alt | Rep | Ref
EMPTY: Final = Lit("")
#: The largest bound a grammar spells out in a repetition (llama.cpp expands a bounded
#: repetition into a rule per step, and refuses bounds past 2,000).
REPEAT_CAP: Final = 100


def opt(node: Node) -> Node:
    """``node`` or nothing."""
    return Rep(node, 0, 1)


def _merge(ranges: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    merged: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(high, merged[-1][1]))
        else:
            merged.append((low, high))
    return tuple(merged)


class _Rule:
    __slots__ = ("_refs", "node", "token", "until")

    def __init__(self, node: Node, token: bool, until: str | None) -> None:
        self.node, self.token, self.until = node, token, until
        self._refs: tuple[str, ...] | None = None

    @property
    def refs(self) -> tuple[str, ...]:
        """The rules the body names, each once (found when first asked)."""
        if self._refs is None:
            self._refs = tuple(dict.fromkeys(_refs(self.node)))
        return self._refs


_NOT_NAME: Final = re.compile(r"[^a-z0-9]+")


Dialect = Literal["gbnf", "lark"]

#: The start rule's name; reserved in every grammar.
ROOT: Final = "root"


class Grammar:
    """Named rules; each name is ``[a-z][a-z0-9-]*`` and unique; :data:`ROOT` starts it.

    Rules are spelled once per backend and kept (a structural tag spells every tool's
    arguments with the rules they share).
    """

    def __init__(self) -> None:
        self._rules: dict[str, _Rule | None] = {ROOT: None}
        self._spelled: dict[Dialect, dict[str, str]] = {}
        # hint -> (its base name, the next count to try): a tool's rules share a hint
        self._hints: dict[str, tuple[str, int]] = {}

    def name(self, hint: str) -> str:
        """A fresh rule name read from ``hint``, reserved until :meth:`define` fills it:
        the hint's base name, else the base with the lowest count ``-2``, ``-3``, … free."""
        if (known := self._hints.get(hint)) is None:
            base = _NOT_NAME.sub("-", hint.lower()).strip("-")[:40].rstrip("-") or "r"
            known = (base if base[0].isalpha() else "r-" + base, 1)
        base, count = known
        name = base if count == 1 else f"{base}-{count}"
        while name in self._rules:
            count += 1
            name = f"{base}-{count}"
        self._rules[name] = None
        self._hints[hint] = (base, count + 1)
        return name

    def define(
        self, name: str, node: Node, *, token: bool = False, until: str | None = None
    ) -> Ref:
        """Give the reserved ``name`` its body.

        Args:
            name: A name from :meth:`name`.
            node: The body.
            token: Make it one lexeme in Lark (a leaf value whose end is plain where it
                stands — a string, a number —: llguidance's lexer is greedy, so a lexeme
                that could run on into what follows it would never be cut there).
            until: The body is text that ends at the first occurrence of this string,
                which follows it (a lazy lexeme in Lark).
        """
        rule = _Rule(node, token and until is None, until)
        if (token or until is not None) and not all(
            (used := self._rules.get(ref)) is not None and used.token for ref in rule.refs
        ):
            raise ValueError(f"rule {name} must be regular to be a lexeme")
        self._rules[name] = rule
        return Ref(name)

    def add(self, hint: str, node: Node, *, token: bool = False, until: str | None = None) -> Ref:
        """A new rule for ``node``, named from ``hint`` (see :meth:`define`)."""
        return self.define(self.name(hint), node, token=token, until=until)

    def reachable(self, root: str) -> list[str]:
        """The rules ``root`` uses, itself first, each once."""
        seen, todo = {root: None}, [root]
        while todo:
            rule = self._rule(todo.pop())
            for ref in rule.refs:
                if ref not in seen:
                    seen[ref] = None
                    todo.append(ref)
        return list(seen)

    def _rule(self, name: str) -> _Rule:
        rule = self._rules[name]
        if rule is None:
            raise ValueError(f"rule {name} was named but never defined")
        return rule


def _flat(node: Seq) -> Iterator[Node]:
    """The items of a sequence, inner sequences spliced in and empty literals left out."""
    for item in node.items:
        if isinstance(item, Seq):
            yield from _flat(item)
        elif not (isinstance(item, Lit) and not item.text):
            yield item


def _refs(node: Node) -> Iterator[str]:
    todo = [node]
    while todo:
        item = todo.pop()
        if isinstance(item, Ref):
            yield item.name
        elif isinstance(item, (Seq, Alt)):
            todo.extend(item.items)
        elif isinstance(item, Rep):
            todo.append(item.item)


# --- spelling ------------------------------------------------------------------------


def _repeat(low: int, high: int | None) -> str:
    if (low, high) == (0, None):
        return "*"
    if (low, high) == (1, None):
        return "+"
    if (low, high) == (0, 1):
        return "?"
    if high is None:
        return f"{{{low},}}"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


_GBNF_SHORT: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _gbnf_char(point: int, in_class: bool) -> str:
    """A character in a GBNF literal or class. Escapes are ``\\uXXXX``, four digits, never
    ``\\xXX``: llama.cpp reads two hex digits after ``\\x``, but xgrammar (vLLM, SGLang)
    reads every hex digit that follows, so ``"\\x01a"`` was U+001A there and ``[\\x2d0-9]``
    an error."""
    char = chr(point)
    if char in '\\"' or (in_class and char in "]["):
        return "\\" + char
    if char in _GBNF_SHORT:
        return _GBNF_SHORT[char]
    if (
        (in_class and char in "-^")  # (llama.cpp knows no `\-` or `\^`)
        or point < 0x20
        or 0x7F <= point <= 0x9F
        or 0xD800 <= point <= 0xDFFF
        or point in (0x2028, 0x2029)  # (line breaks to str.splitlines)
    ):
        return f"\\u{point:04x}"
    return char  # (other characters as UTF-8, which llama.cpp reads in literals and classes)


def _regex_char(point: int) -> str:
    char = chr(point)
    if char in "\\]^-[/&~":
        return "\\" + char
    if point < 0x20 or point == 0x7F or point > 0x7E:
        return f"\\x{{{point:x}}}"
    return char


def _class(chars: Chars, spell: Dialect) -> str:
    parts = []
    for low, high in chars.ranges:
        if spell == "gbnf":
            first, last = _gbnf_char(low, True), _gbnf_char(high, True)
        else:
            first, last = _regex_char(low), _regex_char(high)
        parts.append(first if low == high else f"{first}-{last}")
    body = "".join(parts)
    if not body:  # the empty set, or every character
        every = "\\u0000-\U0010ffff" if spell == "gbnf" else "\\x{0}-\\x{10ffff}"
        body, chars = every, Chars((), negated=not chars.negated)
    text = f"[{'^' if chars.negated else ''}{body}]"
    return text if spell == "gbnf" else f"/{text}/"


# Every character a GBNF literal cannot hold as itself, with its escape.
_GBNF_ESCAPES: Final = {
    point: _gbnf_char(point, False)
    for point in [*range(0x20), *range(0x7F, 0xA0), 0x22, 0x5C, 0x2028, 0x2029]
}


def _literal(text: str, spell: Dialect) -> str:
    if spell == "gbnf":
        return '"' + text.translate(_GBNF_ESCAPES) + '"'
    return json.dumps(text, ensure_ascii=False)


class _Speller:
    def __init__(self, grammar: Grammar, spell: Dialect) -> None:
        self.grammar, self.spell = grammar, spell

    def name(self, name: str) -> str:
        if name == ROOT:
            return ROOT if self.spell == "gbnf" else "start"
        if self.spell == "gbnf":
            return name
        lark = name.replace("-", "_")
        return lark.upper() if self.grammar._rule(name).token else lark

    def node(self, node: Node, inner: bool = False) -> str:
        if isinstance(node, Lit):
            return _literal(node.text, self.spell)
        if isinstance(node, Chars):
            return _class(node, self.spell)
        if isinstance(node, Ref):
            return self.name(node.name)
        if isinstance(node, Rep):
            if node.high == 0:
                return _literal("", self.spell)
            item = self.node(node.item, True)
            if item.endswith(("*", "+", "?", "}")):  # a repetition of a repetition
                item = f"({item})"
            return f"{item}{_repeat(node.low, node.high)}"
        if isinstance(node, Seq):
            items = list(_flat(node))
            if not items:
                return _literal("", self.spell)
            if len(items) == 1:
                return self.node(items[0], inner)
            text = " ".join(self.node(item, True) for item in items)
            return f"({text})" if inner else text
        if len(node.items) == 1:
            return self.node(node.items[0], inner)
        parts = [self.node(item) for item in node.items]
        if not parts:  # nothing matches
            return _class(Chars(()), self.spell)
        text = " | ".join(parts)
        return f"({text})" if inner and len(parts) > 1 else text

    def lines(self, name: str) -> str:
        """The rule's own line(s)."""
        rule = self.grammar._rule(name)
        head = self.name(name)
        if self.spell == "gbnf":
            body = self.node(rule.node, rule.until is not None)
            if rule.until is not None:
                body += " " + _literal(rule.until, "gbnf")
            return f"{head} ::= {body}"
        if rule.until is None:
            return f"{head}: {self.node(rule.node)}"
        # the text is a terminal of its own; the rule ends it lazily at `until`
        text = head.upper() + "__TEXT"  # (generated names never hold "--")
        return (
            f"{text}: {self.node(rule.node)}\n{head}[lazy]: {text} {_literal(rule.until, 'lark')}"
        )

    def text(self, root: str) -> str:
        """The rules ``root`` uses, ``root`` first (under the start name)."""
        memo = self.grammar._spelled.setdefault(self.spell, {})
        out = [] if root == ROOT else [f"{self.name(ROOT)}{self._arrow()}{self.name(root)}"]
        for name in self.grammar.reachable(root):
            line = memo.get(name)
            if line is None:
                line = memo[name] = self.lines(name)
            out.append(line)
        return "\n".join(out) + "\n"

    def _arrow(self) -> str:
        return " ::= " if self.spell == "gbnf" else ": "


def gbnf(grammar: Grammar, root: str = "root") -> str:
    """The rules ``root`` uses, in GBNF (the start rule is named ``root``)."""
    return _Speller(grammar, "gbnf").text(root)


def lark(grammar: Grammar, root: str = "root") -> str:
    """The rules ``root`` uses, in llguidance's Lark (the start rule is named ``start``)."""
    return "%llguidance {}\n\n" + _Speller(grammar, "lark").text(root)
