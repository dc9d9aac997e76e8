"""A JSON Schema ``pattern`` as grammar rules over the JSON text of a string.

Only a pattern anchored at both ends (``^…$``, no alternation outside a
group) built from literals, ``.``, classes (``[a-z]``, ``[^,]``, ``\\d``,
``\\w``, ``\\s`` and their negations outside classes), groups (``(…)``,
``(?:…)``), ``|`` and the quantifiers ``* + ? {n} {n,} {n,m}`` (bounds up to
:data:`~tinytools.formats._grammar.REPEAT_CAP`, lazy ones read as
greedy: the same strings) is turned into a node; anything else (backreferences,
lookaround, ``\\b``, Unicode classes…) gives ``None`` and the pattern is left to
validation.

The node matches the JSON *text* of the string: each character the pattern
allows is written as the dialect's writer writes it — raw, or ``\\"``,
``\\\\``, ``\\n``…, ``\\u003c`` for a lead character the dialect never writes raw.
A pattern that allows a lead character the dialect writes raw except before
certain words (``<`` in ``json_in_tag``) is not turned into a node: which
spelling the writer picks depends on what follows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ._grammar import REPEAT_CAP, Alt, Chars, Lit, Node, Rep, Seq

__all__ = ["pattern_node"]

_DIGIT: Final = [(48, 57)]
_WORD: Final = [(48, 57), (65, 90), (95, 95), (97, 122)]
# ECMA-262 white space and line terminators.
_SPACE: Final = [(9, 13), (32, 32), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                 (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
                 (0xFEFF, 0xFEFF)]  # fmt: skip
_CLASSES: Final = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
_CHAR_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "v": "\v", "0": "\0"}
_SHORT: Final = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                 "\t": "\\t"}  # fmt: skip


class _Unsupported(Exception):
    """The pattern uses syntax this reader does not turn into a grammar."""


def pattern_node(pattern: str, never_raw: str, leads: Mapping[str, tuple[str, ...]]) -> Node | None:
    """The node for ``pattern``'s strings in JSON text, or ``None`` (see the module doc).

    Args:
        pattern: The schema's ``pattern`` (ECMA-262 syntax).
        never_raw: Characters JSON never writes raw in a string.
        leads: The dialect's lead characters and the words they may not start raw.
    """
    if not (pattern.startswith("^") and pattern.endswith("$") and not pattern.endswith("\\$")):
        return None
    try:
        reader = _Reader(pattern[1:-1], never_raw, leads)
        branches = reader.alternation()
        if reader.pos != len(reader.text) or len(branches) > 1:
            return None  # (`^a|b$` anchors each branch at one end only)
        return branches[0]
    except (_Unsupported, IndexError, ValueError):
        return None


class _Reader:
    def __init__(self, text: str, never_raw: str, leads: Mapping[str, tuple[str, ...]]) -> None:
        self.text, self.pos = text, 0
        self.never_raw = never_raw
        self.hidden = "".join(lead for lead, words in leads.items() if "" in words)
        self.guarded = "".join(lead for lead, words in leads.items() if "" not in words)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def take(self) -> str:
        char = self.text[self.pos]
        self.pos += 1
        return char

    def alternation(self) -> list[Node]:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.pos += 1
            branches.append(self.sequence())
        return branches

    def sequence(self) -> Node:
        items: list[Node] = []
        while self.peek() not in ("", "|", ")"):
            items.append(self.quantified(self.atom()))
        return Seq(*items)

    def atom(self) -> Node:
        char = self.take()
        if char == "(":
            if self.text.startswith("?:", self.pos):
                self.pos += 2
            elif self.peek() == "?":
                raise _Unsupported("lookaround or named group")
            branches = self.alternation()
            if self.take() != ")":
                raise _Unsupported("unclosed group")
            return Alt(*branches) if len(branches) > 1 else branches[0]
        if char == "[":
            return self.spell(self.klass())
        if char == ".":
            return self.spell(Chars.of("\n\r\u2028\u2029", negated=True))
        if char == "\\":
            return self.spell(self.escape(in_class=False))
        if char in "^$*+?{}]|":
            raise _Unsupported(f"{char} here")
        return self.spell(Chars.of(char))

    def escape(self, *, in_class: bool) -> Chars:
        char = self.take()
        if char in _CLASSES:
            return Chars(_CLASSES[char])
        if char.lower() in _CLASSES and not in_class:
            return Chars(_CLASSES[char.lower()], negated=True)
        if char in _CHAR_ESCAPES:
            return Chars.of(_CHAR_ESCAPES[char])
        if char in "ux":
            size = 4 if char == "u" else 2
            digits = self.text[self.pos : self.pos + size]
            if len(digits) != size:
                raise _Unsupported("short escape")
            self.pos += size
            return Chars.of(chr(int(digits, 16)))
        if char.isalnum():
            raise _Unsupported(f"\\{char}")
        return Chars.of(char)

    def klass(self) -> Chars:
        negated = self.peek() == "^"
        self.pos += negated
        ranges: list[tuple[int, int]] = []
        first = True
        while first or self.peek() != "]":
            first = False
            low = self.member()
            if self.peek() == "-" and self.text[self.pos + 1] != "]":
                self.pos += 1
                high = self.member()
                if len(low.ranges) != 1 or len(high.ranges) != 1 or low.negated or high.negated:
                    raise _Unsupported("class range of classes")
                ranges.append((low.ranges[0][0], high.ranges[0][1]))
            else:
                ranges.extend(low.ranges)
        self.pos += 1
        return Chars(ranges, negated=negated)

    def member(self) -> Chars:
        char = self.take()
        if char == "\\":
            return self.escape(in_class=True)
        if char == "[":
            raise _Unsupported("nested class")
        return Chars.of(char)

    def quantified(self, node: Node) -> Node:
        char = self.peek()
        if char in ("*", "+", "?"):
            self.pos += 1
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
        elif char == "{":
            end = self.text.index("}", self.pos)
            low_text, comma, high_text = self.text[self.pos + 1 : end].partition(",")
            low = int(low_text)
            high = int(high_text) if high_text else (None if comma else low)
            self.pos = end + 1
        else:
            return node
        top = low if high is None else high
        if top > REPEAT_CAP or top < low:
            raise _Unsupported("bound")
        if self.peek() == "?":
            self.pos += 1  # lazy: the same strings
        inner = node.items[0] if isinstance(node, Seq) and len(node.items) == 1 else node
        if isinstance(inner, Rep) and inner.high is None and inner.low <= 1:
            # (x*)… is x*, (x+){n,…} is x{n,}: one repetition, as every backend reads it
            return Rep(inner.item, low if inner.low else 0, None)
        return Rep(node, low, high)

    def spell(self, chars: Chars) -> Node:
        """One character of ``chars`` as JSON text writes it."""
        if any(chars.holds(lead) for lead in self.guarded):
            raise _Unsupported("a lead character written raw or escaped by what follows")
        special = self.never_raw + self.hidden
        spellings: list[Node] = [Lit(_spelling(c)) for c in special if chars.holds(c)]
        raw = chars.without(special)
        if raw.ranges or raw.negated:
            spellings.insert(0, raw)
        if not spellings:
            raise _Unsupported("empty class")
        return spellings[0] if len(spellings) == 1 else Alt(*spellings)


def _spelling(char: str) -> str:
    return _SHORT.get(char, f"\\u{ord(char):04x}")
