"""``tinytools check TARGET...``: lint tools the way linters report code.

Each finding is one line, ``path:line: CODE severity: message``, which editors
and CI annotate; ``--format json`` gives the same as a JSON document and
``--format github`` as GitHub Actions annotations. The exit status is 1 when a
finding at ``--fail-on`` level or above was reported (errors by default), 2
when a target cannot be used at all, 0 otherwise.
"""

from __future__ import annotations

import argparse
from typing import TextIO

from .lint import DEFAULT_BUDGET, RULES, Diagnostic, lint
from .output import (
    Paint,
    Progress,
    add_target,
    example_epilog,
    load_or_exit,
    paragraph,
    printable,
    printable_json,
    use_colour,
)
from .target import Broken, Found

__all__ = ["add_parser", "run"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``check`` on the ``tinytools`` parser."""
    rules = "\n".join(f"  {r.code}  {r.severity:<7}  {r.summary}" for r in RULES.values())
    parser = commands.add_parser(
        "check",
        help="lint tools: descriptions, policies, names, provider schema limits, manifest size",
        description=paragraph(
            "Lint the tools of each TARGET and print one line per finding, "
            "`path:line: CODE severity: message`, as linters do. Exit status: 1 when "
            "an error (or, with --fail-on warning, a warning) was found, 2 when a "
            "target cannot be used, 0 otherwise."
        ),
        epilog=(
            f"rules:\n{rules}\n\n"
            + example_epilog(
                "tinytools check examples/",
                "tinytools check myproject.tools:registry --budget 8000",
                "tinytools check myproject/tools.py --ignore TT101,TT302",
                "tinytools check myproject.tools --format json | jq .diagnostics",
                "tinytools check myproject.tools --format github   # in a GitHub Actions step",
            )
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_target(parser, many=True)
    parser.add_argument(
        "--format",
        choices=("text", "json", "github"),
        default="text",
        help="text lines (default), a JSON document, or GitHub Actions annotations",
    )
    parser.add_argument(
        "--budget",
        type=int,
        default=DEFAULT_BUDGET,
        metavar="BYTES",
        help=(
            "most bytes the direct tools' declarations may take on every request "
            f"(compact JSON, OpenAI Chat shape; default {DEFAULT_BUDGET})"
        ),
    )
    parser.add_argument(
        "--ignore",
        default="",
        metavar="CODES",
        help="comma-separated rule codes not to report (TT101,TT302)",
    )
    parser.add_argument(
        "--fail-on",
        choices=("error", "warning"),
        default="error",
        help="the lowest severity that makes the exit status 1 (default: error)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Check every target; see the module docstring for the exit status."""
    ignore = frozenset(code.strip().upper() for code in args.ignore.split(",") if code.strip())
    if unknown := sorted(ignore - RULES.keys()):
        raise SystemExit(f"tinytools check: error: unknown rule code {', '.join(unknown)}")
    found: list[Found] = []
    broken: list[Broken] = []
    files = 0
    progress = Progress(len(args.target))
    for done, target in enumerate(args.target, start=1):
        progress.step(done, target)
        loaded = load_or_exit(target)
        if isinstance(loaded, int):
            progress.close()
            return loaded
        found.extend(loaded.found)
        broken.extend(loaded.broken)
        files += loaded.files
    progress.close()
    diagnostics = lint(found, broken, budget=args.budget, ignore=ignore)
    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = len(diagnostics) - errors
    if args.format == "json":
        _write_json(out, diagnostics, len(found), files, errors, warnings)
    elif args.format == "github":
        out.writelines(_github_line(d) for d in diagnostics)
    else:
        _write_text(out, diagnostics, len(found), files, errors, warnings)
    failing = errors + (warnings if args.fail_on == "warning" else 0)
    return 1 if failing else 0


def _write_text(
    out: TextIO, diagnostics: list[Diagnostic], tools: int, files: int, errors: int, warnings: int
) -> None:
    paint = Paint(use_colour(out))
    for d in diagnostics:
        colour = "red" if d.severity == "error" else "yellow"
        location = paint(printable(f"{d.path}:{d.line}:"), "bold")
        severity = f"{paint(d.code, colour)} {paint(d.severity, colour)}"
        out.write(f"{location} {severity}: {printable(d.message)}\n")
    where = f"{tools} tool{'s' * (tools != 1)} in {files} file{'s' * (files != 1)}"
    if diagnostics:
        summary = f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
        out.write(f"\nChecked {where}: {summary}.\n")
    else:
        out.write(f"Checked {where}: {paint('no problems', 'green')}.\n")


def _write_json(
    out: TextIO, diagnostics: list[Diagnostic], tools: int, files: int, errors: int, warnings: int
) -> None:
    document = {
        "tools": tools,
        "files": files,
        "errors": errors,
        "warnings": warnings,
        "diagnostics": [
            {
                "path": d.path,
                "line": d.line,
                "code": d.code,
                "severity": d.severity,
                "tool": d.tool,
                "message": d.message,
            }
            for d in diagnostics
        ],
    }
    out.write(printable_json(document, indent=2) + "\n")


def _github_line(d: Diagnostic) -> str:
    """A GitHub Actions workflow command that annotates the file and line."""

    def escape(text: str, *, prop: bool = False) -> str:
        # printable leaves no control character raw but tab and, here, newline (one command)
        text = printable(text, lines=True).replace("%", "%25").replace("\n", "%0A")
        return text.replace(":", "%3A").replace(",", "%2C") if prop else text

    return (
        f"::{d.severity} file={escape(d.path, prop=True)},line={d.line},"
        f"title={escape(d.code, prop=True)}::{escape(d.message)}\n"
    )
