"""The ``TARGET`` of ``tinytools inspect|call|check``: where to find the tools, and loading them.

A target is one of:

* ``package.module`` — the module is imported and scanned: every module-level
  ``Tool``, ``Registry``, toolset and list or tuple of ``Tool`` is taken, in
  definition order;
* ``package.module:attribute`` (``attribute`` may be dotted) — that one object:
  a ``Tool``, a ``Registry``, a toolset, or a list or tuple of ``Tool``;
* ``path/to/file.py`` (optionally ``path/to/file.py:attribute``) — the file is
  imported (as its package's module when it sits in a package, so relative
  imports work) and scanned or looked up as above;
* ``path/to/folder`` — every ``.py`` file under it (hidden folders,
  ``__pycache__`` and virtual environments skipped), each scanned.

A *toolset* is duck-typed, so any adaptor works, today's and tomorrow's: an
object (not a class) with a ``tools(context)`` method returning ``Tool``\\ s.
When a module is scanned, only objects that also have an ``explain`` method
(the ``Toolset`` protocol) are taken, so that an unrelated object with a
``tools`` attribute is never called; named as ``module:attribute``, any object
with ``tools`` is. ``tools`` is called with a ``Context(run_id="tinytools-cli")``
when it takes an argument.

As ``python -m`` does, the current directory is put on ``sys.path`` first, so
``tinytools check myproject.tools`` works from a project's root.

A tool found through several names (a module-level tool that a registry also
holds) counts once. Each found tool carries the file and line to report it at:
the line that binds its module-level name, else its function's ``def``, else the
line binding the container it was found in.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import re
import sys
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType

import attrs

from tinytools._declare.registry import AnyTool
from tinytools._declare.spec import Tool

__all__ = ["Broken", "Found", "Loaded", "TargetError", "load", "put_cwd_on_path", "target_help"]

#: What every "bad target" message ends with, so the user knows the accepted forms.
target_help = (
    "TARGET is a module (`package.module`), `module:attribute` naming a Tool, Registry, "
    "toolset or list of Tools, or the path of a .py file or of a folder"
)

_ATTRIBUTE = re.compile(r"^[A-Za-z_][\w.]*$")
_SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages", "venv", "env"})


class TargetError(Exception):
    """The target cannot be used at all (missing module or file, wrong kind of object)."""


@attrs.frozen
class Found:
    """A tool and where to report it.

    Attributes:
        tool: The tool.
        path: The file, relative to the current directory when under it.
        line: The line in ``path`` (1-based).
        via: How it was reached, as ``module:attribute``.
    """

    tool: AnyTool
    path: str
    line: int
    via: str


@attrs.frozen
class Broken:
    """A file of the target that could not be imported (``check`` reports it, goes on).

    Attributes:
        path: The file.
        line: The line the import failed at in that file (1 when unknown).
        message: What went wrong.
    """

    path: str
    line: int
    message: str


@attrs.frozen
class Loaded:
    """Everything a target gave."""

    found: tuple[Found, ...]
    broken: tuple[Broken, ...]
    files: int


def load(target: str) -> Loaded:
    """Import ``target`` and collect its tools.

    Raises:
        TargetError: The module, file or attribute does not exist, or the
            attribute is not a tool, registry, toolset or list of tools. A
            single module or file that fails while importing is a
            ``TargetError`` too; in a folder it is a :class:`Broken` entry.
    """
    put_cwd_on_path()
    location, attribute = _split(target)
    path = Path(location)
    if path.is_dir() and attribute is None:
        return _load_folder(path)
    if location.endswith(".py") or os.sep in location or "/" in location or path.exists():
        if not path.is_file():
            raise TargetError(f"no such file or folder: {location}. {target_help}")
        module = _import_file(path)
    else:
        module = _import_module(location)
    if isinstance(module, Broken):
        raise TargetError(f"{module.path}:{module.line}: {module.message}")
    collector = _Collector(module)
    if attribute is None:
        collector.scan()
    else:
        collector.take(attribute)
    return Loaded(tuple(collector.found), (), 1)


def put_cwd_on_path() -> None:
    """Put the current directory first on ``sys.path``, as ``python -m`` does."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def _split(target: str) -> tuple[str, str | None]:
    """``module:attribute`` → both; a Windows drive (``C:\\x``) is not an attribute."""
    location, colon, attribute = target.rpartition(":")
    if colon and location and _ATTRIBUTE.match(attribute):
        return location, attribute
    return target, None


def _load_folder(folder: Path) -> Loaded:
    found: list[Found] = []
    broken: list[Broken] = []
    files = sorted(_python_files(folder))
    seen: set[int] = set()
    for file in files:
        module = _import_file(file)
        if isinstance(module, Broken):
            broken.append(module)
            continue
        collector = _Collector(module, seen)
        collector.scan()
        found.extend(collector.found)
    return Loaded(tuple(found), tuple(broken), len(files))


def _python_files(folder: Path) -> Iterator[Path]:
    for root, folders, names in os.walk(folder):
        folders[:] = [
            f
            for f in folders
            if not f.startswith(".") and f not in _SKIPPED_FOLDERS and not f.endswith(".egg-info")
        ]
        yield from (Path(root, name) for name in names if name.endswith(".py"))


def _import_module(name: str) -> ModuleType | Broken:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name is not None and (name == error.name or name.startswith(f"{error.name}.")):
            raise TargetError(
                f"cannot import `{name}`: no module named `{error.name}` "
                f"(run from the folder that holds it, or install it). {target_help}"
            ) from None
        return _broken(name, _spec_file(name), error)
    except Exception as error:
        return _broken(name, _spec_file(name), error)


def _spec_file(name: str) -> str | None:
    module = sys.modules.get(name)
    file = getattr(module, "__file__", None)
    if isinstance(file, str):
        return file
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None else None


def _import_file(path: Path) -> ModuleType | Broken:
    """Import a file: as ``package.module`` inside a package, else under a private name."""
    path = path.resolve()
    package_root, dotted = _package_name(path)
    if dotted is not None:
        if str(package_root) not in sys.path:
            sys.path.insert(0, str(package_root))
        module = _import_module(dotted)
        if isinstance(module, ModuleType):
            file = getattr(module, "__file__", None)
            if file is None or Path(file).resolve() != path:
                raise TargetError(
                    f"{_shown(path)} is the module `{dotted}`, but importing `{dotted}` "
                    f"gives {file or 'a module without a file'}; rename one of them"
                )
        return module
    stem = re.sub(r"\W", "_", path.stem)
    name = f"_tinytools_target_{len(sys.modules)}_{stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py path always has one
        raise TargetError(f"cannot import {_shown(path)}")
    module = importlib.util.module_from_spec(spec)
    # Registered while it runs (and after): type hints are resolved through its name.
    sys.modules[name] = module
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # as running the file would: its siblings import
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        return _broken(_shown(path), str(path), error)
    return module


def _package_name(path: Path) -> tuple[Path, str | None]:
    """The folder to import from and the dotted name, when ``path`` is in a package."""
    parts = [path.stem] if path.name != "__init__.py" else []
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if path.name == "__init__.py" or len(parts) > 1:
        return folder, ".".join(parts)
    return folder, None


def _broken(name: str, file: str | None, error: BaseException) -> Broken:
    line = 1
    if file is not None:
        resolved = str(Path(file).resolve())
        for frame in traceback.extract_tb(error.__traceback__):
            if str(Path(frame.filename).resolve()) == resolved and frame.lineno:
                line = frame.lineno
    if isinstance(error, SyntaxError) and error.lineno and error.filename == file:
        line = error.lineno
    message = f"importing {name} raised {type(error).__name__}: {error}"
    return Broken(_shown(Path(file)) if file else name, line, message)


def _shown(path: Path) -> str:
    """``path`` relative to the current directory when under it (as linters print it)."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class _Collector:
    """Collects the tools of one module, each with the line to report it at."""

    def __init__(self, module: ModuleType, seen: set[int] | None = None) -> None:
        self.module = module
        self.found: list[Found] = []
        self._seen = seen if seen is not None else set()
        file = getattr(module, "__file__", None)
        self._file = Path(file).resolve() if isinstance(file, str) else None
        self._path = _shown(self._file) if self._file else module.__name__
        self._lines = _bindings(self._file)
        # A file imported under a private name is shown by its path.
        private = module.__name__.startswith("_tinytools_target_")
        self._label = self._path if private else module.__name__

    def scan(self) -> None:
        for name, value in list(vars(self.module).items()):
            if name.startswith("__") or isinstance(value, (type, ModuleType)):
                continue
            tools = _tools_of(value, strict=False)
            if tools is not None:
                self._add(name, value, tools)

    def take(self, attribute: str) -> None:
        value: object = self.module
        for part in attribute.split("."):
            if not hasattr(value, part):
                where = self._label if value is self.module else repr(value)
                raise TargetError(
                    f"`{where}` has no attribute `{part}`{_did_you_mean(part, value)}. "
                    f"{target_help}"
                )
            value = getattr(value, part)
        tools = _tools_of(value, strict=True)
        if tools is None:
            what = type(value).__name__
            hint = "; decorate it with @tool" if callable(value) else ""
            raise TargetError(
                f"`{self._label}:{attribute}` is a {what}, not a Tool, Registry, "
                f"toolset (an object with a tools(context) method) or list of Tools{hint}"
            )
        self._add(attribute, value, tools)

    def _add(self, name: str, container: object, tools: Iterable[AnyTool]) -> None:
        bound = self._lines.get(name.split(".")[0], 1)
        for tool in tools:
            if id(tool) in self._seen:
                continue
            self._seen.add(id(tool))
            path, line = self._path, bound
            if tool is not container:
                path, line = _function_line(tool) or (self._path, bound)
            via = f"{self._label}:{name}"
            self.found.append(Found(tool, path, line, via))


def _tools_of(value: object, *, strict: bool) -> tuple[AnyTool, ...] | None:
    """The tools ``value`` stands for, or ``None`` when it is not a tool container."""
    if isinstance(value, Tool):
        return (value,)
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(item, Tool) for item in value):
            return tuple(value)
        return None
    if isinstance(value, (type, ModuleType)):
        return None
    method = getattr(value, "tools", None)
    if not callable(method) or not (strict or callable(getattr(value, "explain", None))):
        return None
    try:
        items = _call_tools(method)
    except Exception as error:
        raise TargetError(f"{value!r}.tools() raised {type(error).__name__}: {error}") from None
    tools = tuple(item for item in items if isinstance(item, Tool))
    if len(tools) < len(items):
        bad = next(item for item in items if not isinstance(item, Tool))
        raise TargetError(f"{value!r}.tools() returned {bad!r}, which is not a Tool")
    return tools


def _call_tools(method: object) -> list[object]:
    from tinytools._inject import Context

    assert callable(method)
    try:
        takes_context = bool(inspect.signature(method).parameters)
    except (TypeError, ValueError):
        takes_context = False
    result = method(Context(run_id="tinytools-cli")) if takes_context else method()
    return list(result)


def _function_line(tool: AnyTool) -> tuple[str, int] | None:
    """The file and ``def`` line of the tool's function, when it has Python source."""
    fn = inspect.unwrap(tool.fn) if tool.fn is not None else None
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    return _shown(Path(code.co_filename)), code.co_firstlineno


def _bindings(file: Path | None) -> dict[str, int]:
    """Each module-level name and the line of its last binding (``def`` line for functions)."""
    if file is None or file.suffix != ".py":
        return {}
    try:
        tree = ast.parse(file.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return {}
    lines: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            lines[node.name] = node.lineno
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        lines[name.id] = node.lineno
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            lines[node.target.id] = node.lineno
    return lines


def _did_you_mean(name: str, owner: object) -> str:
    import difflib

    close = difflib.get_close_matches(name, [n for n in dir(owner) if not n.startswith("__")], 3)
    return f" (did you mean {', '.join(f'`{c}`' for c in close)}?)" if close else ""
