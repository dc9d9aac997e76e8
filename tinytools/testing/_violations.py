"""Schema violations: a valid argument dict broken at exactly one place.

A violation is drawn against the tool's model-visible schema (``Tool.parameters``),
at a site where the schema is definite, so the break is certain and not an accident
of a union: a value of a JSON type the site does not admit, a value outside an
``enum`` or ``const``, a number past a bound, a string or array past a length, a
required key left out, a key the object does not allow, a string in no format, or an
injected parameter set by the model. Bounds, lengths and formats are used only where
the tool's validator enforces them (:class:`Enforced`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from tinytools._declare.patterns import linear
from tinytools._declare.schema_dialect import ENFORCED_FORMATS
from tinytools._text import json_type

from ._formats import BREAKS_EVERY_FORMAT
from ._from_schema import JSON_TYPES, Resolver
from ._numbers import beyond

__all__ = ["Enforced", "Violation", "violations"]

#: One value of each JSON type, in the order a shrinker prefers them.
_SAMPLES: dict[str, object] = {
    "string": "x",
    "integer": 7,
    "number": 1.5,
    "boolean": True,
    "null": None,
    "array": [],
    "object": {},
}
#: Types a value of each admitted type also satisfies (JSON Schema's numbers).
_COVERS = {"number": {"number", "integer"}, "integer": {"integer"}}
#: Where a string site carries a ``format``, validators may read numbers into it (msgspec
#: reads a number as a Decimal), so only non-numbers break it for certain.
_NOT_NUMBERS = ("boolean", "null", "array", "object")


@attrs.frozen
class Enforced:
    """What the tool's validator enforces beyond types, ``enum``, ``const`` and keys.

    Attributes:
        bounds: Numeric bounds and lengths (every signature-built tool; a schema-built
            one unless ``enforce="subset"``).
        formats: String formats (a schema-built tool unless ``enforce="subset"``; msgspec
            reads a signature-built tool's formats from its types, not its schema).
    """

    bounds: bool
    formats: bool


#: Types, enums and keys only (a site inside a union, where only a type breaks it surely).
_TYPES_ONLY = Enforced(bounds=False, formats=False)


@attrs.frozen
class Violation:
    """One way to break a valid value: where, what, and the broken value.

    Attributes:
        path: JSON path segments to the site (keys and indexes).
        rule: What the break violates (``type``, ``enum``, ``required``, ...).
        apply: Makes the broken copy of the whole value.
    """

    path: tuple[str | int, ...]
    rule: str
    apply: Callable[[Any], Any] = attrs.field(repr=False)


def violations(
    schema: Mapping[str, object],
    value: Mapping[str, object],
    *,
    enforced: Enforced,
    injected: Sequence[str] = (),
    resolve: Resolver | None = None,
) -> list[Violation]:
    """Every certain way to break ``value`` (valid under ``schema``) at one site
    (``resolve``: a resolver of ``schema`` to reuse)."""
    found: list[Violation] = []
    resolve = Resolver(schema) if resolve is None else resolve
    _walk(resolve, schema, value, (), found, enforced)
    for name in injected:
        found.append(Violation((name,), "injected", _setter((name,), "forged")))
    return found


def _setter(path: tuple[str | int, ...], new: object) -> Callable[[Any], Any]:
    def apply(whole: Any) -> Any:
        return _replace(whole, path, lambda _: new)

    return apply


def _replace(whole: Any, path: tuple[str | int, ...], change: Callable[[Any], Any]) -> Any:
    """A copy of ``whole`` with the node at ``path`` replaced by ``change(node)``."""
    if not path:
        return change(whole)
    head, rest = path[0], path[1:]
    if isinstance(whole, Mapping):
        copy = dict(whole)
        copy[head] = _replace(whole.get(head), rest, change)
        return copy
    items = list(whole)
    items[head] = _replace(items[head], rest, change)  # type: ignore[index]
    return items


def _walk(
    resolve: Resolver,
    schema: object,
    value: object,
    path: tuple[str | int, ...],
    found: list[Violation],
    enforced: Enforced,
) -> None:
    outer = resolve(schema)
    branches = outer.get("anyOf", outer.get("oneOf"))
    if branches is None:
        if path:
            _leaf_violations(resolve, outer, value, path, found, enforced)
        _descend(resolve, outer, value, path, found, enforced)
        return
    # The keywords beside a union apply whatever the branch: breaking one is certain.
    beside = {k: v for k, v in outer.items() if k not in ("anyOf", "oneOf")}
    if path:
        _leaf_violations(resolve, beside, value, path, found, enforced, site=outer)
        union: list[Violation] = []  # only a type no branch admits breaks the union surely
        _leaf_violations(resolve, outer, value, path, union, _TYPES_ONLY)
        found.extend(v for v in union if v.rule.startswith("type"))
    _descend(resolve, beside, value, path, found, enforced)
    node = _branch(resolve, branches, value)
    if node is not None:
        _descend(resolve, node, value, path, found, enforced)


def _descend(
    resolve: Resolver,
    node: Mapping[str, object],
    value: object,
    path: tuple[str | int, ...],
    found: list[Violation],
    enforced: Enforced,
) -> None:
    """The breaks inside an object or array ``value`` that ``node`` checks."""
    if isinstance(value, Mapping) and isinstance(node.get("properties", {}), Mapping):
        _object_violations(resolve, node, value, path, found, enforced)
    elif isinstance(value, list):
        items = node.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                _walk(resolve, items, item, (*path, index), found, enforced)
        if enforced.bounds:
            _length_violations(node, value, path, found, "minItems", "maxItems")


def _branch(resolve: Resolver, branches: object, value: object) -> Mapping[str, object] | None:
    """The one branch of a union ``value`` is checked against, or None when that is
    unclear: exactly one branch admits the value's JSON type."""
    if not isinstance(branches, list):
        return None
    kind = json_type(value)
    matching = [b for b in branches if kind in _admitted(resolve.types(b))]
    return resolve(matching[0]) if len(matching) == 1 else None


def _admitted(types: frozenset[str] | None) -> set[str]:
    if types is None:
        return set(JSON_TYPES)
    return set().union(*(_COVERS.get(t, {t}) for t in types))


def _leaf_violations(
    resolve: Resolver,
    node: Mapping[str, object],
    value: object,
    path: tuple[str | int, ...],
    found: list[Violation],
    enforced: Enforced,
    site: Mapping[str, object] | None = None,
) -> None:
    """The breaks of ``value`` itself that ``node`` checks (``site``: the whole schema at
    ``path``, when ``node`` is only the keywords beside a union)."""
    types = resolve.types(node)
    if types is not None:
        admitted = _admitted(types)
        pool = _NOT_NUMBERS if _formatted(resolve, site or node) else tuple(_SAMPLES)
        for kind in pool:
            if kind not in admitted:
                found.append(Violation(path, f"type: not {kind}", _setter(path, _SAMPLES[kind])))
                break
    enum = node.get("enum")
    if isinstance(enum, list) and enum:
        outside = _outside(enum)
        if outside is not None:
            found.append(Violation(path, "enum", _setter(path, outside)))
    if "const" in node:
        outside = _outside([node["const"]])
        if outside is not None:
            found.append(Violation(path, "const", _setter(path, outside)))
    if enforced.formats and node.get("format") in ENFORCED_FORMATS:
        found.append(Violation(path, "format", _setter(path, BREAKS_EVERY_FORMAT)))
    if not enforced.bounds or isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        _number_violations(node, value, path, found)
    elif isinstance(value, str):
        _length_violations(node, value, path, found, "minLength", "maxLength")


def _formatted(resolve: Resolver, node: Mapping[str, object]) -> bool:
    """Whether the site, or one branch of its union, is a string with a ``format``."""
    if "format" in node:
        return True
    branches = node.get("anyOf", node.get("oneOf"))
    return isinstance(branches, list) and any("format" in resolve(b) for b in branches)


def _outside(members: list[object]) -> object | None:
    """A value of the members' own type that is none of them (a near miss), if easy."""
    strings = [m for m in members if isinstance(m, str)]
    if strings and len(strings) == len(members):
        return max(strings, key=len) + "_"
    numbers = [m for m in members if isinstance(m, int) and not isinstance(m, bool)]
    if numbers and len(numbers) == len(members):
        return max(numbers) + 1
    return None


def _number_violations(
    node: Mapping[str, object], value: float, path: tuple[str | int, ...], found: list[Violation]
) -> None:
    # An integer past the bound, found exactly: `1e20 + 1` is `1e20` again in floats.
    for key, above, open_ in (
        ("minimum", False, False),
        ("exclusiveMinimum", False, True),
        ("maximum", True, False),
        ("exclusiveMaximum", True, True),
    ):
        bound = node.get(key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            broken = beyond(bound, above=above, open_=open_)
            found.append(Violation(path, key, _setter(path, broken)))


def _length_violations(
    node: Mapping[str, object],
    value: str | list[object],
    path: tuple[str | int, ...],
    found: list[Violation],
    low_key: str,
    high_key: str,
) -> None:
    low, high = node.get(low_key), node.get(high_key)
    if isinstance(low, int) and low > 0:
        shorter = value[: low - 1]
        found.append(Violation(path, low_key, _setter(path, shorter)))
    if isinstance(high, int) and (isinstance(value, str) or value):
        filler = value[:1] if value else "x"
        longer = value + filler * (high + 1 - len(value))  # type: ignore[operator]
        found.append(Violation(path, high_key, _setter(path, longer)))


def _object_violations(
    resolve: Resolver,
    node: Mapping[str, object],
    value: Mapping[str, object],
    path: tuple[str | int, ...],
    found: list[Violation],
    enforced: Enforced,
) -> None:
    properties = node.get("properties") or {}
    assert isinstance(properties, Mapping)
    required = node.get("required") or []
    for name in required if isinstance(required, list) else []:
        # A required key with one allowed value may be a Struct's tag, which msgspec fills
        # in when it is left out (outside a union): leaving it out is no certain break.
        fixed = resolve(properties.get(name, {}))
        members = fixed.get("enum")
        if "const" in fixed or (isinstance(members, list) and len(members) == 1):
            continue
        if name in value:
            found.append(Violation((*path, name), "required", _dropper(path, name)))
    patterns = node.get("patternProperties")
    patterns = patterns if isinstance(patterns, Mapping) else {}
    if node.get("additionalProperties") is False:
        extra = _unlisted(properties, patterns, value)
        if extra is not None:
            found.append(
                Violation((*path, extra), "additionalProperties", _setter((*path, extra), 1))
            )
    for name, sub in properties.items():
        if name in value:
            _walk(resolve, sub, value[name], (*path, name), found, enforced)
        else:
            # An optional property left out: sending it with a wrong type breaks it too.
            absent: list[Violation] = []
            _leaf_violations(resolve, resolve(sub), None, (*path, name), absent, _TYPES_ONLY)
            found.extend(v for v in absent if v.rule.startswith("type"))
    extra_schema = node.get("additionalProperties")
    if isinstance(extra_schema, Mapping):
        for name, item in value.items():
            if name not in properties and not _matched(patterns, name):
                _walk(resolve, extra_schema, item, (*path, name), found, enforced)


def _matched(patterns: Mapping[str, object], key: str) -> bool:
    """Whether a ``patternProperties`` name matches ``key`` (one RE2 cannot run counts:
    the validator drops it with the ``additionalProperties`` beside it, so that keyword
    decides nothing for certain there)."""
    return any((found := linear(p)) is None or found.search(key) for p in patterns)


def _unlisted(
    properties: Mapping[str, object], patterns: Mapping[str, object], value: Mapping[str, object]
) -> str | None:
    """A key that ``additionalProperties`` governs: no property's, no pattern's and not
    in ``value``; None when the few tried all match a pattern."""
    for start in ("unexpected", "_unexpected", "0", "~", " "):
        key = start
        while key in properties or key in value:
            key += "_"
        if not _matched(patterns, key):
            return key
    return None


def _dropper(path: tuple[str | int, ...], name: str) -> Callable[[Any], Any]:
    def apply(whole: Any) -> Any:
        return _replace(whole, path, lambda node: {k: v for k, v in node.items() if k != name})

    return apply
