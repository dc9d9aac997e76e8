"""Tool definitions in the Berkeley Function Calling Leaderboard (BFCL) dialect.

BFCL ("gorilla" format) writes parameter schemas in a JSON-Schema look-alike
(``"dict"`` for objects, Python and Java type names). :func:`schema_from_bfcl`
maps one such schema to JSON Schema; :func:`tool_from_bfcl` builds a
schema-only ``Tool`` from one BFCL function definition. Import-only: a model is
never asked to write this dialect.
"""

from __future__ import annotations

from tinytools._declare.foreign import schema_from_bfcl as schema_from_bfcl
from tinytools._declare.foreign import tool_from_bfcl as tool_from_bfcl

__all__ = ["schema_from_bfcl", "tool_from_bfcl"]
