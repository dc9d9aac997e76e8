"""A stand-in for torch, which xgrammar's package imports for tensor helpers that the
structural-tag checks never call (``nox -s xgrammar``; see ``tests/formats/constraints.py``).
What it is asked for loads: a name is a stand-in that can be called, asked for an attribute
or used in an annotation; the types xgrammar annotates with are classes."""

from __future__ import annotations


class _StandIn:
    def __getattr__(self, name: str) -> _StandIn:
        if name.startswith("__"):
            raise AttributeError(name)
        return _StandIn()

    def __call__(self, *args: object, **kwargs: object) -> _StandIn:
        return _StandIn()

    def __or__(self, other: object) -> _StandIn:
        return self

    __ror__ = __or__


class Tensor:
    pass


class dtype:
    pass


class device:
    pass


def __getattr__(name: str) -> _StandIn:
    if name.startswith("__"):
        raise AttributeError(name)
    return _StandIn()
