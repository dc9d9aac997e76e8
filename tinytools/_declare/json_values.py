"""What JSON text can carry: the checks that refuse a value no JSON text could hold.

A model's JSON may hold a lone surrogate, NaN, an integer too long to read or a
repeated field; a host's decoded arguments may hold a foreign object, a key of another
type or a ``str`` subclass. Each is refused at its JSON path (``json_problem``,
``text_problem``) or read as the plain value it holds (``plain_values``). Every walk
here is iterative: a value nesting deeper than Python recurses is an error, not a crash.
"""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Mapping
from typing import Any

import msgspec

from tinytools._text import preview, printable
from tinytools.errors import ToolArgumentsError

from .messages import too_deep

__all__ = [
    "as_json_tree",
    "as_json_values",
    "integral_floats_to_int",
    "json_problem",
    "past_float",
    "plain_values",
    "suspect",
    "text_problem",
]

_encode = msgspec.json.encode
_decode = msgspec.json.decode


def integral_floats_to_int(value: object) -> object:
    """Copy a decoded JSON value with every integral float made an int (no recursion)."""
    stack: list[dict[str, object] | list[object]] = []

    def fix(item: object) -> object:
        if isinstance(item, float) and item.is_integer():
            return int(item)
        if isinstance(item, dict):
            stack.append(dict(item))
            return stack[-1]
        if isinstance(item, list):
            stack.append(list(item))
            return stack[-1]
        return item

    root = fix(value)
    while stack:
        container = stack.pop()
        if isinstance(container, dict):
            for key, item in container.items():
                container[key] = fix(item)
        else:
            for index, item in enumerate(container):
                container[index] = fix(item)
    return root


def as_json_values(tool_name: str, value: object) -> object:
    """Decoded arguments a host passed, as the tool gets them: values of a ``str``,
    ``int`` or ``float`` subclass (an SDK's own types, which msgspec does not encode) as
    the plain values they hold (see :func:`plain_values`), as raw text of a ``str``
    subclass is read as its text; a value JSON text cannot carry is the schema error
    ``json_problem`` names.

    A cheap gate first: msgspec encodes the value in C, failing on subclasses, lone
    surrogates and huge integers and writing ``null`` for NaN and infinities; only then
    is it walked (arguments it encodes as they are cost nothing more).
    """
    plain = False
    try:
        suspect = _encode(value).find(b"null") >= 0  # `in` costs more than find here
    except RecursionError:
        raise too_deep(tool_name) from None  # no event or message could carry it either
    except (TypeError, ValueError, OverflowError):
        suspect = plain = True
    # (walked as plain values when the encoder refused them: no method of theirs runs)
    return _walked(tool_name, value, copy=plain) if suspect else value


def as_json_tree(tool_name: str, value: object) -> object:
    """Decoded arguments a host passed, as a schema-built tool gets them: read back from
    the JSON text msgspec writes for them, when that reads back equal — a copy whose
    keys are plain ``str`` at every depth (msgspec writes a key of a ``str`` subclass
    as its text, and the tool must not get the SDK's type, nor the key's own methods).

    Otherwise (an ``int`` key, which JSON writes as text but which is no JSON key; a
    value msgspec writes differently or not at all; a key whose ``__eq__`` raised) the
    arguments are walked: the first value or key JSON cannot carry is the schema error
    ``json_problem`` names, and the tool gets them as :func:`plain_values` makes them.
    All of this is C work (one encode, one decode, one comparison) unless the walk is
    needed: schema validation itself costs far more.
    """
    try:
        encoded = _encode(value)
    except RecursionError:
        raise too_deep(tool_name) from None
    except (TypeError, ValueError, OverflowError):
        pass  # a subclass value, a lone surrogate, a huge integer: walked below
    else:
        if encoded.find(b"null") < 0:  # (NaN and infinities are written as null)
            try:
                tree = _decode(encoded)
                if tree == value:
                    return tree
            except Exception:  # a key's own __eq__, or text too deep to read
                pass
    return _walked(tool_name, value, copy=True)


def _walked(tool_name: str, value: object, *, copy: bool) -> object:
    """``value`` (with ``copy``: as :func:`plain_values` makes it) once :func:`json_problem`
    finds nothing in it JSON text cannot carry.

    Raises:
        ToolArgumentsError: Naming the first such value at its path, or saying the
            arguments nest deeper than JSON text can be read (a value holding itself).
    """
    try:
        if copy:
            value = plain_values(value)
        problem = json_problem(value)
    except RecursionError:
        raise too_deep(tool_name) from None
    if problem is not None:
        raise ToolArgumentsError(tool_name, problem[1], path=problem[0])
    return value


def suspect(value: object) -> bool:
    """Whether decoded ``value`` may hold something JSON text cannot carry (see
    :func:`as_json_values`: msgspec's encoder fails on lone surrogates and huge integers
    and writes ``null`` for NaN and infinities)."""
    try:
        return _encode(value).find(b"null") >= 0
    except (TypeError, ValueError, OverflowError, RecursionError):
        return True


def past_float(value: object) -> str:
    """The path of the first integer in ``value`` that no float can hold (``$`` if none)."""
    stack: list[tuple[object, str]] = [(value, "$")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, Mapping):
            stack.extend((child, _child(path, str(key))) for key, child in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))
        elif isinstance(item, int) and item.bit_length() > 1024:
            return path
    return "$"


#: Decoded integers longer than this (in bits) have no decimal text in Python.
_LONGEST_INT = 14_000


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{preview(key)}]"


def _value_problem(item: object) -> str | None:
    """Why one scalar cannot be JSON text, or None."""
    if isinstance(item, str):
        if type(item) is not str:  # (read as the text it holds, as printable reads it)
            item = str.__str__(item)
        if printable(item) is not item:
            return (
                "String holds a lone surrogate (an unpaired `\\ud800`-`\\udfff` escape), "
                "which JSON text cannot carry; send valid Unicode text"
            )
    elif isinstance(item, float):
        if item - item != 0:
            found = "NaN" if item != item else ("Infinity" if item > 0 else "-Infinity")
            return f"Expected a finite `number`, got `{found}`; JSON has no such number"
    elif isinstance(item, _Huge) or (
        isinstance(item, int) and not isinstance(item, bool) and item.bit_length() > _LONGEST_INT
    ):
        return "Integer value out of range; send an integer of at most 4,000 digits"
    elif item is not None and not isinstance(item, (int, _Huge)):  # a host's own object
        try:
            _encode(item)
        except (TypeError, ValueError, OverflowError, RecursionError):
            return f"Expected a JSON value, got `{type(item).__name__}`"
    return None


def _key_problem(key: object) -> str | None:
    """Why one object key cannot be JSON text, or None. JSON's object keys are strings:
    a key of any other type is refused, a number too (msgspec would write it as text,
    but a tool would be handed the number, and ``**arguments`` refuses it)."""
    if isinstance(key, str):
        return _value_problem(key)
    return f"Expected a `string` object key, got `{type(key).__name__}`"


def json_problem(value: object) -> tuple[str, str] | None:
    """The first value in decoded ``value`` that JSON text cannot carry: ``(path, detail)``.

    Lone surrogates (in keys or strings), NaN and infinities, integers msgspec cannot
    read (more than 4,300 characters): raw text holding them is refused by msgspec, so
    decoded arguments are refused too, whichever route they took. So are a host's own
    objects no JSON text can write (a key or value msgspec cannot encode), which no
    event or result could carry. Walks without recursion.

    Raises:
        RecursionError: ``value`` nests deeper than JSON text can be read (msgspec's
            and Python's limit; a value holding itself does).
    """
    stack: list[tuple[object, str, int]] = [(value, "$", 0)]
    deepest = sys.getrecursionlimit()
    while stack:
        item, path, depth = stack.pop()
        if depth > deepest and isinstance(item, (Mapping, list, tuple)):
            raise RecursionError("the arguments nest too deeply")
        if isinstance(item, _Pairs):
            seen: set[str] = set()
            for key, child in item:
                where = _child(path, printable(key))
                if key in seen:
                    return where, f"Object repeats field `{printable(key)}`; send each field once"
                seen.add(key)
                problem = _value_problem(key)
                if problem is not None:
                    return where, problem
                stack.append((child, where, depth + 1))
        elif isinstance(item, Mapping):
            for key, child in item.items():
                where = (
                    _child(path, printable(key))
                    if isinstance(key, str)
                    else f"{path}[{preview(key)}]"
                )
                problem = _key_problem(key)
                if problem is not None:
                    return where, problem
                stack.append((child, where, depth + 1))
        elif isinstance(item, (list, tuple)):
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item))
        else:
            problem = _value_problem(item)
            if problem is not None:
                return path, problem
    return None


def plain_values(value: object) -> object:
    """``value`` with each ``str``, ``int`` and ``float`` of a subclass, keys included,
    replaced by the plain value it holds; containers are copied (a ``Mapping`` as a
    ``dict``, a tuple as a list: JSON has arrays). Enum members stay: msgspec encodes
    them as their values. Anything else is left as it is, for the schema to accept or
    refuse. Walks without recursion.

    Raises:
        RecursionError: ``value`` nests deeper than JSON text can be read (a value
            holding itself does).
    """
    stack: list[tuple[dict[object, object] | list[object], int]] = []
    deepest = sys.getrecursionlimit()

    def plain(item: object, depth: int) -> object:
        if isinstance(item, (Mapping, list, tuple)):
            if depth > deepest:
                raise RecursionError("the arguments nest too deeply")
            copied: dict[object, object] | list[object] = (
                {_plain_scalar(key): child for key, child in item.items()}
                if isinstance(item, Mapping)
                else list(item)
            )
            stack.append((copied, depth))
            return copied
        return _plain_scalar(item)

    root = plain(value, 0)
    while stack:
        container, depth = stack.pop()
        if isinstance(container, dict):
            for key, child in container.items():
                container[key] = plain(child, depth + 1)
        else:
            for index, child in enumerate(container):
                container[index] = plain(child, depth + 1)
    return root


def _plain_scalar(item: object) -> object:
    # Told by type and written by the base type's own method (as `_text` writes scalars): no
    # method of the subclass runs, and a value posing as a str (by __class__) is none.
    kind = type(item)
    if kind is str or kind is int or kind is float or kind is bool or item is None:
        return item
    if isinstance(item, enum.Enum):
        return item
    found: Any = item
    if issubclass(kind, str):
        return str.__str__(found)
    if issubclass(kind, int):
        return int.__index__(found)
    if issubclass(kind, float):
        return float.__float__(found)
    return item


class _Pairs(list[tuple[str, object]]):
    """One JSON object's members in order, repeats kept (``object_pairs_hook``)."""

    __slots__ = ()


class _Huge:
    """An integer too long for Python to read from text (``parse_int``)."""

    __slots__ = ()


#: The longest integer text msgspec reads, sign included (past it: "Integer value out of range").
_MOST_DIGITS = 4300


def _parse_int(text: str) -> object:
    # Only the length matters here, and it matters exactly as it does to msgspec: text
    # that msgspec decodes is never refused here for its integers (once, integers of
    # 4,000 to 4,300 digits were, and only when the text also held a `\u` escape).
    return 0 if len(text) <= _MOST_DIGITS else _Huge()


_PAIRS = json.JSONDecoder(object_pairs_hook=_Pairs, parse_int=_parse_int)


def text_problem(text: str | bytes) -> tuple[str, str] | None:
    """The first repeated field or unreadable value in JSON ``text``: ``(path, detail)``.

    The slow, exact check behind the decoders' cheap bound: the standard library's
    scanner keeps every member of every object. Text it cannot read (not JSON, or
    nested past the recursion limit) has no such problem to report: msgspec's own
    error stands.
    """
    try:
        tree = _PAIRS.decode(text if isinstance(text, str) else text.decode())
    except (ValueError, RecursionError):
        return None
    return json_problem(tree)
