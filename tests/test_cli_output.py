"""Tests for `tinytools._cli_output`: one escaping rule for what every command prints."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import run_cli

from tinytools._cli_output import printable

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
