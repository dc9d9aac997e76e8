"""The XML text dialect: ``<tool_name><field>value</field></tool_name>``.

:func:`parse` reads three forms, freely mixed in one text:

* **Native** — ``<search><query>rust agents</query><limit>5</limit></search>``
  (whitespace allowed between elements; ``<tool/>`` for no arguments). Only a
  tag naming one of ``tools`` starts a call, and only when the next non-space
  text is a tag: ``<div>`` and ``use <search> to…`` stay prose.
* **Qwen3-Coder** — ``<function=f><parameter=p>value</parameter></function>``,
  with or without an outer ``<tool_call>``. A missing ``</parameter>`` ends at
  the next ``<parameter=`` or ``</function>``, as vLLM reads it (so such a
  value cannot contain those two tags unless it is in CDATA, see below).
* **GLM** — ``<tool_call>f<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>``.

Reasoning (``<think>…</think>``, an unclosed ``<think>`` to the end of the
text, or everything before a ``</think>`` that has no ``<think>``) is never
read for calls: it stays in ``Parsed.text``, tags and all.

The function and GLM forms say unambiguously that a call is meant, so a name
not among ``tools`` is returned as written, for dispatch's unknown-tool
policy to answer. An outer ``<tool_call>`` holds one or more calls (native or
function form) or one GLM call; one holding JSON is an error (that is the
``json_in_tag`` dialect).

**Cut-off calls.** A call is run only when its text shows it complete: a
native or function-form call must be closed by its own closing tag (or by
the ``</tool_call>`` around it), a GLM call by ``</tool_call>``. An outer
``<tool_call>`` with no closing tag before the next one (or the end of the
text) is tolerated when every call inside was closed, as in ``json_in_tag``:
it ends after its last call, and text after that is prose, not an error. A
call the text ends inside (a reply cut off mid-call) is a broken fragment in
``Parsed.errors``, named when its name was read, never a call with the
arguments read so far.

**Values.** A value is the text between its tags, minus one ``\\n`` right
after the opening tag and one right before the closing tag (``\\r`` and other
whitespace are kept). When the parameter's schema admits a string, or gives
no type, that text is the value, verbatim — but text that is exactly one
JSON string literal (``<arg_value>"Paris"</arg_value>``, as GLM often writes
it) is decoded when the schema says string (:func:`render_call` writes a
string that would read that way as a JSON literal, so it reads back).
Otherwise it is read as JSON
(integers, numbers, booleans, null, arrays, objects; ``True``/``False``/
``None``; relaxed JSON for an object) and, when that fails or gives a type
the schema does not admit, kept as the string, so validation reports the
mismatch. A native value ends at its closing tag and never runs past the
call's own closing tag. Two rules keep :func:`render_call` reversible: a
value (native or ``<parameter=…>``) may be a run of ``<![CDATA[…]]>``
sections (used for text holding a tag that would end it), and the
envelope escape of ``&lt;tool_call`` and ``&lt;tool_result`` is undone,
so a call written back into a transcript cannot forge the envelope.

Reading is linear in the text: searches are ``str.find`` from positions that
only move forward (memoised for fixed tags), and each regular expression is
matched anchored at one position.

:func:`constraint` builds a decoding constraint that holds a model to calls
of the tools as :func:`render_call` writes them (see
docs/how-to/constrained-decoding.md).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from typing import Final, TypeAlias

import msgspec

from tinytools._declare.registry import AnyTool
from tinytools._declare.spec import NAME_PATTERN
from tinytools._text import printable
from tinytools._wire import ToolCall

from ._constraint import CallForm, Constraint, build
from ._dialect import (
    Collector,
    Finder,
    Tools,
    arguments_of,
    catalogue,
    convert_text,
    hide_reasoning,
    json_string_literal,
    properties,
    schema_types,
    skip_space,
    tool_map,
)
from ._envelope import ENVELOPE_TAG, escape_body, escape_json, unescape_body
from ._grammar import REPEAT_CAP, Alt, Chars, Lit, Node, Ref, Rep, Seq, opt
from ._json_grammar import JsonStyle, Values, member_names, text_avoiding
from ._parsed import Parsed
from ._pattern import pattern_node
from ._tools import exposed_tools
from ._writable import JSON_DEPTH, refusal, unwritable

__all__ = ["PROTOCOL", "constraint", "parse", "render", "render_call"]

#: How to call a tool in this dialect; the first part of :func:`render`.
PROTOCOL: Final = (
    "To call a tool, write an element named after the tool, holding one element per "
    "argument:\n"
    "<tool_name>\n<parameter_name>value</parameter_name>\n</tool_name>\n"
    "Write text values as they are, without quotes or escaping; write numbers, true/false, "
    "null, arrays and objects as JSON. You may make several calls in one reply."
)

_WRAP, _WRAP_CLOSE = "<tool_call>", "</tool_call>"
_FUNCTION, _FUNCTION_CLOSE = "<function=", "</function>"
_PARAMETER, _PARAMETER_CLOSE = "<parameter=", "</parameter>"
_CDATA, _CDATA_END = "<![CDATA[", "]]>"
_MAX_NAME: Final = 256
_REACH: Final = len(_FUNCTION) + _MAX_NAME + 1  # the farthest ">" of an opening tag
_LT_RUN: Final = re.compile(r"<+")
_TAG_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")

_Call: TypeAlias = "tuple[str, dict[str, object]]"
_Found: TypeAlias = "tuple[list[_Call], int]"


class _Broken(Exception):
    """A call that cannot be read; ``pos`` is where reading stopped."""

    def __init__(self, reason: str, pos: int, name: str = "") -> None:
        super().__init__(reason)
        self.reason, self.pos, self.name = reason, pos, name


def render(tools: Tools) -> str:
    """The catalogue for the system prompt: :data:`PROTOCOL`, then each tool.

    Each tool is its tag and description, then one line per argument tag
    with its type, whether it is required, its default and its description.
    Hidden tools are left out; with no tool left the result is ``""``.
    """
    return catalogue(PROTOCOL, tools, lambda tool: f"<{tool.name}>", "<{}>")


def render_call(call: ToolCall, tools: Tools) -> str:
    """The text a model writes for ``call``, which :func:`parse` reads back.

    The native form, one argument per line: a string as its text (in CDATA
    when it holds ``</`` or ``<![CDATA[``), any other value as JSON (``</``
    written ``<\\/``, ``<![CDATA[`` as ``\\u003c![CDATA[``), envelope tags
    escaped. Where ``tools`` holds the tool, its keys come in its schema's order
    (see :func:`tinytools.formats.json_in_tag.render_call`), and the form is
    the native one only when every key it declares can be a tag: the forms
    :func:`constraint` takes. A string whose text would read
    as a JSON string literal, or that holds ``<think>`` or ``</think>`` (which
    :func:`parse` reads as reasoning), is written as JSON when its schema in
    ``tools`` says string (where :func:`parse` decodes such literals); where
    it does not, a string holding a reasoning tag makes the call a refusal.

    **Names and argument names.** A name goes in a tag only when it is a
    plain tag name (the tool-name grammar for the tool; for an argument, no
    ``<``, ``>``, newline, leading ``/``, ``!``, ``?`` or trailing ``/``) and
    does not read as an envelope tag (``tool_call``, ``TOOL_RESULT``,
    ``tool_call-x``…, see :mod:`tinytools.formats._envelope`). Otherwise the
    call is written in the ``<function=…>`` form, where a name is any text of
    1 to 256 characters without ``<``, ``>`` or a newline, and which cannot
    open or close the envelope. A name that fits neither is refused.

    **Refusals.** A call that cannot be written so that :func:`parse` reads
    back the same call — such a name, or arguments holding an integer past
    Python's digit limit, nesting deeper than
    :data:`~tinytools.formats._writable.JSON_DEPTH` or a non-finite number —
    gives the note ``[tool call not written: <reason>]``, which parses as
    prose. Arguments that are not an object are written as a JSON string
    inside ``<function=name>…</function>``, which parses back as a broken
    call (an error), never as a call. It never raises.
    """
    arguments = arguments_of(call, tools)
    if not _name_ok(call.name):
        return refusal("its tool name cannot be written as an XML call")
    if arguments is None:
        raw = msgspec.json.encode(printable(str(call.arguments))).decode().replace("<", "\\u003c")
        return f"{_FUNCTION}{call.name}>\n{raw}\n{_FUNCTION_CLOSE}"
    problem = unwritable(arguments, JSON_DEPTH)
    if problem is not None:
        return refusal(problem)
    tool = tool_map(tools).get(call.name)
    schemas = properties(tool)

    def quoted(key: str) -> bool:
        return "string" in schema_types(schemas.get(key))

    if any(
        isinstance(v, str) and _reasoning_tag(v) and not quoted(k) for k, v in arguments.items()
    ) or _nested_reasoning_tag(arguments):
        return refusal(
            "an argument holds a reasoning tag (think), which XML text carries only for "
            "a parameter whose schema says string"
        )

    declared = () if tool is None else member_names(tool.parameters)
    if _native(call.name, [*arguments, *declared]):
        lines = [f"<{call.name}>"]
        lines += [
            f"<{k}>{_field_text(call.name, k, v, quoted(k))}</{k}>" for k, v in arguments.items()
        ]
        return "\n".join([*lines, f"</{call.name}>"])
    if not all(_name_ok(key) for key in arguments):
        return refusal("an argument name cannot be written as an XML tag")
    lines = [f"{_FUNCTION}{call.name}>"]
    for key, value in arguments.items():
        lines += [f"{_PARAMETER}{key}>", _parameter_text(value, quoted(key)), _PARAMETER_CLOSE]
    return "\n".join([*lines, _FUNCTION_CLOSE])


def _native(name: str, keys: list[str]) -> bool:
    """Whether a call of ``name`` with these keys is written in the native form."""
    return _tag_ok(name, NAME_PATTERN.fullmatch(name) is not None) and all(
        _tag_ok(key, _field_ok(key)) for key in keys
    )


def _nested_reasoning_tag(arguments: dict[str, object]) -> bool:
    """Whether a reasoning tag is in a key (JSON values carry it escaped; keys are tags)."""
    return any(_reasoning_tag(key) for key in arguments)


def _tag_ok(name: str, plain: bool) -> bool:
    """Whether a plain tag name can be written as a tag: not an envelope tag."""
    return plain and ENVELOPE_TAG.match("<" + name) is None


def _reasoning_tag(value: str) -> bool:
    return "<think>" in value or "</think>" in value


def _plain(value: object, quoted: bool) -> str:
    """A value's text: a string verbatim (envelope-escaped), unless ``quoted`` (its schema
    says string) and it would read as a JSON string literal or holds a reasoning tag: then
    it is written as a JSON literal; any other value as JSON."""
    if _verbatim(value, quoted):
        return escape_body(value)  # type: ignore[arg-type]  # a str, see _verbatim
    return _json_text(msgspec.json.encode(value).decode())


def _json_text(text: str) -> str:
    """Written JSON as a value holds it. JSON has "<" only inside strings, where "\\/"
    and "\\u003c" are plain escapes; no closing tag, envelope tag, reasoning tag or
    "<parameter=" is left to end the value early, and no "<![CDATA[" (which text
    written as it is never holds, so a grammar can tell the two apart)."""
    text = escape_json(text).replace("</", "<\\/").replace(_CDATA, "\\u003c" + _CDATA[1:])
    return text.replace(_PARAMETER, "\\u003cparameter=")


def _verbatim(value: object, quoted: bool) -> bool:
    """Whether :func:`_plain` writes ``value`` as its own text (else as JSON text)."""
    return isinstance(value, str) and not (
        quoted and (json_string_literal(value) is not None or _reasoning_tag(value))
    )


def _cdata(text: str) -> str:
    return _CDATA + text.replace(_CDATA_END, "]]]]><![CDATA[>") + _CDATA_END


def _field_text(name: str, key: str, value: object, quoted: bool) -> str:
    text = _plain(value, quoted)
    if not _verbatim(value, quoted):  # JSON text (a string's own text may start with ")
        return text
    # (any "</", not only the two closing tags that would end it: so one text rule serves
    # every argument in a decoding constraint, see constraint)
    if "</" in text or _CDATA in text:
        return _cdata(text)
    return ("\n" if text.startswith("\n") else "") + text + ("\n" if text.endswith("\n") else "")


def _parameter_text(value: object, quoted: bool) -> str:
    """A ``<parameter=…>`` value: in CDATA when it holds a tag that would end it (any
    ``</``, as :func:`_field_text` does)."""
    text = _plain(value, quoted)
    ends = ("</", _PARAMETER, _CDATA)
    verbatim = _verbatim(value, quoted)  # a string's own text may start with "
    return _cdata(text) if verbatim and any(e in text for e in ends) else text


def _field_ok(name: str) -> bool:
    return (
        0 < len(name) <= _MAX_NAME
        and not any(c in name for c in "<>\n")
        and name[0] not in "/!?"
        and not name.endswith("/")
    )


def _name_ok(name: str) -> bool:
    """A ``<function=…>`` or ``<parameter=…>`` name (parsing reads it up to the first ``>``)."""
    return (
        0 < len(name) <= _MAX_NAME
        and not any(c in name for c in "<>\n")
        and printable(name) is name  # (a lone surrogate: no text carries it)
    )


# --- the decoding constraint ---------------------------------------------------------

_ANY: Final = Chars((), negated=True)
_REASONING: Final = ("think>", "/think>")
# JSON values as _json_text writes them: no raw "</", reasoning tag, "<![CDATA[" or
# "<parameter=".
_NOT_RAW: Final = (*_REASONING, _CDATA[1:])
_NEWLINE: Final = Lit("\n")
_JSON_STYLE: Final = JsonStyle(",", ":", _json_text, {"<": ("/", *_NOT_RAW, "parameter=")})
# Where a value's text can carry anything: CDATA sections, one after another.
_CDATA_TEXT: Final = text_avoiding(_ANY, {"]": ("]>",), "<": _REASONING})
# escape_body's "&lt;" (after any "amp;"s) for an envelope tag's "<": one character of it.
_ENVELOPE_ESCAPE: Final = Seq(Lit("&"), Rep(Lit("amp;")), Lit("lt;"))
# Prose holds no "<" before a letter, "_" or "/": nothing in it reads as a call, and no
# tag the model writes there is taken for one it did not make (an unknown tool's).
_PROSE: Final = {"<": (*string.ascii_letters, "_", "/")}
# A pattern is held where its strings hold none of these, which render_call may write
# otherwise than as they are (escaped, in CDATA, as a JSON literal): given as leads
# written raw or not by what follows, which pattern_node leaves to validation.
_PATTERN_LEADS: Final = {lead: (lead,) for lead in '<&"'}
# Schema keywords a text value (a string written as it is) is not held to.
_TEXT_RULES: Final = frozenset({"pattern", "minLength", "maxLength", "format", "enum", "const"})


def constraint(
    tools: Tools, *, choice: str = "auto", parallel: bool = True, reasoning: bool = False
) -> Constraint:
    """A decoding constraint that lets a model write only calls of ``tools`` in this dialect.

    Calls are written as :func:`render_call` writes them, one right after
    another: ``<tool>``, then each argument on its own line (``<key>value</key>``,
    declared keys in the schema's order), then ``</tool>``; a tool whose name or
    a declared key cannot be a tag (see :func:`render_call`) is called in the
    ``<function=tool>`` form. Every call :func:`render_call` writes for arguments
    the schema accepts is accepted, and every text accepted reads back with
    :func:`parse` into calls of ``tools`` only.

    **Values.** Where the parameter's schema admits a string (or gives no type),
    the value is any text that holds no ``</``, reasoning tag or ``<![CDATA[``
    (:func:`render_call` writes text that does in CDATA), or a run of CDATA
    sections; the string rules (``minLength``, ``format``, and a ``pattern``
    other than below) are then left to validation and listed in
    ``unenforced``. A ``pattern`` of a parameter that is only a string is held
    where it is one the JSON dialects hold and its strings cannot hold ``<``,
    ``&`` or ``"`` (which :func:`render_call` may write otherwise than as they
    are). A ``maxLength`` up to
    :data:`~tinytools.formats._grammar.REPEAT_CAP` of a parameter that is only a
    string bounds its text outside CDATA as the JSON dialects bound a string
    holding ``<`` (at most that many pieces: looser, never stricter) and is listed
    too. An ``enum`` or ``const`` is held exactly. Any
    other value is JSON as :func:`render_call` writes it (compact, ``</``
    written ``<\\/``), held to its schema as in the JSON dialects.

    **Not taken:** keys the schema does not declare (``additionalProperties``).
    A native tag's closing name repeats its opening one, and two undeclared
    keys could repeat each other or a declared one (which :func:`parse` refuses
    as given twice); no grammar can hold that for names not known in advance.
    Declare the keys a model may write.

    With ``choice="auto"`` prose comes first, in lines that hold no ``<`` right
    before a letter, ``_`` or ``/`` (no tag: so nothing in it reads as a call or
    reasoning, and a tag a model meant as a call of a tool not offered is not
    passed over as prose), and the calls start a line (in the structural tag they
    may start mid-line too, where :func:`parse` reads them alike: xgrammar's
    triggers fire anywhere); the lazy GBNF grammar's triggers are each tool's
    opening tag. See
    :class:`~tinytools.formats.Constraint` and docs/how-to/constrained-decoding.md.

    Args:
        tools: The tools offered (hidden and deferred ones are left out).
        choice: ``"auto"`` (prose alone, or prose then calls), ``"required"``
            (at least one call, nothing before it) or a tool's name (one call of
            that tool).
        parallel: Whether several calls may follow one another (up to
            :data:`~tinytools.formats.MAX_PARALLEL_CALLS`, in every backend's form).
        reasoning: Whether a ``<think>…</think>`` may come first.

    Raises:
        ValueError: ``choice`` names no tool offered, or is ``"required"`` with none.
    """
    native = {
        tool.name: _native(tool.name, member_names(tool.parameters))
        for tool in exposed_tools(tools)
    }
    form = CallForm(
        trigger="",  # (each call opens with its own tag: see CallForm.triggers)
        begin=lambda name: f"<{name}>" if native[name] else f"{_FUNCTION}{name}>",
        end="",  # (each tool's closing tag ends its arguments' rule)
        separator="",  # (a newline between calls made a small model repeat its call)
        style=_JSON_STYLE,
        prose=_PROSE,
        arguments=_Arguments(native),
    )
    return build(tools, form, choice=choice, parallel=parallel, reasoning=reasoning)


class _Arguments:
    """The rule for a call's arguments and closing tag, as :func:`render_call` writes them:
    each declared key, in schema order, optional unless required (one rule per key: each
    member brings its own newline, so no separator needs a state)."""

    def __init__(self, native: Mapping[str, bool]) -> None:
        self.native = native
        # (the rules every argument shares)
        self.rules: dict[tuple[object, ...], Ref] = {}

    def __call__(self, values: Values, tool: AnyTool) -> Ref:
        schema, native = tool.parameters, self.native[tool.name]
        values.note(schema)
        props = properties(tool)
        listed = schema.get("required")
        needed = {r for r in listed if isinstance(r, str)} if isinstance(listed, list) else set()
        members: list[Node] = []
        for key in member_names(schema):
            if not native and not _name_ok(key):
                continue  # (render_call refuses a call holding such a key)
            member = self._member(values, tool.name, key, props.get(key, {}), native)
            members.append(member if key in needed else opt(member))
        close = f"\n</{tool.name}>" if native else "\n" + _FUNCTION_CLOSE
        return values.grammar.add(f"{tool.name}-args", Seq(*members, Lit(close)))

    def _member(
        self, values: Values, name: str, key: str, schema: Mapping[str, object], native: bool
    ) -> Node:
        grammar, hint = values.grammar, f"{name}-{key}"
        types = schema_types(schema)
        quoted = "string" in types
        written: Callable[[object], str]
        if native:
            head, close = f"\n<{key}>", f"</{key}>"
            written = lambda value: _field_text(name, key, value, quoted)  # noqa: E731
        else:
            head, close = f"\n{_PARAMETER}{key}>\n", "\n" + _PARAMETER_CLOSE
            written = lambda value: _parameter_text(value, quoted)  # noqa: E731
        listed = [schema["const"]] if "const" in schema else schema.get("enum")
        if isinstance(listed, list) and all(
            unwritable({"": v}, JSON_DEPTH) is None for v in listed
        ):
            texts = sorted({written(value) + close for value in listed})
            return Seq(Lit(head), grammar.add(hint, Alt(*map(Lit, texts)), token=True))
        if types and not quoted:  # JSON, held to its schema
            return Seq(Lit(head), values.of(schema, schema, hint), Lit(close))
        pattern = schema.get("pattern")
        if types == {"string"} and isinstance(pattern, str):
            node = pattern_node(pattern, "", _PATTERN_LEADS)
            if node is not None:  # (a pattern's text has no "<": no tag can end it early)
                values.note(schema)
                values.unenforced.update({"minLength", "maxLength"} & schema.keys())
                held = grammar.add(hint, Seq(opt(_NEWLINE), node, opt(_NEWLINE)), token=True)
                return Seq(Lit(head), held, Lit(close))
        _leave(values, schema)
        most = _count(schema.get("maxLength")) if types == {"string"} else None
        if most is not None and most > REPEAT_CAP:
            most = None
        forms: list[Node] = [Seq(self._cdata(values), Lit(close))]
        if most is not None:  # (a string render_call writes as JSON)
            string = self._shared(values, ("json", most), lambda: _quoted(values, most))
            forms.append(Seq(string, Lit(close)))
        text = grammar.add(hint, self._text(values, native, most), until=close)
        return Seq(Lit(head), Alt(text, *forms))

    def _text(self, values: Values, native: bool, most: int | None) -> Ref:
        """Text written as it is: no ``</`` (render_call writes text holding one in CDATA),
        reasoning tag or ``<![CDATA[`` (llguidance's lexer, greedy, would read on as text
        past it), nor ``<parameter=`` in the function form; with ``most``, at most that many
        pieces (see text_avoiding), as the JSON dialects bound a string."""
        words = {"<": ("/", *_NOT_RAW, *(() if native else ("parameter=",)))}
        if most is None:
            return self._shared(values, ("text", native), lambda: text_avoiding(_ANY, words))

        def piece(node: Node) -> Ref:
            return self._shared(values, ("piece", native, most), lambda: node)

        def bounded() -> Node:
            text = text_avoiding(_ANY, words, _ENVELOPE_ESCAPE, most=most, rule=piece)
            # (a text beginning or ending with a newline gains one there: see _field_text)
            return Seq(opt(_NEWLINE), text, opt(_NEWLINE))

        return self._shared(values, ("text", native, most), bounded)

    def _shared(self, values: Values, key: tuple[object, ...], node: Callable[[], Node]) -> Ref:
        """One token rule per ``key`` (``node`` makes its body), shared by every argument:
        one :class:`_Arguments` serves one constraint, whose grammar is one."""
        found = self.rules.get(key)
        if found is None:
            found = self.rules[key] = values.grammar.add(str(key[0]), node(), token=True)
        return found

    def _cdata(self, values: Values) -> Ref:
        """CDATA sections, one after another."""
        key = ("cdata",)
        if key not in self.rules:
            grammar = values.grammar
            inside = grammar.add("cdata", _CDATA_TEXT, until=_CDATA_END)
            self.rules[key] = grammar.add("cdata-run", Rep(Seq(Lit(_CDATA), inside), 1))
        return self.rules[key]


def _quoted(values: Values, most: int) -> Node:
    """A JSON string of at most ``most`` characters (a bound within REPEAT_CAP)."""
    body = values.bounded(0, most)
    assert body is not None
    return Seq(Lit('"'), body, Lit('"'))


def _count(value: object) -> int | None:
    """A length keyword's value, ``None`` when absent or not a count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _leave(values: Values, schema: Mapping[str, object], depth: int = 0) -> None:
    """Note the value rules of a text value's schema (and of its branches) as unenforced."""
    values.note(schema)
    values.unenforced.update(_TEXT_RULES & schema.keys())
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and depth < 8:
            for branch in branches:
                if isinstance(branch, Mapping):
                    _leave(values, branch, depth + 1)


def parse(text: str, tools: Tools = ()) -> Parsed:
    """Read the calls in ``text``; see the module doc for the forms and values.

    Args:
        text: Model output.
        tools: The tools offered; their names start native calls and their
            schemas type the values.

    Returns:
        The calls, the remaining prose, and each broken call as an invalid
        ``ToolCall`` holding its raw text. Nothing is executed.
    """
    return _Reader(text, tools).run()


class _Reader:
    def __init__(self, text: str, tools: Tools) -> None:
        self.text = hide_reasoning(text)
        self.tools = tool_map(tools)
        # What may follow "<" up to ">" in an opening tag, and which opener it is.
        self.openers = {name + end: name for name in self.tools for end in ("", "/")}
        self.openers["tool_call"] = _WRAP
        self.find = Finder(self.text).find
        self.out = Collector(text)

    def run(self) -> Parsed:
        text, pos, scan, openers = self.text, 0, 0, self.openers
        while (lt := text.find("<", scan)) != -1:
            if text.startswith("<<", lt):
                lt = _LT_RUN.match(text, lt).end() - 1  # type: ignore[union-attr]  # "<+" matches
            # An opening tag ends at the next ">", close by: skip "<"s too far from one,
            # and dismiss the rest with one lookup (keeps "<a<a<a…" fast).
            gt = self.find(">", lt + 1)
            if gt == -1:
                break
            if gt - lt > _REACH:
                scan = gt - _REACH
                continue
            kind = openers.get(text[lt + 1 : gt])
            if kind is None and text.startswith(_FUNCTION, lt):
                kind = _FUNCTION
            end = None if kind is None else self._fragment(lt, kind, gt)
            if end is None:
                scan = lt + 1
                continue
            self.out.prose(pos, lt)
            pos = scan = end
            if self.out.full:
                break
        if self.out.full:
            self.out.rest(pos)
        else:
            self.out.prose(pos, len(text))
        return self.out.parsed()

    def _fragment(self, start: int, kind: str, gt: int) -> int | None:
        """Read the call opened by ``text[start:gt + 1]``: its end, or ``None`` for prose."""
        text = self.text
        reader: Callable[[int], _Found | None]
        if kind == _WRAP:
            reader, close = self._wrapper, _WRAP_CLOSE
        elif kind == _FUNCTION:
            reader, close = self._function_alone, _FUNCTION_CLOSE
        elif text[gt - 1] == "/" or text.startswith("<", self._skip(gt + 1)):
            reader, close = (lambda at: self._native(at, kind, None)), f"</{kind}>"
        else:
            return None
        try:
            found = reader(start)
        except _Broken as broken:
            end = self.find(close, broken.pos)
            end = len(text) if end == -1 else end + len(close)
            self.out.error(broken.name, self.out.source[start:end], broken.reason)
            return end
        if found is None:
            return None
        for name, arguments in found[0]:
            self.out.call(name, arguments)
        return found[1]

    def _skip(self, pos: int) -> int:
        return skip_space(self.text, pos)

    def _native_name(self, start: int) -> str | None:
        """The tool named by a ``<tool>`` or ``<tool/>`` tag at ``start``, if any."""
        match = _TAG_NAME.match(self.text, start + 1)
        if match is None or match.group() not in self.tools:
            return None
        return match.group() if self.text.startswith((">", "/>"), match.end()) else None

    def _native(self, start: int, name: str, stop: str | None) -> _Found:
        text, after = self.text, start + 1 + len(name)
        if text.startswith("/>", after):
            return [(name, {})], after + 2
        pos, close = after + 1, f"</{name}>"
        schemas = properties(self.tools.get(name))
        arguments: dict[str, object] = {}
        while True:
            pos = self._skip(pos)
            if pos == len(text):
                raise _Broken(_cut(f"<{name}>", close), pos, name)
            if stop is not None and text.startswith(stop, pos):
                return [(name, arguments)], pos
            if text.startswith(close, pos):
                return [(name, arguments)], pos + len(close)
            if not text.startswith("<", pos) or text.startswith("</", pos):
                raise _Broken(f"expected <argument>value</argument> or {close}", pos, name)
            gt = text.find(">", pos + 1, pos + 2 + _MAX_NAME)
            field = text[pos + 1 : gt] if gt != -1 else ""
            if not _field_ok(field):
                raise _Broken(f"expected <argument>value</argument> or {close}", pos, name)
            raw, pos = self._field_value(gt + 1, field, close)
            self._put(arguments, field, raw, schemas, (name, pos))

    def _field_value(self, pos: int, field: str, call_close: str) -> tuple[str, int]:
        """A value; outside CDATA it ends before the call's own closing tag."""
        close = f"</{field}>"
        cdata = self._cdata(pos, close)
        if cdata is not None:
            return cdata
        limit = self.find(call_close, pos)
        limit = len(self.text) if limit == -1 else limit
        end = self.text.find(close, pos, limit + len(close))  # a field may share the name
        if end == -1:
            raise _Broken(f"<{field}> is never closed", limit, call_close[2:-1])
        return _trim(self.text[pos:end]), end + len(close)

    def _cdata(self, pos: int, close: str) -> tuple[str, int] | None:
        text = self.text
        at = pos + 1 if text.startswith("\n", pos) else pos
        parts = []
        while text.startswith(_CDATA, at):
            end = self.find(_CDATA_END, at + len(_CDATA))
            if end == -1:
                return None
            parts.append(text[at + len(_CDATA) : end])
            at = end + len(_CDATA_END)
        at = at + 1 if parts and text.startswith("\n", at) else at
        return ("".join(parts), at + len(close)) if parts and text.startswith(close, at) else None

    def _put(
        self,
        arguments: dict[str, object],
        key: str,
        raw: str,
        schemas: Mapping[str, object],
        where: tuple[str, int],
    ) -> None:
        if key in arguments:
            raise _Broken(f"argument `{key}` is given twice", where[1], where[0])
        value = convert_text(raw, schemas.get(key))
        # Verbatim text had the envelope escape applied; a decoded JSON string did not.
        arguments[key] = unescape_body(value) if value is raw else value

    def _function_alone(self, start: int) -> _Found | None:
        read = self._function(start, None)
        return None if read is None else ([read[0]], read[1])

    def _function(self, start: int, stop: str | None) -> tuple[_Call, int] | None:
        """A ``<function=…>`` call; ``None`` when its opening tag is not well formed."""
        text, head = self.text, start + len(_FUNCTION)
        gt = text.find(">", head, head + _MAX_NAME + 1)
        name = text[head:gt] if gt != -1 else ""
        if not _name_ok(name):
            return None
        schemas = properties(self.tools.get(name))
        arguments: dict[str, object] = {}
        pos = gt + 1
        while True:
            pos = self._skip(pos)
            if pos == len(text):
                raise _Broken(_cut(f"{_FUNCTION}{name}>", _FUNCTION_CLOSE), pos, name)
            if stop is not None and text.startswith(stop, pos):
                return (name, arguments), pos
            if text.startswith(_FUNCTION_CLOSE, pos):
                return (name, arguments), pos + len(_FUNCTION_CLOSE)
            key_at = pos + len(_PARAMETER)
            gt = (
                text.find(">", key_at, key_at + _MAX_NAME + 1)
                if text.startswith(_PARAMETER, pos)
                else -1
            )
            if gt == -1 or not _name_ok(text[key_at:gt]):
                raise _Broken(
                    "expected <parameter=name>value</parameter> or </function>", pos, name
                )
            raw, end = self._parameter_value(gt + 1, stop)
            self._put(arguments, text[key_at:gt], raw, schemas, (name, pos))
            pos = end

    def _parameter_value(self, pos: int, stop: str | None) -> tuple[str, int]:
        cdata = self._cdata(pos, _PARAMETER_CLOSE)
        if cdata is not None:
            return cdata
        needles = (_PARAMETER_CLOSE, _PARAMETER, _FUNCTION_CLOSE) + ((stop,) if stop else ())
        ends = [found for needle in needles if (found := self.find(needle, pos)) != -1]
        end = min(ends, default=len(self.text))
        raw = _trim(self.text[pos:end])
        closed = self.text.startswith(_PARAMETER_CLOSE, end)
        return raw, end + len(_PARAMETER_CLOSE) if closed else end

    def _wrapper(self, start: int) -> _Found | None:
        text = self.text
        pos = self._skip(start + len(_WRAP))
        if text.startswith(("{", "["), pos):
            raise _Broken(
                "this <tool_call> holds JSON; call a tool as "
                "<tool_name><argument>value</argument></tool_name>",
                pos,
            )
        glm = None
        if text.startswith("<", pos):
            calls, pos = self._tagged(pos)
        else:
            glm = self._glm(pos)
            if glm is None:
                return None
            calls, pos = [glm[0]], glm[1]
        end, pos = pos, self._skip(pos)
        if text.startswith(_WRAP_CLOSE, pos):
            return calls, pos + len(_WRAP_CLOSE)
        if glm is not None and pos == len(text):  # only its closing tag shows a GLM call complete
            raise _Broken(_cut(_WRAP, _WRAP_CLOSE), pos, glm[0][0])
        if glm is None and self._never_closed(pos):
            # Each call inside was closed by its own tag; what follows is not inside.
            return calls, end
        raise _Broken(f"unexpected text inside <tool_call>: {text[pos : pos + 40]!r}", pos)

    def _never_closed(self, pos: int) -> bool:
        """Whether the ``<tool_call>`` being read has no ``</tool_call>`` before the next one
        (a server that stops on it left it out, or the model went on without it)."""
        close, after = self.find(_WRAP_CLOSE, pos), self.find(_WRAP, pos)
        return close == -1 or -1 < after < close

    def _tagged(self, pos: int) -> _Found:
        """The native or function-form calls inside one ``<tool_call>``."""
        calls: list[_Call] = []
        while True:
            end, pos = pos, self._skip(pos)
            if self.text.startswith(_FUNCTION, pos):
                read = self._function(pos, _WRAP_CLOSE)
                if read is None:
                    raise _Broken("a <function=…> tag has no name", pos)
                calls.append(read[0])
                pos = read[1]
            elif (name := self._native_name(pos)) is not None:
                found, pos = self._native(pos, name, _WRAP_CLOSE)
                calls += found
            elif calls:
                return calls, end
            else:
                raise _Broken("expected a call inside <tool_call>", pos)

    def _glm(self, pos: int) -> tuple[_Call, int] | None:
        """A GLM call: ``name<arg_key>k</arg_key><arg_value>v</arg_value>…``."""
        text, limit = self.text, pos + 2 * _MAX_NAME
        lt = text.find("<", pos, limit)
        if lt == -1 and len(text) > limit:
            return None
        lt = len(text) if lt == -1 else lt
        name = text[pos:lt].strip()
        if not name or len(name.split()) != 1:
            return None
        if not text.startswith(("<arg_key>", _WRAP_CLOSE), lt):
            return None  # `use <tool_call> tags` is prose
        schemas = properties(self.tools.get(name))
        arguments: dict[str, object] = {}
        pos = lt
        while text.startswith("<arg_key>", pos):
            key, pos = self._between(pos, "<arg_key>", "</arg_key>", name)
            pos = self._skip(pos)
            if not text.startswith("<arg_value>", pos):
                raise _Broken(f"<arg_key>{key}</arg_key> has no <arg_value>", pos, name)
            raw, pos = self._between(pos, "<arg_value>", "</arg_value>", name)
            self._put(arguments, key.strip(), raw, schemas, (name, pos))
            pos = self._skip(pos)
        return (name, arguments), pos

    def _between(self, pos: int, opening: str, closing: str, name: str) -> tuple[str, int]:
        start = pos + len(opening)
        end = self.find(closing, start)
        if end == -1:
            raise _Broken(f"{opening} is never closed", len(self.text), name)
        return _trim(self.text[start:end]), end + len(closing)


def _cut(opening: str, closing: str) -> str:
    return (
        f"{opening} is never closed with {closing}: the call looks cut off, so it was "
        "not run; write the whole call again"
    )


def _trim(raw: str) -> str:
    """Drop one ``\\n`` after the opening tag and one before the closing tag."""
    start = 1 if raw.startswith("\n") else 0
    end = len(raw) - 1 if raw.endswith("\n") and len(raw) > start else len(raw)
    return raw[start:end]
