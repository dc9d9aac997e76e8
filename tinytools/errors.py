"""Exceptions tinytools raises, and the ones a tool raises to signal intent.

Two families live here:

* errors tinytools raises at the user: :class:`ToolDefinitionError` (a tool or
  registry cannot be built, or a context cannot satisfy a tool) and
  :class:`ToolArgumentsError` (a model's arguments do not fit a tool);
* errors a *tool* raises to tell dispatch what to do: :class:`RetryableError`,
  :class:`ModelRetry`, :class:`FatalToolError`, :class:`ApprovalRequired` and
  :class:`CallDeferred`.

Every message names what was wrong and what to do about it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = [
    "ApprovalRequired",
    "CallDeferred",
    "FatalToolError",
    "ModelRetry",
    "RetryableError",
    "TinytoolsError",
    "ToolArgumentsError",
    "ToolDefinitionError",
]


class TinytoolsError(Exception):
    """Base class of the errors tinytools itself raises."""


class ToolDefinitionError(TinytoolsError, TypeError):
    """A tool, registry or context cannot be used as declared.

    Raised once with every problem found, so a user fixes them all in one go.

    Attributes:
        subject: What was being defined (a function's qualified name, a
            registry, a tool name).
        problems: Each problem, one sentence each, saying what to change.
    """

    subject: str
    problems: tuple[str, ...]

    def __init__(self, subject: str, problems: Sequence[str]) -> None:
        self.subject = subject
        self.problems = tuple(problems)
        if len(self.problems) == 1:
            text = f"{subject}: {self.problems[0]}"
        else:
            lines = "\n".join(f"  - {p}" for p in self.problems)
            text = f"{subject}: {len(self.problems)} problems:\n{lines}"
        super().__init__(text)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.subject, self.problems))


class ToolArgumentsError(TinytoolsError, ValueError):
    """A model's arguments for a tool are malformed or break its schema.

    ``str(error)`` is written for the model: it names the tool, where in the
    arguments the problem is (a JSON path such as ``$.items[2].qty``), what
    was expected and what was found, so the model can correct its call.

    Attributes:
        tool_name: The tool whose arguments were rejected.
        path: JSON path of the offending value (``$`` for the whole object).
        detail: The validator's sentence (for example ``Expected `int`, got
            `str```).
        malformed: True when the arguments were not valid JSON at all (a
            transport defect, which repair may fix), False for a schema
            violation.
    """

    # Slots: every bad call a model makes builds one, and an instance dict per error
    # costs more than the rest of its construction.
    __slots__ = ("detail", "malformed", "path", "tool_name")

    tool_name: str
    path: str
    detail: str
    malformed: bool

    def __init__(self, tool_name: str, detail: str, *, path: str = "$", malformed: bool = False):
        self.tool_name = tool_name
        self.path = path
        self.detail = detail
        self.malformed = malformed
        if malformed:
            text = (
                f"Arguments for tool `{tool_name}` are not valid JSON: {detail}. "
                "Send the arguments as one JSON object."
            )
        else:
            where = "" if path == "$" else f" at `{path}`"
            text = f"Invalid arguments for tool `{tool_name}`{where}: {detail}."
        self.args = (text,)  # what BaseException.__init__(text) sets, without its call

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_arguments_error, (self.tool_name, self.detail, self.path, self.malformed))


def _rebuild_arguments_error(
    tool_name: str, detail: str, path: str, malformed: bool
) -> ToolArgumentsError:
    return ToolArgumentsError(tool_name, detail, path=path, malformed=malformed)


# --- raised by tools -------------------------------------------------------


class RetryableError(Exception):
    """A transient failure: dispatch retries the call up to the tool's ``max_retries``.

    Raise it for timeouts, rate limits and other failures that a second try
    may not meet. After the last retry the error is reported to the model.
    """


class ModelRetry(Exception):
    """The model should correct its call: the message goes back as a tool error.

    Raise it when the arguments were valid for the schema but wrong for the
    task (an unknown city, an empty search). Say what to change.
    """


class FatalToolError(Exception):
    """Abort the whole batch: dispatch raises ``DispatchAborted``.

    Every call of the batch is still answered in the result that
    ``DispatchAborted`` carries.
    """


class _Deferral(Exception):
    """Shared shape of the exceptions that take a call out of the batch."""

    metadata: Mapping[str, object]

    def __init__(self, metadata: Mapping[str, object] | None = None) -> None:
        self.metadata = dict(metadata or {})
        super().__init__(self.metadata)


class ApprovalRequired(_Deferral):
    """The call needs a human's approval before it may run.

    Args:
        metadata: JSON-encodable details shown to whoever approves.
    """


class CallDeferred(_Deferral):
    """The call is to be completed outside this batch (by the host, later).

    Args:
        metadata: JSON-encodable details for the host.
    """
