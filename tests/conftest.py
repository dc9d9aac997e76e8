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
# examples, on the newest Python CI tests; "compat" runs few, on CI's other Pythons, where the
# suite is there to find what differs between versions (an import, a standard-library change,
# a C extension built for that version), which any example shows, not rare inputs: the
# examples are the newest Python's job. (Four Pythons' suites on CI's two cores must end
# within 15 minutes: four runs of "dev" alone took 19.) Select one with HYPOTHESIS_PROFILE=ci.
# Property tests that set their own max_examples scale it by the loaded profile (see
# tests/properties/test_dispatch_keywords.py). Under "compat" a loop over a whole corpus
# takes a deterministic sample of it (corpus_sample in tests/locations.py).
# "triage" skips shrinking, to list many distinct failures fast while debugging.
# No profile has a deadline: a per-example time limit is a timed assertion, which fails
# at random on a loaded machine (CI runs two Pythons' suites at once on two cores).
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=150, deadline=None)
settings.register_profile("compat", max_examples=10, deadline=None)
settings.register_profile(
    "triage",
    max_examples=300,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under "compat", a property test that sets its own ``max_examples`` runs no more than
    the profile's either (the profile alone caps only the tests that set none)."""
    if settings.get_current_profile_name() != "compat":
        return
    cap = settings.default.max_examples if settings.default else 10
    for item in items:
        test = getattr(getattr(item, "obj", None), "hypothesis", None)
        inner = getattr(test, "inner_test", None)
        own = getattr(item.obj, "_hypothesis_internal_use_settings", None)
        if inner is None or own is None or own.max_examples <= cap:
            continue
        # (Hypothesis reads a test's settings from this attribute at each run.)
        function = getattr(item.obj, "__func__", item.obj)
        function._hypothesis_internal_use_settings = settings(own, max_examples=cap)
