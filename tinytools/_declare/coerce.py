"""Opt-in scalar coercion: a number or boolean sent as a string, read as what it spells.

Small models often quote scalars (``{"count": "3"}``). With
:class:`tinytools.policies.Coerce` (or a tool's ``ToolRuntime.coerce``), admission
gives arguments that failed the schema one more try: each string at a position the
schema types as ``number``, ``integer`` or ``boolean`` becomes the value it spells,
and the result is validated again, whole. Nothing else changes.

What counts, exactly:

* Only a string the schema refuses where it stands. A position is read from every
  schema that certainly applies there (``properties``, ``additionalProperties``,
  ``items``, ``prefixItems``, ``$ref``, ``allOf``; an ``anyOf``/``oneOf`` is entered
  only through its one branch that can hold the object or array found there). The
  string is refused when one of them refuses every string (``type`` without
  ``"string"``) or this string (an ``enum``/``const`` without it); a union refuses it
  when every branch does. A position that may hold the string (a ``string`` or untyped
  branch, an ``enum`` listing it, a ``patternProperties`` key) is left alone, and so is
  every key.
* Only to one value: ``"true"``/``"false"`` (exactly) for a ``boolean``; for a
  ``number``, text that is a JSON number by JSON's own grammar (no sign ``+``, no
  spaces, no ``0x10``, ``1_000``, ``5.``, ``.5``, ``NaN`` or ``Infinity``), read as JSON
  reads it; for an ``integer``, the same when its value is integral (``"3.0"`` is
  3.0, which validation takes for an integer as it takes a sent 3.0). An ``enum`` of
  numbers or booleans without a ``type`` (``Literal[1, 2]``) wants what its members
  are. A number JSON reads but Python cannot hold (``"1e999"``, an integer of more than
  4,300 digits) is not coerced.
* Bounds, ``enum``, ``multipleOf`` and the rest are checked by the validation that
  follows: coercion never lets through what the number itself would not pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final
from urllib.parse import unquote

import msgspec

from tinytools.errors import ToolArgumentsError

from .json_values import text_problem

if TYPE_CHECKING:
    from .registry import AnyTool

__all__ = ["coerce_scalars", "coerced"]

#: JSON's number grammar (RFC 8259), ASCII digits only (``\d`` would take other scripts').
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
#: How deep into the arguments coercion looks (deeper strings are left for the error).
_DEEPEST: Final = 64
#: How many ``$ref`` one position may follow (a reference to itself ends here).
_MOST_REFS: Final = 32
_SCALARS: Final = frozenset({"number", "integer", "boolean"})


class _Verdict:
    """What a schema says of a string: ``KEEP`` (it may be valid, or nothing is known),
    ``NONE`` (refused, and no number or boolean would do either), or ``ANY`` (no type
    constraint at all); a coerced value is the fourth answer."""

    __slots__ = ()


KEEP: Final = _Verdict()
NONE: Final = _Verdict()
ANY: Final = _Verdict()


def coerce_scalars(schema: Mapping[str, object], arguments: object) -> object | None:
    """``arguments`` with every string the schema refuses at a ``number``, ``integer`` or
    ``boolean`` position replaced by the value it spells (see the module docstring), or
    None when there is none. Pure: ``arguments`` is not changed (changed containers are
    copied)."""
    found = _walk([schema], arguments, schema, 0)
    return None if found is KEEP else found


def coerced(
    tool: AnyTool, sent: object, value: object
) -> tuple[dict[str, object], dict[str, object]] | None:
    """For admission, once ``tool`` refused arguments: the keyword arguments the tool
    gets and the coerced arguments, when coercing the refused ``value`` makes them valid.

    Args:
        tool: The tool the call is admitted for.
        sent: The call's arguments as the model sent them.
        value: What was validated and refused: ``sent``, the strict text a relaxed
            text was repaired into, or that text's object.

    Text is decoded only when it repeats no field and holds nothing JSON cannot mean
    (those are refused as sent: decoding would keep one of the repeats), and repaired
    text is read again for the same reason.
    """
    tree: object = value
    text: str | bytes | None = None
    if isinstance(value, (str, bytes)):
        text = value
    elif isinstance(sent, str):  # repaired text's object: the text shows any repeats
        from tinytools import repair  # (repair imports the declaration side)

        rewritten = repair.rewrite_relaxed_text(sent)
        strict = None if rewritten is None else repair.decode_rewritten(rewritten[0])
        if strict is None:
            return None
        text = strict[0]
    if text is not None:
        if text_problem(text) is not None:
            return None
        if text is value:
            try:
                tree = msgspec.json.decode(text)
            except (msgspec.MsgspecError, UnicodeError, RecursionError):
                return None
    if not isinstance(tree, Mapping):
        return None
    fixed = coerce_scalars(tool.parameters, tree)
    if not isinstance(fixed, dict):
        return None
    try:
        return tool.validate(fixed), fixed
    except ToolArgumentsError:
        return None


def _walk(schemas: list[object], value: object, root: object, depth: int) -> object:
    """``value`` coerced under ``schemas`` (all of which apply), or ``KEEP`` for no change."""
    nodes = _conjuncts(schemas, root)
    if isinstance(value, str):
        verdict = _string(nodes, str.__str__(value), root)
        return KEEP if isinstance(verdict, _Verdict) else verdict
    if depth >= _DEEPEST or not isinstance(value, (Mapping, list, tuple)):
        return KEEP
    if isinstance(value, Mapping):
        nodes = _entered(nodes, "object", root)
        copy: dict[object, object] | None = None
        for key, child in value.items():
            inner = [s for node in nodes for s in _property(node, key)]
            if inner and (found := _walk(inner, child, root, depth + 1)) is not KEEP:
                copy = dict(value) if copy is None else copy
                copy[key] = found
        return KEEP if copy is None else copy
    nodes = _entered(nodes, "array", root)
    # Past the positional schemas every item has the same ones: read them, and each
    # distinct string under them, once (an array of 100,000 quoted numbers).
    fixed = max(map(_positional, nodes), default=0)
    rest = [s for node in nodes for s in _item(node, fixed)]
    strings: dict[str, object] = {}
    items: list[object] | None = None
    for index, child in enumerate(value):
        if index < fixed:
            found = _walk([s for node in nodes for s in _item(node, index)], child, root, depth + 1)
        elif not rest:
            break
        elif isinstance(child, str):
            text = str.__str__(child)
            found = strings.get(text, strings)
            if found is strings:
                found = strings[text] = _walk(rest, text, root, depth + 1)
        else:
            found = _walk(rest, child, root, depth + 1)
        if found is not KEEP:
            items = list(value) if items is None else items
            items[index] = found
    if items is None:
        return KEEP
    return tuple(items) if isinstance(value, tuple) else items


def _conjuncts(schemas: list[object], root: object) -> list[Mapping[str, object]]:
    """The schema objects that all apply, ``$ref`` and ``allOf`` followed.

    A reference that cannot be followed is dropped: every schema here only adds
    constraints, so one left out can make a coerced value fail validation, never a
    valid string look refused.
    """
    found: list[Mapping[str, object]] = []
    stack = list(schemas)
    refs = 0
    while stack:
        node = stack.pop()
        if not isinstance(node, Mapping):
            continue  # `true`; `false` refuses all, which no coercion changes
        found.append(node)
        ref = node.get("$ref")
        if isinstance(ref, str) and refs < _MOST_REFS:
            refs += 1
            target = _pointer(root, ref)
            if target is not None:
                stack.append(target)
        every = node.get("allOf")
        if isinstance(every, list):
            stack.extend(every)
    return found


def _pointer(root: object, ref: str) -> object:
    """The part of ``root`` a local ``$ref`` (``#/$defs/Name``) names, or None."""
    if ref != "#" and not ref.startswith("#/"):  # (an anchor or another document)
        return None
    node = root
    for part in unquote(ref[1:]).split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _types(node: Mapping[str, object]) -> frozenset[str] | None:
    kind = node.get("type")
    if isinstance(kind, str):
        return frozenset((kind,))
    if isinstance(kind, list):
        return frozenset(k for k in kind if isinstance(k, str))
    return None


def _string(nodes: list[Mapping[str, object]], text: str, root: object) -> object:
    """What the conjoined ``nodes`` make of the string ``text``: a coerced value when one
    of them refuses it and none refuses every number and boolean, else a verdict."""
    value: object = KEEP
    for node in nodes:
        parts = [_own(node, text)]
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if isinstance(branches, list):
                parts.append(_union(branches, text, root))
        for part in parts:
            if part is NONE:
                return NONE  # refused here, and a number or boolean would be refused too
            if not isinstance(part, _Verdict):
                value = part  # refused here; every such part spells `text` alike
    return value


def _own(node: Mapping[str, object], text: str) -> object:
    """What ``type``, ``enum`` and ``const`` in ``node`` make of the string ``text``."""
    types = _types(node)
    members = node.get("enum")
    if "const" in node:
        members = [node["const"]]
    if not isinstance(members, list):
        members = None
    if types is None and members is None:
        return ANY
    if (types is None or "string" in types) and (
        members is None or any(type(m) is str and m == text for m in members)
    ):
        return KEEP  # the string may be valid here
    if types is not None:
        kinds = types & _SCALARS
    else:
        assert members is not None
        kinds = frozenset(_kind(m) for m in members) & _SCALARS
    return _spelled(text, kinds)


def _kind(member: object) -> str:
    if isinstance(member, bool):
        return "boolean"
    if isinstance(member, int):
        return "integer"
    return "number" if isinstance(member, float) else "other"


def _union(branches: list[object], text: str, root: object) -> object:
    """An ``anyOf``/``oneOf``: refused only when every branch refuses the string."""
    value: object = NONE
    for branch in branches:
        verdict = _string(_conjuncts([branch], root), text, root)
        if verdict is KEEP or verdict is ANY:
            return KEEP  # a branch may take the string as it is
        if verdict is not NONE:
            value = verdict
    return value


def _spelled(text: str, kinds: frozenset[str]) -> object:
    """The value ``text`` spells for one of ``kinds``, else ``NONE``."""
    if "boolean" in kinds and text in ("true", "false"):
        return text == "true"
    if not (kinds & {"number", "integer"}) or _NUMBER.fullmatch(text) is None:
        return NONE
    try:
        number = msgspec.json.decode(text)  # as JSON reads it (`1e2` is 100.0)
    except msgspec.MsgspecError:  # beyond what Python holds: "1e999", 4,301 digits
        return NONE
    if "number" not in kinds and isinstance(number, float) and not number.is_integer():
        return NONE
    return number


def _entered(
    nodes: list[Mapping[str, object]], kind: str, root: object
) -> list[Mapping[str, object]]:
    """``nodes`` and, for each ``anyOf``/``oneOf`` among them, its branch that can hold a
    value of JSON type ``kind`` when exactly one can (a valid value matches that branch,
    so its parts apply; with several, none is known to)."""
    found = list(nodes)
    index = 0
    while index < len(found) and len(found) < 4 * _MOST_REFS:
        node = found[index]
        index += 1
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if not isinstance(branches, list):
                continue
            holding = [
                parts
                for parts in (_conjuncts([b], root) for b in branches)
                if all((t := _types(p)) is None or kind in t for p in parts)
            ]
            if len(holding) == 1:
                found.extend(holding[0])
    return found


def _property(node: Mapping[str, object], key: object) -> Sequence[object]:
    """The schemas ``node`` applies to its object's member ``key``."""
    properties = node.get("properties")
    if isinstance(properties, Mapping) and key in properties:
        return (properties[key],)
    if "patternProperties" in node:  # whether `key` matches is not decided here
        return ()
    extra = node.get("additionalProperties")
    return (extra,) if isinstance(extra, Mapping) else ()


def _positional(node: Mapping[str, object]) -> int:
    """How many leading items ``node`` gives schemas of their own (a tuple's)."""
    items, prefix = node.get("items"), node.get("prefixItems")
    return len(items) if isinstance(items, list) else len(prefix) if isinstance(prefix, list) else 0


def _item(node: Mapping[str, object], index: int) -> Sequence[object]:
    """The schemas ``node`` applies to its array's item at ``index``."""
    items = node.get("items")
    if isinstance(items, list):  # draft 7's tuple form
        rest = node.get("additionalItems")
        if index < len(items):
            return (items[index],)
        return (rest,) if isinstance(rest, Mapping) else ()
    prefix = node.get("prefixItems")
    if isinstance(prefix, list) and index < len(prefix):
        return (prefix[index],)
    return (items,) if isinstance(items, Mapping) else ()
