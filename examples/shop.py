"""A shopping cart: structured arguments, injected context and state, an async tool.

Shows:

* nested arguments typed as a dataclass (``LineItem``), a ``TypedDict``
  (``Address``) and a ``msgspec.Struct`` (``Shipping``): each becomes a
  ``$defs`` entry of the schema (its docstring the description), and the
  model's JSON arrives converted to those types;
* a parameter described with ``Annotated[T, "description"]`` instead of the
  docstring, and a field constrained with ``msgspec.Meta`` (a pattern, a minimum);
* ``Inject[RunContext]`` and ``Inject[State[Cart]]``: parameters tinytools
  fills at run time, which the model never sees and cannot set;
* an ``async`` tool (it stays async), and ``ModelRetry`` to ask the model to
  correct course.

``tinytools demo`` prints these tools' schemas and validates a few calls to them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal, TypedDict

import msgspec

from tinytools import Inject, ModelRetry, RunContext, State, tool


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
