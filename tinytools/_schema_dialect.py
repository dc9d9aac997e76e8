"""JSON Schema dialects: which one a hand-written schema speaks, and how fastjsonschema reads it.

A schema's dialect comes from its ``$schema`` (draft 7 or 2020-12); a schema without one
is read as 2020-12, the current JSON Schema and MCP's default. ``enforce="draft7"`` or
``enforce="draft2020-12"`` names the dialect outright, whatever ``$schema`` says.

fastjsonschema implements drafts 4, 6 and 7, so :func:`local_schema` spells a 2020-12
schema the draft-7 way, with the same meaning: ``prefixItems`` (and ``items`` for the
rest) become array-form ``items`` (and ``additionalItems``); ``dependentRequired`` and
``dependentSchemas`` become ``dependencies``; a ``$ref`` beside other keywords moves
into an ``allOf`` (2020-12 applies its siblings, draft 7 ignores them). Keywords of the
other dialect are unknown keywords there and are dropped, as JSON Schema ignores them.

What is never enforced locally (each is dropped before compiling, so it can only make
the local check looser than the schema, never stricter; providers and servers still
see it): ``unevaluatedProperties``, ``unevaluatedItems``, ``$dynamicRef``,
``minContains``/``maxContains`` (with the ``contains`` they qualify),
``contentEncoding``/``contentMediaType``/``contentSchema`` (annotations in both
dialects), and a ``format`` outside :data:`ENFORCED_FORMATS` (an annotation in 2020-12).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeAlias

__all__ = [
    "DIALECTS",
    "ENFORCED_FORMATS",
    "ENFORCED_KEYWORDS",
    "Dialect",
    "Enforce",
    "dialect_of",
    "local_schema",
]

#: A JSON Schema dialect tinytools checks and enforces.
Dialect: TypeAlias = Literal["draft7", "draft2020-12"]
#: How much of a hand-written schema is enforced locally (see ``Tool.from_schema``).
Enforce: TypeAlias = Literal["full", "subset", "draft7", "draft2020-12"]

#: ``$schema`` values (scheme and trailing ``#`` aside) and the dialect each is read as.
#: Draft 6 is a subset of draft 7 (draft 7 only added keywords).
DIALECTS: Mapping[str, Dialect] = {
    "json-schema.org/draft-07/schema": "draft7",
    "json-schema.org/draft-06/schema": "draft7",
    "json-schema.org/draft/2020-12/schema": "draft2020-12",
}

#: Keywords ``enforce="subset"`` checks. ``patternProperties`` is kept because
#: ``additionalProperties`` is defined relative to it; ``$ref`` and its targets
#: because references must resolve; ``prefixItems``/``additionalItems`` because
#: they give array-form ``items`` its meaning in each draft.
ENFORCED_KEYWORDS = frozenset(
    {
        *("type", "properties", "required", "additionalProperties", "patternProperties"),
        *("items", "prefixItems", "additionalItems", "enum", "const"),
        *("$ref", "$defs", "definitions"),
    }
)

#: Formats checked under full enforcement (cheap, well-defined checks); any other
#: ``format`` is an annotation. ``uuid`` is checked by :data:`FORMAT_CHECKS`.
ENFORCED_FORMATS = frozenset(
    {
        *("date-time", "date", "time", "email", "hostname", "ipv4", "ipv6"),
        *("uri", "uri-reference", "json-pointer", "regex", "uuid"),
    }
)
#: Formats fastjsonschema does not know in every supported version.
FORMAT_CHECKS: Mapping[str, str] = {
    "uuid": r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z",
}

#: Keywords never compiled, whatever the dialect (see the module docstring).
_NEVER = frozenset(
    {
        *("$schema", "$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$vocabulary"),
        *("$recursiveRef", "$recursiveAnchor", "$comment", "unevaluatedProperties"),
        *("unevaluatedItems", "contentEncoding", "contentMediaType", "contentSchema"),
        *("minContains", "maxContains", "default"),
    }
)
#: Keywords of one dialect that the other does not have (so ignores).
_ONLY_IN: Mapping[Dialect, frozenset[str]] = {
    "draft7": frozenset({"prefixItems", "dependentRequired", "dependentSchemas"}),
    "draft2020-12": frozenset({"additionalItems", "dependencies"}),
}
# Where subschemas sit: in a map of them, a list of them, or as the value itself.
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
_SCHEMA_LISTS = frozenset({"prefixItems", "items", "allOf", "anyOf", "oneOf"})
_SCHEMAS = frozenset(
    {"additionalProperties", "additionalItems", "items", "not", "if", "then", "else"}
    | {"contains", "propertyNames"}
)
# Siblings of `$ref` that never change a verdict: no `allOf` needed for them.
_ANNOTATIONS = frozenset({"title", "description", "examples", "default", "deprecated"})


def dialect_of(schema: Mapping[str, object], enforce: Enforce) -> Dialect:
    """The dialect ``schema`` is read in.

    Raises:
        ValueError: Its ``$schema`` names another dialect; the message says what to do.
    """
    if enforce == "draft7" or enforce == "draft2020-12":
        return enforce
    declared = schema.get("$schema")
    if declared is None:
        return "draft2020-12"
    if isinstance(declared, str):
        dialect = DIALECTS.get(declared.partition("://")[2].rstrip("#"))
        if dialect is not None:
            return dialect
    raise ValueError(
        f"its `$schema` is {declared!r}; tinytools checks and enforces JSON Schema draft 7 "
        '("http://json-schema.org/draft-07/schema#") and 2020-12 '
        '("https://json-schema.org/draft/2020-12/schema"): declare one of them'
    )


def local_schema(schema: object, enforce: Enforce, dialect: Dialect) -> object:
    """The schema fastjsonschema compiles: what is enforced of ``schema``, in draft-7 spelling."""
    if not isinstance(schema, Mapping):
        return schema
    keep = ENFORCED_KEYWORDS if enforce == "subset" else None
    other = _ONLY_IN[dialect]
    out: dict[str, object] = {}
    for key, value in schema.items():
        if key in _NEVER or key in other or (keep is not None and key not in keep):
            continue
        if key == "format" and value not in ENFORCED_FORMATS:
            continue
        out[key] = _local_value(key, value, enforce, dialect)
    if dialect == "draft2020-12":
        _to_draft7(out, schema)
    return out


def _local_value(key: str, value: object, enforce: Enforce, dialect: Dialect) -> object:
    if key in _SCHEMA_MAPS and isinstance(value, Mapping):
        return {name: local_schema(sub, enforce, dialect) for name, sub in value.items()}
    if key in _SCHEMA_LISTS and isinstance(value, list):
        return [local_schema(sub, enforce, dialect) for sub in value]
    return local_schema(value, enforce, dialect) if key in _SCHEMAS else value


def _to_draft7(out: dict[str, object], original: Mapping[str, object]) -> None:
    """Respell the 2020-12 keywords of one translated schema object in place."""
    if "prefixItems" in out:
        rest = out.pop("items", None)
        out["items"] = out.pop("prefixItems")
        if rest is not None:
            out["additionalItems"] = rest
    required, schemas = out.pop("dependentRequired", None), out.pop("dependentSchemas", None)
    if isinstance(required, Mapping) or isinstance(schemas, Mapping):
        dependencies: dict[str, object] = {}
        for name, needed in (required or {}).items():  # type: ignore[attr-defined]
            dependencies[name] = needed
        for name, sub in (schemas or {}).items():  # type: ignore[attr-defined]
            before = dependencies.get(name)
            dependencies[name] = sub if before is None else {"allOf": [{"required": before}, sub]}
        out["dependencies"] = dependencies
    if "contains" in out and ("minContains" in original or "maxContains" in original):
        del out["contains"]  # `minContains: 0` makes it pass; draft 7 cannot say so
    if "$ref" in out and not out.keys() <= _ANNOTATIONS | {"$ref"}:
        siblings = {k: v for k, v in out.items() if k not in ("$ref", "allOf")}
        branches = [{"$ref": out["$ref"]}, *_as_list(out.get("allOf"))]
        out.clear()
        out.update(siblings)
        out["allOf"] = branches


def _as_list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []
