"""The durable tool-effect ledger (DESIGN.md, "Effect ledger").

Dispatch records a ``started`` row for each call of a batch before any tool of
the batch runs, and settles it once the call is answered, so a crashed run can
tell which side effects may have happened. This module holds the protocol
dispatch calls, :class:`EffectLedger`; the SQLite and PostgreSQL ledgers and
``reconcile`` come with the ledger work (issue 13). Importing it loads no
database driver.
"""

from __future__ import annotations

from tinytools._effects import EffectLedger as EffectLedger

__all__ = ["EffectLedger"]
EffectLedger.__module__ = __name__
