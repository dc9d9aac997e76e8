"""FastMCP: the BM25 index of its ``BM25SearchTransform`` (build and query).

The transform indexes each tool's name, description, parameter names and parameter
descriptions as one text; the same texts of the same tools are given to it here, so
the comparison is of the index alone (the transform's own tool listing aside).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from fastmcp.server.transforms.search.bm25 import _BM25Index

LABEL = "fastmcp BM25SearchTransform index"


def document(name: str, description: str, parameters: Mapping[str, object]) -> str:
    """A tool's searchable text, as the transform builds it."""
    parts = [name, description] if description else [name]
    properties = parameters.get("properties", {})
    for key, value in properties.items() if isinstance(properties, Mapping) else ():
        parts.append(str(key))
        if isinstance(value, Mapping) and value.get("description"):
            parts.append(str(value["description"]))
    return " ".join(parts)


def builder(documents: list[str]) -> Callable[[], object]:
    def build() -> object:
        index = _BM25Index()
        index.build(documents)
        return index

    return build


def searcher(documents: list[str], queries: list[str]) -> Callable[[], object]:
    index = _BM25Index()
    index.build(documents)
    return lambda: [index.query(q, 5) for q in queries]
