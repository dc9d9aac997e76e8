"""The durable tool-effect ledger (docs/how-to/ledger.md).

Dispatch given ``ledger=`` records a ``started`` row for each admitted call of a
batch before any tool of the batch runs (with :class:`SqliteLedger` and
:class:`PostgresLedger`, all the batch's rows in one transaction), and settles
each row once its call is answered, whatever the outcome. A call whose
``(run_id, call_id)`` was started before is answered with an error and not run,
so a call runs at most once across retries, crashes and workers. After a crash,
:func:`reconcile` decides per interrupted call: re-run it if its tool is
replay-safe, else answer it as interrupted.

The guarantee: a call's tool runs only after its started row is committed, and
a started row is never started again unless ``reconcile`` released it (replay-safe
tools only) or its own tool deferred it before acting (a deferred call the host then
answers, denied or with its own result, is settled). So a call runs at most once
per ``(run_id, call_id)``; a call killed after its row was committed may or may not
have taken effect, and ``reconcile`` says so to the model. What survives a power
loss depends on the backend and its settings: see :class:`SqliteLedger` and
:class:`PostgresLedger`.

Dispatch calls the ledger on the thread that runs the batch: under ``dispatch``,
that is the event loop's thread, so each write (an fsync with the default
settings) briefly holds up the loop.

Importing this module loads no database driver (``psycopg`` is imported when a
:class:`PostgresLedger` first connects).
"""

from __future__ import annotations

from tinytools._engine.effects import AlreadyStarted as AlreadyStarted
from tinytools._engine.effects import DurableLedger as DurableLedger
from tinytools._engine.effects import EffectLedger as EffectLedger
from tinytools._engine.effects import LedgerEntry as LedgerEntry

from ._errors import LedgerError as LedgerError
from ._postgres import PostgresLedger as PostgresLedger
from ._reconcile import Reconciled as Reconciled
from ._reconcile import reconcile as reconcile
from ._reconcile import replay_safe as replay_safe
from ._sqlite import SqliteLedger as SqliteLedger

__all__ = [
    "AlreadyStarted",
    "DurableLedger",
    "EffectLedger",
    "LedgerEntry",
    "LedgerError",
    "PostgresLedger",
    "Reconciled",
    "SqliteLedger",
    "reconcile",
    "replay_safe",
]

for _name in __all__:
    _value = globals()[_name]
    if getattr(_value, "__module__", "").startswith(("tinytools._", "tinytools.ledger._")):
        _value.__module__ = __name__
del _name, _value
