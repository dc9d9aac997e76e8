"""A module ``__getattr__`` for the stand-ins of packages xgrammar imports but whose names
the structural-tag checks never use (``nox -s xgrammar``; see ``tests/formats/constraints.py``):
every name asked for is a class of that name, so imports and annotations load."""

from __future__ import annotations


def __getattr__(name: str) -> type:
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (), {})
