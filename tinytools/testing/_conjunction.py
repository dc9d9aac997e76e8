"""``allOf``: the schemas a value must all meet, merged into one the drawer reads.

A value meets the merge exactly when it meets every part, keyword by keyword: types
intersect, ``properties`` join (a key in two parts meets both), ``required`` keys add
up, bounds and lengths take the tighter side, ``enum`` lists intersect, and a part's
``additionalProperties`` reaches the other parts' keys (``false`` forbids them). Two
keywords that do not merge into one (two ``pattern``\\s, two ``format``\\s, two
unions, two float ``multipleOf``\\s) keep the first part's: the merge is then looser
than the parts, which is still safe for both strategies, since ``valid_arguments``
keeps only what the tool's validator accepts, and a break of a kept keyword breaks
the part it came from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["ANNOTATIONS", "conjunction"]

#: Keywords that constrain nothing.
ANNOTATIONS = frozenset(
    {
        *("description", "title", "default", "examples", "deprecated", "readOnly"),
        *("writeOnly", "$comment", "$schema", "$id", "$defs", "definitions"),
    }
)
_LOWER = frozenset({"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"})
_UPPER = frozenset({"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"})
#: Keywords read together: one part's are kept whole, never mixed with another's.
_GROUPS = (frozenset({"if", "then", "else"}), frozenset({"contains", "minContains", "maxContains"}))


def conjunction(parts: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """One schema for "every one of ``parts``" (each with its references followed and
    its own ``allOf`` already split into parts)."""
    merged: dict[str, object] = {}
    for part in parts:
        taken = {key for group in _GROUPS if group & merged.keys() for key in group}
        for key, value in part.items():
            if key in taken:
                continue
            merged[key] = _combined(key, merged[key], value) if key in merged else value
    if "const" in merged and any("const" in p and p["const"] != merged["const"] for p in parts):
        del merged["const"]
        merged["enum"] = []  # two different constants: no value is both
    _close(merged, parts)
    return merged


def _combined(key: str, first: object, second: object) -> object:
    if key == "type":
        return _types(first, second)
    if key in _LOWER | _UPPER and isinstance(first, (int, float)) and _is_number(second):
        assert isinstance(second, (int, float))
        return max(first, second) if key in _LOWER else min(first, second)
    if key == "required" and isinstance(first, list) and isinstance(second, list):
        return list(dict.fromkeys([*first, *second]))
    if key == "properties" and isinstance(first, Mapping) and isinstance(second, Mapping):
        joined = dict(first)
        for name, schema in second.items():
            joined[name] = {"allOf": [joined[name], schema]} if name in joined else schema
        return joined
    if key == "items" and isinstance(first, Mapping) and isinstance(second, Mapping):
        return {"allOf": [first, second]}
    if key == "enum" and isinstance(first, list) and isinstance(second, list):
        return [value for value in first if value in second]
    if key == "uniqueItems":
        return first is True or second is True
    if key == "multipleOf" and type(first) is int and type(second) is int and first > 0 < second:
        return math.lcm(first, second)
    if key == "additionalProperties":
        return first  # merged by `_close`, which sees each part's own keys
    return first  # equal, an annotation, or a pair of keywords that do not merge


def _types(first: object, second: object) -> list[str]:
    """The JSON types both admit (an integer is a number)."""
    one, two = _type_set(first), _type_set(second)
    both = one & two
    if ("number" in one and "integer" in two) or ("integer" in one and "number" in two):
        both.add("integer")
    return sorted(both)


def _type_set(value: object) -> set[str]:
    if isinstance(value, str):
        return {value}
    return {t for t in value if isinstance(t, str)} if isinstance(value, list) else set()


def _close(merged: dict[str, object], parts: Sequence[Mapping[str, object]]) -> None:
    """Apply each part's ``additionalProperties`` to the keys the other parts bring: a
    key outside a closed part's ``properties`` is forbidden (``false``: drawn never), one
    outside a part with a schema for extra keys meets that schema too."""
    if any("patternProperties" in p for p in parts):
        return
    properties = merged.get("properties", {})
    required = merged.get("required", [])
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return
    # (a required key no part describes is still a key a closed part may forbid)
    joined = {**{name: {} for name in required if isinstance(name, str)}, **properties}
    extras: list[object] = []
    for part in parts:
        extra = part.get("additionalProperties")
        if extra is None or extra is True:
            continue
        extras.append(extra)
        own = part.get("properties")
        own = own if isinstance(own, Mapping) else {}
        for name in joined:
            if name not in own:
                joined[name] = False if extra is False else {"allOf": [joined[name], extra]}
    merged["properties"] = joined
    if extras:
        merged["additionalProperties"] = (
            False
            if any(extra is False for extra in extras)
            else extras[0]
            if len(extras) == 1
            else {"allOf": extras}
        )


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
