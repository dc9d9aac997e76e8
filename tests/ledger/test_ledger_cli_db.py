"""Tests for how `tinytools ledger` reads ``--db``: a mistyped URI is refused, never echoed
with its password."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinytools._cli import main
from tinytools.ledger import SqliteLedger

PASSWORD = "hunter22"


class TestUriTypos:
    """Defect: a ``--db`` like ``postgresq://alice:hunter22@…``, ``POSTGRESQL://…`` or
    ``postgresql:/…`` was taken for a SQLite path and echoed whole, password included, on
    standard error (into CI logs)."""

    @pytest.mark.parametrize(
        "db",
        [
            f"postgresq://alice:{PASSWORD}@dbhost/app",
            f"POSTGRESQL://alice:{PASSWORD}@dbhost/app",
            f"Postgres://alice:{PASSWORD}@dbhost/app",
            f"postgresql:/alice:{PASSWORD}@dbhost/app",
            f"postgresql+psycopg://alice:{PASSWORD}@dbhost/app",
        ],
    )
    @pytest.mark.parametrize("action", [["list"], ["reconcile", "--run", "r1"]])
    def test_near_misses_name_the_uri_meant(
        self, db: str, action: list[str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A usage error (exit 2) suggesting the PostgreSQL URI, the password hidden."""
        assert 2 == main(["ledger", *action, "--db", db])
        err = capsys.readouterr().err
        assert "did you mean postgresql://alice:***@dbhost/app?" in err
        assert PASSWORD not in err

    @pytest.mark.parametrize(
        "db",
        [
            f"mysql://root:{PASSWORD}@dbhost/app",
            f"alice:{PASSWORD}@dbhost/app",
            f"postgresq://alice:pa@ss:{PASSWORD}@dbhost/app",
            f"postgresq://alice:pa?{PASSWORD}@dbhost/app",
            f"postgresq://dbhost/app?password={PASSWORD}",
            f"postgresq://dbhost/app?password=a@{PASSWORD}",
            f"postgresq://alice:pa/{PASSWORD}@dbhost/app",
            f"postgresql:alice:{PASSWORD}@dbhost",
        ],
    )
    def test_no_password_is_echoed(self, db: str, capsys: pytest.CaptureFixture[str]) -> None:
        """Whatever the URI's shape, its password, query and odd user info stay hidden
        (the user name shows only where it cannot be the password)."""
        assert 2 == main(["ledger", "list", "--db", db])
        err = capsys.readouterr().err
        assert "--db " in err
        assert PASSWORD not in err

    def test_another_scheme_is_no_sqlite_file(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A URI of another scheme says what --db takes."""
        assert 2 == main(["ledger", "list", "--db", "sqlite:///tmp/ledger.db"])
        assert "is a URI, not a SQLite file" in capsys.readouterr().err

    @pytest.mark.parametrize("name", ["notes:v2.db", "C:/ledger.db"])
    def test_paths_with_a_colon_stay_paths(
        self,
        name: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A file name with a colon (a Windows drive) is still looked for as a file."""
        monkeypatch.chdir(tmp_path)
        assert 1 == main(["ledger", "list", "--db", name])
        assert "no ledger file at" in capsys.readouterr().err

    def test_an_existing_file_is_opened(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A file that exists under a URI-like name is the ledger it names."""
        monkeypatch.chdir(tmp_path)
        (tmp_path / "backup:").mkdir()
        with SqliteLedger("backup:/a@b.db") as ledger:
            ledger.started("r1", "c1", "pay", {})
        assert 0 == main(["ledger", "list", "--db", "backup:/a@b.db"])
        assert "1 unresolved call(s)" in capsys.readouterr().out
