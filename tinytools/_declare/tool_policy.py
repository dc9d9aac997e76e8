"""`ToolPolicy`: what a tool declares about its own safety, as plain data.

A policy states facts (the tool writes files, needs network, may be replayed
after a crash) and requests (run it sandboxed, ask a human first). It does
nothing by itself: ``ToolPolicyMiddleware`` enforces it, and the effect ledger
reads its replay and idempotency settings.

The default, ``ToolPolicy()``, is *unclassified*: the tool has said nothing
about itself. Strict enforcement treats that as unknown, never as harmless, so
it fails closed on every tool nobody has reviewed. ``ToolPolicy.read_only()``
and ``ToolPolicy.classified()`` are explicit statements; the ``with_*``
builders refine a policy through :func:`attrs.evolve` and never classify it.

``msgspec.json.encode(policy)`` gives JSON that
``msgspec.json.decode(data, type=ToolPolicy)`` turns back into an equal policy.
The one part that is code, not data, the runtime's idempotency key function,
is left out of both the encoding and equality: a decoded policy has none.
"""

# No `from __future__ import annotations` here: msgspec resolves string annotations
# in `sys.modules[cls.__module__]`, and `tinytools/__init__` rewrites `__module__` to
# `tinytools`, where names such as `ToolRuntime` or `Callable` do not exist.

import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, get_args, overload

import attrs

if TYPE_CHECKING:
    from attrs import Attribute

__all__ = [
    "BYTES",
    "WRITES",
    "ReplayMode",
    "SECONDS",
    "SandboxMode",
    "ToolAccess",
    "ToolPolicy",
    "ToolRuntime",
    "ToolSideEffects",
    "WorkspaceAccess",
    "reads_only",
]

#: Whether the tool runs sandboxed: as the run decides, never, or only in a sandbox.
SandboxMode: TypeAlias = Literal["inherit", "disabled", "required"]
#: Whether a call interrupted by a crash may simply run again on resume.
ReplayMode: TypeAlias = Literal["never", "safe"]
#: How much of the host's workspace the tool may touch.
WorkspaceAccess: TypeAlias = Literal["none", "scoped", "any"]

_KeyFunction: TypeAlias = Callable[[Mapping[str, object]], str]
_Part = TypeVar("_Part", "ToolSideEffects", "ToolRuntime", "ToolAccess")

_Validator: TypeAlias = Callable[[object, "Attribute[Any]", Any], None]


def _check(
    ok: Callable[[Any], bool], expected: str, error: type[Exception] = ValueError
) -> _Validator:
    """An attrs validator whose message names the field and says what to pass."""

    def check(_: object, attribute: "Attribute[Any]", value: Any) -> None:
        if not ok(value):
            raise error(f"{attribute.alias} must be {expected}; got {value!r}")

    return check


def _one_of(choices: object) -> _Validator:
    return _check(
        get_args(choices).__contains__, f"one of {', '.join(map(repr, get_args(choices)))}"
    )


def _instance_of(cls: type) -> _Validator:
    return _check(lambda value: isinstance(value, cls), f"a {cls.__name__}", TypeError)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: The most seconds a limit may be: a clock reading plus more is no float (an int past
#: it raised OverflowError in dispatch).
MOST_SECONDS = sys.float_info.max


def _is_seconds(value: object) -> bool:
    if value is None:
        return True
    # Infinity and NaN are refused because JSON has neither: both would come back as null.
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= MOST_SECONDS
    )


# A name, or "$" then one or more ".segment": `password`, `$.auth.token`.
_REDACT_ENTRY = re.compile(r"[^.$\[\]\s]+|\$(?:\.[^.$\[\]\s]+)+")

_BOOL = _check(lambda value: isinstance(value, bool), "True or False", TypeError)
_STRINGS = _check(
    lambda value: isinstance(value, tuple) and all(isinstance(item, str) for item in value),
    "a sequence of strings such as ('a', 'b')",
    TypeError,
)
#: attrs validators shared with RunPolicy and ToolPolicyMiddleware.
SECONDS = _check(_is_seconds, "a finite number of seconds > 0, or None for no limit")
_RETRIES = _check(lambda n: _is_int(n) and n >= 0, "an int >= 0 (0 means no retries)")
BYTES = _check(lambda n: n is None or (_is_int(n) and n > 0), "an int > 0, or None for no limit")
_KEY = _check(lambda f: f is None or callable(f), "a function of the arguments, or None", TypeError)
_REDACTABLE = _check(
    lambda entries: all(map(_REDACT_ENTRY.fullmatch, entries)),
    "argument names such as 'password' or '$'-rooted paths such as '$.auth.token'",
)


def _flag() -> bool:
    """A boolean field, False unless stated."""
    return attrs.field(default=False, validator=_BOOL)


def _as_tuple(value: Iterable[str]) -> Iterable[str]:
    # A lone string is left whole for `_STRINGS` to reject: tuple("/srv") would
    # silently become ('/', 's', 'r', 'v').
    return value if isinstance(value, str | tuple) else tuple(value)


def _as_seconds(value: float | None) -> float | None:
    # Stored as a float, as JSON decoding gives it back: 10**30 != float(10**30).
    # (an int past float range is left for the validator to refuse)
    if type(value) is int and abs(value) <= MOST_SECONDS:  # type: ignore[unreachable]
        return float(value)  # type: ignore[unreachable]
    return value


def _evolve(part: _Part, changes: Mapping[str, Any]) -> _Part:
    """:func:`attrs.evolve`, but an unknown field is a TypeError that lists the valid ones."""
    valid = {field.alias for field in attrs.fields(type(part))}
    if unknown := sorted(changes.keys() - valid):
        raise TypeError(
            f"{type(part).__name__} has no field {', '.join(map(repr, unknown))}; "
            f"valid fields: {', '.join(sorted(valid))}"
        )
    return attrs.evolve(part, **changes)


@attrs.frozen
class ToolSideEffects:
    """What running the tool may do to the world; every flag is False unless stated."""

    read_only: bool = _flag()
    writes_files: bool = _flag()
    network: bool = _flag()
    installs_dependencies: bool = _flag()
    destructive: bool = _flag()
    external_service: bool = _flag()
    payment: bool = _flag()


@attrs.frozen
class ToolRuntime:
    """How the tool must be run.

    Attributes:
        sandbox: ``"inherit"`` follows the run, ``"required"`` refuses to run
            outside a sandbox, ``"disabled"`` never sandboxes this tool.
        timeout: Seconds one attempt may take; None means no tool-level limit.
        max_retries: Extra attempts after a retryable failure; 0 means none.
        idempotent: Running the tool twice with the same arguments has the
            effect of running it once.
        max_result_bytes: The largest content, in UTF-8 bytes, of a message about
            one of the tool's calls (its result, or dispatch's answer), and of the
            text of its follow-up; None means no limit of its own. With
            ``RunPolicy.max_result_bytes`` the stricter of the two holds. Images
            and files are not counted (see there).
        replay: ``"safe"`` lets a call interrupted by a crash run again on
            resume; ``"never"`` settles it as interrupted instead.
        blocking: The (synchronous) tool blocks on I/O or CPU: dispatch runs it
            in a worker thread instead of inline, so it neither stalls other
            calls nor escapes its timeout.
        coerce: Arguments that break the schema get one more try with a number or
            boolean sent as a string read as what it spells, as
            ``tinytools.policies.Coerce`` does, whatever the run's ``invalid_args``
            policy; what coercion does not make valid meets that policy.
        idempotency_key: A function of the validated arguments that returns a key
            naming the effect (two calls with one key have one effect). Declared and
            kept, but not yet read: the effect ledger dedupes on the run id and call
            id alone, so a call re-issued under a new id runs again. It is code, not
            data: it is neither encoded nor compared, so a decoded policy has none.
    """

    sandbox: SandboxMode = attrs.field(default="inherit", validator=_one_of(SandboxMode))
    timeout: float | None = attrs.field(default=None, converter=_as_seconds, validator=SECONDS)
    max_retries: int = attrs.field(default=0, validator=_RETRIES)
    # `idempotent` and `replay` are read by `tinytools.ledger.reconcile` (with
    # `side_effects.read_only`: see `replay_safe`); `idempotency_key` is not read yet.
    idempotent: bool = _flag()
    max_result_bytes: int | None = attrs.field(default=None, validator=BYTES)
    replay: ReplayMode = attrs.field(default="never", validator=_one_of(ReplayMode))
    blocking: bool = _flag()
    coerce: bool = _flag()
    # msgspec encodes only public attributes, so the underscore keeps the function out of
    # the JSON; attrs still takes it as `idempotency_key=`, and the property reads it.
    _idempotency_key: _KeyFunction | None = attrs.field(default=None, eq=False, validator=_KEY)

    @property
    def idempotency_key(self) -> _KeyFunction | None:
        """The ledger's key function for this tool, if it declared one."""
        return self._idempotency_key


@attrs.frozen
class ToolAccess:
    """What the tool may reach, and who must agree before it runs.

    Attributes:
        workspace: ``"none"``, ``"scoped"`` (only under ``trusted_roots``) or ``"any"``.
        trusted_roots: The paths a scoped tool may use.
        credentials: Names of the credentials the tool needs.
        approval_required: A human approves each call before it runs.
        background_safe: The tool may run with nobody watching.
    """

    # `workspace`, `trusted_roots` and `credentials` are declarations for the host (read
    # through `Registry.policies()`): no tinytools code enforces them yet; the CLI's
    # `tinytools check` (issue 15) will report them, and a workspace rule in
    # `ToolPolicyMiddleware` would check them against the context's `Workspace`.
    workspace: WorkspaceAccess = attrs.field(default="none", validator=_one_of(WorkspaceAccess))
    trusted_roots: tuple[str, ...] = attrs.field(
        default=(), converter=_as_tuple, validator=_STRINGS
    )
    credentials: tuple[str, ...] = attrs.field(default=(), converter=_as_tuple, validator=_STRINGS)
    approval_required: bool = _flag()
    background_safe: bool = _flag()


def _as_bool(value: bool) -> bool:
    # Only here so type checkers take `classified: bool` in __init__ (see `_Classified`).
    return value


if TYPE_CHECKING:
    # Type checkers see the descriptor installed below, so `ToolPolicy.classified()`
    # and `policy.classified` both check.
    _Classified: TypeAlias = "_ClassifiedField"
else:
    _Classified = bool


@attrs.frozen
class ToolPolicy:
    """A tool's declared safety profile (see the module docstring).

    Attributes:
        classified: The tool's author has stated its profile; False means
            nobody has, and strict enforcement refuses the tool.
        side_effects: What running the tool may do.
        runtime: How it must be run.
        access: What it may reach and who must approve it.
        redact: Arguments whose values never appear in events, error messages
            or the ledger: argument names matched at any depth (``"password"``)
            or ``$``-rooted dotted paths (``"$.auth.token"``), each also
            spelled with other case, ``-``, ``_`` or spaces; inside a typed
            parameter (a dataclass, a msgspec Struct, an attrs class, a
            NamedTuple) a field's name counts as a key. Arguments sent as
            anything but a JSON object (broken text, an array, a bare string)
            are hidden whole: no key tells which part is secret; so is a
            parser's or provider's reason for a call it could not read.
    """

    classified: _Classified = attrs.field(  # type: ignore[assignment]
        default=False, converter=_as_bool, validator=_BOOL
    )
    side_effects: ToolSideEffects = attrs.field(
        default=ToolSideEffects(), validator=_instance_of(ToolSideEffects)
    )
    runtime: ToolRuntime = attrs.field(default=ToolRuntime(), validator=_instance_of(ToolRuntime))
    access: ToolAccess = attrs.field(default=ToolAccess(), validator=_instance_of(ToolAccess))
    redact: tuple[str, ...] = attrs.field(
        default=(), converter=_as_tuple, validator=[_STRINGS, _REDACTABLE]
    )

    @classmethod
    def read_only(cls) -> "ToolPolicy":
        """A classified policy for a tool that only reads: idempotent and safe to replay."""
        return cls(
            classified=True,
            side_effects=ToolSideEffects(read_only=True),
            runtime=ToolRuntime(idempotent=True, replay="safe"),
        )

    # The `with_*` builders never set `classified`: classifying states that the whole
    # profile was reviewed, and changing one part of it does not make that true.

    def with_side_effects(self, **fields: bool) -> "ToolPolicy":
        """A copy with the named `ToolSideEffects` fields changed; unknown names raise TypeError."""
        return attrs.evolve(self, side_effects=_evolve(self.side_effects, fields))

    def with_runtime(self, **fields: object) -> "ToolPolicy":
        """A copy with the named `ToolRuntime` fields changed; unknown names raise TypeError."""
        return attrs.evolve(self, runtime=_evolve(self.runtime, fields))

    def with_access(self, **fields: object) -> "ToolPolicy":
        """A copy with the named `ToolAccess` fields changed; unknown names raise TypeError."""
        return attrs.evolve(self, access=_evolve(self.access, fields))


#: Side effects a read-only tool cannot have (reads may still use the network or an
#: external service: a web search is read-only).
WRITES = ("writes_files", "installs_dependencies", "destructive", "payment")


def reads_only(policy: ToolPolicy) -> bool:
    """Whether ``policy`` is a reviewed claim that the tool only reads: classified, with
    ``read_only`` and none of the side effects that contradict it (:data:`WRITES`).

    The builders and JSON accept ``read_only`` next to, say, ``destructive``; a gate
    that trusted the flag alone would wave such a tool through, so a contradiction
    reads as not read-only (fail closed).
    """
    effects = policy.side_effects
    return bool(policy.classified and effects.read_only) and not any(
        getattr(effects, kind) for kind in WRITES
    )


def _classified(cls: type[ToolPolicy]) -> ToolPolicy:
    """A classified policy with every part at its default; refine it with the `with_*` builders."""
    return cls(classified=True)


class _ClassifiedField:
    """``ToolPolicy.classified``: the builder on the class, the flag on an instance.

    The public API has both names (``ToolPolicy.classified()`` starts the builder chain
    of docs/how-to/approvals.md; ``policy.classified`` is the flag), which in Python share
    one class attribute, so this data descriptor wraps the slot attrs made for the field
    and answers each case.
    """

    __slots__ = ("_slot",)

    def __init__(self, slot: Any) -> None:
        self._slot = slot

    @overload
    def __get__(self, instance: None, owner: type[ToolPolicy]) -> Callable[[], ToolPolicy]: ...
    @overload
    def __get__(self, instance: ToolPolicy, owner: type[ToolPolicy] | None = None) -> bool: ...
    def __get__(
        self, instance: ToolPolicy | None, owner: type[ToolPolicy] | None = None
    ) -> bool | Callable[[], ToolPolicy]:
        if instance is None:
            return types.MethodType(_classified, owner)
        return self._slot.__get__(instance, owner)  # type: ignore[no-any-return]

    def __set__(self, instance: ToolPolicy, value: bool) -> None:
        self._slot.__set__(instance, value)  # attrs' __init__ and msgspec set it this way


# `setattr` so mypy keeps its `_Classified` view; a name, not a literal, for ruff's B010.
_CLASSIFIED = "classified"
setattr(ToolPolicy, _CLASSIFIED, _ClassifiedField(vars(ToolPolicy)[_CLASSIFIED]))
