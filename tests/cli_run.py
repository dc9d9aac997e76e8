"""Running the ``tinytools`` command for the command-line tests.

:func:`run_cli` calls the entry point's ``main(argv)`` in this process, shaped as a
finished subprocess: a new interpreter per call cost the suite about half a minute of CPU
(on each of CI's four Pythons) and showed nothing a call of ``main`` does not. What only a
real process shows (the installed entry point, the exit status through ``sys.exit``, a
closed pipe, a terminal) is shown by the tests that call :func:`run_cli_process`, or
start the process themselves (tests/cli/test_cli.py).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import sysconfig
import warnings
from collections.abc import Iterator
from pathlib import Path

from tinytools._cli import main

__all__ = ["REPO", "run_cli", "run_cli_process"]

REPO = Path(__file__).resolve().parents[1]

# Modules a call imports from here stay imported (as the first call's imports would in a
# process of its own: tinytools, the standard library, installed packages); any other (a
# TARGET's module, a file in a test's folder) is forgotten after the call, so the next call
# imports it afresh, as a new process would.
_KEPT = tuple(
    str(Path(p).resolve())
    for p in {
        *sysconfig.get_paths().values(),
        sys.prefix,
        sys.base_prefix,
        str(Path(main.__code__.co_filename).resolve().parents[1]),
    }
)


def _environment(env: dict[str, str] | None) -> dict[str, str]:
    """The environment of a call: this one without the colour switches, plus ``env``."""
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environment.update(env or {})
    return environment


def run_cli(
    *argv: str, cwd: Path = REPO, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``tinytools ARGV...`` run in-process, its output captured as a pipe would take it
    (no colour, no progress; ``PYTHONIOENCODING`` in ``env`` sets the encoding, else UTF-8)."""
    environment = _environment(env)
    encoding, _, errors = environment.get("PYTHONIOENCODING", "utf-8").partition(":")
    stdout, stderr = (io.BytesIO(), io.BytesIO())
    streams = [io.TextIOWrapper(b, encoding=encoding, errors=errors or "strict") for b in (stdout,)]
    # (Python's own stderr writes what its encoding cannot hold as backslash escapes.)
    streams.append(io.TextIOWrapper(stderr, encoding=encoding, errors="backslashreplace"))
    with _process_state(cwd, environment):
        sys.stdin = io.StringIO(stdin or "")
        sys.stdout, sys.stderr = streams
        try:
            status = main(list(argv))
        except SystemExit as exit_:  # argparse's usage errors, --help, --version
            code = exit_.code
            status = code if isinstance(code, int) else 0 if code is None else 1
            if not isinstance(code, int | None):
                print(code, file=sys.stderr)
        finally:
            for stream in streams:
                stream.flush()
    return subprocess.CompletedProcess(
        ["tinytools", *argv], status, _text(stdout, encoding), _text(stderr, encoding)
    )


def _text(buffer: io.BytesIO, encoding: str) -> str:
    """What ``subprocess.run(text=True)`` reads from a pipe: decoded, newlines universal."""
    return buffer.getvalue().decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


@contextlib.contextmanager
def _process_state(cwd: Path, environment: dict[str, str]) -> Iterator[None]:
    """The state a new process would start from, put back as it was afterwards: the
    working folder, the environment, the standard streams, ``sys.path`` and
    ``sys.modules`` (see ``_KEPT``), and the warning filters (a subprocess prints a warning
    on stderr; pytest's filters here would raise it)."""
    saved_environ, saved_path = dict(os.environ), list(sys.path)
    saved_modules = set(sys.modules)
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_cwd = os.getcwd()
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(environment)
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()
            warnings.simplefilter("default")
            yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_environ)
        sys.path[:] = saved_path
        for name in set(sys.modules) - saved_modules:
            file = getattr(sys.modules[name], "__file__", None)
            if not (file and str(Path(file).resolve()).startswith(_KEPT)):
                del sys.modules[name]


def run_cli_process(
    *argv: str, cwd: Path = REPO, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m tinytools ARGV...`` in a new interpreter, its output captured (piped)."""
    return subprocess.run(
        [sys.executable, "-m", "tinytools", *argv],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=_environment(env),
    )
