"""Valid values from a hand-written JSON schema (``Tool.from_schema`` tools).

Not ``hypothesis-jsonschema``: its latest release (0.23.1, February 2024) calls a
private hypothesis API (``conjecture.utils.many.more``) that hypothesis has since
removed, so with a current hypothesis every object schema fails to draw with an
``AttributeError``; depending on it would cap every user's hypothesis version.
Tool schemas use a small part of JSON Schema (``type``, ``properties``,
``required``, ``additionalProperties``, ``items``, ``enum``, ``const``, bounds,
lengths, ``pattern``, the ``format``\\s ``Tool.validate`` enforces, ``anyOf``,
``allOf``, ``$ref``), which this module draws directly. :func:`needs_check` says
when a schema uses anything else. Drawing is exact keyword by keyword, not for
every combination (an ``anyOf`` of ``required`` beside ``properties``), so
``valid_arguments`` keeps only the values the tool's own validator accepts, always.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from fractions import Fraction
from typing import TypeGuard

import msgspec
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from tinytools._declare.patterns import Pattern, linear
from tinytools._declare.schema_dialect import ENFORCED_FORMATS
from tinytools._text import json_type

from ._conjunction import ANNOTATIONS, conjunction
from ._formats import formatted, in_format
from ._json import INTEGERS, json_values, keys
from ._numbers import decimal_multiples, float_interval, integer_interval, integer_multiples

__all__ = ["JSON_TYPES", "Resolver", "needs_check", "values_from_schema"]

JSON_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")
#: Keywords drawn exactly; annotations that constrain nothing are listed too.
_UNDERSTOOD = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "enum",
        "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems",
        "anyOf", "allOf", "$ref", "format", "multipleOf", "nullable", "optional",
        *ANNOTATIONS,
    }
)  # fmt: skip
_MAX_EXTRA_ITEMS = 4
#: The schema ``false`` as a part of an ``allOf``: no value meets it.
_NOTHING: Mapping[str, object] = {"enum": []}


def _has_type(value: object, allowed: str) -> bool:
    found = json_type(value)
    if allowed == "number":
        return found in {"integer", "number"}
    if allowed == "integer" and isinstance(value, float):
        return value.is_integer()
    return found == allowed


class Resolver:
    """Reads the subschemas of one schema as the drawer needs them: local references
    (``#/$defs/...``, ``#/definitions/...``) followed, and an ``allOf`` (or a ``$ref``
    with constraints beside it, which 2020-12 applies too) merged into one schema."""

    def __init__(self, root: Mapping[str, object]) -> None:
        self.root = root
        # id(node) -> (node, its merge): the node is kept, so its id is never reused.
        self._merged: dict[int, tuple[object, Mapping[str, object]]] = {}

    def __call__(self, schema: object) -> Mapping[str, object]:
        """``schema`` with references followed and ``allOf`` merged (an unreadable
        reference reads as ``{}``)."""
        node = self._followed(schema)
        if "allOf" not in node and "$ref" not in node:
            return node
        key = id(node)
        if key not in self._merged:
            self._merged[key] = (node, conjunction(self._parts(node)))
        return self._merged[key][1]

    def _followed(self, schema: object) -> Mapping[str, object]:
        """The end of ``schema``'s ``$ref`` chain, stopping at a reference with
        constraints beside it."""
        seen = 0
        while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and seen < 32:
            if not set(schema) - ANNOTATIONS <= {"$ref"}:
                return schema
            schema, seen = self._target(str(schema["$ref"])), seen + 1
        return schema if isinstance(schema, Mapping) else {}

    def _target(self, ref: str) -> object:
        node: object = self.root
        for part in ref.removeprefix("#").strip("/").split("/"):
            node = node.get(part) if isinstance(node, Mapping) and part else node
        return node

    def _parts(self, node: Mapping[str, object]) -> list[Mapping[str, object]]:
        """The schemas ``node`` asks a value to meet, in order, its ``allOf`` and
        reference split out (a part met again on the way is met already)."""
        parts: list[Mapping[str, object]] = []
        seen: set[int] = set()
        stack = [node]
        while stack:
            current = stack.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            parts.append({k: v for k, v in current.items() if k not in ("allOf", "$ref")})
            inner: list[Mapping[str, object]] = []
            ref = current.get("$ref")
            if isinstance(ref, str):
                inner.append(self._followed(self._target(ref)))
            branches = current.get("allOf")
            for branch in branches if isinstance(branches, list) else []:
                inner.append(_NOTHING if branch is False else self._followed(branch))
            stack.extend(reversed(inner))
        return parts

    def types(self, schema: object) -> frozenset[str] | None:
        """The JSON types ``schema`` admits, when it says so definitely; else None."""
        node = self(schema)
        if "anyOf" in node or "oneOf" in node:
            branches = node.get("anyOf", node.get("oneOf"))
            if not isinstance(branches, list):
                return None
            found: set[str] = set()
            for branch in branches:
                part = self.types(branch)
                if part is None:
                    return None
                found |= part
            return frozenset(found)
        declared = node.get("type")
        if isinstance(declared, str):
            return frozenset({declared})
        if isinstance(declared, list) and all(isinstance(t, str) for t in declared):
            return frozenset(declared)
        return None


def needs_check(schema: Mapping[str, object]) -> bool:
    """Whether ``schema`` uses keywords :func:`values_from_schema` does not draw exactly."""
    stack: list[object] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, Mapping):
            continue
        if set(node) - _UNDERSTOOD:
            return True
        if "format" in node and node["format"] not in ENFORCED_FORMATS:
            return True
        step = node.get("multipleOf")
        if step is not None and (node.get("type") != "integer" or not isinstance(step, int)):
            return True
        for key in ("properties", "$defs", "definitions"):
            children = node.get(key)
            if isinstance(children, Mapping):
                stack.extend(children.values())
        for key in ("items", "additionalProperties", "anyOf", "oneOf"):
            stack.append(node.get(key))
    return False


def values_from_schema(schema: Mapping[str, object]) -> SearchStrategy[object]:
    """Values valid under ``schema`` (exactly, unless :func:`needs_check` says otherwise)."""
    return _Drawer(Resolver(schema)).of(schema)


class _Drawer:
    def __init__(self, resolve: Resolver) -> None:
        self.resolve = resolve
        # id(node) -> (node, its strategy); placed before building, so a recursive
        # reference meets the deferral (the node is kept, so its id is never reused).
        self._built: dict[int, tuple[object, SearchStrategy[object]]] = {}

    def of(self, schema: object) -> SearchStrategy[object]:
        if isinstance(schema, bool):
            return json_values() if schema else st.nothing()
        if not isinstance(schema, Mapping):
            return json_values()
        key = id(schema)
        if key not in self._built:
            self._built[key] = (schema, st.deferred(lambda: built))
            built = self._of(schema)
            self._built[key] = (schema, built)
        return self._built[key][1]

    def _of(self, schema: Mapping[str, object]) -> SearchStrategy[object]:
        if "$ref" in schema or "allOf" in schema:
            return self.of(self.resolve(schema))
        if "const" in schema:
            return st.just(schema["const"])
        declared = schema.get("type")
        allowed = [declared] if isinstance(declared, str) else declared
        members = schema.get("enum")
        if isinstance(members, list):
            values = [
                v
                for v in members
                if not isinstance(allowed, list) or any(_has_type(v, t) for t in allowed)
            ]
            return st.sampled_from(values) if values else st.nothing()
        branches = schema.get("anyOf", schema.get("oneOf"))
        if isinstance(branches, list):  # oneOf's overlaps are left to the validator's check
            siblings = {k: v for k, v in schema.items() if k not in ANNOTATIONS}
            siblings = {k: v for k, v in siblings.items() if k not in ("anyOf", "oneOf")}
            if not siblings:
                return st.one_of([self.of(branch) for branch in branches])
            # A branch is drawn with the keywords beside it, since a value meets both.
            both = [self.resolve({"allOf": [siblings, branch]}) for branch in branches]
            return st.one_of([self.of(node) for node in both])
        if not isinstance(allowed, list):
            return json_values()
        return st.one_of([self._typed(schema, t) for t in allowed if t in _TYPED])

    def _typed(self, schema: Mapping[str, object], kind: str) -> SearchStrategy[object]:
        return _TYPED[kind](self, schema)

    def _object(self, schema: Mapping[str, object]) -> SearchStrategy[object]:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        listed = schema.get("required")
        required = [r for r in listed if isinstance(r, str)] if isinstance(listed, list) else []
        extra = schema.get("additionalProperties")
        # A required key no property lists is an extra one: `additionalProperties` governs
        # it (unless a `patternProperties` name may match it: then any value, checked).
        unlisted: object = extra if isinstance(extra, (Mapping, bool)) else {}
        unlisted = {} if "patternProperties" in schema else unlisted
        parts: list[SearchStrategy[list[tuple[str, object]]]] = []
        for name in dict.fromkeys([*properties, *required]):
            sub = properties.get(name, unlisted)
            pair = st.tuples(st.just(name), self.of(sub)).map(lambda p: [p])
            parts.append(pair if name in required else st.just([]) | pair)
        if isinstance(extra, Mapping) and extra:
            # Only a schema for extra keys invites them; an absent or `true` one merely allows.
            more = st.dictionaries(
                keys().filter(lambda k: k not in properties), self.of(extra), max_size=2
            ).map(lambda d: list(d.items()))
            parts.append(more)
        return st.tuples(*parts).map(lambda chunks: dict(p for chunk in chunks for p in chunk))

    def _array(self, schema: Mapping[str, object]) -> SearchStrategy[object]:
        low = _int(schema.get("minItems"), 0)
        high = _int(schema.get("maxItems"), low + _MAX_EXTRA_ITEMS)
        if high < low:  # no length fits
            return st.nothing()
        high = min(high, low + _MAX_EXTRA_ITEMS)
        items = schema.get("items", {})
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):  # 2020-12's tuple form: these (the rest is left out)
            head = st.tuples(*(self.of(item) for item in prefix)).map(list)
            return head.filter(lambda v: low <= len(v) <= max(high, len(prefix)))
        if items is False:  # no item at all
            return st.just([]) if low == 0 else st.nothing()
        if isinstance(items, list):  # draft 7's tuple form: these first, any after
            head = st.tuples(*(self.of(item) for item in items)).map(list)
            return head.filter(lambda v: low <= len(v) <= max(high, len(items)))
        unique = bool(schema.get("uniqueItems"))
        drawn = self.of(items)
        if unique:
            return st.lists(drawn, min_size=low, max_size=high, unique_by=_canonical)
        return st.lists(drawn, min_size=low, max_size=high)

    def _string(self, schema: Mapping[str, object]) -> SearchStrategy[object]:
        low = _int(schema.get("minLength"), 0)
        high = schema.get("maxLength")
        high = high if isinstance(high, int) else None
        if high is not None and high < low:  # no length fits
            return st.nothing()
        fmt = schema.get("format")
        shaped = formatted(fmt, low, high) if isinstance(fmt, str) else None
        pattern = schema.get("pattern")
        if not isinstance(pattern, str):
            return st.text(min_size=low, max_size=high) if shaped is None else shaped
        matches = linear(pattern) or re.compile(pattern)  # RE2: linear in the text
        # ASCII classes: `\d`, `\w` and `\b` are ASCII in RE2 and ECMA-262, not in `re`
        written = re.compile(pattern, re.ASCII)
        drawn = st.from_regex(written).map(functools.partial(_ecma_end, matches))
        drawn = drawn.filter(lambda s: low <= len(s) and (high is None or len(s) <= high))
        if shaped is None:
            return drawn
        if shaped.is_empty:
            return shaped
        # Both: a value in the format that the pattern matches, or a match in the format.
        assert isinstance(fmt, str)
        return shaped.filter(lambda s: bool(matches.search(s))) | drawn.filter(in_format(fmt))

    def _number(self, schema: Mapping[str, object], integral: bool) -> SearchStrategy[object]:
        low, low_open = _bound(schema, "minimum", "exclusiveMinimum", lower=True)
        high, high_open = _bound(schema, "maximum", "exclusiveMaximum", lower=False)
        given = schema.get("multipleOf")
        step = given if _is_number(given) and given > 0 else None
        integers = _integers(low, low_open, high, high_open, step)
        if integral:
            return integers
        floats = float_interval(low, low_open, high, high_open)
        if floats is None:  # no float lies between the bounds (an integer still may)
            return integers
        lo, hi = floats
        if isinstance(step, float):
            return decimal_multiples(step, lo, hi) | integers
        if step is not None:  # an integer step: its multiples are integers
            return integers
        return st.floats(lo, hi, allow_nan=False, allow_infinity=False) | integers


def _ecma_end(pattern: Pattern | re.Pattern[str], text: str) -> str:
    """Python's ``$`` also matches before a final newline; JSON Schema's (ECMA 262) does not."""
    trimmed = text.removesuffix("\n")
    return trimmed if trimmed != text and pattern.search(trimmed) else text


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _bound(
    schema: Mapping[str, object], inclusive: str, exclusive: str, *, lower: bool
) -> tuple[float | None, bool]:
    """The bound and whether it is open: the tighter of the inclusive and the exclusive
    one (from draft 6 on both apply), or draft 4's boolean ``exclusive`` form."""
    strict, value = schema.get(exclusive), schema.get(inclusive)
    found: list[tuple[float, bool]] = []
    if _is_number(value):
        found.append((value, strict is True))
    if _is_number(strict):
        found.append((strict, True))
    if not found:
        return None, False
    # The larger lower bound, the smaller upper one; at one value, the open one.
    if lower:
        return max(found, key=lambda pair: (pair[0], pair[1]))
    return min(found, key=lambda pair: (pair[0], not pair[1]))


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _integers(
    low: float | None,
    low_open: bool,
    high: float | None,
    high_open: bool,
    step: int | float | None,
) -> SearchStrategy[object]:
    span = integer_interval(low, low_open, high, high_open)
    if span is None:  # no integer lies between the bounds
        return st.nothing()
    first, last = span
    if (first, last) == (None, None) and step is None:
        return INTEGERS
    # (one bound alone may lie past the 64-bit range, which JSON numbers can: the
    # other end follows it)
    if first is None:
        first = -(2**63) if last is None else min(-(2**63), last - 2**64)
    if last is None:
        last = max(2**64 - 1, first + 2**64)
    if isinstance(step, int):
        return integer_multiples(step, first, last)
    if isinstance(step, float):  # whole multiples of a fraction: multiples of its numerator
        numerator = Fraction(Decimal(repr(step))).numerator
        return integer_multiples(numerator, first, last)
    return st.integers(first, last)


def _canonical(value: object) -> bytes:
    return msgspec.json.encode(value, order="sorted")


_TYPED: dict[str, Callable[[_Drawer, Mapping[str, object]], SearchStrategy[object]]] = {
    "null": lambda _, __: st.none(),
    "boolean": lambda _, __: st.booleans(),
    "integer": lambda d, s: d._number(s, integral=True),
    "number": lambda d, s: d._number(s, integral=False),
    "string": _Drawer._string,
    "array": _Drawer._array,
    "object": _Drawer._object,
}
