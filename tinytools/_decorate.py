"""The ``@tool`` decorator: a function in, a complete :class:`Tool` out.

Introspection happens here, once: the docstring, the signature, the schema
and the validator are all built at decoration, and every problem is reported
together in one ``ToolDefinitionError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, Protocol, TypeVar, overload

import attrs

from ._docstrings import parse_docstring
from ._format import Json, ToolFormat
from ._introspect import introspect
from ._schema import build_arguments
from ._spec import Exposure, Tool, check_name
from ._tool_policy import ToolPolicy
from ._validate import StructValidator
from .errors import ToolDefinitionError

__all__ = ["tool"]

P = ParamSpec("P")
R = TypeVar("R")


@attrs.frozen
class _Options:
    """The decorator's options, spelled out once."""

    name: str | None = None
    description: str | None = None
    policy: ToolPolicy | None = None
    exposure: Exposure | str = Exposure.Direct
    format: ToolFormat | None = None


class ToolDecorator(Protocol):
    """What ``tool(...)`` with options returns: apply it to a function."""

    def __call__(self, fn: Callable[P, R], /) -> Tool[P, R]: ...


@attrs.frozen
class _Decorator:
    options: _Options

    def __call__(self, fn: Callable[P, R], /) -> Tool[P, R]:
        return _build(fn, self.options)


@overload
def tool(fn: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    policy: ToolPolicy | None = None,
    exposure: Exposure | str = Exposure.Direct,
    format: ToolFormat | None = None,
) -> ToolDecorator: ...


def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    policy: ToolPolicy | None = None,
    exposure: Exposure | str = Exposure.Direct,
    format: ToolFormat | None = None,
) -> Tool[P, R] | ToolDecorator:
    """Turn a function (sync or async) into a :class:`Tool`, bare or with options.

    ``@tool`` reads the function once: model-visible parameters become the
    JSON schema (from their type hints, in signature order, with descriptions
    from the docstring or ``Annotated``), ``Inject[...]`` parameters are left
    for tinytools to fill, and a compiled validator is built. The result is
    still callable exactly like the function.

    Args:
        fn: The function, when used bare (``@tool``).
        name: The tool name (default: the function's ``__name__``).
        description: What the tool does (default: the docstring's summary and
            body, without its sections); an explicit value wins.
        policy: The declarative safety policy (default: unclassified).
        exposure: How the tool reaches the model (default: direct).
        format: The preferred model-facing rendering (default: native JSON).

    Raises:
        ToolDefinitionError: Every problem with the function at once: variadic
            or unannotated parameters, unsupported types, docstring entries
            for parameters the signature lacks, an invalid name.
    """
    options = _Options(name, description, policy, exposure, format)
    if fn is None:
        return _Decorator(options)
    return _build(fn, options)


def _build(fn: Callable[P, R], options: _Options) -> Tool[P, R]:
    subject = f"@tool {getattr(fn, '__module__', None) or '?'}.{_qualname(fn)}"
    if isinstance(fn, Tool):
        raise ToolDefinitionError(subject, ["it is already a Tool; use attrs.evolve to vary it"])
    if not callable(fn):
        raise ToolDefinitionError(subject, [f"expected a function, got {type(fn).__name__}"])
    doc = parse_docstring(getattr(fn, "__doc__", None))
    signature, problems = introspect(fn, doc.params)
    built = build_arguments(signature.params)
    if isinstance(built, list):
        problems += built
    name = options.name if options.name is not None else getattr(fn, "__name__", None)
    if name is None:
        problems.append("it has no __name__; pass name=... to @tool")
    elif (name_problem := check_name(name)) is not None:
        problems.append(f"{name_problem}; pass name=... to @tool")
    if problems or isinstance(built, list) or name is None:
        raise ToolDefinitionError(subject, problems)
    struct, schema = built
    return Tool(
        name,
        options.description if options.description is not None else doc.description,
        schema,
        fn,
        validator=StructValidator(struct),
        injections=signature.injections,
        policy=options.policy or ToolPolicy(),
        exposure=options.exposure,
        format=options.format or Json(),
    )


def _qualname(fn: object) -> str:
    return str(getattr(fn, "__qualname__", None) or type(fn).__qualname__)
