"""Check the built site in a headless Chromium with the network off, as a reader sees it.

    python docs/_tooling/check_site.py SITE [--screenshot PNG]

Serves the built folder ``SITE`` on 127.0.0.1 and opens every page in Debian's Chromium,
which can reach nothing but that server (``browser.py``), in a 1280 by 900 window. A
page passes when

- each SVG image it shows loaded, with a size, and no Mermaid source is left as text
  (the pipeline page must have a diagram);
- no line of a code block is cut: every block fits its width;
- no docstring markup is left as text (a Sphinx role such as ``:class:``) and no class
  shows a private base.

``--screenshot`` saves the pipeline page's diagram as a PNG. Without Chromium the check
is skipped and says so, except under CI (``CI=true``), where that fails. The ``docs``
nox session runs it after building the site.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import sys
import threading
from pathlib import Path
from typing import Any

from browser import Browser, chromium, missing

#: The page whose diagram must show (the site's diagram drawn from Mermaid).
PIPELINE = "concepts/pipeline/"
#: What a page shows: its SVG images, Mermaid sources shown as text, and the code blocks
#: wider than their box (the start of each).
_SHOWN = r"""(() => {
  const article = document.querySelector("article");
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
    // Docstring markup for Sphinx, shown as text (`:class:`), and private base classes.
    roles: article.innerText.match(/:(class|func|meth|attr|data|mod|exc|obj):`?\w/g) || [],
    bases: [...document.querySelectorAll(".doc-class-bases code")]
      .map(base => base.textContent).filter(name => /(^|\.)_\w/.test(name)),
    cut: [...document.querySelectorAll("article pre > code")]
      .filter(code => code.scrollWidth > code.clientWidth)
      .map(code => code.textContent.split("\n").find(
        line => line.length === Math.max(...code.textContent.split("\n").map(l => l.length))
      ).slice(0, 60)),
  };
})()"""
_PICTURE = "document.querySelector('article img')"
#: Whether the browser reaches the network (where Material would load Mermaid from).
_ONLINE = (
    "fetch('https://unpkg.com/mermaid@11/dist/mermaid.min.js', {mode: 'no-cors'})"
    ".then(() => true, () => false)"
)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def check(site: Path, executable: str, screenshot: Path | None) -> list[str]:
    """What a reader of the site would find wrong offline (nothing, when all is well)."""
    pages = [page.parent.relative_to(site).as_posix() + "/" for page in site.rglob("index.html")]
    problems: list[str] = []
    handler = functools.partial(_Quiet, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        root = f"http://127.0.0.1:{server.server_address[1]}/"
        try:
            with Browser(executable, width=1280, height=900) as browser:
                browser.open(root)
                if browser.evaluate(_ONLINE):
                    return ["the browser reached the network: the check would prove nothing"]
                for page in sorted(pages, key=lambda page: (page != PIPELINE, page)):
                    browser.open(root + page.removeprefix("./"))
                    problems += _problems(page, browser.evaluate(_SHOWN))
                    if page == PIPELINE and screenshot is not None:
                        browser.evaluate(f"{_PICTURE}.scrollIntoView({{block: 'center'}})")
                        browser.screenshot(screenshot)
        finally:
            server.shutdown()
    print(f"checked {len(pages)} pages")
    return problems


def _problems(page: str, shown: Any) -> list[str]:
    """What is wrong with what ``page`` shows (``_SHOWN``)."""
    problems = []
    for image in shown["images"]:
        print(f"{page}: {image['src']} {image['natural']}, shown {image['shown']}px")
        if not image["loaded"] or not image["shown"]:
            problems.append(f"{page}: {image['src']} did not load as an image")
    if shown["mermaid"]:
        problems.append(f"{page}: {shown['mermaid']} Mermaid source(s) shown as text")
    if page == PIPELINE and not shown["images"]:
        problems.append(f"{page}: no diagram shown")
    if shown["roles"]:
        problems.append(f"{page}: {len(shown['roles'])} Sphinx role(s) shown as text")
    problems += [f"{page}: a private base class is shown: {base}" for base in shown["bases"]]
    return problems + [
        f"{page}: a code block is cut on the page: {line}..." for line in shown["cut"]
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="the built site's folder (mkdocs build)")
    parser.add_argument("--screenshot", type=Path, help="save the pipeline diagram as a PNG")
    args = parser.parse_args(argv)
    executable = chromium()
    if executable is None:
        reason = missing()
        if os.environ.get("CI") == "true":
            print(f"error: cannot check the site offline: {reason}", file=sys.stderr)
            return 1
        print(f"SKIPPED the offline check of the site in a browser: {reason}")
        return 0
    problems = check(args.site, executable, args.screenshot)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        print(
            "Draw each diagram from its .mmd source with `nox -s diagrams` and show the .svg"
            " as an image; wrap code lines to 80 characters (what a code block shows); load"
            " the reference's docstrings through docs/_tooling/griffe_public.py (mkdocs.yml).",
            file=sys.stderr,
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
