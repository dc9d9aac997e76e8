"""What the reference pages render: their ``::: identifier`` lines (mkdocstrings).

Read by the reference's Griffe extension (``griffe_public.py``), to link only to what is
rendered, and by ``tests/test_docs.py``, to check that every public name is.
"""

from __future__ import annotations

import re
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[1] / "reference"

#: ``::: identifier`` and its indented options.
_ENTRY = re.compile(r"^:::[ \t]+(\S+)[ \t]*\n((?:[ \t]+\S.*\n)*)", re.MULTILINE)
_NO_MEMBERS = re.compile(r"^\s*members:\s*false\s*$", re.MULTILINE)


def entries(folder: Path = REFERENCE) -> dict[str, bool]:
    """The identifiers the reference pages render, in page order, each with whether its
    members are rendered too (they are not under ``members: false``: a module's
    docstring as a page's introduction)."""
    found: dict[str, bool] = {}
    for page in sorted(folder.rglob("*.md")):
        for identifier, options in _ENTRY.findall(page.read_text(encoding="utf-8") + "\n"):
            found[identifier] = found.get(identifier, False) or not _NO_MEMBERS.search(options)
    return found
