"""JSON strategies shared by the repair tests, built on the public kit.

`relaxed_json` is `tinytools.testing.relaxed_json`; `json_values` and `json_objects` are
the kit's own JSON generators, so the tests and the kit draw the same documents.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from tinytools.testing import relaxed_json
from tinytools.testing._json import json_objects, json_values

__all__ = ["JSONISH_TEXT", "json_objects", "json_values", "relaxed_json", "relaxed_pairs"]


def relaxed_pairs() -> SearchStrategy[tuple[dict[str, object], str]]:
    """``(obj, text)``: any JSON object and relaxed JSON meaning it."""
    return json_objects().flatmap(lambda obj: st.tuples(st.just(obj), relaxed_json(obj)))


_PIECES = ["<|", '<|"|>', '<|">', "```", "json", "True", "None", "null", "a", "key", "1"]
JSONISH_TEXT = st.lists(
    st.sampled_from([*"{}[]:,'\"\\ \n", *_PIECES, "-2.5e3", "\ufeff", "\u00a0", "é"]),
    max_size=40,
).map("".join)
