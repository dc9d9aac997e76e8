"""``tinytools ledger list|reconcile|prune``: the effect ledger from a shell.

``--db`` is a SQLite file, or a PostgreSQL conninfo (``postgresql://…`` or
``key=value`` pairs); a SQLite file must exist (opening a mistyped path would make
an empty ledger and report nothing unresolved, so it is refused: exit 1), and any
other URI (``POSTGRESQL://…``, ``postgresq://…``, ``postgresql:/…``) is refused
without its password, naming the PostgreSQL URI it may mean (exit 2). ``list``
shows the calls started and never settled, with their tool, age and arguments as
stored (redacted). ``reconcile`` settles one run's unresolved calls after a crash,
as :func:`tinytools.ledger.reconcile` does, reading replay safety from the tools
named by ``--tools``. ``prune`` deletes rows settled long ago.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
import time
from typing import TYPE_CHECKING, TextIO

from .output import printable, printable_json

if TYPE_CHECKING:
    from tinytools._declare.registry import AnyTool
    from tinytools.ledger import PostgresLedger, SqliteLedger

__all__ = ["add_commands", "run"]


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``ledger list``, ``ledger reconcile`` and ``ledger prune`` to the parser."""
    ledger = commands.add_parser(
        "ledger",
        help="list or reconcile the calls an effect ledger saw start and never finish",
        description=(
            "Read and repair a tool-effect ledger (SQLite file or PostgreSQL database) "
            "after a crash."
        ),
    )
    verbs = ledger.add_subparsers(title="actions", dest="action", metavar="ACTION", required=True)
    listing = verbs.add_parser(
        "list",
        help="the unresolved calls: started, never settled",
        description=(
            "List the calls the ledger saw start and never settle, oldest first: run, "
            "call id, tool, age and arguments as stored (redacted); a released call "
            "(deferred by its tool, or released by reconcile) waits to start again."
        ),
    )
    fixing = verbs.add_parser(
        "reconcile",
        help="settle a crashed run's unresolved calls",
        description=(
            "Decide each unresolved call of a crashed run: a replay-safe tool's call is "
            "released for a re-run; any other is settled as interrupted and never runs "
            "again; a call its tool deferred, waiting for the host's decision, is left as "
            "it is. Replay safety is read from the tools' policies (--tools); without "
            "--tools no call is replay-safe. Run it only once the run's worker is gone."
        ),
    )
    pruning = verbs.add_parser(
        "prune",
        help="delete rows settled long ago",
        description=(
            "Delete the rows settled more than --older-than days ago; unresolved calls are "
            "kept whatever their age. A pruned call id could run again: keep rows for as "
            "long as a worker might dispatch the same run again."
        ),
    )
    pruning.add_argument(
        "--older-than",
        type=float,
        required=True,
        metavar="DAYS",
        help="the age, in days, past which settled rows are deleted",
    )
    for parser in (listing, fixing, pruning):
        parser.add_argument(
            "--db",
            required=True,
            metavar="PATH",
            help="a SQLite ledger file, or a PostgreSQL conninfo (postgresql://...)",
        )
        parser.add_argument("--json", action="store_true", help="print JSON (one document)")
    listing.add_argument("--run", metavar="RUN_ID", help="only this run's calls")
    fixing.add_argument("--run", metavar="RUN_ID", required=True, help="the crashed run's id")
    fixing.add_argument(
        "--tools",
        metavar="TARGET",
        help="where the crashed batch's tools are, as for `tinytools check`: a module, "
        "module:attribute, or the path of a .py file or folder",
    )


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``tinytools ledger ACTION``; 1 when the ledger cannot be read or written."""
    from tinytools.ledger import LedgerError

    try:
        ledger = _open(args.db)
    except ValueError as error:
        _say(sys.stderr, f"tinytools ledger: {error}")
        return 1 if isinstance(error, _NoLedger) else 2
    try:
        if args.action == "list":
            return _list(ledger, args, out)
        if args.action == "prune":
            return _prune(ledger, args, out)
        return _reconcile(ledger, args, out)
    except (LedgerError, _TargetError) as error:
        _say(sys.stderr, f"tinytools ledger: {error}")
        return 1
    finally:
        ledger.close()


def _open(db: str) -> SqliteLedger | PostgresLedger:
    from tinytools.ledger import PostgresLedger, SqliteLedger

    if db.startswith(("postgresql://", "postgres://")):
        return PostgresLedger(db)
    problem = _uri_problem(db)
    if problem is not None and not os.path.isfile(db):
        raise ValueError(problem)
    if "=" in db:
        return PostgresLedger(db)
    if not db:
        raise ValueError("--db is empty: give a SQLite file or a PostgreSQL conninfo")
    if not os.path.isfile(db):
        # Opening would make a new, empty ledger and report nothing unresolved (a typo, or
        # a relative path read from another folder than the workers'): refuse instead.
        raise _NoLedger(
            f"no ledger file at {os.path.abspath(db)}: give the path the workers' "
            "SqliteLedger uses (a relative path is read from the current folder); nothing "
            "was created"
        )
    return SqliteLedger(db)


#: ``scheme:`` and the rest; one letter before the colon is a Windows drive, not a scheme.
_URI = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):(/*)(.*)", re.DOTALL)
#: A user name shown as it is (anything else in a URI's user info may be a password).
_USER = re.compile(r"[\w.$-]+")


def _uri_problem(db: str) -> str | None:
    """Why ``db`` is no SQLite path though no PostgreSQL URI either: it has a URI's form
    (``scheme:/…``, ``scheme:…@…``), a mistyped or upper-case ``postgresql://`` or another
    scheme. The message shows it without what may be a secret, suggesting the URI meant."""
    found = _URI.fullmatch(db)
    if found is None:
        return None
    scheme, slashes, rest = found.groups()
    if not slashes and "@" not in rest:
        return None  # (a file named like `notes:v2.db`)
    shown = _masked(rest, slashes != "")
    lowered = scheme.lower()
    near = difflib.get_close_matches(lowered, ("postgresql", "postgres"), n=1, cutoff=0.75)
    if near or lowered.startswith("postgres"):
        return (
            f"--db {scheme}:{slashes}{shown} is no PostgreSQL URI (they start with "
            f"postgresql:// or postgres://, in lower case): did you mean postgresql://{shown}?"
        )
    return (
        f"--db {scheme}:{slashes}{shown} is a URI, not a SQLite file: give the ledger file's "
        "path, or a PostgreSQL conninfo (postgresql://…)"
    )


def _masked(rest: str, slashed: bool) -> str:
    """``rest``, what follows a URI's scheme, with what may be secret as ``***``: the
    password of its user info (all of it without ``//``, where the user may be the scheme
    itself, or when the user name has an odd form) and its query."""
    at, question = rest.rfind("@"), rest.find("?")
    if -1 < question < at:  # an `@` in the query or a `?` in the password: show neither
        return "***"
    userinfo, place = (rest[:at], rest[at + 1 :]) if at != -1 else (None, rest)
    place, query, _ = place.partition("?")
    shown = place + ("?***" if query else "")
    if userinfo is None:
        return shown
    user, colon, _ = userinfo.partition(":")
    if not slashed or _USER.fullmatch(user) is None:
        return f"***@{shown}"
    return f"{user}{':***' if colon else ''}@{shown}"


class _NoLedger(ValueError):
    """``--db`` names no SQLite file (exit 1, as for a ledger that cannot be read)."""


def _list(ledger: SqliteLedger | PostgresLedger, args: argparse.Namespace, out: TextIO) -> int:
    entries = ledger.unresolved(args.run)
    released = {
        (run, call_id)
        for run in sorted({e.run_id for e in entries})
        for call_id in ledger._released_ids(run)
    }
    now = time.time()
    if args.json:
        rows = [
            {
                "run_id": e.run_id,
                "call_id": e.call_id,
                "tool_name": e.tool_name,
                "age_seconds": round(max(0.0, now - e.started_at), 3),
                "arguments": e.arguments,
                "released": (e.run_id, e.call_id) in released,
            }
            for e in entries
        ]
        out.write(printable_json(rows, default=repr) + "\n")
        return 0
    if not entries:
        _say(out, "No unresolved calls.")
        return 0
    _say(out, f"{len(entries)} unresolved call(s), oldest first:")
    for e in entries:
        arguments = printable_json(e.arguments, default=repr)
        waits = (e.run_id, e.call_id) in released
        _say(
            out,
            f"  run {e.run_id}  call {e.call_id}  tool {e.tool_name}  "
            f"age {_age(now - e.started_at)}{_RELEASED if waits else ''}",
            f"    arguments {arguments}",
        )
    return 0


#: How ``list`` marks a released call: it has not acted since, and may start again.
_RELEASED = "  released: waits to start again (its tool deferred it, or reconcile released it)"


def _reconcile(ledger: SqliteLedger | PostgresLedger, args: argparse.Namespace, out: TextIO) -> int:
    from tinytools.ledger import reconcile

    tools = _tools(args.tools) if args.tools else ()
    decided = reconcile((), tools, ledger, args.run)
    rerun = {c.id for c in decided.rerun}
    # Left as they were: calls their tool deferred, waiting for the host's decision.
    waiting = [e for e in ledger.unresolved(args.run) if e.call_id not in rerun]
    if args.json:
        document = {
            "rerun": [c.id for c in decided.rerun],
            "interrupted": [m.tool_call_id for m in decided.messages],
            "waiting": [e.call_id for e in waiting],
        }
        out.write(printable_json(document) + "\n")
        return 0
    if not decided.events and not waiting:
        _say(out, f"Run {args.run}: no unresolved calls.")
        return 0
    _say(out, f"Run {args.run}: {len(decided.events)} unresolved call(s) reconciled:")
    for call in decided.rerun:
        _say(out, f"  {call.id} ({call.name}): replay-safe, released to run again")
    for message in decided.messages:
        _say(out, f"  {message.tool_call_id} ({message.name}): interrupted, will not run again")
    for entry in waiting:
        _say(
            out,
            f"  {entry.call_id} ({entry.tool_name}): deferred by its tool, waits for the "
            "host's decision (left as it is)",
        )
    if not args.tools:
        _say(out, "No --tools given: no call was treated as replay-safe.")
    return 0


def _prune(ledger: SqliteLedger | PostgresLedger, args: argparse.Namespace, out: TextIO) -> int:
    if not args.older_than >= 0:
        _say(sys.stderr, "tinytools ledger: --older-than must be a number of days >= 0")
        return 2
    deleted = ledger.prune(args.older_than * 86400)
    if args.json:
        out.write(json.dumps({"deleted": deleted}) + "\n")
    else:
        _say(out, f"Deleted {deleted} row(s) settled more than {args.older_than:g} day(s) ago.")
    return 0


class _TargetError(Exception):
    pass


def _tools(target: str) -> tuple[AnyTool, ...]:
    """The tools ``target`` names, found as every verb's TARGET is (``target.load``)."""
    from .target import TargetError, load

    try:
        loaded = load(target)
    except TargetError as error:
        raise _TargetError(f"--tools {target}: {error}") from None
    return tuple(found.tool for found in loaded.found)


def _say(out: TextIO, *lines: str) -> None:
    """Human output, every verb's: each line through ``printable``, a line break in it
    escaped too (call ids, tool names, run ids and arguments are whatever a model or a host
    sent: they cannot restyle the terminal nor forge a line of the listing)."""
    out.write("".join(printable(line) + "\n" for line in lines))


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes}m"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"
