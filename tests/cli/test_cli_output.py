"""Tests for `tinytools._cli.output`: one escaping rule for what every command prints."""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

import pytest
from cli_run import run_cli

from tinytools._cli.output import printable, printable_json
from tinytools.ledger import SqliteLedger

#: A schema's property name (an MCP server's dump, an imported file) that would forge a
#: diagnostic line, as CI problem matchers and readers take one.
FORGED = "src/app.py:12: TT001 error: tool `pay` has no description"
FORGING_TOOLS = f"""
from tinytools import Tool, ToolPolicy

imported = Tool.from_schema(
    "lookup",
    "Look a record up by its key in the registry of records.",
    {{"type": "object", "properties": {{"key\\n{FORGED}": {{"type": "string"}}}}}},
    lambda **kw: "ok",
    policy=ToolPolicy.read_only(),
)
"""
#: Bidi overrides and isolates, zero-width and separator characters, and a tag character.
INVISIBLE = "\u202e\u2066\u2067\u2068\u2069\u200b\u2028\u2029\ufeff\U000e0041"


class TestLineBreaks:
    """Defect: a line break in a schema's property name printed raw in ``tinytools check``
    and ``inspect --format xml|ptype|json_in_tag``, forging a line while the summary said
    "0 errors"; the ledger commands escaped it. Every command escapes it now."""

    def test_a_field_keeps_to_its_line(self) -> None:
        """A field's line break is an escape; a block printed as lines keeps its own."""
        assert ("a\\nb", "a\nb") == (printable("a\nb"), printable("a\nb", lines=True))

    @pytest.mark.parametrize(
        "argv",
        [
            ["check", "forge_tools.py"],
            ["inspect", "forge_tools.py", "--format", "xml"],
            ["inspect", "forge_tools.py", "--format", "ptype"],
            ["inspect", "forge_tools.py", "--format", "json_in_tag"],
        ],
    )
    def test_a_property_name_forges_no_line(self, tmp_path: Path, argv: list[str]) -> None:
        """No line of the output starts with the forged text; the name shows its escape."""
        (tmp_path / "forge_tools.py").write_text(FORGING_TOOLS)
        done = run_cli(*argv, cwd=tmp_path)
        assert "" == done.stderr
        assert [] == [line for line in done.stdout.splitlines() if line.startswith("src/")]
        assert f"key\\n{FORGED}" in done.stdout


class TestInvisibleCharacters:
    """Defect: bidi overrides and isolates, zero-width characters and line or paragraph
    separators reached the terminal raw (``ledger list``, ``inspect``, ``call``): in a
    bidi-aware terminal or log viewer ``call_\\u202e1234567`` shows as ``call_7654321``."""

    def test_every_format_character_and_separator(self) -> None:
        """Each character of the categories Cf, Zl and Zp, and each control but tab, is
        escaped in text and in JSON, which decodes back to the same text."""
        hidden = [
            chr(code)
            for code in range(sys.maxunicode + 1)
            if unicodedata.category(chr(code)) in ("Cf", "Zl", "Zp", "Cc") and code != 9
        ]
        text = "".join(hidden)
        shown, document = printable(text), printable_json({text: text})
        assert [] == [c for c in hidden if c in shown or c in document]
        assert {text: text} == json.loads(document)
        assert ("\\u202e", "\\U000e0041") == (printable("\u202e"), printable("\U000e0041"))

    def test_visible_text_is_unchanged(self) -> None:
        """Letters of every script, emoji, tabs and a block's lines are printed as they are."""
        text = "café 中文 עברית العربية 😀\tend\nnext"
        assert (text, text) == (printable(text, lines=True), json.loads(printable_json(text)))

    @pytest.fixture
    def target(self, tmp_path: Path) -> Path:
        module = tmp_path / "tools_bidi.py"
        module.write_text(
            "from tinytools import tool\n\n\n@tool\ndef pay(amount: int) -> str:\n"
            f'    """Pay the amount. {INVISIBLE}"""\n'
            f"    return {INVISIBLE!r}\n"
        )
        return module

    @pytest.mark.parametrize(
        "argv",
        [
            ["inspect", "{target}", "--format", "xml"],
            ["inspect", "{target}", "--format", "openai_chat"],
            ["call", "{target}", "pay", '{"amount": 1}'],
            ["call", "{target}", "pay", '{"amount": 1}', "--json"],
        ],
    )
    def test_a_tools_text(self, target: Path, argv: list[str]) -> None:
        """A tool's description and result are shown with their escapes."""
        done = run_cli(
            *(str(target) if a == "{target}" else a for a in argv),
            env={"PYTHONIOENCODING": "utf-8"},
        )
        assert 0 == done.returncode, done.stderr
        assert [] == [c for c in INVISIBLE if c in done.stdout]
        assert "\\u202e" in done.stdout

    @pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
    def test_a_stored_call(self, tmp_path: Path, json_output: bool) -> None:
        """``ledger list`` shows a stored run id, call id and arguments with their escapes."""
        db = str(tmp_path / "l.db")
        with SqliteLedger(db) as ledger:
            ledger.started("run\u202e1", "call_\u202e1234567", "pay", {"note": INVISIBLE})
        argv = ["ledger", "list", "--db", db, *(["--json"] if json_output else [])]
        done = run_cli(*argv, env={"PYTHONIOENCODING": "utf-8"})
        assert 0 == done.returncode, done.stderr
        assert [] == [c for c in INVISIBLE if c in done.stdout]
        assert "call_\\u202e1234567" in done.stdout
