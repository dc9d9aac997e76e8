"""Check the built site in a headless Chromium with the network off: its diagrams show.

    python docs/_tooling/check_site.py SITE [--screenshot PNG]

Serves the built folder ``SITE`` on 127.0.0.1 and opens every page that has a diagram
(an SVG image, or a Mermaid block left for a script) in Debian's Chromium, which can
reach nothing but that server (``browser.py``). A page passes when each of its SVG
images loaded with a size and no Mermaid source is left as text; the pipeline page must
be among them. ``--screenshot`` saves the pipeline page's diagram as a PNG.

Without Chromium the check is skipped and says so, except under CI (``CI=true``), where
that fails. The ``docs`` nox session runs it after building the site.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import re
import sys
import threading
from pathlib import Path

from browser import Browser, chromium

#: The page whose diagram must show (the site's one diagram drawn from Mermaid).
PIPELINE = "concepts/pipeline/"
_DIAGRAM = re.compile(r'<img[^>]+src="[^"]+\.svg"|class="mermaid"')
#: What the page shows: its SVG images, and Mermaid sources shown as text.
_SHOWN = r"""(() => {
  const svg = [...document.querySelectorAll("article img")]
    .filter(image => new URL(image.src).pathname.endsWith(".svg"));
  return {
    images: svg.map(image => ({
      src: new URL(image.src).pathname, loaded: image.complete && image.naturalWidth > 0,
      natural: [image.naturalWidth, image.naturalHeight],
      shown: Math.round(image.getBoundingClientRect().width),
    })),
    // Mermaid source no script drew: shown as text (Material takes the class off).
    mermaid: [...document.querySelectorAll("article pre")].filter(block =>
      /^\s*(flowchart|graph|sequenceDiagram|classDiagram|stateDiagram|erDiagram)\b/
        .test(block.textContent)
    ).length,
  };
})()"""
#: Whether the browser reaches the network (where Material would load Mermaid from).
_ONLINE = (
    "fetch('https://unpkg.com/mermaid@11/dist/mermaid.min.js', {mode: 'no-cors'})"
    ".then(() => true, () => false)"
)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def pages_with_diagrams(site: Path) -> list[str]:
    """The site's pages (as paths from its root) that show a diagram."""
    return [
        page.parent.relative_to(site).as_posix() + "/"
        for page in sorted(site.rglob("index.html"))
        if _DIAGRAM.search(page.read_text(encoding="utf-8"))
    ]


def check(site: Path, executable: str, screenshot: Path | None) -> list[str]:
    """What is wrong with the site's diagrams offline (nothing, when they all show)."""
    pages = pages_with_diagrams(site)
    problems = [] if PIPELINE in pages else [f"{PIPELINE}: no diagram found in the page"]
    handler = functools.partial(_Quiet, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        root = f"http://127.0.0.1:{server.server_address[1]}/"
        with Browser(executable) as browser:
            browser.open(root)
            if browser.evaluate(_ONLINE):
                return ["the browser reached the network: the check would prove nothing"]
            for page in pages:
                browser.open(root + page)
                shown = browser.evaluate(_SHOWN)
                problems += [
                    f"{page}: {image['src']} did not load as an image"
                    for image in shown["images"]
                    if not image["loaded"] or not image["shown"]
                ]
                if shown["mermaid"]:
                    problems.append(f"{page}: {shown['mermaid']} Mermaid block(s) shown as text")
                if not shown["images"] and not shown["mermaid"]:
                    problems.append(f"{page}: no diagram shown")
                for image in shown["images"]:
                    print(f"{page}: {image['src']} {image['natural']}, shown {image['shown']}px")
                if page == PIPELINE and screenshot is not None:
                    browser.evaluate(
                        "document.querySelector('article img').scrollIntoView({block: 'center'})"
                    )
                    browser.screenshot(screenshot)
        server.shutdown()
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="the built site's folder (mkdocs build)")
    parser.add_argument("--screenshot", type=Path, help="save the pipeline diagram as a PNG")
    args = parser.parse_args(argv)
    executable = chromium()
    if executable is None:
        reason = "no Chromium (apt-get install chromium, or set CHROMIUM)"
        if os.environ.get("CI") == "true":
            print(f"error: cannot check the site offline: {reason}", file=sys.stderr)
            return 1
        print(f"SKIPPED the offline check of the site's diagrams: {reason}")
        return 0
    problems = check(args.site, executable, args.screenshot)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        print(
            "The site must show its diagrams with no network: draw each from its .mmd"
            " source with `nox -s diagrams` and show the .svg as an image.",
            file=sys.stderr,
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
