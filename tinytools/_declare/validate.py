"""Argument validators: model arguments in, the function's keyword arguments out.

Two validators share one interface (``validate(tool_name, arguments)``):

* :class:`StructValidator`, for tools built from a signature: msgspec decodes
  raw JSON straight into a generated ``Struct`` — decoding, validation and
  conversion to the parameters' Python types in one compiled pass. When the
  parameters hold a ``msgspec.Meta(pattern=...)``, msgspec decodes a copy of the
  struct without its patterns and RE2 matches them afterwards (see
  ``signature_patterns``): msgspec would match them with Python's backtracking ``re``.
* :class:`SchemaValidator`, for tools built from a JSON schema: msgspec
  decodes, and a fastjsonschema validator, compiled on first use, checks the
  whole schema in its dialect (draft 7 or 2020-12, see ``schema_dialect``),
  or a subset of it under ``enforce="subset"``. Its patterns run on RE2, in
  time linear in the model's text (see ``patterns``), never on Python's ``re``.

Both raise ``ToolArgumentsError`` whose message is written for the model.

Strictness: nothing is coerced (``"5"`` is not an integer, ``1`` is not a
string). The one allowance is JSON Schema's own: a number with a zero
fractional part (``5.0``, ``1e2``) *is* an integer, so it is accepted where
an ``int`` is expected, on a slow path taken only after the fast one failed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import msgspec

from tinytools._text import json_type
from tinytools.errors import ToolArgumentsError, ToolDefinitionError

from .decode import (
    Arguments,
    Refused,
    compiled_bound,
    decode_json,
    malformed,
    refuse_text,
    repeats_possible,
    struct_decoder,
)
from .json_values import (
    as_json_tree,
    as_json_values,
    integral_floats_to_int,
    json_problem,
    past_float,
    plain_values,
    suspect,
)
from .messages import from_fastjsonschema, not_json, too_deep, validation_detail
from .models import decode_model, holds_models
from .patterns import linear
from .schema_check import subschemas
from .schema_dialect import FORMAT_CHECKS, Dialect, Enforce, local_schema

__all__ = ["Arguments", "SchemaValidator", "StructValidator"]

_decode = msgspec.json.decode


def _takes_any_keys(struct: type[msgspec.Struct]) -> bool:
    """Whether a value of ``struct`` may hold a mapping whose keys msgspec's ``convert``
    passes as they are (an ``Any`` or ``object`` part, a ``dict`` keyed by anything but
    ``str``, a type msgspec does not describe): decoded arguments for such a tool are
    read as JSON reads them (:func:`as_json_tree`), so that a key JSON has no text for as
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
        if isinstance(kind, mi.Metadata):  # Annotated[X, Meta(...)]: X decides
            stack.append(kind.type)
        elif isinstance(kind, (mi.DictType, mi.FrozenDictType)):
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

    __slots__ = ("_checks", "_dec_hook", "_decode_struct", "_read", "_struct", "decode", "models")

    def __init__(
        self,
        struct: type[msgspec.Struct],
        decoding: tuple[type[msgspec.Struct], Callable[[msgspec.Struct], msgspec.Struct]]
        | None = None,
    ) -> None:
        #: The arguments as the schema describes them (``msgspec.Meta`` patterns included).
        self._struct = struct
        #: Whether a pydantic model stands in the arguments: msgspec then hands each
        #: model's part to the model to validate (see ``models``).
        self.models = holds_models(struct)
        self._dec_hook = decode_model if self.models else None
        # What msgspec decodes into: the struct itself, or, when it holds patterns, the
        # same struct without them, checked after decoding with RE2 (`signature_patterns`).
        self._decode_struct = struct if decoding is None else decoding[0]
        self._checks = None if decoding is None else decoding[1]
        #: How decoded arguments are read: as JSON reads them only where msgspec would
        #: pass a key JSON cannot carry as a key (see `_takes_any_keys`; decided on first
        #: use, which then replaces this method).
        self._read: Callable[[str, object], object] = self._first_read
        #: Decode raw JSON straight into the Struct (raises msgspec's errors as they are;
        #: a repeated field or a pattern mismatch raises a ``ValidationError`` too).
        self.decode = struct_decoder(self._decode_struct, dec_hook=self._dec_hook)
        checks = self._checks
        if checks is not None:
            decode = self.decode

            def checked(text: str | bytes) -> msgspec.Struct:
                return checks(decode(text))

            self.decode = checked

    def _first_read(self, tool_name: str, value: object) -> object:
        self._read = as_json_tree if _takes_any_keys(self._struct) else as_json_values
        return self._read(tool_name, value)

    def _convert(self, value: object) -> msgspec.Struct:
        decoded = msgspec.convert(
            value, self._decode_struct, str_keys=True, dec_hook=self._dec_hook
        )
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
                value = self._convert(arguments)
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
                raise malformed(tool_name, arguments, detail) from None
            raise ToolArgumentsError(tool_name, detail, malformed=True) from None
        if isinstance(error, Refused):
            raise ToolArgumentsError(tool_name, error.detail, path=error.path) from None
        if not isinstance(error, msgspec.ValidationError):  # before DecodeError, its base
            raise not_json(tool_name, error) from None
        detail, path, got_float = validation_detail(error)
        # The typed decoder reports the first ill-typed value before a syntax error
        # further on (`0:`, a truncated `{"n": "x",`): text that is not JSON at all
        # is malformed, whatever its first value looked like.
        if isinstance(arguments, (str, bytes)):
            try:
                decoded = _decode(arguments)
            except (msgspec.MsgspecError, UnicodeError, RecursionError):
                decoded = decode_json(tool_name, arguments)  # raises what the text is
            # A repeat (or a value JSON cannot carry) before whichever value failed:
            # the exact scan decodes the text again, so it runs only when the bound
            # or the decoded value says there may be one.
            if compiled_bound is None or compiled_bound(arguments) or suspect(decoded):
                refuse_text(tool_name, arguments)
        else:
            # Keys of a str subclass: msgspec encodes them (so `as_json_values` let them
            # pass) but does not convert them. Tried once more as plain keys, on failure.
            decoded = plain_values(arguments)
            # A key JSON has no text for as a key (an int, a float: msgspec writes them
            # as text, so `as_json_values` let them pass) is refused at its path.
            problem = json_problem(decoded)
            if problem is not None:
                raise ToolArgumentsError(tool_name, problem[1], path=problem[0]) from None
            try:
                return msgspec.structs.asdict(self._convert(decoded))
            except msgspec.ValidationError as error:
                detail, path, got_float = validation_detail(error)
        if got_float:  # JSON Schema's rule: integral floats are integers
            try:
                value = self._convert(integral_floats_to_int(decoded))
            except msgspec.ValidationError:
                pass
            else:
                return msgspec.structs.asdict(value)
        raise ToolArgumentsError(tool_name, detail, path=path) from None


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
    (``schema_check``), so compiling it does not fail on a schema error.
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
        see :func:`as_json_tree`), once they pass the schema.

        Raises:
            ToolArgumentsError: The arguments are not valid JSON, not an
                object, hold a key that is not a string, or break the schema.
        """
        if isinstance(arguments, (str, bytes)):
            value = decode_json(tool_name, arguments)
            if isinstance(value, dict) and repeats_possible(arguments, value):
                refuse_text(tool_name, arguments)
        else:
            value = as_json_tree(tool_name, arguments)
        if not isinstance(value, Mapping):
            raise ToolArgumentsError(tool_name, f"Expected `object`, got `{json_type(value)}`")
        value = dict(value)
        if self.injected and not self.injected.isdisjoint(value):
            forged = min(self.injected.intersection(value))
            raise ToolArgumentsError(tool_name, f"Object contains unknown field `{forged}`")
        check = self.compile(tool_name)
        try:
            check(integral_floats_to_int(value) if self._exact else value)
        except self._invalid as error:
            raise from_fastjsonschema(tool_name, value, error) from None  # type: ignore[arg-type]
        except RecursionError:
            raise too_deep(tool_name) from None
        except OverflowError:  # `multipleOf` divides as floats: an integer past 2**1024
            path = past_float(value)
            raise ToolArgumentsError(
                tool_name,
                "Number too large to check against the schema; send a number below 1e308",
                path=path,
            ) from None
        return value


def _run_patterns_linearly(
    tool_name: str, check: Callable[[object], object], local: object
) -> None:
    """Make ``check`` match the schema's patterns with RE2 (see ``patterns``).

    fastjsonschema's generated code looks every regex up by name in its
    ``REGEX_PATTERNS`` table: each ``pattern`` and ``patternProperties`` name is
    replaced there by its RE2 :class:`~tinytools._declare.patterns.Pattern` (``local_schema``
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
