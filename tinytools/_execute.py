"""Execution of one admitted call, without an event loop: bind, run, retry, classify.

The only stage that touches the tool's function (with :mod:`_concurrency`, its
twin under an event loop). A synchronous call runs inline — the default — or,
when its policy says it blocks or a timeout applies, on a long-lived worker
thread (:mod:`_workers`): the timeout then holds, the call is answered when it
passes, and the thread is abandoned with the call's ``Cancellation`` set.

What the tool raises is classified by :func:`classify`: ``RetryableError`` is
retried up to the tool's ``max_retries`` with exponential backoff and jitter
(:func:`retry_wait`), ``ModelRetry`` goes back to the model, ``FatalToolError``
aborts the batch, ``ApprovalRequired``/``CallDeferred`` postpone the call, and
anything else — any ``BaseException`` but ``KeyboardInterrupt``, ``SystemExit``
and the event loop's own cancellation, which propagate unchanged — becomes an
error message naming the exception type (the traceback goes to the
``ToolFailed`` event only). Text taken from the exception is scrubbed of the
call's secret argument values when the tool redacts.
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import random
import threading
import time
from collections.abc import Callable
from types import CodeType

from ._admit import Admitted
from ._fold import Failed, Fatal, Postponed
from ._inject import CallRuntime, Cancellation, Emit, RunContext, bind
from ._memo import remember
from ._run import Run, Stop
from ._runtime import threads
from ._runtime.baton import wait_main
from ._runtime.detect import wrong_loop
from ._runtime.threads import Job, PoolExhausted
from ._validate import printable
from ._wire import json_problem
from .errors import (
    ApprovalRequired,
    CallDeferred,
    FatalToolError,
    ModelRetry,
    RetryableError,
)
from .events import Custom, ToolRetried

__all__ = [
    "PROPAGATE",
    "UNSEEN",
    "classify",
    "interrupted",
    "kwargs_for",
    "linked",
    "retry_wait",
    "run_inline",
    "timed_out",
]

#: The cancellation handle of a call whose tool injects nothing: nobody can see it, so
#: one shared handle that never fires serves them all.
UNSEEN = Cancellation()

#: What a tool may raise that is not the tool's failure but the process's or the
#: caller's business: re-raised as it is.
PROPAGATE = (KeyboardInterrupt, SystemExit)


def _text(error: BaseException) -> str:
    """``str(error)``, even when the exception's ``__str__`` itself raises, with lone
    surrogates escaped (a file name read with ``surrogateescape``, say): the message,
    ``ToolFailed`` and ``ToolRetried`` events built from it must encode."""
    try:
        text = str(error)
    except BaseException as broken:  # any failure of a tool's own __str__
        return f"<str() of the exception raised {type(broken).__name__}>"
    return text if type(text) is str and text.isascii() else printable(text)


def _trace(error: BaseException, said: str | None = None) -> str:
    """The traceback the ``ToolFailed`` event carries: the frames and the exception line,
    for the error and the errors it was raised from (as Python prints them, without
    the column markers, which cost most of the time of a failed call). ``said``: the
    error's text, when the caller has it already."""
    try:
        if error.__cause__ is None and (error.__suppress_context__ or error.__context__ is None):
            return _link_text(error, said)  # the common case: an exception raised on its own
        chain: list[BaseException] = []
        link: BaseException | None = error
        while link is not None and link not in chain and len(chain) < 8:
            chain.append(link)
            link = link.__cause__ or (None if link.__suppress_context__ else link.__context__)
        parts: list[str] = []
        for index, raised in enumerate(reversed(chain)):
            if index:
                parts.append(_LINK_CAUSE if raised.__cause__ is not None else _LINK_CONTEXT)
            parts.append(_link_text(raised))
        return "".join(parts)
    except BaseException:  # a frame or __str__ that cannot be formatted
        return f"{type(error).__name__}: {_text(error)}"


def _link_text(error: BaseException, said: str | None = None) -> str:
    """One exception's part of a traceback: its frames, then its own line (``said``: the
    exception's text, when known)."""
    text = "Traceback (most recent call last):\n"
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        known = _FRAMES.get((id(code), tb.tb_lasti))
        text += _frame_text(code, tb.tb_lasti, tb.tb_lineno) if known is None else known[1]
        tb = tb.tb_next
    if said is None:
        said = _text(error)
    kind = type(error).__qualname__
    return f"{text}{kind}: {said}\n" if said else f"{text}{kind}\n"


#: Each traceback line's text, by code object and instruction (most failures repeat the
#: same few frames; a bounded memo, which changes nothing but speed). Keyed by the code
#: object's id and the instruction's offset, which are cheap to read where hashing a
#: code object and reading ``tb_lineno`` (decoded from the line table on every read)
#: are not; the entry holds the code object, so no other code object can take that id
#: while the entry exists.
_FRAMES: dict[tuple[int, int], tuple[CodeType, str]] = {}


def _frame_text(code: CodeType, lasti: int, lineno: int) -> str:
    """A frame's lines in a traceback (from linecache's cached lines: no file is stat'ed
    per failure)."""
    text = f'  File "{code.co_filename}", line {lineno}, in {code.co_name}\n'
    line = linecache.getline(code.co_filename, lineno).strip()
    if line:
        text += f"    {line}\n"
    text = printable(text)  # (a path read with surrogateescape: remembered escaped)
    remember(_FRAMES, (id(code), lasti), (code, text), 1024)
    return text


_LINK_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_LINK_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


#: The exceptions that decide a call's fate themselves (retry, abort, postpone).
_DECIDED = (ModelRetry, FatalToolError, ApprovalRequired, CallDeferred)


def classify(error: BaseException, item: Admitted) -> object:
    """The outcome a tool's exception stands for (its text scrubbed of secrets)."""
    name = item.tool.name
    if isinstance(error, _DECIDED):
        if isinstance(error, ModelRetry):
            return Failed(
                "ModelRetry",
                _scrub(item, _text(error)) or f"Tool `{name}` asks for a corrected call.",
            )
        if isinstance(error, FatalToolError):
            text = _scrub(item, f"Tool `{name}` failed fatally: {_text(error)}")
            return Fatal(text, _scrub(item, _trace(error)))
        metadata = dict(error.metadata)
        problem = json_problem(metadata)
        if problem is not None:  # the result must carry it: the call's error instead
            kind = type(error).__name__
            text = (
                f"Tool `{name}` failed: it raised {kind} with metadata JSON cannot carry "
                f"({problem}); pass JSON-encodable metadata"
            )
            return Failed("TypeError", _scrub(item, printable(text)))
        if isinstance(error, ApprovalRequired):
            return Postponed("approval", metadata)
        return Postponed("deferred", metadata)
    if (wrong := wrong_loop(error, name)) is not None:  # the host's mistake, not the model's
        return Fatal(_scrub(item, wrong), _scrub(item, _trace(error)))
    kind = type(error).__name__
    said = _text(error)
    text = f"Tool `{name}` failed: {kind}: {said}" if said else f"Tool `{name}` failed: {kind}"
    if item.tool._plan.redactor is None:  # nothing to scrub (see _scrub)
        return Failed(kind, text, _trace(error, said))
    return Failed(kind, _scrub(item, text), _scrub(item, _trace(error, said)))


def _scrub(item: Admitted, text: str) -> str:
    redactor = item.tool._plan.redactor
    if redactor is None or not text:
        return text
    return redactor.scrub(text, redactor.arguments(item.arguments)[1])


def retry_wait(run: Run, item: Admitted, error: BaseException, attempt: int) -> float | object:
    """The wait before retry ``attempt + 1`` after ``error``, or the call's outcome when it
    is not retried (not a ``RetryableError``, or no retry left).

    Raises:
        BaseException: ``error`` itself, when the host's ``on_event`` handler raised it
            inside the tool (see :func:`_custom_sink`): not the tool's failure.
    """
    if not isinstance(error, RetryableError) or attempt >= item.tool._plan.retries:
        if not isinstance(error, Exception) and getattr(run, "escaped", None) is error:
            raise error
        return classify(error, item)
    attempt += 1
    policy = run.policy
    base = min(policy.retry_max_delay, policy.retry_base_delay * 2.0 ** (attempt - 1))
    # Jitter spreads the retries of many calls; seeding it with the call and attempt
    # keeps equal inputs giving equal events (ToolRetried.delay included).
    jitter = random.Random(f"{item.call.id}:{attempt}").random()
    delay = base * (0.5 + jitter / 2)
    run.emit(
        ToolRetried(
            call_id=item.call.id,
            tool_name=item.tool.name,
            attempt=attempt,
            delay=delay,
            error=_scrub(item, _text(error)) or type(error).__name__,
        )
    )
    return delay


def kwargs_for(
    run: Run, item: Admitted, handle: Cancellation, deadline: float | None
) -> dict[str, object]:
    """The function's keyword arguments: the validated ones, plus injections if any."""
    injections = item.tool._plan.injections
    if not injections:
        return item.arguments
    context = run.context
    call_id = item.call.id
    runtime = CallRuntime(
        context=context,
        call=item.call,
        run_context=RunContext(
            context.run_id,
            context.thread_id,
            context.depth,
            deadline,
            run.is_call_approved(call_id),
        ),
        cancellation=handle,
        emit=Emit(_custom_sink(run, call_id)),
    )
    return bind(dict(item.arguments), injections, runtime)


def _custom_sink(run: Run, call_id: str) -> Callable[[str, object], None]:
    """What a tool's injected ``Emit`` calls: the run's ``emit``, with the tool's custom
    event.

    The host's ``on_event`` handler runs inside the tool's frames here. What it raises
    that the run does not keep as its failure (a ``BaseException`` that is no
    ``Exception``) passes up through the tool: it is marked on the run, so that the
    tool's failure handling (:func:`retry_wait`) re-raises it as the host's, as when the
    handler raises it on any other event — never the call's error message.
    """
    emit = run.emit

    def custom(name: str, data: object) -> None:
        event = _custom(call_id, name, data)
        try:
            emit(event)
        except BaseException as error:
            run.escaped = error
            raise

    return custom


def interrupted(stop: Stop) -> Failed:
    """The outcome of a call a stop cut off while it ran."""
    return Failed(
        "Cancelled", f"Tool call interrupted: the batch was {stop.value}.", status="interrupted"
    )


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


def timed_out(item: Admitted, timeout: float) -> Failed:
    return Failed("TimeoutError", f"Tool `{item.tool.name}` timed out after {timeout:g} seconds.")


def _in_thread(
    fn: Callable[..., object],
    kwargs: dict[str, object],
    timeout: float | None,
    cancellation: Cancellation,
) -> tuple[bool, object]:
    """Run ``fn`` on a pool thread and wait for it, or for the batch's cancellation:
    ``(True, value)``, or ``(False, None)`` when the timeout passed or the batch was
    cancelled first (the thread is abandoned)."""
    job: Job[object] = threads.THREADS.submit(functools.partial(fn, **kwargs), timeout is None)
    wake = threading.Event()
    job.on_done(wake.set)
    forget = cancellation.on_cancel(wake.set)
    try:
        wait_main(wake.wait, timeout)  # (on the main thread: a signal interrupts it at once)
    finally:
        forget()
        # Still in line: it never starts (withdrawn); running: its thread is abandoned.
        withdrawn = not job.done.is_set() and threads.THREADS.give_up(job)
    if withdrawn and not cancellation.cancelled:  # every thread stayed busy
        raise PoolExhausted(threads.THREADS.threads)
    if not job.done.is_set():
        return False, None
    return True, job.outcome()


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


def run_inline(run: Run, item: Admitted, deadline: float | None) -> object:
    """Run a synchronous call on this thread (or a pool thread, when it blocks or has a
    timeout); its outcome: the return value, or ``Failed``/``Fatal``/``Postponed``.

    ``deadline`` is on :func:`time.monotonic`'s clock.
    """
    plan = item.tool._plan
    fn = plan.fn
    assert fn is not None
    # Plan.timeout_under and Plan.threaded, written out (two frames fewer per call).
    timeout = plan.timeout or run.policy.tool_timeout
    if plan.plain and timeout is None:  # inline, nothing injected: nothing to make
        threaded, handle, kwargs = False, UNSEEN, item.arguments
    else:
        threaded = plan.blocking or timeout is not None  # an async tool never comes here
        if plan.injections:
            handle = Cancellation()
            kwargs = kwargs_for(run, item, handle, deadline)
            if run.cancellation is not None:
                fn = linked(fn, run.cancellation, handle)
        else:  # nothing can see the handle or the injected values: none are made
            handle, kwargs = UNSEEN, item.arguments
    run.start(item)
    # The call's own copy of the caller's context: what the tool sets stays in it.
    run_in = run.caller_context.copy().run
    attempt = 0
    while True:
        try:
            if not threaded:
                return run_in(fn, **kwargs)
            wait = timeout
            if deadline is not None:
                left = max(0.0, deadline - time.monotonic())
                wait = left if wait is None else min(wait, left)
            body = functools.partial(run_in, fn)
            if run.cancellation is None:  # the pool's direct hand-off
                finished, value = threads.THREADS.run(body, kwargs, wait)
            else:
                finished, value = _in_thread(body, kwargs, wait, run.cancellation)
            if finished:
                return value
            if handle is not UNSEEN:
                handle.cancel()  # the abandoned tool can still see it should stop
            if run.cancellation is not None and run.cancellation.cancelled:
                return interrupted(Stop.CANCELLED)
            if timeout is not None and wait == timeout:
                return timed_out(item, timeout)
            return interrupted(Stop.DEADLINE)
        except PROPAGATE:
            raise
        except BaseException as error:  # a tool's failure, whatever it raised
            past = deadline is not None and time.monotonic() >= deadline
            if type(error) is PoolExhausted and past:
                # The batch's deadline passed while the call waited in line for a thread:
                # interrupted, as under the event loops (their deadline cancels the wait).
                return interrupted(Stop.DEADLINE)
            wait_or = retry_wait(run, item, error, attempt)
            if type(wait_or) is not float:
                return wait_or
            attempt += 1
            time.sleep(wait_or)
