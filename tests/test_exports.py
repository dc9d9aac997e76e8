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

    def test_one_approval_vocabulary(self) -> None:
        """Allow, Deny and Defer are the only approval outcomes; the old names are gone."""
        assert {"Allow", "Deny", "Defer"} <= set(tinytools.__all__)
        assert not {"Approved", "Reject"} & set(dir(tinytools))
        from tinytools import _human, _middleware

        assert tinytools.Deny is _middleware.Deny
        assert (tinytools.Allow, tinytools.Defer) == (_middleware.Allow, _middleware.Defer)
        assert not hasattr(_human, "Allow") or _human.Allow is tinytools.Allow

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
        """`import tinytools` loads neither hypothesis, psycopg, CLI-only modules, nor the
        event-loop and schema-compiler packages a sync-only user never needs."""
        heavy = (
            "hypothesis",
            "psycopg",
            "tinytools._cli",
            "argparse",
            "trio",
            "anyio",
            "fastjsonschema",
            "re2",
        )
        code = f"import sys, tinytools; print(sorted(m for m in {heavy!r} if m in sys.modules))"
        out = subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        ).stdout
        assert out.strip() == "[]"

    def test_sync_dispatch_stays_light(self) -> None:
        """A dispatch_sync of sync tools (schema-built ones included) loads no event loop."""
        code = (
            "import sys, tinytools as t\n"
            "@t.tool\n"
            "def add(a: int, b: int) -> int:\n"
            "    return a + b\n"
            "echo = t.Tool.from_schema('echo', 'Echo.', {'type': 'object'}, fn=lambda **kw: kw)\n"
            "calls = [t.ToolCall('1', 'add', '{\"a\": 1, \"b\": 2}'),\n"
            "         t.ToolCall('2', 'echo', {})]\n"
            "result = t.dispatch_sync(calls, [add, echo])\n"
            "assert [m.content for m in result.messages] == ['3', '{}']\n"
            "print(sorted(m for m in ('trio', 'anyio') if m in sys.modules))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        ).stdout
        assert out.strip() == "[]"
