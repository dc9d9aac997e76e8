"""The docs' diagrams: Mermaid sources (``docs/**/*.mmd``) drawn as SVG files beside them.

The site shows its diagrams with no network: Material's Mermaid support loads Mermaid
from a CDN, and showed the source as text offline. So each ``.mmd`` is drawn here, once,
into the ``.svg`` beside it, which is committed and which the page shows as an image.
Each SVG records the SHA-256 of the source it was drawn from; ``tests/test_docs.py``
checks that every SVG is current.

After editing a ``.mmd``, run ``nox -s diagrams`` (or ``python docs/_tooling/diagrams.py``).
It needs npm, to fetch Mermaid from the npm registry, and Debian's Chromium
(``apt-get install chromium``, or ``$CHROMIUM``), which draws it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

__all__ = ["MERMAID", "stale", "stamp"]

DOCS = Path(__file__).resolve().parents[1]
#: The Mermaid release that draws the diagrams (the major version Material loads).
MERMAID = "mermaid@11.17.2"
#: How every diagram is drawn: plain SVG text (no HTML in ``foreignObject``), so the file
#: shows the same as an image, without the page's styles.
_CONFIG = {
    "startOnLoad": False,
    "securityLevel": "strict",
    "theme": "default",
    "flowchart": {"htmlLabels": False},
}


def stamp(source: str) -> str:
    """The first line of a diagram's SVG: which source it was drawn from."""
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    return f"<!-- Drawn by docs/_tooling/diagrams.py ({MERMAID}) from sha256:{digest} -->"


def stale(docs: Path = DOCS) -> list[Path]:
    """The sources whose SVG is missing or was drawn from another source."""
    return [
        source
        for source in sorted(docs.rglob("*.mmd"))
        if not (svg := source.with_suffix(".svg")).is_file()
        or svg.read_text(encoding="utf-8").split("\n", 1)[0]
        != stamp(source.read_text(encoding="utf-8"))
    ]


def draw(sources: list[Path], executable: str) -> None:
    """Draw each source into the SVG beside it."""
    from browser import Browser  # (only drawing needs the browser; the tests read stamps)

    with tempfile.TemporaryDirectory(prefix="tinytools-mermaid-") as folder:
        work = Path(folder)
        subprocess.run(
            ["npm", "pack", MERMAID, "--silent", "--pack-destination", folder],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        with tarfile.open(next(work.glob("mermaid-*.tgz"))) as archive:
            script = archive.extractfile("package/dist/mermaid.min.js")
            assert script is not None
            (work / "mermaid.min.js").write_bytes(script.read())
        page = work / "draw.html"
        page.write_text('<!doctype html><script src="mermaid.min.js"></script><body></body>')
        with Browser(executable) as browser:
            browser.open(page.as_uri())
            browser.evaluate(f"mermaid.initialize({json.dumps(_CONFIG)})")
            for source in sources:
                text = source.read_text(encoding="utf-8")
                # Serialised as XML, with the drawing's own size (Mermaid's is 100%
                # wide), so the file stands alone as an image.
                svg = browser.evaluate(
                    f"mermaid.render('diagram', {json.dumps(text)}).then(({{svg}}) => {{"
                    " document.body.innerHTML = svg;"
                    " const drawn = document.body.firstElementChild;"
                    " const [, , width, height] = drawn.getAttribute('viewBox').split(' ');"
                    " drawn.setAttribute('width', width); drawn.setAttribute('height', height);"
                    " drawn.style.removeProperty('max-width');"
                    " return new XMLSerializer().serializeToString(drawn); })"
                )
                source.with_suffix(".svg").write_text(
                    f"{stamp(text)}\n{svg}\n", encoding="utf-8", newline="\n"
                )
                print(f"drew {source.relative_to(DOCS.parent)}")


def main() -> int:
    from browser import chromium, missing

    executable = chromium()
    if executable is None:
        print(f"error: cannot draw the diagrams: {missing()}", file=sys.stderr)
        return 1
    draw(sorted(DOCS.rglob("*.mmd")), executable)
    return 0


if __name__ == "__main__":
    sys.exit(main())
