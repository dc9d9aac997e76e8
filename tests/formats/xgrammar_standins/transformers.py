"""A stand-in for transformers, which xgrammar's package imports for helpers that the
structural-tag checks never call (``nox -s xgrammar``; see ``tests/formats/constraints.py``).
Any name it is asked for is a class of that name, so such imports and annotations load."""

from __future__ import annotations


def __getattr__(name: str) -> type:
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (), {})
