"""Redaction: argument values a tool's policy marks secret never leave admission.

``ToolPolicy.redact`` lists argument names (``password``, matched at any
depth) and ``$``-rooted paths (``$.auth.token``, matched exactly). Their
values are replaced by :data:`MARKER` wherever tinytools would otherwise
repeat the arguments: events, the effect ledger, and error messages that
echo what the model sent. The tool itself still receives the real values.

Raw argument text that cannot be decoded is replaced whole when the tool
redacts anything: a broken document cannot be redacted field by field.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from ._registry import AnyTool

__all__ = ["MARKER", "Redactor", "shown_arguments"]

#: What a redacted value is replaced with.
MARKER = "[redacted]"


class Redactor:
    """Redacts the values at one tool's redaction paths."""

    __slots__ = ("_names", "_paths")

    def __init__(self, paths: tuple[str, ...]) -> None:
        self._names = frozenset(p for p in paths if not p.startswith("$"))
        self._paths = frozenset(p for p in paths if p.startswith("$"))

    def _hit(self, key: str, path: str) -> bool:
        return key in self._names or path in self._paths

    def arguments(self, value: Mapping[str, object]) -> tuple[dict[str, object], list[object]]:
        """A redacted copy of ``value`` and the secret values it held (no recursion)."""
        secrets: list[object] = []
        root: dict[str, object] = dict(value)
        stack: list[tuple[object, str]] = [(root, "$")]
        while stack:
            node, path = stack.pop()
            if isinstance(node, dict):
                for key, item in list(node.items()):
                    child = f"{path}.{key}"
                    if self._hit(str(key), child):
                        secrets.append(item)
                        node[key] = MARKER
                    else:
                        node[key] = self._descend(item, child, stack)
            elif isinstance(node, list):
                for index, item in enumerate(node):
                    node[index] = self._descend(item, f"{path}[{index}]", stack)
        return root, secrets

    @staticmethod
    def _descend(item: object, path: str, stack: list[tuple[object, str]]) -> object:
        """A copy of a container to walk later (so the caller's value is never changed)."""
        if isinstance(item, dict):
            item = dict(item)
        elif isinstance(item, list):
            item = list(item)
        else:
            return item
        stack.append((item, path))
        return item

    def raw(
        self, arguments: dict[str, object] | str
    ) -> tuple[dict[str, object] | str, list[object]]:
        """Redacted arguments in their own shape (decoded object or raw text)."""
        if isinstance(arguments, dict):
            return self.arguments(arguments)
        try:
            decoded = msgspec.json.decode(arguments)
        except (msgspec.DecodeError, UnicodeError, RecursionError):
            return MARKER, [arguments]
        if not isinstance(decoded, dict):
            return arguments, []
        redacted, secrets = self.arguments(decoded)
        # The same secret may stand in another field too: scrub the whole text.
        return self.scrub(msgspec.json.encode(redacted).decode(), secrets), secrets

    @staticmethod
    def scrub(text: str, secrets: list[object]) -> str:
        """``text`` with every secret's text form replaced by the marker."""
        for secret in secrets:
            if secret == MARKER:
                continue
            if isinstance(secret, (dict, list)):
                forms = [msgspec.json.encode(secret).decode()]
            elif isinstance(secret, str):
                forms = [secret, msgspec.json.encode(secret).decode()[1:-1]]
            else:
                forms = [str(secret)]
            for form in forms:
                if form:
                    text = text.replace(form, MARKER)
        return text


def shown_arguments(tool: AnyTool, arguments: dict[str, object]) -> dict[str, object]:
    """A call's validated arguments as events and the ledger may show them (the tool's
    redactor is built once, with its plan)."""
    redactor = tool._plan.redactor
    return arguments if redactor is None else redactor.arguments(arguments)[0]
