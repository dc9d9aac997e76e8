"""Developer sessions: ``nox -s tests``, ``lint``, ``typecheck``, ``bench``.

Versions and dependency groups come from ``pyproject.toml``, the single source.
"""

from __future__ import annotations

import os

import nox

PYPROJECT = nox.project.load_toml("pyproject.toml")
PYTHONS = nox.project.python_versions(PYPROJECT)  # from the classifiers

nox.options.sessions = ["tests", "lint", "typecheck"]
# A missing interpreter is skipped locally and an error under CI, as in `.ci/run`.
nox.options.error_on_missing_interpreters = os.environ.get("CI") == "true"


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Run the whole test suite (the README's test command)."""
    session.install("-e", ".[test]")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the package."""
    session.install("-e", ".", *nox.project.dependency_groups(PYPROJECT, "typecheck"))
    session.run("mypy", "--strict", "tinytools")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks beside their floors and the peers; prints ratios."""
    session.install("-e", ".", *nox.project.dependency_groups(PYPROJECT, "bench"))
    session.run("python", "-m", "benchmarks", *session.posargs)
