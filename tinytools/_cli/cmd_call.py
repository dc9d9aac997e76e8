"""``tinytools call TARGET NAME [ARGS]``: one model-style call through ``dispatch_sync``.

``ARGS`` is the raw text a model would send (relaxed JSON is repaired as in a
real run; ``-`` reads it from standard input). The call goes through the whole
pipeline — admission, validation, policies, execution, folding — with
``Context(run_id="tinytools-cli")``, and the command prints the message the
model would read and the events the host would see.

Exit status: 0 when the tool ran and answered ``ok``, or when an external
tool's call was admitted and deferred to the host; 1 when the answer is an
error, denied or interrupted, when the call waits for an approval (pass
``--approve`` to approve and run it), or when dispatch itself raised; 2 when the
target cannot be used.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from .output import (
    Paint,
    add_target,
    example_epilog,
    load_or_exit,
    paragraph,
    printable,
    printable_json,
    use_colour,
)

__all__ = ["add_parser", "run"]

_CALL_ID = "call_1"
_INDENT = "    "


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``call`` on the ``tinytools`` parser."""
    parser = commands.add_parser(
        "call",
        help="run one call through dispatch_sync and print its message and events",
        description=paragraph(
            "Send one tool call, as a model would write it, through dispatch_sync: print "
            "the message the model reads back and the events the host sees. ARGS is the "
            "raw arguments text (relaxed JSON is repaired as in a real run)."
        ),
        epilog=example_epilog(
            """tinytools call examples/weather.py get_weather '{"city": "Paris"}'""",
            "tinytools call examples/weather.py get_weather \"{city: 'Paris', days: 3,}\"",
            """tinytools call myproject.tools:registry search '{"q": "tea"}' --json""",
            """echo '{"city": "Oslo"}' | tinytools call examples/weather.py get_weather -""",
            """tinytools call myproject.tools delete_file '{"path": "x"}' --approve""",
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_target(parser)
    parser.add_argument("name", metavar="NAME", help="the tool name, as the model sends it")
    parser.add_argument(
        "arguments",
        metavar="ARGS",
        nargs="?",
        default="{}",
        help="the arguments as raw JSON text (default {}; - reads standard input)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON document, for machines")
    parser.add_argument(
        "--approve",
        action="store_true",
        help="approve a call that waits for approval, and run it",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Dispatch the call; see the module docstring for the exit status."""
    import msgspec

    from tinytools import Context, Registry, ToolCall, dispatch_sync
    from tinytools._engine.result import DispatchAborted
    from tinytools.errors import TinytoolsError

    loaded = load_or_exit(args.target)
    if isinstance(loaded, int):
        return loaded
    tools: dict[str, object] = {}
    for item in loaded.found:
        if tools.setdefault(item.tool.name, item.tool) is not item.tool:
            sys.stderr.write(
                f"tinytools: error: {args.target} has two tools named `{item.tool.name}`; "
                "name one with module:attribute\n"
            )
            return 2
    registry = Registry(item.tool for item in loaded.found if tools[item.tool.name] is item.tool)
    text = sys.stdin.read() if args.arguments == "-" else args.arguments
    calls = [ToolCall(_CALL_ID, args.name, text)]
    context = Context(run_id="tinytools-cli")
    try:
        result = dispatch_sync(calls, registry, context=context)
        if args.approve and result.deferred is not None and result.deferred.approvals:
            approvals = result.deferred.approve_all()
            result = dispatch_sync(calls, registry, context=context, approvals=approvals)
    except DispatchAborted as aborted:
        result = aborted.result
        aborted_text = printable(str(aborted), lines=True)
        sys.stderr.write(f"tinytools: the tool aborted the batch: {aborted_text}\n")
    except TinytoolsError as error:
        sys.stderr.write(
            f"tinytools: error: {printable(str(error), lines=True)}\n(the command line passes only "
            "Context(run_id='tinytools-cli'): a tool that needs state or values runs from "
            "Python with a Context that has them)\n"
        )
        return 1
    message = result.messages[0] if result.messages else None
    deferred = result.deferred
    awaiting = deferred is not None and bool(deferred.approvals)
    if args.json:
        document = {
            "message": msgspec.to_builtins(message),
            "events": msgspec.to_builtins(result.events),
            "deferred": None if deferred is None else msgspec.to_builtins(deferred.all),
            "awaiting_approval": awaiting,
            "executed": list(result.executed),
        }
        out.write(printable_json(document, indent=2) + "\n")
    else:
        _write_text(out, message, result.events, deferred is not None, awaiting)
    if message is None:
        return 1 if awaiting else 0
    return 0 if message.status == "ok" else 1


def _write_text(
    out: TextIO, message: object, events: tuple[object, ...], deferred: bool, awaiting: bool
) -> None:
    import msgspec

    paint = Paint(use_colour(out))
    if message is not None:
        fields = msgspec.to_builtins(message)
        status = str(fields["status"])
        colour = "green" if status == "ok" else "red"
        out.write(f"{paint('Message', 'bold')} ({paint(status, colour)}):\n")
        content = printable(str(fields["content"]), lines=True)
        out.writelines(f"{_INDENT}{line}\n" for line in content.splitlines())
    elif awaiting:
        out.write(
            f"{paint('Awaiting approval', 'yellow')}: nothing ran; "
            "pass --approve to approve the call and run it.\n"
        )
    elif deferred:
        out.write(f"{paint('Deferred', 'yellow')}: the host executes this tool.\n")
    out.write(f"{paint('Events', 'bold')}:\n")
    for event in events:
        fields = msgspec.to_builtins(event)
        assert isinstance(fields, dict)
        kind = fields.pop("kind")
        fields.pop("call_id", None)
        long = {k: v for k, v in fields.items() if isinstance(v, str) and "\n" in v}
        short = {k: v for k, v in fields.items() if k not in long}
        detail = printable(json.dumps(short, ensure_ascii=False)) if short else ""
        out.write(f"{_INDENT}{paint(kind, 'cyan')} {detail}".rstrip() + "\n")
        for key, value in long.items():
            out.write(f"{_INDENT}{_INDENT}{key}:\n")
            lines = printable(value, lines=True).splitlines()
            out.writelines(f"{_INDENT}{_INDENT}{_INDENT}{line}\n" for line in lines)
