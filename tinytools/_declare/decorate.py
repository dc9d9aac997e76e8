"""The ``@tool`` decorator: a function in, a complete :class:`Tool` out.

Introspection happens here, once: the docstring, the signature, the schema
and the validator are all built at decoration, and every problem is reported
together in one ``ToolDefinitionError``.

The policy shortcuts (``read_only=True``, ``destructive=True``, ``timeout=5``,
...) are applied on top of ``policy=`` through the ``ToolPolicy`` builders.
Only the side-effect declarations (``read_only``, ``destructive``) classify the
policy: they state what the tool does to the world, which is what a reviewer
classifies. The runtime knobs and ``approval_required`` are requests about how
to run it and leave ``classified`` as it was, so ``@tool(timeout=5)`` stays
unclassified and strict enforcement still refuses it. A shortcut left at its
default changes nothing; none of them removes what ``policy=`` states.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, Protocol, TypeVar, overload

import attrs

from tinytools.errors import ToolDefinitionError

from .docstrings import parse_docstring
from .introspect import introspect
from .schema import build_arguments
from .spec import (
    DEFAULT_FORMAT,
    DEFAULT_POLICY,
    Exposure,
    Tool,
    check_name,
    is_async_function,
)
from .tool_format import ToolFormat
from .tool_policy import WRITES, ToolPolicy
from .validate import StructValidator

__all__ = ["tool"]

P = ParamSpec("P")
R = TypeVar("R")


@attrs.frozen(kw_only=True)
class _Options:
    """The decorator's options, spelled out once."""

    name: str | None = None
    description: str | None = None
    policy: ToolPolicy | None = None
    exposure: Exposure | str = Exposure.Direct
    format: ToolFormat | None = None
    read_only: bool = False
    destructive: bool = False
    approval_required: bool = False
    timeout: float | None = None
    max_retries: int | None = None
    idempotent: bool = False
    blocking: bool = False


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
    read_only: bool = False,
    destructive: bool = False,
    approval_required: bool = False,
    timeout: float | None = None,
    max_retries: int | None = None,
    idempotent: bool = False,
    blocking: bool = False,
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
    read_only: bool = False,
    destructive: bool = False,
    approval_required: bool = False,
    timeout: float | None = None,
    max_retries: int | None = None,
    idempotent: bool = False,
    blocking: bool = False,
) -> Tool[P, R] | ToolDecorator:
    """Turn a function (sync or async) into a :class:`Tool`, bare or with options.

    ``@tool`` reads the function once: model-visible parameters become the
    JSON schema (from their type hints, in signature order, with descriptions
    from the docstring or ``Annotated``), ``Inject[...]`` parameters are left
    for tinytools to fill, and a compiled validator is built. The result is
    still callable exactly like the function.

    A parameter typed as a pydantic v2 model is declared with the model's own JSON
    schema and validated by the model (after decoding and repair), so the function
    gets a model instance; pydantic is never imported for other tools.

    A ``msgspec.Meta(pattern=...)`` anywhere in a parameter's type is matched
    with JSON Schema's meaning (ECMA-262, as the schema tells the model: ``$``
    ends the text, ``\\d`` and ``\\w`` are ASCII) by RE2, in time linear in the
    model's text, never by Python's backtracking ``re``.

    Args:
        fn: The function, when used bare (``@tool``).
        name: The tool name (default: the function's ``__name__``).
        description: What the tool does (default: the docstring's summary and
            body, without its sections); an explicit value wins.
        policy: The declarative safety policy (default: unclassified).
        exposure: How the tool reaches the model (default: direct).
        format: The preferred model-facing rendering (default: native JSON).
        read_only: The tool only reads: ``ToolPolicy.read_only()`` on top of
            ``policy`` (classified, idempotent, safe to replay).
        destructive: The tool may destroy data (classifies the policy).
        approval_required: A human approves each call before it runs.
        timeout: Seconds one attempt may take.
        max_retries: Extra attempts after a ``RetryableError``.
        idempotent: Running the tool twice has the effect of running it once.
            It does not classify the policy, and ``tinytools.ledger.reconcile``
            re-runs only tools whose policy is classified.
        blocking: The synchronous function blocks; dispatch runs it in a
            worker thread.

    Raises:
        ToolDefinitionError: Every problem with the function at once: variadic
            or unannotated parameters, unsupported types, docstring entries
            for parameters the signature lacks, an invalid name, shortcuts
            that contradict each other or ``policy``, a ``pattern`` RE2 cannot
            run (lookaround, backreferences) or one inside a recursive or
            generic class, a union of a pydantic model with anything but None.
    """
    options = _Options(
        name=name,
        description=description,
        policy=policy,
        exposure=exposure,
        format=format,
        read_only=read_only,
        destructive=destructive,
        approval_required=approval_required,
        timeout=timeout,
        max_retries=max_retries,
        idempotent=idempotent,
        blocking=blocking,
    )
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
    is_async = is_async_function(fn)
    policy = _policy(options, is_async=is_async)
    if isinstance(policy, list):
        problems += policy
    name = options.name if options.name is not None else getattr(fn, "__name__", None)
    if name is None:
        problems.append("it has no __name__; pass name=... to @tool")
    elif (name_problem := check_name(name)) is not None:
        problems.append(f"{name_problem}; pass name=... to @tool")
    if problems or isinstance(built, list) or isinstance(policy, list) or name is None:
        raise ToolDefinitionError(subject, problems)
    struct, schema, decoding = built
    return Tool(
        name,
        options.description if options.description is not None else doc.description,
        schema,
        fn,
        validator=StructValidator(struct, decoding),
        injections=signature.injections,
        policy=policy,
        exposure=options.exposure,
        format=options.format or DEFAULT_FORMAT,
    )


def _policy(options: _Options, *, is_async: bool) -> ToolPolicy | list[str]:
    """``options.policy`` with the shortcuts applied, or what contradicts what."""
    policy = options.policy or DEFAULT_POLICY
    effects = policy.side_effects
    problems = []
    if options.read_only:
        if options.destructive:
            problems.append("read_only=True contradicts destructive=True")
        if clashes := [kind for kind in WRITES if getattr(effects, kind)]:
            problems.append(f"read_only=True contradicts policy= declaring {', '.join(clashes)}")
    elif options.destructive and effects.read_only:
        problems.append("destructive=True contradicts policy= declaring read_only")
    if options.blocking and is_async:
        problems.append("blocking=True is for synchronous functions; an async one never blocks")
    runtime = {
        key: value
        for key, value, given in (
            ("timeout", options.timeout, options.timeout is not None),
            ("max_retries", options.max_retries, options.max_retries is not None),
            ("idempotent", True, options.idempotent or options.read_only),
            ("replay", "safe", options.read_only),
            ("blocking", True, options.blocking),
        )
        if given
    }
    try:
        policy = policy.with_runtime(**runtime)
    except (TypeError, ValueError) as error:
        problems.append(str(error))
    if problems:
        return problems
    if options.read_only:
        policy = attrs.evolve(policy, classified=True).with_side_effects(read_only=True)
    if options.destructive:
        policy = attrs.evolve(policy, classified=True).with_side_effects(destructive=True)
    if options.approval_required:
        policy = policy.with_access(approval_required=True)
    return policy


def _qualname(fn: object) -> str:
    return str(getattr(fn, "__qualname__", None) or type(fn).__qualname__)
