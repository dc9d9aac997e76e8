"""Fixtures shared by the engine's tests (tests/engine)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tinytools import _concurrency, _execute, _workers

try:
    from tinytools._workers_speedups import Baton as CompiledBaton
except ImportError:  # pragma: no cover - installed without a C compiler
    CompiledBaton = None  # type: ignore[assignment,misc]

BATONS = [
    pytest.param(_workers._Baton, id="python-baton"),
    pytest.param(
        CompiledBaton,
        id="c-baton",
        marks=pytest.mark.skipif(CompiledBaton is None, reason="the C extension is not built"),
    ),
]


@pytest.fixture(params=BATONS)
def tool_threads(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> _workers.ThreadPool:
    """The pool every dispatch of the test hands its threaded calls to, made with the
    compiled baton and with its pure-Python twin."""
    baton: Callable[[], _workers.Handoff] = request.param
    pool = _workers.ThreadPool(baton=baton)
    for module in (_workers, _execute, _concurrency):  # every module that reads it
        monkeypatch.setattr(module, "THREADS", pool)
    return pool
