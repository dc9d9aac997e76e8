"""The ``tinytools`` command line (``tinytools._cli:main``, ``python -m tinytools``).

``app`` parses the command line and runs ``demo`` (over the ``demo`` module's tools),
``cmd_inspect``, ``cmd_call``, ``cmd_check`` (the rules in ``lint``) and ``cmd_ledger``;
``target`` loads a ``module:attribute`` target, ``output`` writes text and JSON that
the terminal's encoding can hold. Nothing here is imported by ``import tinytools``.
"""

from __future__ import annotations

from .app import main as main

__all__ = ["main"]
