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

What is never enforced locally (each is dropped before compiling; providers and servers
still see it): ``unevaluatedProperties``, ``unevaluatedItems``, ``$dynamicRef``,
``minContains``/``maxContains`` (with the ``contains`` they qualify),
``contentEncoding``/``contentMediaType``/``contentSchema`` (annotations in both
dialects), a ``format`` outside :data:`ENFORCED_FORMATS` (an annotation in 2020-12),
and a ``pattern`` RE2 cannot run (lookaround, backreferences; see ``patterns``: every
pattern enforced locally runs in time linear in the text, never on Python's
backtracking ``re``). A ``patternProperties`` entry RE2 cannot run is dropped with the
``additionalProperties`` beside it (which would otherwise take the fields it matches).
Dropping a constraint loosens the schema it sits in, which is safe where a schema only
has to match (``properties``, ``allOf``, ``anyOf``, ``items``, …) but not under ``not``,
``if`` or ``oneOf``, where a looser subschema can refuse more; so a ``not``, an
``if``/``then``/``else`` or a ``oneOf`` whose subschemas (references followed) hold a
constraint that is not enforced is dropped whole. The local check is then always
looser than the schema, never stricter: a model is never refused what the schema
allows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeAlias
from urllib.parse import unquote

from .patterns import enforceable

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
#: ``format`` is an annotation. ``regex`` is not checked: it would compile whatever
#: pattern a model sends (in Python's dialect, not ECMA-262's, and at a cost that
#: grows with its length).
ENFORCED_FORMATS = frozenset(
    {
        *("date-time", "date", "time", "email", "hostname", "ipv4", "ipv6"),
        *("uri", "uri-reference", "json-pointer", "uuid"),
    }
)
#: Format checks of our own: ``uuid``, which not every supported fastjsonschema knows,
#: and ``email``, whose fastjsonschema pattern refuses valid addresses (a quoted local
#: part, an address literal). Ours is the RFC 5321 shape (a dot-atom or a quoted local
#: part, ``@``, a domain or a bracketed literal), lenient about the domain.
FORMAT_CHECKS: Mapping[str, str] = {
    "uuid": r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z",
    "email": (
        r'^(?:[^@\s".]+(?:\.[^@\s".]+)*|"(?:[^"\\\r\n]|\\.)*")'
        r"@(?:\[[^\[\]\s]+\]|[^@\s\[\]]+)\Z"
    ),
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
#: Constraints dropped although the schema means them (see the module docstring).
_UNENFORCED = frozenset(
    {
        *("unevaluatedProperties", "unevaluatedItems", "minContains", "maxContains"),
        *("$dynamicRef", "$recursiveRef"),
    }
)
#: Where a looser subschema makes its parent stricter.
_EXCLUSIVE = {"not": ("not",), "if": ("if", "then", "else"), "oneOf": ("oneOf",)}
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


def local_schema(schema: object, enforce: Enforce, dialect: Dialect, root: object = None) -> object:
    """The schema fastjsonschema compiles: what is enforced of ``schema``, in draft-7 spelling.

    ``root`` is the whole schema ``schema`` is part of (itself by default), against which
    references are read.
    """
    if not isinstance(schema, Mapping):
        return schema
    root = schema if root is None else root
    keep = ENFORCED_KEYWORDS if enforce == "subset" else None
    other = _ONLY_IN[dialect]
    dropped: set[str] = set()
    for key, group in _EXCLUSIVE.items():
        if key in schema and keep is None and _loosened(schema[key], root):
            dropped.update(group)
    out: dict[str, object] = {}
    for key, value in schema.items():
        if key in _NEVER or key in other or key in dropped:
            continue
        if keep is not None and key not in keep:
            continue
        if key == "format" and value not in ENFORCED_FORMATS:
            continue
        if key == "pattern" and not enforceable(value):
            continue
        if key == "patternProperties" and isinstance(value, Mapping):
            value = {name: sub for name, sub in value.items() if enforceable(name)}
            if len(value) < len(schema[key]):  # `additionalProperties` would take their fields
                dropped.add("additionalProperties")
                out.pop("additionalProperties", None)
        if key == "$ref" and dialect == "draft2020-12" and isinstance(value, str):
            out[key] = _moved(root, value)
        else:
            out[key] = _local_value(key, value, enforce, dialect, root)
    if dialect == "draft2020-12":
        _to_draft7(out, schema)
    return out


def _local_value(
    key: str, value: object, enforce: Enforce, dialect: Dialect, root: object
) -> object:
    if key in _SCHEMA_MAPS and isinstance(value, Mapping):
        return {name: local_schema(sub, enforce, dialect, root) for name, sub in value.items()}
    if key in _SCHEMA_LISTS and isinstance(value, list):
        return [local_schema(sub, enforce, dialect, root) for sub in value]
    return local_schema(value, enforce, dialect, root) if key in _SCHEMAS else value


def _moved(root: object, ref: str) -> str:
    """Where the 2020-12 reference ``ref`` points once its path is spelled the draft-7 way
    (``#/prefixItems/0`` is ``#/items/0`` there; see :func:`_to_draft7`)."""
    if not ref.startswith("#/"):
        return ref
    tokens, node, moved = ref[2:].split("/"), root, []
    shift = False  # the previous token was the `allOf` a `$ref` was moved into
    for token in tokens:
        key = unquote(token).replace("~1", "/").replace("~0", "~")
        here = token
        if isinstance(node, Mapping):
            if "prefixItems" in node and key in ("prefixItems", "items"):
                here = "items" if key == "prefixItems" else "additionalItems"
            elif key in ("dependentSchemas", "dependentRequired"):
                here = "dependencies"
            shift = key == "allOf" and _ref_moves(node)
            node = node.get(key)
        elif isinstance(node, list) and key.isdigit():
            here = str(int(key) + 1) if shift else token
            shift = False
            node = node[int(key)] if int(key) < len(node) else None
        else:
            return ref  # a pointer past the schema: the build-time check refused it
        moved.append(here)
    return "#/" + "/".join(moved)


def _loosened(schema: object, root: object) -> bool:
    """Whether ``schema``, its subschemas or what they refer to hold an unenforced constraint."""
    stack, seen = [schema], set()
    while stack:
        node = stack.pop()
        if isinstance(node, list):  # the value of `oneOf`
            stack.extend(node)
            continue
        if not isinstance(node, Mapping) or id(node) in seen:
            continue
        seen.add(id(node))
        if not _UNENFORCED.isdisjoint(node) or _lost_pattern(node):
            return True
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                stack.append(_target(root, value))
            elif key in _SCHEMA_MAPS or key == "dependencies":
                stack.extend(value.values() if isinstance(value, Mapping) else ())
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                stack.extend(value)
            elif key in _SCHEMAS:
                stack.append(value)
    return False


def _lost_pattern(node: Mapping[str, object]) -> bool:
    """Whether ``node`` has a ``pattern`` or ``patternProperties`` RE2 cannot run."""
    if "pattern" in node and not enforceable(node["pattern"]):
        return True
    names = node.get("patternProperties")
    return isinstance(names, Mapping) and not all(enforceable(name) for name in names)


def _target(root: object, ref: str) -> object:
    """The schema ``ref`` points to in ``root`` (None when it is not a local pointer)."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node = root
    for token in ref[2:].split("/"):
        key = unquote(token).replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping):
            node = node.get(key)
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def _ref_moves(node: Mapping[str, object]) -> bool:
    """Whether :func:`_to_draft7` moves the ``$ref`` of ``node`` into its ``allOf``."""
    return "$ref" in node and not node.keys() <= _ANNOTATIONS | _NEVER | {"$ref"}


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
    if "$ref" in out and _ref_moves(out):
        siblings = {k: v for k, v in out.items() if k not in ("$ref", "allOf")}
        branches = [{"$ref": out["$ref"]}, *_as_list(out.get("allOf"))]
        out.clear()
        out.update(siblings)
        out["allOf"] = branches


def _as_list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []
