"""JSON Schema to grammar rules, for the decoding constraints.

:class:`Values` turns a tool's ``parameters`` into rules of a
:class:`~tinytools.formats._grammar.Grammar` that accept the JSON a dialect's
``render_call`` writes for every value the schema accepts — the grammar may
be looser than the schema, never stricter about a value — and record in
:attr:`Values.unenforced` each keyword it leaves to ``Tool.validate``.

* **Form.** JSON exactly as the dialect writes it: its separators (``", "``
  and ``": "`` for ``json.dumps``, ``","`` and ``":"`` for compact JSON), no
  other whitespace, object keys in the order the schema lists them
  (``properties``, then ``required`` names it does not list), as every
  constrained decoder does. A string is any JSON string whose raw text
  cannot end the call or read as reasoning: the dialect names the *lead*
  characters (``<``, Mistral's ``[``) and the words after them that may not
  appear raw (``<think>``, ``[TOOL_CALLS]``…), which its writer escapes
  (``\\u003c``); ``\\u`` escapes of lone surrogates are refused.
* **Enforced.** ``type``, ``properties``, ``required``,
  ``additionalProperties`` (``false``, or absent where ``properties`` is
  given: no other key is written), ``items``, ``prefixItems``, ``minItems``
  and ``maxItems`` (up to :data:`REPEAT_CAP`), a string's ``maxLength`` and
  ``minLength`` (up to :data:`REPEAT_CAP`; exactly where the dialect escapes
  every lead character, else as at most ``maxLength`` pieces of text, a lead
  and what follows it up to a word's break being one, and listed in
  ``unenforced``), ``enum``, ``const``,
  ``anyOf``, local ``$ref``, and a ``pattern`` anchored with ``^…$`` built
  from literals, classes, ``\\d``/``\\w``, groups, ``|`` and quantifiers whose
  characters need no escape in JSON (the patterns llama.cpp's own schema
  converter handles).
* **Left to validation** (listed in ``unenforced``): string lengths past
  :data:`REPEAT_CAP` or beside an enforced ``pattern``, ``format``, numeric
  bounds and ``multipleOf``, ``uniqueItems``, ``contains``,
  ``oneOf``'s "exactly one", ``allOf``, ``not``, ``if``/``then``/``else``, the
  object keywords other than those above, a ``pattern`` outside that subset,
  and the value of a key repeated through ``additionalProperties``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Final, NamedTuple

import msgspec

from tinytools._text import json_type

from ._grammar import EMPTY, REPEAT_CAP, Alt, Chars, Grammar, Lit, Node, Ref, Rep, Seq, opt
from ._pattern import pattern_node
from ._writable import JSON_DEPTH, unwritable

__all__ = [
    "PYTHON_ESCAPES",
    "JsonStyle",
    "Values",
    "in_schema_order",
    "member_names",
    "text_avoiding",
]

_ANNOTATIONS: Final = frozenset(
    {"title", "description", "default", "examples", "$schema", "$id", "$comment", "$anchor",
     "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "nullable"}
)  # fmt: skip
_VALIDATION: Final = frozenset(
    {"minLength", "maxLength", "format", "minimum", "maximum", "exclusiveMinimum",
     "exclusiveMaximum", "multipleOf", "uniqueItems", "contains", "minContains", "maxContains",
     "minProperties", "maxProperties", "propertyNames", "patternProperties", "dependentRequired",
     "dependentSchemas", "dependencies", "allOf", "not", "if", "then", "else",
     "unevaluatedProperties", "unevaluatedItems", "additionalItems", "contentEncoding",
     "contentMediaType", "contentSchema"}
)  # fmt: skip
#: The deepest ``const`` or ``enum`` value spelled out; a deeper one is left to validation.
LITERAL_DEPTH: Final = 32
_HEX: Final = Chars([(48, 57), (65, 70), (97, 102)])
# A \u escape of anything but a surrogate half.
_UNICODE_ESCAPE: Final = Seq(
    Lit("\\u"),
    Alt(
        Seq(Chars([(48, 57), (65, 67), (69, 70), (97, 99), (101, 102)]), Rep(_HEX, 3, 3)),
        Seq(Chars.of("dD"), Chars([(48, 55)]), Rep(_HEX, 2, 2)),
    ),
)
_ESCAPE: Final = Alt(Seq(Lit("\\"), Chars.of('"\\/bfnrt')), _UNICODE_ESCAPE)
#: The escapes a Python string literal reads as JSON reads its own, and ``\\xHH`` (no
#: ``\\/``, which Python reads as two characters).
PYTHON_ESCAPES: Final = Alt(
    Seq(Lit("\\"), Chars.of('"\\bfnrt')), Seq(Lit("\\x"), Rep(_HEX, 2, 2)), _UNICODE_ESCAPE
)
# What JSON text never holds raw inside a string.
_NEVER_RAW: Final = '"\\' + "".join(map(chr, range(0x20)))
_DIGITS: Final = Chars([(48, 57)])
# A float's shortest spelling (repr, msgspec) has at most 17 significant digits: its
# fraction at most 21 digits, its exponent 3. Only an integer has more digits, before any
# point, so capping these is never stricter about a value (and a model cannot write digits
# until its token limit there).
_FRACTION_DIGITS: Final = 32
_EXPONENT_DIGITS: Final = 3


def _numeral(*, integral: bool, digits: int | None = None) -> Node:
    """A JSON number (an integer when ``integral``), at most ``digits`` before any point."""
    whole = Alt(
        Lit("0"), Seq(Chars([(49, 57)]), Rep(_DIGITS, 0, None if digits is None else digits - 1))
    )
    if integral:
        return Seq(opt(Lit("-")), whole)
    return Seq(
        opt(Lit("-")),
        whole,
        opt(Seq(Lit("."), Rep(_DIGITS, 1, _FRACTION_DIGITS))),
        opt(Seq(Chars.of("eE"), opt(Chars.of("+-")), Rep(_DIGITS, 1, _EXPONENT_DIGITS))),
    )


def _digits_within(schema: Mapping[str, object]) -> int | None:
    """How many digits a number within the schema's bounds has before any point, when it
    gives one on each side (``None`` otherwise)."""

    def largest(inclusive: str, exclusive: str) -> int | None:
        """The largest whole part a value on this side can have (``None``: unbounded)."""
        found = []
        for key in (inclusive, exclusive):
            bound = schema.get(key)
            if isinstance(bound, (int, float)) and not isinstance(bound, bool):
                if not math.isfinite(bound):
                    continue
                whole = math.floor(abs(bound))
                # (below an exclusive whole bound, the whole part is one less)
                found.append(whole - 1 if key == exclusive and whole == abs(bound) else whole)
        return min(found) if found else None

    low = largest("minimum", "exclusiveMinimum")
    high = largest("maximum", "exclusiveMaximum")
    if low is None or high is None:
        return None
    return len(str(max(low, high, 0)))


class JsonStyle(NamedTuple):
    """How a dialect writes the JSON of a call's arguments (or, with the last three
    fields, the Python literals p-type writes: the same shapes, other spellings)."""

    #: Between array items and object members.
    item: str
    #: Between a key and its value.
    key: str
    #: The dialect's escape of written JSON (``<`` as ``\\u003c`` where it must).
    escape: Callable[[str], str]
    #: Lead character -> the words after it that may not appear raw in a string
    #: (``("",)``: the lead never appears raw).
    leads: Mapping[str, tuple[str, ...]]
    #: How ``true``, ``false`` and ``null`` are spelt.
    words: tuple[str, str, str] = ("true", "false", "null")
    #: A scalar's one spelling, before ``escape`` (``None``: as ``json.dumps`` and
    #: msgspec write it).
    spell: Callable[[object], str] | None = None
    #: The escapes a string may hold (``None``: JSON's, less lone surrogates).
    escapes: Node | None = None


def text_avoiding(
    base: Chars,
    leads: Mapping[str, tuple[str, ...]],
    escape: Node | None = None,
    unit: Node | None = None,
    *,
    most: int | None = None,
    rule: Callable[[Node], Node] | None = None,
) -> Node:
    """Any run of ``base`` characters and ``escape`` s (which start with a character no
    word holds), with lead characters raw except where they start one of their words.

    Regular, so a Lark terminal: ``A* (O* C A*)* O*`` where ``A`` is any unit but a lead
    (``unit``, when a rule for it is given), ``O`` a lead then any proper prefix ``P``
    of its words, and ``C`` such an ``O`` then a unit that does not carry ``P`` on
    towards a word.

    With ``most``, at most that many *pieces*: an ``A``, or a run ``O* C`` — each at
    least one character, so every text of at most ``most`` units is matched; where a
    lead is written raw (:func:`counts_exactly` is false) a longer one may be too.
    ``rule`` makes a piece a rule of its own (see :meth:`Values.bounded`).
    """
    raw = base.without("".join(leads))
    units = () if escape is None else (escape,)
    if unit is None:
        unit = Alt(raw, *units) if units else raw
    opened: list[Node] = []
    closed: list[Node] = []
    for lead, words in leads.items():
        if "" in words:
            continue  # never raw
        for prefix in _prefixes(words):
            onward = {word[len(prefix)] for word in words if word.startswith(prefix)}
            stop = raw.without("".join(onward))
            opened.append(Lit(lead + prefix))
            closed.append(Seq(Lit(lead + prefix), Alt(stop, *units) if units else stop))
    if not opened:
        return Rep(unit, 0, most)
    open_ = Alt(*opened)
    piece: Node = Alt(unit, Seq(Rep(open_, 0, most), Alt(*closed)))
    if rule is not None:
        piece = rule(piece)
    return Seq(Rep(piece, 0, most), Rep(open_, 0, most))


def counts_exactly(leads: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether :func:`text_avoiding` counts characters (no lead is ever written raw)."""
    return all("" in words for words in leads.values())


def _prefixes(words: tuple[str, ...]) -> list[str]:
    """Every proper prefix of ``words`` that holds no whole word."""
    found: dict[str, None] = {}
    for word in words:
        for end in range(len(word)):
            prefix = word[:end]
            if not any(prefix.startswith(other) for other in words):
                found[prefix] = None
    return list(found)


class Values:
    """Rules for JSON values in one dialect's style, shared by all its tools' schemas."""

    def __init__(self, grammar: Grammar, style: JsonStyle) -> None:
        self.grammar, self.style = grammar, style
        self.unenforced: set[str] = set()
        # (the same keys and enum values recur across tools: spelled once)
        self._literals: dict[tuple[type, object], Node] = {}
        self._pieces: dict[int, Ref] = {}

        escape = grammar.add("escape", style.escapes or _ESCAPE, token=True)
        plain = Chars.of(_NEVER_RAW + "".join(style.leads), negated=True)
        char = grammar.add("char", Alt(plain, escape), token=True)
        self._text = (Chars.of(_NEVER_RAW, negated=True), style.leads, escape, char)
        self.string = grammar.add("string", Seq(Lit('"'), self._body(), Lit('"')), token=True)
        self.integer = grammar.add("integer", _numeral(integral=True), token=True)
        self.number = grammar.add("number", _numeral(integral=False), token=True)
        true, false, null = style.words
        self.boolean = grammar.add("boolean", Alt(Lit(true), Lit(false)), token=True)
        self.null = grammar.add("null", Lit(null), token=True)
        # Any JSON value (recursive): named first, defined once its parts exist.
        self.value = Ref(grammar.name("value"))
        sep = Lit(style.item)
        member = Seq(self.string, Lit(style.key), self.value)
        self.object = grammar.add(
            "object", Seq(Lit("{"), opt(Seq(member, Rep(Seq(sep, member)))), Lit("}"))
        )
        self.array = grammar.add(
            "array", Seq(Lit("["), opt(Seq(self.value, Rep(Seq(sep, self.value)))), Lit("]"))
        )
        kinds = (self.object, self.array, self.string, self.number, self.boolean, self.null)
        grammar.define(self.value.name, Alt(*kinds))
        self._types = {
            "string": self.string,
            "integer": self.integer,
            "number": self.number,
            "boolean": self.boolean,
            "null": self.null,
            "object": self.object,
            "array": self.array,
        }

    def _body(self, most: int | None = None) -> Node:
        if most is None:
            return text_avoiding(*self._text)
        return text_avoiding(*self._text, most=most, rule=lambda piece: self._piece(most, piece))

    def _piece(self, most: int, piece: Node) -> Ref:
        """One piece of a string of at most ``most`` pieces, as a rule: llama.cpp refuses a
        bounded repetition of a group once the rules the group makes times the bound pass
        2,000, and a piece spelled in place makes one per lead prefix and step (a string
        with ``maxLength`` 80 was refused, and llama-cpp-python then ran unconstrained)."""
        known = self._pieces.get(most)
        if known is None:
            known = self._pieces[most] = self.grammar.add("piece", piece, token=True)
        return known

    def bounded(self, low: int, high: int | None) -> Node | None:
        """A string's body of ``low`` to ``high`` characters, ``None`` when there is no
        bound to hold or it is past :data:`REPEAT_CAP`. Exact where the dialect escapes
        every lead character; else at most ``high`` pieces (see :func:`text_avoiding`)
        and no lower bound, which is looser, never stricter."""
        if high is not None and high > REPEAT_CAP:
            high = None
        exact = counts_exactly(self.style.leads)
        if not exact or low > REPEAT_CAP:
            low = 0
        if high is None and low == 0:
            return None
        if not exact:
            return self._body(high)
        char = self._text[3]
        more = None if high is None else max(high - low, 0)
        return Seq(Rep(char, low, low), Rep(char, 0, more))

    # --- literals -------------------------------------------------------------------

    def literal(self, value: object) -> Node | None:
        """The spellings of one JSON value as the dialect's writer gives it; ``None`` for
        a value nested deeper than :data:`LITERAL_DEPTH` or one no writer writes (an
        integer past Python's digit limit, a lone surrogate…)."""
        if unwritable({"": value}, LITERAL_DEPTH) is not None:
            return None
        return self._spelled(value)

    def _member(self, value: object) -> Node:
        """A key or item of an array or object value: a scalar is a lexeme of its own, as
        the schema's other values are (a whole ``{"k": 1}`` as one lexeme would take ``{"``
        from a value another branch allows, and llguidance's lexer could not give it
        back)."""
        if isinstance(value, (Mapping, list)):
            return self._spelled(value)
        return self.grammar.add("literal", self._spelled(value), token=True)

    def _spelled(self, value: object) -> Node:
        if isinstance(value, Mapping):
            members = [Seq(self._member(str(k)), Lit(self.style.key), self._member(v))
                       for k, v in value.items()]  # fmt: skip
            return Seq(Lit("{"), *_joined(members, Lit(self.style.item)), Lit("}"))
        if isinstance(value, list):
            items = [self._member(item) for item in value]
            return Seq(Lit("["), *_joined(items, Lit(self.style.item)), Lit("]"))
        key = (type(value), value)
        known = self._literals.get(key)
        if known is None:
            spell = self.style.spell
            spellings = (
                {self.style.escape(spell(value))}
                if spell is not None
                else {
                    self.style.escape(json.dumps(value, ensure_ascii=False)),
                    self.style.escape(msgspec.json.encode(value).decode()),
                }
            )
            known = (
                Alt(*map(Lit, sorted(spellings))) if len(spellings) > 1 else Lit(spellings.pop())
            )
            self._literals[key] = known
        return known

    # --- schemas --------------------------------------------------------------------

    def of(self, schema: object, root: Mapping[str, object], hint: str) -> Ref:
        """A rule for the values of ``schema`` (``root``: where its ``$ref`` s point)."""
        return _Builder(self, root).of(schema, hint)

    def note(self, schema: Mapping[str, object]) -> None:
        """Record the keywords of ``schema`` itself (not of its parts) left to validation,
        for a dialect that builds an object's members itself."""
        _Builder(self, schema)._note(schema)


def _joined(items: Sequence[Node], sep: Node) -> list[Node]:
    out: list[Node] = []
    for item in items:
        if out:
            out.append(sep)
        out.append(item)
    return out


class _Builder:
    def __init__(self, values: Values, root: Mapping[str, object]) -> None:
        self.values, self.root = values, root
        self.grammar = values.grammar
        self.refs: dict[str, Ref] = {}

    def any(self, schema: Mapping[str, object]) -> Ref:
        """Any value of the types ``schema`` names (any value at all when none)."""
        kinds = self._kinds(schema)
        if kinds is None:
            return self.values.value
        nodes = [self.values._types[kind] for kind in kinds]
        return nodes[0] if len(nodes) == 1 else self.grammar.add("any", Alt(*nodes))

    def of(self, schema: object, hint: str) -> Ref:
        if not isinstance(schema, Mapping):
            return self.values.value  # true, false (left to validation) or not a schema
        self._note(schema)
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self._ref(ref, hint)
        listed = [schema["const"]] if "const" in schema else schema.get("enum")
        if isinstance(listed, list):
            kinds = self._kinds(schema)
            kept = [v for v in listed if kinds is None or json_type(v) in kinds or
                    (json_type(v) == "integer" and "number" in kinds)]  # fmt: skip
            spelled = [self.values.literal(v) for v in kept]
            if all(node is not None for node in spelled):
                literals = Alt(*(node for node in spelled if node is not None))
                whole = not any(isinstance(v, (Mapping, list)) for v in kept)
                return self.grammar.add(hint, literals, token=whole)  # (see _member)
            self.values.unenforced.add("const" if "const" in schema else "enum")
            return self.any(schema)
        branches = schema.get("anyOf", schema.get("oneOf"))
        if isinstance(branches, list) and branches:
            rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
            nodes = [
                self.of({**rest, **b} if isinstance(b, Mapping) else b, f"{hint}-{i}")
                for i, b in enumerate(branches, 1)
            ]
            return self.grammar.add(hint, Alt(*nodes))
        if "allOf" in schema:
            return self.any(schema)
        kinds = self._kinds(schema)
        if kinds is None:
            return self.values.value
        nodes = [self._typed(schema, kind, hint) for kind in kinds]
        return nodes[0] if len(nodes) == 1 else self.grammar.add(hint, Alt(*nodes))

    def _note(self, schema: Mapping[str, object]) -> None:
        # (a string's lengths are noted where the string is built, when they are not held)
        lengths = ("minLength", "maxLength") if self._typed_string(schema) else ()
        self.values.unenforced.update(k for k in schema if k in _VALIDATION and k not in lengths)
        if "oneOf" in schema:
            self.values.unenforced.add("oneOf")

    def _typed_string(self, schema: Mapping[str, object]) -> bool:
        """Whether :meth:`of` builds ``schema`` as a typed string (through :meth:`_string`)."""
        shortcuts = ("$ref", "const", "enum", "anyOf", "oneOf", "allOf")
        return not any(key in schema for key in shortcuts) and "string" in (
            self._kinds(schema) or ()
        )

    def _kinds(self, schema: Mapping[str, object]) -> list[str] | None:
        declared = schema.get("type")
        listed = [declared] if isinstance(declared, str) else declared
        if not isinstance(listed, list):
            return None
        kinds = [kind for kind in listed if kind in self.values._types]
        return kinds or None

    def _ref(self, ref: str, hint: str) -> Ref:
        if ref in self.refs:
            return self.refs[ref]
        target = _resolve(self.root, ref)
        if target is None:
            self.values.unenforced.add("$ref")
            return self.values.value
        name = Ref(self.grammar.name(hint))
        self.refs[ref] = name  # (recursion reaches this rule by name)
        self.grammar.define(name.name, self.of(target, hint + "-def"))
        return name

    def _typed(self, schema: Mapping[str, object], kind: str, hint: str) -> Ref:
        if kind == "object":
            return self._object(schema, hint)
        if kind == "array":
            return self._array(schema, hint)
        if kind == "string":
            return self._string(schema, hint)
        if kind in ("integer", "number") and (digits := _digits_within(schema)) is not None:
            node = _numeral(integral=kind == "integer", digits=digits)
            return self.grammar.add(hint, node, token=True)
        return self.values._types[kind]

    def _string(self, schema: Mapping[str, object], hint: str) -> Ref:
        """A string: held to its ``pattern`` where one can be, else to its lengths (see
        :meth:`Values.bounded`)."""
        lengths = {key for key in ("minLength", "maxLength") if key in schema}
        if isinstance(schema.get("pattern"), str):
            node = pattern_node(str(schema["pattern"]), _NEVER_RAW, self.values.style.leads)
            if node is not None:
                self.values.unenforced.update(lengths)
                return self.grammar.add(hint, Seq(Lit('"'), node, Lit('"')), token=True)
            self.values.unenforced.add("pattern")
        low, high = _count(schema.get("minLength")) or 0, _count(schema.get("maxLength"))
        body = self.values.bounded(low, high)
        if body is None:
            self.values.unenforced.update(lengths)
            return self.values.string
        exact = counts_exactly(self.values.style.leads)
        self.values.unenforced.update(() if exact else lengths)
        return self.grammar.add(hint, Seq(Lit('"'), body, Lit('"')), token=True)

    def _object(self, schema: Mapping[str, object], hint: str) -> Ref:
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else None
        listed = schema.get("required")
        required = {r for r in listed if isinstance(r, str)} if isinstance(listed, list) else set()
        names = member_names(schema)
        extra_schema = schema.get("additionalProperties", None if props is not None else True)
        extra: Node | None = None
        if "patternProperties" in schema:
            extra_schema = True
        if extra_schema is not None and extra_schema is not False:
            value = self.of(extra_schema, f"{hint}-more") if extra_schema is not True else None
            extra = Seq(self.values.string, Lit(self.values.style.key), value or self.values.value)
            if names:
                self.values.unenforced.add("additionalProperties")
        members = [
            (Seq(self.values._spelled(n), Lit(self.values.style.key),
                 self.of((props or {}).get(n, True), f"{hint}-{n}")), n in required)
            for n in names
        ]  # fmt: skip
        return self.grammar.add(hint, Seq(Lit("{"), self._members(members, extra, hint), Lit("}")))

    def _members(self, members: Sequence[tuple[Node, bool]], extra: Node | None, hint: str) -> Node:
        """The members in order, ``", "`` between those present."""
        sep = Lit(self.values.style.item)
        tail: Node = Rep(Seq(sep, extra)) if extra is not None else EMPTY
        first = next((i for i, (_, needed) in enumerate(members) if needed), None)
        if first is not None:  # optional ones before the first required one end with a comma
            parts: list[Node] = [opt(Seq(node, sep)) for node, _ in members[:first]]
            parts.append(members[first][0])
            for node, needed in members[first + 1 :]:
                parts.append(Seq(sep, node) if needed else opt(Seq(sep, node)))
            return Seq(*parts, tail)
        # All optional: whichever comes first starts, the rest follow (shared tails).
        tails: list[Node] = [tail]
        for node, _ in reversed(members[1:]):
            tails.append(self.grammar.add(f"{hint}-rest", Seq(opt(Seq(sep, node)), tails[-1])))
        tails.reverse()
        starts: list[Node] = [Seq(node, tails[i]) for i, (node, _) in enumerate(members)]
        if extra is not None:
            starts.append(Seq(extra, tail))
        return opt(Alt(*starts)) if starts else EMPTY

    def _array(self, schema: Mapping[str, object], hint: str) -> Ref:
        sep = Lit(self.values.style.item)
        low, high = _count(schema.get("minItems")) or 0, _count(schema.get("maxItems"))
        if low > REPEAT_CAP or (high is not None and high > REPEAT_CAP):
            self.values.unenforced.update(("minItems", "maxItems") & schema.keys())
            low, high = min(low, REPEAT_CAP), None
        prefix = schema.get("prefixItems", schema.get("items"))
        if isinstance(prefix, list) and prefix:  # the tuple forms: a prefix of these, then more
            self.values.unenforced.update(("minItems", "maxItems") & schema.keys())
            rest = schema.get("items" if "prefixItems" in schema else "additionalItems", True)
            body: Node = EMPTY if rest is False else Rep(Seq(sep, self.of(rest, f"{hint}-more")))
            for i, item in reversed(list(enumerate(prefix))):
                body = opt(Seq(sep if i else EMPTY, self.of(item, f"{hint}-{i}"), body))
            return self.grammar.add(hint, Seq(Lit("["), body, Lit("]")))
        if high == 0 or schema.get("items") is False:
            return self.grammar.add(hint, Lit("[]"))
        item = self.of(schema.get("items", True), f"{hint}-item")
        more = Rep(Seq(sep, item), max(low - 1, 0), None if high is None else high - 1)
        listed = Seq(item, more)
        return self.grammar.add(hint, Seq(Lit("["), listed if low else opt(listed), Lit("]")))


def _count(value: object) -> int | None:
    """A count keyword's value, ``None`` when absent or not a count."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def member_names(schema: Mapping[str, object]) -> list[str]:
    """An object's keys in the one order its grammar takes them: the declared properties,
    then the required keys no property lists; any other key comes after them. (One order
    keeps the grammar linear in the schema: any order of n keys is n! paths.)"""
    props = schema.get("properties")
    listed = schema.get("required")
    required = [r for r in listed if isinstance(r, str)] if isinstance(listed, list) else []
    return list(dict.fromkeys([*(props if isinstance(props, Mapping) else {}), *required]))


def in_schema_order(value: object, schema: object, root: object = None, depth: int = 0) -> object:
    """``value`` with each object's keys in the order of :func:`member_names` where
    ``schema`` describes the object (others after them, as they came), as the grammar
    takes them; everything else as it is. ``root`` is where ``$ref`` s point (``schema``)."""
    root = schema if root is None else root
    schema = _followed(schema, root)
    if not isinstance(schema, Mapping) or depth > JSON_DEPTH:
        return value
    branches = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(branches, list):  # (the grammar merges each branch with the rest)
        rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
        for branch in branches:
            merged = {**rest, **branch} if isinstance(branch, Mapping) else branch
            target = _followed(merged, root)
            if not (isinstance(value, dict) and isinstance(target, Mapping)):
                continue
            if value.keys() <= set(member_names(target)):
                return in_schema_order(value, target, root, depth)
        return value
    if isinstance(value, dict):
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        names = [name for name in member_names(schema) if name in value]
        listed = set(names)
        keys = [*names, *(key for key in value if key not in listed)]
        extra = schema.get("additionalProperties")
        return {k: in_schema_order(value[k], props.get(k, extra), root, depth + 1) for k in keys}
    if isinstance(value, list):
        prefix = schema.get("prefixItems", schema.get("items"))
        if isinstance(prefix, list):  # the tuple forms
            more = schema.get("items" if "prefixItems" in schema else "additionalItems")
            places = [*prefix, *[more] * max(len(value) - len(prefix), 0)]
            return [
                in_schema_order(v, place, root, depth + 1)
                for v, place in zip(value, places, strict=True)
            ]
        return [in_schema_order(item, schema.get("items"), root, depth + 1) for item in value]
    return value


def _followed(schema: object, root: object) -> object:
    """The end of ``schema``'s chain of local ``$ref`` s (as the grammar follows them)."""
    for _ in range(32):
        ref = schema.get("$ref") if isinstance(schema, Mapping) else None
        if not isinstance(ref, str) or not isinstance(root, Mapping):
            break
        schema = _resolve(root, ref)
    return schema


def _resolve(root: Mapping[str, object], ref: str) -> object | None:
    """The schema a local ``$ref`` (``#``, ``#/$defs/x``…) points to, or ``None``."""
    if not ref.startswith("#"):
        return None
    node: object = root
    for part in filter(None, ref[1:].split("/")):
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node
