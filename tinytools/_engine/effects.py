"""The effect-ledger hook dispatch calls: :class:`EffectLedger`, and how a batch starts.

A ledger records a durable ``started`` row before a tool runs and settles it
once the call is answered, so a crashed run can tell which side effects may
have happened. Dispatch calls :func:`record_started` once per batch, before any
tool of the batch runs, and ``settled`` as each call is answered. The
implementations (SQLite, PostgreSQL) and ``reconcile`` live in
``tinytools.ledger``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import msgspec

from tinytools._redact import shown_arguments
from tinytools._wire import MessageStatus
from tinytools.events import ToolDenied

from .admit.admission import Admitted, Answered, error_message

__all__ = [
    "AlreadyStarted",
    "DurableLedger",
    "EffectLedger",
    "LedgerEntry",
    "StartedCall",
    "record_started",
    "refusal",
    "release",
    "release_unstarted",
    "settle_answered",
]


class AlreadyStarted(Exception):
    """``started`` found the call already started (by this run earlier, or another worker).

    Dispatch answers the call with an error message and does not run it: running it
    again could repeat its side effect. ``reconcile`` decides what becomes of a call
    that was started and never settled.
    """

    def __init__(self, run_id: str, call_id: str) -> None:
        self.run_id = run_id
        self.call_id = call_id
        super().__init__(
            f"call {call_id!r} of run {run_id!r} was already started (by this run or another "
            "worker); it is not run again"
        )


class LedgerEntry(msgspec.Struct, frozen=True):
    """A call the ledger saw start and never settle.

    Attributes:
        run_id: The run (``Context.run_id``) the call belongs to.
        call_id: The call's id.
        tool_name: The tool's name, as the model saw it.
        arguments: The validated arguments, redacted (``ToolPolicy.redact``).
        started_at: When the call was (last) started: seconds since the Unix epoch.
    """

    run_id: str
    call_id: str
    tool_name: str
    arguments: dict[str, object]
    started_at: float


class EffectLedger(Protocol):
    """What dispatch and ``reconcile`` need from an effect ledger.

    Dispatch calls ``started`` for every admitted call of a batch before any tool of
    the batch runs, and ``settled`` once each started call is answered. A ledger may
    also define ``started_batch(run_id, calls)`` (see :class:`DurableLedger`): dispatch
    then records the whole batch with that one call, in one transaction; and
    ``release(run_id, call_id)``, which dispatch calls for a call its tool deferred. To
    a ledger with ``release``, dispatch also reports (``settled``) a deferred call the host
    answered on resume (denied, or its own result), which may have no row.

    One ledger given to dispatches that run at once (a server's threads, several event
    loops) is called from all their threads concurrently: ``SqliteLedger`` and
    ``PostgresLedger`` let one thread at a time use their connection; a ledger of the
    host's own must be thread-safe itself.
    """

    def started(
        self, run_id: str, call_id: str, tool_name: str, arguments: Mapping[str, object]
    ) -> None:
        """Record, durably, that a call is about to run.

        Raises:
            AlreadyStarted: That ``(run_id, call_id)`` was started before (and not
                released by ``reconcile`` for a re-run).
        """
        ...

    def settled(self, run_id: str, call_id: str, status: MessageStatus) -> None:
        """Record how a started call ended (the status of the message answering it)."""
        ...

    def unresolved(self, run_id: str | None = None) -> tuple[LedgerEntry, ...]:
        """The calls started and never settled (of ``run_id``, or of every run)."""
        ...


#: One call of a batch as ``started_batch`` takes it: call id, tool name, arguments.
StartedCall = tuple[str, str, Mapping[str, object]]


class DurableLedger(EffectLedger, Protocol):
    """A ledger that records a batch's started rows in one transaction, and can release a
    started call for a re-run (what ``reconcile`` and a tool's deferral need)."""

    def started_batch(self, run_id: str, calls: Sequence[StartedCall]) -> frozenset[str]:
        """``started`` for every call, in one transaction, durable on return.

        Returns:
            The ids of the calls that were already started (each would have raised
            ``AlreadyStarted``); the others are now started.
        """
        ...

    def release(self, run_id: str, call_id: str) -> None:
        """Let a started call be started again: ``reconcile`` found it replay-safe, or
        its tool deferred it (``ApprovalRequired``, ``CallDeferred``) before acting."""
        ...


def record_started(
    ledger: EffectLedger, run_id: str, admitted: Sequence[Admitted]
) -> list[Admitted]:
    """Write the started rows of a batch (arguments redacted); the calls refused as
    already started.

    Raises:
        Exception: Whatever the ledger raised other than ``AlreadyStarted``.
    """
    rows = [
        (item.call.id, item.tool.name, shown_arguments(item.tool, item.arguments))
        for item in admitted
    ]
    started_batch = getattr(ledger, "started_batch", None)
    if started_batch is not None:
        refused_ids = started_batch(run_id, rows)
        return [item for item in admitted if item.call.id in refused_ids]
    refused = []
    for item, (call_id, name, arguments) in zip(admitted, rows, strict=True):
        try:
            ledger.started(run_id, call_id, name, arguments)
        except AlreadyStarted:
            refused.append(item)
    return refused


def refusal(item: Admitted) -> tuple[ToolDenied, Answered]:
    """The event and answer for a call the ledger refused as already started."""
    call = item.call
    text = (
        f"Tool call not run: call `{call.id}` of this run was already started before "
        "(by an earlier attempt or another worker), and running it again could repeat "
        "its side effect. Do not retry it; check its effect another way."
    )
    event = ToolDenied(call_id=call.id, tool_name=item.tool.name, message=text)
    return event, Answered(item.index, error_message(call, text))


def release(ledger: EffectLedger, run_id: str, call_id: str) -> None:
    """Release a started call whose tool deferred it, if the ledger can."""
    release = getattr(ledger, "release", None)
    if release is not None:
        release(run_id, call_id)


def settle_answered(ledger: EffectLedger, run_id: str, call_id: str, status: MessageStatus) -> None:
    """Settle a deferred call the host answered on resume (denied, or its own result).

    A call its tool deferred left its row released; answered, it is settled so that it
    never starts again (a second dispatch of the call, or a host that performed a
    ``CallDeferred`` call itself, must not have the tool run it) and ``reconcile`` never
    answers it a second time. A call deferred before it started (an approval policy) has
    no row, which ``settled`` leaves as it is. Only a ledger that can release rows is told:
    another never saw the call start.
    """
    if getattr(ledger, "release", None) is not None:
        ledger.settled(run_id, call_id, status)


def release_unstarted(ledger: EffectLedger, run_id: str, call_ids: Sequence[str]) -> None:
    """Undo the started rows of calls that never started: the host's own cancellation
    (its task cancelled, a timeout around ``await dispatch``, ``KeyboardInterrupt``) left
    the batch before their tools ran, and nobody answered them.

    A ledger that can release a row releases it: the call had no effect, and a later
    dispatch of it (the host retrying the turn under the same run id) runs it. Another
    ledger settles it as ``interrupted``, as a cancelled batch settles a call it never ran:
    it is then not read as unresolved (``reconcile`` would answer it as one whose effect
    is uncertain). The calls that did start stay unresolved: their effect is uncertain,
    which is what ``reconcile`` is for. What the ledger raises is dropped (the host's
    exception is what leaves dispatch; a row left open stays unresolved, the safe side).
    """
    release = getattr(ledger, "release", None)
    for call_id in call_ids:
        try:
            if release is not None:
                release(run_id, call_id)
            else:
                ledger.settled(run_id, call_id, "interrupted")
        except Exception:  # the host's exception goes on (see the docstring)
            continue
