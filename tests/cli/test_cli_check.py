"""Tests for `tinytools check` (`tinytools._cli.cmd_check` and the rules of
`tinytools._cli.lint`)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_run import REPO, run_cli

from tinytools._cli.lint import OPENAI_MAX_TOOLS, RULES

BAD = "tests/cli/cli_targets/bad_tools.py"
GOOD = "tests/cli/cli_targets/good_tools.py"


def findings(out: str) -> list[tuple[str, int, str, str]]:
    """``(path, line, code, severity)`` of each ``path:line: CODE severity: message`` line."""
    found = []
    for line in out.splitlines():
        if not line or line.startswith("Checked "):
            continue
        location, code, rest = line.split(" ", 2)
        path, number, empty = location.split(":")
        assert "" == empty
        found.append((path, int(number), code, rest.split(":", 1)[0]))
    return found


class TestCheckText:
    def test_bad_tools(self):
        """Each deliberately bad tool is reported at its line with its rule, and the run fails."""
        done = run_cli("check", BAD)

        assert (1, "") == (done.returncode, done.stderr)
        lines = {(line, code) for _, line, code, _ in findings(done.stdout)}
        assert {
            (11, "TT001"),  # undocumented: no docstring
            (11, "TT003"),
            (16, "TT002"),  # thin: "Weather."
            (26, "TT003"),  # bare_parameter: `days` is not in Args
            (36, "TT101"),  # unclassified
            (46, "TT301"),  # free_form: dict parameter
            (61, "TT201"),  # second `lookup`
            (67, "TT202"),  # `Free-Form` beside `free_form`
            (73, "TT302"),  # exclusiveMinimum
            (85, "TT301"),
            (85, "TT303"),  # anyOf at the top level
        } == lines
        assert done.stdout.endswith("\nChecked 10 tools in 1 file: 3 errors, 8 warnings.\n")

    def test_severity_matches_rule(self):
        """Each line's severity is its rule's."""
        for _, _, code, severity in findings(run_cli("check", BAD).stdout):
            assert RULES[code].severity == severity

    def test_messages_say_what_to_do(self):
        """Messages name the tool and the fix, and a duplicate names the other definition."""
        out = run_cli("check", BAD).stdout

        assert "TT001 error: tool `undocumented` has no description: write a docstring" in out
        assert "parameter `days` of tool `bare_parameter` has no description" in out
        assert f"also defined at {BAD}:55 ({BAD}:first_lookup)" in out

    def test_clean_tools_exit_0(self):
        """Documented, classified tools pass with exit 0 and a one-line summary."""
        done = run_cli("check", GOOD)

        assert (0, "Checked 2 tools in 1 file: no problems.\n") == (done.returncode, done.stdout)

    def test_a_pydantic_model_parameter_is_clean(self):
        """A tool whose parameter is a pydantic model passes: its schema (the model's own,
        in `$defs`) is one OpenAI's strict mode can express."""
        done = run_cli("check", "tests/cli/cli_targets_models/model_tools.py")

        assert (0, "Checked 1 tool in 1 file: no problems.\n") == (done.returncode, done.stdout)

    def test_warnings_alone_exit_0(self):
        """Warnings do not fail the run unless --fail-on warning is given."""
        assert 0 == run_cli("check", "examples/").returncode
        assert 1 == run_cli("check", "examples/", "--fail-on", "warning").returncode

    def test_ignore(self):
        """--ignore drops the named rules, and the exit status follows what is left."""
        done = run_cli("check", BAD, "--ignore", "TT001,TT201,tt303,TT003")

        assert 0 == done.returncode
        codes = {code for _, _, code, _ in findings(done.stdout)}
        assert not codes & {"TT001", "TT201", "TT303", "TT003"}

    def test_unknown_ignore_code(self):
        """An unknown code in --ignore is a usage error naming it."""
        done = run_cli("check", GOOD, "--ignore", "TT999")

        assert 1 == done.returncode
        assert "unknown rule code TT999" in done.stderr

    def test_budget(self):
        """A small --budget reports where the declarations pass it, as an error."""
        done = run_cli("check", "examples/shop.py", "--budget", "600")

        assert 1 == done.returncode
        over = [line for line in done.stdout.splitlines() if " TT401 " in line]
        assert 1 == len(over)
        assert "over the budget of 600" in over[0]

    def test_names_and_budget_per_module(self):
        """In a folder, one name in two modules is no duplicate: each module is its own set."""
        done = run_cli("check", "examples/", "--format", "json")
        paths = {d["path"] for d in json.loads(done.stdout)["diagnostics"]}
        codes = {d["code"] for d in json.loads(done.stdout)["diagnostics"]}

        assert 0 == done.returncode
        assert "TT201" not in codes  # get_weather is in weather.py and local_model.py
        assert {"examples/weather.py", "examples/shop.py"} <= paths

    def test_several_targets(self):
        """Several targets are checked together, across files."""
        done = run_cli("check", GOOD, "examples/weather.py")

        assert "Checked 3 tools in 2 files" in done.stdout

    def test_folder_with_broken_file(self):
        """A file that raises on import is a TT000 error at the raising line; others are checked."""
        done = run_cli("check", "tests/cli/cli_targets/")

        assert 1 == done.returncode
        broken = "tests/cli/cli_targets/broken/raises_on_import.py:16: TT000 error: importing"
        assert broken in done.stdout
        assert "RuntimeError: this module cannot be imported" in done.stdout
        assert "Checked 12 tools in 3 files" in done.stdout

    def test_folder_skips_hidden_cache_and_virtual_environments(self, tmp_path: Path):
        """Hidden folders, __pycache__ and virtual environments under a folder are not imported."""
        tools = tmp_path / "project"
        (tools / "pkg").mkdir(parents=True)
        (tools / "pkg" / "weather.py").write_text(
            "from tinytools import ToolPolicy, tool\n\n\n"
            "@tool(policy=ToolPolicy.read_only())\n"
            "def get_weather(city: str) -> str:\n"
            '    """Get the current weather for a city.\n\n'
            "    Args:\n"
            "        city: The city name.\n"
            '    """\n'
            "    return city\n"
        )
        for skipped in (".hidden", "__pycache__", "venv", ".venv", "env"):
            (tools / skipped).mkdir()
            (tools / skipped / "trap.py").write_text("raise RuntimeError('must not be imported')\n")
        done = run_cli("check", "project", cwd=tmp_path)

        assert (0, "Checked 1 tool in 1 file") == (done.returncode, done.stdout.strip()[:24])


class TestCheckFormats:
    def test_json(self):
        """--format json parses back to the same findings and counts as the text output."""
        done = run_cli("check", BAD, "--format", "json")
        document = json.loads(done.stdout)
        text = findings(run_cli("check", BAD).stdout)

        assert 1 == done.returncode
        assert (10, 1, 3, 8) == (
            document["tools"],
            document["files"],
            document["errors"],
            document["warnings"],
        )
        assert text == [
            (d["path"], d["line"], d["code"], d["severity"]) for d in document["diagnostics"]
        ]
        assert {"undocumented"} == {
            d["tool"] for d in document["diagnostics"] if d["code"] == "TT001"
        }

    def test_github(self):
        """--format github writes one workflow command per finding, escaped."""
        done = run_cli("check", BAD, "--format", "github")
        lines = done.stdout.splitlines()

        assert 11 == len(lines)
        assert f"::error file={BAD},line=11,title=TT001::tool `undocumented`" in lines[0]
        assert all(line.startswith(("::error ", "::warning ")) for line in lines)

    def test_plain_when_piped(self):
        """Piped output has no colour codes; FORCE_COLOR adds them; NO_COLOR wins."""
        assert "\x1b[" not in run_cli("check", BAD).stdout
        assert "\x1b[" in run_cli("check", BAD, env={"FORCE_COLOR": "1"}).stdout
        both = {"FORCE_COLOR": "1", "NO_COLOR": "1"}
        assert "\x1b[" not in run_cli("check", BAD, env=both).stdout

    @pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
    def test_terminal_colour_unless_term_dumb(self):
        """On a terminal the findings are coloured, unless TERM=dumb (or NO_COLOR) says not."""
        import pty

        def on_a_terminal(**env: str) -> bytes:
            controller, terminal = pty.openpty()
            environment = {
                k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")
            }
            command = [sys.executable, "-m", "tinytools", "check", BAD]
            with subprocess.Popen(
                command,
                cwd=REPO,
                stdout=terminal,
                stderr=subprocess.DEVNULL,
                env={**environment, **env},
            ) as process:
                os.close(terminal)
                out = b""
                while chunk := _read(controller):
                    out += chunk
                process.wait()
            os.close(controller)
            return out

        assert b"\x1b[" in on_a_terminal(TERM="xterm")
        assert b"\x1b[" not in on_a_terminal(TERM="dumb")
        assert b"\x1b[" not in on_a_terminal(TERM="xterm", NO_COLOR="")


def _read(fd: int) -> bytes:
    """What a pseudo-terminal holds next; b"" once its other end is closed."""
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the child closed the terminal
        return b""


class TestCheckCorpus:
    def test_bfcl_toolset(self, corpora: Path, tmp_path: Path):
        """200 BFCL definitions: provider refusals are reported, in under a second of CPU."""
        module = tmp_path / "bfcl_tools.py"
        module.write_text(
            textwrap.dedent(
                f"""
                import json
                from pathlib import Path
                from tinytools.formats.bfcl import tool_from_bfcl

                definitions = []
                with open({str(corpora / "bfcl" / "data" / "BFCL_v4_live_multiple.json")!r}) as f:
                    for line in f:
                        definitions.extend(json.loads(line)["function"])
                        if len(definitions) >= 200:
                            break
                TOOLS = [tool_from_bfcl(d) for d in definitions[:200]]
                """
            )
        )
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = run_cli("check", str(module), "--format", "json", cwd=tmp_path)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

        document = json.loads(done.stdout)
        codes = {d["code"] for d in document["diagnostics"]}
        assert (1, 200) == (done.returncode, document["tools"])
        assert {"TT301", "TT401", "TT402"} <= codes  # strict mode, budget, OpenAI's 128 tools
        [too_many] = [d for d in document["diagnostics"] if d["code"] == "TT402"]
        assert f"number {OPENAI_MAX_TOOLS + 1}" in too_many["message"]
        assert cpu < 1.0, f"tinytools check took {cpu:.2f} s of CPU for 200 BFCL tools"

    def test_examples_fast(self):
        """Checking the examples costs under a second of CPU, their own imports included.

        Left out: examples/mcp_server.py, whose import of the MCP SDK alone takes about
        half a second of CPU — the example's cost, not check's.
        """
        files = sorted(str(p) for p in (REPO / "examples").glob("*.py"))
        files = [f for f in files if not f.endswith("mcp_server.py")]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = run_cli("check", *files)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

        assert 0 == done.returncode
        assert cpu < 1.0


def test_too_many_tools(tmp_path: Path):
    """More direct tools than OpenAI takes is an error at the first one too many."""
    module = tmp_path / "many.py"
    module.write_text(
        "from tinytools import Tool\n"
        "TOOLS = [Tool.from_schema(f'tool_{i}', 'Return the number of this tool.', "
        "{'type': 'object', 'properties': {}}) for i in range(130)]\n"
    )
    done = run_cli("check", "many.py", "--ignore", "TT101", "--budget", "100000", cwd=tmp_path)

    assert 1 == done.returncode
    [line] = done.stdout.splitlines()[:-2]
    assert line.startswith("many.py:2: TT402 error: tool `tool_128` is direct tool number 129")


def test_every_rule_in_help():
    """`check --help` lists every rule with its severity, and examples."""
    out = run_cli("check", "--help").stdout

    for code, rule in RULES.items():
        assert f"{code}  {rule.severity}" in out
    assert "examples:\n  tinytools check examples/" in out


@pytest.mark.parametrize(("total", "code"), [(16_384, 0), (16_385, 1)])
def test_default_budget_is_16384_bytes(tmp_path: Path, total: int, code: int):
    """Without --budget, declarations of 16,384 bytes pass and one byte more is TT401."""
    import msgspec

    from tinytools import Tool
    from tinytools.discovery import declaration_bytes
    from tinytools.formats import openai_chat

    empty = declaration_bytes(Tool.from_schema("tool_0", "", {"type": "object"}))
    # Four tools in a JSON list (two brackets, three commas); the last one's description
    # fills the total.
    filler = total - 2 - 3 - 4 * empty
    (tmp_path / "sized.py").write_text(
        "from tinytools import Tool\n"
        f"TOOLS = [Tool.from_schema(f'tool_{{i}}', 'Say hello to the user.' if i < 3 else "
        f"'x' * {filler - 3 * len('Say hello to the user.')}, {{'type': 'object'}}) "
        "for i in range(4)]\n"
    )
    done = run_cli("check", "sized.py", "--ignore", "TT101,TT002", cwd=tmp_path)

    assert code == done.returncode, done.stdout
    assert (code == 1) == (" TT401 " in done.stdout)
    sent = [Tool.from_schema(f"tool_{i}", "", {"type": "object"}) for i in range(4)]
    assert 2 + 3 + 4 * empty == len(msgspec.json.encode(openai_chat.declarations(sent)))


#: The characters that must never reach the terminal raw (escape, BEL, the C1 CSI, DEL).
RAW = "\x1b\x07\x9b\x7f"


@pytest.mark.parametrize("fmt", ["text", "json", "github"])
def test_tool_text_cannot_drive_the_terminal(tmp_path: Path, fmt: str):
    """A finding that quotes a tool's own text (an undocumented parameter's name) or what a
    file raised on import is printed with its control characters escaped, in every format;
    the JSON document still decodes to the text itself."""
    parameter = "a\x1b]0;owned\x07\x9b2J\x7f"
    schema = {"type": "object", "properties": {parameter: {"type": "string"}}}
    (tmp_path / "loud.py").write_text(
        "from tinytools import Tool\n\n"
        f"loud = Tool.from_schema('loud', 'Say the text aloud to the user, once.', {schema!r})\n"
    )
    (tmp_path / "raises.py").write_text("raise ValueError('no \\x1b[2J way')\n")
    done = run_cli("check", ".", "--format", fmt, "--ignore", "TT101", cwd=tmp_path)

    assert 1 == done.returncode
    assert not any(c in done.stdout for c in RAW)
    if fmt == "json":
        messages = [d["message"] for d in json.loads(done.stdout)["diagnostics"]]
        assert any(f"parameter `{parameter}`" in m for m in messages)
        assert any("ValueError: no \x1b[2J way" in m for m in messages)
    else:
        assert "parameter `a\\x1b]0;owned\\x07\\x9b2J\\x7f`" in done.stdout
        assert "ValueError: no \\x1b[2J way" in done.stdout
