"""Shared pytest fixtures for the tinytools test suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from locations import CORPORA


@pytest.fixture(scope="session")
def corpora() -> Path:
    """The corpora folder; skips the test cleanly when it is absent."""
    if not CORPORA.is_dir():
        pytest.skip(f"third-party corpora not found at {CORPORA} (set TINYTOOLS_CORPORA)")
    return CORPORA


@pytest.fixture(params=["trio", "asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every async test runs under trio (the default runtime) and asyncio."""
    return str(request.param)
