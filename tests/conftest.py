"""Shared pytest fixtures for the tinytools test suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The third-party corpora live beside the repository, in ``../shared/corpora``.
#: ``TINYTOOLS_CORPORA`` overrides the location.
CORPORA = Path(
    os.environ.get(
        "TINYTOOLS_CORPORA", Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
    )
)


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
