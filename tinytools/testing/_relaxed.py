"""``relaxed_json``: meaning-preserving malformations of an object's JSON."""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import SearchStrategy

__all__ = ["relaxed_json"]

_IDENTIFIER = re.compile(r"(?:[^\W\d]|\$)[\w$-]*")
_RESERVED = frozenset({"true", "false", "null", "True", "False", "None"})
_TEMPLATE_QUOTES = ('<|"|>', '<|">')
_JSON_SPACE = st.sampled_from(["", "", " ", "\n", "\t", "  ", "\r\n"])
_SURROUNDING_SPACE = st.sampled_from(["", " ", "\n\n", "\u00a0", "\u3000", "\x0c"])
_COMMENTS = st.sampled_from(["/* note */", " /**/ ", "// note\n", "//\n"])
_LEAKED = st.sampled_from(["", "", "<|im_end|>", "<|call|>\n<|endoftext|>", "</s>", " <|eot_id|>"])


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


def relaxed_json(obj: Mapping[str, object]) -> SearchStrategy[str]:
    """Texts that mean ``obj`` but are not strict JSON the way models write them.

    Each text combines any of: unquoted identifier keys, single-quoted strings,
    chat-template quote tokens (``<|"|>``), Python literals (``True``, ``None``),
    trailing commas, redundant wrapping braces, raw control characters in
    strings, comments, a markdown fence or its language word alone, chat-template
    tokens after the document, the document repeated, a BOM and odd whitespace.
    Every malformation keeps the meaning:
    :func:`tinytools.repair.recover_relaxed_object` must give ``obj`` back
    exactly, and dispatch must run a tool on exactly ``obj``. Some drawn texts
    happen to be strict JSON; they shrink towards ``obj``'s own JSON.

    Args:
        obj: A JSON object (a mapping of strings to JSON values).

    Raises:
        hypothesis.errors.InvalidArgument: ``obj`` is not a mapping.

    Example:
        >>> from hypothesis import given
        >>> from tinytools.repair import recover_relaxed_object
        >>> @given(relaxed_json({"city": "Paris", "days": [1, 2]}))
        ... def test_repair_keeps_meaning(text):
        ...     assert recover_relaxed_object(text) == {"city": "Paris", "days": [1, 2]}
        >>> test_repair_keeps_meaning()
    """
    if not isinstance(obj, Mapping):
        raise InvalidArgument(f"relaxed_json() takes a JSON object, not {type(obj).__name__}")
    return _relaxed_documents(obj)
