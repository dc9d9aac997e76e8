"""Running the real ``tinytools`` entry point in a subprocess, for the command-line tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["REPO", "run_cli"]

REPO = Path(__file__).resolve().parents[1]


def run_cli(
    *argv: str, cwd: Path = REPO, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m tinytools ARGV...`` with its output captured (piped: no colour, no progress)."""
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "tinytools", *argv],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=environment,
    )
