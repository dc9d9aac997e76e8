"""Deliberately bad tools: each breaks one rule of ``tinytools check`` (cli/test_cli_check.py)."""

from __future__ import annotations

from tinytools import Tool, ToolPolicy, tool

READ_ONLY = ToolPolicy.read_only()


@tool(policy=READ_ONLY)
def undocumented(city: str) -> str:
    return city


@tool(policy=READ_ONLY)
def thin(city: str) -> str:
    """Weather.

    Args:
        city: The city.
    """
    return city


@tool(policy=READ_ONLY)
def bare_parameter(city: str, days: int = 1) -> str:
    """Get the weather forecast for a city.

    Args:
        city: The city, such as "Paris".
    """
    return f"{city} {days}"


@tool
def unclassified(city: str) -> str:
    """Delete every forecast stored for a city.

    Args:
        city: The city, such as "Paris".
    """
    return city


@tool(policy=READ_ONLY)
def free_form(filters: dict[str, str]) -> str:
    """Search the catalogue with free-form filters.

    Args:
        filters: Field name to the value it must have.
    """
    return str(filters)


first_lookup = Tool.from_schema(
    "lookup",
    "Look up an order by its identifier.",
    {"type": "object", "properties": {"id": {"type": "string", "description": "The order id."}}},
    policy=READ_ONLY,
)
second_lookup = Tool.from_schema(
    "lookup",
    "Look up a customer by their identifier.",
    {"type": "object", "properties": {"id": {"type": "string", "description": "The id."}}},
    policy=READ_ONLY,
)
dashed = Tool.from_schema(
    "Free-Form",
    "A tool whose name differs from another only in case and dashes.",
    {"type": "object", "properties": {}},
    policy=READ_ONLY,
)
exclusive = Tool.from_schema(
    "set_volume",
    "Set the speaker volume, strictly above zero.",
    {
        "type": "object",
        "properties": {
            "level": {"type": "number", "exclusiveMinimum": 0, "description": "The level."}
        },
        "required": ["level"],
    },
    policy=READ_ONLY,
)
either = Tool.from_schema(
    "find_person",
    "Find a person by email address or by phone number.",
    {
        "type": "object",
        "properties": {
            "email": {"type": "string", "description": "The email address."},
            "phone": {"type": "string", "description": "The phone number."},
        },
        "anyOf": [{"required": ["email"]}, {"required": ["phone"]}],
    },
    policy=READ_ONLY,
)
