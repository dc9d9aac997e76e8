"""``valid_arguments`` and ``invalid_arguments``: argument dicts for one tool."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import cast

from hypothesis import reject
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import SearchStrategy

from tinytools._declare.schema_dialect import local_schema
from tinytools._declare.spec import Tool
from tinytools._declare.validate import SchemaValidator, StructValidator
from tinytools.errors import ToolArgumentsError

from ._conjunction import ANNOTATIONS
from ._from_schema import Resolver, values_from_schema
from ._from_types import arguments_from_struct
from ._violations import Enforced, violations

__all__ = ["invalid_arguments", "valid_arguments"]


def _check_tool(tool: object, caller: str) -> Tool[..., object]:
    if not isinstance(tool, Tool):
        raise InvalidArgument(f"{caller}() takes a tinytools Tool, not {type(tool).__name__}")
    impossible = (
        f"no argument dict satisfies the schema of tool {tool.name!r}, so a model could "
        "never call it validly: a place the arguments must fill asks for the impossible "
        "(an empty `enum`, a `minimum` above its `maximum`, no multiple of `multipleOf` "
        "between the bounds, a `minLength` above its `maxLength` or lengths no text in its "
        "`format` has, `minItems` above `maxItems`, or a `required` key that no property "
        "lists and `additionalProperties: false` forbids); fix the schema, or the "
        "parameter's constraints"
    )
    try:
        drawn = _valid(tool)
        drawn.validate()  # (a bound past the other, from a parameter's type)
    except InvalidArgument as error:
        raise InvalidArgument(f"{impossible} ({error})") from None
    if drawn.is_empty:
        raise InvalidArgument(impossible)
    return tool


def valid_arguments(tool: Tool[..., object]) -> SearchStrategy[dict[str, object]]:
    """Argument dicts, as a model would send them, that ``tool.validate`` accepts.

    For a ``@tool`` tool they are drawn from the parameters' types, constraints
    included (``Annotated[int, msgspec.Meta(ge=0)]``, lengths, patterns,
    enums, literals, nested dataclasses, TypedDicts and Structs, pydantic
    models from their own JSON schema (kept where the model accepts them), optional
    parameters sometimes left out), as the JSON a model sends: a ``datetime``
    as ISO text, ``bytes`` as base64, a ``dict[int, str]``'s keys as text.
    For a ``Tool.from_schema`` tool they are drawn from its JSON schema, in
    every ``format`` ``tool.validate`` enforces
    (``uri``, ``hostname``, ``date-time``, ...) at the lengths and with the
    ``pattern`` the schema adds, and an ``allOf`` as the one schema its parts
    make together; where the schema uses keywords beyond those tool schemas
    commonly use (``oneOf``, ``not``, ``patternProperties``, two patterns
    in one ``allOf``, ...), only the drawn values ``tool.validate`` accepts are
    kept, and hypothesis reports a health check when they are too rare. Values
    favour edge cases: empty strings, any Unicode, the bounds of each
    constraint, ``None`` where allowed. Undeclared extra keys are never sent,
    unless ``additionalProperties`` gives them a schema.

    Raises:
        hypothesis.errors.InvalidArgument: ``tool`` is not a ``Tool``, a
            parameter type has no JSON form, or no argument dict satisfies the
            schema (the message lists what can cause that).

    Example:
        >>> from hypothesis import given
        >>> from tinytools import tool
        >>> @tool
        ... def forecast(city: str, days: int = 1) -> str:
        ...     \"\"\"Forecast the weather.\"\"\"
        ...     return f"{city}: sunny for {days} days"
        >>> @given(valid_arguments(forecast))
        ... def test_validates(arguments):
        ...     assert forecast.validate(arguments)["city"] == arguments["city"]
        >>> test_validates()
    """
    return _valid(_check_tool(tool, "valid_arguments"))


def invalid_arguments(tool: Tool[..., object]) -> SearchStrategy[dict[str, object]]:
    """Argument dicts that break ``tool``'s schema at exactly one place.

    Each is a valid dict (from :func:`valid_arguments`) broken once, where the
    schema is definite: a value of a type the place does not admit, a value
    outside an ``enum`` or ``const``, a number past a bound or a string or
    array past a length (where the tool's validator enforces them: every
    ``@tool`` tool, and schema-built ones unless ``enforce="subset"``), a
    string in no ``format`` where the schema names one (schema-built tools,
    unless ``enforce="subset"``), a required key left out, a key the object
    does not allow, or an injected parameter set by the model. ``tool.validate`` rejects each with a
    ``ToolArgumentsError``: what it does not enforce is never broken (a constraint
    beside a ``pattern`` RE2 cannot run in ``patternProperties`` or a ``oneOf``, which
    it drops), and a key ``patternProperties`` takes is never sent as one the object
    does not allow. Shrinking leads to the smallest valid dict and the first break in
    schema order.

    Raises:
        hypothesis.errors.InvalidArgument: ``tool`` is not a ``Tool``, its
            schema accepts every JSON object (there is nothing to break), or it
            constrains the arguments only where no break is certain (the message
            names the keywords).

    Example:
        >>> import pytest
        >>> from hypothesis import given
        >>> from tinytools import ToolArgumentsError, tool
        >>> @tool
        ... def forecast(city: str, days: int = 1) -> str:
        ...     \"\"\"Forecast the weather.\"\"\"
        ...     return f"{city}: sunny for {days} days"
        >>> @given(invalid_arguments(forecast))
        ... def test_rejected(arguments):
        ...     with pytest.raises(ToolArgumentsError):
        ...         forecast.validate(arguments)
        >>> test_rejected()
    """
    return _invalid(_check_tool(tool, "invalid_arguments"))


@functools.lru_cache(maxsize=1024)
def _valid(item: Tool[..., object]) -> SearchStrategy[dict[str, object]]:
    validator = item._validator
    if isinstance(validator, StructValidator):
        return arguments_from_struct(validator._struct)
    # Every draw is checked by the tool itself: drawing is exact only keyword by keyword
    # (an `anyOf` of `required` beside `properties` drew `{}`; Python's `\d` in a pattern
    # drew digits RE2's does not match), and a valid argument is what the tool accepts.
    drawn = values_from_schema(item.parameters).filter(lambda v: isinstance(v, dict))
    return drawn.filter(lambda value: _accepts(item, value))  # type: ignore[return-value]


def _accepts(item: Tool[..., object], value: object) -> bool:
    if not isinstance(value, Mapping):
        return False
    try:
        item.validate(value)
    except ToolArgumentsError:
        return False
    return True


@functools.lru_cache(maxsize=1024)
def _invalid(item: Tool[..., object]) -> SearchStrategy[dict[str, object]]:
    validator = item._validator
    struct = isinstance(validator, StructValidator)
    full = not struct and getattr(validator, "enforce", "subset") != "subset"
    enforced = Enforced(bounds=struct or full, formats=full)
    injected = item.injected
    schema: Mapping[str, object] = item.parameters
    if isinstance(validator, SchemaValidator):
        # Broken where the tool's validator looks, not where the schema only says: a
        # constraint it drops (a pattern RE2 cannot run, with the `additionalProperties`
        # beside it; a `oneOf` holding one) breaks nothing.
        local = local_schema(schema, validator.enforce, validator.dialect)
        schema = cast("Mapping[str, object]", local)
    resolve = Resolver(schema)
    top = resolve(schema)  # (its `allOf` merged: `required` may sit in one)
    if not (injected or top.get("required") or violations(schema, {}, enforced=enforced)):
        raise InvalidArgument(_unbreakable(item.name, item.parameters))

    @st.composite
    def broken(draw: st.DrawFn) -> dict[str, object]:
        value = draw(_valid(item))
        ways = violations(schema, value, enforced=enforced, injected=injected, resolve=resolve)
        if not ways:
            reject()
        way = draw(st.sampled_from(ways))
        result: dict[str, object] = way.apply(value)
        return result

    return broken()


def _unbreakable(name: str, schema: Mapping[str, object]) -> str:
    """Why no argument dict can be broken at one certain place, truthfully: a schema
    with no constraint at all accepts every object; any other only breaks through
    keywords whose break depends on a branch or a combination."""
    resolve = Resolver(schema)
    top = resolve(schema)
    used = set(top) - ANNOTATIONS - {"type", "properties"}
    if top.get("additionalProperties") in (None, True, {}):  # extra keys allowed
        used.discard("additionalProperties")
    properties = top.get("properties")
    if isinstance(properties, Mapping) and any(
        sub is False or set(resolve(sub)) - ANNOTATIONS for sub in properties.values()
    ):
        used.add("properties")
    if not used:
        return (
            f"tool {name!r} accepts every JSON object, so no argument dict breaks its "
            "schema; test it with valid_arguments() and malformed text instead"
        )
    named = ", ".join(f"`{keyword}`" for keyword in sorted(used))
    return (
        f"invalid_arguments() cannot break the schema of tool {name!r} at one certain "
        f"place: it constrains the arguments only through {named}, where what breaks "
        "them depends on a branch or a combination (a union, `not`, a count of keys, "
        "...) or is not enforced by tool.validate (a pattern RE2 cannot run, with the "
        "`additionalProperties` beside it); test its refusals with hand-written arguments"
    )
