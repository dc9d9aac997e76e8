"""``PostgresLedger``: the effect ledger many workers on many machines share.

``psycopg`` (3) is imported when the ledger first connects, never at import: the
``postgres`` extra installs it (``pip install "tinytools[postgres]"``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from tinytools._engine.effects import AlreadyStarted, LedgerEntry, StartedCall
from tinytools._wire import MessageStatus

from ._connected import Connected
from ._conninfo import connect_failure, described, parse
from ._errors import UNSETTLED, LedgerError
from ._rows import RELEASED, arguments_text, entry, index_key, key, unkey

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresLedger"]

#: The schema version this code writes (the highest row of ``tinytools_ledger_version``):
#: 2 added the whole ids beside the digests that key rows with long ids.
SCHEMA_VERSION = 2
#: Serialises schema creation between workers that start at once.
_SCHEMA_LOCK = 0x7469_6E79

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS tinytools_effects (
        run_id      text NOT NULL,
        call_id     text NOT NULL,
        tool_name   text NOT NULL,
        arguments   text NOT NULL,
        started_at  double precision NOT NULL,
        attempt     integer NOT NULL DEFAULT 1,
        status      text,
        settled_at  double precision,
        PRIMARY KEY (run_id, call_id)
    )""",
    """CREATE INDEX IF NOT EXISTS tinytools_effects_open ON tinytools_effects (started_at)
        WHERE status IS NULL OR status = 'released'""",
    # Version 2 (a version 1 table gains them, and no row is rewritten): the whole id of
    # a row whose run_id or call_id holds its digest (see `index_key`), else NULL.
    """ALTER TABLE tinytools_effects ADD COLUMN IF NOT EXISTS whole_run_id text,
        ADD COLUMN IF NOT EXISTS whole_call_id text""",
)
_EPOCH = "extract(epoch from clock_timestamp())"
# One statement claims the whole batch, in call-id order (so two workers claiming
# overlapping batches lock rows in the same order and never deadlock). A row is
# claimed when it is new or was released for a re-run; RETURNING names the claimed.
_START = f"""
INSERT INTO tinytools_effects
    (run_id, whole_run_id, call_id, whole_call_id, tool_name, arguments, started_at)
SELECT %s, %s, c, w, t, a, {_EPOCH}
FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[]) AS batch (c, w, t, a) ORDER BY c
ON CONFLICT (run_id, call_id) DO UPDATE SET
    tool_name = excluded.tool_name, arguments = excluded.arguments,
    started_at = excluded.started_at, attempt = tinytools_effects.attempt + 1,
    status = NULL, settled_at = NULL
WHERE tinytools_effects.status = 'released'
RETURNING call_id
"""
_SETTLE = (
    f"UPDATE tinytools_effects SET status = %s, settled_at = {_EPOCH} "
    "WHERE run_id = %s AND call_id = %s AND (status IS NULL OR status = 'released')"
)
_RELEASE = (
    f"UPDATE tinytools_effects SET status = %s, settled_at = {_EPOCH} "
    "WHERE run_id = %s AND call_id = %s"
)
_PRUNE = (
    "DELETE FROM tinytools_effects WHERE status IS NOT NULL AND status <> 'released' "
    f"AND settled_at < {_EPOCH} - %s"
)
_RELEASED = (
    "SELECT coalesce(whole_call_id, call_id) FROM tinytools_effects "
    "WHERE run_id = %s AND status = 'released'"
)
_OPEN = (
    "SELECT coalesce(whole_run_id, run_id), coalesce(whole_call_id, call_id), tool_name, "
    "arguments, started_at FROM tinytools_effects WHERE (status IS NULL OR status = 'released')"
)
_SETTLING = "settle a call"
# Settings that keep a lost server or network from hanging a worker; the conninfo's
# own values win.
_CONNECT_DEFAULTS = {
    "connect_timeout": "10",
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",
}


class PostgresLedger(Connected):
    """The effect ledger for many workers on many machines: one PostgreSQL database.

    ``started`` is an atomic claim (``INSERT … ON CONFLICT DO NOTHING`` in effect):
    when workers race on the same ``(run_id, call_id)`` exactly one claims it and the
    others get ``AlreadyStarted``, so a call runs at most once across all of them.
    The started rows of a batch are one statement in one transaction, committed
    before any tool of the batch runs. The schema is created on first use (under an
    advisory lock, so workers starting together do not race), with its version in
    the table ``tinytools_ledger_version``; a newer version is refused. Ids of any
    length are taken: an index row holds at most about 2.7 KB, so a run or call id over
    1 KB is keyed by its SHA-256 digest, and kept whole beside it.

    Upgrading: the first connection of this version upgrades a database of schema
    version 1 (tinytools before ids of any length) to version 2: it adds two columns,
    rewrites no row, and needs the right to alter the table. Workers of the older
    version that are connected go on working; one that connects after refuses the newer
    schema, so upgrade them all.

    Durability: a batch's started rows commit with ``synchronous_commit=on``
    (whatever the server's default): when ``started`` returns they are in the server's
    flushed WAL, so they survive a crash of the worker, of the server and, with the
    server's ``fsync=on`` (the default), a power loss of the database machine. Settled
    and released rows commit with ``synchronous_commit=off``: they survive a crash of
    the worker at once, and a crash of the server or a power loss once the WAL writer
    has flushed them (within a second, or at the next started rows' commit, which
    flushes everything before it); one lost that way reads as unresolved, which
    ``reconcile`` treats with the same caution as a crash. (A standby's durability is
    the server's ``synchronous_standby_names`` business.)

    A lost connection is an error, never a hang: the call raises :class:`LedgerError`
    (under dispatch the batch aborts with every call answered), and the next call
    connects again. Connecting waits at most ``connect_timeout`` (10 s unless the
    conninfo says otherwise) and TCP keepalives plus ``tcp_user_timeout`` (30 s)
    notice a silent network; waiting for another worker's row lock gives up after
    ``lock_timeout`` seconds.

    One ledger object may be shared by threads (it holds one connection, used by one
    thread at a time) and is reconnected in a forked child.

    Its errors and ``repr`` name the database by the conninfo's host, port, database and
    user, never by its password or other fields (``***``; so is a field that does not
    have the form of one, where a password split by an unescaped ``@`` or ``/`` in a URI
    lands). libpq's own messages quote the conninfo: a conninfo libpq cannot parse is
    described in other words, and a connection error's quoted values that could come
    from a hidden field are replaced by its name (``<options>``).

    Args:
        conninfo: A libpq connection string or URI (``"postgresql://user@host/db"``,
            ``"host=/run/postgresql dbname=app"``).
        lock_timeout: Seconds a claim waits for a row another worker is claiming.
    """

    def __init__(self, conninfo: str = "", *, lock_timeout: float = 30.0) -> None:
        self.conninfo = conninfo
        self.lock_timeout = lock_timeout
        super().__init__()
        self._connection: psycopg.Connection[Any] | None = None

    def __repr__(self) -> str:
        return f"PostgresLedger({described(self.conninfo)!r})"

    # --- the protocol ---------------------------------------------------------

    def started(
        self, run_id: str, call_id: str, tool_name: str, arguments: Mapping[str, object]
    ) -> None:
        """Claim one call (one transaction).

        Raises:
            AlreadyStarted: The call was claimed before and not released.
            LedgerError: The database could not be reached or written.
        """
        if self.started_batch(run_id, [(call_id, tool_name, arguments)]):
            raise AlreadyStarted(run_id, call_id)

    def started_batch(self, run_id: str, calls: Sequence[StartedCall]) -> frozenset[str]:
        """Claim every call in one statement and one transaction, committed before this
        returns.

        Returns:
            The ids of the calls already claimed (by an earlier attempt or another
            worker); the others are now this caller's.

        Raises:
            LedgerError: The database could not be reached or written (nothing was
                claimed).
        """
        keyed: dict[str, tuple[str, str | None, str, str]] = {}
        for call_id, name, arguments in calls:
            call_key, whole = index_key(call_id)
            keyed.setdefault(call_key, (call_id, whole, key(name), arguments_text(arguments)))
        if not keyed:
            return frozenset()
        run_key, whole_run = index_key(run_id)
        rows = list(keyed.values())
        columns = [list(keyed), [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows]]
        with self._statement("claim calls") as connection:
            # The claim waits for the WAL flush whatever the session's default.
            connection.execute("BEGIN; SET LOCAL synchronous_commit = on")
            cursor = connection.execute(_START, (run_key, whole_run, *columns))
            claimed = {row[0] for row in cursor.fetchall()}
            self._commit(connection)
        refused = {k for k in keyed if k not in claimed}
        refused_ids = {keyed[k][0] for k in refused}
        if len(keyed) < len(calls):  # a repeated id: its second occurrence is not claimed
            seen: set[str] = set()
            for call_id, _, _ in calls:
                if call_id in seen:
                    refused_ids.add(call_id)
                seen.add(call_id)
        return frozenset(refused_ids)

    def settled(self, run_id: str, call_id: str, status: MessageStatus) -> None:
        """Record how a claimed call ended. A released call (waiting to be claimed again)
        is settled too, and is never claimed again; a call never claimed, or already
        settled, is left as it is.

        Raises:
            LedgerError: The database could not be reached or written.
        """
        with self._statement(_SETTLING) as connection:  # (autocommit: one transaction)
            connection.execute(_SETTLE, (str(status), *_row_key(run_id, call_id)))

    def release(self, run_id: str, call_id: str) -> None:
        """Let a claimed (or settled) call be claimed once more (``reconcile`` found it
        replay-safe, or its tool deferred it before acting).

        Raises:
            LedgerError: The database could not be reached or written.
        """
        with self._statement("release a call") as connection:
            connection.execute(_RELEASE, (RELEASED, *_row_key(run_id, call_id)))

    def prune(self, older_than: float) -> int:
        """Delete the rows settled more than ``older_than`` seconds ago (unresolved and
        released rows are kept whatever their age); how many were deleted. A pruned call
        could be claimed again: prune only what no worker will dispatch again.

        Raises:
            LedgerError: The database could not be reached or written.
        """
        with self._statement("prune settled rows") as connection:
            return int(connection.execute(_PRUNE, (float(older_than),)).rowcount)

    def unresolved(self, run_id: str | None = None) -> tuple[LedgerEntry, ...]:
        """The calls claimed and never settled (released ones included), oldest first.

        Raises:
            LedgerError: The database could not be reached or read.
        """
        query = _OPEN
        parameters: tuple[str, ...] = ()
        if run_id is not None:
            query, parameters = f"{_OPEN} AND run_id = %s", (index_key(run_id)[0],)
        with self._statement("read unresolved calls") as connection:
            rows = connection.execute(f"{query} ORDER BY started_at, call_id", parameters)
            return tuple(entry(*row) for row in rows.fetchall())

    def _released_ids(self, run_id: str) -> frozenset[str]:
        """The ids of ``run_id``'s released calls (``reconcile`` reads them: such a call
        has not acted since it was released).

        Raises:
            LedgerError: The database could not be reached or read.
        """
        with self._statement("read released calls") as connection:
            rows = connection.execute(_RELEASED, (index_key(run_id)[0],)).fetchall()
        return frozenset(unkey(row[0]) for row in rows)

    # --- the connection ---------------------------------------------------------

    # A KeyboardInterrupt may land anywhere in a statement, in psycopg's code too, whose
    # state it may leave half-changed: `_statement` drops the connection (the server
    # rolls back what it was doing at once: the claim's transaction holds its rows'
    # locks, which other workers wait for), and `_open` ends a transaction that even that
    # missed, so the next statement never runs inside one.

    @contextmanager
    def _statement(self, doing: str) -> Iterator[psycopg.Connection[Any]]:
        """The connection, for statements that end as they began: outside a transaction.

        Raises:
            LedgerError: A statement failed (its transaction was rolled back).
        """
        with self._lock:
            try:
                connection = self._open(doing)
                try:
                    yield connection
                except Exception as error:
                    self._end(connection, error)
                    raise self._failed(doing, error) from error
            except BaseException as error:
                if not isinstance(error, Exception):
                    self._drop()
                raise

    def _commit(self, connection: psycopg.Connection[Any]) -> None:
        connection.execute("COMMIT")

    def _open(self, doing: str) -> psycopg.Connection[Any]:
        """The connection: made (with the schema) on first use, after a lost one, and
        in a forked child."""
        connection = self._connection
        if connection is not None and self._pid == os.getpid() and not connection.closed:
            self._end(connection)  # what an interrupt left: nothing of it was committed
            if self._connection is connection:
                return connection
        self._connection = None
        try:
            import psycopg
            from psycopg.conninfo import make_conninfo
        except ImportError as error:
            raise LedgerError(
                'PostgresLedger needs psycopg 3: pip install "tinytools[postgres]"'
            ) from error
        # The failure is raised outside the `except`: libpq's error, which may quote the
        # conninfo, must not ride along as the LedgerError's context.
        fields = parse(self.conninfo)
        failure = fields if isinstance(fields, str) else ""
        made = None
        if isinstance(fields, dict):
            try:
                conninfo = make_conninfo("", **{**fields, **self._settings(fields)})
                made = psycopg.connect(conninfo, autocommit=True)
            except Exception as error:
                failure = connect_failure(_first_line(error), fields)
        if made is None:
            raise LedgerError(
                f"PostgresLedger {described(self.conninfo)!r}: could not connect to {doing}: "
                f"{failure}{UNSETTLED if doing == _SETTLING else ''}"
            )
        try:
            _create_schema(made)
        except BaseException as error:
            made.close()
            if isinstance(error, psycopg.Error):
                raise self._unmade(doing, error) from error
            raise
        self._connection, self._pid = made, os.getpid()
        return made

    def _unmade(self, doing: str, error: psycopg.Error) -> LedgerError:
        """The error for tables that could not be created or upgraded."""
        import psycopg

        hint = ""
        if isinstance(error, psycopg.errors.InsufficientPrivilege):
            hint = " (the first connection of a new version needs the right to alter them)"
        elif isinstance(error, psycopg.errors.LockNotAvailable):
            hint = " (a long transaction of another worker holds the table: retry once it ends)"
        return LedgerError(
            f"PostgresLedger {described(self.conninfo)!r}: could not create or upgrade its "
            f"tables to schema version {SCHEMA_VERSION} to {doing}: {_first_line(error)}{hint}"
        )

    def _settings(self, given: dict[str, str]) -> dict[str, str]:
        settings = {name: value for name, value in _CONNECT_DEFAULTS.items() if name not in given}
        lock_ms = max(1, round(self.lock_timeout * 1000))
        # Settled and released rows commit without waiting for the WAL flush (see the
        # class docstring); started rows set it back on for their transaction.
        options = f"-c synchronous_commit=off -c lock_timeout={lock_ms}"
        settings["options"] = f"{given.get('options', '')} {options}".strip()
        return settings

    def _end(self, connection: psycopg.Connection[Any], error: Exception | None = None) -> None:
        """End what ``connection`` was doing: roll back its transaction, or drop it when it
        is lost, mid-statement or cannot roll back (the server then rolls back); the next
        use connects again."""
        import psycopg
        from psycopg.pq import TransactionStatus

        if not connection.closed and not isinstance(error, psycopg.OperationalError):
            status = connection.info.transaction_status
            if status == TransactionStatus.IDLE:
                return
            if status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
                try:
                    connection.execute("ROLLBACK")
                except Exception:
                    pass  # (dropped below)
                else:
                    return
        if self._connection is connection:
            self._drop()

    def _drop(self) -> None:
        """Close the connection (the server rolls back what it was doing); the next use
        connects again."""
        connection, self._connection = self._connection, None
        if connection is not None and self._pid == os.getpid():
            with suppress(Exception):
                connection.close()

    def _failed(self, doing: str, error: Exception) -> LedgerError:
        """The error for a failed statement."""
        import psycopg

        after = UNSETTLED if doing == _SETTLING else ""
        if isinstance(error, psycopg.errors.UndefinedTable):
            after = (
                "; the table tinytools_effects is gone (dropped by hand?), and with it the "
                "rows that keep calls from running twice: restore it from a backup, or drop "
                "the table tinytools_ledger_version too, so that the next connection makes an "
                "empty ledger (whose calls may then run again)"
            )
        return LedgerError(
            f"PostgresLedger {described(self.conninfo)!r}: could not {doing}: "
            f"{_first_line(error)}{after}"
        )


def _create_schema(connection: psycopg.Connection[Any]) -> None:
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        connection.execute(
            "CREATE TABLE IF NOT EXISTS tinytools_ledger_version (version integer NOT NULL)"
        )
        row = connection.execute("SELECT max(version) FROM tinytools_ledger_version").fetchone()
        version = None if row is None else row[0]
        if version == SCHEMA_VERSION:
            return
        # New, or version 1: every statement is idempotent, so one list makes both.
        if version is not None and version > SCHEMA_VERSION:
            raise LedgerError(
                f"the PostgreSQL ledger's schema version {version} is newer than this "
                f"tinytools understands ({SCHEMA_VERSION}); upgrade tinytools"
            )
        for statement in _SCHEMA:
            connection.execute(statement)
        connection.execute(
            "INSERT INTO tinytools_ledger_version (version) VALUES (%s)", (SCHEMA_VERSION,)
        )


def _row_key(run_id: str, call_id: str) -> tuple[str, str]:
    """The key of a call's row."""
    return index_key(run_id)[0], index_key(call_id)[0]


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
