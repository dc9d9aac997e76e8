"""Deferred discovery: a model finds tools that were never declared, and calls them.

:class:`Catalog` is a BM25 index over tools (name, the name's words,
description, parameter names and descriptions). :class:`Discovery` is a
toolset that declares the ``Direct`` tools plus two intrinsic tools:

* ``tool_search(query, limit)`` — answers with the best-matching ``Deferred``
  tools (names, descriptions, parameter schemas) as JSON, and emits
  ``ToolSearched``; the names found are in ``DispatchResult.promoted``.
* ``tool_call(name, arguments)`` — dispatch unwraps it into a call of the named
  tool, under the same call id, **before admission**: the advertised set, the
  allow-list, middleware, approvals, schema validation, events and the ledger
  all see the real tool, and a ``Hidden`` or unknown name is an unknown-tool
  call, exactly as if the model had called it directly.

``Discovery.promote(result.promoted)`` gives the toolset for the next request,
where the found tools are declared (``Direct``). ``budget_bytes`` keeps the
declarations within a manifest budget by deferring the ``Direct`` tools that do
not fit, each explained.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import attrs
import msgspec

from ._declare.exposure import ExposureExplanation
from ._declare.registry import AnyTool, tool_items
from ._declare.spec import Exposure, Tool
from ._declare.tool_policy import ToolPolicy
from ._text import printable
from .errors import ToolDefinitionError
from .toolsets._base import Resolution, Wrapper, is_remote, withheld
from .toolsets._intrinsic import Intrinsic

if TYPE_CHECKING:
    from ._inject import Context

__all__ = [
    "QUERY_CHARS",
    "SEARCH_LIMIT",
    "Catalog",
    "Discovery",
    "Match",
    "declaration_bytes",
    "terms",
]

#: The most results one ``tool_search`` call may ask for.
SEARCH_LIMIT = 50
#: A query longer than this many characters is searched by its beginning only.
QUERY_CHARS = 2_000

_K1 = 1.2
_B = 0.5  # tools differ in length mostly by how much they explain: normalise gently
_NAME_WEIGHT = 2  # the name's words count this many times (names say what a tool does)
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# Everything but ASCII letters and digits becomes a space (prose is split with str.split).
_PUNCTUATION = {c: " " for c in range(128) if not chr(c).isalnum()}
_STOP = frozenset(
    (
        "a",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "get",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "will",
        "with",
        "would",
        "you",
        "your",
    )
)


def _stem(word: str) -> str:
    """A light, deterministic suffix strip, so "files" meets "file" and "searching" "search"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


#: Lower-cased word → its term ("" for a common word): bounded in entries, and holding only
#: words of at most ``_KEPT_WORD`` characters (a model's query may hold a word of any
#: length; a longer one is stemmed each time it is read). Cleared when full: ``clear`` and
#: a single store are each atomic, so threads share it safely.
_TERMS: dict[str, str] = {}
_KEPT_WORD = 40
#: What a term no tool holds weighs (the same empty mapping every time: never changed).
_NO_WEIGHTS: tuple[dict[int, float], float] = ({}, 0.0)


def _term(word: str) -> str:
    term = "" if word in _STOP or len(word) < 2 else _stem(word)
    if len(word) <= _KEPT_WORD:
        if len(_TERMS) >= 200_000:
            _TERMS.clear()
        _TERMS[word] = term
    return term


def _normal(words: list[str]) -> list[str]:
    """Lower-cased words as terms: common words dropped, the rest stemmed (memoised)."""
    found = list(map(_TERMS.get, words))
    if None in found:
        found = [_term(w) if t is None else t for w, t in zip(words, found, strict=True)]
    return [t for t in found if t]


def terms(text: str) -> list[str]:
    """The search terms of ``text``: words split at case changes, ``_``, punctuation
    and digits, lower-cased, stemmed lightly, common English words dropped."""
    return _normal([w.lower() for w in _WORDS.findall(text)])


class Match(msgspec.Struct, frozen=True):
    """One search result: a tool's name and its BM25 score (higher is better)."""

    name: str
    score: float


def _parameter_text(
    schema: object, names: list[str], descriptions: list[str], depth: int = 0
) -> None:
    """Collect the parameter names and descriptions of an object schema (nested ones too,
    a little)."""
    if not isinstance(schema, Mapping) or depth > 2:
        return
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, sub in properties.items():
            names.append(str(name))
            if isinstance(sub, Mapping):
                description = sub.get("description")
                if isinstance(description, str):
                    descriptions.append(description)
                if "properties" in sub:
                    _parameter_text(sub, names, descriptions, depth + 1)
                if "items" in sub:
                    _parameter_text(sub["items"], names, descriptions, depth + 1)


class Catalog:
    """A BM25 index over tools: built once, searched many times, deterministic.

    Each tool is indexed by its name (its words counted twice: snake_case,
    camelCase and digits split), description, parameter names and parameter
    descriptions.

    Args:
        tools: The tools to index (a ``Registry``, a toolset, or any iterable of tools).

    Raises:
        TypeError: ``tools`` is not iterable, or an item is not a ``Tool``.
        ToolDefinitionError: A toolset's ``tools()`` raised or listed no tools (as
            dispatch says it: naming the toolset, from its own error).
    """

    __slots__ = ("_average", "_by_term", "_lengths", "_names", "_postings", "_weights")

    def __init__(self, tools: Iterable[AnyTool]) -> None:
        method = getattr(tools, "tools", None)
        source: Iterable[object] = tools
        if callable(method):  # a toolset: read as dispatch and the formats read one
            from .toolsets._base import host_tools

            source = host_tools(tools, lambda _none: method(), None)
        names: list[str] = []
        lengths: list[int] = []
        # Postings by lower-cased word as written, one entry per occurrence (appending is
        # the cheapest thing a Python loop can do; counts are taken per term, on first
        # use): word -> [tool number, ...], in tool order. Words are made terms once each.
        postings: defaultdict[str, list[int]] = defaultdict(list)
        for number, tool in enumerate(tool_items(source)):
            if not isinstance(tool, Tool):
                raise TypeError(
                    f"Catalog indexes tools; {tool!r} is not a Tool: decorate it with @tool"
                )
            identifiers: list[str] = [tool.name] * _NAME_WEIGHT
            described: list[str] = [tool.description]
            _parameter_text(tool.parameters, identifiers, described)
            split = " ".join(_WORDS.findall(" ".join(identifiers)))
            words = f"{split} {' '.join(described).translate(_PUNCTUATION)}".lower().split()
            for word in words:
                postings[word].append(number)
            names.append(tool.name)
            lengths.append(len(words))
        for word in _STOP.intersection(postings):
            del postings[word]
        by_term: dict[str, list[str]] = {}
        for word in postings:
            term = _TERMS.get(word)
            if term is None:
                term = _term(word)
            if term:
                by_term.setdefault(term, []).append(word)
        self._names = names
        self._lengths = lengths
        self._average = (sum(lengths) / len(lengths)) if lengths else 0.0
        self._postings = dict(postings)
        self._by_term = by_term
        self._weights: dict[str, tuple[dict[int, float], float]] = {}

    def __len__(self) -> int:
        return len(self._names)

    def _weighted(self, term: str) -> tuple[dict[int, float], float]:
        """The term's BM25 contribution to each tool holding it, and the largest one
        (computed once per term the catalog holds: a term no tool holds, which a model's
        query can make without end, is answered without being remembered)."""
        known = self._weights.get(term)
        if known is not None:
            return known
        words = self._by_term.get(term)
        if not words:
            return _NO_WEIGHTS
        counts: Counter[int] = Counter()
        for word in words:
            counts.update(self._postings[word])
        total = len(self._names)
        idf = math.log(1.0 + (total - len(counts) + 0.5) / (len(counts) + 0.5))
        lengths, average = self._lengths, self._average or 1.0
        weights = {
            doc: idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * lengths[doc] / average))
            for doc, tf in sorted(counts.items())
        }
        found = (weights, max(weights.values(), default=0.0))
        self._weights[term] = found
        return found

    def _query(self, query: str) -> list[tuple[dict[int, float], float]]:
        """The query's terms' weights, the most telling term first (a fixed order, so a
        tool's score is summed the same way on every path)."""
        if not isinstance(query, str):
            raise TypeError(f"a search query is a str, not {type(query).__name__}")
        found = [(self._weighted(t), t) for t in dict.fromkeys(terms(query[:QUERY_CHARS]))]
        found.sort(key=lambda item: (-item[0][1], item[1]))
        return [weighted for weighted, _term in found if weighted[0]]

    def scores(self, query: str) -> dict[str, float]:
        """Every tool that matches ``query`` at all, with its score (unordered).

        Raises:
            TypeError: ``query`` is not a ``str``.
        """
        found: dict[int, float] = {}
        get = found.get
        for weights, _ in self._query(query):
            for doc, weight in weights.items():
                found[doc] = get(doc, 0.0) + weight
        names = self._names
        return {names[doc]: score for doc, score in found.items()}

    def top(
        self, query: str, limit: int, keep: Callable[[str], bool] | None = None
    ) -> tuple[Match, ...]:
        """:meth:`search`, among the tools whose names ``keep`` keeps.

        Exact top-``limit`` by MaxScore: once no tool outside the candidates could
        reach the ``limit``-th best score with the terms left, those terms only add
        to the candidates.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive int, got {limit!r}")
        weighted = self._query(query)
        names = self._names
        rest = list(itertools.accumulate(reversed([upper for _, upper in weighted])))[::-1]
        scores: dict[int, float] = {}
        refused: set[int] = set()
        get = scores.get
        for index, (weights, _upper) in enumerate(weighted):
            # Whether to stop adding new tools is asked at the first terms and then every
            # eighth, so a long query does not sort its candidates once per term.
            asking = index < 8 or index % 8 == 0
            if (
                asking
                and len(scores) >= limit
                and rest[index] < heapq.nlargest(limit, scores.values())[-1]
            ):
                for later, _ in weighted[index:]:
                    for doc in scores:
                        weight = later.get(doc)
                        if weight is not None:
                            scores[doc] += weight
                break
            for doc, weight in weights.items():
                if doc in refused:
                    continue
                if keep is not None and doc not in scores and not keep(names[doc]):
                    refused.add(doc)
                    continue
                scores[doc] = get(doc, 0.0) + weight
        best = heapq.nsmallest(limit, scores.items(), key=lambda i: (-i[1], names[i[0]]))
        return tuple(Match(names[doc], score) for doc, score in best)

    def search(self, query: str, limit: int = 5) -> tuple[Match, ...]:
        """The ``limit`` best matches for ``query``, best first (ties by name).

        An empty query (or one of only common words) matches nothing. A query
        longer than ``QUERY_CHARS`` characters is searched by its beginning.

        Raises:
            TypeError: ``query`` is not a ``str``.
            ValueError: ``limit`` is below 1.
        """
        return self.top(query, limit)

    def __repr__(self) -> str:
        return f"<Catalog of {len(self._names)} tools>"


# --- the intrinsic tools -------------------------------------------------------------

SEARCH_NAME = "tool_search"
CALL_NAME = "tool_call"


def _search_tool(limit: int) -> AnyTool:
    return Tool.from_schema(
        SEARCH_NAME,
        "Find tools that are available but not listed here, by what you want to do. "
        "Returns the best matches with their names, descriptions and parameter schemas; "
        f"call one with `{CALL_NAME}`.",
        {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What you want to do, in a few words.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": SEARCH_LIMIT,
                    "description": f"How many tools to return (default {limit}).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        Intrinsic("search", limit),
        policy=ToolPolicy.read_only(),
    )


@functools.cache
def _call_tool() -> AnyTool:
    return Tool.from_schema(
        CALL_NAME,
        f"Call a tool that `{SEARCH_NAME}` found, by its name, with its arguments.",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name."},
                "arguments": {
                    "type": "object",
                    "description": "The tool's arguments, as its parameter schema describes.",
                },
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        Intrinsic("call"),
        policy=ToolPolicy.read_only(),
    )


def declaration_bytes(tool: AnyTool) -> int:
    """The size of ``tool``'s declaration: compact JSON, in the OpenAI Chat shape."""
    declared = {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": printable(tool.description),  # a lone surrogate: escaped
            "parameters": tool.parameters,
        },
    }
    return len(msgspec.json.encode(declared))


def _names(value: Iterable[str]) -> frozenset[str]:
    return frozenset((value,) if isinstance(value, str) else value)


def _limit(_instance: object, _attribute: object, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= SEARCH_LIMIT:
        raise ValueError(f"limit must be an int from 1 to {SEARCH_LIMIT}, got {value!r}")


def _budget(_instance: object, _attribute: object, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"budget_bytes must be None or a non-negative int, got {value!r}")


@attrs.frozen
class Discovery(Wrapper):
    """A toolset that declares the ``Direct`` tools and lets the model find the rest.

    ``Deferred`` tools are not declared; while there is at least one, the toolset
    adds the intrinsic ``tool_search`` and ``tool_call`` tools (see the module
    docstring). ``Hidden`` tools stay unreachable by any route. Put it outermost:
    adaptors around it rename its intrinsic tools like any other (calls still
    work) but leave them otherwise as they are.

    Args:
        toolset: The tools to expose.
        limit: How many tools ``tool_search`` returns when the model does not
            say (1 to ``SEARCH_LIMIT``).
        budget_bytes: With a budget, ``Direct`` tools whose declarations
            (compact JSON, OpenAI Chat shape) would take the manifest past it
            become ``Deferred``, in order: the first one that does not fit and
            every later one (promoted tools and the intrinsic tools are always
            declared, and count).
        promoted: Names declared even though they are ``Deferred`` (see
            :meth:`promote`).

    Raises:
        ValueError: ``limit`` or ``budget_bytes`` is out of range.
        ToolDefinitionError: A tool of the toolset is named ``tool_search`` or
            ``tool_call`` while tools are deferred (when resolved). A remote server's
            tool of that name (``McpToolset``'s) is left out instead, explained, and
            reported by each dispatch (``ToolWithheld``).
    """

    limit: int = attrs.field(default=5, kw_only=True, validator=_limit)
    budget_bytes: int | None = attrs.field(default=None, kw_only=True, validator=_budget)
    promoted: frozenset[str] = attrs.field(default=frozenset(), kw_only=True, converter=_names)
    _search: AnyTool = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(lambda self: _search_tool(self.limit), takes_self=True),
    )

    def label(self) -> str:
        return (
            "Discovery()"
            if self.budget_bytes is None
            else f"Discovery(budget_bytes={self.budget_bytes})"
        )

    def promote(self, names: Iterable[str]) -> Discovery:
        """This toolset with ``names`` declared from now on (``DispatchResult.promoted``
        of the last batch, typically)."""
        return attrs.evolve(self, promoted=self.promoted | _names(names))

    def _adapt(self, inner: Resolution, context: Context | None) -> Resolution:
        where = self.label()
        explained: list[ExposureExplanation] = []
        tools: list[AnyTool] = []
        for tool in inner.tools:
            if tool.exposure is Exposure.Deferred and tool.name in self.promoted:
                tool = attrs.evolve(tool, exposure=Exposure.Direct)
                reason = "promoted: found by tool_search, so it is declared"
                explained.append(ExposureExplanation(tool.name, reason, where, tool.name))
            tools.append(tool)
        if self.budget_bytes is not None:
            tools = self._within_budget(tools, explained)
        left: list[ExposureExplanation] = []
        gates = inner.gates
        if any(tool.exposure is Exposure.Deferred for tool in tools):
            taken = [t for t in tools if t.name in (SEARCH_NAME, CALL_NAME)]
            problems = [
                f"a tool is named {t.name!r}, which discovery's intrinsic tool uses; "
                "rename it (Renamed or Prefixed)"
                for t in taken
                if not is_remote(t)
            ]
            if problems:
                raise ToolDefinitionError(where, problems)
            if taken:  # (remote ones: left out, not the host's whole toolset)
                left = [withheld(t.name, f"discovery's intrinsic {t.name}", where) for t in taken]
                tools = [t for t in tools if t.name not in (SEARCH_NAME, CALL_NAME)]
                gates = {k: v for k, v in gates.items() if k not in (SEARCH_NAME, CALL_NAME)}
            tools = [self._search, _call_tool(), *tools]
        explanations = (*inner.explanations, *explained, *left)
        return Resolution(tuple(tools), explanations, gates, tuple(left))

    def _within_budget(
        self, tools: list[AnyTool], explained: list[ExposureExplanation]
    ) -> list[AnyTool]:
        budget = self.budget_bytes
        assert budget is not None
        direct = [t for t in tools if t.exposure is Exposure.Direct]
        sizes = {t.name: declaration_bytes(t) for t in direct}
        if sum(sizes.values()) <= budget:
            return tools
        used = declaration_bytes(self._search) + declaration_bytes(_call_tool())
        used += sum(sizes[t.name] for t in direct if t.name in self.promoted)
        where, out, full = self.label(), [], False
        for tool in tools:
            if tool.exposure is Exposure.Direct and tool.name not in self.promoted:
                full = full or used + sizes[tool.name] > budget
                if full:
                    reason = (
                        f"deferred: declaring it would take the manifest past budget_bytes="
                        f"{budget}; the model finds it with {SEARCH_NAME}"
                    )
                    explained.append(ExposureExplanation(tool.name, reason, where, tool.name))
                    tool = attrs.evolve(tool, exposure=Exposure.Deferred)
                else:
                    used += sizes[tool.name]
            out.append(tool)
        return out
