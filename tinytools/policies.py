"""Run-level policy: :class:`RunPolicy` and the recovery policies it names.

``RunPolicy`` says how one batch of calls is admitted and run: what happens
to a call of an unknown tool (:data:`UnknownToolPolicy`) or with arguments
that break the schema (:data:`InvalidArgsPolicy`), how many calls a batch
may make, how many run at once, how long they may take, how large a result
may be, and which tools the run allows at all.

Malformed JSON is not governed here: it is a transport defect, always
answered (after a conservative repair attempt) with a parse-error message.
"""

# No `from __future__ import annotations`: attrs and msgspec read these
# annotations at run time from the facade module (see `tinytools/_wire.py`).

from collections.abc import Collection
from typing import Any, TypeAlias

import attrs

from ._declare.tool_policy import BYTES, MOST_SECONDS, SECONDS

__all__ = [
    "Coerce",
    "Fail",
    "InvalidArgsPolicy",
    "NormalizeThenReturnToolError",
    "ReturnToolError",
    "Rewrite",
    "RunPolicy",
    "UnknownToolPolicy",
]


@attrs.frozen
class ReturnToolError:
    """Answer the call with a repairable error message and go on (the default)."""


@attrs.frozen
class Fail:
    """Abort the batch: dispatch raises ``DispatchAborted`` before any tool runs."""


@attrs.frozen
class Rewrite:
    """Retarget an unknown call to a fixed compatibility tool, looked up once.

    When ``tool_name`` is itself not callable this turn (unregistered, hidden,
    not advertised or not allowed), the call is answered as with
    :class:`ReturnToolError`. The arguments of a rewritten call were written for
    some other tool: every registered tool's ``ToolPolicy.redact`` applies to them,
    on top of the target's own.

    Attributes:
        tool_name: The tool that answers calls of unknown tools.
    """

    tool_name: str


@attrs.frozen
class NormalizeThenReturnToolError:
    """Undo common transport shapes first, then answer what still fails.

    An object sent as a JSON string (also inside a markdown fence), or an
    empty non-object for an object schema with no required properties, is
    normalised (see :func:`tinytools.repair.normalize_arguments`).
    """


@attrs.frozen
class Coerce:
    """Read a number or boolean the model sent as a string as what it spells, then
    answer what still fails with a repairable error (as :class:`ReturnToolError`).

    Only arguments that break the schema are touched, and in them only a string at a
    position the schema types as ``number``, ``integer`` or ``boolean`` that refuses
    it there: ``"3"`` becomes 3 and ``"2.5"`` becomes 2.5 for a ``number``; for an
    ``integer`` only an integral value (``"3"``, or ``"3.0"``, read as 3.0 and taken as
    a sent 3.0 is); ``"true"``/``"false"`` (exactly) become booleans for a
    ``boolean``. The number must be written as JSON writes one (not ``" 5"``, ``"+5"``,
    ``"0x10"``, ``"1_000"``, ``"5."``, ``"NaN"``); strings in ``string`` fields, object
    keys and every other value are never changed. Inside a union (``int | None``,
    ``anyOf``/``oneOf``) a string is coerced only when no branch may take it as it is
    (a ``string`` or untyped branch may; an ``enum`` that does not list it may not), so
    ``int | str`` keeps ``"3"`` and ``int | Literal["all"]`` reads it as 3. An ``enum``
    of numbers (``Literal[1, 2]``) takes ``"1"`` as 1. A string under
    ``patternProperties`` is left as it is.

    The coerced arguments are validated again, whole, so bounds, ``enum`` and the rest
    still hold; when they fail, the call is answered with the error about the
    arguments as sent. A coerced call emits ``InvalidToolArgs`` with
    ``recovery="coerced"`` and the arguments as the model sent them; the tool gets the
    coerced values. A tool may opt in for its own calls whatever the run says:
    ``ToolPolicy().with_runtime(coerce=True)``.
    """


#: What to do with a call of a tool that is not callable this turn.
UnknownToolPolicy: TypeAlias = ReturnToolError | Fail | Rewrite
#: What to do with well-formed arguments that break the tool's schema.
InvalidArgsPolicy: TypeAlias = ReturnToolError | Fail | NormalizeThenReturnToolError | Coerce


def _at_least_one(_: object, attribute: "attrs.Attribute[Any]", value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"{attribute.name} must be an int >= 1 (1 runs calls serially); got {value!r}"
        )


def _delay(_: object, attribute: "attrs.Attribute[Any]", value: Any) -> None:
    finite = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not finite or not 0 <= value <= MOST_SECONDS:  # (an int past float range too)
        raise ValueError(
            f"{attribute.name} must be a finite number of seconds >= 0 "
            f"(0 retries at once); got {value!r}"
        )


def _names(value: Collection[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise TypeError("allowlist must be a collection of tool names, not one string")
    return frozenset(value)


def _check_policy(kinds: tuple[type, ...], what: str) -> Any:
    def check(_: object, attribute: "attrs.Attribute[Any]", value: Any) -> None:
        if not isinstance(value, kinds):
            names = ", ".join(k.__name__ + "()" for k in kinds)
            raise TypeError(f"{attribute.name} must be one of {names} ({what}); got {value!r}")

    return check


@attrs.frozen
class RunPolicy:
    """How dispatch admits and runs one batch of calls.

    Attributes:
        unknown_tool: For calls of tools not callable this turn.
        invalid_args: For arguments that break the tool's schema.
        max_tool_calls: How many calls of this batch may be admitted; each
            call answered by a recovery also takes a slot. Calls past the
            limit are answered with an error and never run. To bound a whole
            run, pass the run's remaining budget with each batch.
        max_concurrency: How many calls run at once (1 = serially, in order).
        deadline: Seconds the batch may take from the start of dispatch;
            calls still running then are cancelled and calls not started are
            not started — both are answered as ``interrupted``. An async tool
            is cancelled at its next ``await``, and a sync tool on a worker
            thread (one with a timeout, or ``blocking``) is abandoned; a sync
            tool run inline cannot be stopped, so it finishes and keeps its
            answer, and no call starts after it. Under ``await dispatch`` an
            awaited ``before_tool`` hook (an async approval callback) is
            cancelled too: its call and the later ones are answered as
            ``interrupted``.
        tool_timeout: Seconds one attempt of a call may take; a tool's own
            ``ToolRuntime.timeout`` overrides it. A synchronous tool with a
            timeout runs in a worker thread so the timeout holds.
        max_result_bytes: The largest content of any message of the batch, in
            UTF-8 bytes: a tool's result and every answer dispatch writes itself
            (an invalid-arguments error quoting the schema, an unknown name's
            suggestions, ``tool_search`` results, a denial, an interruption).
            Longer content is cut with a visible marker
            (``[truncated: N bytes, showing the first M]``), and so is a
            follow-up's text (its text and JSON blocks as the model reads them;
            image and file blocks are not text the limit counts). A tool's own
            ``ToolRuntime.max_result_bytes`` can only make the limit stricter for
            the messages about its calls, never looser: the run's limit holds for
            every message, as ``ToolPolicyMiddleware.enforce_result_bytes`` reads
            the two limits too. It bounds the text: a result's images and files
            (``ToolMessage.attachments``) are kept whole, and each provider module's
            ``tool_results`` bounds them by its ``max_attachment_bytes``.
        allowlist: ``None``: no allow-list (every registered, advertised tool
            may be called). A collection: only those names. An empty one
            denies every tool unless ``fail_closed_allowlist`` is False.
        fail_closed_allowlist: False is the explicit legacy opt-in that reads
            an empty allow-list as unrestricted.
        retry_base_delay: Seconds before the first retry of a
            ``RetryableError``; each further retry doubles it (with jitter).
        retry_max_delay: The longest wait between retries.
    """

    unknown_tool: UnknownToolPolicy = attrs.field(
        factory=ReturnToolError,
        validator=_check_policy((ReturnToolError, Fail, Rewrite), "unknown-tool policies"),
    )
    invalid_args: InvalidArgsPolicy = attrs.field(
        factory=ReturnToolError,
        validator=_check_policy(
            (ReturnToolError, Fail, NormalizeThenReturnToolError, Coerce), "invalid-args policies"
        ),
    )
    max_tool_calls: int | None = attrs.field(default=None)
    max_concurrency: int = attrs.field(default=1, validator=_at_least_one)
    deadline: float | None = attrs.field(default=None, validator=SECONDS)
    tool_timeout: float | None = attrs.field(default=None, validator=SECONDS)
    max_result_bytes: int | None = attrs.field(default=None, validator=BYTES)
    allowlist: frozenset[str] | None = attrs.field(default=None, converter=_names)
    fail_closed_allowlist: bool = True
    retry_base_delay: float = attrs.field(default=0.1, validator=_delay)
    retry_max_delay: float = attrs.field(default=5.0, validator=_delay)

    @max_tool_calls.validator
    def _check_max_tool_calls(self, attribute: "attrs.Attribute[Any]", value: Any) -> None:
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise ValueError(f"max_tool_calls must be an int >= 0 or None; got {value!r}")

    def allows(self, name: str) -> bool:
        """Whether the allow-list lets ``name`` be called."""
        if self.allowlist is None:
            return True
        if not self.allowlist:
            return not self.fail_closed_allowlist
        return name in self.allowlist
