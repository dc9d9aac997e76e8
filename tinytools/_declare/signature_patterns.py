"""Patterns of signature-built tools, matched by RE2 instead of msgspec's backtracking ``re``.

msgspec checks ``msgspec.Meta(pattern=...)`` with Python's ``re``, which backtracks:
``^(a+)+$`` against 22 characters of model text takes most of a second, against 40
it takes hours, inside one C call no deadline can interrupt. So a signature-built
tool never lets msgspec see a pattern. :func:`unpatterned` rewrites a parameter's
type into the same type without its patterns — every other constraint, default,
name and tag kept, so msgspec decodes exactly as before — and returns a function
that, after decoding, matches the removed patterns with RE2 (``patterns``, in time
linear in the text) and raises the ``ValidationError`` msgspec would have raised,
at the same path, with the same words.

Patterns may sit anywhere msgspec reads a type: the annotation itself, list and
tuple items, dict keys and values, union members, ``NewType`` and alias values,
and the fields of TypedDicts, msgspec Structs, dataclasses, attrs classes and
NamedTuples. A class whose fields hold a pattern is decoded into a derived class
without it, then built as msgspec builds it (``pattern_classes``).

A pattern has JSON Schema's (ECMA-262) meaning, the one the advertised schema
gives the model: ``$`` ends the text (Python's ``re`` also matched before a final
newline), ``\\d`` and ``\\w`` are ASCII. A pattern RE2 cannot run (lookaround,
backreferences, Python-only syntax such as ``\\Z``), and a pattern this module
cannot take out of msgspec's hands (inside a generic or recursive class), is a
problem reported when the tool is built, never a pattern left to ``re``.

A default (where the model gave no value) is never matched, as msgspec never
checks defaults: the derived class holds ``pattern_classes.UNSET`` there, and the checks put the
user's default in its place (the very object, or its factory's result).
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Literal, Union

import msgspec
import msgspec.inspect as mi

from .pattern_classes import Fix, Kinds, derived
from .patterns import linear

__all__ = ["Unfit", "ecma_spelling", "leftover_patterns", "unpatterned"]


class Unfit(Exception):
    """A pattern that cannot be matched in linear time (the sentence says why and what to do)."""


def unpatterned(tp: object) -> tuple[object, Fix | None]:
    """``tp`` without patterns, and the function that checks them after decoding.

    Returns ``(tp, None)`` when ``tp`` holds no pattern this module can take out.

    Raises:
        Unfit: a pattern RE2 cannot run.
    """
    rewritten, fix, _ = _Rewriter().rewrite(tp)
    return rewritten, fix


def leftover_patterns(tp: object) -> list[str]:
    """Every pattern msgspec would still match in ``tp`` (with ``re``)."""
    found: list[str] = []
    seen: set[int] = set()
    stack: list[object] = [mi.type_info(tp)]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, mi.StrType) and node.pattern is not None:
            found.append(node.pattern)
        elif isinstance(node, (mi.Type, mi.Field)):
            stack.extend(getattr(node, name) for name in node.__struct_fields__)
        elif isinstance(node, tuple):
            stack.extend(node)
    return found


def _mismatch(pattern: str, where: str) -> msgspec.ValidationError:
    # msgspec's own words for a pattern mismatch (`%R` of the pattern), at its path.
    return msgspec.ValidationError(f"Expected `str` matching regex {pattern!r} - at `{where}`")


def ecma_spelling(pattern: str) -> str:
    """``pattern`` with Python's ``\\A`` and ``\\Z`` written ``^`` and ``$``.

    Outside a character class (where Python refuses them) they anchor at the start and
    the end of the text, which is what ``^`` and ``$`` mean in JSON Schema's ECMA-262
    (no multiline flag); ECMA-262 itself has no ``\\A`` or ``\\Z``.
    """
    if "\\A" not in pattern and "\\Z" not in pattern:
        return pattern
    out: list[str] = []
    index, in_class = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            pair = pattern[index : index + 2]
            out.append({"\\A": "^", "\\Z": "$"}.get(pair, pair) if not in_class else pair)
            index += 2
            continue
        if char == "[" and not in_class:
            in_class = True
            # `[]...]`, `[^]...]`: Python reads a first `]` as a member of the class.
            opening = "[^]" if pattern.startswith("[^]", index) else pattern[index : index + 2]
            if opening.endswith("]"):
                out.append(opening)
                index += len(opening)
                continue
        elif char == "]":
            in_class = False
        out.append(char)
        index += 1
    return "".join(out)


def _python_only_count(pattern: str) -> str | None:
    """A ``{,n}`` (or ``{,}``) outside a character class: Python's ``re`` reads it as
    ``{0,n}``, ECMA-262 and RE2 as those characters. None when there is none."""
    index, in_class = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            index += 1 + pattern.startswith("^", index + 1)
            index += pattern.startswith("]", index)  # Python: a first `]` is a member
            continue
        elif pattern.startswith("{,", index):
            end = index + 2
            while end < len(pattern) and pattern[end].isdigit():
                end += 1
            if pattern.startswith("}", end):
                return pattern[index : end + 1]
        index += 1
    return None


def _matcher(patterns: list[str]) -> Fix:
    compiled = []
    for written in patterns:
        count = _python_only_count(written)
        if count is not None:
            raise Unfit(
                f"pattern {written!r} holds `{count}`, which Python's `re` reads as a count "
                "from 0 but JSON Schema (ECMA-262, as the model reads the schema) and RE2 "
                f"read as the text {count!r}; write `{{0,{count[2:-1]}}}` instead"
            )
        pattern = ecma_spelling(written)
        try:
            engine = linear(pattern)
        except ImportError as exc:  # RE2, a dependency, is missing (`pip install --no-deps`)
            raise Unfit(
                f"pattern {written!r} is matched with RE2, which cannot be loaded ({exc}); "
                "install google-re2 (a dependency of tinytools)"
            ) from None
        if engine is None:
            raise Unfit(
                f"pattern {written!r} cannot be matched in time linear in the model's text "
                "(RE2 has no lookaround, backreferences or escapes JSON Schema lacks); "
                "rewrite it without them, or check the value in the function"
            )
        compiled.append((pattern, engine.search))

    def match(value: object, where: str) -> object:
        if type(value) is str:
            for pattern, search in compiled:
                if not search(value):
                    raise _mismatch(pattern, where)
        return value

    return match


_LISTS = (list, tuple, set, frozenset)


class _Rewriter:
    """Rewrites one type; classes met twice share one derived class."""

    def __init__(self) -> None:
        self._done: dict[type, tuple[object, Fix | None, Kinds]] = {}
        self._active: set[type] = set()

    def rewrite(self, tp: object) -> tuple[object, Fix | None, Kinds]:
        """``(type without patterns, fix or None, kinds of decoded values)``."""
        origin = typing.get_origin(tp)
        if origin is Annotated:
            return self._annotated(tp)
        if isinstance(tp, typing.NewType):
            base, fix, kinds = self.rewrite(tp.__supertype__)
            return (tp, None, ()) if fix is None else (base, fix, kinds)
        if type(tp).__name__ == "TypeAliasType":  # `type X = ...` (3.12+)
            value, fix, kinds = self.rewrite(tp.__value__)  # type: ignore[attr-defined]
            return (tp, None, ()) if fix is None else (value, fix, kinds)
        if origin is Union or (hasattr(types, "UnionType") and origin is types.UnionType):
            return self._union(tp)
        if origin is Literal:
            return tp, None, ()
        args = typing.get_args(tp)
        if origin is not None and args and isinstance(origin, type):
            if issubclass(origin, tuple) and origin is tuple:
                return self._tuple(tp, args)
            if _mapping(origin):
                return self._dict(tp, origin, args)
            if _collection(origin):
                return self._items(tp, origin, args[0])
            return tp, None, ()  # a parametrised class: `leftover_patterns` decides
        if isinstance(tp, type) and tp not in self._active:
            if tp in self._done:
                return self._done[tp]
            self._active.add(tp)
            try:
                result = derived(tp, self.rewrite)
            finally:
                self._active.discard(tp)
            self._done[tp] = result
            return result
        return tp, None, ()

    def _annotated(self, tp: object) -> tuple[object, Fix | None, Kinds]:
        base, metadata = tp.__origin__, tp.__metadata__  # type: ignore[attr-defined]
        patterns = [m.pattern for m in metadata if isinstance(m, msgspec.Meta) and m.pattern]
        new_base, inner, kinds = self.rewrite(base)
        if not patterns and inner is None:
            return tp, None, ()
        kept = tuple(_without_pattern(m) for m in metadata)
        args = (new_base, *kept)
        rewritten = Annotated[args] if kept else new_base
        if not patterns:
            return rewritten, inner, kinds
        match = _matcher(patterns)
        if inner is None:
            return rewritten, match, (str,)

        def both(value: object, where: str) -> object:
            return inner(match(value, where), where)

        return rewritten, both, (str,)

    def _union(self, tp: object) -> tuple[object, Fix | None, Kinds]:
        members = [self.rewrite(arg) for arg in typing.get_args(tp)]
        fixes = [(kinds, fix) for _, fix, kinds in members if fix is not None]
        if not fixes:
            return tp, None, ()
        rewritten = Union.__getitem__(tuple(m[0] for m in members))  # type: ignore[attr-defined,unused-ignore]

        def pick(value: object, where: str) -> object:
            kind = type(value)
            for kinds, fix in fixes:
                if kind in kinds:
                    return fix(value, where)
            return value

        return rewritten, pick, tuple(k for kinds, _ in fixes for k in kinds)

    def _tuple(self, tp: object, args: tuple[object, ...]) -> tuple[object, Fix | None, Kinds]:
        if len(args) == 2 and args[1] is Ellipsis:
            item, fix, _ = self.rewrite(args[0])
            if fix is None:
                return tp, None, ()
            return tuple[item, ...], _each(fix), (tuple,)  # type: ignore[valid-type]
        members = [self.rewrite(arg) for arg in args]
        fixes = [m[1] for m in members]
        if all(f is None for f in fixes):
            return tp, None, ()

        def positions(value: object, where: str) -> object:
            if type(value) is not tuple:
                return value
            items = list(value)
            for index, fix in enumerate(fixes):
                if fix is not None and index < len(items):
                    items[index] = fix(items[index], f"{where}[{index}]")
            return tuple(items)

        return tuple.__class_getitem__(tuple(m[0] for m in members)), positions, (tuple,)

    def _items(self, tp: object, origin: type, arg: object) -> tuple[object, Fix | None, Kinds]:
        item, fix, _ = self.rewrite(arg)
        if fix is None:
            return tp, None, ()
        return origin[item], _each(fix), _LISTS  # type: ignore[index]

    def _dict(
        self, tp: object, origin: type, args: tuple[object, ...]
    ) -> tuple[object, Fix | None, Kinds]:
        key, key_fix, _ = self.rewrite(args[0])
        value, value_fix, _ = self.rewrite(args[1]) if len(args) > 1 else (None, None, ())
        if key_fix is None and value_fix is None:
            return tp, None, ()

        def entries(decoded: object, where: str) -> object:
            if not isinstance(decoded, dict):
                return decoded
            for name, item in list(decoded.items()):
                if key_fix is not None:
                    key_fix(name, f"key` in `{where}")
                if value_fix is not None:
                    new = value_fix(item, f"{where}[...]")
                    if new is not item:
                        decoded[name] = new
            return decoded

        rewritten = origin[key, value] if len(args) > 1 else origin[key]  # type: ignore[index]
        return rewritten, entries, (dict,)


def _each(fix: Fix) -> Fix:
    """A fix for every item of a decoded list, tuple or set."""

    def items(value: object, where: str) -> object:
        if isinstance(value, list):
            for index, item in enumerate(value):
                new = fix(item, f"{where}[{index}]")
                if new is not item:
                    value[index] = new
            return value
        if isinstance(value, tuple):
            return tuple(fix(item, f"{where}[{index}]") for index, item in enumerate(value))
        if isinstance(value, (set, frozenset)):
            # A set's order is not the array's: the item is named, not numbered.
            return type(value)(fix(item, f"{where}[...]") for item in value)
        return value

    return items


#: What a ``msgspec.Meta`` holds besides ``pattern``.
_META_FIELDS = (
    "gt", "ge", "lt", "le", "multiple_of", "min_length", "max_length", "tz",
    "title", "description", "examples", "extra_json_schema", "extra",
)  # fmt: skip


def _without_pattern(meta: object) -> object:
    if not isinstance(meta, msgspec.Meta) or meta.pattern is None:
        return meta
    kept = {name: getattr(meta, name) for name in _META_FIELDS if getattr(meta, name) is not None}
    return msgspec.Meta(**kept)


def _mapping(origin: type) -> bool:
    import collections.abc as abc

    return issubclass(origin, dict) or origin in (abc.Mapping, abc.MutableMapping)


def _collection(origin: type) -> bool:
    import collections.abc as abc

    return issubclass(origin, (list, set, frozenset)) or origin in (
        abc.Collection,
        abc.Sequence,
        abc.MutableSequence,
        abc.Set,
        abc.MutableSet,
    )
