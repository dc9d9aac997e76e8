"""The JSON Schema of a list of calls, for ``response_format`` (``openai_chat.required_schema``)."""

from __future__ import annotations

import copy
from collections.abc import Mapping

from ._tools import Tools, exposed_tools

__all__ = ["required_schema"]


def required_schema(tools: Tools) -> dict[str, object]:
    """The JSON Schema of a non-empty list of calls of ``tools``.

    For OpenAI-compatible servers that take a JSON Schema in ``response_format``
    but no ``tool_choice="required"``: the reply is then a JSON array of
    ``{"name": …, "arguments": {…}}`` objects, each naming one of ``tools``
    (``Direct`` ones) with arguments its schema accepts. Read it back with
    ``tinytools.formats.llama_json.parse(reply, tools)``, which reads such
    an array, and dispatch the calls as usual.

    Each tool's schema sits in ``$defs`` under the tool's name (its own
    ``$defs`` beside it, as ``<tool>__<name>``, its local ``$ref`` s rewritten),
    so one document holds every tool whatever its references.

    Raises:
        ValueError: No tool is offered (a list of calls of no tool has no member).
    """
    offered = exposed_tools(tools)
    if not offered:
        raise ValueError("required_schema needs at least one tool to call; none is offered")
    defs: dict[str, object] = {}
    calls: list[object] = []
    for tool in offered:
        params = copy.deepcopy(dict(tool.parameters))
        homes = {tool.name: params}
        for key in ("$defs", "definitions"):
            found = params.pop(key, None)
            if isinstance(found, Mapping):
                homes.update((f"{tool.name}__{name}", sub) for name, sub in found.items())
        for home, sub in homes.items():
            if home in defs:
                raise ValueError(
                    f"two schemas would share the name {home!r} in $defs (a tool named "
                    "like another tool's definition); rename one of the tools"
                )
            defs[home] = _rehomed(sub, tool.name)
        described = {"description": tool.description} if tool.description else {}
        calls.append(
            {
                **described,
                "type": "object",
                "properties": {
                    "name": {"type": "string", "enum": [tool.name]},
                    "arguments": {"$ref": f"#/$defs/{_escaped(tool.name)}"},
                },
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    return {
        "type": "array",
        "items": {"anyOf": calls},
        "minItems": 1,
        "$defs": defs,
    }


def _escaped(name: str) -> str:
    """A ``$defs`` key as a JSON Pointer segment."""
    return name.replace("~", "~0").replace("/", "~1")


def _rehomed(schema: object, tool: str) -> object:
    """``schema`` with its local references pointing where :func:`required_schema` put
    their targets (no recursion: nesting is walked with a stack)."""
    root = {"": schema}
    todo: list[object] = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#"):
                node["$ref"] = _target(ref, tool)
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return root[""]


def _target(ref: str, tool: str) -> str:
    for key in ("/$defs/", "/definitions/"):
        if ref.startswith("#" + key):
            rest = ref[len(key) + 1 :]
            name, slash, deeper = rest.partition("/")
            return f"#/$defs/{_escaped(tool)}__{name}{slash}{deeper}"
    return f"#/$defs/{_escaped(tool)}{ref[1:]}"
