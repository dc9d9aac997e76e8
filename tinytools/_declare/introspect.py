"""Read a function once: its model-visible parameters and its injected ones.

:func:`introspect` walks the signature and the resolved type hints and sorts
every parameter into a :class:`Param` (the model chooses it) or an
``Injection`` (tinytools fills it), at any position. Problems are collected,
not raised, so the decorator reports every one of them together.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Collection, Mapping
from typing import Annotated

import attrs
import msgspec

from tinytools._inject import Injection, builtin_source, is_injected, marker_of, plan_injection

__all__ = ["REQUIRED", "Param", "Signature", "injections_of", "introspect"]

#: The default of a parameter the model must always give.
REQUIRED: object = inspect.Parameter.empty


@attrs.frozen
class Param:
    """One model-visible parameter.

    Attributes:
        name: The parameter (and JSON property) name.
        annotation: The type msgspec validates and converts to, with the
            user's ``msgspec.Meta`` constraints (other ``Annotated`` metadata
            removed).
        default: The default value, or :data:`REQUIRED`.
        description: Text for the property from ``Annotated[T, "text"]`` or
            the docstring, when no ``msgspec.Meta`` gives one.
    """

    name: str
    annotation: object
    default: object = REQUIRED
    description: str | None = None

    @property
    def required(self) -> bool:
        """True when the model must give this parameter."""
        return self.default is REQUIRED


@attrs.frozen
class Signature:
    """A function's parameters, sorted once at decoration."""

    params: tuple[Param, ...]
    injections: tuple[Injection, ...]


def _split_annotated(tp: object) -> tuple[object, tuple[object, ...]]:
    if typing.get_origin(tp) is Annotated:
        return tp.__origin__, tuple(tp.__metadata__)  # type: ignore[attr-defined]
    return tp, ()


def _described(
    base: object, metadata: tuple[object, ...], doc: str | None
) -> tuple[object, str | None]:
    """The annotation msgspec sees, and a description for the schema to add.

    An explicit ``msgspec.Meta(description=...)`` wins over ``Annotated[T, "text"]``,
    which wins over the docstring. Only ``msgspec.Meta`` metadata stays on the
    annotation: wrapping every parameter in ``Annotated`` just to carry a
    description would make msgspec's schema generation markedly slower.
    """
    metas = [m for m in metadata if isinstance(m, msgspec.Meta)]
    if any(m.description is not None for m in metas):
        description = None
    else:
        description = next((m for m in metadata if isinstance(m, str)), doc)
    if not metas:
        return base, description
    args = (base, *metas)
    return Annotated[args], description


def _resolve_hints(fn: Callable[..., object]) -> tuple[dict[str, object], dict[str, str]]:
    """The resolved hints, and a problem for each hint that cannot be resolved (by name).

    An unresolved hint reads as ``_UNRESOLVED``.
    """
    try:
        return typing.get_type_hints(fn, include_extras=True), {}
    except Exception:  # NameError, TypeError, SyntaxError from string annotations
        pass
    hints: dict[str, object] = {}
    problems: dict[str, str] = {}
    raw = getattr(fn, "__annotations__", {})
    for name, annotation in raw.items():
        if name == "return":
            continue
        shim = types.FunctionType(_shim.__code__, getattr(fn, "__globals__", {}))
        shim.__annotations__ = {name: annotation}
        try:
            hints.update(typing.get_type_hints(shim, include_extras=True))
        except Exception as exc:
            problems[name] = (
                f"parameter `{name}`: its type hint {annotation!r} cannot be resolved "
                f"({type(exc).__name__}: {exc}); define the type at module level, where the "
                "function's globals can see it"
            )
            hints[name] = _UNRESOLVED
    return hints, problems


def _shim() -> None:
    """A code object to hang one annotation on, so each hint resolves on its own."""


_UNRESOLVED = object()


_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _check_kind(parameter: inspect.Parameter) -> str | None:
    if parameter.kind in _VARIADIC:
        stars = "*" if parameter.kind is inspect.Parameter.VAR_POSITIONAL else "**"
        return (
            f"parameter `{stars}{parameter.name}`: variadic parameters cannot be described "
            "to a model; declare each argument as a named parameter"
        )
    if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
        return (
            f"parameter `{parameter.name}` is positional-only; tools are called with "
            "keyword arguments, so remove the `/` from the signature"
        )
    return None


def introspect(fn: Callable[..., object], docs: Mapping[str, str]) -> tuple[Signature, list[str]]:
    """Sort ``fn``'s parameters into model-visible and injected ones.

    Args:
        fn: The function to read.
        docs: Per-parameter descriptions from the docstring.

    Returns:
        The signature, and every problem found (empty when the function can
        be a tool).
    """
    problems: list[str] = []
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        return Signature((), ()), [f"its signature cannot be read ({exc})"]
    hints, unresolved = _resolve_hints(fn)
    problems.extend(unresolved.values())
    params: list[Param] = []
    injections: list[Injection] = []
    for parameter in signature.parameters.values():
        problem = _check_kind(parameter)
        if problem is None and parameter.name not in hints:
            problem = (
                f"parameter `{parameter.name}` has no type annotation; annotate it so its "
                "schema can be generated (or `Inject[...]` it)"
            )
        if problem is not None:
            problems.append(problem)
            continue
        if hints[parameter.name] is _UNRESOLVED:
            continue
        item = _classify(parameter, hints[parameter.name], docs.get(parameter.name))
        if isinstance(item, str):
            problems.append(item)
        elif isinstance(item, Param):
            params.append(item)
        else:
            injections.append(item)
    unknown = [name for name in docs if name not in signature.parameters]
    if unknown:
        names = ", ".join(f"`{n}`" for n in unknown)
        problems.append(
            f"the docstring documents {names}, which the signature lacks; fix the "
            "docstring or the parameter names"
        )
    return Signature(tuple(params), tuple(injections)), problems


def _classify(
    parameter: inspect.Parameter, hint: object, doc: str | None
) -> Param | Injection | str:
    base, metadata = _split_annotated(hint)
    has_default = parameter.default is not inspect.Parameter.empty
    if is_injected(metadata):
        return plan_injection(
            parameter.name, base, metadata, default=parameter.default, has_default=has_default
        )
    if marker_of(metadata) is not None or builtin_source(base) is not None:
        return (
            f"parameter `{parameter.name}` has an injectable type but no `Inject[...]`; "
            f"annotate it as `Inject[...]` so the model never sees it"
        )
    annotation, description = _described(base, metadata, doc)
    return Param(parameter.name, annotation, parameter.default, description)


def injections_of(
    fn: Callable[..., object], described: Collection[str] = ()
) -> tuple[tuple[Injection, ...], list[str]]:
    """The ``Inject[...]`` parameters of a schema-built tool's function.

    Its other parameters come from the schema, so their hints are not needed: one
    that cannot be resolved is a problem only for a parameter the schema does not
    describe (``described``), which might be an injection nobody can read.
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return (), []
    hints, unresolved = _resolve_hints(fn)
    problems = [problem for name, problem in unresolved.items() if name not in described]
    injections: list[Injection] = []
    for parameter in signature.parameters.values():
        base, metadata = _split_annotated(hints.get(parameter.name))
        if not is_injected(metadata):
            continue
        has_default = parameter.default is not inspect.Parameter.empty
        item = plan_injection(
            parameter.name, base, metadata, default=parameter.default, has_default=has_default
        )
        if isinstance(item, str):
            problems.append(item)
        else:
            injections.append(item)
    return tuple(injections), problems
