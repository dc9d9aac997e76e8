"""The one data generator for the benchmarks: tool functions, their equivalents, sample arguments.

Two tool shapes are measured everywhere:

* ``small``: :func:`search_docs`, three scalar parameters (one with a default).
* ``big``: :func:`create_order`, twenty parameters, among them a nested object
  (:class:`Address`, twice) and a list of objects (``list[LineItem]``).

The small tool also comes with the inputs of the dispatch benchmarks' error paths:
:data:`SMALL_RELAXED` (relaxed JSON that repair recovers), :data:`SMALL_INVALID` (well-formed
arguments that break the schema) and :func:`failing_search` (the same signature, raises
``ValueError``).

Each shape also has an async twin (:func:`async_twin`): the same name, signature, hints
and docstring, written ``async def``, for the dispatch benchmarks' async-tool variants.

For each shape this module holds the function (what ``@tool`` and the peers' decorators read),
the hand-written msgspec ``Struct`` the floor decodes into (``forbid_unknown_fields=True``, the
same nested dataclasses, so floor and tinytools return the same Python types), a pydantic model
for the peer (built lazily, so importing this module never needs pydantic), and a valid raw JSON
argument string.

:func:`make_functions` writes ``n`` distinct small functions (distinct names, code objects and
docstrings) for the registry benchmark.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import attrs
import msgspec

__all__ = [
    "BIG",
    "SMALL",
    "SMALL_INVALID",
    "SMALL_RELAXED",
    "Address",
    "BigArgs",
    "LineItem",
    "Shape",
    "SmallArgs",
    "async_twin",
    "create_order",
    "failing_search",
    "make_functions",
    "search_docs",
]


# --- the small tool (3 parameters) ----------------------------------------------------------


def search_docs(query: str, limit: int = 10, exact: bool = False) -> list[str]:
    """Search the documentation.

    Args:
        query: Words to look for.
        limit: The most results to return.
        exact: Match the whole phrase only.
    """
    return [query] * min(limit, 1)


class SmallArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The floor for :func:`search_docs`: what msgspec decodes into, with nothing around it."""

    query: str
    limit: int = 10
    exact: bool = False


SMALL_RAW = '{"query": "how to rotate a pdf page", "limit": 5, "exact": false}'
#: :data:`SMALL_RAW` as a model might send it: single quotes and a trailing comma.
SMALL_RELAXED = "{'query': 'how to rotate a pdf page', 'limit': 5, 'exact': false,}"
#: Well-formed JSON that breaks the schema (``limit`` is not an integer).
SMALL_INVALID = '{"query": "how to rotate a pdf page", "limit": "five", "exact": false}'


def failing_search(query: str, limit: int = 10, exact: bool = False) -> list[str]:
    """Search the documentation (always fails, for the error path).

    Args:
        query: Words to look for.
        limit: The most results to return.
        exact: Match the whole phrase only.
    """
    raise ValueError(f"the index is not built yet (query {query!r})")


# --- the big tool (20 parameters, nested) -----------------------------------------------------


@dataclasses.dataclass
class Address:
    """A postal address (a nested object)."""

    street: str
    city: str
    postcode: str
    country: str = "DE"


@dataclasses.dataclass
class LineItem:
    """One order line (the element of a list of objects)."""

    sku: str
    quantity: int
    unit_price: float
    note: str | None = None


Currency = Literal["EUR", "USD", "GBP"]
Channel = Literal["web", "phone", "store"]


def create_order(
    customer_id: int,
    email: str,
    shipping: Address,
    items: list[LineItem],
    currency: Currency,
    billing: Address | None = None,
    coupon: str | None = None,
    gift: bool = False,
    gift_message: str | None = None,
    priority: int = 0,
    tags: list[str] | None = None,
    notes: str | None = None,
    channel: Channel = "web",
    express: bool = False,
    insurance: float = 0.0,
    max_split_shipments: int = 1,
    delivery_window: list[str] | None = None,
    metadata: dict[str, str] | None = None,
    newsletter: bool = False,
    reference: str | None = None,
) -> dict[str, object]:
    """Create an order for a customer.

    Args:
        customer_id: The customer's numeric id.
        email: Where the confirmation goes.
        shipping: The delivery address.
        items: What is ordered, one line per product.
        currency: The currency of every price.
        billing: The invoice address, when it differs from shipping.
        coupon: A discount code.
        gift: Wrap the parcel as a gift.
        gift_message: The card text for a gift.
        priority: Higher ships sooner.
        tags: Free labels for the back office.
        notes: Instructions for the warehouse.
        channel: Where the order was taken.
        express: Ship overnight.
        insurance: Insured value of the parcel.
        max_split_shipments: How many parcels the order may be split into.
        delivery_window: Acceptable delivery dates (ISO 8601).
        metadata: Extra key/value pairs stored with the order.
        newsletter: Subscribe the customer to the newsletter.
        reference: The customer's own reference.
    """
    return {"customer_id": customer_id, "lines": len(items)}


class BigArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The floor for :func:`create_order`: the same fields, the same nested dataclasses."""

    customer_id: int
    email: str
    shipping: Address
    items: list[LineItem]
    currency: Currency
    billing: Address | None = None
    coupon: str | None = None
    gift: bool = False
    gift_message: str | None = None
    priority: int = 0
    tags: list[str] | None = None
    notes: str | None = None
    channel: Channel = "web"
    express: bool = False
    insurance: float = 0.0
    max_split_shipments: int = 1
    delivery_window: list[str] | None = None
    metadata: dict[str, str] | None = None
    newsletter: bool = False
    reference: str | None = None


_BIG_ARGUMENTS: dict[str, object] = {
    "customer_id": 48213,
    "email": "ada@example.org",
    "shipping": {"street": "Hauptstr. 5", "city": "Berlin", "postcode": "10115", "country": "DE"},
    "items": [
        {"sku": "PDF-ROT-01", "quantity": 2, "unit_price": 19.99},
        {"sku": "PDF-MRG-02", "quantity": 1, "unit_price": 4.5, "note": "gift wrap"},
        {"sku": "PDF-SPL-03", "quantity": 3, "unit_price": 7.25},
        {"sku": "PDF-OCR-04", "quantity": 1, "unit_price": 49.0, "note": None},
    ],
    "currency": "EUR",
    "billing": {"street": "Am Markt 1", "city": "Potsdam", "postcode": "14467"},
    "coupon": "SPRING24",
    "gift": True,
    "gift_message": "Happy birthday!",
    "priority": 2,
    "tags": ["vip", "repeat", "b2c"],
    "notes": "Leave at the door.",
    "channel": "phone",
    "express": False,
    "insurance": 120.0,
    "max_split_shipments": 2,
    "delivery_window": ["2024-05-02", "2024-05-03"],
    "metadata": {"campaign": "spring", "source": "newsletter"},
    "newsletter": True,
    "reference": "PO-7731",
}
BIG_RAW = msgspec.json.encode(_BIG_ARGUMENTS).decode()


# --- pydantic equivalents (the validation peer) -------------------------------------------------


def _pydantic_model(name: str, floor: type[msgspec.Struct]) -> Any:
    """A pydantic model with the floor struct's fields, strict and closed like tinytools.

    ``strict=True`` because tinytools coerces nothing (``"5"`` is not an int); ``extra="forbid"``
    because tinytools rejects unknown arguments. The nested dataclasses are shared, so pydantic
    returns the same Python types too.
    """
    import pydantic

    fields: dict[str, Any] = {}
    for field in msgspec.structs.fields(floor):
        default = ... if field.required else field.default
        fields[field.name] = (field.type, default)
    config = pydantic.ConfigDict(strict=True, extra="forbid")
    return pydantic.create_model(name, __config__=config, **fields)


def pydantic_adapter(shape: Shape) -> Any:
    """A ``pydantic.TypeAdapter`` over the shape's model (imports pydantic)."""
    import pydantic

    return pydantic.TypeAdapter(_pydantic_model(f"{shape.name}_args", shape.floor))


# --- async twins (the dispatch benchmarks' async tools) -----------------------------------------


def async_twin(
    fn: Callable[..., object], checkpoint: Callable[[], Awaitable[object]] | None = None
) -> Callable[..., Awaitable[object]]:
    """``fn`` as a coroutine function: same name, signature, hints and docstring.

    Defined here, so its string annotations resolve in this module's namespace as ``fn``'s
    do; every library reads the copied ``__signature__`` and ``__annotations__``. It sets no
    ``__wrapped__``: ``inspect.unwrap`` must not lead back to the synchronous ``fn``, or the
    libraries would call it a sync tool. ``checkpoint`` (such as ``lambda: trio.sleep(0)``)
    is awaited before the call, to make the tool yield to the event loop once.
    """

    async def twin(*args: object, **kwargs: object) -> object:
        if checkpoint is not None:
            await checkpoint()
        return fn(*args, **kwargs)

    twin.__name__ = fn.__name__
    twin.__qualname__ = fn.__qualname__
    twin.__doc__ = fn.__doc__
    twin.__annotations__ = dict(fn.__annotations__)
    twin.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    return twin


# --- the shapes, together -----------------------------------------------------------------------


@attrs.frozen
class Shape:
    """One tool shape: its function, floor struct and a valid raw JSON argument string."""

    name: str
    fn: Callable[..., object]
    floor: type[msgspec.Struct]
    raw: str
    params: int


SMALL = Shape("small", search_docs, SmallArgs, SMALL_RAW, 3)
BIG = Shape("big", create_order, BigArgs, BIG_RAW, 20)


# --- many distinct functions (the registry benchmark) -------------------------------------------

# Four signatures, cycled, so the registry is not 1,000 copies of one shape.
_SIGNATURES = (
    "city: str, days: int = 3",
    "query: str, limit: int = 10, exact: bool = False",
    "user_id: int, fields: list[str] | None = None",
    "path: str, recursive: bool = False, pattern: str = '*'",
)
_TEMPLATE = '''
def {name}({signature}) -> str:
    """Tool number {index}: does one small thing.

    Args:
        {first}: The first argument of tool {index}.
    """
    return "{name}"
'''


def make_functions(n: int, prefix: str = "tool") -> list[Callable[..., object]]:
    """``n`` distinct small functions, each with its own name, code object and docstring.

    They are written as source and executed (not closures sharing one code object), as if
    they had been imported from ``n`` definitions. ``compile`` inherits this module's
    ``from __future__ import annotations``, so their annotations are strings, like those of
    the two sample tools: every function pays for ``typing.get_type_hints``, floor included.
    """
    functions: list[Callable[..., object]] = []
    for index in range(n):
        name = f"{prefix}_{index:05d}"
        signature = _SIGNATURES[index % len(_SIGNATURES)]
        first = signature.split(":", 1)[0]
        namespace: dict[str, object] = {"__name__": __name__}
        source = _TEMPLATE.format(name=name, signature=signature, index=index, first=first)
        exec(compile(source, f"<benchmarks {name}>", "exec"), namespace)
        functions.append(namespace[name])  # type: ignore[arg-type]
    return functions
