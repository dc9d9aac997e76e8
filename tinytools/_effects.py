"""The effect-ledger hook dispatch calls: :class:`EffectLedger`.

A ledger records a durable ``started`` row before a tool runs and settles it
once the call is answered, so a crashed run can tell which side effects may
have happened. Dispatch only calls these two methods; implementations (SQLite,
PostgreSQL) and ``reconcile`` live in ``tinytools.ledger``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from ._wire import MessageStatus

__all__ = ["EffectLedger"]


class EffectLedger(Protocol):
    """What dispatch needs from an effect ledger."""

    def started(
        self, run_id: str, call_id: str, tool_name: str, arguments: Mapping[str, object]
    ) -> None:
        """Record that a call is about to run (before any tool of the batch runs)."""
        ...

    def settled(self, run_id: str, call_id: str, status: MessageStatus) -> None:
        """Record how a call that was started ended."""
        ...
