"""The ``tinytools`` command line, built on argparse alone.

``demo`` lives here; every other verb is a module of its own: ``cmd_inspect``,
``cmd_call`` and ``cmd_check`` have ``add_parser(commands)``, which registers the
verb and sets its ``run(args, stdout) -> exit status`` as the ``run`` default;
``cmd_ledger`` registers ``ledger`` and is dispatched through ``_COMMANDS``.

Run as the ``tinytools`` console script or ``python -m tinytools``. CLI-only
code and imports stay in this module, which ``import tinytools`` never loads.
"""

from __future__ import annotations

import argparse
import json
import os
import pprint
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from tinytools import __version__
from tinytools._declare.registry import AnyTool
from tinytools.errors import ToolArgumentsError

from . import cmd_call, cmd_check, cmd_inspect, cmd_ledger
from .output import tolerant

__all__ = ["main"]

_PROG = "tinytools"
_INDENT = "    "


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``tinytools`` command.

    Args:
        argv: The arguments after the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit status. Usage errors exit through argparse with status 2,
        ``--help`` and ``--version`` with status 0.
    """
    out = tolerant(sys.stdout)  # (a stored id may hold a lone surrogate: see output)
    tolerant(sys.stderr)
    args = _parser().parse_args(argv)
    command = _COMMANDS.get(args.command) or args.run
    try:
        status = command(args, out)
        sys.stdout.flush()  # inside the `try`, so a closed pipe is reported here
    except BrokenPipeError:
        # The reader left early (`tinytools demo | head`): stop quietly, and keep
        # Python from failing again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return status


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_PROG,
        description="Turn plain Python functions into LLM tools and check model tool calls.",
        epilog=f"Run `{_PROG} COMMAND --help` for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"{_PROG} {__version__}")
    commands = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND", required=True
    )
    commands.add_parser(
        "demo",
        help="show example tools: their schemas, and how model arguments validate",
        description=(
            "Show the example tools (copies of the examples/ folder of the tinytools "
            "repository): each tool's name, description and the JSON schema the model "
            "sees. Then model-style calls, good and bad, each with the keyword arguments "
            "the function would receive or the error message the model would read."
        ),
    )
    for verb in (cmd_inspect, cmd_call, cmd_check):
        verb.add_parser(commands)
    cmd_ledger.add_commands(commands)
    return parser


# --- tinytools demo --------------------------------------------------------------


def _demo(_args: argparse.Namespace, out: TextIO) -> int:
    # Imported here so that `--help` and the other commands do not build the demo tools.
    from .demo import CALLS, EXAMPLES, TOOLS

    _write(out, *_heading(f"{_PROG} {__version__} demo", "="), "")
    _write(
        out,
        "The tools below are copies of the examples/ folder of the tinytools repository.",
        "First, what the model is told about each tool: its name, its description and the",
        "JSON schema of its arguments. Then calls as a model sends them, checked by",
        "Tool.validate.",
        "",
        "",
    )
    _write(out, *_heading(f"Tools ({len(TOOLS)})", "="), "")
    for filename, tools in EXAMPLES.items():
        for tool in tools:
            _write(out, *_tool_lines(tool, f"examples/{filename}"), "")
    _write(out, "", *_heading(f"Calls ({len(CALLS)})", "="), "")
    _write(
        out,
        "The arguments are raw JSON, as a model sends them. 'ok' shows the keyword arguments",
        "the function would receive; 'error' shows the message the model would read.",
        "",
    )
    accepted = 0
    digits = len(str(len(CALLS)))
    for number, demo in enumerate(CALLS, start=1):
        tool = TOOLS[demo.call.name]
        _write(out, f"{number:>{digits}}. {tool.name}: {demo.shows}")
        _write(out, *_field("arguments", str(demo.call.arguments)))
        try:
            kwargs = tool.validate(demo.call.arguments)
        except ToolArgumentsError as error:  # its message is written for the model
            _write(out, *_field("error", str(error)), "")
        else:
            accepted += 1
            _write(out, *_field("ok", pprint.pformat(kwargs, width=72, sort_dicts=False)), "")
    _write(out, f"{len(CALLS)} calls: {accepted} accepted, {len(CALLS) - accepted} rejected.")
    _write(out, "", "")
    _dispatch_turn(out)
    return 0


def _dispatch_turn(out: TextIO) -> None:
    """One model turn through dispatch_sync: the messages, the events, what was deferred."""
    import msgspec

    from tinytools import Context, dispatch_sync

    from .demo import TOOLS, TURN, Cart

    _write(out, *_heading(f"One turn of {len(TURN)} calls, dispatched", "="), "")
    _write(
        out,
        "dispatch_sync admits every call (names, JSON, schemas), runs what may run in call",
        "order, and answers each call with one message the model reads.",
        "",
    )
    for call in TURN:
        _write(out, *_field(call.id, f"{call.name} {call.arguments}"))
    result = dispatch_sync(TURN, TOOLS, context=Context(run_id="demo-run", state=Cart()))
    _write(out, "", "Messages, in call order:")
    for message in result.messages:
        _write(out, *_field(message.tool_call_id, f"[{message.status}] {message.content}"))
    _write(out, "", "Events:")
    for event in result.events:
        fields = msgspec.to_builtins(event)
        extra = fields.get("recovery") or fields.get("reason") or ""
        _write(out, *_field(fields.get("call_id", ""), f"{fields['kind']} {extra}".rstrip()))
    deferred = result.deferred.all if result.deferred else ()
    _write(out, "", f"Deferred to the host: {', '.join(c.id for c in deferred) or 'nothing'}")
    _write(out, f"Executed: {', '.join(result.executed)}")


def _tool_lines(tool: AnyTool, source: str) -> list[str]:
    """A tool as the model sees it, with what the host also knows (kind, injections)."""
    if tool.external:
        kind = "external: the host executes it"
    else:
        kind = "async" if tool.is_async else "sync"
    return [
        *_heading(f"{tool.name}  ({kind}; {source})", "-"),
        "Description:",
        *_indented(tool.description),
        f"Injected at run time, hidden from the model: {', '.join(tool.injected) or 'nothing'}",
        "Parameters (the JSON schema the model sees):",
        *_indented(json.dumps(tool.parameters, indent=2)),
    ]


def _field(label: str, text: str) -> list[str]:
    """``label`` then ``text`` in a column; continuation lines stay in that column."""
    first, *rest = text.splitlines() or [""]
    return [f"{_INDENT}{label:<10} {first}", *(f"{_INDENT}{'':<10} {line}" for line in rest)]


def _heading(title: str, underline: str) -> list[str]:
    return [title, underline * len(title)]


def _indented(text: str) -> list[str]:
    return [f"{_INDENT}{line}" if line else "" for line in text.splitlines()]


def _write(out: TextIO, *lines: str) -> None:
    out.write("".join(f"{line}\n" for line in lines))


#: Each command: ``(parsed arguments, stdout) -> exit status``.
_COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "demo": _demo,
    "ledger": cmd_ledger.run,
}
