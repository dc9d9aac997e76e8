"""What a tool's exception means for its call: classified, or retried after a wait.

``RetryableError`` is retried up to the tool's ``max_retries`` with exponential backoff
and jitter (:func:`next_attempt`); ``ModelRetry`` goes back to the model,
``FatalToolError`` aborts the batch, ``ApprovalRequired``/``CallDeferred`` postpone the
call, and anything else becomes an error message naming the exception's type, its
traceback on the ``ToolFailed`` event only (:func:`classify`). Text taken from the
exception is scrubbed of the call's secret argument values when the tool redacts.
"""

from __future__ import annotations

import linecache
import random
from types import CodeType

from tinytools._engine.admit.admission import Admitted
from tinytools._engine.outcome import Failed, Fatal, Outcome, Postponed
from tinytools._engine.state import Run
from tinytools._memo import remember
from tinytools._runtime.detect import wrong_loop
from tinytools._text import printable
from tinytools._wire import json_problem
from tinytools.errors import (
    ApprovalRequired,
    CallDeferred,
    FatalToolError,
    ModelRetry,
    RetryableError,
)
from tinytools.events import ToolRetried

__all__ = ["PROPAGATE", "classify", "next_attempt", "timed_out"]

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


def classify(error: BaseException, item: Admitted) -> Outcome:
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


def next_attempt(run: Run, item: Admitted, error: BaseException, attempt: int) -> float | Outcome:
    """What follows attempt ``attempt`` (0 the first) that raised ``error``: the seconds
    to wait before the next one, or the call's outcome when it is not retried (not a
    ``RetryableError``, or no retry left).

    Raises:
        BaseException: ``error`` itself, when the host's ``on_event`` handler raised it
            inside the tool (see ``bind.custom_sink``): not the tool's failure.
    """
    if not isinstance(error, RetryableError) or attempt >= item.tool._plan.retries:
        if not isinstance(error, Exception) and getattr(run, "escaped", None) is error:
            raise error
        return classify(error, item)
    attempt += 1
    policy = run.env.policy
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


def timed_out(item: Admitted, timeout: float) -> Failed:
    return Failed("TimeoutError", f"Tool `{item.tool.name}` timed out after {timeout:g} seconds.")
