"""``HumanApprovalMiddleware``: ask a person (or any callback) before a call runs.

The callback gets the call and the tool it resolves to, and answers with an
outcome::

    def ask(call: ToolCall, tool: AnyTool | None) -> ApprovalOutcome:
        return Allow() if input(f"run {call.name}? ") == "y" else Deny("the operator said no")

    dispatch_sync(calls, tools, middleware=[HumanApprovalMiddleware(ask)])

* ``Allow()`` runs the call as approved: no approval gate (the tool's
  ``approval_required`` flag, ``ToolPolicyMiddleware.require_approval()``)
  defers it afterwards, and dispatch emits ``ToolApproved``. The approval
  covers this call only (``Allow(call)`` approves an edited call with the same
  id); a later hook that changes the call withdraws it.
* ``Deny(message)`` answers the model with ``message`` (status ``denied``).
* ``Defer()`` takes the call out of the batch, into
  ``DispatchResult.deferred.approvals``, for the host to decide later.

These are the same ``Allow``, ``Deny`` and ``Defer`` any ``before_tool`` hook
returns; the middleware only files a ``Defer`` among the approvals.

By default only tools whose policy has ``access.approval_required`` are
asked about; ``every_call=True`` asks about every call (the tool is None
when the name resolves to nothing callable, which dispatch then answers as
unknown). A call already approved — on resume by a decision that answers
it, or by an earlier hook — passes without asking.

The callback may be async: ``before_tool`` then returns a coroutine, which
``dispatch`` awaits — no longer than ``RunPolicy.deadline`` allows: past it the
wait is cancelled and the call answered as ``interrupted`` —; ``dispatch_sync``
refuses it with a ``TypeError``. A synchronous callback cannot be cut short:
bound its own wait. A callback that raises aborts the batch
(``DispatchAborted``, every call answered, nothing run); one that answers
anything but an outcome is a ``TypeError`` inside that abort.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeAlias

import attrs

from ._declare.registry import AnyTool
from ._declare.spec import is_async_function
from ._middleware import Allow, Defer, Deny, described
from ._policy_middleware import resolve
from ._wire import ToolCall

if TYPE_CHECKING:
    from ._engine.env import DispatchEnv

__all__ = ["ApprovalCallback", "ApprovalOutcome", "HumanApprovalMiddleware"]


#: What an approval callback answers.
ApprovalOutcome: TypeAlias = Allow | Deny | Defer
#: An approval callback: the call and its tool (None when not callable) → an outcome.
ApprovalCallback: TypeAlias = Callable[
    [ToolCall, AnyTool | None], ApprovalOutcome | Awaitable[ApprovalOutcome]
]


def _translate(call: ToolCall, outcome: object) -> ApprovalOutcome:
    if isinstance(outcome, (Allow, Deny)):
        return outcome
    if isinstance(outcome, Defer):
        # A human chose to decide later: the call waits among the approvals.
        return attrs.evolve(outcome, kind="approval")
    raise TypeError(
        f"the approval callback returned {described(outcome)} for call {call.id!r}; "
        "return Allow(), Deny(message) or Defer() (an instance, not the class)"
    )


@attrs.frozen(repr=False)
class HumanApprovalMiddleware:
    """Ask ``callback`` before calls run (see the module docstring).

    Attributes:
        callback: Gets the call and its tool; returns (or, async, resolves to)
            ``Allow()``, ``Deny(message)`` or ``Defer()``.
        every_call: Ask about every call, not only tools that require approval.
    """

    callback: ApprovalCallback = attrs.field(validator=attrs.validators.is_callable())
    every_call: bool = attrs.field(default=False, kw_only=True)
    _async: bool = attrs.field(
        init=False,
        eq=False,
        default=attrs.Factory(lambda self: is_async_function(self.callback), takes_self=True),
    )

    def before_tool(
        self, call: ToolCall, env: DispatchEnv
    ) -> ToolCall | ApprovalOutcome | Awaitable[ApprovalOutcome]:
        """The callback's decision for ``call``, or the call unchanged when nobody need ask."""
        if env.is_call_approved(call.id):
            return call
        tool = resolve(call, env)
        if not self.every_call and (
            tool is None
            or not tool.policy.access.approval_required
            or not env.tools.approval_needed(call, env.context)  # ApprovalRequired(when=...)
        ):
            return call
        if self._async:
            # The callback is called inside the coroutine, so a coroutine that
            # dispatch_sync refuses (and closes unstarted) leaves nothing un-awaited.
            return self._ask_later(call, tool)
        outcome = self.callback(call, tool)
        if inspect.isawaitable(outcome):
            return self._settle(call, outcome)
        return _translate(call, outcome)

    async def _ask_later(self, call: ToolCall, tool: AnyTool | None) -> ApprovalOutcome:
        outcome = self.callback(call, tool)
        return _translate(call, await outcome if inspect.isawaitable(outcome) else outcome)

    async def _settle(self, call: ToolCall, pending: Awaitable[ApprovalOutcome]) -> ApprovalOutcome:
        return _translate(call, await pending)

    def __repr__(self) -> str:
        name = getattr(self.callback, "__qualname__", None) or repr(self.callback)
        every = ", every_call=True" if self.every_call else ""
        return f"HumanApprovalMiddleware({name}{every})"
