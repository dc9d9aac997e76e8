"""Helpers shared by the provider modules, and OpenAI's strict-mode projection.

* :func:`exposed_tools` reads the tools argument every ``declarations()`` takes.
* :func:`as_data` turns an SDK response object into plain data (through its
  ``model_dump()``), so parsers read one shape whichever the caller passed;
  no SDK is imported here.
* :func:`make_call` builds a ``ToolCall`` that fails closed: a missing name,
  or arguments that are not what the provider promised, give a call with
  ``invalid`` set and the raw value kept as JSON text — never a dropped call,
  never ``{}`` in place of malformed input.
* :func:`json_text` writes any value a response holds as compact JSON text,
  without ever raising (see the function for what it writes when JSON cannot).
* :func:`strict_schema` is OpenAI's strict-mode projection (documented on the
  function), used by ``openai_chat`` and ``openai_responses``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

import msgspec

from tinytools._declare.registry import AnyTool
from tinytools._text import json_type, printable
from tinytools._wire import ToolCall

from ._parsed import SyntheticIds
from ._tools import Tools, exposed_tools

__all__ = [
    "ANNOTATIONS",
    "Tools",
    "as_data",
    "copy_schema",
    "cut_off",
    "exposed_tools",
    "json_text",
    "kind_of",
    "make_call",
    "note",
    "openai_function",
    "preview",
    "strict_schema",
    "typed_calls",
]


def json_text(value: object) -> str:
    """Compact JSON text for ``value``; never raises, whatever a response holds.

    Responses carry model-chosen values, and some cannot be encoded as they
    stand: an integer longer than Python's int-to-str digit limit
    (:func:`sys.get_int_max_str_digits`), nesting deeper than the recursion
    limit, or a value that is not JSON at all. Those are written by
    :func:`_walk_text` instead, which needs no recursion and writes in linear
    time. The text only serves as the seed of synthetic ids, in error messages
    and as the kept raw form of arguments a call was refused for, so it need
    not be JSON there: it must be deterministic and must not fail.
    """
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError, OverflowError, RecursionError):
        return _walk_text(value)


def _leaf_text(value: object) -> str:
    """One non-container value for :func:`_walk_text`."""
    if isinstance(value, int) and not isinstance(value, bool):
        # Hexadecimal has no digit limit and takes linear time; it is not JSON,
        # which is what it should look like: admission cannot read it either.
        return hex(value)
    if isinstance(value, str):  # a lone surrogate: written as its escape's text
        return msgspec.json.encode(printable(value)).decode()
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError, OverflowError):
        return msgspec.json.encode(f"<{type(value).__name__}>").decode()


def _walk_text(value: object) -> str:
    """JSON-like text for any value, iteratively: huge integers as ``0x…`` hex."""
    out: list[str] = []
    todo: list[object] = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, _Raw):
            out.append(item.text)
        elif isinstance(item, Mapping):
            parts: list[object] = [_Raw("{")]
            for index, (key, child) in enumerate(item.items()):
                key_text = printable(key) if isinstance(key, str) else _leaf_text(key)
                comma = "," if index else ""
                parts += [_Raw(comma + msgspec.json.encode(key_text).decode() + ":"), child]
            todo += reversed([*parts, _Raw("}")])
        elif isinstance(item, (list, tuple)):
            parts = [_Raw("[")]
            for index, child in enumerate(item):
                parts += [_Raw(","), child] if index else [child]
            todo += reversed([*parts, _Raw("]")])
        else:
            out.append(_leaf_text(item))
    return "".join(out)


class _Raw:
    """Text :func:`_walk_text` emits as it stands."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def as_data(value: object) -> object:
    """Plain data for an SDK object (its ``model_dump()``), else the value itself."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, Mapping):
        return dump()
    return value


def typed_calls(
    response: object,
    *,
    list_key: str,
    what: str,
    kind: str,
    id_key: str,
    arguments_key: str,
    raw_string: bool = False,
) -> list[ToolCall]:
    """The calls among a response's typed items (``{"type": kind, ...}``), in order.

    Args:
        response: The response (SDK object or dict), or the list under ``list_key``.
        list_key: Where the response keeps its items.
        what: How to name the expected response in an error.
        kind: The ``type`` of the items that are calls.
        id_key: The item key holding the call id.
        arguments_key: The item key holding the arguments.
        raw_string: The provider sends arguments as JSON text.

    Raises:
        ValueError: The response has no such list.
    """
    data = as_data(response)
    items = data.get(list_key) if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise ValueError(f"expected {what} or its {list_key} list, not {preview(data)}")
    ids = SyntheticIds(lambda: json_text(data))
    calls: list[ToolCall] = []
    for item in items:
        fields = as_data(item)
        if isinstance(fields, Mapping) and fields.get("type") == kind:
            calls.append(
                make_call(
                    fields.get(id_key),
                    fields.get("name"),
                    fields.get(arguments_key),
                    ids=ids,
                    index=len(calls),
                    raw_string=raw_string,
                )
            )
    return calls


def preview(data: object) -> str:
    """A short view of a response that had the wrong shape, for an error message."""
    return json_text(data)[:80] if isinstance(data, Mapping) else type(data).__name__


def kind_of(value: object) -> str:
    """The JSON kind of ``value`` for an error message: ``an object``, ``a string``, …"""
    kind = json_type(value)
    return _KINDS.get(kind, kind)


_KINDS: Final = {
    "array": "an array",
    "object": "an object",
    "string": "a string",
    "boolean": "a boolean",
    "integer": "a number",
    "number": "a number",
}


def make_call(
    raw_id: object,
    name: object,
    arguments: object,
    *,
    ids: SyntheticIds,
    index: int,
    raw_string: bool = False,
    problem: str | None = None,
) -> ToolCall:
    """One ``ToolCall`` from a provider's fields, failing closed.

    Args:
        raw_id: The provider's call id; an int is kept as its text, anything
            else missing gets the synthetic id ``ids(index)``.
        name: The tool name; a missing or non-string name becomes ``""``.
        arguments: The arguments as the provider sent them.
        ids: The synthetic ids of the response's calls (derived from its whole text).
        index: The call's position in the response.
        raw_string: True when the provider sends arguments as JSON text (kept
            verbatim; an object is accepted too); else they must be an object.
        problem: A reason the call is invalid whatever its fields hold.
    """
    if isinstance(raw_id, str) and raw_id:
        call_id = raw_id
    elif isinstance(raw_id, int) and not isinstance(raw_id, bool):
        call_id = str(raw_id)
    else:
        call_id = ids(index)
    problems = [problem] if problem else []
    if not (isinstance(name, str) and name):
        found = "" if name == "" else f" (found {kind_of(name)})"
        problems.append(f"the call has no tool name{found}")
        name = ""
    if raw_string and isinstance(arguments, str):
        args: dict[str, object] | str = arguments
    elif isinstance(arguments, Mapping) and all(isinstance(k, str) for k in arguments):
        args = dict(arguments)
    else:
        expected = "JSON text or an object" if raw_string else "a JSON object"
        found = kind_of(arguments)
        if isinstance(arguments, Mapping):
            found = "an object with keys that are not strings"
        problems.append(f"the arguments must be {expected}, not {found}")
        args = json_text(arguments)
    return ToolCall(call_id, name, args, "; ".join(problems) or None)


def cut_off(call: ToolCall, why: str) -> ToolCall:
    """``call`` marked ``invalid``: the response ended (``why``) while it was being written.

    Its arguments are kept as they arrived; admission answers the call with the
    reason (text that still parses strictly is whole, and is admitted as usual).
    """
    reason = f"{why} while this call was being written, so its arguments may be incomplete"
    invalid = f"{call.invalid}; {reason}" if call.invalid else reason
    return msgspec.structs.replace(call, invalid=invalid)


def copy_schema(schema: Mapping[str, object]) -> dict[str, object]:
    """A deep copy of a JSON schema, so callers may edit a declaration freely."""
    copied = msgspec.json.decode(msgspec.json.encode(schema))
    assert isinstance(copied, dict)
    return copied


def openai_function(tool: AnyTool, *, strict: bool) -> dict[str, object]:
    """``name``, ``description``, ``parameters`` and ``strict`` as both OpenAI APIs take them.

    With ``strict``, the parameters are :func:`strict_schema`'s projection; a
    tool whose schema strict mode cannot express is declared non-strict, with
    its schema unchanged, rather than narrowed to something else.
    """
    # (a description may hold a lone surrogate, as a server's JSON can: its escape)
    spec: dict[str, object] = {"name": tool.name, "description": printable(tool.description)}
    if strict:
        try:
            spec["parameters"] = strict_schema(tool.parameters)
        except ValueError:
            strict = False
    spec.setdefault("parameters", copy_schema(tool.parameters))
    spec["strict"] = strict
    return spec


def note(schema: dict[str, object], text: str) -> None:
    """Append ``text`` to the schema's description, in parentheses when there is one."""
    description = schema.get("description")
    if isinstance(description, str) and description:
        schema["description"] = f"{description} ({text})"
    else:
        schema["description"] = text


# --- OpenAI strict mode -----------------------------------------------------------

#: String formats strict mode accepts.
_STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
#: Keywords strict mode accepts (``format`` only with a value above).
_STRICT_KEEP = frozenset(
    {
        *("type", "properties", "required", "additionalProperties", "items", "enum", "const"),
        *("anyOf", "$ref", "$defs", "definitions", "description", "pattern", "format"),
        *("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
        *("minItems", "maxItems"),
    }
)
#: Annotations dropped without a word (``default`` is stated in the description).
ANNOTATIONS = frozenset(
    {
        *("title", "examples", "example", "$schema", "$id", "$comment", "readOnly"),
        *("writeOnly", "deprecated", "discriminator", "contentEncoding", "contentMediaType"),
    }
)
#: Keywords whose meaning strict mode cannot carry at all.
_INEXPRESSIBLE = frozenset(
    {
        *("allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas"),
        *("dependencies", "prefixItems", "additionalItems", "$dynamicRef", "$recursiveRef"),
    }
)
_TYPED = ("type", "$ref", "anyOf", "enum", "const")
_LOOKAROUND = re.compile(r"\(\?<?[=!]")


def strict_schema(parameters: Mapping[str, object]) -> dict[str, object]:
    """OpenAI's strict-mode projection of a tool's parameters schema (a new dict).

    Strict mode constrains decoding to the schema, and accepts a subset of
    JSON Schema. The projection never widens what the model may send beyond
    what the original accepts, except for the constraints it moves to prose:

    * every object gets ``additionalProperties: false`` and lists every
      property in ``required``. An optional property is *not* made nullable:
      ``null`` would fail the tool's own validation unless the original
      already accepts it (``str | None`` does). The model supplies a value
      instead, and a non-null ``default`` is stated in its description
      (``default=3``) so it can pass it;
    * ``oneOf`` becomes ``anyOf``; a ``$ref`` with sibling keywords moves into
      a one-item ``anyOf`` (strict mode refuses siblings of ``$ref``);
    * an object with no properties of its own whose ``oneOf``/``anyOf``
      branches are all objects (each closed by the projection) is that choice:
      it keeps the branches and loses its own ``type`` (strict mode wants the
      type in the branches); at the root, where OpenAI wants one object, it is
      refused;
    * ``$defs``/``definitions`` entries the schema never refers to (directly or
      through other definitions) are dropped;
    * annotations (``title``, ``examples``, ``$schema``, ``discriminator``, …)
      are dropped;
    * constraints strict mode refuses — ``minLength``, ``maxLength``,
      ``uniqueItems``, ``minProperties``, ``patternProperties``, a ``format``
      outside date-time/time/date/duration/email/hostname/ipv4/ipv6/uuid, a
      ``pattern`` with look-around, and any other unknown keyword — are removed
      and stated in the description (``minLength=3``); admission still
      enforces them.

    OpenAI's limits on nesting depth and property count are left to the API.

    Raises:
        ValueError: The schema needs something strict mode cannot say: a
            free-form object (open ``additionalProperties``, a ``dict``
            parameter), a value of any type (``{}``), an untyped array, a choice
            of objects at the root, or ``allOf``/``not``/``if``/``prefixItems``/
            external ``$ref``s. The message names the JSON path.
    """
    defs = _definitions(parameters)
    root = _strict(parameters, "$", defs, root=True)
    used = _used_definitions(parameters, defs)
    for key in ("$defs", "definitions"):
        section = parameters.get(key)
        if isinstance(section, Mapping) and used.intersection((key, name) for name in section):
            root[key] = {
                name: _strict(d, f"$.{key}.{name}", defs)
                for name, d in section.items()
                if (key, name) in used
            }
    return root


_Defs = Mapping[tuple[str, str], object]


def _definitions(parameters: Mapping[str, object]) -> _Defs:
    """Every definition of the schema, by (section, name)."""
    return {
        (key, name): sub
        for key in ("$defs", "definitions")
        if isinstance(section := parameters.get(key), Mapping)
        for name, sub in section.items()
    }


def _definition_of(ref: object, *, inside: bool = False) -> tuple[str, str] | None:
    """The (section, name) ``ref`` points to when it names a definition (``#/$defs/A``),
    or, with ``inside``, a place inside one (``#/$defs/A/properties/b``)."""
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    section, _, name = ref[2:].partition("/")
    name, _, rest = name.partition("/")
    if section not in ("$defs", "definitions") or (rest and not inside):
        return None
    return section, name.replace("~1", "/").replace("~0", "~")


def _used_definitions(parameters: Mapping[str, object], defs: _Defs) -> set[tuple[str, str]]:
    """The definitions the schema refers to, directly or through other definitions; the
    others are pruned (strict mode would project, and may refuse, what nothing uses)."""
    used: set[tuple[str, str]] = set()
    roots = {k: v for k, v in parameters.items() if k not in ("$defs", "definitions")}
    stack: list[object] = [roots]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            target = _definition_of(node.get("$ref"), inside=True)
            if target is not None and target in defs and target not in used:
                used.add(target)
                stack.append(defs[target])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return used


def _strict(node: object, path: str, defs: _Defs, *, root: bool = False) -> dict[str, object]:
    if not isinstance(node, Mapping):
        raise ValueError(f"{path}: strict mode needs a schema object here, not {kind_of(node)}")
    if bad := sorted(node.keys() & _INEXPRESSIBLE):
        raise ValueError(f"{path}: strict mode cannot express {', '.join(bad)}")
    out: dict[str, object] = {}
    notes: list[str] = []
    for key, value in node.items():
        if key == "oneOf":
            key = "anyOf"
        if key == "default":
            if value is not None:  # a null default is what `null` already says
                notes.append(f"default={json_text(value)}")
        elif key in ANNOTATIONS or key in ("$defs", "definitions"):
            continue
        elif key not in _STRICT_KEEP or _refused(key, value):
            notes.append(f"{key}={json_text(value)}")
        else:
            out[key] = value
    if not any(key in out for key in _TYPED):
        raise ValueError(f"{path}: strict mode cannot express a value of any type")
    _strict_children(out, path, defs, root=root)
    ref = out.get("$ref")
    if ref is not None:
        if not (isinstance(ref, str) and ref.startswith("#")) or "anyOf" in out:
            raise ValueError(f"{path}: strict mode cannot express this $ref ({ref!r})")
        if len(out) > 1:  # strict mode refuses siblings of $ref, not of anyOf
            out["anyOf"] = [{"$ref": out.pop("$ref")}]
    if notes:
        note(out, ", ".join(notes))
    return out


def _choice_of_objects(out: dict[str, object], defs: _Defs) -> bool:
    """Whether ``out`` is an object schema with no properties of its own whose (projected)
    ``anyOf`` branches are all objects, each closed by the projection."""
    branches = out.get("anyOf")
    if not isinstance(branches, list) or not branches or out.get("properties"):
        return False
    if out.get("additionalProperties", False) is not False:
        return False
    return all(_is_object(branch, defs) for branch in branches)


def _is_object(branch: object, defs: _Defs) -> bool:
    if not isinstance(branch, Mapping):
        return False
    if branch.get("type") == "object":
        return branch.get("additionalProperties") is False
    inner = branch.get("anyOf")
    if isinstance(inner, list) and len(inner) == 1:  # a `$ref` that had siblings
        branch = inner[0] if isinstance(inner[0], Mapping) else {}
    target = _definition_of(branch.get("$ref"))
    definition = defs.get(target) if target is not None else None
    return isinstance(definition, Mapping) and definition.get("type") == "object"


def _refused(key: str, value: object) -> bool:
    if key == "format":
        return value not in _STRICT_FORMATS
    return key == "pattern" and isinstance(value, str) and _LOOKAROUND.search(value) is not None


def _as_list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _strict_children(out: dict[str, object], path: str, defs: _Defs, *, root: bool) -> None:
    """Project the subschemas of ``out`` in place and close its objects."""
    types = out.get("type")
    type_list = types if isinstance(types, list) else [types]
    if "anyOf" in out:
        out["anyOf"] = [
            _strict(v, f"{path}.anyOf[{i}]", defs) for i, v in enumerate(_as_list(out["anyOf"]))
        ]
    if "array" in type_list:
        if "items" not in out:
            raise ValueError(f"{path}: strict mode needs the type of an array's items")
        out["items"] = _strict(out["items"], f"{path}.items", defs)
    if types == "object" and _choice_of_objects(out, defs):
        # Each branch is a closed object already: the choice is closed as it stands.
        # Strict mode wants the type in the branches, not beside them, and a root that
        # is one object (OpenAI refuses a choice at the root).
        if root:
            raise ValueError(
                f"{path}: strict mode needs one object at the root, not a choice of objects "
                "(anyOf/oneOf)"
            )
        del out["type"]
        out.pop("additionalProperties", None)
        return
    if "object" in type_list:
        properties = out.get("properties")
        extra = out.get("additionalProperties", properties is None and not root)
        if extra is not False:
            raise ValueError(f"{path}: strict mode cannot express a free-form object")
        props = properties if isinstance(properties, Mapping) else {}
        out["properties"] = {k: _strict(v, f"{path}.{k}", defs) for k, v in props.items()}
        out["required"] = list(props)
        out["additionalProperties"] = False
