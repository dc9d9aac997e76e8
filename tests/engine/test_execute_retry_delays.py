"""Execution's retries: a retry delay that is not a finite, non-negative number is refused
when the exception is made."""

from __future__ import annotations

import pytest

from tinytools import (
    RunPolicy,
)


class TestItem6RetryDelays:
    @pytest.mark.parametrize("field", ["retry_base_delay", "retry_max_delay"])
    @pytest.mark.parametrize(
        "value",
        [-1, float("nan"), float("inf"), "1", True, None, 10**400],
        ids=lambda v: repr(v)[:20],
    )
    def test_refused_at_construction(self, field: str, value: object) -> None:
        with pytest.raises(ValueError, match=field):
            RunPolicy(**{field: value})  # type: ignore[arg-type]
