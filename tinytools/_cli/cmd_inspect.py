"""``tinytools inspect TARGET``: what a provider or a text dialect receives, with its size.

Provider formats print each tool's declaration as ``declarations()`` builds it
(pretty-printed for reading) with the byte size of its compact JSON, which is
what goes over the wire; text dialects print the system-prompt catalogue that
``render()`` builds, and each tool's share. The total is the manifest a request
carries on every turn.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TextIO

from tinytools._declare.registry import AnyTool

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

__all__ = ["FORMATS", "add_parser", "run"]

#: Provider modules (JSON declarations) and text dialects (a prompt catalogue).
PROVIDERS = ("openai_chat", "openai_responses", "anthropic", "gemini", "mcp")
DIALECTS = ("json_in_tag", "xml", "ptype")
FORMATS = PROVIDERS + DIALECTS


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``inspect`` on the ``tinytools`` parser."""
    parser = commands.add_parser(
        "inspect",
        help="print the declarations a provider or text dialect receives, with byte sizes",
        description=paragraph(
            "Print what a model is told about the tools of TARGET in one format: a "
            "provider's JSON declarations (one per tool, with the byte size of its compact "
            "JSON) or a text dialect's system-prompt catalogue, then the total size."
        ),
        epilog=example_epilog(
            "tinytools inspect examples/weather.py",
            "tinytools inspect myproject.tools:registry --format anthropic",
            "tinytools inspect myproject.tools --format gemini --json",
            "tinytools inspect myproject.tools --format openai_chat --strict",
            "tinytools inspect myproject.tools --format json_in_tag   # prompt-guided models",
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_target(parser)
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="openai_chat",
        metavar="F",
        help=f"one of {', '.join(FORMATS)} (default: openai_chat)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="OpenAI formats: declare tools in strict mode"
    )
    parser.add_argument("--json", action="store_true", help="one JSON document, for machines")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Print the declarations; exit 0, or 2 when the target cannot be used."""
    loaded = load_or_exit(args.target)
    if isinstance(loaded, int):
        return loaded
    for broken in loaded.broken:  # a folder's files that raised (a lone target that raises exits 2)
        where = f"{broken.path}:{broken.line}: {broken.message}"  # quotes what the file raised
        sys.stderr.write(f"tinytools: skipped {printable(where)}\n")
    tools = _unique(item.tool for item in loaded.found)
    if args.format in PROVIDERS:
        _providers(args, tools, out)
    else:
        _dialect(args, tools, out)
    return 0


def _unique(tools: Iterable[AnyTool]) -> list[AnyTool]:
    """The tools, each name once (the first wins, as ``check`` reports the others)."""
    seen: dict[str, AnyTool] = {}
    for tool in tools:
        seen.setdefault(tool.name, tool)
    return list(seen.values())


def _size(value: object) -> int:
    import msgspec

    return len(msgspec.json.encode(value))


def _providers(args: argparse.Namespace, tools: list[AnyTool], out: TextIO) -> None:
    import importlib

    module = importlib.import_module(f"tinytools.formats.{args.format}")
    build: Callable[..., list[dict[str, object]]] = module.declarations
    strict = {"strict": True} if args.strict and args.format.startswith("openai") else {}
    declarations = build(tools, **strict)
    total = _size(declarations)
    # Gemini wraps every declaration in one Tool: list the declarations themselves.
    items: Sequence[Mapping[str, object]] = declarations
    if args.format == "gemini" and declarations:
        inner = declarations[0]["functionDeclarations"]
        assert isinstance(inner, list)
        items = inner
    if args.json:
        document = {
            "format": args.format,
            "total_bytes": total,
            "tools": [{"name": _name(d), "bytes": _size(d)} for d in items],
            "declarations": declarations,
        }
        out.write(printable_json(document, indent=2) + "\n")
        return
    paint = Paint(use_colour(out))
    for item in items:
        out.write(paint(printable(f"{_name(item)}  ({_size(item)} bytes)"), "bold") + "\n")
        out.write(printable_json(item, indent=2) + "\n\n")
    out.write(_total_line(args.format, len(items), total))


def _dialect(args: argparse.Namespace, tools: list[AnyTool], out: TextIO) -> None:
    import importlib

    module = importlib.import_module(f"tinytools.formats.{args.format}")
    render: Callable[[list[AnyTool]], str] = module.render
    text = render(tools)
    total = len(text.encode())
    shares = [{"name": t.name, "bytes": len(render([t]).encode())} for t in tools]
    if args.json:
        document = {"format": args.format, "total_bytes": total, "tools": shares, "text": text}
        out.write(printable_json(document, indent=2) + "\n")
        return
    # Descriptions and parameter names are the tools' own text: the catalogue is what a
    # model reads, printed here with its control characters escaped for the terminal.
    out.write(printable(text.rstrip("\n"), lines=True) + "\n\n")
    for share in shares:
        out.write(printable(f"{share['name']}  ({share['bytes']} bytes alone)") + "\n")
    out.write(_total_line(args.format, len(shares), total))


def _total_line(fmt: str, count: int, total: int) -> str:
    return f"{count} tool{'s' * (count != 1)} in {fmt}: {total} bytes in total.\n"


def _name(declaration: Mapping[str, object]) -> str:
    function = declaration.get("function")
    source = function if isinstance(function, Mapping) else declaration
    return str(source.get("name", "?"))
