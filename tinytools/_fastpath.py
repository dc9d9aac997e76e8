"""The fast path: a batch that needs none of the pipeline's machinery, run directly.

Most batches are plain: no middleware, no event handler, no approvals, ledger,
artifact store, cancellation handle or advertised set; a policy without
limits; and every call naming a *plain* tool (a function with nothing to
inject, gate, thread, time out, redact or cut — see ``Registry``) with
arguments that validate. For those, admission has nothing to say and the
fold nothing to add, so this module runs the calls and builds the same
``DispatchResult`` the general path would, at a fraction of the cost.

Equivalence is the rule: whenever a call would need the general path — an
unknown tool, bad arguments, a repeated call id — nothing runs here and the
whole batch goes to the general path from the start; when a tool raises or
returns a ``ToolResult`` (or a value that needs the full fold), the batch is
*promoted*: the general path takes over at that call, with everything done
so far, and never runs a call twice. A property test checks that both paths
give equal results.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable

import anyio
import anyio.lowlevel
import msgspec
import sniffio
import trio
from msgspec.structs import asdict as _asdict

from ._artifacts import ToolOutput
from ._inject import Context
from ._registry import AnyTool, Registry
from ._result import DispatchResult
from ._wire import ToolCall, ToolMessage, ToolResult
from .errors import FatalToolError, ToolArgumentsError
from .events import Event, ToolCompleted, ToolStarted
from .policies import RunPolicy

__all__ = [
    "DEFAULT_POLICY",
    "Plan",
    "PromoteAsync",
    "PromoteSpread",
    "PromoteSync",
    "Special",
    "Spread",
    "eligible",
    "run_async",
    "run_concurrent",
    "run_sync",
]

#: dispatch's default policy: one object, so the plain-policy check is one identity test.
DEFAULT_POLICY = RunPolicy()
_encode = msgspec.json.encode


def _plain_policy(policy: RunPolicy) -> bool:
    return policy is DEFAULT_POLICY or (
        policy.deadline is None
        and policy.max_tool_calls is None
        and policy.tool_timeout is None
        and policy.max_result_bytes is None
        and policy.allowlist is None
    )


def eligible(
    policy: RunPolicy,
    middleware: Iterable[object],
    on_event: object,
    approvals: object,
    ledger: object,
    artifacts: object,
    cancellation: object,
    advertised: Collection[str] | None,
) -> bool:
    """Whether dispatch's other arguments leave room for the fast path (tools: a Registry)."""
    return (
        (middleware == () or middleware == [])
        and on_event is None
        and approvals is None
        and ledger is None
        and artifacts is None
        and cancellation is None
        and advertised is None
        and _plain_policy(policy)
    )


class Special(Exception):
    """The tool returned a ToolResult (or a value msgspec cannot encode): fold it fully."""

    def __init__(self, value: object) -> None:
        self.value = value


class Plan:
    """What the fast path admitted and had done when it handed the batch over."""

    __slots__ = ("admitted", "batch", "events", "messages", "tools")

    def __init__(
        self,
        batch: tuple[ToolCall, ...],
        tools: Registry,
        admitted: list[tuple[ToolCall, AnyTool, dict[str, object]]],
        events: list[Event],
        messages: list[ToolMessage],
    ) -> None:
        self.batch = batch
        self.tools = tools
        self.admitted = admitted
        self.events = events
        self.messages = messages


#: Hands a plan to the general path at call ``at``, with what that call raised (and the
#: dispatch's policy and context, so no closure is built per dispatch).
PromoteSync = Callable[[Plan, int, Exception, RunPolicy, "Context | None"], DispatchResult]
PromoteAsync = Callable[
    [Plan, int, Exception, RunPolicy, "Context | None"], Awaitable[DispatchResult]
]


def _admit(
    batch: tuple[ToolCall, ...], tools: Registry, *, sync: bool
) -> list[tuple[ToolCall, AnyTool, dict[str, object]]] | None:
    """The admitted calls, or None when any call needs the general path's admission."""
    if len(batch) > 1 and len({call.id for call in batch}) != len(batch):
        return None  # repeated ids: the general path refuses them
    plain = tools._plain
    admitted: list[tuple[ToolCall, AnyTool, dict[str, object]]] = []
    for call in batch:
        if type(call) is not ToolCall or call.invalid is not None:
            return None
        tool = plain.get(call.name)
        if tool is None or (sync and tool.is_async):
            return None
        arguments = _validated(tool, call.arguments)
        if arguments is None:
            return None
        admitted.append((call, tool, arguments))
    return admitted


def _validated(tool: AnyTool, raw: dict[str, object] | str) -> dict[str, object] | None:
    """``tool.validate(raw)`` with its raw-JSON hot path inlined; None when it refuses."""
    decode = tool._decode
    if decode is not None and type(raw) is str:
        try:
            return _asdict(decode(raw))
        except (msgspec.MsgspecError, RecursionError, UnicodeError):
            pass  # the full path decides (integral floats are integers there)
    try:  # tool.validate minus the fast decode that just failed
        return tool._validator.validate(tool.name, raw)
    except ToolArgumentsError:
        return None


def _result(
    batch: tuple[ToolCall, ...], events: list[Event], messages: list[ToolMessage]
) -> DispatchResult:
    executed = tuple([call.id for call in batch])  # a list comprehension: no generator frame
    return DispatchResult(tuple(messages), tuple(events), None, (), {}, executed)


def _message_for(call: ToolCall, tool: AnyTool, value: object) -> ToolMessage:
    """The message for a plain return value, as the fold would make it.

    Raises:
        Special: The value needs the full fold.
    """
    if type(value) is str:
        content, output = value, None
    else:
        if isinstance(value, ToolResult):
            raise Special(value)
        try:
            content = _encode(value).decode()
        except (TypeError, ValueError):
            raise Special(value) from None
        # As the fold: a structured output only when there is something structured.
        output = None if value is None else ToolOutput(value, ())
    return ToolMessage(tool_call_id=call.id, name=tool.name, content=content, artifact=output)


def _answer(
    messages: list[ToolMessage], events: list[Event], call: ToolCall, tool: AnyTool, value: object
) -> None:
    """Record a plain value's message and completion (raises ``Special`` as above)."""
    messages.append(_message_for(call, tool, value))
    events.append(ToolCompleted(call_id=call.id, tool_name=tool.name, metadata={}))


def run_sync(
    batch: tuple[ToolCall, ...],
    tools: Registry,
    policy: RunPolicy,
    context: Context | None,
    promote: PromoteSync,
) -> DispatchResult | None:
    """Run a plain batch of sync tools inline; None (nothing run) when it is not plain."""
    admitted = _admit(batch, tools, sync=True)
    if admitted is None:
        return None
    events: list[Event] = []
    messages: list[ToolMessage] = []
    for index, (call, tool, arguments) in enumerate(admitted):
        events.append(ToolStarted(call_id=call.id, tool_name=tool.name, arguments=arguments))
        try:
            _answer(messages, events, call, tool, tool.fn(**arguments))  # type: ignore[misc]
        except Exception as error:
            plan = Plan(batch, tools, admitted, events, messages)
            return promote(plan, index, error, policy, context)
    return _result(batch, events, messages)


async def run_async(
    batch: tuple[ToolCall, ...],
    tools: Registry,
    policy: RunPolicy,
    context: Context | None,
    promote: PromoteAsync,
) -> DispatchResult | None:
    """Run a plain batch one call after another under the event loop (async tools awaited)."""
    admitted = _admit(batch, tools, sync=False)
    if admitted is None:
        return None
    events: list[Event] = []
    messages: list[ToolMessage] = []
    for index, (call, tool, arguments) in enumerate(admitted):
        events.append(ToolStarted(call_id=call.id, tool_name=tool.name, arguments=arguments))
        try:
            if tool.is_async:
                value = await tool.fn(**arguments)  # type: ignore[misc]
            else:
                await anyio.lowlevel.checkpoint()  # an inline tool never yields: yield first
                value = tool.fn(**arguments)  # type: ignore[misc]
            _answer(messages, events, call, tool, value)
        except Exception as error:
            plan = Plan(batch, tools, admitted, events, messages)
            return await promote(plan, index, error, policy, context)
    return _result(batch, events, messages)


class Spread:
    """What a concurrent fast batch did: per call, its message or what it raised."""

    __slots__ = ("admitted", "batch", "errors", "events", "slots", "started", "tools")

    def __init__(
        self,
        batch: tuple[ToolCall, ...],
        tools: Registry,
        admitted: list[tuple[ToolCall, AnyTool, dict[str, object]]],
    ) -> None:
        self.batch = batch
        self.tools = tools
        self.admitted = admitted
        self.events: list[Event] = []
        self.slots: list[ToolMessage | None] = [None] * len(admitted)
        self.errors: dict[int, Exception] = {}
        self.started: set[int] = set()


#: Hands a concurrent batch that did not end plainly to the general path.
PromoteSpread = Callable[[Spread, RunPolicy, "Context | None"], Awaitable[DispatchResult]]


async def run_concurrent(
    batch: tuple[ToolCall, ...],
    tools: Registry,
    policy: RunPolicy,
    context: Context | None,
    promote: PromoteSpread,
) -> DispatchResult | None:
    """Run a plain batch of async tools all at once (``max_concurrency`` >= the batch).

    Returns None, having run nothing, when the batch is not plain or holds a sync tool.
    A call that raises or returns something the fold must handle is finished by the
    general path afterwards (``promote``); a ``FatalToolError`` cancels the others, as
    it does there.
    """
    admitted = _admit(batch, tools, sync=False)
    if admitted is None or not all(tool.is_async for _, tool, _ in admitted):
        return None
    spread = Spread(batch, tools, admitted)
    native = sniffio.current_async_library() == "trio"
    async with trio.open_nursery() if native else anyio.create_task_group() as group:
        for index in range(len(admitted)):
            group.start_soon(_one, spread, index, group.cancel_scope)
    if spread.errors or None in spread.slots:
        return await promote(spread, policy, context)
    executed = tuple([call.id for call in batch])
    messages = tuple(spread.slots)
    return DispatchResult(messages, tuple(spread.events), None, (), {}, executed)  # type: ignore[arg-type]


async def _one(spread: Spread, index: int, scope: trio.CancelScope | anyio.CancelScope) -> None:
    call, tool, arguments = spread.admitted[index]
    spread.started.add(index)
    spread.events.append(ToolStarted(call_id=call.id, tool_name=tool.name, arguments=arguments))
    try:
        value = await tool.fn(**arguments)  # type: ignore[misc]
        spread.slots[index] = _message_for(call, tool, value)
    except FatalToolError as error:
        spread.errors[index] = error
        scope.cancel()  # as the general path does: a fatal call stops its siblings
        return
    except Exception as error:
        spread.errors[index] = error
        return
    spread.events.append(ToolCompleted(call_id=call.id, tool_name=tool.name, metadata={}))
