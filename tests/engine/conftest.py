"""Fixtures shared by the engine's tests (tests/engine)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tinytools._runtime import baton, threads

try:
    from tinytools._runtime._baton import Baton as CompiledBaton
except ImportError:  # pragma: no cover - installed without a C compiler
    CompiledBaton = None  # type: ignore[assignment,misc]

BATONS = [
    pytest.param(baton._Baton, id="python-baton"),
    pytest.param(
        CompiledBaton,
        id="c-baton",
        marks=pytest.mark.skipif(CompiledBaton is None, reason="the C extension is not built"),
    ),
]


@pytest.fixture(params=BATONS)
def tool_threads(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> threads.ThreadPool:
    """The pool every dispatch of the test hands its threaded calls to, made with the
    compiled baton and with its pure-Python twin."""
    made: Callable[[], baton.Handoff] = request.param
    pool = threads.ThreadPool(baton=made)
    monkeypatch.setattr(threads, "THREADS", pool)
    return pool
