"""A Griffe extension for the reference: the package's docstrings as a user reads them.

The package writes its docstrings for readers of the source (Sphinx roles, ``#:``
comments, private base classes); this extension, loaded by mkdocstrings
(``mkdocs.yml``), renders them for readers of the site, changing no source file:

- a ``#:`` comment above a module or class attribute is its docstring (the package
  documents its constants and type aliases that way);
- a Sphinx role (``:class:`Tool```, ``:func:`~tinytools.dispatch```) is a link to the
  reference entry of the object it names, looked up from where the docstring stands;
  an object the reference does not show (a private helper, another package's class)
  is code;
- a private base class is replaced by its own bases (``_Event`` by ``msgspec.Struct``);
- every field of a msgspec Struct or attrs class is in its docstring's Attributes
  table, with its type: those the docstring does not describe are added.

What the reference shows is read from its pages' ``::: identifier`` lines
(``docs/reference``), plus the documented public members of what they name.
"""

from __future__ import annotations

import importlib
import re
import runpy
from collections.abc import Callable, Iterator
from pathlib import Path

import griffe

__all__ = ["PublicReference", "markdown_roles"]


# Griffe loads this file by path, not as a package's module: its sibling is run by path.
entries = runpy.run_path(str(Path(__file__).with_name("reference_entries.py")))["entries"]

#: ``:class:`Tool```, ``:func:`~a.b```, ``:meth:`title <a.b>```: role, then target.
_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj|const):`([^`]+)`")
_TITLED = re.compile(r"^(.*?)\s*<([^<>]+)>$")
_ONE_LINE_ASSIGNMENT = re.compile(r"^\s*[A-Za-z_]\w*\s*(:[^=]+)?=[^=].*[^(\[{,\\]$")


def markdown_roles(text: str, resolve: Callable[[str], str | None]) -> str:
    """``text`` with every Sphinx role as Markdown: ``[`label`][path]`` where ``resolve``
    (target → the reference path showing it, or None) finds one, else ``` `label` ```."""

    def replace(match: re.Match[str]) -> str:
        target = match.group(1).strip()
        titled = _TITLED.match(target)
        title = titled.group(1) if titled else None
        target = titled.group(2) if titled else target
        shorten, target = target.startswith("~"), target.lstrip("~!.")
        label = title or (target.rsplit(".", 1)[-1] if shorten else target)
        path = None if match.group(1).startswith("!") else resolve(target)
        code = label if title else f"`{label}`"
        return f"[{code}][{path}]" if path else code

    return _ROLE.sub(replace, text)


class PublicReference(griffe.Extension):
    """See the module docstring."""

    def on_attribute_instance(
        self, *, node: object, attr: griffe.Attribute, agent: object, **kwargs: object
    ) -> None:
        """Give an attribute its ``#:`` comment as its docstring: the comment right above
        it, or above the run of one-line assignments it ends (``#:`` above
        ``BLOCK_BEGIN = ...`` and ``BLOCK_END = ...`` describes both)."""
        if attr.docstring is not None or attr.lineno is None or attr.parent is None:
            return
        lines = attr.module.lines
        above = attr.lineno - 2  # the line above the assignment, from 0
        while above >= 0 and _ONE_LINE_ASSIGNMENT.match(lines[above]):
            above -= 1
        comment: list[str] = []
        while above >= 0 and lines[above].strip().startswith("#:"):
            comment.insert(0, lines[above].strip()[2:].strip())
            above -= 1
        if comment:
            module_doc = attr.module.docstring
            attr.docstring = griffe.Docstring(
                "\n".join(comment),
                parent=attr,
                parser=module_doc.parser if module_doc else None,
                parser_options=module_doc.parser_options if module_doc else None,
            )

    def on_package(self, *, pkg: griffe.Module, **kwargs: object) -> None:
        """Rewrite every docstring of the package once it is loaded."""
        shown = _Shown(pkg, entries())
        for obj in _objects(pkg):
            if obj.docstring is not None:
                obj.docstring.value = markdown_roles(
                    obj.docstring.value, lambda target, at=obj: shown.find(target, at)
                )
            if isinstance(obj, griffe.Class):
                _public_bases(obj)
                _list_fields(obj)


def _objects(module: griffe.Module) -> Iterator[griffe.Object]:
    """Every object defined in ``module`` and its submodules (not the aliases)."""
    stack: list[griffe.Object] = [module]
    while stack:
        obj = stack.pop()
        yield obj
        stack.extend(member for member in obj.members.values() if not member.is_alias)  # type: ignore[misc]


def _target(obj: griffe.Object | griffe.Alias) -> griffe.Object | None:
    """``obj``, an alias followed to what it names; None when that is not loaded."""
    try:
        return obj.final_target if isinstance(obj, griffe.Alias) else obj
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


class _Shown:
    """Where the reference shows each object: its canonical path → the path it is
    rendered under (``tinytools._spec.Tool`` → ``tinytools.Tool``)."""

    def __init__(self, pkg: griffe.Module, identifiers: dict[str, bool]) -> None:
        self.collection = pkg.modules_collection
        self.paths: dict[str, str] = {}
        #: Entries whose members are not rendered (a module's docstring as a page's intro).
        self.bare = {identifier for identifier, members in identifiers.items() if not members}
        for identifier in identifiers:
            obj = self.get(identifier)
            if obj is None:
                continue
            self.paths.setdefault(obj.path, identifier)
            if identifier in self.bare:
                continue
            if isinstance(obj, griffe.Module):  # a module's entry shows what it exports
                for name in obj.exports or ():
                    member = self.get(f"{identifier}.{name}")
                    if member is not None and member.docstring is not None:
                        self.paths.setdefault(member.path, f"{identifier}.{name}")
        #: An entry's name → the entries of that name (a name that no scope resolves
        #: is looked up here when only one entry has it).
        self.named: dict[str, list[str]] = {}
        for shown in dict.fromkeys(self.paths.values()):
            self.named.setdefault(shown.rsplit(".", 1)[-1], []).append(shown)

    def get(self, path: str) -> griffe.Object | None:
        try:
            return _target(self.collection[path])
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            return None

    def find(self, target: str, at: griffe.Object) -> str | None:
        """The reference path showing ``target`` as written in ``at``'s docstring: an
        absolute path, else a name in ``at``'s scope, else the only entry so named."""
        obj = self.get(target) if "." in target else None
        head, _, rest = target.partition(".")
        if obj is None:
            try:
                path = at.resolve(head)
            except griffe.NameResolutionError:
                path = None
            if path is not None:
                obj = self.get(f"{path}.{rest}" if rest else path)
        if obj is None and len(self.named.get(head, ())) == 1:
            obj = self.get(f"{self.named[head][0]}.{rest}" if rest else self.named[head][0])
        return None if obj is None else self.shown(obj)

    def shown(self, obj: griffe.Object) -> str | None:
        """The path ``obj`` is rendered under: its own entry, or a documented public
        member of an entry (a method of a class, a function of a module)."""
        if obj.path in self.paths:
            return self.paths[obj.path]
        parent = obj.parent
        if parent is None or obj.name.startswith("_") or obj.docstring is None:
            return None
        owner = self.shown(parent) if parent.path not in self.paths else self.paths[parent.path]
        if owner is None or owner in self.bare:
            return None
        if parent.is_module and parent.exports is not None and obj.name not in parent.exports:
            return None
        return f"{owner}.{obj.name}"


def _public_bases(cls: griffe.Class) -> None:
    """Replace each private base class of ``cls`` by its own bases."""
    bases: list[str | griffe.Expr] = []
    for base in cls.bases:
        path = base.canonical_path if isinstance(base, griffe.Expr) else str(base)
        name = path.rsplit(".", 1)[-1]
        parent = _base_class(cls, path) if name.startswith("_") else None
        if parent is None:
            bases.append(base)
        else:
            _public_bases(parent)
            bases.extend(parent.bases)
    cls.bases = bases


def _base_class(cls: griffe.Class, path: str) -> griffe.Class | None:
    try:
        found = _target(cls.modules_collection[path])
    except (KeyError, ValueError):
        return None
    return found if isinstance(found, griffe.Class) else None


def _list_fields(cls: griffe.Class) -> None:
    """Add the fields of a Struct or attrs class that its docstring does not describe
    to its Attributes section, with their types."""
    fields = _runtime_fields(cls)
    if not fields or cls.docstring is None:
        return
    sections = cls.docstring.parsed
    described = {
        item.name
        for section in sections
        if section.kind
        in (griffe.DocstringSectionKind.attributes, griffe.DocstringSectionKind.parameters)
        for item in section.value
    }
    missing = [
        griffe.DocstringAttribute(
            name,
            description="",
            annotation=cls.members[name].annotation if name in cls.members else None,  # type: ignore[union-attr]
        )
        for name in fields
        if name not in described
        and not name.startswith("_")
        and not (name in cls.members and cls.members[name].docstring is not None)
    ]
    if not missing:
        return
    for section in sections:
        if section.kind is griffe.DocstringSectionKind.attributes:
            section.value.extend(missing)
            return
    sections.append(griffe.DocstringSectionAttributes(missing))


def _runtime_fields(cls: griffe.Class) -> tuple[str, ...]:
    """The fields of ``cls`` if it is a msgspec Struct or an attrs class (as their
    constructors name them), else none."""
    try:
        value = getattr(importlib.import_module(cls.module.path), cls.name)
    except (ImportError, AttributeError):
        return ()
    struct_fields = getattr(value, "__struct_fields__", None)
    if isinstance(struct_fields, tuple):
        return struct_fields
    attrs_fields = getattr(value, "__attrs_attrs__", None)
    if attrs_fields is not None:
        return tuple(field.name for field in attrs_fields if field.init)
    return ()
