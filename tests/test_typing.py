"""Tests for the static types of `tinytools`: `@tool` keeps the call signature."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy is in the `test` extra")

CHECKED = Path(__file__).parent / "typing" / "check_tool.py"


def mypy(*args: str) -> tuple[int, str]:
    """Run mypy in its own process (it changes interpreter-wide settings such as the
    recursion limit) and return its status and output."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--python-version=3.11", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def checked() -> tuple[int, str]:
    """mypy --strict's status and output on the typing check file (run once: ~10 s)."""
    return mypy("--strict", str(CHECKED))


class TestToolTyping:
    def test_signature_kept(self, checked: tuple[int, str]) -> None:
        """mypy --strict accepts the file: every assert_type holds, every ignore is needed."""
        status, out = checked
        assert 0 == status, out

    def test_revealed_type(self, checked: tuple[int, str]) -> None:
        """The decorated function is revealed as a Tool parameterised by its signature."""
        _, out = checked
        expected = (
            'Revealed type is "tinytools._declare.spec.Tool[[query: str, limit: int =], list[str]]"'
        )
        assert expected in out
