"""What a tool needs at run time, planned once when the ``Tool`` is built.

Dispatch reads a tool's :class:`Plan` instead of walking its policy on every
call: whether it is async, what it injects, whether a worker thread runs it
(it blocks, or has its own timeout), its own timeout and byte limit, whether
its arguments are redacted, whether an approval gates it, and how often a
``RetryableError`` is retried. The run's own limits (``RunPolicy.tool_timeout``,
``max_result_bytes``) are combined with the plan per dispatch, at the cost of
a comparison.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._declare.tool_policy import ToolPolicy
    from ._inject import Injection
    from ._redact import Redactor

__all__ = ["Plan"]


class Plan:
    """A tool's run-time needs (see the module docstring)."""

    __slots__ = (
        "_schema_text",
        "awaited",
        "blocking",
        "external",
        "fn",
        "gated",
        "injections",
        "is_async",
        "limit",
        "plain",
        "redactor",
        "retries",
        "timeout",
    )

    def __init__(
        self,
        fn: Callable[..., object] | None,
        is_async: bool,
        injections: tuple[Injection, ...],
        policy: ToolPolicy,
    ) -> None:
        runtime = policy.runtime
        self.fn = fn
        self.is_async = is_async
        self.external = fn is None
        self.injections = injections
        self.timeout: float | None = runtime.timeout
        self.blocking = bool(runtime.blocking) and not is_async
        self.limit: int | None = runtime.max_result_bytes
        self.gated = bool(policy.access.approval_required)
        self.retries: int = runtime.max_retries
        self.redactor: Redactor | None = None
        self._schema_text: str | None = None
        #: Nothing but an inline call: not async, no thread, no timeout of its own, no
        #: injection, no gate (the run's own timeout is checked per dispatch).
        self.plain = not (
            is_async or self.blocking or self.timeout or injections or self.gated or fn is None
        )
        #: An async tool that needs nothing but awaiting: no injection, no timeout of its
        #: own (the run's own timeout is checked per dispatch).
        self.awaited = is_async and not injections and not self.timeout and fn is not None
        if policy.redact:
            from ._redact import Redactor

            self.redactor = Redactor(policy.redact)

    def schema_text(self, parameters: dict[str, object]) -> str:
        """The tool's schema as compact JSON, for error messages (encoded once, on the
        first bad call)."""
        text = self._schema_text
        if text is None:
            import msgspec

            text = self._schema_text = msgspec.json.encode(parameters).decode()
        return text

    def timeout_under(self, run_timeout: float | None) -> float | None:
        """The timeout of one attempt: the tool's own, else the run's."""
        return self.timeout or run_timeout

    def threaded(self, timeout: float | None) -> bool:
        """Whether a synchronous call runs on a worker thread (it blocks, or has a timeout)."""
        return not self.is_async and (self.blocking or timeout is not None)
