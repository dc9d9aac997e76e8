"""How the SQL ledgers store a row's text: ids, tool names and arguments.

A database text column takes neither lone surrogates (not UTF-8) nor, in
PostgreSQL, NUL, yet a call id is whatever the provider sent. :func:`key` stores
such a text as ``~json:`` and its ASCII JSON form, and escapes a text that
already starts with that prefix the same way, so the mapping stays one-to-one
(two different ids never share a row).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

import msgspec

from tinytools._effects import LedgerEntry

__all__ = ["RELEASED", "arguments_text", "entry", "key", "now", "unkey"]

#: The status of a row ``reconcile`` (or a tool's deferral) released: it may start again.
RELEASED = "released"
_PREFIX = "~json:"


def key(text: str) -> str:
    """``text`` as a database text column can hold it (one-to-one)."""
    if "\x00" not in text and not text.startswith(_PREFIX):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            return text
    return _PREFIX + json.dumps(text, ensure_ascii=True)


def unkey(stored: str) -> str:
    """The text :func:`key` stored."""
    if stored.startswith(_PREFIX):
        return str(json.loads(stored[len(_PREFIX) :]))
    return stored


def arguments_text(arguments: Mapping[str, object]) -> str:
    """The arguments as JSON text (values JSON cannot hold are stored as their repr)."""
    try:
        return msgspec.json.encode(arguments).decode()
    except (TypeError, ValueError, UnicodeError, OverflowError, RecursionError):
        return json.dumps(dict(arguments), ensure_ascii=True, default=repr)


def _arguments(text: str) -> dict[str, object]:
    try:
        value = msgspec.json.decode(text)
    except (msgspec.DecodeError, UnicodeError, RecursionError):
        value = json.loads(text)
    return value if isinstance(value, dict) else {"arguments": value}


def entry(
    run_id: str, call_id: str, tool_name: str, arguments: str, started_at: float
) -> LedgerEntry:
    """A stored row as a :class:`LedgerEntry`."""
    return LedgerEntry(
        run_id=unkey(run_id),
        call_id=unkey(call_id),
        tool_name=unkey(tool_name),
        arguments=_arguments(arguments),
        started_at=float(started_at),
    )


def now() -> float:
    """Seconds since the Unix epoch (a row's ``started_at``)."""
    return time.time()
