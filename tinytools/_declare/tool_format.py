"""How a tool prefers to be shown to a model: :data:`ToolFormat`.

The execution boundary is always one typed shape (a ``ToolCall`` with a JSON
object of arguments); the format only decides how the declaration is rendered
and how the model's emission is parsed back:

* :class:`Json` — native function calling, the default;
* :class:`Xml` — ``<tool_name><field>value</field></tool_name>`` in text;
* :class:`PType` — ``search("rust agents", 5)``: positional values mapped back
  to ``parameters`` in order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias

import attrs

__all__ = ["Json", "PType", "ToolFormat", "Xml"]


@attrs.frozen
class Json:
    """JSON / native function-call format (the default)."""


@attrs.frozen
class Xml:
    """XML tag format: ``<tool_name><field>value</field></tool_name>``."""


def _names(value: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        raise TypeError("PType parameters must be a sequence of names, not one string")
    return tuple(value)


@attrs.frozen
class PType:
    """Parametric call format, ``search("rust agents", 5)``.

    Attributes:
        parameters: The field names positional values map to, in order.
    """

    parameters: tuple[str, ...] = attrs.field(converter=_names)


#: A tool's preferred rendering.
ToolFormat: TypeAlias = Json | Xml | PType
