"""Argument validators: model arguments in, the function's keyword arguments out.

Two validators share one interface (``validate(tool_name, arguments)``):

* :class:`StructValidator`, for tools built from a signature: msgspec decodes
  raw JSON straight into a generated ``Struct`` — decoding, validation and
  conversion to the parameters' Python types in one compiled pass. When the
  parameters hold a ``msgspec.Meta(pattern=...)``, msgspec decodes a copy of the
  struct without its patterns and RE2 matches them afterwards (see
  ``_signature_patterns``): msgspec would match them with Python's backtracking ``re``.
* :class:`SchemaValidator`, for tools built from a JSON schema: msgspec
  decodes, and a fastjsonschema validator, compiled on first use, checks the
  whole schema in its dialect (draft 7 or 2020-12, see ``_schema_dialect``),
  or a subset of it under ``enforce="subset"``. Its patterns run on RE2, in
  time linear in the model's text (see ``_patterns``), never on Python's ``re``.

Both raise ``ToolArgumentsError`` whose message is written for the model.

Strictness: nothing is coerced (``"5"`` is not an integer, ``1`` is not a
string). The one allowance is JSON Schema's own: a number with a zero
fractional part (``5.0``, ``1e2``) *is* an integer, so it is accepted where
an ``int`` is expected, on a slow path taken only after the fast one failed.
"""

from __future__ import annotations

import enum
import json
import math
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec

from ._memo import remember
from ._patterns import linear
from ._schema_check import subschemas
from ._schema_dialect import (
    ENFORCED_KEYWORDS,
    FORMAT_CHECKS,
    Dialect,
    Enforce,
    local_schema,
)
from .errors import ToolArgumentsError, ToolDefinitionError

if TYPE_CHECKING:
    import fastjsonschema

__all__ = [
    "ENFORCED_KEYWORDS",
    "Arguments",
    "Enforce",
    "SchemaValidator",
    "StructValidator",
    "json_problem",
    "json_type",
    "local_schema",
    "preview",
    "printable",
    "text_problem",
]

#: What a caller may hand to ``validate``: decoded arguments or raw JSON text.
Arguments: TypeAlias = "Mapping[str, object] | str | bytes"

_JSON_NAMES = {"int": "integer", "str": "string", "float": "number", "bool": "boolean"}
# msgspec names Python types ("Expected `int` <= 10", "got `str`"); the model reads a
# JSON schema, so the types it is told about use JSON's names.
_TYPE_NAMES = re.compile(r"(Expected|got) `([^`]*)`")


def _json_names(match: re.Match[str]) -> str:
    types = " | ".join(_JSON_NAMES.get(t, t) for t in match[2].split(" | "))
    return f"{match[1]} `{types}`"


def _from_msgspec(tool_name: str, error: msgspec.ValidationError) -> ToolArgumentsError:
    detail, path, _ = _msgspec_detail(str(error))
    return ToolArgumentsError(tool_name, detail, path=path)


#: msgspec's messages as the model reads them, by msgspec's text: a bounded memo (a
#: schema's few ways to fail repeat), which changes nothing but speed.
_DETAILS: dict[str, tuple[str, str, bool]] = {}


def _msgspec_detail(message: str) -> tuple[str, str, bool]:
    """A ``ValidationError``'s text as ``(detail, path, got_float)``: the sentence with
    JSON's type names, the JSON path, and whether the value found was a float."""
    known = _DETAILS.get(message)
    if known is not None:
        return known
    detail, _, path = message.rpartition(" - at `")
    if not detail:
        detail, path = path, "$`"
    got_float = message.split(" - at ", 1)[0].endswith("got `float`")
    known = (_TYPE_NAMES.sub(_json_names, detail), path[:-1], got_float)
    if len(message) <= 400:  # a path through long keys is not worth remembering
        remember(_DETAILS, message, known, 512)
    return known


def _integral_floats_to_int(value: object) -> object:
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


class _Refused(msgspec.ValidationError):
    """Well-formed JSON that JSON itself cannot mean unambiguously (a repeated field).

    A ``ValidationError`` so every caller of a decoder that catches msgspec's errors
    (``Tool.validate``'s hot path, the fast path) falls back to the full validator,
    which turns it into the ``ToolArgumentsError`` it describes.
    """

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(detail)
        self.path = path
        self.detail = detail


try:  # the compiled bound, when the C extension was built (see _struct_decoder)
    from ._relaxed_speedups import keys_may_repeat as _compiled_bound
    from ._relaxed_speedups import unrepeated_decoder as _unrepeated_decoder
except ImportError:  # pragma: no cover - exercised where no C compiler was found
    _compiled_bound = _unrepeated_decoder = None  # type: ignore[assignment]

#: Whether JSON text may repeat a key in one of its objects (False: certainly not).
KeyBound: TypeAlias = "Callable[[str | bytes], bool]"


def _struct_decoder(
    struct: type[msgspec.Struct], bound: KeyBound | None = _compiled_bound
) -> Callable[[str | bytes], msgspec.Struct]:
    """msgspec's decoder for ``struct``, refusing objects that repeat a field.

    msgspec keeps the last of repeated keys, while a person (or an approver) reading
    the text may see the first: the arguments are refused instead. An exact scan of
    every text in Python would double the cost of the hot path, so a cheap bound
    decides when to look. With the C extension, ``bound`` is its one-pass scan
    (``keys_may_repeat``: the keys of each object compared as spelled; a key holding
    an escape is left to the exact scan). Without it (``bound=None``), colons are
    counted: each key is followed by one ``:``, so a text with no more colons than
    the fields it certainly set holds no repeated key at any depth. A field counts as
    set when it is required, when its value is not the very object the field's
    default is, or when the text (holding no backslash) shows its key; past that
    bound, :func:`_repeats_possible` compares colon counts before any exact scan.
    Both bounds are sound (a text they pass repeats no key), so both give the same
    answers.
    """
    decode = msgspec.json.Decoder(struct).decode
    if bound is _compiled_bound and _unrepeated_decoder is not None:
        # decode, bound and (when needed) the exact scan in one C call: no Python frame.
        return _unrepeated_decoder(decode, _refuse_repeats)
    if bound is not None:

        def scanned(text: str | bytes) -> msgspec.Struct:
            value = decode(text)
            if bound(text):
                _refuse_repeats(text)
            return value

        return scanned
    fields, defaults = struct.__struct_fields__, struct.__struct_defaults__
    required = len(fields) - len(defaults)
    every = len(fields)
    # An optional field: its attribute, its default and how its key reads in JSON text.
    encoded = struct.__struct_encode_fields__
    optional = tuple(
        (name, default, msgspec.json.encode(key).decode() + ":")
        for name, default, key in zip(fields[required:], defaults, encoded[required:], strict=True)
        if type(default).__name__ != "Factory" and not isinstance(default, (list, dict, set))
    )

    def checked(text: str | bytes) -> msgspec.Struct:
        value = decode(text)
        if isinstance(text, bytes):
            text = text.decode()  # the counts below read characters
        colons = text.count(":")
        if colons > required:
            present = required
            if colons <= every:  # flat arguments: count the fields certainly sent
                # In text without a backslash, `"name":` can only be a key: a field that
                # holds its default is still sent when its key is there (at any depth,
                # which only ever counts a key that brought its own colon).
                keyed = "\\" not in text
                for name, default, key in optional:
                    if getattr(value, name) is not default or (keyed and key in text):
                        present += 1
            if colons > present and _repeats_possible(text, msgspec.json.decode(text), None):
                _refuse_repeats(text)
        return value

    return checked


def _repeats_possible(
    text: str | bytes, tree: object, bound: KeyBound | None = _compiled_bound
) -> bool:
    """Whether ``text`` (decoded as ``tree``) may repeat a key: ``bound``'s answer (the
    compiled scan), else by counting colons: the JSON msgspec writes for ``tree`` has
    one ``:`` per key it kept plus the colons inside its strings, and so has ``text`` —
    plus one for each key it repeated. Text with a ``\\u`` escape (which may spell a
    colon the text does not show) is always scanned exactly."""
    if bound is not None:
        return bound(text)
    written = msgspec.json.encode(tree).count(b":")
    if isinstance(text, bytes):
        return b"\\u" in text or text.count(b":") != written
    return "\\u" in text or text.count(":") != written


def _refuse_repeats(text: str | bytes) -> None:
    """Raise ``_Refused`` when ``text`` repeats a field (the exact, slow scan)."""
    problem = text_problem(text)
    if problem is not None:
        raise _Refused(*problem)


def _takes_any_keys(struct: type[msgspec.Struct]) -> bool:
    """Whether a value of ``struct`` may hold a mapping whose keys msgspec's ``convert``
    passes as they are (an ``Any`` or ``object`` part, a ``dict`` keyed by anything but
    ``str``, a type msgspec does not describe): decoded arguments for such a tool are
    read as JSON reads them (:func:`_json_tree`), so that a key JSON has no text for as
    a key (an ``int``) is refused there too. For every other tool msgspec refuses such
    a key itself, and its error path says where (no cost on the common path)."""
    import msgspec.inspect as mi

    seen: set[int] = set()
    try:
        stack: list[mi.Type] = [mi.type_info(struct)]
    except Exception:  # a type msgspec cannot describe: assume the worst
        return True
    while stack:
        kind = stack.pop()
        if id(kind) in seen:
            continue
        seen.add(id(kind))
        if isinstance(kind, (mi.AnyType, mi.CustomType)):
            return True
        if isinstance(kind, (mi.DictType, mi.FrozenDictType)):
            if not isinstance(kind.key_type, mi.StrType):
                return True
            stack.append(kind.value_type)
        elif isinstance(
            kind, (mi.StructType, mi.DataclassType, mi.TypedDictType, mi.NamedTupleType)
        ):
            stack.extend(field.type for field in kind.fields)
        elif isinstance(kind, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
            stack.append(kind.item_type)
        elif isinstance(kind, mi.TupleType):
            stack.extend(kind.item_types)
        elif isinstance(kind, mi.UnionType):
            stack.extend(kind.types)
    return False


class StructValidator:
    """Validates and converts arguments through a generated msgspec ``Struct``."""

    __slots__ = ("_checks", "_decode_struct", "_read", "_struct", "decode")

    def __init__(
        self,
        struct: type[msgspec.Struct],
        decoding: tuple[type[msgspec.Struct], Callable[[msgspec.Struct], msgspec.Struct]]
        | None = None,
    ) -> None:
        #: The arguments as the schema describes them (``msgspec.Meta`` patterns included).
        self._struct = struct
        # What msgspec decodes into: the struct itself, or, when it holds patterns, the
        # same struct without them, checked after decoding with RE2 (`_signature_patterns`).
        self._decode_struct = struct if decoding is None else decoding[0]
        self._checks = None if decoding is None else decoding[1]
        #: How decoded arguments are read: as JSON reads them only where msgspec would
        #: pass a key JSON cannot carry as a key (see `_takes_any_keys`; decided on first
        #: use, which then replaces this method).
        self._read: Callable[[str, object], object] = self._first_read
        #: Decode raw JSON straight into the Struct (raises msgspec's errors as they are;
        #: a repeated field or a pattern mismatch raises a ``ValidationError`` too).
        self.decode = _struct_decoder(self._decode_struct)
        checks = self._checks
        if checks is not None:
            decode = self.decode

            def checked(text: str | bytes) -> msgspec.Struct:
                return checks(decode(text))

            self.decode = checked

    def _first_read(self, tool_name: str, value: object) -> object:
        self._read = _json_tree if _takes_any_keys(self._struct) else _json_values
        return self._read(tool_name, value)

    def _convert(self, value: object) -> msgspec.Struct:
        decoded = msgspec.convert(value, self._decode_struct, str_keys=True)
        return decoded if self._checks is None else self._checks(decoded)

    def validate(self, tool_name: str, arguments: Arguments) -> dict[str, object]:
        """The keyword arguments for the function, converted to the parameters' types.

        Raises:
            ToolArgumentsError: The arguments are not valid JSON (``malformed``) or
                break the schema (repeated fields, numbers JSON has no text for and
                lone surrogates included).
        """
        try:
            if isinstance(arguments, (str, bytes)):
                value = self.decode(arguments)
            else:
                # (refused below as the plain values the tool would get); a key is text,
                # as in JSON, read into the parameter's key type (`"1"` for a dict[int, …])
                arguments = self._read(tool_name, arguments)  # type: ignore[assignment]
                value = msgspec.convert(arguments, self._decode_struct, str_keys=True)
                if self._checks is not None:
                    value = self._checks(value)
        except (msgspec.MsgspecError, UnicodeError, RecursionError) as error:
            return self.refused(tool_name, arguments, error)
        return msgspec.structs.asdict(value)

    def refused(
        self,
        tool_name: str,
        arguments: Arguments,
        error: msgspec.MsgspecError | UnicodeError | RecursionError,
    ) -> dict[str, object]:
        """What :meth:`validate` answers once decoding ``arguments`` raised ``error``
        (``Tool.validate`` calls it straight from its own failed decode, so failing
        arguments are never decoded twice into the Struct).

        Returns:
            The keyword arguments, when only JSON Schema's integral-float rule was in
            the way (``5.0`` for an ``int``).

        Raises:
            ToolArgumentsError: Otherwise, always.
        """
        if type(error) is msgspec.DecodeError:  # not JSON: the common way to fail
            detail = str(error).removeprefix("JSON is malformed: ")
            if "truncated" in detail or "surrogate" in detail:  # a lone surrogate escape?
                raise _malformed(tool_name, arguments, detail) from None
            raise ToolArgumentsError(tool_name, detail, malformed=True) from None
        if isinstance(error, _Refused):
            raise ToolArgumentsError(tool_name, error.detail, path=error.path) from None
        if not isinstance(error, msgspec.ValidationError):  # before DecodeError, its base
            raise _not_json(tool_name, error) from None
        detail, path, got_float = _msgspec_detail(str(error))
        # The typed decoder reports the first ill-typed value before a syntax error
        # further on (`0:`, a truncated `{"n": "x",`): text that is not JSON at all
        # is malformed, whatever its first value looked like.
        if isinstance(arguments, (str, bytes)):
            try:
                decoded = _decode(arguments)
            except (msgspec.MsgspecError, UnicodeError, RecursionError):
                decoded = _decode_json(tool_name, arguments)  # raises what the text is
            # A repeat (or a value JSON cannot carry) before whichever value failed:
            # the exact scan decodes the text again, so it runs only when the bound
            # or the decoded value says there may be one.
            if _compiled_bound is None or _compiled_bound(arguments) or _suspect(decoded):
                _refuse_text(tool_name, arguments)
        else:
            # Keys of a str subclass: msgspec encodes them (so `_json_values` let them
            # pass) but does not convert them. Tried once more as plain keys, on failure.
            decoded = plain_values(arguments)
            # A key JSON has no text for as a key (an int, a float: msgspec writes them
            # as text, so `_json_values` let them pass) is refused at its path.
            problem = json_problem(decoded)
            if problem is not None:
                raise ToolArgumentsError(tool_name, problem[1], path=problem[0]) from None
            try:
                return msgspec.structs.asdict(self._convert(decoded))
            except msgspec.ValidationError as error:
                detail, path, got_float = _msgspec_detail(str(error))
        if got_float:  # JSON Schema's rule: integral floats are integers
            try:
                value = self._convert(_integral_floats_to_int(decoded))
            except msgspec.ValidationError:
                pass
            else:
                return msgspec.structs.asdict(value)
        raise ToolArgumentsError(tool_name, detail, path=path) from None


def _decode_json(tool_name: str, text: str | bytes) -> object:
    """Raw text decoded as JSON, or the ``malformed`` error that says why it is not JSON.

    A number JSON text holds but no Python value can stand for (``1e999``, an
    integer of more than 4,300 characters) is a schema error at its path, as for a
    typed tool.
    """
    try:
        return msgspec.json.decode(text)
    except msgspec.ValidationError as error:
        problem = text_problem(text)
        if problem is not None:
            raise ToolArgumentsError(tool_name, problem[1], path=problem[0]) from None
        raise _from_msgspec(tool_name, error) from None
    except msgspec.DecodeError as error:
        raise _malformed(tool_name, text, _decode_detail(error)) from None
    except (UnicodeError, RecursionError) as error:
        raise _not_json(tool_name, error) from None


def _malformed(tool_name: str, text: Arguments, detail: str) -> ToolArgumentsError:
    """The error for text msgspec cannot decode (``detail``, its reason): ``malformed``,
    unless the text is JSON holding a lone surrogate escape (``"\\ud800"``: no valid
    text, which msgspec reports as truncated input or an invalid surrogate pair). That
    is the schema error at its path, as for decoded arguments holding a lone surrogate
    (see ``json_problem``): the model hears what is wrong, not that its JSON was cut.
    """
    if ("truncated" in detail or "surrogate" in detail) and _has_escape(text):
        problem = text_problem(text)  # type: ignore[arg-type]  # (text, as _has_escape said)
        if problem is not None:  # (the slow, exact scan: only on this failure)
            return ToolArgumentsError(tool_name, problem[1], path=problem[0])
    return ToolArgumentsError(tool_name, detail, malformed=True)


def _has_escape(text: Arguments) -> bool:
    if isinstance(text, str):
        return "\\u" in text
    return isinstance(text, bytes) and b"\\u" in text


def _refuse_text(tool_name: str, text: str | bytes) -> None:
    """Raise the schema error for a repeated field (or an unreadable value) in ``text``."""
    problem = text_problem(text)
    if problem is not None:
        raise ToolArgumentsError(tool_name, problem[1], path=problem[0])


def _json_values(tool_name: str, value: object) -> object:
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
        raise _too_deep(tool_name) from None  # no event or message could carry it either
    except (TypeError, ValueError, OverflowError):
        suspect = plain = True
    # (walked as plain values when the encoder refused them: no method of theirs runs)
    return _walked(tool_name, value, copy=plain) if suspect else value


def _json_tree(tool_name: str, value: object) -> object:
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
        raise _too_deep(tool_name) from None
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
        raise _too_deep(tool_name) from None
    if problem is not None:
        raise ToolArgumentsError(tool_name, problem[1], path=problem[0])
    return value


def _suspect(value: object) -> bool:
    """Whether decoded ``value`` may hold something JSON text cannot carry (see
    :func:`_json_values`: msgspec's encoder fails on lone surrogates and huge integers
    and writes ``null`` for NaN and infinities)."""
    try:
        return _encode(value).find(b"null") >= 0
    except (TypeError, ValueError, OverflowError, RecursionError):
        return True


def _not_json(
    tool_name: str, error: msgspec.MsgspecError | UnicodeError | RecursionError
) -> ToolArgumentsError:
    """The argument error for text that cannot be read as JSON (or nests too deep)."""
    if isinstance(error, UnicodeError):
        return _unreadable(tool_name)
    if isinstance(error, RecursionError):
        return _too_deep(tool_name)
    return ToolArgumentsError(tool_name, _decode_detail(error), malformed=True)


def _unreadable(tool_name: str) -> ToolArgumentsError:
    return ToolArgumentsError(
        tool_name,
        "the text holds lone surrogates, which no JSON text can carry",
        malformed=True,
    )


def _too_deep(tool_name: str) -> ToolArgumentsError:
    return ToolArgumentsError(
        tool_name, "the arguments are nested too deeply to decode", malformed=True
    )


def _decode_detail(error: msgspec.MsgspecError) -> str:
    return str(error).removeprefix("JSON is malformed: ")


# --- schema validators --------------------------------------------------------


def _never_fetch(uri: str) -> object:
    raise ValueError(f"tinytools never fetches a schema ({uri}); copy it into `$defs`")


#: fastjsonschema fetches a `$ref` to a URL unless a handler answers for its scheme.
_NO_FETCH = dict.fromkeys(("", "http", "https", "file", "ftp", "data"), _never_fetch)


class _NeverRaised(Exception):
    """Stands for fastjsonschema's validation error until the schema is compiled."""


class SchemaValidator:
    """Validates decoded arguments against a JSON schema, compiled on first use.

    Compiling costs milliseconds per schema (fastjsonschema generates Python
    code), so a registry of many imported tools compiles only what it calls, and
    each tool compiles once. The schema was checked when the tool was built
    (``_schema_check``), so compiling it does not fail on a schema error.
    """

    __slots__ = ("_check", "_exact", "_invalid", "dialect", "enforce", "injected", "schema")

    def __init__(
        self,
        schema: Mapping[str, object],
        enforce: Enforce,
        injected: frozenset[str] = frozenset(),
        dialect: Dialect = "draft2020-12",
    ) -> None:
        self.schema = schema
        self.enforce: Enforce = enforce
        self.dialect: Dialect = dialect
        # The function's injected parameters: an open schema would let the model send
        # one, and injection must never be overridable (docs/concepts/invariants.md, 4).
        self.injected = injected
        self._check: Callable[[object], object] | None = None
        self._invalid: type[Exception] = _NeverRaised  # fastjsonschema's, once compiled
        # fastjsonschema divides a float by an integer `multipleOf` as floats, which is
        # inexact past 2**53 (and `oneOf`/`not` can turn that into a wrong refusal): when
        # the schema has `multipleOf`, integral floats are checked as the integers they
        # are (JSON Schema does not tell 3.0 from 3), exactly.
        self._exact = False  # decided when compiled

    def compile(self, tool_name: str) -> Callable[[object], object]:
        """The compiled check (compiling it now if needed).

        Raises:
            ToolDefinitionError: fastjsonschema cannot compile the schema.
        """
        if self._check is None:
            import fastjsonschema  # on first use: `import tinytools` does not load it

            self._invalid = fastjsonschema.JsonSchemaValueException
            full = self.enforce != "subset"
            self._exact = full and b'"multipleOf"' in msgspec.json.encode(self.schema)
            try:
                local = local_schema(self.schema, self.enforce, self.dialect)
                check = fastjsonschema.compile(
                    local,  # type: ignore[arg-type]
                    handlers=_NO_FETCH,
                    formats=FORMAT_CHECKS if full else {},
                    use_default=False,
                    use_formats=full,
                )
            except (fastjsonschema.JsonSchemaDefinitionException, ValueError, TypeError) as exc:
                raise ToolDefinitionError(
                    f"tool `{tool_name}`",
                    [f"its parameters schema cannot be compiled ({exc}); fix the schema"],
                ) from None
            except ImportError as exc:  # RE2, a dependency, is missing (`pip install --no-deps`)
                raise ToolDefinitionError(
                    f"tool `{tool_name}`",
                    [
                        f"its parameters schema has a `pattern`, which tinytools matches with "
                        f"RE2, and RE2 cannot be loaded ({exc}); install google-re2"
                    ],
                ) from None
            except (SyntaxError, RecursionError, MemoryError):  # the generated code nests
                raise ToolDefinitionError(
                    f"tool `{tool_name}`",
                    [
                        "its parameters schema nests too deeply inline to be enforced; move "
                        "inner parts into `$defs` and refer to them with `$ref`"
                    ],
                ) from None
            _run_patterns_linearly(tool_name, check, local)
            self._check = check
        return self._check

    def validate(self, tool_name: str, arguments: Arguments) -> dict[str, object]:
        """The arguments as a new dict, unchanged (decoded ones as JSON reads them:
        see :func:`_json_tree`), once they pass the schema.

        Raises:
            ToolArgumentsError: The arguments are not valid JSON, not an
                object, hold a key that is not a string, or break the schema.
        """
        if isinstance(arguments, (str, bytes)):
            value = _decode_json(tool_name, arguments)
            if isinstance(value, dict) and _repeats_possible(arguments, value):
                _refuse_text(tool_name, arguments)
        else:
            value = _json_tree(tool_name, arguments)
        if not isinstance(value, Mapping):
            raise ToolArgumentsError(tool_name, f"Expected `object`, got `{json_type(value)}`")
        value = dict(value)
        if self.injected and not self.injected.isdisjoint(value):
            forged = min(self.injected.intersection(value))
            raise ToolArgumentsError(tool_name, f"Object contains unknown field `{forged}`")
        check = self.compile(tool_name)
        try:
            check(_integral_floats_to_int(value) if self._exact else value)
        except self._invalid as error:
            raise _from_fastjsonschema(tool_name, value, error) from None  # type: ignore[arg-type]
        except RecursionError:
            raise _too_deep(tool_name) from None
        except OverflowError:  # `multipleOf` divides as floats: an integer past 2**1024
            path = _past_float(value)
            raise ToolArgumentsError(
                tool_name,
                "Number too large to check against the schema; send a number below 1e308",
                path=path,
            ) from None
        return value


def _run_patterns_linearly(
    tool_name: str, check: Callable[[object], object], local: object
) -> None:
    """Make ``check`` match the schema's patterns with RE2 (see ``_patterns``).

    fastjsonschema's generated code looks every regex up by name in its
    ``REGEX_PATTERNS`` table: each ``pattern`` and ``patternProperties`` name is
    replaced there by its RE2 :class:`~tinytools._patterns.Pattern` (``local_schema``
    kept only those RE2 runs). The format checks' regexes (``<format>_re_pattern``)
    stay: they are fixed, and linear (measured on hostile text of up to 2M characters). Any other
    name in the table, or no table where the schema has patterns, means fastjsonschema
    changed how it keeps them: the schema is then refused rather than matched by a
    backtracking engine.
    """
    wanted = set(_patterns_in(local))  # a superset: definitions never referred to count
    table = getattr(getattr(check, "func", check), "__globals__", {}).get("REGEX_PATTERNS")
    if not wanted and not table:
        return
    unknown = [
        name
        for name in table or ()
        if name not in wanted and not (isinstance(name, str) and name.endswith("_re_pattern"))
    ]
    if not isinstance(table, dict) or unknown:
        raise ToolDefinitionError(
            f"tool `{tool_name}`",
            [
                "its parameters schema has a `pattern` this fastjsonschema version does not "
                "let tinytools match in linear time; install the fastjsonschema version "
                "tinytools declares, or report it"
            ],
        )
    for pattern in wanted.intersection(table):
        compiled = linear(pattern)
        assert compiled is not None  # `local_schema` keeps only the patterns RE2 runs
        table[pattern] = compiled


def _patterns_in(schema: object) -> Iterator[str]:
    """Every ``pattern`` and ``patternProperties`` name in ``schema`` (a local schema)."""
    for node, _ in subschemas(schema):
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            yield pattern
        names = node.get("patternProperties")
        if isinstance(names, Mapping):
            yield from names


def _past_float(value: object) -> str:
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


def json_type(value: object) -> str:
    """The JSON Schema type name of a decoded value (its Python name when it has none)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    return "object" if isinstance(value, Mapping) else type(value).__name__


def preview(value: object, limit: int = 60, *, raw_text: bool = False) -> str:
    """``value`` as JSON text, cut to ``limit`` characters; never raises.

    With ``raw_text``, a string is shown as itself (raw arguments as the model sent
    them). Whatever the model sent — nesting deeper than Python recurses, integers
    too long to print, lone surrogates — the preview is printable text.
    """
    text = value if raw_text and isinstance(value, str) else json_text(value, limit)
    text = printable(text if len(text) <= limit else text[: limit - 1] + "…")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_text(value: object, limit: int | None = None) -> str:
    """Compact JSON text for ``value``; never raises.

    What msgspec cannot encode (a foreign object, a huge integer, a lone surrogate,
    very deep nesting) is written by a bounded walk instead: a JSON-like text, stopped
    once it passes ``limit`` characters, with placeholders for what has no text.
    """
    try:
        return _encode(value).decode()
    except (TypeError, ValueError, OverflowError, RecursionError):
        return "".join(_pieces(value, limit))


class _Token(str):
    """Punctuation queued by :func:`_pieces` (emitted as is)."""

    __slots__ = ()


def _scalar_text(item: object) -> str:
    # Told by type and written by the base type's own methods: a subclass (a host's own
    # str or int type, which msgspec does not encode) reads as the value it holds, and
    # its overridden methods are never called.
    kind = type(item)
    if item is None or kind is bool:
        return _encode(item).decode()
    value: Any = item  # (its type tells below: a value posing as a str is none)
    if issubclass(kind, str):
        return _encode(printable(str.__str__(value))).decode()
    if issubclass(kind, int):
        bits = int.bit_length(value)
        return int.__repr__(value) if bits <= 256 else f"<integer of {bits} bits>"
    if issubclass(kind, float):
        text = float.__repr__(value)
        if math.isfinite(value):
            return text
        return {"nan": "NaN", "inf": "Infinity"}.get(text, "-Infinity")
    try:
        return printable(f"<{type(item).__qualname__}>")
    except Exception:  # a hostile __qualname__ must not crash a preview
        return "<object>"


def _pieces(value: object, limit: int | None) -> Iterator[str]:
    """JSON-like text for ``value``, piece by piece, without recursion; a container
    deeper than JSON text can be read (a value holding itself, say) is ``…``."""
    stack: list[tuple[object, int]] = [(value, 0)]
    deepest = sys.getrecursionlimit()
    size = 0
    while stack and (limit is None or size <= limit):
        item, depth = stack.pop()
        if isinstance(item, _Token):
            piece = str(item)
        elif depth > deepest and isinstance(item, (Mapping, list, tuple)):
            piece = "…"
        elif isinstance(item, Mapping):
            piece = "{"
            stack.append((_Token("}"), 0))
            entries = list(item.items())
            for index in range(len(entries) - 1, -1, -1):
                key, child = entries[index]
                stack.append((child, depth + 1))
                # (a key that is no str is shown as the text of what it is, quoted; its
                # own __str__ never runs)
                text = _scalar_text(key)
                text = text if issubclass(type(key), str) else _scalar_text(text)
                stack.append((_Token(text + ":"), 0))
                if index:
                    stack.append((_Token(","), 0))
        elif isinstance(item, (list, tuple)):
            piece = "["
            stack.append((_Token("]"), 0))
            for index in range(len(item) - 1, -1, -1):
                stack.append((item[index], depth + 1))
                if index:
                    stack.append((_Token(","), 0))
        else:
            piece = _scalar_text(item)
        size += len(piece)
        yield piece


def _json_path(data: object, segments: list[str]) -> str:
    """Rebuild a ``$.a[0]`` path from fastjsonschema's string segments by walking the data."""
    path, node = "$", data
    for segment in segments[1:]:
        if isinstance(node, list) and segment.isdigit() and int(segment) < len(node):
            index = int(segment)
            path, node = f"{path}[{index}]", node[index]
        else:
            path += f".{segment}" if segment.isidentifier() else f"[{preview(segment)}]"
            node = node.get(segment) if isinstance(node, Mapping) else None
    return path


def _from_fastjsonschema(
    tool_name: str, data: object, error: fastjsonschema.JsonSchemaValueException
) -> ToolArgumentsError:
    rule, definition, value = error.rule, error.definition or {}, error.value
    if rule == "type":
        expected = definition.get("type")
        names = " | ".join(expected) if isinstance(expected, list) else str(expected)
        detail = f"Expected `{names}`, got `{json_type(value)}`"
    elif rule == "required" and isinstance(value, Mapping):
        missing = [k for k in definition.get("required", ()) if k not in value]
        detail = f"Object missing required field `{missing[0] if missing else '?'}`"
    elif rule == "additionalProperties" and isinstance(value, Mapping):
        allowed = definition.get("properties", {})
        extra = sorted(k for k in value if k not in allowed)
        detail = f"Object contains unknown field `{extra[0] if extra else '?'}`"
    elif rule == "enum":
        detail = f"Expected one of [{_options(definition.get('enum'))}], got {preview(value)}"
    elif rule == "const":
        detail = f"Expected {preview(definition.get('const'))}, got {preview(value)}"
    else:
        detail = _constraint_detail(rule, error.rule_definition, value) or (
            (error.message or "invalid value").replace(error.name or "data", "value", 1)
        )
    return ToolArgumentsError(tool_name, detail, path=_json_path(data, list(error.path or [])))


#: The comparison each bound keyword makes, as msgspec words it (``Expected `int` >= 1``).
_BOUNDS = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
_SIZES = {
    "minLength": (">=", "string"),
    "maxLength": ("<=", "string"),
    "minItems": (">=", "array"),
    "maxItems": ("<=", "array"),
}


def _constraint_detail(rule: str | None, limit: object, value: object) -> str | None:
    """The model-facing sentence for a keyword beyond the subset (None: use fastjsonschema's)."""
    found = preview(value)
    if rule in _BOUNDS:
        return f"Expected `{json_type(value)}` {_BOUNDS[rule]} {preview(limit)}, got {found}"
    if rule in _SIZES and isinstance(value, (str, list)):
        op, kind = _SIZES[rule]
        unit = "characters" if kind == "string" else "items"
        return f"Expected `{kind}` of length {op} {limit}, got {len(value)} {unit}"
    if rule in ("minProperties", "maxProperties") and isinstance(value, Mapping):
        op = ">=" if rule == "minProperties" else "<="
        return f"Expected `object` with {op} {limit} fields, got {len(value)}"
    sentences = {
        "multipleOf": f"Expected a multiple of {preview(limit)}, got {found}",
        "pattern": f"Expected `string` matching regex {preview(limit)}, got {found}",
        "format": f"Expected `string` in format `{limit}`, got {found}",
        "uniqueItems": "Expected `array` of unique items, got a repeated item",
        "anyOf": f"Expected a value matching at least one schema of `anyOf`, got {found}",
        "oneOf": f"Expected a value matching exactly one schema of `oneOf`, got {found}",
        "not": f"Expected a value the `not` schema refuses, got {found}",
        "contains": "Expected `array` with at least one item matching `contains`, got none",
        "propertyNames": f"Object has a field name that `propertyNames` refuses: {found}",
    }
    return sentences.get(rule or "")


# --- values JSON text cannot carry --------------------------------------------

_encode = msgspec.json.encode
_decode = msgspec.json.decode
#: Decoded integers longer than this (in bits) have no decimal text in Python.
_LONGEST_INT = 14_000


def printable(text: str) -> str:
    """``text`` with every lone surrogate written as an escape (``\\udc80``).

    A model's ``"\\udc80"`` decodes to a lone surrogate, which no UTF-8 or JSON
    encoder can write: names and previews echoed into messages and events go
    through here so that every ``DispatchResult`` encodes. Always a plain ``str``:
    text of a subclass (an SDK's own string type) is read as the text it holds, and
    none of its methods runs.
    """
    if type(text) is not str:
        text = str.__str__(text)
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode()
    return text


#: How many of an ``enum``'s values an error message lists (the schema, echoed after it,
#: holds them all).
_LISTED_OPTIONS = 20


def _options(values: object) -> str:
    """An ``enum``'s values for an error message: the first :data:`_LISTED_OPTIONS`,
    then how many more (a server's schema may list 100,000; each bad call echoed all)."""
    found = list(values) if isinstance(values, (list, tuple)) else []
    listed = ", ".join(preview(v) for v in found[:_LISTED_OPTIONS])
    more = len(found) - _LISTED_OPTIONS
    return listed if more <= 0 else f"{listed}, … and {more} more"


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
    # Told by type and written by the base type's own method (as `_scalar_text` does): no
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
