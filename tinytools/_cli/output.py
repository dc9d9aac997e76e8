"""What the command line's verbs share: colour and progress on a terminal only, loading targets.

Colour follows the common conventions: ``NO_COLOR`` (any value) turns it off,
``FORCE_COLOR`` (any value) turns it on, ``TERM=dumb`` turns it off, and
otherwise a stream gets colour only when it is a terminal. Progress goes to
standard error, and only when that is a terminal, so piped and CI output stays
plain and stable.

Text that comes from a tool or a model (a result, a stored call id, a
description, a parameter name) is printed through :func:`printable`, one rule for
every command: the characters that could move the cursor, retitle the terminal,
reorder or hide text, or start a line are written as escapes (``\x1b``, ``\u202e``),
so tool output cannot restyle the terminal, show text other than it holds, or forge a
line of a listing. They are the C0 controls but tab, DEL, the C1 controls, and the
Unicode categories Cf (format characters: the bidi embeddings, overrides and
isolates U+202A-U+202E and U+2066-U+2069, the zero-width U+200B-U+200F, U+2060 and
U+FEFF, tag characters), Zl and Zp (U+2028, U+2029); a field's line break too, while
a block printed as lines (a tool's result, a catalogue) keeps its own. Cf holds the
zero-width joiners some scripts and emoji sequences use: they are shown as escapes
too. A JSON document is written by :func:`printable_json`, which escapes the same
characters in JSON's own notation.
What the output's encoding cannot hold (a lone surrogate, which a stored call id
may have) is written as a backslash escape too (:func:`tolerant`), so no text cuts
a verb's output short.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import unicodedata
from collections.abc import Callable
from typing import TextIO

from .target import Loaded, TargetError, load

__all__ = [
    "Paint",
    "Progress",
    "add_target",
    "example_epilog",
    "load_or_exit",
    "paragraph",
    "printable",
    "printable_json",
    "tolerant",
    "use_colour",
]

#: C0 controls but tab, DEL and the C1 controls (terminal escape introducers).
_CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
#: Unicode categories never printed raw: format characters, line and paragraph separators.
_INVISIBLE = frozenset({"Cf", "Zl", "Zp"})


def _unprintable(text: str, lines: bool) -> set[str]:
    """The characters of ``text`` the module docstring's rule escapes (each once)."""
    # (each distinct character looked at once: a long text is read in C)
    found = {
        c
        for c in set(text)
        if _CONTROLS.match(c) or (c > "\x9f" and unicodedata.category(c) in _INVISIBLE)
    }
    if lines:
        found.discard("\n")
    return found


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` with every character the module docstring names written as an escape
    (``\\x1b``, ``\\u202e``, ``\\U000e0041``), a line break included unless ``lines`` (a
    block printed as lines)."""
    found = _unprintable(text, lines)
    if not found:
        return text
    return text.translate({ord(c): _escape(c) for c in found})


def _escape(char: str) -> str:
    code = ord(char)
    if char == "\n":
        return "\\n"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def tolerant(stream: TextIO) -> TextIO:
    """``stream``, set to write what its encoding cannot hold as backslash escapes
    (``\\ud800``, valid in JSON text too) instead of raising ``UnicodeEncodeError``."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None and getattr(stream, "errors", None) in ("strict", "surrogateescape"):
        reconfigure(errors="backslashreplace")
    return stream


def printable_json(
    value: object, *, indent: int | None = None, default: Callable[[object], object] | None = None
) -> str:
    """``value`` as JSON text (non-ASCII kept) with no character :func:`printable`
    escapes left raw.

    ``json.dumps`` escapes the C0 controls but leaves DEL, the C1 controls (``\\x9b``
    opens an escape sequence as ``ESC [`` does) and the format characters and separators
    raw in strings: they are written as ``\\u009b``, ``\\u202e`` (a character past the
    BMP as its surrogate pair), which decode to the same value. A raw newline left in the
    text is indentation, never part of a string.
    """
    text = json.dumps(value, indent=indent, ensure_ascii=False, default=default)
    found = _unprintable(text, lines=True)
    if not found:
        return text
    return text.translate({ord(c): json.dumps(c)[1:-1] for c in found})


_STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def use_colour(stream: TextIO) -> bool:
    """Whether to colour what goes to ``stream``."""
    if "NO_COLOR" in os.environ:
        return False
    if "FORCE_COLOR" in os.environ:
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Paint:
    """Wraps text in ANSI styles when enabled, returns it unchanged when not."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles:
            return text
        codes = ";".join(_STYLES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


class Progress:
    """A one-line ``[3/20] label`` counter on standard error, only on a terminal."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total = total
        self.enabled = total > 1 and use_colour(self.stream)
        self._width = 0

    def step(self, done: int, label: str) -> None:
        if self.enabled:
            text = f"[{done}/{self.total}] {label}"[:78]
            self.stream.write("\r" + text.ljust(self._width))
            self.stream.flush()
            self._width = len(text)

    def close(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()


def add_target(parser: argparse.ArgumentParser, *, many: bool = False) -> None:
    """The ``TARGET`` positional argument, described the same way by every verb."""
    parser.add_argument(
        "target",
        metavar="TARGET",
        nargs="+" if many else None,
        help=(
            "where the tools are: a module (`pkg.tools`, scanned for tools, registries and "
            "toolsets), `module:attribute`, a .py file (`tools.py`, `tools.py:registry`) "
            "or a folder (every .py file under it)"
        ),
    )


def paragraph(text: str) -> str:
    """``text`` wrapped for ``--help`` (the verbs' raw formatter keeps the examples' lines)."""
    import textwrap

    return textwrap.fill(text, width=78)


def example_epilog(*lines: str) -> str:
    """An ``examples:`` block for a verb's ``--help``."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines)


def load_or_exit(target: str, err: TextIO | None = None) -> Loaded | int:
    """The loaded target, or exit status 2 after saying on stderr why it cannot be used."""
    err = err if err is not None else sys.stderr
    try:
        loaded = load(target)
    except TargetError as error:  # may quote what the target's code raised
        err.write(f"tinytools: error: {printable(str(error), lines=True)}\n")
        return 2
    if not loaded.found and not loaded.broken:
        err.write(
            f"tinytools: error: no tools found in {target}: it defines no Tool, Registry, "
            "toolset or list of Tools at module level\n"
        )
        return 2
    return loaded
