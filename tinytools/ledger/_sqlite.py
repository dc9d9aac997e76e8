"""``SqliteLedger``: the embedded effect ledger, one SQLite file in WAL mode."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import Any, Literal, TypeVar

from tinytools._engine.effects import AlreadyStarted, LedgerEntry, StartedCall
from tinytools._wire import MessageStatus

from ._connected import Connected
from ._errors import UNSETTLED, LedgerError
from ._rows import RELEASED, arguments_text, entry, key, now, unkey

__all__ = ["SqliteLedger"]

#: The schema version this code writes (``PRAGMA user_version``); 0 is a new file.
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tinytools_effects (
    run_id      TEXT NOT NULL,
    call_id     TEXT NOT NULL,
    tool_name   TEXT NOT NULL,
    arguments   TEXT NOT NULL,
    started_at  REAL NOT NULL,
    attempt     INTEGER NOT NULL DEFAULT 1,
    status      TEXT,
    settled_at  REAL,
    PRIMARY KEY (run_id, call_id)
);
CREATE INDEX IF NOT EXISTS tinytools_effects_open ON tinytools_effects (started_at)
    WHERE status IS NULL OR status = 'released';
"""

# A row is claimed when it is new, or when reconcile released it for a re-run.
_START = """
INSERT INTO tinytools_effects (run_id, call_id, tool_name, arguments, started_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (run_id, call_id) DO UPDATE SET
    tool_name = excluded.tool_name, arguments = excluded.arguments,
    started_at = excluded.started_at, attempt = tinytools_effects.attempt + 1,
    status = NULL, settled_at = NULL
WHERE tinytools_effects.status = 'released'
"""
# A released row is settled too: nothing runs it while it waits to start again, and a
# settled row never starts again (a deferred call the host answered, or reconcile's verdict).
_SETTLE = (
    "UPDATE tinytools_effects SET status = ?, settled_at = ? "
    "WHERE run_id = ? AND call_id = ? AND (status IS NULL OR status = 'released')"
)
_RELEASE = (
    "UPDATE tinytools_effects SET status = ?, settled_at = ? WHERE run_id = ? AND call_id = ?"
)
_PRUNE = (
    "DELETE FROM tinytools_effects WHERE status IS NOT NULL AND status <> 'released' "
    "AND settled_at < ?"
)
_RELEASED = "SELECT call_id FROM tinytools_effects WHERE run_id = ? AND status = 'released'"
_OPEN = (
    "SELECT run_id, call_id, tool_name, arguments, started_at FROM tinytools_effects "
    "WHERE (status IS NULL OR status = 'released')"
)

_SETTLING = "settle a call"

Synchronous = Literal["full", "normal"]
_T = TypeVar("_T")


class SqliteLedger(Connected):
    """The embedded effect ledger: one SQLite file (stdlib ``sqlite3``) in WAL mode.

    The file and its schema are created on first use (the schema version is the
    file's ``PRAGMA user_version``; a file from a newer tinytools is refused). One
    ledger object may be shared by threads, and several processes on one machine may
    use the same file at once: every write is a ``BEGIN IMMEDIATE`` transaction, and
    a writer waits up to ``timeout`` seconds for another to finish. A call is started
    at most once across them all (the row's primary key is ``(run_id, call_id)``).
    Do not put the file on a network file system: SQLite's locks are not reliable
    there; use :class:`PostgresLedger` for workers on several machines.

    The path is made absolute when the ledger is made (a later ``os.chdir`` does not move
    it). The file's rows are what keeps a call from running twice, so a ledger never
    claims calls in a file that is not the one it opened: when the file at ``path`` was
    deleted or replaced since (``rm``, a restore, another file moved over it), recording
    a batch's started rows fails with :class:`LedgerError` and nothing of the batch runs,
    until the file is put back or the ledger is closed (the next use then opens what is
    at ``path``, a new empty file if nothing is: its calls may then run again).

    Durability (``synchronous``):

    * ``"full"`` (the default): the started rows of a batch are one transaction,
      written and fsynced before any tool of the batch runs, so they survive a
      process crash and a power loss. Settled rows are committed without an fsync of
      their own: they survive a process crash at once, and a power loss once a later
      fsync (the next batch's started rows, or a checkpoint) has passed; a settled
      row lost to a power loss reads as unresolved, which ``reconcile`` treats with
      the same caution as a crash.
    * ``"normal"``: nothing is fsynced at commit. Every committed row survives a
      process crash; a power loss (or an OS crash) may lose the last transactions,
      started rows included.

    Args:
        path: The database file (its folder must exist). ``":memory:"`` gives a
            ledger that lives and dies with this object (for tests).
        synchronous: ``"full"`` or ``"normal"`` (see above).
        timeout: Seconds a write waits for another process's transaction before it
            fails with :class:`LedgerError`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Synchronous = "full",
        timeout: float = 30.0,
    ) -> None:
        if synchronous not in ("full", "normal"):
            raise ValueError(f"synchronous must be 'full' or 'normal', got {synchronous!r}")
        path = os.fspath(path)
        # (":memory:" and "" are SQLite's private databases, not files)
        self.path = path if path in (":memory:", "") else os.path.abspath(path)
        self.synchronous: Synchronous = synchronous
        self.timeout = timeout
        super().__init__()
        self._connection: sqlite3.Connection | None = None
        self._full: bool | None = False  # the connection's PRAGMA synchronous is FULL
        self._file: tuple[int, int] | None = None  # (device, inode) of the file opened

    def __repr__(self) -> str:
        return f"SqliteLedger({self.path!r}, synchronous={self.synchronous!r})"

    # --- the protocol ---------------------------------------------------------

    def started(
        self, run_id: str, call_id: str, tool_name: str, arguments: Mapping[str, object]
    ) -> None:
        """Record a call as started, durably (one transaction).

        Raises:
            AlreadyStarted: The call was started before and not released.
            LedgerError: The database could not be written.
        """
        if self.started_batch(run_id, [(call_id, tool_name, arguments)]):
            raise AlreadyStarted(run_id, call_id)

    def started_batch(self, run_id: str, calls: Sequence[StartedCall]) -> frozenset[str]:
        """Record every call as started in one transaction, committed (and, with
        ``synchronous="full"``, fsynced) before this returns.

        Returns:
            The ids of the calls already started (not claimed by this batch).

        Raises:
            LedgerError: The database could not be written (nothing was recorded).
        """
        stamp = now()
        rows = [
            (key(run_id), key(call_id), key(name), arguments_text(arguments), stamp)
            for call_id, name, arguments in calls
        ]

        def claim(connection: sqlite3.Connection) -> frozenset[str]:
            refused = [
                call_id
                for row, (call_id, _, _) in zip(rows, calls, strict=True)
                if connection.execute(_START, row).rowcount != 1
            ]
            self._same_file()  # (raises: the transaction is rolled back)
            return frozenset(refused)

        return self._write("record started calls", claim, durable=True)

    def settled(self, run_id: str, call_id: str, status: MessageStatus) -> None:
        """Record how a started call ended. A released call (waiting to start again) is
        settled too, and never starts again; a call never started, or already settled
        (for example by ``reconcile``), is left as it is.

        Raises:
            LedgerError: The database could not be written.
        """
        row = (str(status), now(), key(run_id), key(call_id))
        self._write(_SETTLING, lambda connection: connection.execute(_SETTLE, row))

    def release(self, run_id: str, call_id: str) -> None:
        """Let a started (or settled) call be started once more: ``reconcile`` found it
        replay-safe, or its tool deferred it before acting.

        Raises:
            LedgerError: The database could not be written.
        """
        row = (RELEASED, now(), key(run_id), key(call_id))
        self._write("release a call", lambda connection: connection.execute(_RELEASE, row))

    def prune(self, older_than: float) -> int:
        """Delete the rows settled more than ``older_than`` seconds ago (unresolved and
        released rows are kept whatever their age); how many were deleted. A pruned call
        could be started again: prune only what no worker will dispatch again.

        Raises:
            LedgerError: The database could not be written.
        """
        cutoff = now() - older_than
        pruned = self._write("prune settled rows", lambda c: c.execute(_PRUNE, (cutoff,)))
        return int(pruned.rowcount)

    def unresolved(self, run_id: str | None = None) -> tuple[LedgerEntry, ...]:
        """The calls started and never settled (released ones included: they still wait
        for their re-run), oldest first.

        Raises:
            LedgerError: The database could not be read.
        """
        query = _OPEN
        parameters: tuple[str, ...] = ()
        if run_id is not None:
            query, parameters = f"{_OPEN} AND run_id = ?", (key(run_id),)
        rows = self._read(
            "read unresolved calls", f"{query} ORDER BY started_at, call_id", parameters
        )
        return tuple(entry(*row) for row in rows)

    def _released_ids(self, run_id: str) -> frozenset[str]:
        """The ids of ``run_id``'s released calls (``reconcile`` reads them: such a call
        has not acted since it was released).

        Raises:
            LedgerError: The database could not be read.
        """
        rows = self._read("read released calls", _RELEASED, (key(run_id),))
        return frozenset(unkey(row[0]) for row in rows)

    # --- the connection ---------------------------------------------------------

    # A KeyboardInterrupt may land between any two steps below (a Ctrl-C during a busy
    # wait lands just after BEGIN returns): every step that opens a transaction is inside
    # the `try` that ends it, and `_open` ends one an interrupt still left open, so the
    # file's write lock is never kept and the connection is never stuck in a transaction.

    def _write(
        self, doing: str, statements: Callable[[sqlite3.Connection], _T], *, durable: bool = False
    ) -> _T:
        """``statements`` in one write transaction, committed (rolled back if anything
        raises, an interrupt included)."""
        with self._lock:
            try:
                connection = self._open()
                full = durable and self.synchronous == "full"
                if full != self._full:
                    self._full = None  # (unknown until the pragma has run)
                    connection.execute(f"PRAGMA synchronous = {'FULL' if full else 'NORMAL'}")
                    self._full = full
            except sqlite3.Error as error:
                raise self._failed(doing, error) from error
            try:
                connection.execute("BEGIN IMMEDIATE")
                done = statements(connection)
                self._commit(connection)
            except BaseException as error:
                _roll_back(connection)
                if isinstance(error, sqlite3.Error):
                    raise self._failed(doing, error) from error
                raise
            return done

    def _read(self, doing: str, query: str, parameters: tuple[str, ...]) -> list[Any]:
        """The rows ``query`` reads; its statement is ended whatever happens (an unfinished
        one would keep the connection on an old snapshot of the file)."""
        with self._lock:
            try:
                cursor = self._open().cursor()
                try:
                    return cursor.execute(query, parameters).fetchall()
                finally:
                    cursor.close()
            except sqlite3.Error as error:
                raise self._failed(doing, error) from error

    def _commit(self, connection: sqlite3.Connection) -> None:
        connection.execute("COMMIT")

    def _open(self) -> sqlite3.Connection:
        """The connection, opened (and the schema made) on first use, and again in a
        forked child (a connection must not cross a fork)."""
        pid = os.getpid()
        connection = self._connection
        if connection is not None and self._pid == pid:
            _roll_back(connection)  # what an interrupt left open: nothing of it committed
            if not connection.in_transaction:
                return connection
            self._connection = None
            connection.close()
        connection = sqlite3.connect(
            self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
        )
        try:
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode != "wal" and self.path != ":memory:":
                raise LedgerError(
                    f"SQLite ledger {self.path}: SQLite refused WAL mode (the journal stays "
                    f"{mode!r}); keep the ledger file on a local disk (WAL needs shared memory, "
                    "which network file systems lack), or use PostgresLedger for many machines"
                )
            connection.execute("PRAGMA synchronous = NORMAL")
            _create_schema(connection, self.path)
        except BaseException:
            connection.close()
            raise
        self._pid, self._full, self._file = pid, False, _identity(self.path)
        self._connection = connection  # last: an interrupt before it leaves it unused
        return connection

    def _same_file(self) -> None:
        """Refuse to claim calls in a file that is no longer the one at ``path``.

        Raises:
            LedgerError: The file was deleted or replaced since this ledger opened it.
        """
        if self._file is not None and _identity(self.path) != self._file:
            raise LedgerError(
                f"SQLite ledger {self.path}: the file was deleted or replaced after this "
                "process opened it, so other workers cannot see the calls it records and "
                "could run them again; nothing of this batch was run. Stop the workers and "
                "put the ledger file back (its started rows are what keeps a call from "
                "running twice), or close() this ledger to start over with the file now "
                "at that path"
            )

    def _failed(self, doing: str, error: sqlite3.Error) -> LedgerError:
        text = str(error)
        hint = ""
        if "locked" in text or "busy" in text:
            hint = f" (another process held the database longer than timeout={self.timeout}s)"
        elif "unable to open" in text or "readonly" in text:
            hint = " (does its folder exist, and may this process write the file and its folder?)"
        elif "full" in text:
            hint = " (free space on the disk that holds it)"
        after = UNSETTLED if doing == _SETTLING else ""
        return LedgerError(f"SQLite ledger {self.path}: could not {doing}: {text}{hint}{after}")


def _identity(path: str) -> tuple[int, int] | None:
    """The file at ``path`` as ``(device, inode)``; None for SQLite's private databases
    (``(0, 0)`` when nothing is there)."""
    if path in (":memory:", ""):
        return None
    try:
        found = os.stat(path)
    except OSError:
        return (0, 0)
    return (found.st_dev, found.st_ino)


def _create_schema(connection: sqlite3.Connection, path: str) -> None:
    """Create the schema in a new file; refuse a file from a newer tinytools."""
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise LedgerError(
            f"SQLite ledger {path}: schema version {version} is newer than this tinytools "
            f"understands ({SCHEMA_VERSION}); upgrade tinytools"
        )
    try:
        connection.execute("BEGIN IMMEDIATE")  # one process creates it; the others wait
        if connection.execute("PRAGMA user_version").fetchone()[0] == 0:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        connection.execute("COMMIT")
    except BaseException:
        _roll_back(connection)
        raise


def _roll_back(connection: sqlite3.Connection) -> None:
    """End the connection's transaction, if it is in one (nothing of it was committed);
    a failure leaves it in the transaction, which its owner then sees."""
    if connection.in_transaction:
        with suppress(sqlite3.Error):
            connection.execute("ROLLBACK")
