"""One module per peer library; each imports its library at import time, so import it lazily."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from types import ModuleType

__all__ = ["load"]


def load(names: Iterable[str]) -> dict[str, ModuleType | None]:
    """Each named peer module (``None`` when its library is not installed)."""
    peers: dict[str, ModuleType | None] = {}
    for name in names:
        try:
            peers[name] = importlib.import_module(f"{__name__}.{name}")
        except ImportError:
            peers[name] = None
    return peers
