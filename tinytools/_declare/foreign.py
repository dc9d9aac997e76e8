"""Import tool specs written in foreign schema dialects.

The Berkeley Function Calling Leaderboard (BFCL, "gorilla" format) writes
parameter schemas in a JSON-Schema look-alike: ``"dict"`` for objects,
Python names (``float``, ``tuple``, ``any``) and, in its Java and JavaScript
sets, language names (``String``, ``HashMap``, ``long``…). Several agent
datasets and older function-calling prompts reuse it.
:func:`schema_from_bfcl` maps it to JSON Schema; :func:`tool_from_bfcl`
builds a schema-only :class:`Tool` from one BFCL function definition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .spec import Tool

__all__ = ["BFCL_TYPES", "schema_from_bfcl", "tool_from_bfcl"]

#: BFCL type name → JSON Schema type; ``None`` means "any value" (no ``type``).
BFCL_TYPES: Mapping[str, str | None] = {
    "dict": "object",
    "HashMap": "object",
    "float": "number",
    "double": "number",
    "tuple": "array",
    "Array": "array",
    "ArrayList": "array",
    "long": "integer",
    "String": "string",
    "char": "string",
    "Boolean": "boolean",
    "any": None,
    "": None,
}

_SUBSCHEMA_KEYS = ("items", "additionalProperties")


def schema_from_bfcl(schema: Mapping[str, object]) -> dict[str, object]:
    """Map a BFCL parameter schema to JSON Schema, recursively; a new dict.

    Type names of :data:`BFCL_TYPES` are replaced (``any`` drops ``type``);
    standard JSON Schema type names and every other keyword pass through.
    """
    out: dict[str, object] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str) and value in BFCL_TYPES:
            mapped = BFCL_TYPES[value]
            if mapped is not None:
                out["type"] = mapped
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {
                name: schema_from_bfcl(sub) if isinstance(sub, Mapping) else sub
                for name, sub in value.items()
            }
        elif key in _SUBSCHEMA_KEYS and isinstance(value, Mapping):
            out[key] = schema_from_bfcl(value)
        else:
            out[key] = value
    return out


def _dotless(name: str) -> str:
    return name.replace(".", "_")


def tool_from_bfcl(
    function: Mapping[str, object], *, rename: Callable[[str], str] = _dotless
) -> Tool[..., object]:
    """A schema-only tool from one BFCL function definition.

    Args:
        function: ``{"name", "description", "parameters"}`` as BFCL writes it.
        rename: Maps BFCL's name to a valid tool name; by default dots
            (``math.factorial``) become underscores, as BFCL's own OpenAI
            harness does.

    Raises:
        ToolDefinitionError: The definition cannot be a tool.
    """
    parameters = function.get("parameters")
    return Tool.from_schema(
        rename(str(function.get("name", ""))),
        str(function.get("description", "")),
        schema_from_bfcl(parameters if isinstance(parameters, Mapping) else {}),
    )
