"""Tests for the public surface of `tinytools`."""

from __future__ import annotations

import subprocess
import sys
import types

import tinytools


class TestExports:
    def test_all_sorted_and_complete(self) -> None:
        """`__all__` is sorted and names exactly the public attributes of the facade."""
        public = {
            name
            for name, value in vars(tinytools).items()
            if not name.startswith("_") and not isinstance(value, type(tinytools))
        }
        assert sorted(tinytools.__all__) == list(tinytools.__all__)
        assert public - {"annotations"} == set(tinytools.__all__)

    def test_classes_report_tinytools(self) -> None:
        """Every exported class and function reports `tinytools` as its module.

        Type aliases (`ApprovalCallback`) are neither and keep their origin's module; before
        Python 3.11 `isinstance(list[int], type)` is True, so generic aliases are left out here.
        """
        for name in tinytools.__all__:
            value = getattr(tinytools, name)
            is_class = isinstance(value, type) and not isinstance(value, types.GenericAlias)
            if is_class or (callable(value) and hasattr(value, "__code__")):
                assert value.__module__ == "tinytools", name

    def test_core_import_is_light(self) -> None:
        """`import tinytools` loads neither hypothesis, psycopg nor CLI-only modules."""
        code = (
            "import sys, tinytools; "
            "print(sorted(m for m in ('hypothesis', 'psycopg', 'tinytools._cli', 'argparse') "
            "if m in sys.modules))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        ).stdout
        assert out.strip() == "[]"
