"""The p-type text dialect: ``search("rust agents", 5)``.

:func:`parse` reads Python-style calls:

* **Bare calls** ``name(...)`` anywhere in the text, when ``name`` is one of
  ``tools`` and comes right before the ``(`` (not after a letter, ``.`` or
  ``def``), and with any name when the call is the whole message. Several per
  reply, one after another.
* **Pythonic lists** ``[f(a=1), g(b='x')]`` (Llama 3.2/4, vLLM's
  "pythonic"): anywhere when the first call names a known tool, and with any
  names when the list is the whole message.
* **Wrapped** in ``<|python_start|>…<|python_end|>`` (Llama 4),
  ``<|tool_call_start|>…<|tool_call_end|>`` (LFM2) or a ```` ```tool_code ````
  fence (Gemma 3): every call inside, bare or listed, whatever its name. A
  wrapper never closed holds the calls right after it, up to the first text
  that is not one: prose after them is outside the wrapper, where an
  unknown name is prose.
* **Gemma 3's** ``default_api.name(...)`` and ``print(default_api.name(...))``:
  the call to ``name`` (the ``print`` and the module are not part of it), read
  where a bare call would be: anywhere when ``name`` is one of ``tools``, and
  with any name inside a wrapper or as the whole message. ``default_api``
  makes no unknown name a call in prose (``Never run default_api.rm(path='/')``).

Reasoning (``<think>…</think>``, an unclosed ``<think>`` to the end of the
text, or everything before a ``</think>`` that has no ``<think>``) is never
read for calls: it stays in ``Parsed.text``, tags and all.

Outside a list or a wrapper an unknown name is prose; inside one it is
returned as written, for dispatch's unknown-tool policy to answer.

**Arguments.** Positional ones map to the tool's declared order
(``PType.parameters`` when the tool's format is ``PType``, else its schema's
property order); keywords by name; ``**{"key": value}`` for keys that are
not identifiers. Values are Python literals: strings, integers, floats,
``True``/``False``/``None`` (and ``true``/``false``/``null``), lists, tuples
(read as lists) and dicts with string keys; a raw newline inside a quoted
string is read as ``\\n``. Anything else (a name, arithmetic, a call, a set,
bytes) makes that call an error.

**Safety.** Nothing is evaluated: a candidate is first checked by a small
tokenizer that admits only literal-call syntax — no operators but a sign on
a number, no attribute, subscript or call chains, at most one ``:`` per dict
item — so the syntax tree is no deeper than the brackets. Then
:func:`ast.parse` reads it and the argument nodes are converted one by one
(the way :func:`ast.literal_eval` works, never ``eval``). A fragment longer
than :data:`MAX_CHARS`, with more than :data:`MAX_TOKENS` tokens or nested
deeper than :data:`MAX_DEPTH` is reported as an error without reaching
``ast``. The scan is linear: a failed candidate is consumed as an error, and
regular expressions only match anchored at one position.

:func:`constraint` builds a decoding constraint that holds a model to calls
of the tools as :func:`render_call` writes them (see
docs/how-to/constrained-decoding.md).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Final

from tinytools._declare.registry import AnyTool
from tinytools._declare.spec import NAME_PATTERN
from tinytools._declare.tool_format import PType
from tinytools._wire import ToolCall

from ._constraint import CallForm, Constraint, build
from ._dialect import (
    Collector,
    Finder,
    Tools,
    arguments_of,
    catalogue,
    hide_reasoning,
    key_text,
    properties,
    skip_space,
    tool_map,
)
from ._envelope import escape_json
from ._grammar import EMPTY, Alt, Lit, Node, Ref, Seq
from ._json_grammar import PYTHON_ESCAPES, JsonStyle, Values, member_names
from ._parsed import Parsed
from ._pyscan import (
    MAX_CHARS,
    MAX_DEPTH,
    MAX_TOKENS,
    Broken,
    Scan,
    expression,
    literal,
    plain_name,
    scan_fragment,
    source_text,
)
from ._writable import refusal, unwritable

__all__ = [
    "MAX_CHARS",
    "MAX_DEPTH",
    "MAX_TOKENS",
    "PROTOCOL",
    "constraint",
    "parse",
    "render",
    "render_call",
]

#: How to call a tool in this dialect; the first part of :func:`render`.
PROTOCOL: Final = (
    "To call a tool, write a Python-style call, for example "
    'search("rust agents", 5) for a tool search(query, limit). Give arguments in the '
    'listed order or by name (search(query="rust agents")). Values are Python literals: '
    '"text", 5, 2.5, True, False, None, [lists] and {"key": value} dicts. '
    "Write one call per line; you may make several calls in one reply."
)

_PYTHON_START, _LFM2_START = "<|python_start|>", "<|tool_call_start|>"
_TOOL_CODE = "```tool_code"
_WRAPPERS: Final = {
    _PYTHON_START: "<|python_end|>",
    _LFM2_START: "<|tool_call_end|>",
    _TOOL_CODE: "```",
}
# Gemma 3 writes a call as a method of its `default_api` module, often printed.
_API, _PRINT = "default_api.", "print("
_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def render(tools: Tools) -> str:
    """The catalogue for the system prompt: :data:`PROTOCOL`, then each tool.

    Each tool is its signature (positional parameters in order, then ``*``
    and the keyword-only ones) and description, then one line per parameter
    with its type, whether it is required, its default and its description.
    Hidden tools are left out; with no tool left the result is ``""``.
    """
    return catalogue(PROTOCOL, tools, _signature, "{}")


def _signature(tool: AnyTool) -> str:
    order = _order(tool)
    rest = [name for name in properties(tool) if name not in order]
    names = [key_text(name) for name in [*order, *(["*", *rest] if rest else [])]]
    return f"{tool.name}({', '.join(names)})"


def render_call(call: ToolCall, tools: Tools) -> str:
    """The text a model writes for ``call``, which :func:`parse` reads back.

    Leading arguments in the declared order are positional; the rest are
    keywords, and keys that are not ASCII identifiers, or that the tool in
    ``tools`` does not declare, go in one ``**{...}``. Where ``tools`` holds
    the tool, the keys come in its schema's order (see
    :func:`tinytools.formats.json_in_tag.render_call`): the one order
    :func:`constraint` takes. Strings are double-quoted with JSON escapes (envelope tags
    written ``\\u003c…``); an integer too long for Python's int-to-str
    digit limit is written in hexadecimal, which reads back the same.

    It never raises. A call :func:`parse` could not read back as the same
    call is refused: the result is the note ``[tool call not written:
    <reason>]``, which parses as prose. That is a name outside the tool-name
    grammar (``^[A-Za-z_][A-Za-z0-9_-]{0,63}$``), arguments nested deeper
    than :data:`MAX_DEPTH` allows (30 levels below the arguments object), a
    call longer than :data:`MAX_TOKENS` tokens or :data:`MAX_CHARS`
    characters (the parser's limits: the text is checked by its scanner), a
    non-finite number, or a value that is not JSON. Arguments that are not
    an object are written as one string after ``**`` (``name(**"{oops")``),
    which parses back as a broken call (an error), never as a call.
    """
    if NAME_PATTERN.fullmatch(call.name) is None:
        return refusal("its tool name cannot be written as a Python-style call")
    arguments = arguments_of(call, tools)
    if arguments is None:
        return escape_json(f"{call.name}(**{_literal_text(str(call.arguments))})")
    problem = unwritable(arguments, MAX_DEPTH - 1, huge_ints=True)
    if problem is not None:
        return refusal(problem)
    tool = tool_map(tools).get(call.name)
    order = _order(tool)
    parts: list[str] = []
    for key in order:
        if key not in arguments:
            break
        parts.append(_literal_text(arguments[key]))
    rest = [key for key in arguments if key not in order[: len(parts)]]
    declared = None if tool is None else set(member_names(tool.parameters))
    plain = [k for k in rest if _keyword(k) and (declared is None or k in declared)]
    parts += [f"{key}={_literal_text(arguments[key])}" for key in plain]
    if len(plain) < len(rest):
        parts.append("**" + _literal_text({k: arguments[k] for k in rest if k not in plain}))
    text = escape_json(f"{call.name}({', '.join(parts)})")
    # What parse would refuse (more than MAX_TOKENS tokens, MAX_CHARS characters) is
    # refused here too: the parser's own scanner reads the text first.
    scan = Scan("name", -1)
    scan_fragment(text, len(call.name), len(text), scan)
    return (
        text if scan.problem is None else refusal(f"the call cannot be read back: {scan.problem}")
    )


def _literal_text(value: object) -> str:
    """A JSON value as a Python literal (checked by :func:`unwritable` first; bounded depth)."""
    if isinstance(value, str):
        return '"' + value.translate(_ESCAPES) + '"'
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return repr(value)
        except ValueError:  # past the int-to-str digit limit: hexadecimal has none
            return hex(value)
    if value is None or isinstance(value, (bool, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal_text(item) for item in value) + "]"
    if isinstance(value, dict):
        items = (f"{_literal_text(str(k))}: {_literal_text(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"{type(value).__name__} is not a JSON value")


# JSON-style escapes Python reads the same way; lone surrogates escaped so the
# source can be encoded.
_ESCAPES: Final = str.maketrans(
    {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    | {chr(c): f"\\x{c:02x}" for c in [*range(32), 127] if chr(c) not in "\n\r\t"}
    | {chr(c): f"\\u{c:04x}" for c in range(0xD800, 0xE000)}
)


def _keyword(key: str) -> bool:
    """Whether ``key`` can be written as a keyword (``key=value``)."""
    return key.isascii() and plain_name(key)


# Calls as render_call writes them, one right after another (the next name follows the
# `)`, which parse reads as a new call); values as Python literals, with ", " and ": ",
# every `<` of a reasoning tag escaped. Prose holds no `(` or `[`, so no text in it reads
# as a call (a bare, listed or whole-message one), nor a reasoning tag; it is lines, and
# the calls start a line, so no name runs on into a call's.
_FORM: Final = CallForm(
    trigger="",
    begin=lambda name: f"{name}(",
    end=")",
    separator="",
    style=JsonStyle(
        ", ",
        ": ",
        escape_json,
        {"<": ("think>", "/think>")},
        words=("True", "False", "None"),
        spell=lambda value: _literal_text(value),
        escapes=PYTHON_ESCAPES,
    ),
    prose={"(": ("",), "[": ("",), "<": ("think>", "/think>")},
    arguments=lambda values, tool: _arguments_rule(values, tool),
    bare=True,
)


def constraint(
    tools: Tools, *, choice: str = "auto", parallel: bool = True, reasoning: bool = False
) -> Constraint:
    """A decoding constraint that lets a model write only calls of ``tools`` in this dialect.

    Calls are ``name(positional, keyword=value, **{"other key": value})`` as
    :func:`render_call` writes them, one right after another; every call it
    writes for arguments the schema accepts is accepted, and every text accepted
    reads back with :func:`parse` into calls of ``tools`` only. With
    ``choice="auto"`` prose comes first, in lines holding no ``(`` or ``[``
    (so nothing in it reads as a call), and the calls start a line; the lazy
    GBNF grammar's triggers are each tool's ``name(``. Not held: a call longer
    than :data:`MAX_TOKENS` tokens or nested deeper than :data:`MAX_DEPTH`
    (:func:`parse` refuses it as a broken call), and an integer past Python's
    digit limit, which :func:`render_call` writes in hexadecimal. See
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
    return build(tools, _FORM, choice=choice, parallel=parallel, reasoning=reasoning)


def _arguments_rule(values: Values, tool: AnyTool) -> Ref:
    """The rule for a call's argument list as :func:`render_call` writes it: the leading
    declared arguments positional, up to the first one absent; then the declared keys that
    are identifiers as keywords, in schema order; then one ``**{...}`` of the other keys.
    Linear in the schema where every declared key is an identifier (one rule per key and
    state); each positional prefix has its own ``**{...}`` otherwise."""
    grammar, sep, schema = values.grammar, Lit(", "), tool.parameters
    values.note(schema)
    props = properties(tool)
    names = member_names(schema)
    listed = schema.get("required")
    required = {r for r in listed if isinstance(r, str)} if isinstance(listed, list) else set()
    order = [name for name in _order(tool) if name in names]
    value = {n: values.of(props.get(n, True), schema, f"{tool.name}-{n}") for n in names}
    extra = schema.get("additionalProperties", None if "properties" in schema else True)
    if "patternProperties" in schema:
        extra = True
    hint = f"{tool.name}-args"
    rules: dict[tuple[object, ...], Ref] = {}

    def rule(key: tuple[object, ...], make: Callable[..., Node], *args: object) -> Ref:
        """The rule for ``key``, made by ``make(*args)`` once (tails of the keyword part
        are shared)."""
        if (found := rules.get(key)) is None:
            found = rules[key] = grammar.add(hint, make(*args))
        return found

    def item(state: bool, node: Node, then: Node, skip: Node | None) -> Node:
        """``node`` (after ``", "`` when something came before) then ``then``, or ``skip``."""
        present = Seq(sep if state else EMPTY, node, then)
        return present if skip is None else Alt(present, skip)

    def unpacked(inside: tuple[str, ...], state: bool) -> Node:
        """``**{...}`` of the keys of ``inside`` and the undeclared ones."""
        members = {"type": "object", "properties": {n: props.get(n, True) for n in inside},
                   "required": [n for n in inside if n in required],
                   "additionalProperties": False if extra is None else extra}  # fmt: skip
        more = Seq(Lit("**"), values.of(members, schema, f"{hint}-more"))
        return item(state, more, EMPTY, None if any(n in required for n in inside) else EMPTY)

    def keyword(state: bool, key: str, then: dict[bool, Node]) -> Node:
        """``key=value``, then ``then``; or, unless ``key`` is required, ``then`` alone."""
        pair = Seq(Lit(f"{key}="), value[key])
        return item(state, pair, then[True], None if key in required else then[state])

    def keywords(rest: tuple[str, ...], written: bool) -> Node:
        """The keyword part for the keys of ``rest`` (``written``: something came before):
        the identifiers as keywords, then ``**{...}`` of the others and undeclared keys."""
        inside = tuple(n for n in rest if not _keyword(n))
        named = [n for n in rest if _keyword(n)]
        states = (True,) if written else (True, False)  # (what follows a written part)
        after: dict[bool, Node] = dict.fromkeys(states, EMPTY)
        if inside or extra not in (None, False):
            after = {state: rule(("**", inside, state), unpacked, inside, state)
                     for state in states}  # fmt: skip
        for at in reversed(range(len(named))):
            key, then = named[at], after
            after = {state: rule((tuple(named[at:]), inside, state), keyword, state, key, then)
                     for state in states}  # fmt: skip
        return after[written]

    def positional(count: int, written: bool) -> Node:
        options: list[Node] = []
        if count < len(order):
            following = positional(count + 1, True)
            options.append(Seq(sep if written else EMPTY, value[order[count]], following))
        if count == len(order) or order[count] not in required:
            rest = tuple(n for n in names if n not in order[: count + 1])
            options.append(keywords(rest, written))
        return grammar.add(hint, Alt(*options))

    return grammar.add(hint, positional(0, False))


def _order(tool: AnyTool | None) -> tuple[str, ...]:
    """The names positional arguments map to."""
    if tool is None:
        return ()
    if isinstance(tool.format, PType):
        return tool.format.parameters
    return tuple(properties(tool))


def parse(text: str, tools: Tools = ()) -> Parsed:
    """Read the calls in ``text``; see the module doc for the forms and values.

    Args:
        text: Model output.
        tools: The tools offered; their names start bare calls and give the
            order of positional arguments.

    Returns:
        The calls, the remaining prose, and each broken call as an invalid
        ``ToolCall`` holding its raw text. Nothing is executed.
    """
    return _Reader(text, tool_map(tools)).run()


def _list_start(text: str, start: int, floor: int) -> int | None:
    """The ``[`` opening a list whose first item is the call starting at ``start``."""
    at = start
    while at > floor and start - at < 32 and text[at - 1] in " \t\r\n":
        at -= 1
    return at - 1 if at > floor and text[at - 1] == "[" else None


def _name_start(text: str, at: int) -> int | None:
    """Where the call name ending at ``at`` starts, if one does (at a word boundary)."""
    start = at
    while start > 0 and at - start < 64 and text[start - 1] in _NAME_CHARS:
        start -= 1
    if start == at or text[start] in "0123456789-":
        return None
    if start > 0 and text[start - 1] in _NAME_CHARS:
        return None
    if start > 0 and text[start - 1] == "." and not _api_call(text, start):
        return None
    return None if text[max(0, start - 4) : start] == "def " else start


def _api_call(text: str, start: int) -> bool:
    """Whether the name at ``start`` follows ``default_api.`` (a whole word)."""
    at = start - len(_API)
    return (
        at >= 0
        and text.startswith(_API, at)
        and (at == 0 or (text[at - 1] not in _NAME_CHARS and text[at - 1] != "."))
    )


class _Reader:
    def __init__(self, text: str, tools: dict[str, AnyTool]) -> None:
        self.out = Collector(text)
        self.text, self.tools = hide_reasoning(text), tools
        text = self.text
        self.finder = Finder(text)
        self.whole = (len(text) - len(text.lstrip()), len(text.rstrip()))
        # Outside a wrapper and away from the start a call name is a tool name,
        # so a "(" after any other character is dismissed at once.
        self.last_chars = {name[-1] for name in tools}

    def run(self) -> Parsed:
        end = self._region(0, len(self.text), wrapped=False)
        if self.out.full:
            self.out.rest(end)
        return self.out.parsed()

    def _region(self, pos: int, end: int, *, wrapped: bool) -> int:
        """Read ``text[pos:end]`` (calls, wrappers outside one, prose); where reading stopped."""
        text, scan, near = self.text, pos, self.whole[0] + 65
        last_chars = _NAME_CHARS if wrapped else self.last_chars
        # The next "(" and "<|" at or after `scan`, found again only once passed.
        paren, mark = text.find("(", pos, end), -1 if wrapped else self._marker(pos, end)
        while not self.out.full:
            paren = text.find("(", scan, end) if -1 < paren < scan else paren
            mark = self._marker(scan, end) if -1 < mark < scan else mark
            at, stop = paren, None
            if mark != -1 and (at == -1 or mark < at):
                at, stop = mark, self._wrapper(mark, pos)
            elif at == -1:
                break
            elif at and (
                text[at - 1] in last_chars or (at <= near and text[at - 1] in _NAME_CHARS)
            ):
                stop = self._candidate(at, end, wrapped, pos)
            pos = pos if stop is None else stop
            scan = at + 1 if stop is None else stop
        if not self.out.full:
            self.out.prose(pos, end)
        return pos

    def _marker(self, pos: int, end: int) -> int:
        """The next wrapper marker in ``text[pos:end]``, or -1."""
        found = [at for m in _WRAPPERS if -1 < (at := self.finder.find(m, pos)) < end]
        return min(found, default=-1)

    def _wrapper(self, at: int, prose: int) -> int | None:
        """Read a ``<|python_start|>``-style block at ``at``; where it ends."""
        marker = next((m for m in _WRAPPERS if self.text.startswith(m, at)), None)
        if marker is None:
            return None
        self.out.prose(prose, at)
        body, closer = at + len(marker), _WRAPPERS[marker]
        close = self.finder.find(closer, body)
        if close == -1:
            return self._unclosed(body)
        stop = self._region(body, close, wrapped=True)
        return stop if self.out.full else close + len(closer)

    def _unclosed(self, pos: int) -> int:
        """Read the calls right after a wrapper that is never closed; where they end.

        The wrapper holds the calls that follow it one after another; the first text that
        is not one ends it (prose after a call, not inside a wrapper, names only tools).
        """
        text = self.text
        while not self.out.full:
            start = skip_space(text, pos)
            paren = self.finder.find("(", start)
            stop = None if paren == -1 else self._candidate(paren, len(text), True, pos, start)
            if stop is None:
                break
            pos = stop
        return pos

    def _candidate(
        self, at: int, end: int, wrapped: bool, prose: int, anchor: int | None = None
    ) -> int | None:
        """Read a call or list whose first ``(`` is at ``at``; its end, or ``None`` for prose
        (also when it does not start at ``anchor``, if one is given)."""
        text = self.text
        start = _name_start(text, at)
        if start is None:
            return None
        name = text[start:at]
        if name == "print" and text.startswith(_API, at + 1):
            return None  # print(default_api.f(…)): the call is f's
        api = start > prose and text[start - 1] == "."
        bracket = None if api else _list_start(text, start, prose)
        first = start - len(_API) if api else start if bracket is None else bracket
        printed = api and first - len(_PRINT) >= prose and text.startswith(_PRINT, first - 6)
        first -= len(_PRINT) if printed else 0
        if anchor is not None and first != anchor:
            return None
        # (`default_api.` says a call is meant, not which names are tools: as a bare call)
        certain = wrapped or name in self.tools
        if not certain and first != self.whole[0]:
            return None
        scan = Scan("name", -1) if bracket is None else Scan("start", 1)
        stop, fixes = scan_fragment(text, at if bracket is None else bracket, end, scan)
        after = skip_space(text, stop) if printed and scan.problem is None else end
        closed = after + 1 if after < end and text[after] == ")" else None  # print(…)'s
        if not certain and (scan.problem is not None or (closed or stop) != self.whole[1]):
            return None  # not the whole message after all: prose
        self.out.prose(prose, first)
        if closed is not None:
            raw = self.out.source[first:closed]
            self._calls(raw, [name], source_text(text, at, stop, fixes), name)
            return closed
        if scan.problem is not None:
            self.out.error(name, self.out.source[first:stop], scan.problem)
        elif bracket is None:
            self._calls(
                self.out.source[start:stop], [name], source_text(text, at, stop, fixes), name
            )
        else:
            fixes += [(a, b, "_" * (b - a)) for a, b in scan.renamed]
            self._calls(
                self.out.source[first:stop], scan.names, source_text(text, first, stop, fixes), None
            )
        return stop

    def _calls(self, raw: str, names: list[str], source: str, bare: str | None) -> None:
        """Record the calls of a parsed fragment (``bare``: the name of a bare call)."""
        if bare is not None:
            source = (bare if plain_name(bare) else "_" * len(bare)) + source
        node = expression(source)
        if isinstance(node, str):
            self.out.error(names[0] if names else "", raw, node)
            return
        elements = [node] if bare is not None else node.elts if isinstance(node, ast.List) else []
        calls = iter(names)
        for element in elements:
            name = next(calls, "") if isinstance(element, ast.Call) else ""
            try:
                self.out.call(name, self._arguments(element, name))
            except Broken as broken:
                self.out.error(name, ast.get_source_segment(source, element) or raw, str(broken))

    def _arguments(self, node: ast.expr, name: str) -> dict[str, object]:
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            raise Broken("expected a call, such as tool_name(argument=value)")
        order = _order(self.tools.get(name))
        if len(node.args) > len(order):
            if name not in self.tools:
                raise Broken(f"`{name}` is not a known tool, so give its arguments by name")
            raise Broken(
                f"`{name}` takes at most {len(order)} positional arguments ({', '.join(order)})"
            )
        arguments: dict[str, object] = {}
        given: list[object] = [
            {key: literal(arg)} for key, arg in zip(order, node.args, strict=False)
        ]
        given += [
            {kw.arg: literal(kw.value)} if kw.arg else literal(kw.value) for kw in node.keywords
        ]
        for part in given:
            if not isinstance(part, dict):
                raise Broken("`**` must be followed by a dict")
            for key, value in part.items():
                if key in arguments:
                    raise Broken(f"argument `{key}` is given twice")
                arguments[key] = value
        return arguments
