"""Tests for `tinytools._cli`."""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tinytools import Tool
from tinytools._cli import main
from tinytools._cli.demo import CALLS, EXAMPLES, TOOLS
from tinytools.errors import ToolArgumentsError

#: The user-facing examples the demo copies (absent from an installed package).
EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"


def run_main(capsys, *argv):
    """``main(argv)``'s exit status (returned or raised) with its stdout and stderr."""
    try:
        status = main(list(argv))
    except SystemExit as exit_:
        status = exit_.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def outcome(tool, arguments):
    """What ``tool.validate`` makes of ``arguments``, comparable across tools."""
    try:
        return ("ok", repr(tool.validate(arguments)))
    except ToolArgumentsError as error:
        return ("error", str(error))


def description_of(tool):
    """Everything a tool tells the model or the host about itself."""
    injections = [(i.name, i.source, i.optional) for i in tool.injections]
    return (tool.description, tool.parameters, injections, tool.is_async, tool.external)


@pytest.fixture(scope="module")
def example_tools():
    """Each example file's tools by name, loaded from its path (examples/ is no package)."""
    if not EXAMPLES_DIR.is_dir():
        pytest.skip(f"the examples folder is not at {EXAMPLES_DIR} (an installed package?)")
    loaded, names = {}, []
    try:
        for filename in EXAMPLES:
            name = f"_tinytools_example_{Path(filename).stem}"
            spec = importlib.util.spec_from_file_location(name, EXAMPLES_DIR / filename)
            assert spec is not None
            assert spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            # Registered while in use: type hints are resolved through the module's name.
            sys.modules[name] = module
            names.append(name)
            spec.loader.exec_module(module)
            loaded[filename] = {k: v for k, v in vars(module).items() if isinstance(v, Tool)}
        yield loaded
    finally:
        for name in names:
            del sys.modules[name]


class TestDemo:
    def test_dispatched_turn(self, capsys):
        """The demo dispatches one turn: repaired, unknown, run, async and deferred calls."""
        _, out, _ = run_main(capsys, "demo")
        turn = out.split("dispatched", 1)[1]
        assert "call_a     invalid_tool_args repaired" in turn
        assert "call_b     [error] Unknown tool `get_wether`" in turn
        assert "call_d     [ok]" in turn
        assert "Deferred to the host: call_e" in turn
        assert "Executed: call_a, call_c, call_d" in turn

    def test_exit_status(self, capsys):
        """The demo succeeds and writes only to stdout."""
        status, out, err = run_main(capsys, "demo")

        assert (0, "") == (status, err)
        assert out.startswith("tinytools ")

    def test_every_tool_with_its_schema(self, capsys):
        """Every tool is shown with its description and its pretty-printed schema."""
        _, out, _ = run_main(capsys, "demo")

        for tool in TOOLS.tools():
            assert f"\n{tool.name}  (" in out
            assert tool.description.splitlines()[0] in out
            schema = json.dumps(tool.parameters, indent=2)
            assert "\n".join(f"    {line}" for line in schema.splitlines()) in out

    def test_injected_parameters_named(self, capsys):
        """The parameters filled at run time are named, apart from the schema."""
        _, out, _ = run_main(capsys, "demo")

        assert "Injected at run time, hidden from the model: run, cart\n" in out

    def test_success_shows_keyword_arguments(self, capsys):
        """An accepted call shows the converted keyword arguments, defaults included."""
        _, out, _ = run_main(capsys, "demo")

        assert '    arguments  {"city": "Paris"}\n' in out
        assert "    ok         {'city': 'Paris', 'units': 'celsius', 'days': 1}\n" in out
        assert "LineItem(sku='TEA-001', quantity=2)" in out

    def test_error_shows_model_message(self, capsys):
        """A rejected call shows the message the model would read, with its JSON path."""
        _, out, _ = run_main(capsys, "demo")

        assert (
            "    error      Invalid arguments for tool `add_to_cart` at `$.items[0].quantity`: "
            "Expected `integer`, got `string`.\n"
        ) in out
        assert "Object contains unknown field `cart`" in out

    def test_every_call_shown(self, capsys):
        """Every demo call is shown, and the tally adds up."""
        _, out, _ = run_main(capsys, "demo")
        accepted = sum(demo.accepted for demo in CALLS)

        for demo in CALLS:
            assert f"{demo.call.name}: {demo.shows}\n" in out
            assert f"    arguments  {demo.call.arguments}\n" in out
        assert out.count("\n    ok ") == accepted
        assert out.count("\n    error ") == len(CALLS) - accepted
        summary = f"{len(CALLS)} calls: {accepted} accepted, {len(CALLS) - accepted} rejected.\n"
        assert summary in out

    def test_plain_ascii(self, capsys):
        """The output is plain ASCII, safe for any terminal encoding and CI log."""
        _, out, _ = run_main(capsys, "demo")

        assert out.isascii()
        assert "\x1b" not in out

    @pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipe semantics")
    def test_closed_pipe(self):
        """A reader that has gone away ends the demo quietly with status 1."""
        read, write = os.pipe()
        os.close(read)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "tinytools", "demo"],
                stdout=write,
                stderr=subprocess.PIPE,
                check=False,
                timeout=60,
            )
        finally:
            os.close(write)

        assert (1, b"") == (done.returncode, done.stderr)


class TestDemoCatalogue:
    @pytest.mark.parametrize("demo", CALLS, ids=lambda demo: demo.call.id)
    def test_outcome_as_declared(self, demo):
        """Each demo call is accepted or rejected as declared, so its caption holds."""
        expected = "ok" if demo.accepted else "error"

        assert expected == outcome(TOOLS[demo.call.name], demo.call.arguments)[0]

    def test_good_and_bad_for_every_tool(self):
        """Every tool has at least one call in the demo, and both outcomes appear."""
        assert set(TOOLS) == {demo.call.name for demo in CALLS}
        assert {True, False} == {demo.accepted for demo in CALLS}


class TestExamplesAgreement:
    @pytest.mark.parametrize("filename", list(EXAMPLES))
    def test_same_tools(self, example_tools, filename):
        """Each example file defines exactly the tools the demo copies from it."""
        expected = {tool.name for tool in EXAMPLES[filename]}

        assert expected == {tool.name for tool in example_tools[filename].values()}

    @pytest.mark.parametrize("filename", list(EXAMPLES))
    def test_same_schemas(self, example_tools, filename):
        """The copies tell the model and the host the same: description, schema, injections."""
        examples = {tool.name: tool for tool in example_tools[filename].values()}

        for tool in EXAMPLES[filename]:
            assert description_of(tool) == description_of(examples[tool.name])

    @pytest.mark.parametrize("filename", list(EXAMPLES))
    def test_same_validation(self, example_tools, filename):
        """The copies accept and reject the demo's calls alike (``enforce`` is not in a schema)."""
        examples = {tool.name: tool for tool in example_tools[filename].values()}

        for demo in CALLS:
            if demo.call.name in examples:
                expected = outcome(TOOLS[demo.call.name], demo.call.arguments)
                assert expected == outcome(examples[demo.call.name], demo.call.arguments)


class TestHelp:
    def test_help(self, capsys):
        """``--help`` lists the commands and exits 0."""
        status, out, _ = run_main(capsys, "--help")

        assert 0 == status
        assert out.startswith("usage: tinytools ")
        assert "\n    demo " in out

    def test_demo_help(self, capsys):
        """``demo --help`` describes the demo and exits 0."""
        status, out, _ = run_main(capsys, "demo", "--help")

        assert 0 == status
        assert out.startswith("usage: tinytools demo ")
        assert "JSON schema" in out

    def test_version(self, capsys):
        """``--version`` prints the package version and exits 0."""
        import tinytools

        assert (0, f"tinytools {tinytools.__version__}\n") == run_main(capsys, "--version")[:2]


class TestUsageErrors:
    def test_unknown_command(self, capsys):
        """An unknown command exits 2 and names it and the valid choices on stderr."""
        status, out, err = run_main(capsys, "frobnicate")

        assert (2, "") == (status, out)
        assert "invalid choice: 'frobnicate'" in err
        assert "demo" in err

    def test_no_command(self, capsys):
        """No command exits 2 and says one is required."""
        status, _, err = run_main(capsys)

        assert 2 == status
        assert "required: COMMAND" in err


class TestEntryPoints:
    def test_console_script(self):
        """The ``tinytools`` console script is ``tinytools._cli:main``."""
        scripts = importlib.metadata.entry_points(group="console_scripts", name="tinytools")
        if not scripts:
            pytest.skip("tinytools is not installed as a distribution")

        assert main is next(iter(scripts)).load()

    def test_python_m(self):
        """``python -m tinytools demo`` runs the demo."""
        done = subprocess.run(
            [sys.executable, "-m", "tinytools", "demo"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )

        assert (0, "") == (done.returncode, done.stderr)
        assert "get_weather" in done.stdout

    def test_import_leaves_cli_alone(self):
        """``import tinytools`` loads neither the command line nor the demo catalogue."""
        code = (
            "import sys, tinytools; "
            "print(sorted(m for m in sys.modules if m.startswith('tinytools._cli') or m in "
            "('tinytools._cli.demo', 'tinytools._cli.lint', 'tinytools.__main__')))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        )

        assert "[]\n" == done.stdout


#: The verbs docs/reference/cli.md documents (add a verb here when its section is written).
DOCUMENTED_VERBS = ("demo", "inspect", "call", "check", "ledger")


def _section(text: str, heading: str) -> str:
    """The part of ``text`` under ``heading`` (a Markdown heading line), up to the next
    heading of the same or a higher level; empty when ``heading`` is not there."""
    start = text.find(f"\n{heading}\n")
    if start < 0:
        return ""
    level = heading.split(" ", 1)[0]
    rest = text[start + len(heading) + 2 :]
    ends = [rest.find(f"\n{'#' * n} ") for n in range(2, len(level) + 1)]
    found = [end for end in ends if end >= 0]
    return rest[: min(found)] if found else rest


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [
        option
        for action in parser._actions
        for option in action.option_strings
        if option not in ("-h", "--help")
    ]


def _actions_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A verb's actions (``ledger list``...), by name; empty for a verb without any."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


class TestReferencePage:
    def test_every_option_documented(self):
        """docs/reference/cli.md has a section for every verb, and one for each action of a
        verb that has actions (``ledger list``), naming each of its options: a verb's own
        in its section, an action's in its section or in the verb's introduction (the
        options every action takes)."""
        page = Path(__file__).resolve().parents[2] / "docs" / "reference" / "cli.md"
        if not page.is_file():
            pytest.skip(f"the docs are not at {page} (an installed package?)")
        text = page.read_text(encoding="utf-8")

        from tinytools._cli.app import _parser

        commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
        assert set(DOCUMENTED_VERBS) == set(commands.choices)
        for verb in DOCUMENTED_VERBS:
            parser = commands.choices[verb]
            section = _section(text, f"## `tinytools {verb}`")
            assert section, f"no section for {verb}"
            for option in _options(parser):
                assert f"`{option}" in section, f"{verb} {option}"
            actions = _actions_of(parser)
            introduction = section.split("\n### ", 1)[0]
            for name, action in actions.items():
                part = _section(section, f"### `tinytools {verb} {name}`")
                assert part, f"no section for {verb} {name}"
                for option in _options(action):
                    assert f"`{option}" in part + introduction, f"{verb} {name} {option}"
