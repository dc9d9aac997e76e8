"""Hypothesis strategies and a conformance check for property-testing tool pipelines.

Needs the ``testing`` extra (``pip install "tinytools[testing]"``, which brings
hypothesis). ``import tinytools`` never imports this module or hypothesis.

* :func:`valid_arguments` / :func:`invalid_arguments` — argument dicts a tool's
  ``validate`` accepts / rejects, from its types or its JSON schema;
* :func:`tool_calls` — batches of model calls against your tools, mixing valid
  calls with unknown names, malformed and relaxed JSON, schema violations and
  repeated ids, in shares you choose;
* :func:`relaxed_json` — meaning-preserving malformations of an object's JSON;
* :func:`check_dispatch_invariants` — asserts the dispatch invariants
  (docs/concepts/invariants.md) on one batch and its ``DispatchResult``, naming
  the broken invariant, the call id and what it saw.
"""

from __future__ import annotations

try:
    import hypothesis as _hypothesis  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "tinytools.testing needs hypothesis: install the testing extra, "
        'pip install "tinytools[testing]"'
    ) from error

from ._arguments import invalid_arguments as invalid_arguments
from ._arguments import valid_arguments as valid_arguments
from ._calls import tool_calls as tool_calls
from ._invariants import Entry as Entry
from ._invariants import check_dispatch_invariants as check_dispatch_invariants
from ._relaxed import relaxed_json as relaxed_json

__all__ = [
    "Entry",
    "check_dispatch_invariants",
    "invalid_arguments",
    "relaxed_json",
    "tool_calls",
    "valid_arguments",
]
