"""How the SQL ledgers store a row's text: ids, tool names and arguments.

A database text column takes neither lone surrogates (not UTF-8) nor, in
PostgreSQL, NUL, yet a call id is whatever the provider sent. :func:`key` stores
such a text as ``~json:`` and its ASCII JSON form, and escapes a text that
already starts with that prefix the same way, so the mapping stays one-to-one
(two different ids never share a row). An index holds a key of any length only up to
a limit (PostgreSQL's btree refuses a row over about 2.7 KB): :func:`index_key` stores a
key over :data:`LONGEST` bytes as ``~json:sha256:`` and its digest, with the whole key
kept beside it. ``key`` never writes a text that starts so (its escapes start
``~json:"``), so that mapping stays one-to-one too.

Reading is as forgiving as writing is strict: a row that another version, a
hand edit or a broken disk left odd (arguments that are not JSON, a malformed
``~json:`` text, a number or bytes where text belongs, a ``started_at`` that is
no number) is still read, so one such row never keeps ``unresolved`` — and so
``reconcile`` — from answering the run's other calls: text is kept as it is
stored, unreadable arguments as ``{"arguments": <their text>}``, an unreadable
time as ``0.0``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping

import msgspec

from tinytools._engine.effects import LedgerEntry
from tinytools._text import json_text, printable

__all__ = ["LONGEST", "RELEASED", "arguments_text", "entry", "index_key", "key", "now", "unkey"]

#: The status of a row ``reconcile`` (or a tool's deferral) released: it may start again.
RELEASED = "released"
_PREFIX = "~json:"
#: The longest key, in UTF-8 bytes, an index column holds whole (two ids make a row key).
LONGEST = 1024


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


def index_key(text: str) -> tuple[str, str | None]:
    """``text`` as an index column holds it, and the whole :func:`key` when the column
    holds its digest instead (else None)."""
    stored = key(text)
    if len(stored) <= LONGEST // 4 or len(stored.encode()) <= LONGEST:
        return stored, None
    return f"{_PREFIX}sha256:{hashlib.sha256(stored.encode()).hexdigest()}", stored


def unkey(stored: object) -> str:
    """The text :func:`key` stored (an odd cell: as it is stored, as text)."""
    text = _text(stored)
    if text.startswith(_PREFIX):
        try:
            value = json.loads(text[len(_PREFIX) :])
        except (ValueError, RecursionError):
            return text
        return value if isinstance(value, str) else text
    return text


def _text(stored: object) -> str:
    if isinstance(stored, str):
        return stored
    if isinstance(stored, (bytes, bytearray, memoryview)):
        return bytes(stored).decode("utf-8", "backslashreplace")
    return str(stored)


def arguments_text(arguments: Mapping[str, object]) -> str:
    """The arguments as JSON text (values JSON cannot hold are stored as their repr);
    never raises (what even that cannot write, such as a key that is not text, nesting
    past the recursion limit or an integer past the digit limit, is stored as the
    printable text dispatch previews such arguments with)."""
    try:
        return msgspec.json.encode(arguments).decode()
    except (TypeError, ValueError, UnicodeError, OverflowError, RecursionError):
        pass
    try:
        return json.dumps(dict(arguments), ensure_ascii=True, default=repr)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return printable(json_text(arguments))


def _arguments(stored: object) -> dict[str, object]:
    text = _text(stored)
    try:
        value = msgspec.json.decode(text)
    except (msgspec.DecodeError, UnicodeError, RecursionError):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            value = text
    return value if isinstance(value, dict) else {"arguments": value}


def _time(stored: object) -> float:
    try:
        return float(stored)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return 0.0


def entry(
    run_id: object, call_id: object, tool_name: object, arguments: object, started_at: object
) -> LedgerEntry:
    """A stored row as a :class:`LedgerEntry`."""
    return LedgerEntry(
        run_id=unkey(run_id),
        call_id=unkey(call_id),
        tool_name=unkey(tool_name),
        arguments=_arguments(arguments),
        started_at=_time(started_at),
    )


def now() -> float:
    """Seconds since the Unix epoch (a row's ``started_at``)."""
    return time.time()
