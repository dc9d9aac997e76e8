"""Tools from hand-written JSON schemas: ``Tool.from_schema``.

Use it when the schema comes first: a tool an MCP server lists, a schema shared
with another service, or one you would rather write by hand.

* ``create_issue`` is *external*: it has no function. tinytools validates the
  model's arguments against the schema; the host then executes the call (here,
  by forwarding it to the MCP server that listed it).
* ``lookup_order`` has a function, called with the validated arguments as
  keywords. The whole schema is checked locally, ``pattern`` included (draft 7
  here, named by ``enforce="draft7"`` since the schema has no ``$schema``; a
  schema without one is read as 2020-12). ``enforce="subset"`` would check only
  types, properties, required fields, enums and consts, and leave the finer
  keywords to the provider.

``tinytools demo`` prints these tools' schemas and validates a few calls to them.
"""

from __future__ import annotations

from tinytools import AnyTool, Tool

#: As a GitHub MCP server lists it in its ``tools/list`` response (its ``inputSchema``).
#: Without a function there is no return type to infer, hence the annotation.
create_issue: AnyTool = Tool.from_schema(
    "create_issue",
    "Create a new issue in a GitHub repository.",
    {
        "type": "object",
        "properties": {
            "owner": {"type": "string", "description": "Repository owner"},
            "repo": {"type": "string", "description": "Repository name"},
            "title": {"type": "string", "description": "Issue title"},
            "body": {"type": "string", "description": "Issue body"},
            "labels": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Labels to apply to this issue",
            },
        },
        "required": ["owner", "repo", "title"],
        "additionalProperties": False,
    },
)


def _lookup_order(order_id: str) -> dict[str, object]:
    # A real tool would query the order database.
    return {"order_id": order_id, "status": "shipped"}


lookup_order = Tool.from_schema(
    "lookup_order",
    "Look up the status of an order.",
    {
        "type": "object",
        "properties": {
            "order_id": {
                "type": "string",
                "pattern": "^ord_[0-9a-z]{8}$",
                "description": 'The order id, such as "ord_1a2b3c4d".',
            },
        },
        "required": ["order_id"],
        "additionalProperties": False,
    },
    _lookup_order,
    enforce="draft7",
)
