"""Tests for `tinytools.toolsets`: the adaptors, their explanations, and dispatch over a toolset."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable

import attrs
import pytest

from tinytools import (
    Context,
    DeferredToolResults,
    Exposure,
    ExposureExplanation,
    HumanApprovalMiddleware,
    Inject,
    Registry,
    RunPolicy,
    Tool,
    ToolCall,
    ToolDefinitionError,
    discovery,
    dispatch,
    dispatch_sync,
    tool,
)
from tinytools.events import ToolStarted
from tinytools.formats import anthropic, openai_chat
from tinytools.toolsets import (
    ApprovalRequired,
    Combined,
    External,
    Filtered,
    Prefixed,
    Prepared,
    Renamed,
    Toolset,
)

RAN: list[str] = []


@tool
def search(query: str) -> str:
    """Search the web."""
    RAN.append("search")
    return f"results for {query}"


@tool
def read_file(path: str) -> str:
    """Read a file."""
    RAN.append("read_file")
    return f"contents of {path}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    RAN.append("delete_file")
    return f"deleted {path}"


@tool(exposure="hidden")
def reset() -> str:
    """Reset everything (host only)."""
    RAN.append("reset")
    return "reset"


LOCAL = Registry.of(search, read_file)
FILES = Registry.of(read_file, delete_file)


def names(toolset: Toolset, context: Context | None = None) -> list[str]:
    return [t.name for t in toolset.tools(context)]


class _Answering:
    """A toolset of the host's own whose answers come from functions (to make them fail)."""

    def __init__(
        self,
        listed: Callable[[], object] = lambda: (search,),
        explained: Callable[[], object] = tuple,
    ) -> None:
        self.listed, self.explained = listed, explained

    def tools(self, context: Context | None = None) -> object:
        return self.listed()

    def explain(self, context: Context | None = None) -> object:
        return self.explained()


async def _lists_later() -> tuple[Tool[..., object], ...]:
    """What an ``async def tools`` returns: a coroutine (closed by dispatch, unawaited)."""
    return (search,)


class _Later:
    """An awaitable that is no coroutine (what an async client may hand back)."""

    def __await__(self) -> Generator[object, None, tuple[Tool[..., object], ...]]:
        return _lists_later().__await__()


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


class TestRegistry:
    def test_is_a_toolset(self) -> None:
        """A Registry is a Toolset: its tools in order, the same for every context."""
        assert isinstance(LOCAL, Toolset)
        assert (search, read_file) == LOCAL.tools(Context())

    def test_explains_hidden_tools(self) -> None:
        """A registry explains each host-only tool; the tool itself stays in tools()."""
        registry = Registry.of(search, reset)
        (explained,) = registry.explain()
        assert ("reset", "Registry", "reset") == (
            explained.name,
            explained.adaptor,
            explained.exposed_as,
        )
        assert "Hidden" in explained.reason
        assert (search, reset) == registry.tools()


class TestCombined:
    def test_members_in_order(self) -> None:
        """The tools of every member, in member order."""
        assert ["search", "read_file", "delete_file"] == names(
            Combined(LOCAL, Registry.of(delete_file))
        )

    def test_collision_names_both_members(self) -> None:
        """A name in two members is a ToolDefinitionError naming both."""
        with pytest.raises(ToolDefinitionError, match=r"'read_file' is in member 0 .* member 1"):
            Combined(LOCAL, FILES).tools()

    def test_not_a_toolset(self) -> None:
        """A member that is not a toolset is refused when the adaptor is built."""
        with pytest.raises(TypeError, match="Combined takes toolsets"):
            Combined(LOCAL, "search")  # type: ignore[arg-type]


class TestFiltered:
    def test_keeps_and_explains(self) -> None:
        """Tools `keep` refuses are left out, each explained."""
        filtered = Filtered(LOCAL, lambda t, _c: t.name != "search")
        assert ["read_file"] == names(filtered)
        (explained,) = filtered.explain()
        assert ("search", None) == (explained.name, explained.exposed_as)
        assert explained.left_out
        assert explained.adaptor.startswith("Filtered(")

    def test_reads_the_context(self) -> None:
        """`keep` sees the dispatch's context, and a new context is asked again."""

        def admin_only(t: Tool[..., object], context: Context | None) -> bool:
            return t.name != "read_file" or (context is not None and context.state == "admin")

        filtered = Filtered(LOCAL, admin_only)
        assert ["search"] == names(filtered, Context(state="user"))
        assert ["search", "read_file"] == names(filtered, Context(state="admin"))

    def test_keep_raises(self) -> None:
        """A `keep` that raises is a ToolDefinitionError naming the tool."""

        def broken(t: Tool[..., object], _c: object) -> bool:
            raise RuntimeError("boom")

        with pytest.raises(ToolDefinitionError, match=r"keep\('search', context\) raised"):
            Filtered(LOCAL, broken).tools()


class TestPrefixedAndRenamed:
    def test_prefixed(self) -> None:
        """Every name gets the prefix; each rename is explained with the new name."""
        prefixed = Prefixed(LOCAL, "web_")
        assert ["web_search", "web_read_file"] == names(prefixed)
        assert [("search", "web_search"), ("read_file", "web_read_file")] == [
            (e.name, e.exposed_as) for e in prefixed.explain()
        ]

    def test_bad_prefix(self) -> None:
        """A prefix that cannot start a tool name is refused when built."""
        with pytest.raises(ToolDefinitionError, match="the prefix"):
            Prefixed(LOCAL, "9 bad")

    def test_too_long(self) -> None:
        """A prefixed name over 64 characters is a ToolDefinitionError at resolution."""
        with pytest.raises(ToolDefinitionError, match="64"):
            Prefixed(LOCAL, "p" * 60).tools()

    def test_renamed_and_swapped(self) -> None:
        """Renamed renames the named tools (a swap included) and ignores absent names."""
        renamed = Renamed(LOCAL, {"search": "read_file", "read_file": "search", "gone": "x"})
        assert ["read_file", "search"] == names(renamed)
        assert search is not renamed.tools()[0]
        assert "Search the web." == renamed.tools()[0].description

    def test_renamed_collision(self) -> None:
        """A new name that another tool keeps is a ToolDefinitionError."""
        with pytest.raises(ToolDefinitionError, match="would both be named 'read_file'"):
            Renamed(LOCAL, {"search": "read_file"}).tools()

    def test_called_under_the_name_the_model_saw(self) -> None:
        """A renamed tool is called, answered and evented under its new name."""
        result = dispatch_sync(
            [ToolCall("1", "web_search", {"query": "q"})], Prefixed(LOCAL, "web_")
        )
        (message,) = result.messages
        assert ("web_search", "results for q") == (message.name, message.content)
        started = [e for e in result.events if isinstance(e, ToolStarted)]
        assert ["web_search"] == [e.tool_name for e in started]
        assert (
            "Unknown tool"
            in dispatch_sync([ToolCall("2", "search", {"query": "q"})], Prefixed(LOCAL, "web_"))
            .messages[0]
            .content
        )

    def test_ledgered_under_the_name_the_model_saw(self) -> None:
        """The effect ledger records the prefixed name."""
        started: list[tuple[str, str]] = []

        class Ledger:
            def started(self, run_id: str, call_id: str, tool_name: str, arguments: object) -> None:
                started.append((call_id, tool_name))

            def settled(self, run_id: str, call_id: str, status: str) -> None:
                pass

        dispatch_sync(
            [ToolCall("1", "web_search", {"query": "q"})],
            Prefixed(LOCAL, "web_"),
            ledger=Ledger(),  # type: ignore[arg-type]
        )
        assert [("1", "web_search")] == started


class TestPrepared:
    def test_drops_and_changes(self) -> None:
        """`prepare` may drop tools and evolve others; both are explained."""

        def prepare(
            context: Context | None, tools: tuple[Tool[..., object], ...]
        ) -> list[Tool[..., object]]:
            return [attrs.evolve(t, description="Search it.") for t in tools if t.name == "search"]

        prepared = Prepared(LOCAL, prepare)
        assert [("search", "Search it.")] == [(t.name, t.description) for t in prepared.tools()]
        reasons = {e.name: (e.reason, e.exposed_as) for e in prepared.explain()}
        assert ("changed by prepare: description", "search") == reasons["search"]
        assert ("left out by prepare for this run", None) == reasons["read_file"]

    @pytest.mark.parametrize(
        ("returned", "message"),
        [
            (lambda c, t: 42, "not an iterable of tools"),
            (lambda c, t: ["oops"], "'oops' is not a Tool"),
            (lambda c, t: [delete_file], "not given"),
            (lambda c, t: [*t, t[0]], "twice"),
            (lambda c, t: 1 / 0, "ZeroDivisionError"),
        ],
    )
    def test_bad_prepare(self, returned: object, message: str) -> None:
        """A `prepare` that raises, returns a non-tool, adds or repeats a tool is refused."""
        with pytest.raises(ToolDefinitionError, match=message):
            Prepared(LOCAL, returned).tools()  # type: ignore[arg-type]

    def test_narrowed_schema_is_enforced(self) -> None:
        """A schema `prepare` narrows is checked before the tool runs."""

        def narrow(
            context: Context | None, tools: Iterable[Tool[..., object]]
        ) -> list[Tool[..., object]]:
            out = []
            for t in tools:
                schema = dict(t.parameters)
                schema["properties"] = {"query": {"type": "string", "enum": ["cats"]}}
                out.append(attrs.evolve(t, parameters=schema))
            return out

        toolset = Prepared(Registry.of(search), narrow)
        calls = [
            ToolCall("1", "search", {"query": "dogs"}),
            ToolCall("2", "search", {"query": "cats"}),
        ]
        bad, good = dispatch_sync(calls, toolset).messages
        assert bad.is_error
        assert "results for cats" == good.content
        assert ["search"] == RAN

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"pattern": "("}, "valid regex"),
            ({"type": "bogus"}, "not a type"),
            ({"$ref": "#/$defs/missing"}, "not a schema inside it"),
            ({"$ref": "http://example.com/s.json"}, "never fetches"),
            ({"allOf": [{"$ref": "#/properties/query"}]}, "refers back"),
        ],
    )
    def test_a_changed_schema_is_checked_when_resolved(
        self, change: dict[str, object], message: str
    ) -> None:
        """A schema `prepare` gives a tool is checked when the toolset resolves, as
        `Tool.from_schema` checks one when built: no call meets it (an invalid pattern
        raised `re.error` out of dispatch at the first call)."""

        def change_query(
            context: Context | None, tools: Iterable[Tool[..., object]]
        ) -> list[Tool[..., object]]:
            out = []
            for t in tools:
                schema = dict(t.parameters)
                schema["properties"] = {"query": {"type": "string", **change}}
                out.append(attrs.evolve(t, parameters=schema))
            return out

        toolset = Prepared(Registry.of(search), change_query)
        with pytest.raises(ToolDefinitionError, match=message):
            toolset.tools()
        with pytest.raises(ToolDefinitionError, match=message):
            dispatch_sync([ToolCall("1", "search", {"query": "q"})], toolset)
        assert [] == RAN

    def test_a_changed_schema_never_shows_an_injected_parameter(self) -> None:
        """`prepare` cannot put an injected parameter in the schema the model sees."""

        @tool
        def whoami(prefix: str, user: Inject[Context]) -> str:
            """Say who runs."""
            return prefix

        def show(
            context: Context | None, tools: Iterable[Tool[..., object]]
        ) -> list[Tool[..., object]]:
            out = []
            for t in tools:
                schema = dict(t.parameters)
                schema["properties"] = {**schema["properties"], "user": {"type": "string"}}  # type: ignore[dict-item]
                out.append(attrs.evolve(t, parameters=schema))
            return out

        with pytest.raises(ToolDefinitionError, match="`user` is injected"):
            Prepared(Registry.of(whoami), show).tools()

    def test_runs_every_dispatch(self) -> None:
        """`prepare` runs on every resolution."""
        seen: list[object] = []

        def prepare(
            context: Context | None, tools: tuple[Tool[..., object], ...]
        ) -> tuple[Tool[..., object], ...]:
            seen.append(context)
            return tools

        toolset = Prepared(LOCAL, prepare)
        for _ in range(3):
            dispatch_sync([ToolCall("1", "search", {"query": "q"})], toolset)
        assert 3 == len(seen)


class TestApprovalRequired:
    def test_deferred_then_resumed(self) -> None:
        """A call is deferred for approval and resumes through DeferredToolResults."""
        toolset = Combined(LOCAL, ApprovalRequired(Registry.of(delete_file)))
        calls = [ToolCall("1", "delete_file", {"path": "/a"})]
        first = dispatch_sync(calls, toolset)
        assert first.deferred is not None
        assert ["1"] == [c.id for c in first.deferred.approvals]
        assert [] == RAN
        resumed = dispatch_sync(calls, toolset, approvals=first.deferred.approve_all())
        assert "deleted /a" == resumed.messages[0].content
        assert ["delete_file"] == RAN

    def test_when(self) -> None:
        """With `when`, only the calls it picks wait for approval."""

        def outside_tmp(call: ToolCall, _context: object) -> bool:
            return not str(dict(call.arguments).get("path", "")).startswith("/tmp/")  # type: ignore[arg-type]

        toolset = ApprovalRequired(Registry.of(delete_file), when=outside_tmp)
        calls = [
            ToolCall("1", "delete_file", {"path": "/tmp/x"}),
            ToolCall("2", "delete_file", {"path": "/etc"}),
        ]
        result = dispatch_sync(calls, toolset)
        assert ["deleted /tmp/x"] == [m.content for m in result.messages]
        assert result.deferred is not None
        assert ["2"] == [c.id for c in result.deferred.approvals]

    def test_when_raises_fails_closed(self) -> None:
        """A `when` that raises counts as needing approval."""

        def broken(call: ToolCall, _context: object) -> bool:
            raise RuntimeError("boom")

        result = dispatch_sync(
            [ToolCall("1", "delete_file", {"path": "/x"})],
            ApprovalRequired(Registry.of(delete_file), when=broken),
        )
        assert result.deferred is not None
        assert [] == RAN

    def test_human_middleware_follows_when(self) -> None:
        """HumanApprovalMiddleware is asked only about the calls `when` picks."""
        asked: list[str] = []

        def callback(call: ToolCall, _tool: object) -> object:
            from tinytools import Allow

            asked.append(call.id)
            return Allow()

        toolset = ApprovalRequired(Registry.of(delete_file), when=lambda c, _x: c.id == "2")
        calls = [
            ToolCall("1", "delete_file", {"path": "/a"}),
            ToolCall("2", "delete_file", {"path": "/b"}),
        ]
        result = dispatch_sync(calls, toolset, middleware=[HumanApprovalMiddleware(callback)])  # type: ignore[arg-type]
        assert ["2"] == asked
        assert 2 == len(result.messages)

    def test_explained(self) -> None:
        """Each gated tool is explained as changed."""
        explained = ApprovalRequired(Registry.of(delete_file)).explain()
        assert [("delete_file", "delete_file")] == [(e.name, e.exposed_as) for e in explained]


class TestExternal:
    def test_deferred_to_the_host(self) -> None:
        """An External call is admitted (schema checked) and deferred into `calls`."""
        toolset = External(LOCAL)
        calls = [ToolCall("1", "search", {"query": "q"}), ToolCall("2", "search", {"query": 3})]
        result = dispatch_sync(calls, toolset)
        assert result.deferred is not None
        assert ["1"] == [c.id for c in result.deferred.calls]
        assert ["2"] == [m.tool_call_id for m in result.messages]
        assert [] == RAN
        answered = dispatch_sync(
            calls[:1], toolset, approvals=DeferredToolResults().respond("1", "host answer")
        )
        assert "host answer" == answered.messages[0].content


class TestExposure:
    def test_hidden_never_callable(self) -> None:
        """A hidden tool in a toolset is never declared and never callable."""
        toolset = Combined(LOCAL, Registry.of(reset))
        result = dispatch_sync([ToolCall("1", "reset", {})], toolset)
        assert result.messages[0].is_error
        assert [] == RAN
        assert "reset" not in [d["function"]["name"] for d in openai_chat.declarations(toolset)]  # type: ignore[index]

    def test_declarations_accept_a_toolset(self) -> None:
        """Every provider's declarations take a toolset and declare its direct tools."""
        deferred = attrs.evolve(delete_file, exposure=Exposure.Deferred)
        toolset = Prefixed(Combined(LOCAL, Registry.of(deferred)), "x_")
        assert ["x_search", "x_read_file"] == [d["name"] for d in anthropic.declarations(toolset)]


class TestResolution:
    def test_unchanged_composition_is_cached(self) -> None:
        """An unchanged composition resolves to the very same registry on every dispatch; a
        context that changes what a filter keeps resolves anew."""
        from tinytools.toolsets._base import registry_for

        def keep(t: Tool[..., object], context: Context | None) -> bool:
            return t.name != "search" or context is None or context.state != "no search"

        toolset = Prefixed(Filtered(Combined(LOCAL, Registry.of(delete_file)), keep), "p_")
        context = Context()
        first = registry_for(toolset, context)
        assert first is registry_for(toolset, context)
        assert first is registry_for(toolset, Context())  # kept the same tools
        narrowed = registry_for(toolset, Context(state="no search"))
        assert ["p_read_file", "p_delete_file"] == list(narrowed)

    def test_foreign_toolset(self) -> None:
        """An object with tools() and explain() is a toolset too."""

        class Mine:
            def tools(self, context: Context | None = None) -> tuple[Tool[..., object], ...]:
                return (search,)

            def explain(self, context: Context | None = None) -> tuple[ExposureExplanation, ...]:
                return ()

        result = dispatch_sync([ToolCall("1", "search", {"query": "q"})], Mine())  # type: ignore[arg-type]
        assert "results for q" == result.messages[0].content

    def test_foreign_toolset_returning_garbage(self) -> None:
        """A toolset whose tools() yields a non-tool is a ToolDefinitionError."""

        class Broken:
            def tools(self, context: Context | None = None) -> tuple[object, ...]:
                return ("search",)

            def explain(self, context: Context | None = None) -> tuple[object, ...]:
                return ()

        with pytest.raises(ToolDefinitionError, match="is not a Tool"):
            dispatch_sync([ToolCall("1", "search", {})], Broken())  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("answer", "says"),
        [
            (None, "tools(context) returned NoneType None; return a list or tuple of tools"),
            (5, "tools(context) returned int 5; return a list or tuple of tools"),
            ("search", "tools(context) returned str 'search'; return a list or tuple"),
            ({"search": search}, "tools(context) returned dict {'search'"),
            (_lists_later, "returned coroutine <coroutine object _lists_later"),
            (_Later, "resolving is synchronous: fetch what it lists beforehand"),
        ],
        ids=["none", "int", "str", "mapping", "coroutine", "awaitable"],
    )
    @pytest.mark.anyio
    async def test_a_toolset_answering_with_no_tools_is_refused_naming_it(
        self, answer: object, says: str
    ) -> None:
        """Defect: a host's toolset whose tools(context) returned None or a number surfaced
        as "'NoneType' object is not iterable", and a str or a mapping as one problem per
        character or key. Now a ToolDefinitionError naming the toolset and what it
        returned, before any call runs."""
        toolset = _Answering(answer if callable(answer) else lambda: answer)
        calls = [ToolCall("1", "search", {"query": "q"})]
        with pytest.raises(ToolDefinitionError) as synchronous:
            dispatch_sync(calls, toolset)  # type: ignore[arg-type]
        with pytest.raises(ToolDefinitionError) as awaited:
            await dispatch(calls, toolset)  # type: ignore[arg-type]
        for info in (synchronous, awaited):
            assert str(info.value).startswith("toolset _Answering: ")
            assert says in str(info.value)
        assert [] == RAN

    @pytest.mark.parametrize("method", ["tools", "explain"])
    @pytest.mark.parametrize("halfway", [False, True], ids=["raises", "generator-halfway"])
    @pytest.mark.anyio
    async def test_a_toolset_that_raises_is_refused_naming_it_its_error_the_cause(
        self, method: str, halfway: bool
    ) -> None:
        """Defect: a host's toolset whose tools() or explain() raised (or returned a
        generator that raised halfway) surfaced its own raw error, with nothing naming
        the toolset. Now a ToolDefinitionError naming it and the method, chained from the
        toolset's own error, before any call runs; inside an adaptor too."""
        error = ConnectionError("catalogue down")

        def halfway_through() -> Iterable[object]:
            yield search
            raise error

        def at_once() -> Iterable[object]:
            raise error

        failing = halfway_through if halfway else at_once

        toolset = _Answering(failing) if method == "tools" else _Answering(explained=failing)
        for given in (toolset, Prefixed(toolset, "web_")):
            with pytest.raises(ToolDefinitionError) as info:
                dispatch_sync([ToolCall("1", "web_search", {"query": "q"})], given)  # type: ignore[arg-type]
            assert info.value.__cause__ is error
            raised = f"{method}(context) raised ConnectionError('catalogue down')"
            assert f"toolset _Answering: {raised}" in str(info.value)
            assert halfway == str(info.value).endswith("while its answer was read")
            with pytest.raises(ToolDefinitionError) as awaited:
                await dispatch([ToolCall("1", "search", {"query": "q"})], given)  # type: ignore[arg-type]
            assert awaited.value.__cause__ is error
        assert [] == RAN

    def test_a_failing_toolset_is_never_remembered_as_resolved(self) -> None:
        """A toolset is asked on every dispatch: one that failed is not cached as a
        success, nor one that succeeded served from the cache once it fails."""
        answers: list[object] = [ConnectionError("down"), (search,), ConnectionError("down")]

        def next_answer() -> object:
            answer = answers.pop(0)
            if isinstance(answer, Exception):
                raise answer
            return answer

        for toolset in (_Answering(next_answer), Combined(_Answering(next_answer), FILES)):
            answers[:] = [ConnectionError("down"), (search,), ConnectionError("down")]
            calls = [ToolCall("1", "search", {"query": "q"})]
            with pytest.raises(ToolDefinitionError, match="raised ConnectionError"):
                dispatch_sync(calls, toolset)  # type: ignore[arg-type]
            assert "results for q" == dispatch_sync(calls, toolset).messages[0].content  # type: ignore[arg-type]
            with pytest.raises(ToolDefinitionError, match="raised ConnectionError"):
                dispatch_sync(calls, toolset)  # type: ignore[arg-type]

    def test_a_toolset_answering_with_two_tools_of_one_name_is_named(self) -> None:
        """Two tools of one name from a host's toolset are refused naming the toolset (the
        error named a "Registry" the host never made)."""
        again = attrs.evolve(search, description="Search again.")
        with pytest.raises(ToolDefinitionError) as info:
            dispatch_sync(
                [ToolCall("1", "search", {"query": "q"})], _Answering(lambda: (search, again))
            )  # type: ignore[arg-type]
        assert str(info.value).startswith(
            "toolset _Answering: in what tools(context) returned, two tools are named 'search'"
        )
        assert [] == RAN

    def test_a_toolsets_interrupt_propagates_as_it_is(self) -> None:
        """Only an ``Exception`` is the toolset's failure: an interrupt is not wrapped."""

        def interrupted() -> object:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            dispatch_sync([ToolCall("1", "search", {"query": "q"})], _Answering(interrupted))  # type: ignore[arg-type]

    @pytest.mark.anyio
    async def test_async_dispatch(self) -> None:
        """`await dispatch` accepts a toolset like dispatch_sync."""
        result = await dispatch(
            [ToolCall("1", "web_search", {"query": "q"})],
            Prefixed(LOCAL, "web_"),
            policy=RunPolicy(allowlist=["web_search"]),
        )
        assert "results for q" == result.messages[0].content


def test_mcp_module_is_lazy() -> None:
    """`tinytools.toolsets.mcp` and `tinytools.discovery` import no SDK (mcp loads on need)."""
    import subprocess
    import sys

    code = (
        "import sys, tinytools.toolsets.mcp, tinytools.discovery\n"
        "print(sorted(m for m in ('mcp', 'hypothesis', 'fastjsonschema') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert "[]" == out.stdout.strip()


def test_reconcile_takes_the_toolset(tmp_path: object) -> None:
    """After a crash, reconcile finds a prefixed tool under the name it was ledgered by."""
    from pathlib import Path

    from tinytools import ToolPolicy
    from tinytools.ledger import SqliteLedger, reconcile

    @tool(policy=ToolPolicy.read_only())
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    toolset = Prefixed(Registry.of(lookup), "kb_")
    call = ToolCall("1", "kb_lookup", {"key": "k"})
    with SqliteLedger(Path(str(tmp_path)) / "effects.db") as ledger:
        ledger.started("run", "1", "kb_lookup", {"key": "k"})  # the crash came before settled()
        decided = reconcile([call], toolset, ledger, "run")
    assert ([call], ()) == (list(decided.rerun), decided.messages)


def _down() -> object:
    raise ConnectionError("catalogue down")


class _OnlyLists:
    """An object that lists tools (``tools()``) but explains nothing: the formats read it."""

    def __init__(self, listed: Callable[[], object]) -> None:
        self.listed = listed

    def tools(self) -> object:
        return self.listed()


@pytest.mark.parametrize(
    "declare",
    [openai_chat.declarations, anthropic.declarations, discovery.Catalog],
    ids=["openai_chat", "anthropic", "Catalog"],
)
@pytest.mark.parametrize(
    "listed",
    [_down, lambda: None],
    ids=["raises", "none"],
)
def test_the_formats_say_what_dispatch_says_of_a_failing_toolset(
    declare: Callable[[object], object], listed: Callable[[], object]
) -> None:
    """Defect: ``declarations``/``render`` (and ``discovery.Catalog``) called ``tools()``
    of a toolset themselves, so what it raised surfaced raw (nothing naming it). They now
    read it as dispatch reads a toolset of the host's own: the same ToolDefinitionError
    naming it, from its own error."""
    with pytest.raises(ToolDefinitionError) as dispatched:
        dispatch_sync([ToolCall("1", "search", {"query": "q"})], _Answering(listed))  # type: ignore[arg-type]
    for toolset in (_Answering(listed), _OnlyLists(listed)):
        with pytest.raises(ToolDefinitionError) as declared:
            declare(toolset)
        said = str(declared.value).replace(type(toolset).__name__, "_Answering")
        assert said == str(dispatched.value)
        assert type(declared.value.__cause__) is type(dispatched.value.__cause__)
    listing = _OnlyLists(lambda: [search])
    assert ["search"] == [t["function"]["name"] for t in openai_chat.declarations(listing)]  # type: ignore[arg-type,index]


def test_dispatch_says_what_half_a_toolset_lacks() -> None:
    """An object with ``tools()`` but no ``explain`` given to dispatch is refused saying
    what a toolset also answers (it read as any non-collection did)."""
    with pytest.raises(TypeError, match=r"has tools\(\) but no explain\(context\)"):
        dispatch_sync([ToolCall("1", "search", {"query": "q"})], _OnlyLists(lambda: [search]))  # type: ignore[arg-type]
