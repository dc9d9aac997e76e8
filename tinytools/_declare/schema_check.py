"""The eager check of a hand-written schema: is it valid JSON Schema in its dialect?

``Tool.from_schema`` runs :func:`schema_problems` when the tool is built, so nothing
that could be refused at definition time waits for the first call. Two parts:

* The dialect's official meta-schema (draft 7, or 2020-12 with its vocabularies
  merged into one document), shipped in ``tinytools/_declare/metaschemas`` and compiled by
  fastjsonschema once per process, on first use (20-40 ms of CPU). Checking a tool's
  schema against it costs about 20 microseconds (a few per subschema). Formats the
  meta-schema names are checked too, so a ``pattern`` Python's ``re`` cannot compile
  is refused here.
* What no meta-schema says: every ``$ref`` must point inside the schema (``#`` or a
  ``#/...`` JSON pointer) and resolve there. tinytools never fetches a schema over
  the network, and a subschema's ``$id`` would change what its references mean, so
  both are refused with what to do instead. So is a loop of references that never
  steps into the value (``allOf: [{"$ref": "#"}]``): checking it would never end.

The argument validator itself is still compiled lazily, on a tool's first call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from urllib.parse import unquote

from .schema_dialect import Dialect

__all__ = ["DEEP", "inline_depth", "schema_problems", "subschemas"]

#: Subschemas nested this deep inline (not through `$ref`) may pass what fastjsonschema's
#: generated code can nest (about 20 levels of `items`/`anyOf`/`not`, 10 of `contains` or
#: `if`): such a schema is compiled when the tool is built, to refuse it then if need be.
DEEP = 8

_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
_NAMES: Mapping[Dialect, str] = {"draft7": "draft 7", "draft2020-12": "draft 2020-12"}

# Where subschemas sit, in either dialect (for walking `$ref`s and `$id`s).
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
_SCHEMA_LISTS = frozenset({"prefixItems", "items", "allOf", "anyOf", "oneOf"})
_SCHEMAS = frozenset(
    {"additionalProperties", "additionalItems", "items", "not", "if", "then", "else"}
    | {"contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems"}
)


def schema_problems(schema: Mapping[str, object], dialect: Dialect) -> list[str]:
    """Why ``schema`` is not a valid JSON Schema in ``dialect`` (empty when it is)."""
    check = _meta_validator(dialect)
    import fastjsonschema  # loaded by `_meta_validator` already

    try:
        check(schema)
    except fastjsonschema.JsonSchemaValueException as error:
        where = _schema_path(error.path or [])
        return [
            f"its parameters schema is not valid JSON Schema ({_NAMES[dialect]}) at "
            f"`{where}`: {_meta_detail(error, dialect)}"
        ]
    except RecursionError:
        return ["its parameters schema is nested too deeply to check; flatten it with `$defs`"]
    problems = list(_reference_problems(schema))
    return problems or list(_loop_problems(schema))


def _schema_path(segments: list[str]) -> str:
    path = "$"
    for segment in segments[1:]:
        path += f"[{segment}]" if segment.isdigit() else f".{segment}"
    return path


def _meta_detail(error: Exception, dialect: Dialect) -> str:
    """What the meta-schema refused, in words (fastjsonschema names the check that failed)."""
    value = getattr(error, "value", None)
    path = getattr(error, "path", None) or []
    found = _short(value)
    last = path[-1] if len(path) > 1 else ""
    if last == "type" and getattr(error, "rule", None) == "anyOf":
        return f"{found} is not a type; use one of {', '.join(_TYPES)} (or a list of them)"
    if last == "items" and isinstance(value, list) and dialect == "draft2020-12":
        return (
            "in 2020-12 `items` is one schema for every element; write a tuple as "
            '`prefixItems`, or declare draft 7 (`"$schema": '
            '"http://json-schema.org/draft-07/schema#"`)'
        )
    message = str(getattr(error, "message", "") or error)
    name = str(getattr(error, "name", "") or "data")
    return f"{message.replace(name, 'it', 1)} (found {found})"


def _short(value: object) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


# --- references -------------------------------------------------------------------------


def _reference_problems(schema: Mapping[str, object]) -> Iterator[str]:
    for node, path in subschemas(schema):
        ident = node.get("$id")
        if path != "$" and isinstance(ident, str) and not ident.startswith("#"):
            yield (
                f"its parameters schema sets `$id` at `{path}`, which would change what the "
                "references inside it mean; remove it (references resolve against the whole "
                "schema)"
            )
        ref = node.get("$ref")
        if not isinstance(ref, str):
            continue
        if not (ref == "#" or ref.startswith("#/")):
            yield (
                f"its parameters schema refers to {ref!r} at `{path}.$ref`; only references "
                "inside the schema (`#/$defs/...`) are supported (tinytools never fetches a "
                "schema): copy the referenced schema into `$defs`"
            )
        elif not _resolves(schema, ref):
            yield (
                f"its parameters schema refers to {ref!r} at `{path}.$ref`, which is not a "
                "schema inside it; fix the pointer or add the missing definition"
            )


# Keywords whose subschemas apply to the very same instance (they do not step into it).
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE = ("not", "if", "then", "else")
_IN_PLACE_MAPS = ("dependentSchemas", "dependencies")


def _loop_problems(schema: Mapping[str, object]) -> Iterator[str]:
    """A `$ref` chain that comes back to where it started without stepping into the
    instance (`{"$ref": "#/$defs/a"}` with `a` referring back, or `allOf: [{"$ref": "#"}]`):
    checking any value would recurse forever (JSON Schema leaves it undefined)."""
    paths: dict[int, str] = {}
    edges: dict[int, list[Mapping[str, object]]] = {}
    for node, path in subschemas(schema):
        paths.setdefault(id(node), path)
        targets: list[object] = []
        for key in _IN_PLACE_LISTS:
            value = node.get(key)
            if isinstance(value, list):
                targets += value
        targets += [node.get(key) for key in _IN_PLACE]
        for key in _IN_PLACE_MAPS:
            value = node.get(key)
            if isinstance(value, Mapping):
                targets += value.values()
        ref = node.get("$ref")
        if isinstance(ref, str):
            targets.append(_target(schema, ref))
        edges[id(node)] = [t for t in targets if isinstance(t, Mapping)]
    state: dict[int, int] = {}  # 1: on the current walk, 2: done (no loop through it)
    for start in list(edges):
        if start in state:
            continue
        state[start] = 1
        stack: list[tuple[int, Iterator[Mapping[str, object]]]] = [(start, iter(edges[start]))]
        while stack:
            here, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[here] = 2
                stack.pop()
                continue
            child_id = id(child)
            seen = state.get(child_id)
            if seen == 1:
                where = paths.get(child_id, "$")
                yield (
                    f"its parameters schema refers back to `{where}` without stepping into "
                    "the value (through `$ref`, `allOf`, `anyOf`, `oneOf`, `not` or "
                    "`if`/`then`/`else`), so checking it would never end; break the loop"
                )
                return
            if seen is None:
                state[child_id] = 1
                stack.append((child_id, iter(edges.get(child_id, []))))


def _target(schema: Mapping[str, object], ref: str) -> object:
    """What a `#`-pointer `$ref` points at (None when it does not resolve)."""
    node: object = schema
    for token in ref[2:].split("/") if ref != "#" else ():
        part = unquote(token).replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def inline_depth(schema: Mapping[str, object]) -> int:
    """How deep subschemas nest inline in ``schema``; a definition starts again at 1 (the
    generated validator calls it as its own function)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(schema, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, Mapping):
            continue
        deepest = max(deepest, depth)
        for key, value in node.items():
            fresh = 1 if key in ("$defs", "definitions") else depth + 1
            if key in _SCHEMA_MAPS or key == "dependencies":
                if isinstance(value, Mapping):
                    stack.extend((sub, fresh) for sub in value.values())
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                stack.extend((sub, depth + 1) for sub in value)
            elif key in _SCHEMAS:
                stack.append((value, depth + 1))
    return deepest


def subschemas(schema: object) -> Iterator[tuple[Mapping[str, object], str]]:
    """Every schema object in ``schema`` with its path, without recursion."""
    stack: list[tuple[object, str]] = [(schema, "$")]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, Mapping):
            continue
        yield node, path
        for key, value in node.items():
            where = f"{path}.{key}"
            if key in _SCHEMA_MAPS and isinstance(value, Mapping):
                stack.extend((sub, f"{where}.{name}") for name, sub in value.items())
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                stack.extend((sub, f"{where}[{i}]") for i, sub in enumerate(value))
            elif key == "dependencies" and isinstance(value, Mapping):
                stack.extend((sub, f"{where}.{name}") for name, sub in value.items())
            elif key in _SCHEMAS:
                stack.append((value, where))


def _resolves(schema: Mapping[str, object], ref: str) -> bool:
    """Whether a `#`-pointer `$ref` points at a schema (an object or a boolean)."""
    return isinstance(_target(schema, ref), (Mapping, bool))


# --- the meta-schemas ---------------------------------------------------------------------


def _load(name: str) -> object:
    from importlib import resources  # (on the first hand-written schema only)

    return json.loads((resources.files(__package__) / "metaschemas" / name).read_text("utf-8"))


def _one_document(node: object) -> object:
    """``node`` (part of a 2020-12 meta-schema) with its references made local to one
    merged document: ``$dynamicRef: "#meta"`` (which fastjsonschema does not know, and
    which, when a 2020-12 schema is checked, always lands on the meta-schema itself) and
    ``meta/<vocabulary>#/$defs/<name>`` both point into that document."""
    if isinstance(node, dict):
        out: dict[str, object] = {}
        for key, value in node.items():
            if key == "$dynamicRef" and value == "#meta":
                out["$ref"] = "#"
            elif key == "$ref" and isinstance(value, str):
                out["$ref"] = "#" + value.partition("#")[2]
            else:
                out[key] = _one_document(value)
        return out
    if isinstance(node, list):
        return [_one_document(item) for item in node]
    return node


def _merged_2020_12() -> dict[str, object]:
    """The 2020-12 meta-schema as one document: its ``allOf`` of vocabulary meta-schemas
    merged into it (their ``properties`` and ``$defs`` are disjoint, so the union of
    their keywords means what the ``allOf`` does). Checking a schema then costs one
    generated function per subschema instead of nine."""
    top = _load("draft2020-12/schema.json")
    assert isinstance(top, dict)
    properties: dict[str, object] = {}
    defs: dict[str, object] = {}
    for part in [top, *(_vocabulary(entry) for entry in top["allOf"])]:
        for name, sub in part.get("properties", {}).items():
            assert name not in properties, name
            properties[name] = sub
        for name, sub in part.get("$defs", {}).items():
            assert name not in defs, name
            defs[name] = sub
    merged = {"type": top["type"], "properties": properties, "$defs": defs}
    return _one_document(merged)  # type: ignore[return-value]


def _vocabulary(entry: dict[str, str]) -> dict[str, dict[str, object]]:
    name = entry["$ref"].removeprefix("meta/")
    vocabulary = _load(f"draft2020-12/meta/{name}.json")
    assert isinstance(vocabulary, dict)
    return vocabulary


@cache
def _meta_validator(dialect: Dialect) -> Callable[[object], object]:
    """The compiled meta-schema of ``dialect`` (once per process)."""
    import fastjsonschema  # on first use: `import tinytools` does not load it

    if dialect == "draft7":
        return fastjsonschema.compile(_load("draft7.json"), handlers={}, use_default=False)  # type: ignore[arg-type]
    return fastjsonschema.compile(_merged_2020_12(), handlers={}, use_default=False)
