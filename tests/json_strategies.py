"""Hypothesis strategies for JSON and relaxed-JSON documents, shared by the repair tests.

A later issue moves `relaxed_json` to ``tinytools.testing.relaxed_json``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

__all__ = ["JSONISH_TEXT", "json_objects", "json_values", "relaxed_json", "relaxed_pairs"]


_IDENTIFIER = re.compile(r"(?:[^\W\d]|\$)[\w$-]*")
_RESERVED = frozenset({"true", "false", "null", "True", "False", "None"})
_TEMPLATE_QUOTES = ('<|"|>', '<|">')
_JSON_SPACE = st.sampled_from(["", "", " ", "\n", "\t", "  ", "\r\n"])
_SURROUNDING_SPACE = st.sampled_from(["", " ", "\n\n", "\u00a0", "\u3000", "\x0c"])
_COMMENTS = st.sampled_from(["/* note */", " /**/ ", "// note\n", "//\n"])
_LEAKED = st.sampled_from(["", "", "<|im_end|>", "<|call|>\n<|endoftext|>", "</s>", " <|eot_id|>"])


def json_values() -> SearchStrategy[object]:
    """Any JSON value msgspec round-trips exactly."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**63), max_value=2**64 - 1)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text()
    )
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=8), children, max_size=4)
        ),
        max_leaves=12,
    )


def json_objects() -> SearchStrategy[dict[str, object]]:
    """Any JSON object, with identifier-like keys well represented."""
    keys = st.text(max_size=8) | st.from_regex(r"[A-Za-z_$][A-Za-z0-9_$-]{0,6}", fullmatch=True)
    return st.dictionaries(keys, json_values(), max_size=5)


def relaxed_json(obj: Mapping[str, object]) -> SearchStrategy[str]:
    """Texts that mean ``obj`` under every meaning-preserving malformation, combined.

    Unquoted identifier keys, redundant wrapping braces, trailing commas, single quotes,
    chat-template quote tokens, Python literals, raw control characters in strings,
    comments, a markdown fence or its language word alone, chat-template tokens after
    the document, the document repeated, a BOM and whitespace.
    """
    if not isinstance(obj, Mapping):
        raise TypeError(f"relaxed_json() takes a JSON object, not {type(obj).__name__}")
    return _relaxed_documents(obj)


@st.composite
def _relaxed_documents(draw: st.DrawFn, obj: Mapping[str, object]) -> str:
    comments = draw(st.booleans())
    raw_controls = draw(st.booleans())

    def space() -> str:
        if comments and draw(st.integers(0, 3)) == 0:
            return draw(_COMMENTS)
        return draw(_JSON_SPACE)

    def string(text: str) -> str:
        forms = ["double", "single"]
        if not any(token in text for token in _TEMPLATE_QUOTES):
            forms.append("template")
        form = draw(st.sampled_from(forms))
        strict = msgspec.json.encode(text).decode()
        if form == "double":
            if raw_controls and any(c < " " for c in text):
                parts = (c if c < " " else msgspec.json.encode(c).decode()[1:-1] for c in text)
                return '"' + "".join(parts) + '"'
            return strict
        if form == "single":
            # JSON escapes every ", so each \" is a quote: unescape it, escape each '.
            body = strict[1:-1].replace('\\"', '"').replace("'", "\\'")
            return f"'{body}'"
        opening, closing = (
            draw(st.sampled_from(_TEMPLATE_QUOTES)),
            draw(st.sampled_from(_TEMPLATE_QUOTES)),
        )
        return opening + text + closing

    def key(name: str) -> str:
        bare = _IDENTIFIER.fullmatch(name) is not None and name not in _RESERVED
        return name if bare and draw(st.booleans()) else string(name)

    def container(items: list[str], opening: str, closing: str) -> str:
        trailing = "," + space() if draw(st.booleans()) and items else ""
        inner = ("," + space()).join(space() + item + space() for item in items)
        return opening + space() + inner + trailing + closing

    def value(item: object) -> str:
        if item is None or isinstance(item, bool):
            python = {None: "None", True: "True", False: "False"}[item]
            return python if draw(st.booleans()) else msgspec.json.encode(item).decode()
        if isinstance(item, str):
            return string(item)
        if isinstance(item, list):
            return container([value(element) for element in item], "[", "]")
        if isinstance(item, Mapping):
            members = [key(name) + space() + ":" + space() + value(v) for name, v in item.items()]
            document = container(members, "{", "}")
            for _ in range(draw(st.integers(0, 2))):
                comma = "," if draw(st.booleans()) else ""
                document = "{" + space() + document + comma + space() + "}"
            return document
        return msgspec.json.encode(item).decode()

    document = value(obj)
    if draw(st.integers(0, 3)) == 0:
        document = document + draw(_JSON_SPACE) + document
    document += draw(_LEAKED)
    if draw(st.booleans()):
        info = draw(st.sampled_from(["", "json", "JSON", "json5"]))
        document = f"```{info}{draw(st.sampled_from(['', ' ', chr(10)]))}{document}\n```"
    elif draw(st.integers(0, 3)) == 0:
        document = draw(st.sampled_from(["json\n", "JSON\r\n", "jsonc\n\n"])) + document
    document = draw(_SURROUNDING_SPACE) + document + draw(_SURROUNDING_SPACE)
    return ("\ufeff" if draw(st.booleans()) else "") + document


def relaxed_pairs() -> SearchStrategy[tuple[dict[str, object], str]]:
    return json_objects().flatmap(lambda obj: st.tuples(st.just(obj), relaxed_json(obj)))


_PIECES = ["<|", '<|"|>', '<|">', "```", "json", "True", "None", "null", "a", "key", "1"]
JSONISH_TEXT = st.lists(
    st.sampled_from([*"{}[]:,'\"\\ \n", *_PIECES, "-2.5e3", "\ufeff", "\u00a0", "é"]),
    max_size=40,
).map("".join)
