"""Tests for the PostgreSQL fixture's rule: skip with the reason, unless CI requires it."""

from __future__ import annotations

import pytest
from conftest import _unavailable


def test_skips_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TINYTOOLS_REQUIRE_POSTGRES", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no PostgreSQL: initdb missing"):
        _unavailable("initdb missing")


def test_fails_when_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINYTOOLS_REQUIRE_POSTGRES", "1")
    with pytest.raises(pytest.fail.Exception, match=r"required.*initdb missing"):
        _unavailable("initdb missing")
