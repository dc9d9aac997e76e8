"""Decoding constraints built from the tools' own specs: :class:`Constraint`, :class:`Gbnf`.

A text dialect describes how ``render_call`` writes a call (:class:`CallForm`);
:func:`build` turns the tools' schemas and that form into one grammar
(:mod:`tinytools.formats._grammar`, values by
:mod:`tinytools.formats._json_grammar`), which :class:`Constraint` spells for
llama.cpp, llguidance and xgrammar. Nothing here imports a backend.

The calls are written exactly as ``render_call`` writes them, envelope and
JSON spacing included, and nothing follows the last one. At most
:data:`MAX_PARALLEL_CALLS` calls are written, one right after another: with
Gemma 3 270M, a grammar that let a newline follow a call read that newline (the
model's favourite next token) as the start of another call, and the model
repeated its call until the token limit; with nothing between calls it stopped
after its call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, Literal, NamedTuple

import attrs

from tinytools._declare.registry import AnyTool

from ._grammar import EMPTY, ROOT, Alt, Chars, Grammar, Lit, Node, Ref, Rep, Seq, gbnf, lark, opt
from ._json_grammar import JsonStyle, Values, text_avoiding
from ._tools import Tools, exposed_tools

__all__ = ["MAX_PARALLEL_CALLS", "CallForm", "Constraint", "Gbnf", "build"]

#: The most calls one reply may hold under ``parallel=True``, in every backend's form.
MAX_PARALLEL_CALLS: Final = 4

_THINK, _THINK_END = "<think>", "</think>"
_ANY: Final = Chars((), negated=True)


class Gbnf(NamedTuple):
    """A grammar for llama.cpp: its text, whether it is lazy, and the words that start it.

    A lazy grammar constrains nothing until the model writes one of ``triggers``;
    from there on the text, trigger included, must match. llama.cpp's server takes
    the three as ``grammar``, ``grammar_lazy`` and ``grammar_triggers``.
    """

    text: str
    lazy: bool
    triggers: tuple[str, ...]


@attrs.frozen
class CallForm:
    """How one dialect writes its calls, byte for byte as its ``render_call`` does."""

    #: The text a call (or, with ``open``, the block of calls) starts with.
    trigger: str
    #: A tool's name -> the text before its arguments (after ``open``).
    begin: Callable[[str], str]
    #: The text after the arguments.
    end: str
    #: Between two calls.
    separator: str
    #: How the arguments' JSON is written.
    style: JsonStyle
    #: Lead character -> the words after it that prose may not hold (they would read
    #: as a call or as reasoning).
    prose: Mapping[str, tuple[str, ...]]
    #: Around all the calls (DeepSeek's calls block); ``open`` is then the trigger.
    open: str = ""
    close: str = ""
    #: The rule for a tool's arguments (``None``: one JSON object, as the JSON dialects
    #: write them).
    arguments: Callable[[Values, AnyTool], Ref] | None = None

    def triggers(self, names: list[str]) -> tuple[str, ...]:
        """The words that start the calls: ``trigger``, or where it is ``""`` (p-type,
        whose calls start with the tool's name) each call's ``begin``. With no trigger,
        prose is lines and the calls start a line (see :func:`build`)."""
        return (self.trigger,) if self.trigger else tuple(self.begin(name) for name in names)


Choice = Literal["auto", "required"] | str


@attrs.frozen
class Constraint:
    """A decoding constraint for one set of tools in one dialect.

    Build it with the dialect's ``constraint(tools, ...)``. ``unenforced`` names
    the schema keywords the grammars leave to ``Tool.validate`` (dispatch still
    validates every call).
    """

    choice: str
    parallel: bool
    reasoning: bool
    unenforced: frozenset[str]
    _grammar: Grammar = attrs.field(repr=False, eq=False)
    _form: CallForm = attrs.field(repr=False, eq=False)
    _root: str = attrs.field(repr=False, eq=False)
    _calls: str | None = attrs.field(repr=False, eq=False)
    _arguments: tuple[tuple[str, str], ...] = attrs.field(repr=False, eq=False)

    def gbnf(self, *, lazy: bool | None = None) -> Gbnf:
        """The grammar for llama.cpp (GBNF; rule names ``[a-z0-9-]``).

        Args:
            lazy: ``None`` (the default): lazy for ``choice="auto"`` — prose is
                free and the grammar starts at the dialect's opening text —
                else eager. ``False``: the eager form, prose included, for
                llama-cpp-python (whose ``LlamaGrammar`` has no lazy mode).

        Raises:
            ValueError: ``lazy=True`` for a choice other than ``"auto"``.
        """
        if lazy and self.choice != "auto":
            raise ValueError(
                "a lazy grammar constrains only what follows its trigger, so it suits only "
                f'choice="auto", not {self.choice!r}; call gbnf() without lazy'
            )
        wanted = lazy if lazy is not None else self.choice == "auto"
        if wanted and self._calls is not None:
            names = [name for name, _ in self._arguments]
            return Gbnf(gbnf(self._grammar, self._calls), True, self._form.triggers(names))
        return Gbnf(gbnf(self._grammar, self._root), False, ())

    def lark(self) -> str:
        """The grammar for llguidance (its Lark syntax), prose and calls in one."""
        return lark(self._grammar, self._root)

    def structural_tag(self) -> dict[str, object]:
        """The xgrammar structural tag, as vLLM and SGLang take it in ``response_format``.

        Each call is a ``tag`` whose ``begin`` and ``end`` are the envelope
        ``render_call`` writes and whose ``content`` is the arguments' grammar (EBNF).
        A named choice is that tool's ``tag``; ``"required"`` is a call, or with
        ``parallel`` up to :data:`MAX_PARALLEL_CALLS` of them (``or`` and
        ``sequence``: a structural tag has no bounded repetition in every xgrammar
        release); ``"auto"`` is ``triggered_tags`` that stops after its tag, so
        prose comes only before the calls, as in the other grammars.
        """
        form = self._form
        tags = [
            _tag(form.begin(name), {"type": "grammar", "grammar": gbnf(self._grammar, rule)},
                 form.end)
            for name, rule in self._arguments
        ]  # fmt: skip
        many = self.parallel and self.choice in ("auto", "required")
        calls = _calls_tag(tags, form.separator, many)
        if self.choice not in ("auto", "required"):
            call = tags[0]
            begin, end = str(call["begin"]), str(call["end"])
            calls = _tag(form.open + begin, call["content"], end + form.close)  # type: ignore[arg-type]
        elif form.open:  # one block holding the calls
            calls = _tag(form.open, calls, form.close)
        if self.choice == "auto":
            triggered = [calls] if form.open else tags
            if many and form.trigger and not form.open:  # one tag from the trigger on
                cut = len(form.trigger)
                firsts = [_tag(str(t["begin"])[cut:], t["content"], form.end) for t in tags]  # type: ignore[arg-type]
                triggered = [_tag(form.trigger, _calls_tag(tags, form.separator, many, firsts), "")]
            elif many and not form.open:  # no common trigger: a tag from each call's begin on
                triggered = [
                    _tag(str(t["begin"]),
                         _calls_tag(tags, form.separator, many, [_tag("", t["content"], form.end)]),  # type: ignore[arg-type]
                         "")
                    for t in tags
                ]  # fmt: skip
            triggers = list(form.triggers([name for name, _ in self._arguments]))
            calls = {"type": "triggered_tags", "triggers": triggers, "tags": triggered,
                     "at_least_one": False, "stop_after_first": True,
                     "excludes": _words(form.prose, triggers)}  # fmt: skip
        if self.reasoning:
            think = _tag(_THINK, {"type": "any_text"}, _THINK_END)
            first = {"type": "sequence", "elements": [think, calls]}
            calls = {"type": "or", "elements": [first, calls]}
        return {"type": "structural_tag", "format": calls}


_Json = dict[str, object]


def _tag(begin: str, content: _Json, end: str) -> _Json:
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def _calls_tag(
    tags: list[_Json], separator: str, many: bool, firsts: list[_Json] | None = None
) -> _Json:
    """One of ``tags`` (the first from ``firsts`` where given), or with ``many`` up to
    :data:`MAX_PARALLEL_CALLS` of them with ``separator`` between."""

    def one(options: list[_Json]) -> _Json:
        return options[0] if len(options) == 1 else {"type": "or", "elements": options}

    call = one(tags)
    between = [{"type": "const_string", "value": separator}] if separator else []

    def up_to(head: _Json, count: int) -> _Json:
        if count == 1:
            return head
        more = {"type": "sequence", "elements": [head, *between, up_to(call, count - 1)]}
        return {"type": "or", "elements": [head, more]}

    return up_to(one(firsts or tags), MAX_PARALLEL_CALLS if many else 1)


def _words(leads: Mapping[str, tuple[str, ...]], triggers: list[str]) -> list[str]:
    found = [lead + word for lead, words in leads.items() for word in words]
    return sorted(w for w in found if not any(t.startswith(w) for t in triggers))


def build(
    tools: Tools, form: CallForm, *, choice: str, parallel: bool, reasoning: bool
) -> Constraint:
    """The constraint for ``tools`` written in ``form``; see each dialect's ``constraint``."""
    offered = list(exposed_tools(tools))
    names = [tool.name for tool in offered]
    if choice not in ("auto", "required"):
        if choice not in names:
            listed = ", ".join(map(repr, names)) or "none"
            raise ValueError(
                f'choice {choice!r} is not "auto", "required" or the name of a tool offered '
                f"(offered: {listed})"
            )
        offered = [tool for tool in offered if tool.name == choice]
    elif choice == "required" and not offered:
        raise ValueError('choice="required" needs at least one tool to call; none is offered')
    grammar = Grammar()
    root = ROOT
    values = Values(grammar, form.style)
    rule = form.arguments or _arguments
    arguments = tuple((tool.name, rule(values, tool).name) for tool in offered)
    calls = _calls(grammar, form, arguments, parallel and choice in ("auto", "required"))
    think: Node = EMPTY
    if reasoning:
        text = text_avoiding(_ANY, {"<": (_THINK_END[1:],)})
        head = grammar.add("think", text, until=_THINK_END)
        think = opt(Seq(Lit(_THINK), head, Rep(Chars.of(" \t\n"), 0, 4)))
    if choice == "auto" and not form.trigger:  # prose is lines; calls start a line
        line_text = text_avoiding(_ANY.without("\n"), form.prose)
        lines = Rep(grammar.add("prose-line", line_text, until="\n"))
        last = Seq(lines, grammar.add("prose", line_text, token=True))
        body: Node = last if calls is None else Alt(last, Seq(lines, calls[0]))
        grammar.define(root, Seq(think, body))
    elif choice == "auto":
        prose_text = text_avoiding(_ANY, form.prose)
        prose = grammar.add("prose", prose_text, token=True)
        if calls is None:
            grammar.define(root, Seq(think, prose))
        else:
            head = grammar.add("prose-head", prose_text, until=form.trigger)
            grammar.define(root, Seq(think, Alt(prose, Seq(head, calls[1]))))
    else:
        assert calls is not None
        grammar.define(root, Seq(think, calls[0]))
    return Constraint(
        choice,
        parallel,
        reasoning,
        frozenset(values.unenforced),
        grammar,
        form,
        root,
        None if calls is None else calls[0].name,
        arguments,
    )


def _arguments(values: Values, tool: AnyTool) -> Ref:
    """The rule for a tool's arguments: always an object (``render_call`` writes one)."""
    schema: Mapping[str, object] = tool.parameters
    if not isinstance(schema.get("type"), (str, list)):
        schema = {**schema, "type": "object"}
    return values.of(schema, schema, tool.name)


def _calls(
    grammar: Grammar, form: CallForm, arguments: tuple[tuple[str, str], ...], many: bool
) -> tuple[Ref, Ref] | None:
    """The rule for the calls and the rule for what follows their trigger (``None``
    without tools)."""
    if not arguments:
        return None
    cut = 0 if form.open else len(form.trigger)
    each = [Seq(Lit(form.begin(name)[cut:]), Ref(rule), Lit(form.end)) for name, rule in arguments]
    one = grammar.add("call", Alt(*each) if len(each) > 1 else each[0])
    following: Node = Seq(Lit(form.separator), one if form.open else Seq(Lit(form.trigger), one))
    more = Rep(following, 0, MAX_PARALLEL_CALLS - 1) if many else EMPTY
    rest = grammar.add("calls-rest", Seq(one, more, Lit(form.close)))
    return grammar.add("calls", Seq(Lit(form.trigger), rest)), rest
