"""Property tests for signature-derived tools (`tinytools._declare.schema`,
`tinytools._declare.validate`).

Each example draws a function signature over the supported parameter types (primitives,
unions, literals, enums, containers, TypedDicts, dataclasses, attrs classes, msgspec Structs,
temporal types, constrained and described types, defaults), decorates it with ``@tool`` and
checks the tool's two views of its arguments against each other: the advertised schema
(``tool.parameters``, compiled as draft 7 with formats through ``Tool.from_schema``) and
``Tool.validate`` (msgspec).

The two views knowingly differ in a few places, each named in ``VALIDATOR_LOOSER`` or
``SCHEMA_LOOSER`` and pinned by an example in ``TestKnownDivergences``. The differential test
excuses a disagreement only when the JSON value hits one of them, in the direction it
goes, at the JSON path where the rejecting validator reports it.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import enum
import functools
import inspect
import itertools
import keyword
import operator
import string
import sys
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Annotated, Any, Literal, Optional

import attrs
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import tinytools
from tinytools import Tool, ToolArgumentsError
from tinytools.testing import invalid_arguments, valid_arguments

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # typing.TypedDict only understands NotRequired from 3.11 on
    from typing_extensions import NotRequired, TypedDict

# --- known divergences ----------------------------------------------------------------------

#: msgspec accepts, the advertised schema rejects.
VALIDATOR_LOOSER = frozenset(
    {
        # `Decimal` is advertised as `{"type": "string", "format": "decimal"}`, but msgspec
        # also decodes a JSON number into a Decimal.
        "decimal-number",
        # `set[T]` / `frozenset[T]` advertise `uniqueItems: true`; msgspec folds duplicates.
        "set-duplicates",
        # msgspec parses a UUID written as 32 hex digits without hyphens; `format: uuid`
        # (RFC 4122 form) requires the hyphens.
        "uuid-hex",
        # A tagged Struct advertises its tag field as required, but msgspec requires it only
        # when decoding a union of tagged Structs; alone (or `| None`) the tag may be omitted.
        "struct-tag",
    }
)
#: The advertised schema accepts, msgspec rejects.
SCHEMA_LOOSER = frozenset(
    {
        # `datetime`, `time` and `Decimal` are advertised as strings without a format that
        # fastjsonschema checks (`decimal` is not a JSON Schema format), so any string passes
        # the schema while msgspec parses it.
        "bare-string",
        # fastjsonschema's `date` regex accepts year 0000 and non-ASCII digits (`\d` is
        # Unicode-aware in Python); msgspec (like `datetime.date`) rejects both.
        "date-regex",
        # A JSON integer beyond the float range is a `number` to JSON Schema, but msgspec
        # cannot represent it as a float ("Number out of range").
        "float-range",
    }
)

# --- shapes: a drawn type, its values, and JSON near its schema ------------------------------

#: Numbers the classes drawn for one example (reset per signature: readable, repeatable names).
_NUMBERS = [itertools.count()]
#: A step in a JSON path: ("field" | "entry" | "index", key).
Segment = tuple[str, Any]
#: A node of a JSON value: its path and the shape describing it.
Site = tuple[tuple[Segment, ...], "Shape"]


def unique_name(prefix: str) -> str:
    """A class name no other class drawn for this example has.

    msgspec keys ``$defs`` by class name (qualifying and numbering the names of different
    classes that share one, see ``test_same_named_classes_get_distinct_defs``).
    """
    return f"{prefix}{next(_NUMBERS[0])}"


def to_json(value: object) -> object:
    """``value`` as msgspec sends it over JSON, decoded back to plain JSON values."""
    return msgspec.json.decode(msgspec.json.encode(value))


@attrs.frozen
class Field:
    """A field of a drawn object type (or a parameter of a drawn function)."""

    name: str
    shape: Shape
    required: bool
    default: object = None


@attrs.frozen(repr=False)
class Shape:
    """A drawn parameter type and what the tests need to know about it.

    Attributes:
        tp: The annotation.
        values: Python values of ``tp``.
        near: JSON near its schema: valid half the time, else wrong in about one place.
        wrong: JSON near its schema but wrong right here (not deeper down).
        kind: The node's kind, read by :func:`quirks`.
        children: Nested shapes (union members, items, tuple positions, dict values).
        fields: An object type's fields.
        pattern: A constrained string's pattern.
    """

    tp: Any
    values: st.SearchStrategy[Any]
    near: st.SearchStrategy[Any]
    kind: str
    children: tuple[Shape, ...] = ()
    fields: tuple[Field, ...] = ()
    pattern: str | None = None
    wrong: st.SearchStrategy[Any] = attrs.field(factory=lambda: JSON_ANY)

    @property
    def json(self) -> st.SearchStrategy[Any]:
        """Valid JSON: the values as msgspec encodes them."""
        return self.values.map(to_json)

    def __repr__(self) -> str:
        return _type_repr(self.tp)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))  # what hypothesis prints for a failing example


def _type_repr(tp: object) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return repr(tp).replace("typing.", "").replace(f"{__name__}.", "")


FINITE = st.floats(allow_nan=False, allow_infinity=False)
#: Integers at the int64 / uint64 / float boundaries.
HUGE_INTS = st.sampled_from(
    [2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63) - 1, 2**1024, -(2**1024), 10**400]
)
JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), FINITE, st.text(max_size=6), HUGE_INTS
)
JSON_ANY = st.recursive(
    JSON_SCALARS,
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3)
    ),
    max_leaves=5,
)


def near(valid: st.SearchStrategy[Any], *wrong: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Valid JSON half the time, otherwise one of the ``wrong`` ways."""
    # `.map` keeps hypothesis from flattening the two `one_of`s into one.
    return st.one_of(valid, st.one_of(*wrong, JSON_ANY).map(_same))


def _same(value: object) -> object:
    return value


def leaf(tp: object, kind: str, values: st.SearchStrategy[Any], *wrong: Any) -> Shape:
    """A shape without children; ``wrong`` are near-miss JSON strategies."""
    near_misses = st.one_of(*wrong, JSON_SCALARS)
    return Shape(tp, values, near(values.map(to_json), near_misses), kind, wrong=near_misses)


DATETIME_TEXT = [
    "2020-01-01T00:00:00",
    "2020-01-01T00:00:00Z",
    "2020-01-01 00:00:00+01:00",
    "2020-01-01T24:00:00",
    "2020-02-30T00:00:00",
    "2020-01-01",
    "2020-01-01T00:00:00.1234567Z",
    "2020-01-01T00:00:00+25:00",
    "0000-01-01T00:00:00",
    "2020-01-01T00:00:00\n",
]
DATE_TEXT = [
    "2020-02-29",
    "2021-02-29",
    "2020-13-01",
    "2020-1-1",
    "20200101",
    "0000-01-01",
    "\u0662\u0660\u0662\u0660-01-01",
    "2020-01-01T00:00:00",
    "2020-01-01\n",
]
TIME_TEXT = [
    "12:00",
    "12:00:00",
    "1:02:03",
    "24:00:00",
    "12:00:60",
    "12:00:00Z",
    "12:00:00+01:00",
    "12:00:00.1234567",
    "12:00:00\n",
]
DECIMAL_TEXT = ["NaN", "-Infinity", "1e5", "1_000", " 1", "1.", ".5", "abc", "", "0x10", "+1"]
UTC = st.none() | st.just(datetime.timezone.utc)

LEAVES: dict[str, Shape] = {
    "str": leaf(str, "str", st.text(max_size=8)),
    "int": leaf(
        int,
        "int",
        st.integers(),
        HUGE_INTS,
        st.integers(-3, 3).map(float),
        st.sampled_from([1e300, -1e20, 2.0**64, 0.5]),
    ),
    "float": leaf(float, "float", FINITE, st.integers(), HUGE_INTS),
    "bool": leaf(bool, "bool", st.booleans(), st.sampled_from([0, 1, "true"])),
    "none": leaf(None, "none", st.none(), st.sampled_from([0, False, "", "null"])),
    "datetime": leaf(
        datetime.datetime,
        "datetime",
        st.datetimes(timezones=UTC),
        st.sampled_from(DATETIME_TEXT),
    ),
    "date": leaf(datetime.date, "date", st.dates(), st.sampled_from(DATE_TEXT)),
    "time": leaf(datetime.time, "time", st.times(timezones=UTC), st.sampled_from(TIME_TEXT)),
    "uuid": leaf(
        uuid.UUID,
        "uuid",
        st.uuids(),
        st.uuids().map(lambda u: u.hex),
        st.uuids().map(lambda u: str(u).upper()),
        st.uuids().map(lambda u: f"{{{u}}}"),
        st.uuids().map(lambda u: u.urn),
    ),
    "decimal": leaf(
        Decimal,
        "decimal",
        st.decimals(allow_nan=False, allow_infinity=False),
        FINITE,
        st.integers(),
        st.sampled_from(DECIMAL_TEXT),
    ),
}
PRIMITIVES = ("str", "int", "float", "bool", "none")
SPECIALS = ("datetime", "date", "time", "uuid", "decimal")


@st.composite
def primitive_unions(draw: st.DrawFn) -> Shape:
    """A union of two or more distinct primitives (``int | str | None``...)."""
    names = draw(st.lists(st.sampled_from(PRIMITIVES), min_size=2, max_size=4, unique=True))
    members = tuple(LEAVES[n] for n in names)
    return union([m.tp for m in members], members)


def union(tps: list[Any], members: tuple[Shape, ...]) -> Shape:
    """The union of ``members``, annotated as ``tps`` joined with ``|`` (if given)."""
    tp = functools.reduce(operator.or_, tps) if tps else None
    return Shape(
        tp,
        st.one_of(*(m.values for m in members)),
        st.one_of(*(m.near for m in members)),
        "union",
        members,
    )


@st.composite
def enums(draw: st.DrawFn) -> Shape:
    """An ``Enum`` (str or int values) or ``IntEnum``, created for this example."""
    name = unique_name("Enum")
    if draw(st.booleans()):
        values: list[Any] = draw(
            st.lists(st.text(string.ascii_letters, max_size=3), min_size=1, max_size=4, unique=True)
        )
        cls = enum.Enum(name, {f"m{i}": v for i, v in enumerate(values)})
        wrong = st.sampled_from(values).map(lambda v: v + "x")
    else:
        values = draw(st.lists(st.integers(-5, 5), min_size=1, max_size=4, unique=True))
        base = draw(st.sampled_from([enum.Enum, enum.IntEnum]))
        cls = base(name, {f"m{i}": v for i, v in enumerate(values)})
        wrong = st.sampled_from(values).map(float) | st.sampled_from(values).map(str)
    return leaf(cls, "enum", st.sampled_from(list(cls)), wrong, st.integers(-6, 6))


@st.composite
def literals(draw: st.DrawFn) -> Shape:
    """A ``Literal`` of distinct strs and ints."""
    values = draw(
        st.lists(
            st.text(string.ascii_lowercase, max_size=2) | st.integers(-3, 3),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    wrong = st.sampled_from(values).map(lambda v: v + "x" if isinstance(v, str) else float(v))
    return leaf(Literal[tuple(values)], "literal", st.sampled_from(values), wrong)


@st.composite
def bounded_ints(draw: st.DrawFn) -> Shape:
    """``Annotated[int, msgspec.Meta(...)]`` with inclusive or exclusive bounds."""
    lo = draw(st.integers(-50, 50))
    hi = lo + draw(st.integers(2, 20))
    low_key = draw(st.sampled_from(["ge", "gt", None]))
    high_key = draw(st.sampled_from(["le", "lt", None]))
    bounds = {k: v for k, v in ((low_key, lo), (high_key, hi)) if k is not None}
    first = lo + (low_key == "gt") if low_key else None
    last = hi - (high_key == "lt") if high_key else None
    return leaf(
        Annotated[int, msgspec.Meta(**bounds)],
        "int",
        st.integers(first, last),
        st.integers(lo - 2, hi + 2),
        st.integers(lo - 2, hi + 2).map(float),
    )


#: Pattern -> strings of length [min, max] it matches by JSON Schema's (ECMA-262) rules.
PATTERNS: dict[str | None, Callable[[int, int], st.SearchStrategy[str]]] = {
    None: lambda lo, hi: st.text(min_size=lo, max_size=hi),
    r"^[a-z]+$": lambda lo, hi: st.text(string.ascii_lowercase, min_size=max(lo, 1), max_size=hi),
    r"^[0-9a-f]*$": lambda lo, hi: st.text("0123456789abcdef", min_size=lo, max_size=hi),
    r"^id-": lambda lo, hi: st.text(min_size=max(lo - 3, 0), max_size=hi - 3).map("id-".__add__),
    r"[0-9]$": lambda lo, hi: st.text(min_size=max(lo - 1, 0), max_size=hi - 1).map(
        lambda s: s + "7"
    ),
}


def pattern_str(pattern: str | None, min_length: int, max_length: int | None) -> Shape:
    """``Annotated[str, msgspec.Meta(pattern=..., min_length=..., max_length=...)]``."""
    meta = msgspec.Meta(pattern=pattern, min_length=min_length or None, max_length=max_length)
    values = PATTERNS[pattern](min_length, 10 if max_length is None else max_length)
    shape = leaf(
        Annotated[str, meta],
        "str",
        values,
        values.map(lambda s: s + "\n"),
        values.map(lambda s: s[1:]),
        values.map(lambda s: s + "x"),
    )
    return attrs.evolve(shape, pattern=pattern)


@st.composite
def constrained_strs(draw: st.DrawFn) -> Shape:
    """A string with a simple pattern and/or length bounds."""
    pattern = draw(st.sampled_from(list(PATTERNS)))
    min_length = draw(st.integers(0, 2))
    max_length = draw(st.none() | st.integers(min_length + 3, min_length + 8))
    return pattern_str(pattern, min_length, max_length)


NONE = LEAVES["none"]


def optional(child: Shape, spelling: str) -> Shape:
    """``Optional[T]`` or ``T | None``."""
    if spelling == "|" and child.tp is not None:
        return union([child.tp, None], (child, NONE))
    return attrs.evolve(union([], (child, NONE)), tp=Optional[child.tp])  # noqa: UP045


def described(child: Shape, text: str) -> Shape:
    """``Annotated[T, "description"]``."""
    return Shape(Annotated[child.tp, text], child.values, child.near, "described", (child,))


@st.composite
def one_replaced(
    draw: st.DrawFn, items: st.SearchStrategy[list[Any]], replacement: st.SearchStrategy[Any]
) -> list[Any]:
    """``items`` with one item replaced by (or, at the end, extended with) a ``replacement``."""
    out = list(draw(items))
    at = draw(st.integers(0, len(out)))
    out[at : at + 1] = [draw(replacement)]
    return out


def list_of(child: Shape) -> Shape:
    """``list[T]``."""
    return Shape(
        list[child.tp],
        st.lists(child.values, max_size=3),
        near(st.lists(child.json, max_size=3), one_replaced(st.lists(child.json), child.near)),
        "array",
        (child,),
    )


def var_tuple(child: Shape) -> Shape:
    """``tuple[T, ...]``."""
    return attrs.evolve(
        list_of(child),
        tp=tuple[child.tp, ...],
        values=st.lists(child.values, max_size=3).map(tuple),
    )


@st.composite
def tuple_one_wrong(draw: st.DrawFn, children: tuple[Shape, ...]) -> list[Any]:
    """A fixed-length tuple's JSON with one position near its schema."""
    at = draw(st.integers(0, len(children) - 1))
    return [draw(c.near if i == at else c.json) for i, c in enumerate(children)]


def fixed_tuple(children: tuple[Shape, ...]) -> Shape:
    """``tuple[T, U, ...]`` with a fixed length."""
    valid = st.tuples(*(c.json for c in children)).map(list)
    return Shape(
        tuple[tuple(c.tp for c in children)],
        st.tuples(*(c.values for c in children)),
        near(
            valid,
            tuple_one_wrong(children),
            valid.map(lambda items: items[:-1]),
            valid.map(lambda items: [*items, items[0]]),
        ),
        "tuple",
        children,
    )


def set_of(child: Shape, frozen: bool) -> Shape:
    """``set[T]`` or ``frozenset[T]`` of a hashable ``T``."""
    values = (st.frozensets if frozen else st.sets)(child.values, max_size=3)
    json_items = st.lists(child.json, max_size=3)
    return Shape(
        (frozenset if frozen else set)[child.tp],
        values,
        near(
            values.map(to_json),
            one_replaced(json_items, child.near),
            one_replaced(json_items, child.json),  # a duplicate, sometimes
        ),
        "set",
        (child,),
    )


@st.composite
def one_entry_replaced(
    draw: st.DrawFn, entries: st.SearchStrategy[dict[str, Any]], value: st.SearchStrategy[Any]
) -> dict[str, Any]:
    """``entries`` with one key (new or existing) set to a ``value``."""
    out = dict(draw(entries))
    out[draw(st.sampled_from(sorted(out)) if out else st.text(max_size=4))] = draw(value)
    return out


def dict_of(child: Shape) -> Shape:
    """``dict[str, T]``."""
    entries = st.dictionaries(st.text(max_size=4), child.json, max_size=3)
    return Shape(
        dict[str, child.tp],
        st.dictionaries(st.text(max_size=4), child.values, max_size=3),
        near(entries, one_entry_replaced(entries, child.near)),
        "dict",
        (child,),
    )


IDENTIFIERS = st.builds(
    operator.add,
    st.sampled_from(string.ascii_letters),
    st.text(string.ascii_letters + string.digits + "_", max_size=6),
).filter(lambda s: not keyword.iskeyword(s))
#: attrs generates `__init__(self, *, <fields>)`, so it cannot have a field named `self`.
FIELD_NAMES = IDENTIFIERS.filter(lambda s: s != "self")
EXTRA_KEYS = st.sampled_from(["extra", "", "two words", "_hidden", "type"]) | st.text(max_size=3)


@st.composite
def one_field_wrong(
    draw: st.DrawFn, valid: st.SearchStrategy[dict[str, Any]], fields: tuple[Field, ...]
) -> dict[str, Any]:
    """A valid JSON object with one field near its schema, one key dropped, or one added."""
    out = dict(draw(valid))
    how = draw(st.sampled_from(["field", "field", "drop", "add"]))
    if how == "field" and fields:
        f = draw(st.sampled_from(fields))
        out[f.name] = draw(f.shape.near)
    elif how == "drop" and out:
        del out[draw(st.sampled_from(sorted(out)))]
    else:
        out.setdefault(draw(EXTRA_KEYS), draw(JSON_SCALARS))
    return out


@st.composite
def object_values(
    draw: st.DrawFn, fields: tuple[Field, ...], make: Callable[..., object]
) -> object:
    """An instance built from every required field and some optional ones."""
    kwargs = {f.name: draw(f.shape.values) for f in fields if f.required or draw(st.booleans())}
    return make(**kwargs)


def _hashable(value: object) -> bool:
    """Whether ``value`` can be a shared class-level default (mutable Structs cannot be)."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


@st.composite
def objects(draw: st.DrawFn, children: st.SearchStrategy[Shape], tagged: bool = False) -> Shape:
    """A dataclass, attrs class, msgspec Struct or TypedDict with drawn fields.

    ``tagged`` asks for a tagged Struct (tag field ``type``, tag value the class name).
    """
    kinds = ["struct"] if tagged else ["dataclass", "attrs", "struct", "typeddict"]
    flavour = draw(st.sampled_from(kinds))
    names = draw(st.lists(FIELD_NAMES.filter(lambda n: n != "type"), max_size=3, unique=True))
    fields = []
    for name in names:
        shape = draw(children)
        required = draw(st.booleans())
        default = None if required or flavour == "typeddict" else draw(shape.values)
        fields.append(Field(name, shape, required, default))
    if flavour == "dataclass":
        cls: Any = dataclasses.make_dataclass(
            unique_name("Dc"), [_dataclass_field(f) for f in fields], kw_only=True
        )
    elif flavour == "attrs":
        cls = attrs.make_class(
            unique_name("At"), {f.name: _attrs_field(f) for f in fields}, kw_only=True
        )
    elif flavour == "struct":
        cls = msgspec.defstruct(
            unique_name("St"),
            [_struct_field(f) for f in fields],
            kw_only=True,
            tag=tagged or draw(st.booleans()) or None,
            forbid_unknown_fields=draw(st.booleans()),
        )
    else:
        total = draw(st.booleans())
        # A non-total TypedDict has no required keys; a total one marks its optional keys.
        fields = [attrs.evolve(f, required=f.required and total) for f in fields]
        cls = TypedDict(  # type: ignore[misc]
            unique_name("Td"),
            {
                f.name: f.shape.tp if f.required or not total else NotRequired[f.shape.tp]
                for f in fields
            },
            total=total,
        )
    values = object_values(tuple(fields), dict if flavour == "typeddict" else cls)
    valid = values.map(to_json)
    return Shape(
        cls, values, near(valid, one_field_wrong(valid, tuple(fields))), "object", (), tuple(fields)
    )


@st.composite
def struct_unions(draw: st.DrawFn, children: st.SearchStrategy[Shape]) -> Shape:
    """A union of two or three tagged Structs (msgspec's tagged unions)."""
    members = tuple(draw(objects(children, tagged=True)) for _ in range(draw(st.integers(2, 3))))
    return union([m.tp for m in members], members)


def _dataclass_field(f: Field) -> tuple[str, Any] | tuple[str, Any, Any]:
    if f.required:
        return (f.name, f.shape.tp)
    if _hashable(f.default):
        return (f.name, f.shape.tp, dataclasses.field(default=f.default))
    return (f.name, f.shape.tp, dataclasses.field(default_factory=_copier(f.default)))


def _attrs_field(f: Field) -> Any:
    if f.required:
        return attrs.field(type=f.shape.tp)
    if _hashable(f.default):
        return attrs.field(type=f.shape.tp, default=f.default)
    return attrs.field(type=f.shape.tp, factory=_copier(f.default))


def _struct_field(f: Field) -> tuple[str, Any] | tuple[str, Any, Any]:
    if f.required:
        return (f.name, f.shape.tp)
    if _hashable(f.default):
        return (f.name, f.shape.tp, f.default)
    return (f.name, f.shape.tp, msgspec.field(default_factory=_copier(f.default)))


def _copier(value: object) -> Callable[[], object]:
    return lambda: copy.deepcopy(value)


def _base_leaves() -> st.SearchStrategy[Shape]:
    return st.one_of(
        st.sampled_from([LEAVES[n] for n in PRIMITIVES]),
        # Twice: these are where the known divergences live.
        st.sampled_from([LEAVES[n] for n in SPECIALS]),
        st.sampled_from([LEAVES[n] for n in SPECIALS]),
        primitive_unions(),
        enums(),
        literals(),
        bounded_ints(),
        constrained_strs(),
    )


def _wrappers(children: st.SearchStrategy[Shape]) -> list[st.SearchStrategy[Shape]]:
    """Type constructors that keep a hashable type hashable."""
    return [
        st.builds(optional, children, st.sampled_from(["Optional", "|"])),
        st.builds(
            described, children, st.text(string.ascii_letters + " ", min_size=1, max_size=12)
        ),
        st.builds(var_tuple, children),
        st.lists(children, min_size=1, max_size=3).map(lambda cs: fixed_tuple(tuple(cs))),
    ]


HASHABLE_SHAPES = st.recursive(
    _base_leaves(), lambda kids: st.one_of(_wrappers(kids)), max_leaves=3
)
SHAPES = st.recursive(
    _base_leaves(),
    lambda kids: st.one_of(
        *_wrappers(kids),
        st.builds(list_of, kids),
        st.builds(set_of, HASHABLE_SHAPES, st.booleans()),
        st.builds(dict_of, kids),
        objects(kids),
        struct_unions(kids),
    ),
    max_leaves=6,
)

# --- drawn functions ---------------------------------------------------------------------


@attrs.frozen(repr=False)
class Drawn:
    """A drawn function's parameters, the tool ``@tool`` made of it, and its advertised schema.

    ``advertised`` is ``tool.parameters`` as a tool of its own: compiled by fastjsonschema,
    draft 7 with formats (``prefixItems`` translated).
    """

    params: tuple[Field, ...]
    tool: Tool[..., object]
    advertised: Tool[..., object]

    @property
    def shape(self) -> Shape:
        """The arguments object as a shape (its fields are the parameters)."""
        return Shape(dict, st.nothing(), st.nothing(), "object", fields=self.params)

    def __repr__(self) -> str:
        return f"drawn{inspect.signature(self.tool.fn)}"  # type: ignore[arg-type]

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))  # what hypothesis prints for a failing example


def drawn_of(params: tuple[Field, ...]) -> Drawn:
    """The tool for a function with ``params``, and its advertised schema as a tool."""
    tool = tinytools.tool(make_function(params))
    return Drawn(params, tool, advertised(msgspec.json.encode(tool.parameters)))


@functools.lru_cache(maxsize=256)
def advertised(schema: bytes) -> Tool[..., object]:
    """A schema as a tool, compiled once (hypothesis meets the same schema while shrinking)."""
    return Tool.from_schema("t", "", msgspec.json.decode(schema))  # msgspec writes 2020-12


def make_function(params: tuple[Field, ...]) -> Callable[..., object]:
    """A function with exactly ``params`` as its signature and annotations."""

    def drawn(**kwargs: object) -> object:
        return kwargs

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    parameters = []
    for p in params:
        if not p.required:
            kind = inspect.Parameter.KEYWORD_ONLY  # so later required ones may follow
        default = inspect.Parameter.empty if p.required else p.default
        parameters.append(inspect.Parameter(p.name, kind, default=default, annotation=p.shape.tp))
    drawn.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    drawn.__annotations__ = {p.name: p.shape.tp for p in params}
    return drawn


@st.composite
def signatures(draw: st.DrawFn) -> Drawn:
    """A function over drawn parameter types (rarely none), decorated with ``@tool``."""
    _NUMBERS[0] = itertools.count()
    at_least = 0 if draw(st.integers(0, 19)) == 0 else 1
    names = draw(st.lists(IDENTIFIERS, min_size=at_least, max_size=4, unique=True))
    params = []
    for name in names:
        shape = draw(SHAPES)
        required = draw(st.booleans())
        default = None if required else draw(shape.values)
        params.append(Field(name, shape, required, default))
    return drawn_of(tuple(params))


@st.composite
def arguments(draw: st.DrawFn, drawn: Drawn) -> dict[str, object]:
    """Python arguments for every required parameter and some optional ones."""
    return {p.name: draw(p.shape.values) for p in drawn.params if p.required or draw(st.booleans())}


def near_arguments(drawn: Drawn) -> st.SearchStrategy[object]:
    """JSON near the arguments schema: valid objects, objects wrong in a place, anything."""
    valid = arguments(drawn).map(to_json)
    wrong = one_site_wrong(valid, drawn.shape)
    return st.one_of(valid, wrong, wrong, wrong, one_field_wrong(valid, drawn.params), JSON_ANY)


@st.composite
def one_site_wrong(draw: st.DrawFn, valid: st.SearchStrategy[Any], shape: Shape) -> object:
    """Valid JSON with one node, picked uniformly from all of them, made wrong right there."""
    value = draw(valid)
    at, site = draw(st.sampled_from(list(sites(shape, value))))
    return replaced(value, at, draw(edits(site, value_at(value, at))))


def sites(shape: Shape, value: object, at: tuple[Segment, ...] = ()) -> Iterator[Site]:
    """Every node of a valid JSON ``value`` with the shape that describes it."""
    kind, children = shape.kind, shape.children
    if kind == "described":
        yield from sites(children[0], value, at)
        return
    if kind == "union":  # the member the value is valid for
        member = next(m for m in children if _parses(value, m.tp))
        yield from sites(member, value, at)
        return
    yield at, shape
    if isinstance(value, list):
        for i, item in enumerate(value):
            child = children[i] if kind == "tuple" else children[0]
            yield from sites(child, item, (*at, ("index", i)))
    elif isinstance(value, dict) and kind == "dict":
        for key, item in value.items():
            yield from sites(children[0], item, (*at, ("entry", key)))
    elif isinstance(value, dict) and kind == "object":
        for f in shape.fields:
            if f.name in value:
                yield from sites(f.shape, value[f.name], (*at, ("field", f.name)))


def edits(shape: Shape, value: object) -> st.SearchStrategy[Any]:
    """Ways to make ``value`` wrong for ``shape`` at its own level."""
    options = [shape.wrong]
    if isinstance(value, list) and value:
        options += [st.just([*value, value[0]]), st.just(value[:-1])]
    if isinstance(value, dict) and shape.kind == "object":
        extra = st.tuples(EXTRA_KEYS, JSON_SCALARS).map(lambda kv: {kv[0]: kv[1], **value})
        options.append(extra)
        if value:
            options.append(
                st.sampled_from(sorted(value)).map(
                    lambda gone: {k: v for k, v in value.items() if k != gone}
                )
            )
    return st.one_of(options)


def value_at(value: Any, at: tuple[Segment, ...]) -> Any:
    """The node of ``value`` at ``at``."""
    for _, key in at:
        value = value[key]
    return value


def replaced(value: Any, at: tuple[Segment, ...], new: object) -> Any:
    """A copy of ``value`` with the node at ``at`` replaced by ``new``."""
    if not at:
        return new
    (_, key), rest = at[0], at[1:]
    out = list(value) if isinstance(value, list) else dict(value)
    out[key] = replaced(value[key], rest, new)
    return out


# --- the divergence predicate ---------------------------------------------------------------


@attrs.frozen
class Quirk:
    """A known divergence that a JSON value hits, and where."""

    label: str
    at: tuple[Segment, ...]
    unions: tuple[tuple[Segment, ...], ...]

    def reported_at(self, path: str, matches: Callable[[str, tuple[Segment, ...]], bool]) -> bool:
        """True when a validator's error ``path`` is this quirk's value or a union holding it."""
        return any(matches(path, at) for at in (self.at, *self.unions))


def quirks(
    shape: Shape,
    value: object,
    at: tuple[Segment, ...] = (),
    unions: tuple[Any, ...] = (),
    tag_required: bool = False,
) -> Iterator[Quirk]:
    """Every known divergence ``value`` hits against ``shape``'s schema and validator.

    ``unions`` are the paths of the unions holding the value; ``tag_required`` is true for
    the members of a union of tagged Structs (which msgspec decodes by their tag).
    """
    kind, children = shape.kind, shape.children
    if kind == "described":
        yield from quirks(children[0], value, at, unions, tag_required)
    elif kind == "union":
        tagged = sum(_tag_field(c) is not None for c in children) > 1
        for child in children:
            yield from quirks(child, value, at, (*unions, at), tagged)
    elif kind in ("array", "tuple", "set") and isinstance(value, list):
        if kind == "set" and _has_json_duplicates(value):
            yield Quirk("set-duplicates", at, unions)
        for i, item in enumerate(value[: len(children)] if kind == "tuple" else value):
            child = children[i] if kind == "tuple" else children[0]
            yield from quirks(child, item, (*at, ("index", i)), unions)
    elif kind == "dict" and isinstance(value, dict):
        for key, item in value.items():
            yield from quirks(children[0], item, (*at, ("entry", key)), unions)
    elif kind == "object" and isinstance(value, dict):
        tag = _tag_field(shape)
        if tag is not None and tag not in value and not tag_required:
            yield Quirk("struct-tag", at, unions)
        for f in shape.fields:
            if f.name in value:
                yield from quirks(f.shape, value[f.name], (*at, ("field", f.name)), unions)
    else:
        label = _leaf_quirk(shape, value)
        if label is not None:
            yield Quirk(label, at, unions)


def _tag_field(shape: Shape) -> str | None:
    """The tag field of a tagged Struct's shape (through descriptions), else ``None``."""
    while shape.kind == "described":
        shape = shape.children[0]
    config = getattr(shape.tp, "__struct_config__", None)
    return None if config is None or config.tag is None else config.tag_field


def _leaf_quirk(shape: Shape, value: object) -> str | None:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if shape.kind == "decimal" and number:
        return "decimal-number"
    if shape.kind in ("datetime", "time", "decimal") and isinstance(value, str):
        return None if _parses(value, shape.tp) else "bare-string"
    if shape.kind == "date" and isinstance(value, str):
        odd = value.startswith("0000-") or not value.isascii()
        return "date-regex" if odd and not _parses(value, shape.tp) else None
    if shape.kind == "uuid" and isinstance(value, str) and len(value) == 32:
        return "uuid-hex" if _parses(value, shape.tp) else None
    if shape.kind == "float" and number and abs(value) > sys.float_info.max:  # type: ignore[arg-type]
        return "float-range"
    return None


def _parses(value: object, tp: object) -> bool:
    """Whether msgspec decodes the JSON ``value`` as a ``tp``."""
    try:
        msgspec.json.decode(msgspec.json.encode(value), type=tp)
    except msgspec.ValidationError:
        return False
    return True


def _json_key(value: object) -> object:
    """A hashable key under which JSON values are equal exactly when JSON Schema says so."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, (int, float)):
        return ("number", value)  # 1 == 1.0, as JSON Schema has it
    if isinstance(value, list):
        return ("array", tuple(_json_key(v) for v in value))
    assert isinstance(value, dict)
    return ("object", frozenset((k, _json_key(v)) for k, v in value.items()))


def _has_json_duplicates(items: list[object]) -> bool:
    return len({_json_key(v) for v in items}) < len(items)


def is_schema_path(path: str, at: tuple[Segment, ...]) -> bool:
    """Whether the advertised-schema validator's error ``path`` names ``at``.

    It writes ``$.a["two words"][0]``. Past a key that is empty or holds ``.``, ``[`` or
    ``]`` the path is lossy (fastjsonschema splits its error's name on those characters
    and drops empty parts), so only the part before such a key is compared.
    """
    out = "$"
    for kind, key in at:
        if kind == "index":
            out += f"[{key}]"
        elif key == "" or any(c in key for c in ".[]"):
            return path.startswith(out)
        elif key.isidentifier():
            out += f".{key}"
        else:
            text = msgspec.json.encode(key).decode()
            out += f"[{text if len(text) <= 60 else text[:57] + '...'}]"
    return path == out


def is_msgspec_path(path: str, at: tuple[Segment, ...]) -> bool:
    """Whether msgspec's error ``path`` names ``at`` (``$.a[...][0]``: dict keys unnamed)."""
    out = "$"
    for kind, key in at:
        out += {"index": f"[{key}]", "entry": "[...]", "field": f".{key}"}[kind]
    return path == out


def rejection(tool: Tool[..., object], raw: bytes) -> ToolArgumentsError | None:
    """The error ``tool`` raises for ``raw``, or ``None`` when it accepts it."""
    try:
        tool.validate(raw)
    except ToolArgumentsError as error:
        return error
    return None


def accepted(drawn: Drawn, tool: Tool[..., object], raw: bytes) -> dict[str, object]:
    """What ``tool`` makes of valid arguments; a rejection fails the test.

    Raised from this one place, the failure is one failure to hypothesis (an error raised
    in the code fastjsonschema generates would count as distinct for every schema).
    """
    error = rejection(tool, raw)
    assert error is None, (
        f"{tool!r} rejects valid arguments: {error}\narguments: {raw.decode()}\n"
        f"schema: {msgspec.json.encode(drawn.tool.parameters).decode()}"
    )
    return tool.validate(raw)


def explain_disagreement(drawn: Drawn, raw: bytes) -> str | None:
    """Why the validator and the advertised schema disagree on ``raw``, or None when they agree.

    Raises:
        AssertionError: They disagree and no known divergence explains it.
    """
    by_validator = rejection(drawn.tool, raw)
    by_schema = rejection(drawn.advertised, raw)
    if (by_validator is None) == (by_schema is None):
        return None
    found = list(quirks(drawn.shape, msgspec.json.decode(raw)))
    if by_validator is None:
        assert by_schema is not None
        excuses = [
            q
            for q in found
            if q.label in VALIDATOR_LOOSER and q.reported_at(by_schema.path, is_schema_path)
        ]
        side = f"Tool.validate accepts; the advertised schema rejects: {by_schema}"
    else:
        excuses = [
            q
            for q in found
            if q.label in SCHEMA_LOOSER and q.reported_at(by_validator.path, is_msgspec_path)
        ]
        side = f"the advertised schema accepts; Tool.validate rejects: {by_validator}"
    assert excuses, (
        f"{side}\narguments: {raw.decode()}\nknown divergences hit: {found}\n"
        f"schema: {msgspec.json.encode(drawn.tool.parameters).decode()}"
    )
    return excuses[0].label


# --- tests ---------------------------------------------------------------------------------


class TestGeneratedValues:
    @settings(max_examples=200, deadline=None)
    @given(st.data())
    def test_pass_validate_and_the_advertised_schema(self, data: st.DataObject) -> None:
        """Arguments generated for the Python types pass both validators and come back equal."""
        drawn = data.draw(signatures())
        given_args = data.draw(arguments(drawn))
        raw = msgspec.json.encode(given_args)

        kwargs = accepted(drawn, drawn.tool, raw)
        accepted(drawn, drawn.advertised, raw)

        defaults = {p.name: p.default for p in drawn.params if not p.required}
        assert {**defaults, **given_args} == kwargs


class TestPublicKit:
    """`tinytools.testing` draws from any signature's types what `validate` promises."""

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def test_valid_arguments_validate(self, data: st.DataObject) -> None:
        """`valid_arguments` of any drawn signature passes `validate`, as a dict and as JSON."""
        drawn = data.draw(signatures())
        value = data.draw(valid_arguments(drawn.tool))

        drawn.tool.validate(value)
        drawn.tool.validate(msgspec.json.encode(value).decode())

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def test_invalid_arguments_are_rejected(self, data: st.DataObject) -> None:
        """`invalid_arguments` of any drawn signature is rejected by `validate`."""
        drawn = data.draw(signatures())
        try:
            broken = invalid_arguments(drawn.tool)
        except InvalidArgument:
            assert not drawn.params, "only a tool without parameters accepts every object"
            return
        value = data.draw(broken)

        with pytest.raises(ToolArgumentsError):
            drawn.tool.validate(value)


class TestDifferential:
    @settings(max_examples=300, deadline=None)
    @given(st.data())
    def test_validate_agrees_with_the_advertised_schema(self, data: st.DataObject) -> None:
        """`Tool.validate` accepts what the advertised schema accepts, bar known divergences."""
        drawn = data.draw(signatures())
        for value in data.draw(st.lists(near_arguments(drawn), min_size=2, max_size=10)):
            explain_disagreement(drawn, msgspec.json.encode(value))

    @settings(max_examples=100, deadline=None)
    @given(st.data())
    def test_mapping_and_raw_json_are_validated_alike(self, data: st.DataObject) -> None:
        """`Tool.validate` gives the same answer for decoded arguments as for their JSON text."""
        drawn = data.draw(signatures())
        for value in data.draw(st.lists(near_arguments(drawn), min_size=2, max_size=10)):
            if not isinstance(value, dict):
                continue
            raw = msgspec.json.encode(value)
            try:
                from_raw: object = drawn.tool.validate(raw)
            except ToolArgumentsError as error:
                from_raw = ToolArgumentsError
                detail = str(error)
            else:
                detail = ""
            try:
                from_mapping: object = drawn.tool.validate(value)
            except ToolArgumentsError:
                from_mapping = ToolArgumentsError
            assert _alike(from_raw, from_mapping), f"{raw.decode()}: raw -> {detail or from_raw}"


def _alike(left: object, right: object) -> bool:
    """Equal, or equal as deterministic JSON: a ``Decimal('NaN')`` (a Decimal parameter
    reads the text ``"NaN"``) equals no value, itself included."""
    if left == right:
        return True
    try:
        return _ordered(left) == _ordered(right)
    except (TypeError, msgspec.EncodeError):
        return False


_ordered = functools.partial(msgspec.json.encode, order="deterministic")


def one_parameter(shape: Shape) -> Drawn:
    """A tool with one required parameter ``x`` of ``shape``'s type."""
    return drawn_of((Field("x", shape, required=True),))


def class_shape(cls: type) -> Shape:
    """A shape for an existing class, enough for :func:`quirks` (it draws nothing)."""
    return Shape(cls, st.nothing(), st.nothing(), "object")


TAGGED = class_shape(msgspec.defstruct("Tagged", [("n", int, 0)], tag=True))
OTHER = class_shape(msgspec.defstruct("Other", [("m", int, 0)], tag=True))
UUID_TEXT = "12345678123456781234567812345678"
ARABIC_DATE = "\u0662\u0660\u0662\u0660-01-01"


class TestKnownDivergences:
    @pytest.mark.parametrize(
        ("shape", "value", "label"),
        [
            (LEAVES["decimal"], 5, "decimal-number"),
            (set_of(LEAVES["int"], frozen=False), [1, 1], "set-duplicates"),
            (set_of(LEAVES["float"], frozen=True), [1, 1.0], "set-duplicates"),
            (LEAVES["uuid"], UUID_TEXT, "uuid-hex"),
            (LEAVES["datetime"], "tomorrow", "bare-string"),
            (LEAVES["time"], "25:00:00", "bare-string"),
            (LEAVES["decimal"], "abc", "bare-string"),
            (LEAVES["date"], "0000-01-01", "date-regex"),
            (LEAVES["date"], ARABIC_DATE, "date-regex"),
            (LEAVES["float"], 2**1024, "float-range"),
            (optional(list_of(LEAVES["decimal"]), "|"), [1.5], "decimal-number"),
            (TAGGED, {}, "struct-tag"),
            (optional(TAGGED, "|"), {"n": 1}, "struct-tag"),
            (dict_of(LEAVES["decimal"]), {"": 1}, "decimal-number"),
        ],
        ids=repr,
    )
    def test_each_divergence_is_real_and_recognised(
        self, shape: Shape, value: object, label: str
    ) -> None:
        """Each known divergence still happens, and the predicate names it where it happens."""
        drawn = one_parameter(shape)

        assert label == explain_disagreement(drawn, msgspec.json.encode({"x": value}))

    @pytest.mark.parametrize(
        ("shape", "value"),
        [
            (LEAVES["int"], 5.0),
            (LEAVES["int"], 1e300),
            (LEAVES["int"], 2**64),
            (set_of(LEAVES["int"], frozen=False), [1, True]),
            (LEAVES["uuid"], UUID_TEXT.upper()[:31]),
            (pattern_str(r"^id-", 0, None), "id-\n"),
            # Patterns run on RE2 with ECMA-262's `$` (the text's end) in both.
            (pattern_str(r"^[a-z]+$", 0, None), "abc\n"),
            (LEAVES["date"], "2021-02-29"),
            (LEAVES["bool"], 1),
            (union([TAGGED.tp, OTHER.tp], (TAGGED, OTHER)), {}),
            (union([TAGGED.tp, OTHER.tp], (TAGGED, OTHER)), {"type": "Other", "m": 1}),
        ],
        ids=repr,
    )
    def test_near_misses_agree(self, shape: Shape, value: object) -> None:
        """Values next to a divergence, and JSON Schema's own allowances, get one answer."""
        drawn = one_parameter(shape)

        assert explain_disagreement(drawn, msgspec.json.encode({"x": value})) is None

    def test_same_named_classes_get_distinct_defs(self) -> None:
        """Two different classes with one name get two `$defs` entries, each checked as its own."""
        first = dataclasses.make_dataclass("Item", [("p", int)])
        second = dataclasses.make_dataclass("Item", [("q", str)])
        params = (
            Field("a", class_shape(first), required=True),
            Field("b", class_shape(second), required=True),
        )
        drawn = drawn_of(params)

        assert 2 == len(drawn.tool.parameters["$defs"])  # type: ignore[arg-type]
        assert explain_disagreement(drawn, b'{"a": {"p": 1}, "b": {"q": "x"}}') is None
        assert explain_disagreement(drawn, b'{"a": {"q": "x"}, "b": {"p": 1}}') is None
        assert rejection(drawn.advertised, b'{"a": {"q": "x"}, "b": {"p": 1}}') is not None


class TestDefaults:
    def test_mutable_struct_default_is_accepted_and_fresh_per_call(self) -> None:
        """A mutable Struct instance as a default is advertised and copied for every call."""
        point = msgspec.defstruct("Point", [("x", int, 0)])
        params = (Field("at", class_shape(point), required=False, default=point(x=1)),)
        drawn = drawn_of(params)

        first, second = drawn.tool.validate("{}")["at"], drawn.tool.validate("{}")["at"]

        assert {"x": 1} == drawn.tool.parameters["properties"]["at"]["default"]  # type: ignore[index]
        assert point(x=1) == first == second
        assert first is not second
