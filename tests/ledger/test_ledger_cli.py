"""Tests for `tinytools ledger list` and `tinytools ledger reconcile`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_run import run_cli

from tinytools._cli import main
from tinytools.ledger import SqliteLedger

TOOLS_MODULE = '''
from tinytools import Registry, ToolPolicy, tool

@tool(policy=ToolPolicy.read_only())
def lookup(q: str) -> str:
    """Look up."""
    return q

@tool
def pay(amount: int) -> str:
    """Pay."""
    return "paid"

TOOLS = Registry.of(lookup, pay)
'''


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "ledger.db")
    with SqliteLedger(path) as ledger:
        ledger.started("r1", "a", "lookup", {"q": "x"})
        ledger.started("r1", "b", "pay", {"amount": 5, "password": "[redacted]"})
        ledger.started("r2", "c", "pay", {"amount": 1})
        ledger.settled("r2", "c", "ok")
    return path


@pytest.fixture
def tools_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "ledger_cli_tools.py").write_text(TOOLS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "ledger_cli_tools:TOOLS"  # type: ignore[misc]
    sys.modules.pop("ledger_cli_tools", None)


class TestList:
    def test_lists_unresolved_with_tool_age_and_arguments(
        self, db: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert 0 == main(["ledger", "list", "--db", db])
        out = capsys.readouterr().out
        assert "2 unresolved call(s)" in out
        assert "call a  tool lookup  age " in out
        assert '{"amount": 5, "password": "[redacted]"}' in out
        assert "call c" not in out  # settled

    def test_json_and_run_filter(self, db: str, capsys: pytest.CaptureFixture[str]) -> None:
        assert 0 == main(["ledger", "list", "--db", db, "--run", "r1", "--json"])
        rows = json.loads(capsys.readouterr().out)
        assert [
            ("a", "lookup", {"q": "x"}),
            ("b", "pay", {"amount": 5, "password": "[redacted]"}),
        ] == [(r["call_id"], r["tool_name"], r["arguments"]) for r in rows]
        assert all(r["age_seconds"] >= 0 for r in rows)

    def test_unreadable_ledger_exits_1(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        garbage = tmp_path / "l.db"
        garbage.write_bytes(b"not a database" * 100)
        assert 1 == main(["ledger", "list", "--db", str(garbage)])
        assert "not a database" in capsys.readouterr().err


class TestReconcile:
    def test_with_tools(
        self, db: str, tools_target: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The read-only call is released to run again, the payment settled interrupted."""
        argv = ["ledger", "reconcile", "--db", db, "--run", "r1", "--tools", tools_target]
        assert 0 == main([*argv, "--json"])
        expected = {"rerun": ["a"], "interrupted": ["b"], "waiting": []}
        assert expected == json.loads(capsys.readouterr().out)
        with SqliteLedger(db) as ledger:
            assert ["a"] == [e.call_id for e in ledger.unresolved("r1")]

    def test_without_tools_nothing_is_replay_safe(
        self, db: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert 0 == main(["ledger", "reconcile", "--db", db, "--run", "r1"])
        out = capsys.readouterr().out
        assert "a (lookup): interrupted" in out
        assert "No --tools given" in out
        assert 0 == main(["ledger", "reconcile", "--db", db, "--run", "r1"])
        assert "no unresolved calls" in capsys.readouterr().out

    def test_tools_from_the_current_folder(
        self,
        db: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """Defect: ``--tools`` could not import a module of the current folder (the
        project's own, as every other TARGET can, and ``python -m`` does): the console
        script's import path does not hold it."""
        project = tmp_path / "project"
        project.mkdir()
        (project / "ledger_cli_cwd_tools.py").write_text(TOOLS_MODULE)
        monkeypatch.chdir(project)
        monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(project))])
        argv = ["ledger", "reconcile", "--db", db, "--run", "r1"]
        try:
            assert 0 == main([*argv, "--tools", "ledger_cli_cwd_tools:TOOLS", "--json"])
        finally:
            sys.modules.pop("ledger_cli_cwd_tools", None)
        expected = {"rerun": ["a"], "interrupted": ["b"], "waiting": []}
        assert expected == json.loads(capsys.readouterr().out)

    def test_tools_from_a_file_as_every_target(
        self, db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``--tools`` takes any TARGET the other verbs take (it had a loader of its own
        that knew modules only): here a file's path, scanned."""
        file = tmp_path / "tools_by_path.py"
        file.write_text(TOOLS_MODULE)
        argv = ["ledger", "reconcile", "--db", db, "--run", "r1", "--tools", str(file)]
        assert 0 == main([*argv, "--json"])
        expected = {"rerun": ["a"], "interrupted": ["b"], "waiting": []}
        assert expected == json.loads(capsys.readouterr().out)

    def test_bad_target_exits_1(self, db: str, capsys: pytest.CaptureFixture[str]) -> None:
        argv = ["ledger", "reconcile", "--db", db, "--run", "r1", "--tools", "no_such_mod_x"]
        assert 1 == main(argv)
        assert "cannot import `no_such_mod_x`" in capsys.readouterr().err

    def test_run_is_required(self, db: str) -> None:
        with pytest.raises(SystemExit) as info:
            main(["ledger", "reconcile", "--db", db])
        assert 2 == info.value.code


#: A run, call and tool as a model or host may send them: a lone surrogate (which
#: SqliteLedger stores on purpose), terminal escape sequences, and a line break that would
#: forge a line of the listing.
ODD_RUN = "run\x1b]0;owned\x07"
ODD_CALL = "c\ud800\x1b[2J\n  c9 (pay): replay-safe, released to run again"
ODD_TOOL = "pay\udcff\x1b[31m"
#: How every verb's human output shows them.
SHOWN_CALL = "c\\ud800\\x1b[2J\\n  c9 (pay): replay-safe, released to run again"
SHOWN_TOOL = "pay\\udcff\\x1b[31m"
#: Arguments holding what JSON text leaves raw unless told: DEL and a C1 control (``\x9b``
#: opens an escape sequence as ``ESC [`` does).
ODD_ARGUMENTS = {"note": "x\ud800\x1b[2J\x9b2J\x7f"}
#: Characters no verb may print raw.
RAW = "\x1b\x07\x9b\x7f"


class TestOddText:
    """Call ids, tool names, run ids and arguments holding a lone surrogate or escapes, on
    the real command line with a strict UTF-8 standard output."""

    @pytest.fixture
    def odd_db(self, tmp_path: Path) -> str:
        path = str(tmp_path / "odd.db")
        with SqliteLedger(path) as ledger:
            ledger.started(ODD_RUN, ODD_CALL, ODD_TOOL, ODD_ARGUMENTS)
        return path

    @pytest.mark.parametrize("verb", [["list"], ["reconcile", "--run", ODD_RUN]])
    def test_human_output(self, odd_db: str, verb: list[str]) -> None:
        """Every verb prints them escaped, one rule for all (before: ``list`` and
        ``reconcile`` died of UnicodeEncodeError, ``reconcile`` after settling the rows,
        and ``reconcile`` printed the escapes raw)."""
        done = run_cli("ledger", *verb, "--db", odd_db, env={"PYTHONIOENCODING": "utf-8"})
        assert (0, "") == (done.returncode, done.stderr)
        assert SHOWN_CALL in done.stdout
        assert SHOWN_TOOL in done.stdout
        assert "run\\x1b]0;owned\\x07" in done.stdout
        assert not any(c in done.stdout for c in RAW)
        assert not any(line.startswith("  c9 (pay)") for line in done.stdout.splitlines())
        assert "interrupted, will not run again" in done.stdout or verb == ["list"]

    @pytest.mark.parametrize("verb", [["list"], ["reconcile", "--run", ODD_RUN]])
    def test_json_output(self, odd_db: str, verb: list[str]) -> None:
        """``--json`` gives them back exactly (the lone surrogate as a JSON escape)."""
        done = run_cli("ledger", *verb, "--db", odd_db, "--json", env={"PYTHONIOENCODING": "utf-8"})
        assert (0, "") == (done.returncode, done.stderr)
        assert not any(c in done.stdout for c in RAW)
        document = json.loads(done.stdout)
        if verb == ["list"]:
            (row,) = document
            assert (ODD_RUN, ODD_CALL, ODD_TOOL) == (
                row["run_id"],
                row["call_id"],
                row["tool_name"],
            )
            assert ODD_ARGUMENTS == row["arguments"]
        else:
            assert {"rerun": [], "interrupted": [ODD_CALL], "waiting": []} == document

    def test_errors_are_escaped_too(self, tmp_path: Path) -> None:
        """What the verbs say on standard error follows the same rule."""
        missing = str(tmp_path / "no\x1b[2J.db")
        done = run_cli("ledger", "list", "--db", missing)
        assert 1 == done.returncode
        assert "no\\x1b[2J.db" in done.stderr
        assert "\x1b" not in done.stderr


def test_postgres_conninfo(postgres: str, run_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A conninfo for --db reads a PostgreSQL ledger."""
    from tinytools.ledger import PostgresLedger

    with PostgresLedger(postgres) as ledger:
        ledger.started(run_id, "p", "pay", {"amount": 2})
    assert 0 == main(["ledger", "list", "--db", postgres, "--run", run_id, "--json"])
    assert ["p"] == [r["call_id"] for r in json.loads(capsys.readouterr().out)]


def test_prune(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert 0 == main(["ledger", "prune", "--db", db, "--older-than", "1", "--json"])
    assert {"deleted": 0} == json.loads(capsys.readouterr().out)
    assert 2 == main(["ledger", "prune", "--db", db, "--older-than", "nan"])
