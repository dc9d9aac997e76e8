"""Tests for the TARGET of the command line (`tinytools._cli.target`), through the real verbs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_run import run_cli, run_cli_process

from tinytools._cli import main
from tinytools._cli.target import TargetError, load

VERBS = [("inspect",), ("check",), ("call", "{}")]


class Done:
    """What ``main(argv)`` did, shaped like a finished subprocess."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def with_verb(verb: tuple[str, ...], target: str) -> list[str]:
    """The argv of ``verb`` on ``target`` (``call`` also needs a tool name)."""
    if verb[0] == "call":
        return ["call", target, "any_tool", *verb[1:]]
    return [verb[0], target]


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v[0])
class TestBadTargets:
    """In-process through ``main(argv)`` (the subprocess path is shown once, below)."""

    @pytest.fixture(autouse=True)
    def _capsys(self, capsys, monkeypatch):
        monkeypatch.chdir(Path(__file__).resolve().parents[2])
        self.capsys = capsys

    def run(self, *argv: str) -> Done:
        status = main(list(argv))
        captured = self.capsys.readouterr()
        return Done(status, captured.out, captured.err)

    def test_missing_module(self, verb):
        """A module that does not exist: exit 2, the module named, the accepted forms listed."""
        done = self.run(*with_verb(verb, "no_such_module.tools"))

        assert (2, "") == (done.returncode, done.stdout)
        assert "cannot import `no_such_module.tools`: no module named `no_such_module`" in (
            done.stderr
        )
        assert "TARGET is a module" in done.stderr

    def test_missing_file(self, verb):
        """A file path that does not exist: exit 2 and a clear message."""
        done = self.run(*with_verb(verb, "tools/nowhere.py"))

        assert 2 == done.returncode
        assert "no such file or folder: tools/nowhere.py" in done.stderr

    def test_attribute_not_a_tool(self, verb):
        """An attribute that is a plain function: exit 2, and it says to decorate it."""
        done = self.run(*with_verb(verb, "tinytools._cli.demo:_lookup_order"))

        assert 2 == done.returncode, done.stderr
        assert "is a function, not a Tool, Registry, toolset" in done.stderr
        assert "decorate it with @tool" in done.stderr

    def test_missing_attribute(self, verb):
        """A misspelt attribute: exit 2, with the close names suggested."""
        done = self.run(*with_verb(verb, "tests/cli/cli_targets/good_tools.py:registy"))

        assert 2 == done.returncode
        assert "good_tools.py` has no attribute `registy` (did you mean `registry`" in done.stderr

    def test_module_without_tools(self, verb):
        """A module that defines no tools: exit 2, saying so."""
        done = self.run(*with_verb(verb, "json"))

        assert 2 == done.returncode
        assert "no tools found in json" in done.stderr

    def test_module_that_raises(self, verb):
        """A single module that raises on import: exit 2, with the file, line and error."""
        target = "tests/cli/cli_targets/broken/raises_on_import.py"
        done = self.run(*with_verb(verb, target))

        assert 2 == done.returncode
        assert f"{target}:16: importing" in done.stderr
        assert "RuntimeError: this module cannot be imported" in done.stderr


class TestLoad:
    def test_module_by_name(self, monkeypatch):
        """A dotted module name is imported and scanned, with each tool's def line."""
        monkeypatch.syspath_prepend(str(Path(__file__).parent))
        loaded = load("cli_targets_pkg.tools")

        assert [("get_time", "cli_targets_pkg.tools:get_time")] == [
            (f.tool.name, f.via) for f in loaded.found
        ]
        assert 9 == loaded.found[0].line  # the `def` line, below the decorator

    def test_file_in_package_relative_import(self):
        """A file inside a package is imported as its module, so relative imports work."""
        loaded = load(str(Path(__file__).parent / "cli_targets_pkg" / "tools.py"))

        assert ["get_time"] == [f.tool.name for f in loaded.found]
        assert "cli_targets_pkg.tools" in sys.modules

    def test_duck_typed_toolset(self, tmp_path, monkeypatch):
        """Any object with tools(context) and explain counts as a toolset; a class does not."""
        monkeypatch.chdir(tmp_path)
        (tmp_path / "duck.py").write_text(
            "from tinytools import Tool\n"
            "class Shelf:\n"
            "    def tools(self, context=None):\n"
            "        assert context.run_id == 'tinytools-cli'\n"
            "        return (Tool.from_schema('t', 'A tool on a shelf, for tests.',"
            " {'type': 'object', 'properties': {}}),)\n"
            "    def explain(self, context=None):\n"
            "        return ()\n"
            "shelf = Shelf()\n"
        )

        assert ["t"] == [f.tool.name for f in load("duck.py").found]
        assert ["t"] == [f.tool.name for f in load("duck.py:shelf").found]

    def test_tools_returning_garbage(self, tmp_path, monkeypatch):
        """A toolset whose tools() returns something else is a clear TargetError."""
        monkeypatch.chdir(tmp_path)
        (tmp_path / "odd.py").write_text(
            "class Odd:\n    def tools(self):\n        return ['not a tool']\nodd = Odd()\n"
        )

        with pytest.raises(TargetError, match="returned 'not a tool', which is not a Tool"):
            load("odd.py:odd")


def test_bad_target_in_a_subprocess():
    """The real entry point exits 2 on a missing module, with the message on stderr."""
    done = run_cli_process("check", "no_such_module")

    assert (2, "") == (done.returncode, done.stdout)
    assert "cannot import `no_such_module`" in done.stderr


def test_json_of_found_target_is_parseable():
    """A target found through a registry reports tools at their def lines (check --format json)."""
    done = run_cli("check", "tests/cli/cli_targets/good_tools.py:registry", "--format", "json")

    assert {"tools": 2, "errors": 0} == {
        k: v for k, v in json.loads(done.stdout).items() if k in ("tools", "errors")
    }
