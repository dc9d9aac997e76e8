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
#: What may follow the reasoning's end before the calls.
_AFTER_THINK: Final = Rep(Chars.of(" \t\n"), 0, 4)
#: The choices that let the model call any tool offered.
_ANY_TOOL: Final = ("auto", "required")
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
    #: Whether a call starts with the tool's bare name (p-type), which a parser reads as
    #: a call only where no name character comes right before it (see
    #: :meth:`Constraint.structural_tag`).
    bare: bool = False

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
    _more: str | None = attrs.field(repr=False, eq=False)
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
            return Gbnf(gbnf(self._grammar, self._calls), True, self._form.triggers(self._names()))
        return Gbnf(gbnf(self._grammar, self._root), False, ())

    def lark(self) -> str:
        """The grammar for llguidance (its Lark syntax), prose and calls in one."""
        return lark(self._grammar, self._root)

    def structural_tag(self) -> dict[str, object]:
        """The xgrammar structural tag, as vLLM and SGLang take it in ``response_format``.

        A call is a ``tag`` whose ``begin`` and ``end`` are the envelope ``render_call``
        writes and whose ``content`` is the tool's arguments' grammar (EBNF). A named
        choice is that tool's ``tag``; ``"required"`` is a call, then with ``parallel``
        up to ``MAX_PARALLEL_CALLS - 1`` more, written once as one ``grammar`` (a
        structural tag has no bounded repetition in every xgrammar release), so the tag
        grows linearly with the tools. ``"auto"`` is ``triggered_tags`` that stops after
        its tag, so prose comes only before the calls, as in the other grammars; each
        trigger is the shortest start of a call's opening that prose may not hold
        (``<tool_call>``, Llama's ``{``, XML's ``<`` and a letter: xgrammar fires a
        trigger anywhere in prose, so prose holds no text that reads as a call). Where
        a call starts with the tool's bare name (p-type) no trigger tells a call from
        prose (``my_get_time(`` reads as another tool), and where no tool is offered
        there is no call; there the tag is the whole grammar :meth:`gbnf` spells with
        ``lazy=False``.
        """
        form = self._form
        if self._calls is None or (self.choice == "auto" and form.bare):
            whole = {"type": "grammar", "grammar": gbnf(self._grammar, self._root)}
            return {"type": "structural_tag", "format": whole}
        each: list[tuple[str, _Json]] = [
            (form.begin(name), {"type": "grammar", "grammar": gbnf(self._grammar, rule)})
            for name, rule in self._arguments
        ]  # (each call's opening and its arguments' grammar)
        tags = [_tag(begin, arguments, form.end) for begin, arguments in each]
        more = (
            []
            if self._more is None
            else [{"type": "grammar", "grammar": gbnf(self._grammar, self._more)}]
        )

        def then_more(first: _Json) -> _Json:
            return {"type": "sequence", "elements": [first, *more]} if more else first

        if self.choice not in _ANY_TOOL:
            ((begin, arguments),) = each
            calls = _tag(form.open + begin, arguments, form.end + form.close)
        elif form.open:  # one block holding the calls, its opening the trigger
            calls = _tag(form.open, then_more(_one(tags)), form.close)
            if self.choice == "auto":
                calls = _triggered_tags([form.open], [calls], form.prose)
        elif self.choice == "required":
            calls = then_more(_one(tags))
        elif form.trigger and more:  # one tag from the common trigger on, holding the calls
            cut = len(form.trigger)
            firsts = [_tag(begin[cut:], arguments, form.end) for begin, arguments in each]
            inside = then_more(_one(firsts))
            calls = _triggered_tags([form.trigger], [_tag(form.trigger, inside, "")], form.prose)
        else:  # each call's own tag, the calls after the first following them
            calls = then_more(_triggered_tags(list(form.triggers(self._names())), tags, form.prose))
        if self.reasoning:  # (up to four blanks after it, as in the other grammars)
            think = _tag(_THINK, {"type": "any_text"}, _THINK_END)
            blanks = {"type": "grammar", "grammar": _after_think()}
            first = {"type": "sequence", "elements": [think, blanks, calls]}
            calls = {"type": "or", "elements": [first, calls]}
        return {"type": "structural_tag", "format": calls}

    def _names(self) -> list[str]:
        return [name for name, _ in self._arguments]


_Json = dict[str, object]


def _after_think() -> str:
    alone = Grammar()
    alone.define(ROOT, _AFTER_THINK)
    return gbnf(alone, ROOT)


def _tag(begin: str, content: _Json, end: str) -> _Json:
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def _one(options: list[_Json]) -> _Json:
    return options[0] if len(options) == 1 else {"type": "or", "elements": options}


def _triggered_tags(
    openings: list[str], tags: list[_Json], prose: Mapping[str, tuple[str, ...]]
) -> _Json:
    """Prose, then one of ``tags``; each trigger the shortest start of an opening that
    ends with a word prose may not hold (the opening where none does)."""
    words = _words(prose, [])
    starts = [min((w for w in words if o.startswith(w)), key=len, default=o) for o in openings]
    triggers = sorted(set(starts), key=starts.index)
    return {"type": "triggered_tags", "triggers": triggers, "tags": tags,
            "at_least_one": False, "stop_after_first": True,
            "excludes": _words(prose, triggers)}  # fmt: skip


def _words(leads: Mapping[str, tuple[str, ...]], triggers: list[str]) -> list[str]:
    """The words prose may not hold, less those in a trigger (xgrammar would not let the
    trigger be written)."""
    found = [lead + word for lead, words in leads.items() for word in words]
    return sorted(w for w in found if not any(w in t for t in triggers))


def build(
    tools: Tools, form: CallForm, *, choice: str, parallel: bool, reasoning: bool
) -> Constraint:
    """The constraint for ``tools`` written in ``form``; see each dialect's ``constraint``."""
    offered = list(exposed_tools(tools))
    names = [tool.name for tool in offered]
    if choice not in _ANY_TOOL:
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
    calls = _calls(grammar, form, arguments, parallel and choice in _ANY_TOOL)
    think: Node = EMPTY
    if reasoning:
        text = text_avoiding(_ANY, {"<": (_THINK_END[1:],)})
        head = grammar.add("think", text, until=_THINK_END)
        think = opt(Seq(Lit(_THINK), head, _AFTER_THINK))
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
        None if calls is None or calls[2] is None else calls[2].name,
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
) -> tuple[Ref, Ref, Ref | None] | None:
    """The rule for the calls, the rule for what follows their trigger, and with
    ``many`` the rule for the calls after the first (``None`` without tools)."""
    if not arguments:
        return None
    cut = 0 if form.open else len(form.trigger)
    each = [Seq(Lit(form.begin(name)[cut:]), Ref(rule), Lit(form.end)) for name, rule in arguments]
    one = grammar.add("call", Alt(*each) if len(each) > 1 else each[0])
    following: Node = Seq(Lit(form.separator), one if form.open else Seq(Lit(form.trigger), one))
    more = grammar.add("calls-more", Rep(following, 0, MAX_PARALLEL_CALLS - 1)) if many else None
    rest = grammar.add("calls-rest", Seq(one, EMPTY if more is None else more, Lit(form.close)))
    return grammar.add("calls", Seq(Lit(form.trigger), rest)), rest, more
