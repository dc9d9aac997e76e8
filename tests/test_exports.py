"""Tests for the public surface of `tinytools`."""

from __future__ import annotations

import ast
import subprocess
import sys
import types
from pathlib import Path

import pytest

import tinytools


class TestExports:
    def test_all_sorted_and_complete(self) -> None:
        """`__all__` is sorted and names exactly the public attributes of the facade, which
        `dir()` lists (loaded or not yet)."""
        public = {
            name
            for name in dir(tinytools)
            if not name.startswith("_")
            and not isinstance(getattr(tinytools, name), type(tinytools))
        }
        assert sorted(tinytools.__all__) == list(tinytools.__all__)
        assert public - {"annotations"} == set(tinytools.__all__)

    def test_unknown_name(self) -> None:
        """A name the facade does not have is an AttributeError that names it."""
        with pytest.raises(AttributeError, match="'tinytools' has no attribute 'Toolz'"):
            tinytools.Toolz  # noqa: B018

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


def _loaded_after(code: str, prefixes: tuple[str, ...]) -> list[str]:
    """The modules starting with one of ``prefixes`` that a fresh interpreter has loaded
    once it ran ``code``."""
    probe = (
        f"{code}\nimport sys\nprint(sorted(m for m in sys.modules if m.startswith({prefixes!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout
    return [name for name in out.strip().strip("[]").replace("'", "").split(", ") if name]


#: What `import tinytools` must leave alone: event loops and every optional layer.
_LAYERS = (
    "asyncio",
    "trio",
    "anyio",
    "sniffio",
    "tinytools.formats",
    "tinytools.toolsets",
    "tinytools.ledger",
    "tinytools.discovery",
    "tinytools.testing",
)


class TestLazyImports:
    def test_import_loads_no_layer(self) -> None:
        """`import tinytools` loads no event loop, format, toolset, ledger or discovery
        module (each name's module is imported when the name is first read)."""
        assert [] == _loaded_after("import tinytools", _LAYERS)

    def test_declaring_loads_no_event_loop(self) -> None:
        """Declaring and validating tools loads no event loop nor any optional layer."""
        code = (
            "from tinytools import Registry, Tool, ToolCall, ToolPolicy, tool\n"
            "@tool\n"
            "def add(a: int, b: int) -> int:\n"
            "    return a + b\n"
            "echo = Tool.from_schema('echo', 'Echo.', {'type': 'object'})\n"
            "assert Registry.of(add, echo).get('add').validate('{\"a\": 1, \"b\": 2}')"
        )
        assert [] == _loaded_after(code, _LAYERS)

    def test_type_checkers_see_every_name(self) -> None:
        """Each exported name is imported for type checkers (`X as X`, under TYPE_CHECKING)
        from the very module it is loaded from at run time."""
        tree = ast.parse(Path(tinytools.__file__).read_text(encoding="utf-8"))
        seen = {
            alias.asname: "." * node.level + (node.module or "")
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level
            for alias in node.names
            if alias.asname == alias.name
        }
        assert dict(tinytools._HOMES) == seen
        assert sorted(seen) == list(tinytools.__all__)

    def test_every_name_loads(self) -> None:
        """Every exported name is there on first read in a fresh interpreter, a class
        reporting `tinytools` as its module (type aliases keep their origin's; before
        Python 3.11 a generic alias passes for a class)."""
        code = (
            "import types, tinytools\n"
            "for name in tinytools.__all__:\n"
            "    value = getattr(tinytools, name)\n"
            "    assert name in vars(tinytools), name\n"
            "    if isinstance(value, type) and not isinstance(value, types.GenericAlias):\n"
            "        assert value.__module__ == 'tinytools', name"
        )
        subprocess.run([sys.executable, "-c", code], check=True)
