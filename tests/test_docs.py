"""Every code block of the documentation (docs/**/*.md) runs, page by page, with Sybil.

Each page is one test: its blocks run in order in one namespace, as a reader
following the page would run them. A block that needs what a test run has not
(an API key, a real model) is marked in the page itself with
``<!-- skip: next "the reason" -->`` before its fence, and Sybil skips it; the page's
other blocks still run. Pages whose client comes from such a skipped block get a
scripted one instead (:data:`CLIENTS`): the provider's real SDK over a mock
transport (tests/docs_fakes.py), so the page's code runs unchanged.

``console`` blocks are command-line sessions: each ``$ tinytools ...`` line runs
the entry point's ``main`` (in this process: tests/cli_run.py) from the repository's
root, and the lines after it, when there are any, must be exactly its output; a
command shown without output must succeed. ``sh`` blocks (installing, exporting a key) and
``yaml`` blocks are shown, not run.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import runpy
import shlex
import sys
import types
import unittest
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_run import run_cli
from docs_fakes import anthropic_client, observability_modules, openai_client
from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

import tinytools
import tinytools.events

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def run_console(example: Example) -> None:
    """Run each ``$ tinytools ...`` command of a ``console`` block and compare its output."""
    command: list[str] | None = None
    expected: list[str] = []
    for line in [*str(example.parsed).splitlines(), "$"]:
        if not line.startswith("$"):
            expected.append(line)
            continue
        if command is not None:
            done = run_cli(*command[1:])
            if expected:
                assert "\n".join(expected) + "\n" == done.stdout, f"$ {shlex.join(command)}"
            else:
                assert 0 == done.returncode, f"$ {shlex.join(command)}: {done.stderr}"
        command, expected = (shlex.split(line[1:]) or None), []
        assert command is None or command[0] == "tinytools", line


_SYBIL = Sybil(
    parsers=[
        PythonCodeBlockParser(),
        CodeBlockParser(language="console", evaluator=run_console),
        SkipParser(),
    ]
)
#: The pages with blocks to run (the others are prose, diagrams and install commands).
PAGES = [page for page in sorted(DOCS.rglob("*.md")) if list(_SYBIL.parse(page))]

#: The ``client`` each page's skipped "make a client" block would have made.
CLIENTS: dict[str, Callable[[], object]] = {
    "tutorial.md": openai_client,
    "how-to/openai.md": openai_client,
    "how-to/anthropic.md": anthropic_client,
}

#: Modules a page imports that the tests do not install, by page: stand-ins put in
#: ``sys.modules`` while the page runs (docs_fakes), so the page's code runs unchanged.
MODULES: dict[str, Callable[[], dict[str, object]]] = {
    "how-to/observability.md": observability_modules,
}


def _page_id(page: Path) -> str:
    return page.relative_to(DOCS).as_posix()


def test_docs_have_python_blocks():
    """The docs show Python, so the page tests are not silently empty."""
    assert sum(len(list(_SYBIL.parse(page))) for page in PAGES) > 20


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_page(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Every block of the page runs (skipped ones say why in the page)."""
    monkeypatch.chdir(tmp_path)  # blocks that write files write them here
    document = _SYBIL.parse(page)
    name = _page_id(page)
    if name in CLIENTS:
        document.namespace["client"] = CLIENTS[name]()
    for module_name, module in MODULES.get(name, dict)().items():
        monkeypatch.setitem(sys.modules, module_name, module)
    for example in document:
        try:
            example.evaluate()
        except unittest.SkipTest:
            continue  # the page says why, in its skip comment
        except Exception as error:
            raise AssertionError(f"{name}, line {example.line}: {error!r}") from error


#: A Markdown file named by its path from the repository's root: ``docs/concepts/invariants.md``,
#: ``CHANGELOG.md``.
_CITED = re.compile(r"\b(?:docs/[\w./-]+|[A-Z][A-Z_]*)\.md\b")
#: Names the text uses that are no file of the repository (a placeholder in a command line).
_PLACEHOLDERS = {"OUT.md"}


def test_cited_files_exist():
    """Every Markdown file the code, tests, docs, benchmarks and examples cite by path is in
    the repository: a reader is never sent to a file it does not hold (the code cited a
    design file the repository does not ship)."""
    texts = [ROOT / "README.md", ROOT / "CHANGELOG.md"]
    for folder in ("tinytools", "tests", "docs", "benchmarks", "examples"):
        texts += [f for f in (ROOT / folder).rglob("*") if f.suffix in {".py", ".pyi", ".md"}]
    missing = {
        f"{text.relative_to(ROOT)}: {cited}"
        for text in texts
        for cited in _CITED.findall(text.read_text(encoding="utf-8"))
        if cited not in _PLACEHOLDERS and not (ROOT / cited).is_file()
    }
    assert set() == missing


def test_pipeline_draws_admission_in_the_order_it_runs():
    """The pipeline page's diagram puts ``before_tool`` hooks before name resolution and
    validation, and the approval gate after validation, as admission runs them (it drew
    the hooks after validation). The page's example shows a hook fixing a name."""
    page = (DOCS / "concepts" / "pipeline.mmd").read_text(encoding="utf-8")
    admit = page[page.index('subgraph admit["admit') :]
    admit = admit[: admit.index("\n    end\n")]

    def at(step: str) -> int:
        return admit.index(step)

    assert at("before_tool") < at("allow-list") < at("decode") < at("validate")
    assert at("validate") < at("approval gate")


def _reference_entries() -> dict[str, bool]:
    """The reference pages' ``::: identifier`` entries (docs/_tooling/reference_entries.py,
    which the reference's Griffe extension reads too)."""
    found: dict[str, bool] = runpy.run_path(str(DOCS / "_tooling" / "reference_entries.py"))[
        "entries"
    ]()
    return found


def _named(path: str) -> object:
    """The object a dotted path names: a module, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            value = getattr(value, part)
        return value
    raise ImportError(path)


def _key(path: str, value: object) -> object:
    """What makes two public names one entry: the same class, function or module is
    documented once under whichever name; any other value (a constant, a type alias)
    under its own name."""
    if isinstance(value, (type, types.ModuleType, types.FunctionType)):
        return id(value)
    return path


def test_reference_documents_every_public_name():
    """Every name a public module exports (its ``__all__``) has an entry in the reference,
    in an order the pages choose: no page renders the package as one dump. (The reference
    was one ``::: tinytools`` page, opening with the private module map, with ``Inject``,
    ``State``, ``Store``, ``CallId``, ``EventHandler``, ``ContentBlock`` and ``AnyTool``
    missing.)"""
    shown = _reference_entries()
    assert "tinytools" not in shown, "the package is documented name by name, in pages"
    covered: set[object] = set()
    for path, members in shown.items():
        value = _named(path)
        covered.add(_key(path, value))
        if members and isinstance(value, types.ModuleType):
            for name in getattr(value, "__all__", ()):
                covered.add(_key(f"{path}.{name}", getattr(value, name)))
    public = [
        module.name
        for module in pkgutil.walk_packages(tinytools.__path__, "tinytools.")
        if not any(part.startswith("_") for part in module.name.split("."))
    ]
    missing = []
    for module_name in ["tinytools", *public]:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            if _key(f"{module_name}.{name}", getattr(module, name)) not in covered:
                missing.append(f"{module_name}.{name}")
    assert [] == missing


#: The Structs a host reads and writes: every event, and the calls, results and messages.
_WIRE = [
    *(getattr(tinytools.events, name) for name in tinytools.events.__all__ if name != "Event"),
    tinytools.ToolCall,
    tinytools.ToolResult,
    tinytools.TextBlock,
    tinytools.JsonBlock,
    tinytools.ImageBlock,
    tinytools.FileBlock,
    tinytools.Artifact,
    tinytools.ToolMessage,
]


@pytest.mark.parametrize("struct", _WIRE, ids=lambda struct: struct.__name__)
def test_wire_structs_describe_every_field(struct: type):
    """Every field of an event or wire Struct is described in its docstring's
    ``Attributes:`` section, which the reference shows as a table of names, types and
    meanings (the events page showed ``Bases: _Event`` and no field at all)."""
    doc = inspect.getdoc(struct) or ""
    assert "\nAttributes:\n" in doc, struct.__name__
    section = doc.split("\nAttributes:\n", 1)[1]
    described = set(re.findall(r"^    (\w+):", section, re.MULTILINE))
    assert set() == set(struct.__struct_fields__) - described


def test_tutorial_teaches_injection():
    """The tutorial's code injects a value from ``Context(values=...)``, the state, the store,
    the call id and ``Emit`` (test_page runs it): no tutorial or how-to showed ``Inject[...]``
    with ``Context(values=...)``."""
    code = "\n".join(str(example.parsed) for example in _SYBIL.parse(DOCS / "tutorial.md"))
    for taught in ("Inject[", "Context(", "values=", "State[", "Store[", "CallId]", "Emit]"):
        assert taught in code


def test_diagrams_are_drawn_from_their_sources():
    """The site shows its diagrams with no network: each is an SVG drawn from the Mermaid
    source beside it, as that source is now (``nox -s diagrams`` redraws them), and no
    page holds a Mermaid fence (Material loaded Mermaid from a CDN: offline, the pipeline
    page showed the diagram's source as text)."""
    diagrams = runpy.run_path(str(DOCS / "_tooling" / "diagrams.py"))
    assert [DOCS / "concepts" / "pipeline.mmd"] == sorted(DOCS.rglob("*.mmd"))
    assert [] == diagrams["stale"]()
    fenced = [page for page in DOCS.rglob("*.md") if "```mermaid" in page.read_text("utf-8")]
    assert [] == fenced


def test_site_names_a_repository_only_with_its_address():
    """The site's header names a repository only with the address it links to (it showed
    ``repo_name`` without ``repo_url``: a name that linked nowhere)."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    keys = set(re.findall(r"^(\w+):", config, re.MULTILINE))
    assert "repo_name" not in keys or "repo_url" in keys


#: The widest code line a page shows whole: a code block holds 80 characters in the
#: site's layout at 1280 to 1920 pixels wide (docs/_tooling/check_site.py checks the built
#: site in a browser).
CODE_WIDTH = 80
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w-]*)")


def _code_lines(page: Path) -> list[tuple[int, str, str]]:
    """Each line of the page's fenced code blocks: its number, the block's language, and
    the line."""
    lines, fence, language = [], "", ""
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        opening = _FENCE.match(line)
        if not fence and opening:
            fence, language = opening.group(2), opening.group(3)
        elif fence and line.strip() == fence:
            fence = ""
        elif fence:
            lines.append((number, language, line))
    return lines


def test_code_lines_fit_the_page():
    """No line of a code block is wider than a page shows, so none is cut (115 were, 19
    of them in the toolsets how-to). A command-line session is the exception: its output
    is compared exactly with the command's, and wraps on the page instead
    (docs/stylesheets/extra.css)."""
    wide = [
        f"{page.relative_to(DOCS)}:{number}: {len(line)} characters"
        for page in sorted(DOCS.rglob("*.md"))
        for number, language, line in _code_lines(page)
        if len(line) > CODE_WIDTH and language != "console"
    ]
    assert [] == wide


def test_strict_builds_are_not_quiet():
    """Every ``mkdocs build --strict`` the project runs (CI's, the docs session's) shows
    its warnings: ``--quiet`` hides them from the count ``--strict`` fails on, and CI's
    build passed with a page missing from the navigation."""
    builds = [
        line
        for source in (ROOT / ".ci" / "run", ROOT / "noxfile.py")
        for line in source.read_text(encoding="utf-8").splitlines()
        if "mkdocs" in line and "build" in line and not line.lstrip().startswith("#")
    ]
    assert builds
    assert all("--strict" in line and "--quiet" not in line for line in builds), builds
