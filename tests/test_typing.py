"""Tests for the static types of `tinytools`: `@tool` keeps the call signature."""

from __future__ import annotations

from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api", reason="mypy is in the `test` extra")

CHECKED = Path(__file__).parent / "typing" / "check_tool.py"


class TestToolTyping:
    def test_signature_kept(self) -> None:
        """mypy --strict accepts the file: every assert_type holds, every ignore is needed."""
        out, err, status = api.run(
            ["--strict", "--no-incremental", "--python-version=3.11", str(CHECKED)]
        )
        assert status == 0, out + err

    def test_revealed_type(self) -> None:
        """The decorated function is revealed as a Tool parameterised by its signature."""
        out, _, _ = api.run(["--strict", "--no-incremental", "--python-version=3.11", str(CHECKED)])
        expected = 'Revealed type is "tinytools._spec.Tool[[query: str, limit: int =], list[str]]"'
        assert expected in out
