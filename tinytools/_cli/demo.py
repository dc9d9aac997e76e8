"""The catalogue ``tinytools demo`` shows: the example tools and model-style calls.

The tools are copies of the ones in the repository's ``examples/`` folder,
which is not part of the installed package; ``tests/cli/test_cli.py`` checks that
both define the same tools (names, descriptions, schemas, injections), so
edit them together. Nothing here is imported by ``import tinytools``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Literal, TypedDict

import attrs
import msgspec

from tinytools._declare.decorate import tool
from tinytools._declare.registry import AnyTool, Registry
from tinytools._declare.spec import Tool
from tinytools._inject import Inject, RunContext, State
from tinytools._wire import ToolCall
from tinytools.errors import ModelRetry

__all__ = ["CALLS", "EXAMPLES", "TOOLS", "TURN", "DemoCall"]


# --- examples/weather.py -------------------------------------------------------


@tool
def get_weather(
    city: str,
    units: Literal["celsius", "fahrenheit"] = "celsius",
    days: Annotated[int, msgspec.Meta(ge=1, le=10)] = 1,
) -> dict[str, object]:
    """Get the current weather and a daily forecast for a city.

    Args:
        city: The city, optionally with a country code, such as "Paris, FR".
        units: The temperature units.
        days: How many days of forecast to include, today first.
    """
    # A real tool would call a weather service; this one makes up a mild week.
    highs = [18 + day % 3 for day in range(days)]
    if units == "fahrenheit":
        highs = [round(high * 9 / 5 + 32) for high in highs]
    return {"city": city, "units": units, "daily_highs": highs}


# --- examples/shop.py ----------------------------------------------------------


@dataclass
class LineItem:
    """A product and how many of it."""

    sku: Annotated[
        str, msgspec.Meta(pattern="^[A-Z]{3}-[0-9]{3}$", description='The SKU, such as "TEA-001".')
    ]
    quantity: Annotated[int, msgspec.Meta(ge=1)] = 1


class Address(TypedDict):
    """A delivery address."""

    name: str
    street: str
    city: str
    postcode: str
    country: str


class Shipping(msgspec.Struct, frozen=True):
    """Where to deliver and how fast."""

    address: Address
    speed: Literal["standard", "express"] = "standard"


@dataclass
class Cart:
    """The shopper's cart: the host's state, never shown to the model."""

    items: list[LineItem] = field(default_factory=list)


@tool
def add_to_cart(
    items: Annotated[list[LineItem], "The products to add."],
    cart: Inject[State[Cart]],
) -> str:
    """Add products to the shopper's cart."""
    cart.items.extend(items)
    return f"The cart now holds {sum(item.quantity for item in cart.items)} item(s)."


@tool
async def checkout(
    shipping: Shipping,
    run: Inject[RunContext],
    cart: Inject[State[Cart]],
) -> dict[str, object]:
    """Place an order for everything in the cart.

    Args:
        shipping: Where to deliver the order and how fast.
    """
    if not cart.items:
        raise ModelRetry("The cart is empty; add products with add_to_cart first.")
    order_id = await _submit_order(run.run_id, cart.items, shipping)
    count = sum(item.quantity for item in cart.items)
    cart.items.clear()
    return {"order_id": order_id, "items": count, "speed": shipping.speed}


async def _submit_order(run_id: str, items: list[LineItem], shipping: Shipping) -> str:
    """Stands in for the shop's order service (a real one awaits an HTTP call)."""
    return f"ord_{run_id[:8]}"


# --- examples/external.py ------------------------------------------------------

#: As a GitHub MCP server lists it in its ``tools/list`` response (its ``inputSchema``).
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
)


# --- the catalogue --------------------------------------------------------------

#: The demo's tools, grouped by the file of ``examples/`` each group copies.
EXAMPLES: Mapping[str, tuple[AnyTool, ...]] = {
    "weather.py": (get_weather,),
    "shop.py": (add_to_cart, checkout),
    "external.py": (create_issue, lookup_order),
}

#: Every demo tool, in the order the demo shows them.
TOOLS = Registry(item for group in EXAMPLES.values() for item in group)


@attrs.frozen
class DemoCall:
    """A call as a model would send it, and what it shows.

    Attributes:
        call: The call, its arguments the raw JSON text a provider sends.
        shows: What the call demonstrates, in a few words.
        accepted: Whether ``Tool.validate`` accepts it (the tests hold the
            demo to this, so ``shows`` never describes an outcome that changed).
    """

    call: ToolCall
    shows: str
    accepted: bool


def _calls(*cases: tuple[str, str, str, bool]) -> tuple[DemoCall, ...]:
    return tuple(
        DemoCall(ToolCall(f"call_{n}", name, arguments), shows, accepted)
        for n, (name, arguments, shows, accepted) in enumerate(cases, start=1)
    )


#: Model-style calls, good and bad, in the order the demo shows them.
CALLS = _calls(
    ("get_weather", '{"city": "Paris"}', "defaults fill what the model left out", True),
    (
        "get_weather",
        '{"city": "Oslo", "units": "fahrenheit", "days": 3.0}',
        "every argument given; 3.0 is an integer in JSON Schema",
        True,
    ),
    ("get_weather", '{"city": "Paris", "units": "kelvin"}', "a value outside the Literal", False),
    ("get_weather", '{"city": "Paris", "days": 30}', "a number out of range", False),
    ("get_weather", '{"units": "celsius"}', "a required argument missing", False),
    ("get_weather", '{"city": "Paris",}', "malformed JSON (a trailing comma)", False),
    (
        "add_to_cart",
        '{"items": [{"sku": "TEA-001", "quantity": 2}, {"sku": "MUG-042"}]}',
        "nested objects arrive as dataclasses",
        True,
    ),
    (
        "add_to_cart",
        '{"items": [{"sku": "TEA-001", "quantity": "2"}]}',
        "a string where an integer belongs, deep inside",
        False,
    ),
    (
        "add_to_cart",
        '{"items": [{"sku": "TEA-001"}], "cart": {"items": []}}',
        "an injected parameter cannot be set by the model",
        False,
    ),
    (
        "checkout",
        '{"shipping": {"address": {"name": "Ada Lovelace", "street": "12 St James\'s Square",'
        ' "city": "London", "postcode": "SW1Y 4JH", "country": "GB"}, "speed": "express"}}',
        "a Struct holding a TypedDict",
        True,
    ),
    (
        "checkout",
        '{"shipping": {"address": {"name": "Ada Lovelace", "city": "London"}}}',
        "a TypedDict missing a field",
        False,
    ),
    (
        "create_issue",
        '{"owner": "octo-org", "repo": "hello-world", "title": "Crash on empty input",'
        ' "labels": ["bug"]}',
        "a hand-written schema: the arguments pass unchanged",
        True,
    ),
    (
        "create_issue",
        '{"owner": "octo-org", "repo": "hello-world", "title": "Crash", "labels": ["bug", 2]}',
        "a wrong item type in an array",
        False,
    ),
    (
        "lookup_order",
        '{"order_id": "12345"}',
        'a "pattern", enforced (the whole schema is, by default)',
        False,
    ),
)


#: One model turn, run through ``dispatch_sync``: relaxed JSON repaired, a misspelt
#: tool answered, sync and async tools run in call order, an external tool deferred.
TURN = (
    ToolCall("call_a", "get_weather", '{city: "Paris", days: 2,}'),
    ToolCall("call_b", "get_wether", '{"city": "Rome"}'),
    ToolCall("call_c", "add_to_cart", '{"items": [{"sku": "TEA-001", "quantity": 2}]}'),
    ToolCall(
        "call_d",
        "checkout",
        '{"shipping": {"address": {"name": "Ada Lovelace", "street": "12 St James\'s Square",'
        ' "city": "London", "postcode": "SW1Y 4JH", "country": "GB"}}}',
    ),
    ToolCall("call_e", "create_issue", '{"owner": "octo-org", "repo": "shop", "title": "Hi"}'),
)
