"""``reconcile``: after a crash, decide each interrupted call's fate from the ledger."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgspec

from tinytools._declare.registry import AnyTool, Registry
from tinytools._declare.tool_policy import reads_only
from tinytools._engine.effects import EffectLedger, LedgerEntry, release
from tinytools._engine.fold import truncate
from tinytools._wire import ToolCall, ToolMessage
from tinytools.events import Event, ToolEffectReconciled
from tinytools.toolsets._base import Toolset, registry_for

__all__ = ["INTERRUPTED", "Reconciled", "reconcile", "replay_safe"]

#: What the model reads for a call that started and never finished, and is not re-run.
INTERRUPTED = (
    "Tool call interrupted: the run stopped (a crash or a lost worker) after this call "
    "started and before it was recorded as finished, so its effect may or may not have "
    "happened. It was not run again; check whether it took effect before retrying it."
)


class Reconciled(msgspec.Struct, frozen=True):
    """What :func:`reconcile` decided.

    Attributes:
        messages: Answers, status ``"interrupted"``, for the calls that started and
            never finished and are not safe to run again; the ledger settled them.
            Each is cut to its tool's own ``ToolRuntime.max_result_bytes``.
        rerun: The calls to dispatch again, in call order: replay-safe calls that
            were interrupted (the ledger released them for one more start), calls
            the ledger never saw start, and released calls the host passed (a call
            its tool deferred: dispatched again, it asks again). A call that finished
            before the crash is also listed: dispatching it runs it again if it is
            replay-safe and answers it as already started (without running it) if not.
        events: One ``ToolEffectReconciled`` per interrupted call, outcome
            ``"rerun"`` or ``"interrupted"``.
    """

    messages: tuple[ToolMessage, ...]
    rerun: tuple[ToolCall, ...]
    events: tuple[Event, ...] = ()


def replay_safe(tool: AnyTool | None) -> bool:
    """Whether a call of ``tool`` interrupted by a crash may run again: its policy is
    classified and says ``runtime.replay="safe"``, read-only (and no side effect that
    writes: ``read_only`` next to ``payment`` contradicts itself) or idempotent. An
    unclassified or unknown tool is not replay-safe."""
    if tool is None:
        return False
    policy = tool.policy
    return bool(policy.classified) and (
        policy.runtime.replay == "safe" or reads_only(policy) or policy.runtime.idempotent
    )


def reconcile(
    calls: Iterable[ToolCall],
    tools: Registry | Toolset | Iterable[AnyTool],
    ledger: EffectLedger,
    run_id: str,
    *,
    on_event: Callable[[Event], object] | None = None,
) -> Reconciled:
    """Decide, after a crash, what becomes of each call of ``run_id`` left unresolved.

    Pass the calls of the interrupted batch that the host holds no answer for (the
    model's last tool calls, as they were dispatched). For each call the ledger shows
    started and never settled:

    * a replay-safe tool (see :func:`replay_safe`) is released in the ledger and
      listed in ``rerun``, for the next ``dispatch`` with the same ``run_id``;
    * any other gets an error ``ToolMessage`` with status ``"interrupted"`` telling
      the model the effect may or may not have happened, and is settled as
      ``"interrupted"``, so it never runs again.

    Calls the ledger never saw start are listed in ``rerun`` (they never ran), and so
    are released calls (with the built-in ledgers, which tell them): a call has not
    acted since it was released — its tool deferred it before acting (it waits for a
    decision), or an earlier ``reconcile`` released it for a re-run — so dispatching it
    again asks for the decision again, or re-runs a replay-safe call. An unresolved
    call of ``run_id`` missing from ``calls`` is reconciled from its ledger row: re-run
    only if replay-safe and its tool redacts nothing (the row's arguments are redacted),
    else interrupted — except a released call of a tool that is not replay-safe, which
    waits for the host's decision on its deferral: it is left as it is (neither answered
    nor listed, no event), for the host's resume. Run it only once the run's worker is
    gone: a call still running elsewhere would be answered as interrupted.

    Args:
        calls: The interrupted batch's calls the host has no answer for.
        tools: The tools (their policies say what is replay-safe): a ``Registry``, the
            toolset the batch was dispatched with (resolved without a context), or the
            tools themselves.
        ledger: The ledger the run used.
        run_id: The interrupted run's ``Context.run_id``.
        on_event: Receives each ``ToolEffectReconciled`` event too.

    Raises:
        Exception: Whatever the ledger raised (``LedgerError`` for the built-in
            ones); calls reconciled before it stay reconciled.
    """
    registry = registry_for(tools, None)  # a toolset: the names the model saw, as dispatched
    batch = tuple(calls)
    open_rows = {row.call_id: row for row in ledger.unresolved(run_id)}
    released = _released(ledger, run_id) if open_rows else frozenset()
    messages: list[ToolMessage] = []
    rerun: list[ToolCall] = []
    events: list[Event] = []

    def decide(call: ToolCall, row: LedgerEntry | None, rebuilt: bool) -> None:
        # The row names the tool that started (a `tool_call` the host holds was unwrapped
        # into it; a call naming another tool under this id does not make it replay-safe).
        name = call.name if row is None else row.tool_name
        tool = registry.get(name)
        safe = replay_safe(tool) and not (rebuilt and tool is not None and tool.policy.redact)
        waiting = row is not None and call.id in released  # it has not acted since
        if waiting and rebuilt and not replay_safe(tool):
            return  # a deferral that waits for the host's decision: the host resumes it
        if safe or (waiting and not rebuilt):
            if not waiting:
                release(ledger, run_id, call.id)
            safe = True
            rerun.append(call)
        elif row is None:
            rerun.append(call)
        else:
            ledger.settled(run_id, call.id, "interrupted")
            messages.append(
                ToolMessage(
                    tool_call_id=call.id,
                    name=name,
                    # (cut to the tool's own byte limit, as dispatch cuts its messages)
                    content=truncate(INTERRUPTED, None if tool is None else tool._plan.limit),
                    is_error=True,
                    status="interrupted",
                )
            )
        if row is not None:
            outcome = "rerun" if safe else "interrupted"
            event = ToolEffectReconciled(call_id=call.id, tool_name=name, outcome=outcome)
            events.append(event)
            if on_event is not None:
                on_event(event)

    for call in batch:
        decide(call, open_rows.pop(call.id, None), rebuilt=False)
    for row in open_rows.values():  # unresolved, and not among the host's calls
        decide(ToolCall(row.call_id, row.tool_name, row.arguments), row, rebuilt=True)
    return Reconciled(tuple(messages), tuple(rerun), tuple(events))


def _released(ledger: EffectLedger, run_id: str) -> frozenset[str]:
    """The ids of the run's released calls, from a ledger that tells them (the built-in
    ones); none from another (its released calls are then reconciled as started ones)."""
    released = getattr(ledger, "_released_ids", None)
    if released is None:
        return frozenset()
    ids: frozenset[str] = released(run_id)
    return ids
