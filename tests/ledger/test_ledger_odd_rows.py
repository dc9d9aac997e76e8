"""A SQLite ledger holding rows this version would not write (another version, a hand
edit, a broken disk), and arguments that even the fallback could not write: reading
never raises, so ``reconcile`` answers every unresolved call of the run."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import msgspec
import pytest

from tinytools import Registry, tool
from tinytools.ledger import SqliteLedger, reconcile


@tool
def lookup(n: int = 0) -> int:
    """Look a number up."""
    return n


_INSERT = (
    "INSERT INTO tinytools_effects (run_id, call_id, tool_name, arguments, started_at) "
    "VALUES (?, ?, ?, ?, ?)"
)


@pytest.mark.parametrize(
    ("row", "call_id", "tool_name", "arguments"),
    [
        (("r", "c", "lookup", "{not json", 1.0), "c", "lookup", {"arguments": "{not json"}),
        (("r", "c", "lookup", b"\xff", 1.0), "c", "lookup", {"arguments": "\\xff"}),
        (("r", "c", "~json:broken", "{}", 1.0), "c", "~json:broken", {}),
        (("r", "c", 5, "{}", 1.0), "c", "5", {}),
        (("r", "c", "lookup", "{}", "yesterday"), "c", "lookup", {}),
    ],
    ids=["arguments-not-json", "arguments-bytes", "bad-key-text", "number-name", "text-time"],
)
def test_an_odd_row_is_read_and_reconciled(
    tmp_path: Path, row: tuple[object, ...], call_id: str, tool_name: str, arguments: object
) -> None:
    """Such a row raised JSONDecodeError or TypeError out of ``unresolved`` and
    ``reconcile``, and so kept every other call of the run unanswered."""
    path = tmp_path / "ledger.db"
    with SqliteLedger(path) as ledger:
        ledger.started("r", "fine", "lookup", {"n": 1})
        with closing(sqlite3.connect(path)) as connection, connection:
            connection.execute(_INSERT, row)
        entries = {entry.call_id: entry for entry in ledger.unresolved("r")}
        reconciled = reconcile([], Registry.of(lookup), ledger, "r")
    assert (tool_name, arguments) == (entries[call_id].tool_name, entries[call_id].arguments)
    assert {"c", "fine"} == {m.tool_call_id for m in reconciled.messages} | {
        c.id for c in reconciled.rerun
    }
    assert msgspec.json.encode(reconciled)


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "arguments",
    [{1: 2, object(): 3}, {"n": _nested(5000)}, {"n": 10**5000}],
    ids=["object-key", "deep", "huge-int"],
)
def test_started_with_arguments_no_fallback_writes(tmp_path: Path, arguments: object) -> None:
    """The documented fallback (``json.dumps`` with ``repr``) raised TypeError,
    RecursionError or ValueError for these: the call is recorded all the same."""
    with SqliteLedger(tmp_path / "ledger.db") as ledger:
        ledger.started("r", "c", "lookup", arguments)  # type: ignore[arg-type]
        [entry] = ledger.unresolved("r")
    assert "c" == entry.call_id
