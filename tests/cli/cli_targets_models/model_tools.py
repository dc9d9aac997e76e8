"""A tool whose parameter is a pydantic model (tests/cli/test_cli_inspect.py and
tests/cli/test_cli_check.py): declared, inspected and checked like any other."""

from __future__ import annotations

from pydantic import BaseModel, Field

from tinytools import Registry, ToolPolicy, tool


class Line(BaseModel):
    """One line of an order."""

    sku: str = Field(description="The stock keeping unit, such as A-100.")
    qty: int = Field(ge=1, le=100, description="How many to order.")


class Order(BaseModel):
    """An order for one customer."""

    customer: str = Field(description="The customer's account name.")
    lines: list[Line] = Field(description="What to order, one line per item.")


@tool(policy=ToolPolicy.classified().with_side_effects(network=True))
def place_order(order: Order) -> str:
    """Place an order for a customer and return its confirmation number.

    Args:
        order: The order to place.
    """
    return f"order for {order.customer}: {len(order.lines)} lines"


registry = Registry.of(place_order)
