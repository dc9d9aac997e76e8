"""Valid arguments from a signature-built tool's types (``msgspec.inspect``'s IR).

A ``@tool`` tool validates through a generated msgspec ``Struct``; its fields carry
the parameters' types with every ``msgspec.Meta`` constraint. ``msgspec.inspect``
turns them into a small IR, and each node here becomes a strategy for the JSON value
a model would send for it: a ``datetime`` as ISO text, ``bytes`` as base64, a
dataclass as an object, an enum as one of its values, a pydantic model as a value
drawn from the model's own JSON schema. hypothesis' own strategies
draw the leaves, so edge values (empty strings, any Unicode, the bounds of a
constraint, ``None`` for optionals) come often, and shrinking stays readable.
"""

from __future__ import annotations

import base64
import datetime
import sys
from collections.abc import Callable
from typing import Any

import msgspec
import msgspec.inspect as mi
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import SearchStrategy

from tinytools._declare.models import is_model_class
from tinytools._declare.patterns import linear
from tinytools._declare.signature_patterns import ecma_spelling

from ._from_schema import values_from_schema
from ._json import json_values
from ._numbers import binary_multiples, float_interval, integer_interval, integer_multiples

__all__ = ["arguments_from_struct"]

#: Collections stay small: a failing example is read by a person.
_MAX_EXTRA_ITEMS = 4


def arguments_from_struct(struct: type[msgspec.Struct]) -> SearchStrategy[dict[str, object]]:
    """Argument dicts that ``msgspec.convert(value, struct)`` accepts."""
    info = mi.type_info(struct)
    assert isinstance(info, mi.StructType)
    return _Builder().fields(info.fields).map(dict)


class _Builder:
    """Turns IR nodes into strategies; recursive types go through ``st.deferred``."""

    def __init__(self) -> None:
        self._objects: dict[int, SearchStrategy[object]] = {}

    def of(self, node: mi.Type) -> SearchStrategy[object]:
        handler = _LEAVES.get(type(node))
        if handler is not None:
            return handler(node)
        if isinstance(node, mi.Metadata):
            return self.of(node.type)
        if isinstance(node, mi.UnionType):
            return st.one_of([self.of(t) for t in node.types])
        if isinstance(node, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
            unique = isinstance(node, (mi.SetType, mi.FrozenSetType))
            return self._sequence(node, unique)
        if isinstance(node, mi.TupleType):
            return st.tuples(*(self.of(t) for t in node.item_types)).map(list)
        if isinstance(node, mi.DictType):
            low, high = _sizes(node.min_length, node.max_length)
            return st.dictionaries(
                _keys(node.key_type), self.of(node.value_type), min_size=low, max_size=high
            )
        if isinstance(node, (mi.StructType, mi.DataclassType, mi.TypedDictType)):
            return self._object(node)
        if isinstance(node, mi.NamedTupleType):
            return st.tuples(*(self.of(f.type) for f in node.fields)).map(list)
        if isinstance(node, mi.CustomType) and node.cls is object:
            return json_values()  # a parameter typed `object` takes any JSON value, as Any does
        if isinstance(node, mi.CustomType) and is_model_class(node.cls):
            return _model_values(node.cls)
        raise InvalidArgument(
            f"valid_arguments() cannot draw values of type {node!r}: it has no JSON form"
        )

    def _sequence(
        self, node: mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType, unique: bool
    ) -> SearchStrategy[object]:
        low, high = _sizes(node.min_length, node.max_length)
        items = self.of(node.item_type)
        if unique:
            return st.lists(items, min_size=low, max_size=high, unique_by=_identity)
        return st.lists(items, min_size=low, max_size=high)

    def _object(
        self, node: mi.StructType | mi.DataclassType | mi.TypedDictType
    ) -> SearchStrategy[object]:
        key = id(node)
        if key not in self._objects:
            # Placed before building, so a field naming its own type meets the deferral.
            self._objects[key] = st.deferred(lambda: built)
            built = self._build_object(node)
            self._objects[key] = built
        return self._objects[key]

    def _build_object(
        self, node: mi.StructType | mi.DataclassType | mi.TypedDictType
    ) -> SearchStrategy[object]:
        fields = self.fields(node.fields)
        if isinstance(node, mi.StructType):
            if node.array_like:
                return fields.map(lambda pairs: [value for _, value in pairs])
            if node.tag_field is not None:
                tag = (node.tag_field, node.tag)
                return fields.map(lambda pairs: dict([tag, *pairs]))
        return fields.map(dict)

    def fields(self, fields: tuple[mi.Field, ...]) -> SearchStrategy[list[tuple[str, object]]]:
        """``(key, value)`` pairs: every required field, and any of the optional ones."""
        parts: list[SearchStrategy[list[tuple[str, object]]]] = []
        for field in fields:
            pair = st.tuples(st.just(field.encode_name), self.of(field.type)).map(lambda p: [p])
            parts.append(pair if field.required else st.just([]) | pair)
        return st.tuples(*parts).map(lambda chunks: [p for chunk in chunks for p in chunk])


def _model_values(model: type[Any]) -> SearchStrategy[object]:
    """Values for a pydantic model, drawn from its own JSON schema; only those the model
    accepts are kept (its validators may refuse what the schema allows)."""
    invalid = sys.modules["pydantic_core"].ValidationError  # (imported with the model)

    def accepted(value: object) -> bool:
        try:
            model.model_validate_json(msgspec.json.encode(value))
        except invalid:
            return False
        return True

    return values_from_schema(model.model_json_schema()).filter(accepted)


def _identity(value: object) -> object:
    """A key telling JSON values apart the way a set of them does (``1`` and ``True`` alike)."""
    try:
        return hash(value)
    except TypeError:
        return msgspec.json.encode(value)


def _sizes(low: int | None, high: int | None) -> tuple[int, int]:
    low = low or 0
    return low, low + _MAX_EXTRA_ITEMS if high is None else min(high, low + _MAX_EXTRA_ITEMS)


def _keys(node: mi.Type) -> SearchStrategy[object]:
    """Dict keys as a JSON object has them, text: msgspec reads ints, floats, enums and the
    like from it (``"1"`` for a ``dict[int, str]``)."""
    if isinstance(node, mi.Metadata):
        return _keys(node.type)
    handler = _LEAVES.get(type(node))
    if handler is None:
        raise InvalidArgument(f"valid_arguments() cannot draw dict keys of type {node!r}")
    return handler(node).map(_key_text)


def _key_text(key: object) -> str:
    """A drawn key as a JSON object writes it: text, a number as its JSON text."""
    return key if isinstance(key, str) else msgspec.json.encode(key).decode()


def _integers(node: mi.IntType) -> SearchStrategy[object]:
    low_open, high_open = node.gt is not None, node.lt is not None
    span = integer_interval(
        node.gt if low_open else node.ge, low_open, node.lt if high_open else node.le, high_open
    )
    if span is None:  # no integer lies between the bounds
        return st.nothing()
    first, last = span
    first = -(2**63) if first is None else first
    last = 2**64 - 1 if last is None else last
    if node.multiple_of:
        return integer_multiples(node.multiple_of, first, last)
    return st.integers(first, last)


def _floats(node: mi.FloatType) -> SearchStrategy[object]:
    low_open, high_open = node.gt is not None, node.lt is not None
    low = node.gt if low_open else node.ge
    high = node.lt if high_open else node.le
    span = float_interval(low, low_open, high, high_open)
    if span is None:  # no float lies between the bounds
        return st.nothing()
    lo, hi = span
    if node.multiple_of:
        return binary_multiples(node.multiple_of, lo, hi)
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def _strings(node: mi.StrType) -> SearchStrategy[object]:
    low, high = node.min_length or 0, node.max_length
    if node.pattern is None:
        return st.text(min_size=low, max_size=high)
    # Drawn by Python's `re` rules, kept by JSON Schema's (ECMA-262, on RE2), which the
    # tool enforces: `$` ends the text, `\d` and `\w` are ASCII. A pattern is matched
    # anywhere in the text, as `re.search` does.
    matches = linear(ecma_spelling(node.pattern))
    return st.from_regex(node.pattern).filter(
        lambda text: (
            low <= len(text)
            and (high is None or len(text) <= high)
            and (matches is None or matches.search(text))
        )
    )


def _binary(node: mi.BytesType | mi.ByteArrayType | mi.MemoryViewType) -> SearchStrategy[object]:
    data = st.binary(min_size=node.min_length or 0, max_size=node.max_length)
    return data.map(lambda raw: base64.b64encode(raw).decode())


def _zones(tz: bool | None) -> SearchStrategy[datetime.tzinfo | None]:
    offsets = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(
        lambda minutes: datetime.timezone(datetime.timedelta(minutes=minutes))
    )
    aware: SearchStrategy[datetime.tzinfo | None] = st.just(datetime.timezone.utc) | offsets
    if tz is None:
        return st.none() | aware
    return aware if tz else st.none()


def _datetimes(node: mi.DateTimeType) -> SearchStrategy[object]:
    return st.datetimes(timezones=_zones(node.tz)).map(msgspec.to_builtins)


def _times(node: mi.TimeType) -> SearchStrategy[object]:
    return st.times(timezones=_zones(node.tz)).map(msgspec.to_builtins)


def _enum_values(node: mi.EnumType) -> SearchStrategy[object]:
    return st.sampled_from([member.value for member in node.cls])


def _literal_values(node: mi.LiteralType) -> SearchStrategy[object]:
    return st.sampled_from(node.values)


_LEAVES: dict[type[mi.Type], Callable[..., SearchStrategy[object]]] = {
    mi.AnyType: lambda _: json_values(),
    mi.NoneType: lambda _: st.none(),
    mi.BoolType: lambda _: st.booleans(),
    mi.IntType: _integers,
    mi.FloatType: _floats,
    mi.StrType: _strings,
    mi.BytesType: _binary,
    mi.ByteArrayType: _binary,
    mi.MemoryViewType: _binary,
    mi.DateTimeType: _datetimes,
    mi.TimeType: _times,
    mi.DateType: lambda _: st.dates().map(msgspec.to_builtins),
    mi.TimeDeltaType: lambda _: st.timedeltas().map(msgspec.to_builtins),
    mi.UUIDType: lambda _: st.uuids().map(str),
    mi.DecimalType: lambda _: st.decimals(allow_nan=False, allow_infinity=False).map(str),
    mi.EnumType: _enum_values,
    mi.LiteralType: _literal_values,
}
