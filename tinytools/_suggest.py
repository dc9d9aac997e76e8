"""Suggestions for an unknown tool name: a few callable names close to it, cheaply.

A model that misspells a tool is told at most :data:`LIMIT` names, never the whole
registry (at 10,000 tools that would be a 160 KB message). The names come from a
:class:`NameIndex` built once per ``Registry`` on the first unknown call, so one
lookup costs about the same at 10 tools and at 10,000:

* first the *variants* of the requested name — the same name but for case,
  surrounding whitespace and ``-`` versus ``_`` — which are almost surely meant;
* then names sharing words with it (snake_case, kebab-case, camelCase and digit
  runs split), rarest shared word first, scanning at most :data:`SCAN` names;
* among at most :data:`SMALL` candidates (a small registry, or a small advertised
  set or allow-list), also near-misspellings (``difflib``).

Only names the caller says the model may call this turn are ever suggested.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Iterable

__all__ = ["LIMIT", "SCAN", "SMALL", "NameIndex", "normalize", "words"]

#: The most names one message suggests.
LIMIT = 5
#: The most indexed names one lookup looks at.
SCAN = 64
#: Up to this many candidates, every one is compared (misspellings included).
SMALL = 64

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
#: The longest requested name looked at (a model may send any text as a name).
_LONGEST = 256


def normalize(name: str) -> str:
    """The form variants share: trimmed, lower case, ``-`` and spaces read as ``_``."""
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def words(name: str) -> frozenset[str]:
    """The lower-case words of a name (``getUserID2`` → get, user, id, 2)."""
    return frozenset(w.lower() for w in _WORDS.findall(name[:_LONGEST]))


class NameIndex:
    """Registered names by normalized form and by word, built once.

    Args:
        names: The registered names, in registration order.
    """

    __slots__ = ("_by_key", "_by_word", "_order", "_words")

    def __init__(self, names: Iterable[str]) -> None:
        self._order: dict[str, int] = {}
        self._words: dict[str, frozenset[str]] = {}
        self._by_key: dict[str, list[str]] = {}
        self._by_word: dict[str, list[str]] = {}
        for position, name in enumerate(names):
            self._order[name] = position
            self._by_key.setdefault(normalize(name), []).append(name)
            self._words[name] = found = words(name)
            for word in found:
                self._by_word.setdefault(word, []).append(name)

    def variants(self, name: str) -> tuple[str, ...]:
        """Registered names equal to ``name`` but for case, whitespace and ``-``/``_``."""
        return tuple(self._by_key.get(normalize(name[:_LONGEST]), ()))

    def suggest(
        self,
        name: str,
        may_call: Callable[[str], bool],
        among: Collection[str] | None = None,
    ) -> list[str]:
        """At most :data:`LIMIT` names close to ``name`` that ``may_call`` accepts, best first.

        Args:
            name: The requested (unknown) name.
            may_call: Whether the model may call a name this turn.
            among: When the callable names are known to be few (an advertised set,
                an allow-list), just those: each is compared.
        """
        chosen = [n for n in self.variants(name) if n != name and may_call(n)]
        wanted = words(name)
        if among is None and len(self._order) <= SMALL:
            among = self._order.keys()
        if among is not None and len(among) <= SMALL:
            pool = [n for n in among if n in self._order]
        else:
            pool = self._scan(wanted)
        ranked = sorted(
            (n for n in pool if n not in chosen and n != name),
            key=lambda n: (-len(wanted & self._words[n]), self._order[n]),
        )
        close = [n for n in ranked if wanted & self._words[n]]
        if among is not None and len(pool) <= SMALL:
            close += difflib.get_close_matches(name[:_LONGEST], ranked, n=LIMIT, cutoff=0.7)
        for candidate in close:
            if len(chosen) >= LIMIT:
                break
            if candidate not in chosen and may_call(candidate):
                chosen.append(candidate)
        return chosen[:LIMIT]

    def _scan(self, wanted: frozenset[str]) -> list[str]:
        """Names sharing a word with ``wanted``: rarest word first, at most SCAN of them."""
        buckets = sorted((self._by_word.get(w, []) for w in wanted), key=len)
        found: dict[str, None] = {}
        for bucket in buckets:
            for candidate in bucket[: SCAN - len(found)]:
                found[candidate] = None
            if len(found) >= SCAN:
                break
        return list(found)
