"""The classes behind patterned fields: a class whose fields hold a pattern, derived
without it for msgspec to decode into, then built as the user's class.

See ``signature_patterns`` for why. A Struct, dataclass or attrs class is decoded into
a derived Struct with the same fields, names, defaults, tag and layout, then built as
msgspec builds it: a Struct through its ``__init__`` (which runs ``__post_init__``); a
dataclass or attrs class field by field, then its ``__post_init__`` (attrs: validators
and ``__attrs_post_init__``). A NamedTuple is decoded into a derived NamedTuple, a
TypedDict into a derived TypedDict. A ``TypeError`` or ``ValueError`` from those hooks
is a ``ValidationError`` at the class's path, as in msgspec.
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from collections.abc import Callable
from typing import Annotated

import attrs
import msgspec
import msgspec.inspect as mi

if sys.version_info >= (3, 11):
    from typing import NotRequired, Required
else:  # pragma: no cover - typing_extensions is msgspec's own dependency there
    from typing_extensions import NotRequired, Required

__all__ = ["UNSET", "Fix", "Kinds", "Rewrite", "derived"]


#: A decoded value and where it is (as msgspec writes paths) -> the value the function gets.
Fix = Callable[[object, str], object]
#: The Python classes decoded values of a type have (which union member a value is).
Kinds = tuple[type, ...]

_NODEFAULT = msgspec.NODEFAULT


class _Unset:
    """The default of every derived field that has one: "the model gave nothing here"."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<default>"


#: What a derived class holds where the model gave no value. The checks then put the
#: user's default there as msgspec would (the very object, or its factory's result)
#: without matching it: msgspec never checks a default. Handing msgspec the default
#: itself instead would both match it (a factory's result is a new object) and refuse
#: defaults msgspec takes from attrs classes but not from a Struct (a non-empty list).
UNSET: object = _Unset()


#: How a type is rewritten without its patterns (``signature_patterns``' rewriter).
Rewrite = Callable[[object], "tuple[object, Fix | None, Kinds]"]


def derived(cls: type, rewrite: Rewrite) -> tuple[object, Fix | None, Kinds]:
    """``cls`` (a Struct, dataclass, attrs class, TypedDict or NamedTuple) without the
    patterns of its fields, and the fix that matches them and builds ``cls``; ``cls``
    itself (and no fix) when its fields hold none, or when it is generic."""
    if getattr(cls, "__parameters__", ()):
        return cls, None, ()  # generic: `leftover_patterns` decides
    if issubclass(cls, msgspec.Struct):
        kind = "struct"
    elif dataclasses.is_dataclass(cls):
        kind = "dataclass"
    elif attrs.has(cls):
        kind = "attrs"
    elif typing.is_typeddict(cls) or _is_typeddict(cls):
        return _typeddict(cls, rewrite)
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        kind = "namedtuple"
    else:
        return cls, None, ()
    try:
        info = mi.type_info(cls)
    except (TypeError, ValueError):
        return cls, None, ()  # msgspec refuses it; the schema said so already
    fields = info.fields  # type: ignore[attr-defined]
    hints = _hints(cls)
    if kind == "attrs":  # `attr.ib(type=...)` has no annotation; msgspec reads `type`
        for attribute in attrs.fields(cls):  # type: ignore[arg-type]
            if attribute.name not in hints and attribute.type is not None:
                hints[attribute.name] = attribute.type
    if _type_variables(hints.values()):
        # A subclass of `Box[int]`: msgspec reads `item: T` as `int`, the field's own
        # annotation says `T` (any value). Generic: `leftover_patterns` decides.
        return cls, None, ()
    rewritten = [rewrite(hints.get(f.name, typing.Any))[:2] for f in fields]
    if all(fix is None for _, fix in rewritten):
        return cls, None, ()
    if kind == "namedtuple":
        return _namedtuple(cls, fields, rewritten)
    shadow_fields = [
        (f.name, tp) if f.required else (f.name, tp, UNSET)
        for f, (tp, _) in zip(fields, rewritten, strict=True)
    ]
    struct = isinstance(info, mi.StructType)
    shadow = msgspec.defstruct(
        cls.__name__,
        shadow_fields,
        kw_only=True,
        rename={f.name: f.encode_name for f in fields},
        tag=info.tag if struct else None,  # type: ignore[attr-defined]
        tag_field=info.tag_field if struct else None,  # type: ignore[attr-defined]
        array_like=info.array_like if struct else False,  # type: ignore[attr-defined]
        forbid_unknown_fields=info.forbid_unknown_fields if struct else False,  # type: ignore[attr-defined]
        module=cls.__module__,
    )
    array_like = struct and info.array_like  # type: ignore[attr-defined]
    plan = [
        (
            f.name,
            fix,
            _default_maker(f),
            f"[{index + bool(struct and info.tag_field and info.tag is not None)}]"  # type: ignore[attr-defined]
            if array_like
            else f".{f.encode_name}",
        )
        for index, (f, (_, fix)) in enumerate(zip(fields, rewritten, strict=True))
    ]
    build = _BUILDERS[kind](cls)

    def rebuild(value: object, where: str) -> object:
        if type(value) is not shadow:
            return value  # a default, already the user's class
        values: dict[str, object] = {}
        for name, fix, make, step in plan:
            item = getattr(value, name)
            if item is UNSET:
                item = make()  # type: ignore[misc]  # a field without default is never UNSET
            elif fix is not None:
                item = fix(item, where + step)
            values[name] = item
        try:
            return build(values)
        except (TypeError, ValueError) as exc:
            raise msgspec.ValidationError(f"{exc} - at `{where}`") from None

    return shadow, rebuild, (shadow,)


def _namedtuple(
    cls: type, fields: tuple[mi.Field, ...], rewritten: list[tuple[object, Fix | None]]
) -> tuple[object, Fix | None, Kinds]:
    shadow = typing.NamedTuple(  # type: ignore[misc]
        cls.__name__, [(f.name, tp) for f, (tp, _) in zip(fields, rewritten, strict=True)]
    )
    defaults = getattr(cls, "_field_defaults", {})
    shadow._field_defaults = dict(defaults)
    shadow.__new__.__defaults__ = tuple(defaults.values()) or None
    plan = [(fix, f.default) for f, (_, fix) in zip(fields, rewritten, strict=True)]

    def rebuild(value: object, where: str) -> object:
        if type(value) is not shadow:
            return value
        assert isinstance(value, tuple)
        items: list[object] = list(value)
        for index, (fix, default) in enumerate(plan):
            if fix is not None and items[index] is not default:
                items[index] = fix(items[index], f"{where}[{index}]")
        return cls(*items)

    return shadow, rebuild, (shadow,)


def _typeddict(cls: type, rewrite: Rewrite) -> tuple[object, Fix | None, Kinds]:
    try:
        info = mi.type_info(cls)
    except (TypeError, ValueError):
        return cls, None, ()
    hints = {name: _unqualified(tp) for name, tp in _hints(cls).items()}
    if _type_variables(hints.values()):
        return cls, None, ()  # as for a subclass of a generic class (see `derived`)
    fields = info.fields  # type: ignore[attr-defined]
    rewritten = {f.name: rewrite(hints.get(f.name, typing.Any))[:2] for f in fields}
    if all(fix is None for _, fix in rewritten.values()):
        return cls, None, ()
    shadow = typing.TypedDict(  # type: ignore[misc]
        cls.__name__, {name: tp for name, (tp, _) in rewritten.items()}
    )
    required = frozenset(f.name for f in fields if f.required)
    shadow.__required_keys__ = required
    shadow.__optional_keys__ = frozenset(rewritten) - required
    plan = [(name, fix) for name, (_, fix) in rewritten.items() if fix is not None]

    def check(value: object, where: str) -> object:
        if not isinstance(value, dict):
            return value
        for name, fix in plan:
            if name in value:
                item = value[name]
                new = fix(item, f"{where}.{name}")
                if new is not item:
                    value[name] = new
        return value

    return shadow, check, (dict,)


def _default_maker(field: mi.Field) -> Callable[[], object] | None:
    """What gives ``field`` its default as msgspec would: its factory, or the very object."""
    if field.default_factory is not _NODEFAULT:
        return field.default_factory  # type: ignore[no-any-return]
    if field.default is not _NODEFAULT:
        default = field.default
        return lambda: default
    return None


def _is_typeddict(cls: type) -> bool:
    return isinstance(cls, type) and issubclass(cls, dict) and hasattr(cls, "__required_keys__")


def _hints(cls: type) -> dict[str, object]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception:
        return {}


def _type_variables(types: typing.Iterable[object]) -> bool:
    """Whether any of ``types`` holds a type variable (its class's generic base binds it)."""
    stack = list(types)
    while stack:
        tp = stack.pop()
        if isinstance(tp, typing.TypeVar):
            return True
        stack.extend(typing.get_args(tp))
    return False


def _unqualified(tp: object) -> object:
    """A TypedDict field's type without ``Required``/``NotRequired`` (kept apart)."""
    metadata: tuple[object, ...] = ()
    if typing.get_origin(tp) is Annotated:
        metadata, tp = tp.__metadata__, tp.__origin__  # type: ignore[attr-defined]
    while typing.get_origin(tp) in (Required, NotRequired):
        tp = typing.get_args(tp)[0]
    args = (tp, *metadata)
    return Annotated[args] if metadata else tp


def _blank(cls: type) -> object:
    """An instance whose fields are set next (as msgspec makes dataclasses and attrs classes)."""
    return cls.__new__(cls)  # type: ignore[call-overload]


def _build_struct(cls: type) -> Callable[[dict[str, object]], object]:
    return lambda values: cls(**values)


def _build_dataclass(cls: type) -> Callable[[dict[str, object]], object]:
    post_init = getattr(cls, "__post_init__", None)

    def build(values: dict[str, object]) -> object:
        out = _blank(cls)
        for name, value in values.items():
            object.__setattr__(out, name, value)
        if post_init is not None:
            post_init(out)
        return out

    return build


def _build_attrs(cls: type) -> Callable[[dict[str, object]], object]:
    pre_init = getattr(cls, "__attrs_pre_init__", None)
    post_init = getattr(cls, "__attrs_post_init__", None)
    checked = [f for f in attrs.fields(cls) if f.validator is not None]

    def build(values: dict[str, object]) -> object:
        out = _blank(cls)
        if pre_init is not None:
            pre_init(out)
        for name, value in values.items():
            object.__setattr__(out, name, value)
        for field in checked:
            field.validator(out, field, values[field.name])
        if post_init is not None:
            post_init(out)
        return out

    return build


_BUILDERS: dict[str, Callable[[type], Callable[[dict[str, object]], object]]] = {
    "struct": _build_struct,
    "dataclass": _build_dataclass,
    "attrs": _build_attrs,
}
