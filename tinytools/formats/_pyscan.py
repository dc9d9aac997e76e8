"""The safety scanner of the ``ptype`` dialect: literal-call syntax only, then ``ast``.

A candidate fragment is tokenized first (:func:`scan_fragment`): only literal values,
brackets, separators and call names get through — no operators beyond a sign
on a number, no attribute, subscript or call chains, no f-strings — so the
syntax tree ``ast.parse`` then builds is no deeper than the brackets, and
:func:`literal` reads its values the way ``ast.literal_eval`` would. Nothing
is evaluated.
"""

from __future__ import annotations

import ast
import keyword
import math
import re
import warnings
from typing import Final, TypeAlias

__all__ = [
    "MAX_CHARS",
    "MAX_DEPTH",
    "MAX_TOKENS",
    "Broken",
    "Scan",
    "expression",
    "literal",
    "plain_name",
    "scan_fragment",
    "source_text",
]

#: The longest candidate fragment read, in characters.
MAX_CHARS: Final = 1 << 20
#: The most tokens (outside strings) in one candidate fragment.
MAX_TOKENS: Final = 4096
#: The deepest bracket nesting in one candidate fragment.
MAX_DEPTH: Final = 32

_TOKEN: Final = re.compile(
    r"""[ \t\r\n]+
    | (?P<str>[rRbBuUfF]{0,2}(?:'''|\"\"\"|'|"))
    | (?P<num>(?:0[xXoObB][0-9a-fA-F_]+|(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)
               (?:[eE][+-]?[0-9_]+)?[jJ]?))
    | (?P<name>[^\W\d][\w-]*)
    | (?P<op>\*\*|[()\[\]{},:=+-])
    | (?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
_OPENERS: Final = {")": "(", "]": "[", "}": "{"}
_AFTER_SEPARATOR: Final = frozenset({"start", "open", "sep"})
_WORDS: Final[dict[str, object]] = {"true": True, "false": False, "null": None}

_Span: TypeAlias = "tuple[int, int]"
_TOO_LONG: Final = f"the call is longer than {MAX_CHARS} characters"


class Broken(Exception):
    """A value or call that the dialect does not allow."""


class Scan:
    """Checks a candidate token by token and tracks its brackets.

    ``prev`` is the class of the previous token: ``start``, ``open``, ``sep``
    (``,`` ``:`` ``=`` ``**``), ``sign``, ``name``, ``str`` or ``value``. A
    value may only follow a separator (or a string a string, a number a
    sign), so no operator, attribute, subscript or call chain gets through.
    """

    def __init__(self, prev: str, call_depth: int) -> None:
        self.prev, self.call_depth = prev, call_depth
        self.stack: list[str] = []
        self.items: list[str] = []  # per open bracket, separators seen in the current item
        self.problem: str | None = None
        self.names: list[str] = []  # names of the calls at call_depth, in order
        self.renamed: list[_Span] = []  # spans of those names Python cannot read
        self._name: tuple[str, _Span] | None = None

    def _check(self, ok: bool, token: str) -> None:
        if not ok and self.problem is None:
            self.problem = f"`{token[:20]}` is not allowed here: arguments must be literal values"

    def token(self, kind: str, token: str, span: _Span) -> bool:
        """Take one token; True once the outermost bracket is closed (or mismatched)."""
        name, self._name = self._name, None
        at_call = token == "(" and len(self.stack) == self.call_depth
        if name is not None and "-" in name[0] and not at_call:
            self._check(False, name[0])
        if kind == "op":
            if at_call and name is not None:
                self.names.append(name[0])
                self.renamed += [] if plain_name(name[0]) else [name[1]]
            return self._op(token)
        after_value = (kind == "str" and self.prev == "str") or (
            kind == "num" and self.prev == "sign"
        )
        self._check(kind != "other" and (self.prev in _AFTER_SEPARATOR or after_value), token)
        self.prev = {"num": "value", "other": "value"}.get(kind, kind)
        self._name = (token, span) if kind == "name" else None
        return False

    def _op(self, token: str) -> bool:
        if token in "([{":
            self._check(
                self.prev in _AFTER_SEPARATOR or (token == "(" and self.prev == "name"), token
            )
            self.stack.append(token)
            self.items.append("")
            self.prev = "open"
            return False
        if token in ")]}":
            if not self.stack or self.stack[-1] != _OPENERS[token]:
                self.problem = "the brackets do not match"
                return True
            self.stack.pop()
            self.items.pop()
            self.prev = "value"
            return not self.stack
        inner, seen = (self.stack[-1], self.items[-1]) if self.stack else ("", "")
        if token == ":":
            self._check(inner == "{" and ":" not in seen, token)
        elif token == "=":
            self._check(inner == "(" and self.prev == "name" and "=" not in seen, token)
        else:  # "+", "-", "**", ","
            self._check(token == "," or self.prev in _AFTER_SEPARATOR, token)
        if self.stack:
            self.items[-1] = "" if token == "," else seen + token
        self.prev = "sign" if token in "+-" else "sep"
        return False


def scan_fragment(
    text: str, at: int, limit: int, scan: Scan
) -> tuple[int, list[tuple[int, int, str]]]:
    """Tokenize from the bracket at ``at`` to its match; the end and source fixes.

    The fixes escape raw newlines inside quoted strings. ``scan.problem`` is
    set when the fragment is not allowed.
    """
    end, tokens, pos = min(limit, at + MAX_CHARS), 0, at
    fixes: list[tuple[int, int, str]] = []
    while pos < end:
        match = _TOKEN.match(text, pos, end)
        if match is None:  # pragma: no cover - `other` matches any character
            break
        kind, token, pos = match.lastgroup, match.group(), match.end()
        if kind is None:
            continue
        tokens += 1
        if kind == "str":
            quote, prefix = token.lstrip("rRbBuUfF"), token.lower()
            close = _string_end(text, pos, quote, end)
            if close == -1:
                scan.problem = _TOO_LONG if end < limit else "a string is never closed"
                return end, fixes
            scan._check("f" not in prefix, token)
            content = (pos, close - len(quote))
            if len(quote) == 1 and "r" not in prefix and _has_newline(text, *content):
                raw = text[content[0] : content[1]]
                fixes.append((*content, raw.replace("\r", "\\r").replace("\n", "\\n")))
            pos = close
        if scan.token(kind, token, match.span()):
            return pos, fixes
        if len(scan.stack) > MAX_DEPTH or tokens > MAX_TOKENS:
            scan.problem = f"nested deeper than {MAX_DEPTH} or longer than {MAX_TOKENS} tokens"
            return pos, fixes
    scan.problem = _TOO_LONG if end < limit else "the call is never closed"
    return pos, fixes


def _has_newline(text: str, start: int, end: int) -> bool:
    return text.find("\n", start, end) != -1 or text.find("\r", start, end) != -1


def _string_end(text: str, pos: int, quote: str, end: int) -> int:
    """The index after the quote closing a string whose content starts at ``pos``; -1 if none."""
    content = pos
    while (found := text.find(quote, pos, end)) != -1:
        back = found
        while back > content and text[back - 1] == "\\":
            back -= 1
        if (found - back) % 2 == 0:
            return found + len(quote)
        pos = found + 1
    return -1


def plain_name(name: str) -> bool:
    """True when Python reads ``name`` as an identifier (not ``get-x``, not ``if``)."""
    return name.isidentifier() and not keyword.iskeyword(name)


def source_text(text: str, start: int, end: int, fixes: list[tuple[int, int, str]]) -> str:
    parts, pos = [], start
    for fix_start, fix_end, replacement in sorted(fixes):
        parts += [text[pos:fix_start], replacement]
        pos = fix_end
    return "".join([*parts, text[pos:end]])


def expression(source: str) -> ast.expr | str:
    """The parsed expression, or why it does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences are the model's business
            return ast.parse(source, mode="eval").body
    except SyntaxError as error:
        return f"not a valid call: {error.msg}"
    except (ValueError, MemoryError, RecursionError, OverflowError) as error:
        return f"not a valid call: {error}"


def literal(node: ast.expr) -> object:
    """The JSON value of a literal node (the way ``ast.literal_eval`` reads it)."""
    if isinstance(node, ast.Constant):
        return _constant(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = node.operand
        if isinstance(operand, ast.Constant) and type(operand.value) in (int, float):
            number = _constant(operand.value)
            return -number if isinstance(node.op, ast.USub) else number  # type: ignore[operator]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [literal(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        keys = [literal(key) if key is not None else None for key in node.keys]
        if not all(isinstance(key, str) for key in keys):
            raise Broken("dict keys must be strings")
        return {str(key): literal(value) for key, value in zip(keys, node.values, strict=True)}
    if isinstance(node, ast.Name) and node.id in _WORDS:
        return _WORDS[node.id]
    shown = ast.unparse(node)
    raise Broken(f"`{shown[:40]}` is not a literal value (quote text: {shown[:40]!r})")


def _constant(value: object) -> object:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise Broken(f"{value!r:.40} is not a JSON value")
