"""Tests for `tinytools inspect` (`tinytools._cli.cmd_inspect`)."""

from __future__ import annotations

import json

import msgspec
import pytest
from cli_run import run_cli
from cli_targets import good_tools

from tinytools import formats
from tinytools._cli.cmd_inspect import DIALECTS, PROVIDERS
from tinytools._cli.demo import EXAMPLES

GOOD = "tests/cli/cli_targets/good_tools.py"
MODELS = "tests/cli/cli_targets_models/model_tools.py"


class TestInspect:
    @pytest.mark.parametrize("fmt", PROVIDERS)
    def test_provider_json(self, fmt):
        """--json gives exactly the provider module's declarations, with their sizes."""
        done = run_cli("inspect", GOOD, "--format", fmt, "--json")
        document = json.loads(done.stdout)
        expected = getattr(formats, fmt).declarations(good_tools.registry)

        assert (0, "") == (done.returncode, done.stderr)
        assert expected == document["declarations"]
        assert len(msgspec.json.encode(expected)) == document["total_bytes"]
        assert ["get_forecast", "send_alert"] == [t["name"] for t in document["tools"]]

    @pytest.mark.parametrize("fmt", DIALECTS)
    def test_dialect_json(self, fmt):
        """A text dialect gives its rendered catalogue and its size in UTF-8 bytes."""
        done = run_cli("inspect", "examples/weather.py", "--format", fmt, "--json")
        document = json.loads(done.stdout)
        [weather] = EXAMPLES["weather.py"]

        assert getattr(formats, fmt).render([weather]) == document["text"]
        assert len(document["text"].encode()) == document["total_bytes"]

    def test_text(self):
        """The default text output shows each declaration, its size and the total."""
        done = run_cli("inspect", "examples/weather.py")
        [declaration] = formats.openai_chat.declarations(EXAMPLES["weather.py"])
        size = len(msgspec.json.encode(declaration))

        assert 0 == done.returncode
        assert done.stdout.startswith(f"get_weather  ({size} bytes)\n{{\n")
        assert json.dumps(declaration, indent=2) in done.stdout
        assert done.stdout.endswith(f"1 tool in openai_chat: {size + 2} bytes in total.\n")

    def test_a_pydantic_model_parameter(self):
        """A tool whose parameter is a pydantic model is declared with the model's own JSON
        schema in `$defs`, in strict mode too."""
        done = run_cli("inspect", MODELS, "--strict", "--json")
        [declaration] = json.loads(done.stdout)["declarations"]
        parameters = declaration["function"]["parameters"]

        assert (0, "") == (done.returncode, done.stderr)
        assert declaration["function"]["strict"] is True
        assert {
            "description": "The order to place.",
            "anyOf": [{"$ref": "#/$defs/Order"}],  # (strict mode: no siblings beside a $ref)
        } == parameters["properties"]["order"]
        assert {"Line", "Order"} == set(parameters["$defs"])

    def test_strict(self):
        """--strict declares OpenAI tools in strict mode."""
        done = run_cli("inspect", "examples/weather.py", "--strict", "--json")

        assert [True] == [d["function"]["strict"] for d in json.loads(done.stdout)["declarations"]]

    def test_registry_attribute(self):
        """module:attribute picks one registry."""
        done = run_cli("inspect", "tests/cli/cli_targets/good_tools.py:registry", "--json")

        names = [t["name"] for t in json.loads(done.stdout)["tools"]]
        assert ["get_forecast", "send_alert"] == names

    def test_folder_with_broken_file(self):
        """A folder's file that raises is named on stderr; stdout stays one JSON document."""
        done = run_cli("inspect", "tests/cli/cli_targets/", "--json")

        assert 0 == done.returncode
        assert "skipped tests/cli/cli_targets/broken/raises_on_import.py:16" in done.stderr
        assert 11 == len(json.loads(done.stdout)["tools"])  # 12 tools; `lookup` is shown once

    def test_unknown_format(self):
        """An unknown --format is a usage error listing the choices."""
        done = run_cli("inspect", "examples/", "--format", "yaml")

        assert 2 == done.returncode
        assert "invalid choice: 'yaml'" in done.stderr
        assert "openai_chat" in done.stderr

    def test_help_has_examples(self):
        """`inspect --help` shows examples."""
        out = run_cli("inspect", "--help").stdout

        assert "examples:\n  tinytools inspect examples/weather.py" in out


#: A description and a parameter name holding terminal escape sequences (OSC retitle, BEL,
#: clear screen, the C1 CSI) and DEL, as a hostile or careless tool author could write them.
LOUD_DESCRIPTION = "Say it \x1b]0;owned\x07 loud\x1b[2J\x9b31m, twice.\x7f"
LOUD_PARAMETER = "a\x1b[2Ab"
LOUD_SCHEMA = {
    "type": "object",
    "properties": {LOUD_PARAMETER: {"type": "string", "description": "x\x1b[8m"}},
}
#: The characters that must never reach the terminal raw.
RAW = "\x1b\x07\x9b\x7f"


def _loud(tmp_path):
    (tmp_path / "loud.py").write_text(
        "from tinytools import Tool\n\n"
        f"loud = Tool.from_schema('loud', {LOUD_DESCRIPTION!r}, {LOUD_SCHEMA!r})\n"
    )
    from tinytools import Tool

    return Tool.from_schema("loud", LOUD_DESCRIPTION, LOUD_SCHEMA)


class TestToolTextCannotDriveTheTerminal:
    @pytest.mark.parametrize("fmt", DIALECTS)
    def test_dialect_text(self, tmp_path, fmt):
        """A text dialect's catalogue is printed with the control characters of its
        descriptions and parameter names escaped."""
        _loud(tmp_path)
        done = run_cli("inspect", "loud.py", "--format", fmt, cwd=tmp_path)

        assert (0, "") == (done.returncode, done.stderr)
        assert not any(c in done.stdout for c in RAW)
        assert "\\x1b]0;owned\\x07 loud\\x1b[2J\\x9b31m, twice.\\x7f" in done.stdout
        assert "a\\x1b[2Ab" in done.stdout

    @pytest.mark.parametrize("fmt", PROVIDERS)
    def test_provider_text(self, tmp_path, fmt):
        """A provider's declarations are printed as JSON that escapes DEL and the C1
        controls too (json.dumps leaves them raw)."""
        _loud(tmp_path)
        done = run_cli("inspect", "loud.py", "--format", fmt, cwd=tmp_path)

        assert (0, "") == (done.returncode, done.stderr)
        assert not any(c in done.stdout for c in RAW)
        assert "loud\\u001b[2J\\u009b31m, twice.\\u007f" in done.stdout

    @pytest.mark.parametrize("fmt", PROVIDERS + DIALECTS)
    def test_json_document(self, tmp_path, fmt):
        """--json escapes every control character and still decodes to exactly what the
        format module gives."""
        loud = _loud(tmp_path)
        done = run_cli("inspect", "loud.py", "--format", fmt, "--json", cwd=tmp_path)
        document = json.loads(done.stdout)
        module = getattr(formats, fmt)

        assert not any(c in done.stdout for c in RAW)
        if fmt in DIALECTS:
            assert module.render([loud]) == document["text"]
        else:
            assert module.declarations([loud]) == document["declarations"]

    def test_import_error(self, tmp_path):
        """What a target's file raised on import is printed escaped, whether the file is
        skipped in a folder or is the target itself."""
        _loud(tmp_path)
        (tmp_path / "raises.py").write_text("raise ValueError('no \\x1b]0;owned\\x07 way')\n")
        folder = run_cli("inspect", ".", cwd=tmp_path)
        alone = run_cli("inspect", "raises.py", cwd=tmp_path)

        assert (0, 2) == (folder.returncode, alone.returncode)
        for done in (folder, alone):
            assert not any(c in done.stderr for c in RAW)
            assert "ValueError: no \\x1b]0;owned\\x07 way" in done.stderr
