"""pydantic v2 models as parameter types, without tinytools ever importing pydantic.

pydantic is optional: a class can only be a ``pydantic.BaseModel`` once pydantic is
imported, so :func:`is_model_class` asks ``sys.modules`` and never imports it. msgspec
treats a model as a custom type: :func:`schema_placeholder` stands for it while msgspec
generates the tool's schema, and :func:`hoist_models` puts each model's own JSON schema
(pydantic's, validation mode) into the tool's ``$defs``. When arguments are decoded,
msgspec hands the model's part, as plain JSON values, to :func:`decode_model`
(msgspec's ``dec_hook``), which lets the model validate it as the JSON it is.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, TypeGuard

import msgspec

from tinytools._text import json_type, preview

__all__ = [
    "ModelRefused",
    "decode_model",
    "encode_model",
    "hoist_models",
    "holds_models",
    "is_model",
    "is_model_class",
    "model_fields",
    "schema_placeholder",
]

#: Marks where a model stands in msgspec's schema until :func:`hoist_models` replaces it.
_PLACE = "x-tinytools-model"


def _base() -> type | None:
    """``pydantic.BaseModel`` when pydantic v2 is imported (None otherwise: never imported
    here, and a v1 ``BaseModel`` has no JSON-mode validation to call)."""
    pydantic = sys.modules.get("pydantic")
    base = getattr(pydantic, "BaseModel", None)
    if isinstance(base, type) and hasattr(base, "model_validate_json"):
        return base
    return None


def is_model_class(tp: object) -> TypeGuard[type[Any]]:
    """Whether ``tp`` is a pydantic v2 model class (imports nothing)."""
    if not isinstance(tp, type):
        return False
    base = _base()
    return base is not None and issubclass(tp, base)


def is_model(value: object) -> bool:
    """Whether ``value`` is a pydantic v2 model instance (imports nothing)."""
    return is_model_class(type(value))


def holds_models(struct: type[msgspec.Struct]) -> bool:
    """Whether a model stands anywhere in ``struct``'s fields (False at once while
    pydantic is not imported)."""
    if _base() is None:
        return False
    import msgspec.inspect as mi  # (only once pydantic is imported)

    stack: list[object] = [mi.type_info(struct)]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, mi.CustomType) and is_model_class(node.cls):
            return True
        inner = [getattr(node, name, None) for name in ("type", "item_type", "value_type")]
        stack.extend(child for child in inner if isinstance(child, mi.Type))
        stack.extend(getattr(node, "types", ()) or getattr(node, "item_types", ()))
        stack.extend(field.type for field in getattr(node, "fields", ()))
    return False


def schema_placeholder(tp: type[Any]) -> dict[str, object]:
    """What msgspec's schema holds where model ``tp`` stands (see :func:`hoist_models`)."""
    return {_PLACE: tp}


def hoist_models(schema: dict[str, object], defs: dict[str, object]) -> None:
    """Replace every model placeholder in ``schema`` and ``defs`` by a ``$ref`` to the
    model's own JSON schema, added to ``defs`` with the definitions it refers to.

    pydantic names the models' definitions (two models of one name from two modules
    apart); one whose name msgspec already gave a definition of its own is renamed.
    """
    places: list[dict[str, object]] = []
    stack: list[object] = [schema, defs]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if _PLACE in node:
                places.append(node)
                continue
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    if not places:
        return
    from pydantic.json_schema import models_json_schema  # (a model exists: pydantic is here)

    models: list[Any] = list(dict.fromkeys(place[_PLACE] for place in places))
    refs, generated = models_json_schema(
        [(model, "validation") for model in models], ref_template="#/$defs/{model}"
    )
    theirs: dict[str, object] = dict(generated.get("$defs", {}))
    renamed = {name: _free(name, defs, theirs) for name in theirs if name in defs}
    for old, new in renamed.items():
        theirs[new] = theirs.pop(old)
    _rename_refs(theirs, renamed)
    for place in places:
        model: Any = place.pop(_PLACE)
        ref = dict(refs[(model, "validation")])
        _rename_refs(ref, renamed)
        place.update(ref)
    defs.update(theirs)


def _free(name: str, *taken: Mapping[str, object]) -> str:
    """``name`` with the first numeric suffix no mapping in ``taken`` holds."""
    n = 2
    while any(f"{name}_{n}" in t for t in taken):
        n += 1
    return f"{name}_{n}"


def _rename_refs(node: object, renamed: Mapping[str, str]) -> None:
    """Point each ``#/$defs/<old>`` reference in ``node`` at its new name, in place."""
    if not renamed:
        return
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.removeprefix("#/$defs/")
                if name in renamed:
                    item["$ref"] = f"#/$defs/{renamed[name]}"
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


class ModelRefused(ValueError):
    """A model refused its part of the arguments: msgspec reports it as a
    ``ValidationError`` at the model's place, with this as its ``__cause__``, whose
    ``path`` says where inside the model (``.items[0].qty``)."""

    def __init__(self, detail: str, path: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.path = path


def decode_model(tp: type[Any], value: object) -> object:
    """msgspec's ``dec_hook``: the model ``tp`` validated from ``value`` (plain JSON values,
    as msgspec decoded them) as the JSON text it came from, in pydantic's JSON mode (a
    strict model takes a date or a UUID as text, as JSON writes them).

    Raises:
        ModelRefused: The model refused ``value``: its first error, in the model's words
            (never the value itself), and where.
    """
    if not is_model_class(tp):  # `object`, which msgspec also hands over: any value
        return value
    pydantic_core = sys.modules["pydantic_core"]  # (pydantic's own core: imported with it)
    try:
        return tp.model_validate_json(msgspec.json.encode(value))
    except pydantic_core.ValidationError as error:
        errors = error.errors(include_url=False, include_context=False)
        first = errors[0] if errors else {"loc": (), "msg": "invalid value", "type": ""}
        kind, detail = str(first["type"]), str(first["msg"])
        if kind.endswith("_type"):  # the JSON type found, never the value
            detail += f", got `{json_type(first.get('input'))}`"
        elif kind.endswith("_parsing"):  # its reason may quote the text (`found `x``)
            detail = detail.partition(", ")[0]
        elif kind in ("json_invalid", "recursion_loop"):  # (valid JSON, read by pydantic)
            detail = "Value nested too deeply to validate; send a flatter value"
        if len(errors) > 1:
            more = len(errors) - 1
            detail += f" (and {more} more error{'s' if more > 1 else ''} in this object)"
        raise ModelRefused(detail, _path(first["loc"])) from None


def _path(loc: object) -> str:
    """pydantic's location of an error as the rest of a ``$``-path (``.items[0]``)."""
    parts = []
    for part in loc if isinstance(loc, tuple) else ():
        if isinstance(part, int):
            parts.append(f"[{part}]")
        elif isinstance(part, str) and part.isidentifier():
            parts.append(f".{part}")
        else:
            parts.append(f"[{preview(part)}]")
    return "".join(parts)


def model_fields(value: object) -> dict[object, object]:
    """A model instance's values by the names JSON gives them (a field's alias, or its
    name), extra fields (``extra="allow"``) included."""
    kind = type(value)
    fields: dict[object, object] = {
        info.alias or name: getattr(value, name)
        for name, info in kind.model_fields.items()  # type: ignore[attr-defined]
    }
    fields.update(getattr(value, "__pydantic_extra__", None) or {})
    return fields


def encode_model(value: object) -> object:
    """msgspec's ``enc_hook``: a model instance as the JSON value its schema describes
    (a model default advertised in the schema)."""
    if is_model(value):
        return value.model_dump(mode="json", by_alias=True)  # type: ignore[attr-defined]
    raise NotImplementedError(type(value))
