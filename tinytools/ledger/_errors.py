"""``LedgerError``: a ledger could not read or write its database."""

from __future__ import annotations

from tinytools.errors import TinytoolsError

__all__ = ["UNSETTLED", "LedgerError"]

#: What a failed ``settled`` message adds: what became of the call, and what to do.
UNSETTLED = (
    "; the call stays unresolved in the ledger: once the database can be written, "
    "reconcile the run (`reconcile`, or `tinytools ledger reconcile`)"
)


class LedgerError(TinytoolsError):
    """The ledger's database could not be reached, read or written.

    The message names the ledger, what it was doing and why. Under dispatch it aborts
    the batch (``DispatchAborted``, every call answered): a failed ``started`` before
    any tool of the batch runs; a failed ``settled`` before the next call starts.
    """
