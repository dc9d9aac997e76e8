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
    __slots__ = ("node", "refs", "token", "until")

    def __init__(self, node: Node, refs: tuple[str, ...], token: bool, until: str | None) -> None:
        self.node, self.refs, self.token, self.until = node, refs, token, until


_NOT_NAME: Final = re.compile(r"[^a-z0-9]+")


class Grammar:
    """Named rules; each name is ``[a-z][a-z0-9-]*`` and unique."""

    def __init__(self) -> None:
        self._rules: dict[str, _Rule | None] = {}

    def name(self, hint: str) -> str:
        """A fresh rule name read from ``hint``, reserved until :meth:`define` fills it."""
        base = _NOT_NAME.sub("-", hint.lower()).strip("-")[:40].rstrip("-") or "r"
        if not base[0].isalpha():
            base = "r-" + base
        name, count = base, 1
        while name in self._rules:
            count += 1
            name = f"{base}-{count}"
        self._rules[name] = None
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
        refs = tuple(dict.fromkeys(_refs(node)))
        regular = all((rule := self._rules.get(ref)) is not None and rule.token for ref in refs)
        if (token or until is not None) and not regular:
            raise ValueError(f"rule {name} must be regular to be a lexeme")
        self._rules[name] = _Rule(node, refs, token and until is None, until)
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

Dialect = Literal["gbnf", "lark"]


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
    char = chr(point)
    if char in '\\"' or (in_class and char in "]["):
        return "\\" + char
    if in_class and char in "-^":  # (llama.cpp knows no `\-` or `\^`)
        return f"\\x{point:02x}"
    if char in _GBNF_SHORT:
        return _GBNF_SHORT[char]
    if point < 0x20 or 0x7F <= point <= 0x9F:
        return f"\\x{point:02x}"
    if 0xD800 <= point <= 0xDFFF or point in (0x2028, 0x2029):  # (line breaks to str.splitlines)
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
        every = "\\x00-\U0010ffff" if spell == "gbnf" else "\\x{0}-\\x{10ffff}"
        body, chars = every, Chars((), negated=not chars.negated)
    text = f"[{'^' if chars.negated else ''}{body}]"
    return text if spell == "gbnf" else f"/{text}/"


def _literal(text: str, spell: Dialect) -> str:
    if spell == "gbnf":
        return '"' + "".join(_gbnf_char(ord(c), False) for c in text) + '"'
    return json.dumps(text, ensure_ascii=False)


class _Speller:
    def __init__(self, grammar: Grammar, spell: Dialect, root: str) -> None:
        self.grammar, self.spell, self.root = grammar, spell, root

    def name(self, name: str) -> str:
        if name == self.root:
            return "root" if self.spell == "gbnf" else "start"
        if self.spell == "gbnf":
            return name
        rule = self.grammar._rule(name)
        lark = name.replace("-", "_")
        return lark.upper() if rule.token else lark

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

    def rules(self) -> Iterator[str]:
        for name in self.grammar.reachable(self.root):
            rule = self.grammar._rule(name)
            head = self.name(name)
            if self.spell == "gbnf":
                body = self.node(rule.node)
                if rule.until is not None:
                    body = f"{self.node(rule.node, True)} {_literal(rule.until, 'gbnf')}"
                yield f"{head} ::= {body}"
            elif rule.until is not None:
                # the text is a terminal of its own; the rule ends it lazily at `until`
                text = head.upper() + "__TEXT"  # (generated names never hold "--")
                yield f"{text}: {self.node(rule.node)}"
                yield f"{head}[lazy]: {text} {_literal(rule.until, 'lark')}"
            else:
                yield f"{head}: {self.node(rule.node)}"


def gbnf(grammar: Grammar, root: str) -> str:
    """The rules ``root`` uses, in GBNF (``root`` is named ``root``)."""
    return "\n".join(_Speller(grammar, "gbnf", root).rules()) + "\n"


def lark(grammar: Grammar, root: str) -> str:
    """The rules ``root`` uses, in llguidance's Lark (``root`` is named ``start``)."""
    return "%llguidance {}\n\n" + "\n".join(_Speller(grammar, "lark", root).rules()) + "\n"
