"""Text for messages and events: every value shown, whatever it holds, as printable text.

Names, previews and JSON written into messages, events, errors and the terminal go
through here, so that a model's lone surrogate, a huge integer, a value nesting deeper
than Python recurses or a host's own object never makes a ``DispatchResult`` (or a
line of output) impossible to encode.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

__all__ = ["json_text", "json_type", "preview", "printable"]

_encode = msgspec.json.encode


def printable(text: str) -> str:
    """``text`` with every lone surrogate written as an escape (``\\udc80``).

    A model's ``"\\udc80"`` decodes to a lone surrogate, which no UTF-8 or JSON
    encoder can write: names and previews echoed into messages and events go
    through here so that every ``DispatchResult`` encodes. Always a plain ``str``:
    text of a subclass (an SDK's own string type) is read as the text it holds, and
    none of its methods runs.
    """
    if type(text) is not str:
        text = str.__str__(text)
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode()
    return text


def json_type(value: object) -> str:
    """The JSON Schema type name of a decoded value (its Python name when it has none)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    return "object" if isinstance(value, Mapping) else type(value).__name__


def preview(value: object, limit: int = 60, *, raw_text: bool = False) -> str:
    """``value`` as JSON text, cut to ``limit`` characters; never raises.

    With ``raw_text``, a string is shown as itself (raw arguments as the model sent
    them). Whatever the model sent — nesting deeper than Python recurses, integers
    too long to print, lone surrogates — the preview is printable text.
    """
    text = value if raw_text and isinstance(value, str) else json_text(value, limit)
    text = printable(text if len(text) <= limit else text[: limit - 1] + "…")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_text(value: object, limit: int | None = None) -> str:
    """Compact JSON text for ``value``; never raises.

    What msgspec cannot encode (a foreign object, a huge integer, a lone surrogate,
    very deep nesting) is written by a bounded walk instead: a JSON-like text, stopped
    once it passes ``limit`` characters, with placeholders for what has no text.
    """
    try:
        return _encode(value).decode()
    except (TypeError, ValueError, OverflowError, RecursionError):
        return "".join(_pieces(value, limit))


class _Token(str):
    """Punctuation queued by :func:`_pieces` (emitted as is)."""

    __slots__ = ()


def _scalar_text(item: object) -> str:
    # Told by type and written by the base type's own methods: a subclass (a host's own
    # str or int type, which msgspec does not encode) reads as the value it holds, and
    # its overridden methods are never called.
    kind = type(item)
    if item is None or kind is bool:
        return _encode(item).decode()
    value: Any = item  # (its type tells below: a value posing as a str is none)
    if issubclass(kind, str):
        return _encode(printable(str.__str__(value))).decode()
    if issubclass(kind, int):
        bits = int.bit_length(value)
        return int.__repr__(value) if bits <= 256 else f"<integer of {bits} bits>"
    if issubclass(kind, float):
        text = float.__repr__(value)
        if math.isfinite(value):
            return text
        return {"nan": "NaN", "inf": "Infinity"}.get(text, "-Infinity")
    try:
        return printable(f"<{type(item).__qualname__}>")
    except Exception:  # a hostile __qualname__ must not crash a preview
        return "<object>"


def _pieces(value: object, limit: int | None) -> Iterator[str]:
    """JSON-like text for ``value``, piece by piece, without recursion; a container
    deeper than JSON text can be read (a value holding itself, say) is ``…``."""
    stack: list[tuple[object, int]] = [(value, 0)]
    deepest = sys.getrecursionlimit()
    size = 0
    while stack and (limit is None or size <= limit):
        item, depth = stack.pop()
        if isinstance(item, _Token):
            piece = str(item)
        elif depth > deepest and isinstance(item, (Mapping, list, tuple)):
            piece = "…"
        elif isinstance(item, Mapping):
            piece = "{"
            stack.append((_Token("}"), 0))
            entries = list(item.items())
            for index in range(len(entries) - 1, -1, -1):
                key, child = entries[index]
                stack.append((child, depth + 1))
                # (a key that is no str is shown as the text of what it is, quoted; its
                # own __str__ never runs)
                text = _scalar_text(key)
                text = text if issubclass(type(key), str) else _scalar_text(text)
                stack.append((_Token(text + ":"), 0))
                if index:
                    stack.append((_Token(","), 0))
        elif isinstance(item, (list, tuple)):
            piece = "["
            stack.append((_Token("]"), 0))
            for index in range(len(item) - 1, -1, -1):
                stack.append((item[index], depth + 1))
                if index:
                    stack.append((_Token(","), 0))
        else:
            piece = _scalar_text(item)
        size += len(piece)
        yield piece
