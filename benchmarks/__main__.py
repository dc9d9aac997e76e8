"""Run every benchmark module: ``python -m benchmarks [--json] [options]``.

Each ``benchmarks/bench_*.py`` module's ``main()`` runs in turn, in name order, with the same
command-line arguments (so ``--json`` reaches every one of them; each prints one JSON
document on one line, so the output is JSON Lines). A module that fails is reported on
stderr and the others still run; the exit status is then 1.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import traceback
from pathlib import Path

__all__ = ["main"]


def bench_modules() -> list[str]:
    """The ``bench_*`` modules of this package, in name order."""
    here = [str(Path(__file__).parent)]
    return sorted(
        f"{__package__}.{info.name}"
        for info in pkgutil.iter_modules(here)
        if info.name.startswith("bench_") and not info.ispkg
    )


def main() -> None:
    """Run each benchmark module's ``main()``, passing the command line through."""
    arguments = sys.argv[1:]
    failed: list[str] = []
    for index, name in enumerate(bench_modules()):
        if index and "--json" not in arguments:
            print()
        sys.argv = [f"python -m {name}", *arguments]
        try:
            importlib.import_module(name).main()
        except Exception:
            traceback.print_exc()
            failed.append(name)
        sys.stdout.flush()
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
