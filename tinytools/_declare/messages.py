"""What the model reads when its arguments are refused: msgspec's and fastjsonschema's
errors as ``ToolArgumentsError`` sentences, in JSON's words (``integer``, not ``int``),
with the JSON path of the value at fault.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

import msgspec

from tinytools._memo import remember
from tinytools._text import json_type, preview
from tinytools.errors import ToolArgumentsError

from .models import ModelRefused

if TYPE_CHECKING:
    import fastjsonschema

__all__ = [
    "decode_detail",
    "from_fastjsonschema",
    "from_msgspec",
    "msgspec_detail",
    "not_json",
    "too_deep",
    "validation_detail",
]


_JSON_NAMES = {"int": "integer", "str": "string", "float": "number", "bool": "boolean"}


# msgspec names Python types ("Expected `int` <= 10", "got `str`"); the model reads a
# JSON schema, so the types it is told about use JSON's names.
_TYPE_NAMES = re.compile(r"(Expected|got) `([^`]*)`")


def _json_names(match: re.Match[str]) -> str:
    types = " | ".join(_JSON_NAMES.get(t, t) for t in match[2].split(" | "))
    return f"{match[1]} `{types}`"


def from_msgspec(tool_name: str, error: msgspec.ValidationError) -> ToolArgumentsError:
    detail, path, _ = validation_detail(error)
    return ToolArgumentsError(tool_name, detail, path=path)


def validation_detail(error: msgspec.ValidationError) -> tuple[str, str, bool]:
    """:func:`msgspec_detail` of ``error``; where a pydantic model refused its part, the
    model's own sentence, at the path of the value inside the model."""
    cause = error.__cause__
    if isinstance(cause, ModelRefused):
        _, path, _ = msgspec_detail(str(error))
        return cause.detail, path + cause.path, False
    return msgspec_detail(str(error))


#: msgspec's messages as the model reads them, by msgspec's text: a bounded memo (a
#: schema's few ways to fail repeat), which changes nothing but speed.
_DETAILS: dict[str, tuple[str, str, bool]] = {}


def msgspec_detail(message: str) -> tuple[str, str, bool]:
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


def not_json(
    tool_name: str, error: msgspec.MsgspecError | UnicodeError | RecursionError
) -> ToolArgumentsError:
    """The argument error for text that cannot be read as JSON (or nests too deep)."""
    if isinstance(error, UnicodeError):
        return _unreadable(tool_name)
    if isinstance(error, RecursionError):
        return too_deep(tool_name)
    return ToolArgumentsError(tool_name, decode_detail(error), malformed=True)


def _unreadable(tool_name: str) -> ToolArgumentsError:
    return ToolArgumentsError(
        tool_name,
        "the text holds lone surrogates, which no JSON text can carry",
        malformed=True,
    )


def too_deep(tool_name: str) -> ToolArgumentsError:
    return ToolArgumentsError(
        tool_name, "the arguments are nested too deeply to decode", malformed=True
    )


def decode_detail(error: msgspec.MsgspecError) -> str:
    return str(error).removeprefix("JSON is malformed: ")


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


def from_fastjsonschema(
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
