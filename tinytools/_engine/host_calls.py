"""The batch a host hands ``dispatch``, checked before anything runs.

A host builds the batch (with a provider's ``parse_calls``, or by hand; msgspec does
not check a ``ToolCall``'s fields when one is made), so a batch that is not a sequence
of ``ToolCall`` values, or a call whose id or name is not text, is the host's mistake:
a ``TypeError`` before any hook or tool runs, naming the call and what to pass. It is
never answered to the model, which did not make it (an answer keyed by a list could not
even be matched to its call). Text of a ``str`` subclass (an SDK's own string type) is
read as the plain text it holds, as raw arguments are (:func:`_wire.plain_call`):
msgspec encodes no subclass, so a result or event carrying one could not be encoded.
"""

from __future__ import annotations

import operator
from typing import Final, cast

import msgspec

from tinytools._text import preview
from tinytools._wire import ToolCall, plain_text

from .resume import DeferredToolRequests

__all__ = ["host_calls", "refuse_non_batch"]


def refuse_non_batch(calls: object) -> None:
    """Raise the ``TypeError`` for ``calls`` that are no batch at all (one ``ToolCall``,
    or nothing iterable); return when they are iterable (the ``TypeError`` in hand was
    raised by iterating them: it stands)."""
    if issubclass(type(calls), ToolCall):
        raise TypeError(
            "dispatch takes a list of calls, got one ToolCall: wrap it in a list, `[call]`"
        )
    if issubclass(type(calls), DeferredToolRequests):
        raise TypeError(
            "dispatch takes a list of calls, got DeferredToolRequests: to resume the "
            "deferred calls pass `pending.all` as the calls, with the host's decisions as "
            "`approvals=`"
        )
    try:
        iter(calls)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(
            f"dispatch takes a list of ToolCall values, got {type(calls).__name__}; read a "
            "provider's calls with its parse_calls (tinytools.formats), or pass "
            "`[ToolCall(id, name, arguments)]`"
        ) from None


def host_calls(calls: tuple[object, ...]) -> tuple[ToolCall, ...]:
    """``calls`` as dispatch reads them: every one a ``ToolCall`` whose id and name are
    plain ``str`` (text of a subclass read as the text it holds).

    Raises:
        TypeError: An item is not a ``ToolCall``, or a call's id or name is not text.
    """
    # The common batch, told in C (three passes over it, no frame per call): every call
    # a ToolCall whose id and name are plain str, read as they are.
    if (
        {*map(type, calls)} == _CALLS
        and {*map(type, map(_ID, calls))} == _TEXT
        and {*map(type, map(_NAME, calls))} == _TEXT
    ):
        return cast("tuple[ToolCall, ...]", calls)
    plain: list[ToolCall] = []
    for position, call in enumerate(calls):
        # (by its type: an object whose __class__ says ToolCall is not one)
        if type(call) is not ToolCall and not issubclass(type(call), ToolCall):
            # (a str or a dict given as the batch is read as its characters or keys)
            given = " (is the batch a str or a dict?)" if isinstance(call, str) else ""
            raise TypeError(
                f"dispatch takes ToolCall values, got {type(call).__name__} at position "
                f"{position}: {preview(call)}{given}; read a provider's calls with its "
                "parse_calls (tinytools.formats), or build `ToolCall(id, name, arguments)`"
            )
        call = cast(ToolCall, call)
        call_id, name = plain_text(call.id), plain_text(call.name)
        if call_id is None:
            raise TypeError(
                f"ToolCall.id must be a str, got {type(call.id).__name__} in the call at "
                f"position {position} (name {preview(call.name)}): give the id the "
                "provider sent with the call (every answer carries it back)"
            )
        if name is None:
            raise TypeError(
                f"ToolCall.name must be a str, got {type(call.name).__name__} in call "
                f"{call_id!r}: build calls with a provider's parse_calls, or give the tool "
                "name the model asked for ('' when it gave none)"
            )
        if call_id is not call.id or name is not call.name:
            call = msgspec.structs.replace(call, id=call_id, name=name)
        plain.append(call)
    return tuple(plain)


_CALLS: Final = {ToolCall}
_TEXT: Final = {str}
_ID: Final = operator.attrgetter("id")
_NAME: Final = operator.attrgetter("name")
