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
from typing import NamedTuple

from tinytools._wire import ToolCall

__all__ = ["Parsed", "id_prefix", "synthetic_id"]


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


def id_prefix(text: str) -> str:
    """What every synthetic id of calls found in ``text`` starts with (hash it once)."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()
    return f"call_{digest}"


def synthetic_id(text: str, index: int) -> str:
    """A deterministic call id for the ``index``-th call found in ``text``."""
    return f"{id_prefix(text)}_{index}"
