"""Argument validators: model arguments in, the function's keyword arguments out.

Two validators share one interface (``validate(tool_name, arguments)``):

* :class:`StructValidator`, for tools built from a signature: msgspec decodes
  raw JSON straight into a generated ``Struct`` — decoding, validation and
  conversion to the parameters' Python types in one compiled pass.
* :class:`SchemaValidator`, for tools built from a JSON schema: msgspec
  decodes, and a fastjsonschema validator, compiled on first use, checks the
  locally enforced subset of the schema (or all of draft 7).

Both raise ``ToolArgumentsError`` whose message is written for the model.

Strictness: nothing is coerced (``"5"`` is not an integer, ``1`` is not a
string). The one allowance is JSON Schema's own: a number with a zero
fractional part (``5.0``, ``1e2``) *is* an integer, so it is accepted where
an ``int`` is expected, on a slow path taken only after the fast one failed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal, TypeAlias

import msgspec

from .errors import ToolArgumentsError, ToolDefinitionError

if TYPE_CHECKING:
    import fastjsonschema

__all__ = [
    "ENFORCED_KEYWORDS",
    "Arguments",
    "Enforce",
    "SchemaValidator",
    "StructValidator",
    "json_type",
    "preview",
    "local_schema",
]

#: What a caller may hand to ``validate``: decoded arguments or raw JSON text.
Arguments: TypeAlias = "Mapping[str, object] | str | bytes"
#: Which part of a hand-written schema is enforced locally.
Enforce: TypeAlias = Literal["subset", "draft7"]

_JSON_NAMES = {"int": "integer", "str": "string", "float": "number", "bool": "boolean"}
# msgspec names Python types ("Expected `int` <= 10", "got `str`"); the model reads a
# JSON schema, so the types it is told about use JSON's names.
_TYPE_NAMES = re.compile(r"(Expected|got) `([^`]*)`")


def _json_names(match: re.Match[str]) -> str:
    types = " | ".join(_JSON_NAMES.get(t, t) for t in match[2].split(" | "))
    return f"{match[1]} `{types}`"


def _from_msgspec(tool_name: str, error: msgspec.ValidationError) -> ToolArgumentsError:
    detail, _, path = str(error).rpartition(" - at `")
    if not detail:
        detail, path = path, "$`"
    return ToolArgumentsError(tool_name, _TYPE_NAMES.sub(_json_names, detail), path=path[:-1])


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


class StructValidator:
    """Validates and converts arguments through a generated msgspec ``Struct``."""

    __slots__ = ("_struct", "decode")

    def __init__(self, struct: type[msgspec.Struct]) -> None:
        self._struct = struct
        #: Decode raw JSON straight into the Struct (raises msgspec's errors as they are).
        self.decode = msgspec.json.Decoder(struct).decode

    def validate(self, tool_name: str, arguments: Arguments) -> dict[str, object]:
        """The keyword arguments for the function, converted to the parameters' types.

        Raises:
            ToolArgumentsError: The arguments are not valid JSON (``malformed``) or
                break the schema.
        """
        try:
            if isinstance(arguments, (str, bytes)):
                value = self.decode(arguments)
            else:
                value = msgspec.convert(arguments, self._struct)
        except msgspec.ValidationError as error:  # before DecodeError, its base class
            # The typed decoder reports the first ill-typed value before a syntax error
            # further on (`0:`, a truncated `{"n": "x",`): text that is not JSON at all
            # is malformed, whatever its first value looked like.
            decoded = (
                _decode_json(tool_name, arguments)
                if isinstance(arguments, (str, bytes))
                else arguments
            )
            value = self._retry(tool_name, decoded, error)
        except (msgspec.DecodeError, UnicodeError, RecursionError) as error:
            raise _not_json(tool_name, error) from None
        return msgspec.structs.asdict(value)

    def _retry(
        self, tool_name: str, decoded: object, error: msgspec.ValidationError
    ) -> msgspec.Struct:
        """Accept integral floats for integers (JSON Schema's rule), else report ``error``."""
        if not str(error).split(" - at ", 1)[0].endswith("got `float`"):
            raise _from_msgspec(tool_name, error) from None
        try:
            return msgspec.convert(_integral_floats_to_int(decoded), self._struct)
        except msgspec.ValidationError:
            raise _from_msgspec(tool_name, error) from None


def _decode_json(tool_name: str, text: str | bytes) -> object:
    """Raw text decoded as JSON, or the ``malformed`` error that says why it is not JSON."""
    try:
        return msgspec.json.decode(text)
    except (msgspec.DecodeError, UnicodeError, RecursionError) as error:
        raise _not_json(tool_name, error) from None


def _not_json(
    tool_name: str, error: msgspec.DecodeError | UnicodeError | RecursionError
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


def _decode_detail(error: msgspec.DecodeError) -> str:
    return str(error).removeprefix("JSON is malformed: ")


# --- schema validators --------------------------------------------------------

#: Keywords enforced locally by default. ``patternProperties`` is kept because
#: ``additionalProperties`` is defined relative to it; ``$ref`` and its targets
#: because references must resolve; ``prefixItems``/``additionalItems`` because
#: they give array-form ``items`` its meaning in each draft.
ENFORCED_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "items",
        "prefixItems",
        "additionalItems",
        "enum",
        "const",
        "$ref",
        "$defs",
        "definitions",
    }
)
# Where subschemas sit: in a map of them, a list of them, or as the value itself.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_SCHEMA_LISTS = frozenset({"prefixItems", "items", "allOf", "anyOf", "oneOf"})
_SCHEMAS = frozenset(
    {"additionalProperties", "additionalItems", "items", "not", "if", "then", "else"}
    | {"contains", "propertyNames"}
)


def local_schema(schema: object, enforce: Enforce) -> object:
    """The schema fastjsonschema compiles: the enforced subset (or all), in draft-7 spelling.

    2020-12's ``prefixItems`` (with ``items`` for the rest) becomes draft 7's
    array-form ``items`` (with ``additionalItems``), which means the same.
    """
    if not isinstance(schema, dict):
        return schema
    keep = ENFORCED_KEYWORDS if enforce == "subset" else None
    out: dict[str, object] = {}
    for key, value in schema.items():
        if key == "$schema" or (keep is not None and key not in keep):
            continue
        out[key] = _local_value(key, value, enforce)
    if "prefixItems" in out:
        rest = out.pop("items", None)
        out["items"] = out.pop("prefixItems")
        if rest is not None:
            out["additionalItems"] = rest
    return out


def _local_value(key: str, value: object, enforce: Enforce) -> object:
    if key in _SCHEMA_MAPS and isinstance(value, dict):
        return {name: local_schema(sub, enforce) for name, sub in value.items()}
    if key in _SCHEMA_LISTS and isinstance(value, list):
        return [local_schema(sub, enforce) for sub in value]
    return local_schema(value, enforce) if key in _SCHEMAS else value


class _NeverRaised(Exception):
    """Stands for fastjsonschema's validation error until the schema is compiled."""


class SchemaValidator:
    """Validates decoded arguments against a JSON schema, compiled on first use.

    Compiling costs milliseconds per schema (fastjsonschema generates Python
    code), so a registry of many imported tools compiles only what it calls.
    """

    __slots__ = ("_check", "_invalid", "enforce", "injected", "schema")

    def __init__(
        self, schema: Mapping[str, object], enforce: Enforce, injected: frozenset[str] = frozenset()
    ) -> None:
        self.schema = schema
        self.enforce: Enforce = enforce
        # The function's injected parameters: an open schema would let the model send
        # one, and injection must never be overridable (DESIGN: a schema violation).
        self.injected = injected
        self._check: Callable[[object], object] | None = None
        self._invalid: type[Exception] = _NeverRaised  # fastjsonschema's, once compiled

    def compile(self, tool_name: str) -> Callable[[object], object]:
        """The compiled check (compiling it now if needed).

        Raises:
            ToolDefinitionError: fastjsonschema cannot compile the schema.
        """
        if self._check is None:
            import fastjsonschema  # on first use: `import tinytools` does not load it

            self._invalid = fastjsonschema.JsonSchemaValueException
            try:
                self._check = fastjsonschema.compile(
                    local_schema(dict(self.schema), self.enforce),  # type: ignore[arg-type]
                    use_default=False,
                    use_formats=self.enforce == "draft7",
                )
            except (fastjsonschema.JsonSchemaDefinitionException, ValueError, TypeError) as exc:
                raise ToolDefinitionError(
                    f"tool `{tool_name}`",
                    [f"its parameters schema cannot be compiled ({exc}); fix the schema"],
                ) from None
        return self._check

    def validate(self, tool_name: str, arguments: Arguments) -> dict[str, object]:
        """The arguments as a new dict, unchanged, once they pass the schema.

        Raises:
            ToolArgumentsError: The arguments are not valid JSON, not an
                object, or break the schema.
        """
        value = (
            _decode_json(tool_name, arguments) if isinstance(arguments, (str, bytes)) else arguments
        )
        if not isinstance(value, Mapping):
            raise ToolArgumentsError(tool_name, f"Expected `object`, got `{json_type(value)}`")
        value = dict(value)
        if self.injected and not self.injected.isdisjoint(value):
            forged = min(self.injected.intersection(value))
            raise ToolArgumentsError(tool_name, f"Object contains unknown field `{forged}`")
        check = self.compile(tool_name)
        try:
            check(value)
        except self._invalid as error:
            raise _from_fastjsonschema(tool_name, value, error) from None  # type: ignore[arg-type]
        except RecursionError:
            raise _too_deep(tool_name) from None
        return value


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
    """``value`` as JSON text (``repr`` if it is not JSON), cut to ``limit`` characters.

    With ``raw_text``, a string is shown as itself (raw arguments as the model sent them).
    """
    text = value if raw_text and isinstance(value, str) else json_text(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_text(value: object) -> str:
    """Compact JSON text for ``value`` (its ``repr`` if it is not JSON)."""
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError, OverflowError):
        return repr(value)


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
        options = ", ".join(preview(v) for v in definition.get("enum", ()))
        detail = f"Expected one of [{options}], got {preview(value)}"
    elif rule == "const":
        detail = f"Expected {preview(definition.get('const'))}, got {preview(value)}"
    else:
        detail = (error.message or "invalid value").replace(error.name or "data", "value", 1)
    return ToolArgumentsError(tool_name, detail, path=_json_path(data, list(error.path or [])))
