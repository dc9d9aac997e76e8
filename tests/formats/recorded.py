"""Recorded provider payloads (``tests/formats/fixtures``), as plain JSON data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["recorded"]

FIXTURES = Path(__file__).parent / "fixtures"


def recorded(name: str) -> Any:
    """The decoded JSON of the fixture file ``name``."""
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))
