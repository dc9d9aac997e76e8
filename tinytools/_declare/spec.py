"""The tool spec: :class:`Tool`, immutable and complete.

A ``Tool`` holds everything dispatch needs — name, description, the
model-visible schema, the injection plan, the compiled validator, policy,
exposure and format — so nothing downstream looks at the function again.
It holds no execution machinery beyond being callable like the function.
"""

from __future__ import annotations

import enum
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Generic, ParamSpec, TypeVar, get_args, overload

import attrs
import msgspec
from msgspec.structs import asdict as _asdict

from tinytools._inject import Injection
from tinytools._plan import Plan
from tinytools.errors import ToolDefinitionError

from .introspect import injections_of
from .schema_check import DEEP, inline_depth, schema_problems
from .schema_dialect import Dialect, Enforce, dialect_of
from .tool_format import Json, ToolFormat
from .tool_policy import ToolPolicy
from .validate import Arguments, SchemaValidator, StructValidator

__all__ = [
    "DEFAULT_FORMAT",
    "DEFAULT_POLICY",
    "NAME_PATTERN",
    "Exposure",
    "Tool",
    "check_name",
    "is_async_function",
]

#: Shared, immutable defaults (building a policy runs every part's validators).
DEFAULT_POLICY = ToolPolicy()
DEFAULT_FORMAT = Json()

P = ParamSpec("P")
R = TypeVar("R", covariant=True)

#: Tool names every provider accepts without escaping.
NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


def check_name(name: object) -> str | None:
    """Why ``name`` cannot be a tool name, or ``None`` when it can."""
    if not isinstance(name, str):
        return f"a tool name must be a str, not {type(name).__name__}"
    if not name:
        return "a tool name must not be empty"
    if len(name) > 64:
        return f"tool name {name[:20]!r}… is {len(name)} characters; providers accept at most 64"
    if NAME_PATTERN.fullmatch(name) is None:
        return (
            f"tool name {name!r} is not accepted by every provider; use ASCII letters, "
            "digits, `_` and `-`, starting with a letter or `_` (snake_case by convention)"
        )
    return None


def _valid_name(_instance: object, _attribute: object, name: str) -> None:
    problem = check_name(name)
    if problem is not None:
        raise ToolDefinitionError(repr(name), [problem])


class Exposure(enum.Enum):
    """How a tool reaches the model."""

    #: Declared on every request (the default).
    Direct = "direct"
    #: Indexed for the ``tool_search`` / ``tool_call`` bridge; declared once found.
    Deferred = "deferred"
    #: Host-only: never declared, and unknown to the model if it calls it.
    Hidden = "hidden"


def _exposure(value: Exposure | str) -> Exposure:
    return value if isinstance(value, Exposure) else Exposure(value)


def is_async_function(fn: object) -> bool:
    """Whether calling ``fn`` returns an awaitable: a coroutine function (decorators
    unwrapped), or an object whose ``__call__`` is one."""
    if fn is None:
        return False
    if inspect.iscoroutinefunction(inspect.unwrap(fn)):  # type: ignore[arg-type]
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - an object's async __call__
    return inspect.ismethod(call) and inspect.iscoroutinefunction(call)


@attrs.frozen(eq=False, repr=False)
class Tool(Generic[P, R]):
    """An immutable tool spec that is still callable like its function.

    Build one with :func:`tinytools.tool` or :meth:`Tool.from_schema`; derive
    variants with ``attrs.evolve`` (``name``, ``description``, ``policy``,
    ``exposure``, ``format``). The schema and the validator are built
    together, so evolve ``parameters`` only through :meth:`from_schema`.

    Attributes:
        name: The canonical name (``^[A-Za-z_][A-Za-z0-9_-]{0,63}$``).
        description: What the tool does, for the model.
        parameters: The model-visible JSON schema (an object schema); treat
            it as read-only.
        fn: The function, or ``None`` for an external (host-executed) tool.
        policy: The declarative safety policy.
        exposure: How the tool reaches the model.
        format: The preferred model-facing rendering.
        is_async: True when calling ``fn`` returns an awaitable.
    """

    name: str = attrs.field(validator=_valid_name)
    description: str
    parameters: dict[str, object]
    fn: Callable[P, R] | None
    _validator: StructValidator | SchemaValidator = attrs.field(alias="validator")
    injections: tuple[Injection, ...] = ()
    policy: ToolPolicy = attrs.field(factory=ToolPolicy)
    exposure: Exposure = attrs.field(default=Exposure.Direct, converter=_exposure)
    format: ToolFormat = attrs.field(factory=Json)
    # Derived from `fn` (so `attrs.evolve(tool, fn=...)` derives it again), never passed.
    is_async: bool = attrs.field(
        init=False,
        default=attrs.Factory(lambda self: is_async_function(self.fn), takes_self=True),
    )
    # What dispatch needs at run time, planned once (see `_plan`).
    _plan: Plan = attrs.field(
        init=False,
        repr=False,
        default=attrs.Factory(lambda self: _plan(self), takes_self=True),
    )
    # The raw-JSON decoder of a signature-built tool, kept on the tool itself so the
    # hot path of `validate` is one attribute load away (None for schema-built tools).
    _decode: Callable[[str], msgspec.Struct] | None = attrs.field(
        init=False,
        repr=False,
        default=attrs.Factory(
            lambda self: (
                self._validator.decode if isinstance(self._validator, StructValidator) else None
            ),
            takes_self=True,
        ),
    )

    @property
    def injected(self) -> tuple[str, ...]:
        """Names of the parameters tinytools fills at run time (never in the schema)."""
        return tuple(i.name for i in self.injections)

    @property
    def external(self) -> bool:
        """True for a schema-only tool that the host executes."""
        return self.fn is None

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the function directly, exactly as if it were not a tool."""
        if self.fn is None:
            raise TypeError(
                f"tool `{self.name}` is external (schema-only): the host executes it; "
                "give Tool.from_schema a `fn` to make it callable"
            )
        return self.fn(*args, **kwargs)

    def validate(self, arguments: Arguments) -> dict[str, object]:
        """Check a model's arguments and return the keyword arguments for the function.

        Args:
            arguments: The arguments as a mapping, or the raw JSON text a
                provider sent (text of a ``str`` subclass, an SDK's own string
                type, is read as the text it holds, as dispatch reads it).

        Returns:
            A new dict. For a tool built from a signature the values are
            converted to the parameters' types (a dataclass parameter arrives
            as that dataclass, a pydantic model's as a model instance, a ``datetime``
            as a ``datetime``) and omitted
            parameters hold their defaults. For a schema-built tool it is the
            arguments as JSON reads them: unchanged, but for decoded arguments of an
            SDK's own types (a key or value of a ``str`` subclass arrives as a plain
            ``str``, at every depth).

        Raises:
            ToolArgumentsError: Malformed JSON or a schema violation; its
                message, written for the model, names the JSON path, what was
                expected and what was found.
        """
        decode = self._decode
        if decode is not None and type(arguments) is str:
            # The hot path (raw JSON from a provider, a signature-built tool), inlined:
            # one decode into the Struct, one shallow dict. Errors take the full path
            # from the failure itself (the arguments are not decoded again).
            try:
                return _asdict(decode(arguments))
            except (msgspec.MsgspecError, RecursionError, UnicodeError) as error:
                # Only a StructValidator has a decode; it goes on from this failure.
                return self._validator.refused(self.name, arguments, error)  # type: ignore[union-attr]
        try:
            return self._validator.validate(self.name, arguments)
        except TypeError:  # msgspec decodes no str subclass: read it as its text
            if type(arguments) is str or not isinstance(arguments, str):
                raise
            return self._validator.validate(self.name, str.__str__(arguments))

    def __repr__(self) -> str:
        kind = "external" if self.fn is None else ("async" if self.is_async else "sync")
        return f"<Tool {self.name!r} ({kind})>"

    @overload
    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        parameters: Mapping[str, object],
        fn: None = None,
        *,
        enforce: Enforce = "full",
        policy: ToolPolicy | None = None,
        exposure: Exposure | str = Exposure.Direct,
        format: ToolFormat | None = None,
    ) -> Tool[..., object]: ...

    @overload
    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        parameters: Mapping[str, object],
        fn: Callable[..., R],
        *,
        enforce: Enforce = "full",
        policy: ToolPolicy | None = None,
        exposure: Exposure | str = Exposure.Direct,
        format: ToolFormat | None = None,
    ) -> Tool[..., R]: ...

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        parameters: Mapping[str, object],
        fn: Callable[..., R] | None = None,
        *,
        enforce: Enforce = "full",
        policy: ToolPolicy | None = None,
        exposure: Exposure | str = Exposure.Direct,
        format: ToolFormat | None = None,
    ) -> Tool[..., R] | Tool[..., object]:
        """Build a tool from a hand-written, external or imported JSON schema.

        Args:
            name: The tool name.
            description: What the tool does, for the model.
            parameters: An object schema (``{"type": "object", ...}``), passed
                to providers as given.
            fn: Called with the validated arguments as keywords (plus any
                ``Inject[...]`` parameters it declares); ``None`` makes an
                external tool that the host executes.
            enforce: ``"full"`` (default) enforces the whole schema in its dialect
                (its ``$schema``: draft 7 or 2020-12; 2020-12 when it names none,
                as MCP does): bounds, lengths, ``pattern``, ``oneOf``/``anyOf``/
                ``allOf``/``not``, ``if``/``then``/``else``, ``$ref`` (inside the
                schema), dependencies and the formats date-time, date, time,
                email, hostname, ipv4, ipv6, uri, uri-reference, json-pointer
                and uuid (others are annotations), so a model hears of a bad
                argument before a tool or a remote server does. Not enforced
                locally (left to the provider or server): ``unevaluated*``,
                ``$dynamicRef``, ``minContains``/``maxContains``, and a
                ``pattern`` RE2 cannot run (lookaround, backreferences): every
                ``pattern`` and ``patternProperties`` name enforced is matched by
                RE2, in time linear in the model's text, never by Python's
                backtracking ``re``. A ``not``, ``if`` or ``oneOf`` that holds an
                unenforced constraint is skipped whole, so the local check is
                never stricter than the schema. ``"draft7"`` and
                ``"draft2020-12"`` enforce it whole in that dialect whatever
                ``$schema`` says (for a draft-7 schema without one). ``"subset"``
                is the opt-out: only ``type``, ``properties``, ``required``,
                ``additionalProperties``, ``items``, ``enum``, ``const`` and
                ``$ref`` are enforced locally; other keywords go to providers
                only. Whichever is chosen, the schema must be valid JSON Schema
                in its dialect, and is checked when the tool is built; its
                validator is compiled on the tool's first call, once.
            policy: The tool's safety policy (default: unclassified).
            exposure: How the tool reaches the model.
            format: The preferred rendering (default: native JSON).

        Raises:
            ToolDefinitionError: The name, the schema or ``fn`` cannot be used.
        """
        schema, problems = _copy_schema(parameters)
        properties = schema.get("properties")
        described = tuple(properties) if isinstance(properties, Mapping) else ()
        given: object = fn  # the annotation is a promise the caller may not keep
        injections, more = injections_of(given, described) if callable(given) else ((), [])
        problems += more
        if given is not None and not callable(given):
            problems.append(
                f"fn must be the function that runs the tool, or None for an external tool "
                f"the host runs; got {type(fn).__name__}"
            )
        if isinstance(properties, Mapping):
            problems += [
                f"parameter `{i.name}` is injected but the schema lets the model set it; "
                "remove it from the schema's properties"
                for i in injections
                if i.name in properties
            ]
        dialect: Dialect = "draft2020-12"
        if enforce not in get_args(Enforce):
            choices = ", ".join(f'"{e}"' for e in get_args(Enforce))
            problems.append(f"enforce must be one of {choices}, not {enforce!r}")
        elif schema:
            try:
                dialect = dialect_of(schema, enforce)
            except ValueError as exc:
                problems.append(str(exc))
            else:
                problems += schema_problems(schema, dialect)
        if problems:
            raise ToolDefinitionError(f"tool {name!r}", problems)
        validator = SchemaValidator(schema, enforce, frozenset(i.name for i in injections), dialect)
        if inline_depth(schema) >= DEEP:
            validator.compile(name)  # may pass fastjsonschema's nesting: refuse it now if so
        return cls(
            name,
            description,
            schema,
            fn,
            validator=validator,
            injections=injections,
            policy=policy or DEFAULT_POLICY,
            exposure=exposure,
            format=format or DEFAULT_FORMAT,
        )


def _plan(tool: Tool[..., object]) -> Plan:
    plan = Plan(tool.fn, tool.is_async, tool.injections, tool.policy)
    if plan.redactor is None and getattr(tool._validator, "models", False):
        from tinytools._redact import Redactor  # (imports this module)

        # Events and the ledger show a call's arguments as JSON can carry them, and
        # msgspec cannot encode a pydantic model: such a tool's arguments are shown as a
        # redacting tool's are, each typed value as the object of its fields (none secret).
        plan.redactor = Redactor(())
    return plan


def _copy_schema(parameters: Mapping[str, object]) -> tuple[dict[str, object], list[str]]:
    """A private deep copy of ``parameters`` (so later edits cannot reach the tool)."""
    try:
        schema = msgspec.json.decode(msgspec.json.encode(parameters))
    except (TypeError, ValueError) as exc:
        return {}, [f"the parameters schema is not JSON ({exc})"]
    except RecursionError:
        return {}, ["the parameters schema is nested too deeply to copy; flatten it with `$defs`"]
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return {}, [
            'the parameters schema must be an object schema ({"type": "object", ...}); '
            "wrap other values in a property"
        ]
    return schema, []
