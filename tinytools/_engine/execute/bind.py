"""A call's keyword arguments: the validated ones, plus what the tool injects.

A tool that injects nothing is called with its validated arguments as they are (nothing
is made for it); one that injects gets its call's ``RunContext``, ``Cancellation``
(:data:`UNSEEN` stands for one nobody can see) and ``Emit``, bound here.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable

from tinytools._engine.admit.admission import Admitted
from tinytools._engine.state import Run
from tinytools._inject import CallRuntime, Cancellation, Emit, RunContext, bind
from tinytools._wire import json_problem
from tinytools.events import Custom

__all__ = ["UNSEEN", "begin", "bound", "custom_sink", "kwargs_for", "linked"]

#: The cancellation handle of a call whose tool injects nothing: nobody can see it, so
#: one shared handle that never fires serves them all (never cancel it).
UNSEEN = Cancellation()


def begin(
    run: Run, item: Admitted, deadline: float | None
) -> tuple[Callable[..., object], dict[str, object], Cancellation, contextvars.Context]:
    """Start one call (``ToolStarted``): the function to call, its keyword arguments, the
    call's own cancellation handle and its own copy of the caller's context."""
    run.start(item)
    plan = item.tool._plan
    if plan.injections:
        fn, kwargs, handle = bound(run, item, deadline)
    else:  # nothing to bind, and nobody can see the call's cancellation handle
        fn, kwargs, handle = plan.fn, item.arguments, UNSEEN  # type: ignore[assignment]
    return fn, kwargs, handle, run.caller_context.copy()


def bound(
    run: Run, item: Admitted, deadline: float | None
) -> tuple[Callable[..., object], dict[str, object], Cancellation]:
    """The function to call, its keyword arguments and the call's own cancellation handle,
    for a tool that injects (one that injects nothing is called with its validated
    arguments, and :data:`UNSEEN` stands for its handle)."""
    plan = item.tool._plan
    fn = plan.fn
    assert fn is not None  # (an external tool is deferred at admission)
    handle = Cancellation()
    kwargs = kwargs_for(run, item, handle, deadline)
    if run.cancellation is not None:
        fn = linked(fn, run.cancellation, handle, plan.is_async)  # it sees the batch cancelled
    return fn, kwargs, handle


def kwargs_for(
    run: Run, item: Admitted, handle: Cancellation, deadline: float | None
) -> dict[str, object]:
    """The function's keyword arguments: the validated ones, plus injections if any."""
    injections = item.tool._plan.injections
    if not injections:
        return item.arguments
    context = run.env.context
    call_id = item.call.id
    runtime = CallRuntime(
        context=context,
        call=item.call,
        run_context=RunContext(
            context.run_id,
            context.thread_id,
            context.depth,
            deadline,
            run.env.is_call_approved(call_id),
        ),
        cancellation=handle,
        emit=Emit(custom_sink(run, item)),
    )
    return bind(dict(item.arguments), injections, runtime)


def custom_sink(run: Run, item: Admitted) -> Callable[[str, object], None]:
    """What a tool's injected ``Emit`` calls: the run's ``emit``, with the tool's custom
    event — for a tool that redacts arguments (``ToolPolicy.redact``), with the call's
    secrets hidden in its name and data, as everywhere an event could repeat them.

    The host's ``on_event`` handler runs inside the tool's frames here. What it raises
    that the run does not keep as its failure (a ``BaseException`` that is no
    ``Exception``) passes up through the tool: it is marked on the run, so that the
    tool's failure handling (``classify.next_attempt``) re-raises it as the host's, as when the
    handler raises it on any other event — never the call's error message.
    """
    emit = run.emit
    call_id = item.call.id
    redactor = item.tool._plan.redactor
    secrets = None if redactor is None else redactor.arguments(item.arguments)[1]

    def custom(name: str, data: object) -> None:
        event = _custom(call_id, name, data)
        if redactor is not None and secrets:
            event = Custom(
                call_id=call_id,
                name=redactor.scrub(event.name, secrets),
                data=redactor.emitted(event.data, secrets),
            )
        try:
            emit(event)
        except BaseException as error:
            run.escaped = error
            raise

    return custom


def _custom(call_id: str, name: object, data: object) -> Custom:
    """A tool's custom event, refused (to the tool, as a ``TypeError``) unless its name is
    text and the event encodes as JSON — every result must — with no NaN or infinity in
    its data (an encoder writes ``null`` for them, silently changing it)."""
    if not isinstance(name, str):
        problem: str | None = f"the event name must be a str, not {type(name).__name__}"
    else:  # (the name too: a lone surrogate in it cannot be encoded)
        problem = json_problem(name) or json_problem(data)
    if problem is not None:
        raise TypeError(
            f"emit({name!r:.40}, ...) cannot be recorded: {problem}; emit a str name and "
            "JSON-encodable data"
        )
    return Custom(call_id=call_id, name=name, data=data)  # type: ignore[arg-type]  # a str


def linked(
    fn: Callable[..., object], batch: Cancellation, handle: Cancellation, is_async: bool = False
) -> Callable[..., object]:
    """``fn`` whose call's own cancellation ``handle`` is set when the ``batch``'s
    cancellation is, while it runs: a synchronous tool that polls its injected
    ``Cancellation`` sees the batch cancelled from another thread, though it holds the
    only thread that could tell it otherwise (inline), or is waited for by nobody
    (abandoned on a worker thread). An async tool (``is_async``: ``fn`` is awaited) is
    also cancelled by its event loop; its handle is set as the batch is cancelled, before
    the loop delivers that at the tool's next ``await`` (``cancel()`` tells the newest
    callback first: this link before the batch's hook that wakes the loop), so work it
    handed to a thread sees it too. The link is undone when ``fn`` returns, so a
    ``Cancellation`` shared by many batches keeps no callback of a finished call; and as
    soon as ``handle`` itself is set (the call timed out, or its waiter was cancelled and
    abandoned its thread), since there is nothing left to tell it: a hung tool on an
    abandoned thread keeps no callback on the host's shared handle. What a
    callback the tool registered on its handle raises stays with the tool: the host's
    ``cancel()`` goes on to the other batches sharing its cancellation."""

    def tell() -> None:
        with contextlib.suppress(Exception):  # the tool's own callback's failure
            handle.cancel()

    def call(**kwargs: object) -> object:
        forget = batch.on_cancel(tell)
        handle.on_cancel(forget)  # (set: nothing left to tell)
        try:
            return fn(**kwargs)
        finally:
            forget()

    async def awaited(**kwargs: object) -> object:
        forget = batch.on_cancel(tell)
        try:
            return await fn(**kwargs)  # type: ignore[misc]
        finally:
            forget()

    return awaited if is_async else call
