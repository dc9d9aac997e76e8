"""What a text-dialect parser returns: :class:`Parsed`.

Calls found in model text have no provider ids, so each gets a synthetic,
deterministic id (:func:`synthetic_id`): the same text always parses to the
same ids, and ids from different turns do not collide in practice.

A fragment that looks like a call but cannot be parsed is not dropped: it is
returned in ``errors`` as a ``ToolCall`` whose ``invalid`` says what was
wrong and whose ``arguments`` keep the raw fragment, under a synthetic id of
its own — so dispatch answers it with an error message and the model learns
its call did not go through. Its ``name`` is the name the model wrote when
one could be read, else ``""`` (parsers never invent a name).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import NamedTuple

from tinytools import _unread
from tinytools._wire import ToolCall

__all__ = ["Parsed", "SyntheticIds", "is_synthetic", "synthetic_id"]


class Parsed(NamedTuple):
    """The result of parsing model text in one dialect.

    Attributes:
        calls: The well-formed calls, in the order they appear.
        text: The remaining prose, with the calls (and broken fragments) cut out.
        errors: Broken fragments, as invalid ``ToolCall``s (see the module doc).
    """

    calls: tuple[ToolCall, ...]
    text: str
    errors: tuple[ToolCall, ...]


class SyntheticIds:
    """The synthetic ids of one text's calls: ``ids(index)`` is ``synthetic_id(text, index)``.

    The text is made (``text`` may be a function returning it) and hashed only when a
    call first needs an id, and only once: a provider response whose calls all carry
    ids is never encoded for this.
    """

    __slots__ = ("_prefix", "_text")

    def __init__(self, text: str | Callable[[], str]) -> None:
        self._text = text
        self._prefix: str | None = None

    def __call__(self, index: int) -> str:
        if self._prefix is None:
            text = self._text if isinstance(self._text, str) else self._text()
            digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6)
            self._prefix = f"call_{digest.hexdigest()}"
        return f"{self._prefix}_{index}"


def synthetic_id(text: str, index: int) -> str:
    """A deterministic call id for the ``index``-th call found in ``text``."""
    return SyntheticIds(text)(index)


def is_synthetic(call_id: str) -> bool:
    """Whether ``call_id`` has the form :func:`synthetic_id` gives (a provider never sent it)."""
    return _unread.is_synthetic(call_id)
