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
        ``parallel`` a call and up to ``MAX_PARALLEL_CALLS - 1`` more (``or`` and
        ``sequence``: a structural tag has no bounded repetition in every xgrammar
        release). ``"auto"`` is ``triggered_tags`` that stops after its tag, so prose
        comes only before the calls, as in the other grammars. Where the calls share an
        opening text (``<tool_call>``) that text is the one trigger and its tag holds
        the calls; where they do not (XML, each call its own tag) each call's opening
        is one, and the calls that may follow the first come after the triggered tags,
        each tool's tag written once there, so the tag grows linearly with the tools.
        Where a call starts with the tool's bare name (p-type) no trigger tells a call
        from prose (xgrammar fires a trigger anywhere, and a name run on into another
        word, ``my_get_time(``, reads otherwise), so ``"auto"`` is the whole grammar
        :meth:`gbnf` spells with ``lazy=False``: prose in lines, then the calls.
        """
        form = self._form
        if self.choice == "auto" and form.bare:
            whole = {"type": "grammar", "grammar": gbnf(self._grammar, self._root)}
            return {"type": "structural_tag", "format": whole}
        tags = [
            _tag(form.begin(name), {"type": "grammar", "grammar": gbnf(self._grammar, rule)},
                 form.end)
            for name, rule in self._arguments
        ]  # fmt: skip
        more = MAX_PARALLEL_CALLS - 1 if self.parallel and self.choice in _ANY_TOOL else 0
        calls = _calls_tag(_one(tags), _one(tags), form.separator, more)
        if self.choice not in _ANY_TOOL:
            (call,) = tags
            content: _Json = call["content"]  # type: ignore[assignment]
            calls = _tag(form.open + str(call["begin"]), content, str(call["end"]) + form.close)
        elif form.open:  # one block holding the calls
            calls = _tag(form.open, calls, form.close)
        if self.choice == "auto":
            calls = _triggered(form, [name for name, _ in self._arguments], tags, calls, more)
        if self.reasoning:  # (up to four blanks after it, as in the other grammars)
            think = _tag(_THINK, {"type": "any_text"}, _THINK_END)
            blanks = {"type": "grammar", "grammar": _after_think()}
            first = {"type": "sequence", "elements": [think, blanks, calls]}
            calls = {"type": "or", "elements": [first, calls]}
        return {"type": "structural_tag", "format": calls}


_Json = dict[str, object]


def _after_think() -> str:
    alone = Grammar()
    alone.define(ROOT, _AFTER_THINK)
    return gbnf(alone, ROOT)


_ANY_TOOL: Final = ("auto", "required")


def _tag(begin: str, content: _Json, end: str) -> _Json:
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def _one(options: list[_Json]) -> _Json:
    return options[0] if len(options) == 1 else {"type": "or", "elements": options}


def _calls_tag(first: _Json, call: _Json, separator: str, more: int) -> _Json:
    """``first``, then up to ``more`` of ``call``, with ``separator`` before each."""
    if not more:
        return first
    between = [{"type": "const_string", "value": separator}] if separator else []
    rest: _Json = {"type": "const_string", "value": ""}
    for _ in range(more):
        rest = {"type": "or", "elements": [
            {"type": "const_string", "value": ""},
            {"type": "sequence", "elements": [*between, call, rest]},
        ]}  # fmt: skip
    return {"type": "sequence", "elements": [first, rest]}


def _triggered(
    form: CallForm, names: list[str], tags: list[_Json], calls: _Json, more: int
) -> _Json:
    """``choice="auto"``: prose, then ``calls`` from the first trigger on (see
    :meth:`Constraint.structural_tag`)."""
    if form.open:  # (the block's opening is the trigger)
        return _triggered_tags([form.open], [calls], form.prose)
    if form.trigger:  # one tag from the trigger on, holding the calls
        if not more:
            return _triggered_tags([form.trigger], tags, form.prose)
        cut = len(form.trigger)
        first = _one([_tag(str(t["begin"])[cut:], t["content"], form.end) for t in tags])  # type: ignore[arg-type]
        inside = _calls_tag(first, _one(tags), form.separator, more)
        return _triggered_tags([form.trigger], [_tag(form.trigger, inside, "")], form.prose)
    # each call's opening is a trigger, anywhere in the prose: from its first word prose
    # may not hold on (XML's `<g`), so that prose holds none (`<function=other>` included)
    words = _words(form.prose, [])
    starts = [min((w for w in words if b.startswith(w)), key=len, default=b) for b in
              form.triggers(names)]  # fmt: skip
    first = _triggered_tags(sorted(set(starts), key=starts.index), tags, form.prose)
    if not more:
        return first
    then = _calls_tag({"type": "const_string", "value": ""}, _one(tags), form.separator, more)
    return {"type": "sequence", "elements": [first, then]}


def _triggered_tags(
    triggers: list[str], tags: list[_Json], prose: Mapping[str, tuple[str, ...]]
) -> _Json:
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
