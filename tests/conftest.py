"""Shared pytest fixtures for the tinytools test suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import Phase, settings
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


# Hypothesis profiles: "dev" (the default) keeps the whole suite quick; "ci" runs more
# examples. Select one with HYPOTHESIS_PROFILE=ci. Property tests that set their own
# max_examples scale it by the loaded profile (see tests/properties/test_dispatch_keywords.py).
# "triage" skips shrinking, to list many distinct failures fast while debugging.
# No profile has a deadline: a per-example time limit is a timed assertion, which fails
# at random on a loaded machine (CI runs two Pythons' suites at once on two cores).
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=400, deadline=None)
settings.register_profile(
    "triage",
    max_examples=300,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
