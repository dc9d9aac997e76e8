"""The dispatch invariants (docs/concepts/invariants.md) under random mixes of every
``dispatch`` keyword.

``test_dispatch_invariants.py`` draws batches of calls and the run policy; this module
reuses its registry, call strategies and ``check_dispatch_invariants`` and adds, drawn
together in one example:

* ``on_event``: none, a synchronous recorder, an async one, one that raises at its k-th
  event (the batch must abort with ``DispatchAborted`` whose ``.result`` answers every
  call), one that cancels the batch's ``Cancellation`` at its k-th event, and (in a test
  of its own) one that raises a ``BaseException`` at its k-th event (it must come out of
  dispatch bare);
* ``middleware``: ``before_tool`` hooks (sync, or async under ``await dispatch``) that
  pass, rewrite the arguments, reject, defer (for the host or for approval), approve or
  raise, and ``after_tool`` hooks that keep or rewrite the result, or raise; wrap hooks
  (``wrap_tool`` and ``awrap_tool``) that pass, call ``proceed`` again after an error,
  raise after ``proceed``, or answer from a cache without calling ``proceed`` (the cache
  records what it answered in the tools' journal, as the tool would have: the checker then
  holds the wrap to what it holds a tool to — only callable, approved calls with validated
  arguments — and reads a call that started but that nothing answered as a defect);
* every ``RunPolicy`` limit: ``max_tool_calls``, ``max_concurrency``, ``deadline``,
  ``tool_timeout``, ``max_result_bytes``, ``allowlist`` (an empty one included);
* ``advertised``; ``cancellation`` (cancelled by a tool or by an ``on_event`` handler);
* approvals: an approval-gated tool and one that raises ``ApprovalRequired``; the
  deferred calls of a first pass are resumed with ``DeferredToolResults`` built by
  :func:`decide` (approve, approve with edited arguments, deny, respond), or resolved
  inline by ``on_deferred``.

Each example runs through ``dispatch_sync`` and ``await dispatch`` under trio (autojump
mock clock) and asyncio. Checked: invariant 1 (also when aborted), 2 (with the approval
gate: nothing gated runs unapproved), 3 and 4 against a journal of what the tool
functions received, middleware verdicts kept (rejected and deferred calls never run,
nor reach a wrap; a wrap sees only calls that started),
result byte limits, ``executed`` against the journal, and that messages and events
(also those handed to ``on_event``) encode with ``msgspec.json.encode``. Finally,
"Resuming is pure": the same resume twice gives the same answers.

Budget: ``max_examples`` scales with the hypothesis profile (``tests/conftest.py``);
the development profile keeps this module at about 20 seconds.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import anyio.lowlevel
import attrs
import hypothesis
import msgspec
import pytest
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_dispatch_invariants import (
    CONTEXT,
    GARBAGE,
    INTS,
    INVALID_ARGS_POLICIES,
    UNKNOWN_TOOL_POLICIES,
    Journal,
    _valid,
    build_tools,
    tool_calls,
)

from tinytools import (
    Allow,
    ApprovalRequired,
    CallId,
    Cancellation,
    Defer,
    DeferredToolRequests,
    DeferredToolResults,
    Deny,
    DispatchAborted,
    DispatchResult,
    Inject,
    Registry,
    RunContext,
    RunPolicy,
    ToolCall,
    ToolMessage,
    ToolResult,
    after_tool,
    before_tool,
    dispatch,
    dispatch_sync,
    tool,
    wrap_tool,
)
from tinytools.events import Event, ToolCompleted, ToolFailed, ToolStarted
from tinytools.testing import check_dispatch_invariants

# --- the approvals API, in one place --------------------------------------------------------

#: A host decision on one deferred call: ``(kind, value)`` with kind ``approve``,
#: ``edit`` (value: the edited arguments), ``deny`` (value: the message) or ``respond``
#: (value: the host's result text).
Choice = tuple[str, Any]


def decide(pending: DeferredToolRequests, choices: Mapping[str, Choice]) -> DeferredToolResults:
    """The host's decisions on ``pending``, built with the public builder.

    The only place that spells the approval API: adapt it here when the API changes.
    Calls ``choices`` does not mention stay undecided.
    """
    results = pending.results()  # bound to the pending calls themselves
    for call in pending.all:
        choice = choices.get(call.id)
        if choice is None:
            continue
        kind, value = choice
        if kind == "approve":
            results = results.approve(call.id)
        elif kind == "edit":
            results = results.approve_with_args(call.id, value)
        elif kind == "deny":
            results = results.deny(call.id, value)
        else:
            results = results.respond(call.id, value)
    return results


def approves(choice: Choice | None) -> bool:
    """Whether a decision lets the call run (after re-admission)."""
    return choice is not None and choice[0] in {"approve", "edit"}


def decided_call(call: ToolCall, choice: Choice | None) -> ToolCall:
    """The call a decision resumes: edited arguments replace the model's
    (docs/how-to/approvals.md, ``approve_with_args``)."""
    if choice is not None and choice[0] == "edit":
        return msgspec.structs.replace(call, arguments=dict(choice[1]), invalid=None)
    return call


# --- the registry: the invariant module's tools plus approval and cancellation -------------

GATED = ("gated", "asks")
EXTRA = ("gated", "asks", "stopper")


@attrs.define
class Batch:
    """What the tools and hooks of one dispatch share with the test."""

    journal: Journal = attrs.Factory(Journal)
    cancellation: Cancellation | None = None


def build_registry(batch: Batch, *, tick: float, retries: int) -> Registry:
    """``build_tools`` plus a gated tool, one that asks for approval and one that cancels."""
    journal = batch.journal

    @tool(approval_required=True)
    def gated(x: int, call_id: Inject[CallId]) -> int:
        """Needs a human's approval before it runs."""
        journal.enter(call_id, "gated", {"x": x}, call_id=call_id)
        return x

    @tool
    def asks(x: int, call_id: Inject[CallId], run: Inject[RunContext]) -> int:
        """Asks for approval from inside unless approved."""
        journal.enter(call_id, "asks", {"x": x}, call_id=call_id, approved=run.approved)
        if not run.approved:
            raise ApprovalRequired({"why": "asks"})
        return x

    @tool
    def stopper(x: int, call_id: Inject[CallId]) -> int:
        """Cancel the batch's ``Cancellation`` (when there is one), then return x."""
        journal.enter(call_id, "stopper", {"x": x}, call_id=call_id)
        if batch.cancellation is not None:
            batch.cancellation.cancel()
        return x

    return Registry.of(
        *build_tools(journal, tick=tick, retries=retries).values(), gated, asks, stopper
    )


NAMES = build_registry(Batch(), tick=0, retries=0).names


# --- strategies -----------------------------------------------------------------------------


def _has_surrogate(value: object) -> bool:
    """Lone surrogates cannot be UTF-8 encoded (their own test below; kept out here)."""
    text = value if isinstance(value, str) else repr(value)
    return any("\ud800" <= c <= "\udfff" for c in text)


class HostCall(ToolCall):
    """A host's own call type: a ``ToolCall`` subclass is dispatched as any call."""


@st.composite
def calls(draw: st.DrawFn, index: int) -> ToolCall:
    """A call from the invariant module's strategy, or one to an approval/cancel tool;
    now and then as a :class:`HostCall`."""
    if draw(st.integers(0, 3)) == 0:
        name = draw(st.sampled_from(EXTRA))
        arguments = draw(
            st.fixed_dictionaries({"x": INTS})
            | st.sampled_from([{}, {"x": "1"}, {"x": 1, "y": 2}, "{x: 3,}"])
            | GARBAGE.filter(lambda g: not _has_surrogate(g))
        )
        call = ToolCall(f"call_{index}", name, arguments)  # type: ignore[arg-type]
    else:
        call, _ = draw(
            tool_calls(index).filter(lambda drawn: not _has_surrogate(drawn[0].arguments))
        )
    if draw(st.integers(0, 4)) == 0:
        return HostCall(call.id, call.name, call.arguments, call.invalid)
    return call


BEFORE_ACTIONS = ["pass", "pass", "pass", "rewrite", "reject", "defer", "approval", "approve"]
AFTER_ACTIONS = ["keep", "keep", "keep", "rewrite", "error"]


@st.composite
def choices(draw: st.DrawFn, call: ToolCall) -> Choice | None:
    """What the host decides for ``call`` if it is deferred (None: undecided)."""
    kind = draw(st.sampled_from(["approve", "approve", "edit", "deny", "respond", "none"]))
    if kind == "none":
        return None
    if kind == "edit":
        target = call.name if call.name in NAMES else "echo"
        value = draw(_valid(target) | st.fixed_dictionaries({"x": st.text(max_size=3)}))
        return kind, value
    if kind == "deny":
        return kind, draw(st.sampled_from(["operator refused", "no"]))
    return kind, draw(st.sampled_from(["host did it", "{}", "x" * 300]))


@attrs.frozen
class Hooks:
    """The middleware plan: per before hook and per after hook, call id → action."""

    befores: tuple[tuple[bool, Mapping[str, tuple[str, Any]]], ...]  # (is_async, plan)
    afters: tuple[Mapping[str, str], ...]
    wraps: tuple[tuple[bool, Mapping[str, str]], ...] = ()  # (is_async, call id → action)


@attrs.frozen
class Example:
    """One drawn example: the batch and every keyword it is dispatched with."""

    calls: tuple[ToolCall, ...]
    policy: RunPolicy
    advertised: frozenset[str] | None
    retries: int
    hooks: Hooks
    on_event: str  # none | sync | async | raise | cancel | halt | ahalt (async)
    event_k: int
    cancellation: bool
    inline: bool  # on_deferred resolves the deferred calls inline
    decisions: Mapping[str, Choice | None]


def _sometimes_names(excluded: str) -> st.SearchStrategy[frozenset[str] | None]:
    names = st.sets(st.sampled_from(NAMES), max_size=3).map(
        lambda drop: frozenset(NAMES) - drop - {excluded}
    )
    return st.sampled_from([None, None, "set"]).flatmap(
        lambda how: st.none() if how is None else names
    )


@st.composite
def examples(
    draw: st.DrawFn,
    runner: str,
    *,
    raising_handler: bool = True,
    raising_after: bool = True,
    raising_before: bool = True,
    async_handler: bool = True,
    inline_edits: bool = True,
    resumable: bool = False,
) -> Example:
    """One example for ``runner``.

    ``raising_handler``: ``on_event`` may raise; ``raising_after``: an ``after_tool``
    hook may raise; ``raising_before``: a ``before_tool`` hook may raise;
    ``async_handler``: ``on_event`` may be async; ``inline_edits``: ``on_deferred`` may
    approve with edited arguments; ``resumable``: the batch ends with a gated call.
    """
    size = draw(st.integers(0, 7))
    batch = [draw(calls(index)) for index in range(size)]
    if resumable:
        batch.append(ToolCall(f"call_{size}", draw(st.sampled_from(GATED)), {"x": draw(INTS)}))
    if batch and draw(st.integers(0, 3)) == 0:  # a model repeating a call's id
        # Often a gated call's, which is deferred: its answer comes from the resumed pass.
        gated = [i for i, c in enumerate(batch) if c.name in GATED]
        if gated and draw(st.booleans()):
            earlier = draw(st.sampled_from(gated))
        else:
            earlier = draw(st.integers(0, len(batch) - 1))
        repeat = msgspec.structs.replace(draw(calls(len(batch))), id=batch[earlier].id)
        batch.insert(draw(st.integers(earlier + 1, len(batch))), repeat)
    timeouts = [None, 2.5] if runner == "trio" else [None, None, 30.0]
    allowlist = st.sampled_from([None, None, "set", "empty"]).flatmap(
        lambda how: (
            st.none()
            if how is None
            else st.just(frozenset())
            if how == "empty"
            else st.sets(st.sampled_from(NAMES), max_size=3).map(
                lambda drop: frozenset(NAMES) - drop - {"forbidden_op"}
            )
        )
    )
    policy = RunPolicy(
        unknown_tool=draw(st.sampled_from(UNKNOWN_TOOL_POLICIES)),
        invalid_args=draw(st.sampled_from(INVALID_ARGS_POLICIES)),
        max_tool_calls=draw(st.sampled_from([None, None, None, 0, 1, 3])),
        max_concurrency=draw(st.sampled_from([1, 1, 2, 8])),
        # A deadline only under trio's mock clock; never when resuming twice must answer
        # the same: a thread's real time against the mock clock is not repeatable.
        deadline=draw(
            st.sampled_from(
                [None, None, None, 0.5, 3.5] if runner == "trio" and not resumable else [None]
            )
        ),
        tool_timeout=None if resumable else draw(st.sampled_from(timeouts)),  # timing is not pure
        max_result_bytes=draw(st.sampled_from([None, None, 100, 2000])),
        allowlist=None if resumable else draw(allowlist),
        retry_base_delay=0.001,
        retry_max_delay=0.002,
    )
    ids = [call.id for call in batch]
    before_actions = [*BEFORE_ACTIONS, *(["raise"] if raising_before else [])]
    after_actions = [*AFTER_ACTIONS, *(["raise"] if raising_after else [])]
    befores = []
    for _ in range(draw(st.integers(0, 2))):
        is_async = runner != "sync" and draw(st.booleans())
        plan: dict[str, tuple[str, Any]] = {}
        for call_id in ids:
            action = draw(st.sampled_from(before_actions))
            if action == "raise" and draw(st.integers(0, 3)):
                action = "pass"  # a raising hook aborts everything: keep it rare
            value = draw(_valid(draw(st.sampled_from(NAMES)))) if action == "rewrite" else None
            plan[call_id] = (action, value)
        befores.append((is_async, plan))
    afters = []
    for _ in range(draw(st.integers(0, 2))):
        actions = {}
        for call_id in ids:
            action = draw(st.sampled_from(after_actions))
            if action == "raise" and draw(st.integers(0, 3)):
                action = "keep"
            actions[call_id] = action
        afters.append(actions)
    wraps = []
    for _ in range(draw(st.integers(0, 2))):
        is_async = draw(st.booleans())
        wraps.append((is_async, {call_id: draw(st.sampled_from(WRAP_ACTIONS)) for call_id in ids}))
    handlers = ["none", "none", "sync", "cancel", *(["raise"] * 2 if raising_handler else [])]
    if runner != "sync" and async_handler:
        handlers.append("async")
    inline = draw(st.booleans())
    decisions = {call.id: draw(choices(call)) for call in batch}
    if inline and not inline_edits:
        decisions = {i: None if c and c[0] == "edit" else c for i, c in decisions.items()}
    if not raising_after:  # nor the denial an after hook turns into a success
        for call_id, choice in decisions.items():
            if choice is not None and choice[0] == "deny":
                afters = [{**plan, call_id: "keep"} for plan in afters]
    return Example(
        calls=tuple(batch),
        policy=policy,
        advertised=None if resumable else draw(_sometimes_names("unadvertised_op")),
        retries=draw(st.integers(0, 2)),
        hooks=Hooks(tuple(befores), tuple(afters), tuple(wraps)),
        on_event=draw(st.sampled_from(handlers)),
        event_k=draw(st.integers(1, 8)),
        cancellation=draw(st.booleans()),
        inline=inline,
        decisions=decisions,
    )


# --- running an example ---------------------------------------------------------------------


class HandlerFailed(Exception):
    """What the raising ``on_event`` handler and hooks raise."""


class Halt(BaseException):
    """What a halting ``on_event`` handler raises: the host's, never caught by dispatch."""


@attrs.define
class Log:
    """What the hooks and handlers saw (thread-safe: events may come from worker threads)."""

    #: Call id → the call as the last before hook let it go on, and that hook's action.
    admitted: dict[str, tuple[ToolCall, str]] = attrs.Factory(dict)
    approved: set[str] = attrs.Factory(set)
    events: list[Event] = attrs.Factory(list)
    #: The ids ``on_deferred`` was asked about (it was called when not empty).
    pending: list[str] = attrs.Factory(list)
    #: ``admitted`` as the first pass left it (when ``on_deferred`` was asked).
    first: dict[str, tuple[ToolCall, str]] = attrs.Factory(dict)
    #: The ids of the calls a wrap hook saw.
    wrapped: set[str] = attrs.Factory(set)
    _lock: threading.Lock = attrs.Factory(threading.Lock)

    def wrap(self, call: ToolCall) -> None:
        with self._lock:
            self.wrapped.add(call.id)

    def hook(self, call: ToolCall, action: str, outcome: ToolCall) -> None:
        with self._lock:
            self.admitted[call.id] = (outcome, action)
            if action == "approve":
                self.approved.add(call.id)


def middleware(example: Example, log: Log, journal: Journal) -> list[object]:
    """The example's middleware: its before hooks (in order), its after hooks, then its
    wraps (a cache among them answers into ``journal``)."""
    stack: list[object] = []
    for is_async, plan in example.hooks.befores:

        def outcome(call: ToolCall, env: object, plan: Any = plan) -> object:
            action, value = plan.get(call.id, ("pass", None))
            if action == "raise":
                raise HandlerFailed(f"before_tool refuses {call.id}")
            if action == "rewrite":
                call = msgspec.structs.replace(call, arguments=dict(value), invalid=None)
            log.hook(call, action, call)
            if action == "reject":
                return Deny(f"middleware rejects {call.id}")
            if action in {"defer", "approval"}:
                kind = "approval" if action == "approval" else "deferred"
                return Defer({"by": "middleware"}, kind=kind)
            if action == "approve":
                return Allow(call)
            return call

        if is_async:

            async def later(call: ToolCall, env: object, outcome: Any = outcome) -> object:
                await anyio.lowlevel.checkpoint()
                return outcome(call, env)

            stack.append(before_tool(later))
        else:
            stack.append(before_tool(outcome))
    for actions in example.hooks.afters:

        def rewrite(
            call: ToolCall, result: ToolResult, env: object, actions: Any = actions
        ) -> ToolResult:
            action = actions.get(call.id, "keep")
            if action == "raise":
                raise HandlerFailed(f"after_tool refuses {call.id}")
            # Both rewrites keep the text: "timed out" tells a call abandoned in its thread.
            text = "".join(getattr(block, "text", "") for block in result.content)
            if action == "rewrite":
                return ToolResult.success(f"{text} after:{call.id}:" + "y" * 200)
            if action == "error":
                return ToolResult.error(f"{text} after hook says no to {call.id}")
            return result

        stack.append(after_tool(rewrite))
    stack.extend(wrap(is_async, actions, log, journal) for is_async, actions in example.hooks.wraps)
    return stack


#: What a drawn wrap does with a call.
WRAP_ACTIONS = ["pass", "pass", "again", "raise after", "cache"]


def wrap(is_async: bool, actions: Mapping[str, str], log: Log, journal: Journal) -> object:
    """A wrap hook (``awrap_tool`` when ``is_async``) doing each call's drawn action.

    A ``cache`` answers without calling ``proceed``, and records the call in ``journal``
    as the tool it stands for would have: its validated arguments, the id, the tool.
    """

    def before(call: ToolCall) -> ToolResult | None:
        log.wrap(call)
        if actions.get(call.id) != "cache":
            return None
        journal.enter(call.id, call.name, dict(call.arguments), cached=True)  # type: ignore[arg-type]
        return ToolResult.success(f"cached answer for {call.id}")

    def after(call: ToolCall, result: ToolResult) -> ToolResult:
        if actions.get(call.id) == "raise after":
            raise HandlerFailed(f"wrap refuses the result of {call.id}")
        return result

    if is_async:

        async def awrap(call: ToolCall, env: object, proceed: Any) -> ToolResult:
            cached = before(call)
            if cached is not None:
                return cached
            result = await proceed()
            if result.is_error and actions.get(call.id) == "again":
                result = await proceed()
            return after(call, result)

        return wrap_tool(awrap)

    def sync_wrap(call: ToolCall, env: object, proceed: Any) -> ToolResult:
        cached = before(call)
        if cached is not None:
            return cached
        result = proceed()
        if result.is_error and actions.get(call.id) == "again":
            result = proceed()
        return after(call, result)

    return wrap_tool(sync_wrap)


#: The events a halting ``on_event`` handler counts.
_LIFECYCLE = (ToolStarted, ToolCompleted, ToolFailed)


def on_event(example: Example, log: Log, cancellation: Cancellation | None) -> Any:
    """The example's ``on_event`` handler (None, sync, async, raising or cancelling)."""
    kind, k = example.on_event, example.event_k

    def record(event: Event) -> None:
        with log._lock:
            log.events.append(event)
            count = len(log.events)
        if kind == "raise" and count == k:
            raise HandlerFailed(f"on_event refuses event {count}")
        if kind in {"halt", "ahalt"} and isinstance(event, _LIFECYCLE):
            # (counting a call's own events only: most then come while calls run at once)
            with log._lock:
                seen = sum(isinstance(e, _LIFECYCLE) for e in log.events)
            if seen == k:
                raise Halt(f"on_event halts at call event {k}")
        if kind == "cancel" and count == k and cancellation is not None:
            cancellation.cancel()

    async def arecord(event: Event) -> None:
        record(event)  # the order the handler is called in
        await anyio.lowlevel.checkpoint()

    return {"none": None, "async": arecord, "ahalt": arecord}.get(kind, record)


def dispatch_with(
    runner: str, batch: Sequence[ToolCall], registry: Registry, options: dict[str, Any]
) -> DispatchResult:
    """Dispatch with ``runner``: ``dispatch_sync``, or ``await dispatch`` on a backend."""
    if runner == "sync":
        return dispatch_sync(batch, registry, **options)

    async def main() -> DispatchResult:
        with anyio.fail_after(10_000 if runner == "trio" else 60):
            return await dispatch(batch, registry, **options)

    clock = {"clock": trio.testing.MockClock(autojump_threshold=0)} if runner == "trio" else {}
    return anyio.run(main, backend=runner, backend_options=clock)


@attrs.frozen
class Pass:
    """One dispatch of an example and everything needed to check it."""

    calls: tuple[ToolCall, ...]
    result: DispatchResult
    aborted: DispatchAborted | None
    approved: frozenset[str]  # ids a decision or a hook approved in this pass
    resolved: frozenset[str]  # ids a host decision answered (deny, respond)
    merged: bool  # on_deferred merged a resume into the result
    log: Log
    effective: tuple[ToolCall, ...]  # the calls as the tools' admission saw them
    first: tuple[ToolCall, ...]  # the calls as the first pass's admission saw them


def run_pass(
    example: Example,
    runner: str,
    batch: Batch,
    registry: Registry,
    calls_: Sequence[ToolCall],
    approvals: DeferredToolResults | None,
    decided: Mapping[str, Choice | None],
) -> Pass:
    """Dispatch ``calls_`` with every keyword of ``example``; nothing may escape but an abort."""
    log = Log()
    inline = example.inline and approvals is None
    options: dict[str, Any] = {
        "policy": example.policy,
        "context": CONTEXT,
        "advertised": example.advertised,
        "middleware": middleware(example, log, batch.journal),
        "on_event": on_event(example, log, batch.cancellation),
        "cancellation": batch.cancellation,
        "approvals": approvals,
    }
    if inline:

        def on_deferred(pending: DeferredToolRequests) -> DeferredToolResults:
            log.pending.extend(call.id for call in pending.all)
            with log._lock:
                log.first.update(log.admitted)
            return decide(pending, example.decisions)

        options["on_deferred"] = on_deferred
    aborted = None
    try:
        result = dispatch_with(runner, calls_, registry, options)
    except DispatchAborted as error:
        aborted, result = error, error.result
    resumed = decided if approvals is not None else {i: example.decisions[i] for i in log.pending}
    approved = {i for i, c in resumed.items() if approves(c)} | log.approved
    resolved = {i for i, c in resumed.items() if c is not None and not approves(c)}
    effective = tuple(_effective(call, log, resumed.get(call.id)) for call in calls_)
    first = tuple(log.first.get(call.id, (call, ""))[0] for call in calls_)
    return Pass(
        tuple(calls_),
        result,
        aborted,
        frozenset(approved),
        frozenset(resolved),
        bool(log.pending),
        log,
        effective,
        first,
    )


def _effective(call: ToolCall, log: Log, choice: Choice | None) -> ToolCall:
    """The call after an edit on resume and the before hooks' rewrites."""
    seen = log.admitted.get(call.id)
    return seen[0] if seen is not None else decided_call(call, choice)


def admitted_arguments(call: ToolCall, name: str, policy: RunPolicy) -> list[dict[str, object]]:
    """What tool ``name`` receives when ``call`` alone is dispatched under ``policy``'s
    argument policies, with no hook, every tool advertised and every deferral approved: the
    arguments admission makes of that form of the call (read from a fresh registry's
    journal)."""
    batch = Batch()
    registry = build_registry(batch, tick=0, retries=0)
    alone = RunPolicy(unknown_tool=policy.unknown_tool, invalid_args=policy.invalid_args)
    # (A Fail policy or a fatal tool aborts the batch: what entered is journaled.)
    with contextlib.suppress(DispatchAborted):
        dispatch_sync(
            [call],
            registry,
            policy=alone,
            context=CONTEXT,
            advertised=registry.names,
            on_deferred=lambda pending: pending.approve_all(),
        )
    return [entry.arguments for entry in batch.journal.snapshot() if entry.tool == name]


def check_pass(example: Example, batch: Batch, registry: Registry, done: Pass) -> None:
    """Every invariant for one pass."""
    result, policy = done.result, example.policy
    ran = batch.journal.snapshot()
    _note(done)
    if any(entry.injected.get("cached") for entry in ran):
        hypothesis.event("a wrap answered from its cache")
    # Messages and events must reach a transcript and a log: they encode as JSON.
    msgspec.json.encode(result.messages)
    msgspec.json.encode(result.events)
    msgspec.json.encode(done.log.events)
    # The calls as the first pass's hooks left them: a resumed pass may run on the host's
    # edited arguments, which the checker checks against the schema.
    check_dispatch_invariants(
        done.first if done.merged else done.effective,
        result,
        registry,
        ran=ran,
        policy=policy,
        advertised=example.advertised,
        resolved=done.resolved,
    )
    if done.merged:
        # What the test knows beyond the checker: a run is on the model's or the host's
        # form of its call.
        by_id: dict[str, ToolCall] = {}
        originals: dict[str, ToolCall] = {}
        for effective, call in zip(done.effective, done.calls, strict=True):
            by_id.setdefault(effective.id, effective)
            originals.setdefault(call.id, call)
        for entry in ran:
            admissible = [
                *admitted_arguments(originals[entry.call_id], entry.tool, policy),
                *admitted_arguments(by_id[entry.call_id], entry.tool, policy),
            ]
            assert entry.arguments in admissible, (
                f"invariant 3: {entry!r} ran on arguments neither form of its call gives"
            )
    if done.log.events and example.on_event in {"sync", "async"} and done.aborted is None:
        seen = done.log.events
        if batch.cancellation is not None and batch.cancellation.cancelled:
            # An async handler the batch's cancellation cut off is handed its event again
            # at the next flush (twice rather than never: Sink.flush).
            seen = [e for i, e in enumerate(seen) if i == 0 or e != seen[i - 1]]
        assert list(result.events) == seen, "on_event saw other events than returned"
    messages: dict[str, list[ToolMessage]] = {}  # by id: a batch may repeat one
    for message in result.messages:
        messages.setdefault(message.tool_call_id, []).append(message)
    deferred = {c.id for c in result.deferred.all} if result.deferred else set()
    entered = {entry.call_id for entry in ran}
    for entry in ran:
        if entry.tool == "gated" or entry.injected.get("approved"):
            assert entry.call_id in done.approved, (
                f"invariant 2: approval-gated {entry.tool!r} ran for {entry.call_id!r}, which "
                f"no decision and no hook approved (approved: {sorted(done.approved)})"
            )
    started = {e.call_id for e in result.events if isinstance(e, ToolStarted)}
    started |= {e.call_id for e in done.log.events if isinstance(e, ToolStarted)}
    assert done.log.wrapped <= started, (
        f"a wrap saw {sorted(done.log.wrapped - started)}, which never started"
    )
    if not done.merged:
        for call_id, (_, action) in done.log.admitted.items():
            if action in {"reject", "defer", "approval"} and call_id not in started:
                assert call_id not in done.log.wrapped, f"a wrap saw {action} call {call_id!r}"
            if action == "reject":
                assert call_id not in entered, f"rejected call {call_id!r} ran"
                statuses = {m.status for m in messages[call_id]}
                assert statuses & {"denied", "interrupted"}, messages[call_id]
            if action in {"defer", "approval"}:
                assert call_id not in entered, f"middleware-deferred call {call_id!r} ran"
                assert call_id in deferred or done.aborted is not None, (call_id, deferred)
    most = policy.max_tool_calls
    if most is not None:  # one dispatch, its inline resume included, shares one budget
        started = set(result.executed)
        assert len(started) <= most, f"{sorted(started)} started; max_tool_calls={most}"
    limit = policy.max_result_bytes
    if limit is not None:  # every message: a tool's output and admission's refusals alike
        for call_id, answered in messages.items():
            for message in answered:
                size = len(message.content.encode("utf-8", "surrogatepass"))
                assert size <= limit, f"{call_id!r}: {size} bytes over max_result_bytes={limit}"
    if (
        done.aborted is None
        and example.on_event == "raise"
        and len(done.log.events) >= max(example.event_k, 1)
    ):
        pytest.fail(f"on_event raised at event {example.event_k}, yet the batch was not aborted")


def _note(done: Pass) -> None:
    if done.aborted is not None:
        hypothesis.event("aborted")
    if done.merged:
        hypothesis.event("on_deferred merged")
        if len({c.id for c in done.calls}) < len(done.calls):
            hypothesis.event("on_deferred merged, an id repeated")
    for message in done.result.messages:
        hypothesis.event(f"status: {message.status}")
    if done.result.deferred is not None:
        hypothesis.event("deferred")


def run_example(example: Example, runner: str) -> None:
    """The first pass, then (when calls were deferred) a resume with the drawn decisions."""
    tick = 1.0 if runner == "trio" else 0.0
    batch = Batch(cancellation=Cancellation() if example.cancellation else None)
    registry = build_registry(batch, tick=tick, retries=example.retries)
    first = run_pass(example, runner, batch, registry, example.calls, None, {})
    check_pass(example, batch, registry, first)
    pending = first.result.deferred
    if pending is None or first.merged:
        return
    decided = {c.id: example.decisions.get(c.id) for c in pending.all}
    resume_calls = tuple(c for c in pending.all if decided[c.id] is not None)
    if not resume_calls:
        return
    order = {c.id: i for i, c in enumerate(example.calls)}
    resume_calls = tuple(sorted(resume_calls, key=lambda c: order[c.id]))
    batch = Batch(cancellation=Cancellation() if example.cancellation else None)
    registry = build_registry(batch, tick=tick, retries=example.retries)
    results = decide(pending, example.decisions)
    second = run_pass(example, runner, batch, registry, resume_calls, results, decided)
    check_pass(example, batch, registry, second)


# --- the tests ------------------------------------------------------------------------------


def _budget(share: float) -> settings:
    """``share`` of the profile's ``max_examples`` (the development profile: 100)."""
    return settings(
        deadline=None,
        max_examples=max(1, int(settings().max_examples * share)),
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


@pytest.fixture(params=["sync", "trio", "asyncio"])
def runner(request: pytest.FixtureRequest) -> str:
    """``dispatch_sync``, or ``await dispatch`` under trio or asyncio."""
    return str(request.param)


class TestEveryKeyword:
    """Invariants 1-4 and 7 for any mix of dispatch keywords, on every runner."""

    @_budget(1.0)
    @given(data=st.data())
    def test_any_mix(self, runner: str, data: st.DataObject) -> None:
        """Any mix: handlers and hooks that raise abort the batch, every call answered."""
        run_example(data.draw(examples(runner)), runner)

    @_budget(0.5)
    @given(data=st.data())
    def test_resolved_inline(self, runner: str, data: st.DataObject) -> None:
        """Any mix resolved inline by ``on_deferred``, the batch ending with a gated call:
        the checker holds for the merged result (it failed a correct one: a tool that asked
        for approval and, approved, ran again)."""
        example = attrs.evolve(data.draw(examples(runner, resumable=True)), inline=True)
        run_example(example, runner)


class TestHostBaseException:
    @_budget(0.3)
    @given(data=st.data())
    def test_a_halting_handler_comes_out_bare(self, runner: str, data: st.DataObject) -> None:
        """Any mix: an ``on_event`` handler (sync or async) raising a BaseException that is
        no Exception at the k-th event of a call's run (started, completed, failed) ends
        dispatch with that very exception — never in a group, whatever the concurrency,
        runner or stage; a batch that never reached that event is checked as any other."""
        example = data.draw(examples(runner))
        concurrency = data.draw(st.sampled_from([1, 4, 8]))  # (half the batches in a group)
        example = attrs.evolve(
            example,
            on_event=data.draw(st.sampled_from(["halt", "ahalt"])),
            event_k=data.draw(st.integers(1, 3)),
            policy=attrs.evolve(example.policy, max_concurrency=concurrency),
        )
        halted: Halt | None = None
        try:
            run_example(example, runner)
        except Halt as error:  # (a group holding it is not caught: the test fails)
            halted = error
        if halted is not None:
            assert f"on_event halts at call event {example.event_k}" == str(halted)
            hypothesis.event("halted")


def _echo_registry() -> Registry:
    @tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    return Registry.of(echo)


class TestFoundDefects:
    """One small example per defect the properties above found (issue 10), each fixed."""

    def test_on_event_raising_during_admission_aborts(self) -> None:
        """A raising ``on_event`` aborts the batch with every call answered."""

        def handler(event: Event) -> None:
            raise HandlerFailed("on_event")

        calls = [ToolCall("1", "nope", {}), ToolCall("2", "echo", {"text": "x"})]
        with pytest.raises(DispatchAborted) as aborted:
            dispatch_sync(calls, _echo_registry(), on_event=handler)

        assert ["1", "2"] == [m.tool_call_id for m in aborted.value.result.messages]

    def test_after_hook_raising_keeps_what_ran(self) -> None:
        """A call that ran before its after hook raised is reported as having run."""

        def refuse(call: ToolCall, result: ToolResult, env: object) -> ToolResult:
            raise HandlerFailed("after_tool")

        calls = [ToolCall("1", "echo", {"text": "x"})]
        with pytest.raises(DispatchAborted) as aborted:
            dispatch_sync(calls, _echo_registry(), middleware=[after_tool(refuse)])

        result = aborted.value.result
        assert ("1",) == result.executed
        assert "not run" not in result.messages[0].content

    def test_after_hook_on_denied_call_agrees_with_event(self) -> None:
        """A denied call's ToolCompleted agrees with its message on ``is_error``."""
        restore = after_tool(lambda call, result, env: ToolResult.success("fine"))
        calls = [ToolCall("1", "echo", {"text": "x"})]
        pending = DeferredToolRequests(approvals=tuple(calls))
        results = decide(pending, {"1": ("deny", "no")})

        result = dispatch_sync(calls, _echo_registry(), middleware=[restore], approvals=results)

        completed = [e for e in result.events if type(e).__name__ == "ToolCompleted"]
        assert [result.messages[0].is_error] == [e.is_error for e in completed]

    def test_before_hook_raising_keeps_earlier_answers(self) -> None:
        """Calls answered before a hook raised keep their own answers."""

        def refuse(call: ToolCall, env: object) -> ToolCall:
            if call.id == "2":
                raise HandlerFailed("before_tool")
            return call

        calls = [ToolCall("1", "nope", {}), ToolCall("2", "echo", {"text": "x"})]
        with pytest.raises(DispatchAborted) as aborted:
            dispatch_sync(calls, _echo_registry(), middleware=[before_tool(refuse)])

        assert "Unknown tool `nope`" in aborted.value.result.messages[0].content

    @pytest.mark.parametrize("backend", ["trio", "asyncio"])
    def test_async_on_event_in_order(self, backend: str) -> None:
        """An async handler is called with the events in the order they are returned."""
        seen: list[Event] = []

        async def handler(event: Event) -> None:
            seen.append(event)
            await anyio.lowlevel.checkpoint()

        calls = [ToolCall(str(i), "echo", {"text": "x"}) for i in range(4)]

        async def main() -> DispatchResult:
            policy = RunPolicy(max_concurrency=4)
            return await dispatch(calls, _echo_registry(), policy=policy, on_event=handler)

        result = anyio.run(main, backend=backend)

        assert list(result.events) == seen

    def test_inline_edit_deferred_again_once(self) -> None:
        """A call deferred again after an inline edit is listed once."""
        defer = before_tool(lambda call, env: Defer())

        result = dispatch_sync(
            [ToolCall("a", "echo", {"text": "x"})],
            _echo_registry(),
            middleware=[defer],
            on_deferred=lambda p: decide(p, {"a": ("edit", {"text": "y"})}),
        )

        assert result.deferred is not None
        assert ["a"] == [c.id for c in result.deferred.all], result.deferred

    @pytest.mark.parametrize("arguments", [{"text": "\udc80"}, "\udc80"], ids=["dict", "text"])
    def test_lone_surrogate_encodes(self, arguments: object) -> None:
        """Messages and events encode as JSON whatever text the arguments carried."""
        result = dispatch_sync([ToolCall("1", "echo", arguments)], _echo_registry())  # type: ignore[arg-type]

        msgspec.json.encode(result.messages)
        msgspec.json.encode(result.events)


class TestResumeIsPure:
    @_budget(0.2)
    @given(data=st.data())
    def test_same_resume_twice(self, runner: str, data: st.DataObject) -> None:
        """Dispatching the same calls with the same decisions twice answers the same."""
        example = data.draw(examples(runner, raising_handler=False, resumable=True))
        example = attrs.evolve(example, inline=False, on_event="none", cancellation=False)
        tick = 1.0 if runner == "trio" else 0.0
        batch = Batch()
        registry = build_registry(batch, tick=tick, retries=example.retries)
        first = run_pass(example, runner, batch, registry, example.calls, None, {})
        pending = first.result.deferred
        hypothesis.assume(pending is not None and first.aborted is None)
        assert pending is not None
        decided = {c.id: example.decisions.get(c.id) for c in pending.all}
        results = decide(pending, example.decisions)
        answers = []
        for _ in range(2):
            batch = Batch()
            registry = build_registry(batch, tick=tick, retries=example.retries)
            again = run_pass(example, runner, batch, registry, pending.all, results, decided)
            answers.append([(m.tool_call_id, m.status, m.content) for m in again.result.messages])
        assert answers[0] == answers[1], "the same resume twice gave different answers"

    def test_same_resume_twice_minimal(self) -> None:
        """The smallest case: one gated call, approved, resumed twice."""

        @tool(approval_required=True)
        def gated(x: int) -> int:
            """Needs approval."""
            return x

        calls = [ToolCall("1", "gated", {"x": 1})]
        pending = dispatch_sync(calls, Registry.of(gated)).deferred
        assert pending is not None
        results = decide(pending, {"1": ("approve", None)})

        once = dispatch_sync(pending.all, Registry.of(gated), approvals=results)
        twice = dispatch_sync(pending.all, Registry.of(gated), approvals=results)

        assert once.messages == twice.messages
