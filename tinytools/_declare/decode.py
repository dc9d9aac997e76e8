"""Raw JSON arguments decoded: the value, or the reason the model's text is no JSON.

msgspec keeps the last of an object's repeated keys; a reader of the text may see the
first. Decoders here refuse a repeated field instead, paying for the exact scan only
when a cheap bound (compiled with the C extension, or counted colons without it) says
a repeat is possible.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeAlias

import msgspec

from tinytools.errors import ToolArgumentsError

from .json_values import text_problem
from .messages import decode_detail, from_msgspec, not_json

__all__ = [
    "Arguments",
    "KeyBound",
    "Refused",
    "compiled_bound",
    "decode_json",
    "malformed",
    "refuse_text",
    "repeats_possible",
    "struct_decoder",
]


#: What a caller may hand to ``validate``: decoded arguments or raw JSON text.
Arguments: TypeAlias = "Mapping[str, object] | str | bytes"


class Refused(msgspec.ValidationError):
    """Well-formed JSON that JSON itself cannot mean unambiguously (a repeated field).

    A ``ValidationError`` so every caller of a decoder that catches msgspec's errors
    (``Tool.validate``'s hot path, the fast path) falls back to the full validator,
    which turns it into the ``ToolArgumentsError`` it describes.
    """

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(detail)
        self.path = path
        self.detail = detail


try:  # the compiled bound, when the C extension was built (see struct_decoder)
    from tinytools._relaxed_speedups import keys_may_repeat as compiled_bound
    from tinytools._relaxed_speedups import unrepeated_decoder as _unrepeated_decoder
except ImportError:  # pragma: no cover - exercised where no C compiler was found
    compiled_bound = _unrepeated_decoder = None  # type: ignore[assignment]


#: Whether JSON text may repeat a key in one of its objects (False: certainly not).
KeyBound: TypeAlias = "Callable[[str | bytes], bool]"


def struct_decoder(
    struct: type[msgspec.Struct],
    bound: KeyBound | None = compiled_bound,
    dec_hook: Callable[[type, object], object] | None = None,
) -> Callable[[str | bytes], msgspec.Struct]:
    """msgspec's decoder for ``struct``, refusing objects that repeat a field.

    msgspec keeps the last of repeated keys, while a person (or an approver) reading
    the text may see the first: the arguments are refused instead. An exact scan of
    every text in Python would double the cost of the hot path, so a cheap bound
    decides when to look. With the C extension, ``bound`` is its one-pass scan
    (``keys_may_repeat``: the keys of each object compared as spelled; a key holding
    an escape is left to the exact scan). Without it (``bound=None``), colons are
    counted: each key is followed by one ``:``, so a text with no more colons than
    the fields it certainly set holds no repeated key at any depth. A field counts as
    set when it is required, when its value is not the very object the field's
    default is, or when the text (holding no backslash) shows its key; past that
    bound, :func:`repeats_possible` compares colon counts before any exact scan.
    Both bounds are sound (a text they pass repeats no key), so both give the same
    answers. ``dec_hook`` builds the types msgspec does not know (pydantic models).
    """
    decode = msgspec.json.Decoder(struct, dec_hook=dec_hook).decode
    if bound is compiled_bound and _unrepeated_decoder is not None:
        # decode, bound and (when needed) the exact scan in one C call: no Python frame.
        return _unrepeated_decoder(decode, _refuse_repeats)
    if bound is not None:

        def scanned(text: str | bytes) -> msgspec.Struct:
            value = decode(text)
            if bound(text):
                _refuse_repeats(text)
            return value

        return scanned
    fields, defaults = struct.__struct_fields__, struct.__struct_defaults__
    required = len(fields) - len(defaults)
    every = len(fields)
    # An optional field: its attribute, its default and how its key reads in JSON text.
    encoded = struct.__struct_encode_fields__
    optional = tuple(
        (name, default, msgspec.json.encode(key).decode() + ":")
        for name, default, key in zip(fields[required:], defaults, encoded[required:], strict=True)
        if type(default).__name__ != "Factory" and not isinstance(default, (list, dict, set))
    )

    def checked(text: str | bytes) -> msgspec.Struct:
        value = decode(text)
        if isinstance(text, bytes):
            text = text.decode()  # the counts below read characters
        colons = text.count(":")
        if colons > required:
            present = required
            if colons <= every:  # flat arguments: count the fields certainly sent
                # In text without a backslash, `"name":` can only be a key: a field that
                # holds its default is still sent when its key is there (at any depth,
                # which only ever counts a key that brought its own colon).
                keyed = "\\" not in text
                for name, default, key in optional:
                    if getattr(value, name) is not default or (keyed and key in text):
                        present += 1
            if colons > present and repeats_possible(text, msgspec.json.decode(text), None):
                _refuse_repeats(text)
        return value

    return checked


def repeats_possible(
    text: str | bytes, tree: object, bound: KeyBound | None = compiled_bound
) -> bool:
    """Whether ``text`` (decoded as ``tree``) may repeat a key: ``bound``'s answer (the
    compiled scan), else by counting colons: the JSON msgspec writes for ``tree`` has
    one ``:`` per key it kept plus the colons inside its strings, and so has ``text`` —
    plus one for each key it repeated. Text with a ``\\u`` escape (which may spell a
    colon the text does not show) is always scanned exactly."""
    if bound is not None:
        return bound(text)
    written = msgspec.json.encode(tree).count(b":")
    if isinstance(text, bytes):
        return b"\\u" in text or text.count(b":") != written
    return "\\u" in text or text.count(":") != written


def _refuse_repeats(text: str | bytes) -> None:
    """Raise ``Refused`` when ``text`` repeats a field (the exact, slow scan)."""
    problem = text_problem(text)
    if problem is not None:
        raise Refused(*problem)


def decode_json(tool_name: str, text: str | bytes) -> object:
    """Raw text decoded as JSON, or the ``malformed`` error that says why it is not JSON.

    A number JSON text holds but no Python value can stand for (``1e999``, an
    integer of more than 4,300 characters) is a schema error at its path, as for a
    typed tool.
    """
    try:
        return msgspec.json.decode(text)
    except msgspec.ValidationError as error:
        problem = text_problem(text)
        if problem is not None:
            raise ToolArgumentsError(tool_name, problem[1], path=problem[0]) from None
        raise from_msgspec(tool_name, error) from None
    except msgspec.DecodeError as error:
        raise malformed(tool_name, text, decode_detail(error)) from None
    except (UnicodeError, RecursionError) as error:
        raise not_json(tool_name, error) from None


def malformed(tool_name: str, text: Arguments, detail: str) -> ToolArgumentsError:
    """The error for text msgspec cannot decode (``detail``, its reason): ``malformed``,
    unless the text is JSON holding a lone surrogate escape (``"\\ud800"``: no valid
    text, which msgspec reports as truncated input or an invalid surrogate pair). That
    is the schema error at its path, as for decoded arguments holding a lone surrogate
    (see ``json_problem``): the model hears what is wrong, not that its JSON was cut.
    """
    if ("truncated" in detail or "surrogate" in detail) and _has_escape(text):
        problem = text_problem(text)  # type: ignore[arg-type]  # (text, as _has_escape said)
        if problem is not None:  # (the slow, exact scan: only on this failure)
            return ToolArgumentsError(tool_name, problem[1], path=problem[0])
    return ToolArgumentsError(tool_name, detail, malformed=True)


def _has_escape(text: Arguments) -> bool:
    if isinstance(text, str):
        return "\\u" in text
    return isinstance(text, bytes) and b"\\u" in text


def refuse_text(tool_name: str, text: str | bytes) -> None:
    """Raise the schema error for a repeated field (or an unreadable value) in ``text``."""
    problem = text_problem(text)
    if problem is not None:
        raise ToolArgumentsError(tool_name, problem[1], path=problem[0])
