"""Tests for `tinytools.discovery`: the Catalog, Discovery, and tool_search / tool_call."""

from __future__ import annotations

import json
import tracemalloc

import attrs
import msgspec
import pytest

from tinytools import (
    DeferredToolResults,
    Exposure,
    Registry,
    RunPolicy,
    Tool,
    ToolCall,
    ToolDefinitionError,
    ToolPolicyMiddleware,
    ToolResult,
    after_tool,
    before_tool,
    dispatch_sync,
    tool,
)
from tinytools._engine.env import DispatchEnv
from tinytools.discovery import SEARCH_LIMIT, Catalog, Discovery, Match, declaration_bytes
from tinytools.events import Event, ToolSearched, ToolStarted
from tinytools.formats import openai_chat
from tinytools.policies import Rewrite
from tinytools.toolsets import ApprovalRequired, Combined, Prefixed

RAN: list[tuple[str, dict[str, object]]] = []


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    RAN.append(("get_weather", {"city": city}))
    return f"sunny in {city}"


@tool(exposure="deferred")
def convert_currency(amount: float, currency: str) -> str:
    """Convert an amount of money into another currency.

    Args:
        amount: How much money.
        currency: The target currency code, such as EUR.
    """
    RAN.append(("convert_currency", {"amount": amount, "currency": currency}))
    return f"{amount} {currency}"


@tool(exposure="deferred")
def send_email(to: str, body: str) -> str:
    """Send an email message to someone."""
    RAN.append(("send_email", {"to": to}))
    return "sent"


@tool(exposure="hidden")
def drop_database() -> str:
    """Drop the production database."""
    RAN.append(("drop_database", {}))
    return "dropped"


TOOLS = Registry.of(get_weather, convert_currency, send_email, drop_database)
DISCOVERY = Discovery(TOOLS)


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def run(*calls: ToolCall, toolset: object = DISCOVERY, **kwargs: object) -> object:
    return dispatch_sync(calls, toolset, **kwargs)  # type: ignore[arg-type]


def searched(events: tuple[Event, ...]) -> list[ToolSearched]:
    return [e for e in events if isinstance(e, ToolSearched)]


class TestCatalog:
    def test_best_first(self) -> None:
        """The tool whose words match the query best comes first."""
        catalog = Catalog([get_weather, convert_currency, send_email])
        best = catalog.search("convert money to euros")
        assert "convert_currency" == best[0].name
        assert all(isinstance(m, Match) for m in best)

    def test_split_names(self) -> None:
        """Names are split into words: snake_case, camelCase and digits."""
        camel = Tool.from_schema("fetchUserProfile2", "", {"type": "object"})
        catalog = Catalog([camel, get_weather])
        assert ["fetchUserProfile2"] == [m.name for m in catalog.search("user profile")]

    def test_parameters_indexed(self) -> None:
        """Parameter names and descriptions are indexed."""
        catalog = Catalog([get_weather, convert_currency])
        assert "convert_currency" == catalog.search("target code EUR")[0].name

    def test_empty_query(self) -> None:
        """An empty query, or one of only common words, matches nothing."""
        catalog = Catalog([get_weather, convert_currency])
        assert () == catalog.search("")
        assert () == catalog.search("the of and")

    def test_deterministic_ties_by_name(self) -> None:
        """Equal scores are ordered by name."""
        twins = [Tool.from_schema(n, "Open the door.", {"type": "object"}) for n in ("b_x", "a_x")]
        assert ["a_x", "b_x"] == [m.name for m in Catalog(twins).search("door")]

    def test_limit(self) -> None:
        """`limit` bounds the results and must be positive."""
        catalog = Catalog([get_weather, convert_currency, send_email])
        assert 1 == len(catalog.search("a city currency email", limit=1))
        with pytest.raises(ValueError, match="limit"):
            catalog.search("x", limit=0)

    def test_huge_query(self) -> None:
        """A 1 MB query is searched by its beginning, quickly."""
        catalog = Catalog([get_weather, convert_currency])
        assert "get_weather" == catalog.search("weather " * 150_000)[0].name

    def test_long_words_are_not_kept(self) -> None:
        """Searching keeps no memory per long word a model wrote: 500 queries of one distinct
        2,000-character word (each the longest a query is read to) leave under 200 KB
        allocated behind them (they kept 2 MB)."""
        catalog = Catalog([get_weather, convert_currency])
        queries = [
            "".join("abcdefghij"[int(d)] for d in f"{n:04d}") + "q" * 1_996 for n in range(500)
        ]
        catalog.search(queries[0])
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            for query in queries[1:]:
                assert () == catalog.search(query)
            grown = sum(
                s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename")
            )
        finally:
            tracemalloc.stop()
        assert grown < 200_000

    def test_not_a_string(self) -> None:
        """A query that is not a string is a TypeError."""
        with pytest.raises(TypeError):
            Catalog([get_weather]).search(42)  # type: ignore[arg-type]

    def test_not_a_tool(self) -> None:
        """Indexing something that is not a tool names it and says how to make it one."""
        with pytest.raises(TypeError, match="'get_time' is not a Tool: decorate it with @tool"):
            Catalog([get_weather, "get_time"])  # type: ignore[list-item]
        with pytest.raises(TypeError, match=r"got Tool; wrap the one tool in a list"):
            Catalog(get_weather)  # type: ignore[arg-type]


class TestDiscoveryToolset:
    def test_declares_direct_plus_intrinsics(self) -> None:
        """Direct tools and the two intrinsic tools are declared; deferred and hidden are not."""
        declared = [d["function"]["name"] for d in openai_chat.declarations(DISCOVERY)]  # type: ignore[index]
        assert ["tool_search", "tool_call", "get_weather"] == declared

    def test_no_intrinsics_without_deferred(self) -> None:
        """Without a deferred tool, nothing is added."""
        assert (get_weather,) == Discovery(Registry.of(get_weather)).tools()

    def test_name_taken(self) -> None:
        """A tool named like an intrinsic tool is a ToolDefinitionError."""
        clash = Tool.from_schema("tool_search", "Mine.", {"type": "object"}, fn=lambda: "")
        with pytest.raises(ToolDefinitionError, match="intrinsic"):
            Discovery(Registry.of(clash, convert_currency)).tools()

    @pytest.mark.parametrize(
        "toolset",
        [
            Combined(Prefixed(Discovery(TOOLS), "a_"), Prefixed(Discovery(TOOLS), "b_")),
            Discovery(Prefixed(Discovery(Registry.of(send_email)), "p_")),
        ],
    )
    def test_two_discoveries_in_one_dispatch(self, toolset: object) -> None:
        """Two discoveries' intrinsic tools in one dispatch are refused: dispatch answers
        one pair only, and the other pair would run as plain tools answering "ok"."""
        call = ToolCall("c", "a_tool_search", {"query": "email"})
        with pytest.raises(ToolDefinitionError, match="both discovery's tool_search"):
            run(call, toolset=toolset)
        assert [] == RAN

    def test_a_call_rewritten_to_an_intrinsic_tool_is_an_error(self) -> None:
        """An unknown-tool Rewrite to an intrinsic tool reaches its function, past the
        unwrapping: the answer is an error, never a success the model reads as one."""
        result = run(
            ToolCall("r", "nonexistent", {"query": "email"}),
            policy=RunPolicy(unknown_tool=Rewrite("tool_search")),
        )
        (message,) = result.messages  # type: ignore[attr-defined]
        assert ("tool_search", "error", True) == (message.name, message.status, message.is_error)
        assert [] == RAN

    def test_bad_arguments(self) -> None:
        """limit and budget_bytes are checked when built."""
        with pytest.raises(ValueError, match="limit"):
            Discovery(TOOLS, limit=0)
        with pytest.raises(ValueError, match="budget_bytes"):
            Discovery(TOOLS, budget_bytes=-1)

    def test_budget_defers_in_order(self) -> None:
        """Direct tools past the budget become deferred, in order, each explained."""
        many = [
            Tool.from_schema(
                f"tool_{i}", f"Does thing number {i}.", {"type": "object"}, fn=lambda: ""
            )
            for i in range(30)
        ]
        intrinsics = Discovery(Registry.of(convert_currency)).tools()[:2]
        budget = sum(map(declaration_bytes, intrinsics)) + 3 * declaration_bytes(many[0]) + 5
        toolset = Discovery(Registry(many), budget_bytes=budget)
        direct = [t.name for t in toolset.tools() if t.exposure is Exposure.Direct]
        deferred = [t.name for t in toolset.tools() if t.exposure is Exposure.Deferred]
        assert ["tool_search", "tool_call", "tool_0", "tool_1", "tool_2"] == direct
        assert [f"tool_{i}" for i in range(3, 30)] == deferred
        size = sum(len(msgspec.json.encode(d)) for d in openai_chat.declarations(toolset))
        assert size <= budget
        assert deferred == [e.name for e in toolset.explain()]

    def test_budget_large_enough(self) -> None:
        """A budget every declaration fits leaves the tools as they are."""
        assert (get_weather,) == Discovery(Registry.of(get_weather), budget_bytes=10_000).tools()

    def test_promote(self) -> None:
        """A promoted tool is declared on the next request, explained."""
        promoted = DISCOVERY.promote(["convert_currency"])
        declared = [d["function"]["name"] for d in openai_chat.declarations(promoted)]  # type: ignore[index]
        assert "convert_currency" in declared
        assert "send_email" not in declared
        assert any(e.name == "convert_currency" for e in promoted.explain())


class TestToolSearch:
    def test_finds_deferred_tools(self) -> None:
        """tool_search answers with the deferred tools' names, descriptions and schemas."""
        result = run(ToolCall("s", "tool_search", {"query": "convert money currency"}))
        (message,) = result.messages  # type: ignore[attr-defined]
        found = json.loads(message.content)["tools"]
        assert "convert_currency" == found[0]["name"]
        assert convert_currency.parameters == found[0]["parameters"]
        (event,) = searched(result.events)  # type: ignore[attr-defined]
        assert ("s", "convert money currency") == (event.call_id, event.query)
        assert ("convert_currency",) == result.promoted  # type: ignore[attr-defined]

    def test_never_finds_hidden_or_direct(self) -> None:
        """Only deferred tools are searched: never hidden (nor direct, already declared)."""
        result = run(ToolCall("s", "tool_search", {"query": "drop production database weather"}))
        assert [] == [t["name"] for t in json.loads(result.messages[0].content)["tools"]]  # type: ignore[attr-defined]

    def test_respects_the_allowlist(self) -> None:
        """A tool the allow-list refuses is never found."""
        policy = RunPolicy(allowlist=["tool_search", "tool_call", "send_email"])
        result = run(
            ToolCall("s", "tool_search", {"query": "convert currency email"}), policy=policy
        )
        assert ["send_email"] == [
            t["name"] for t in json.loads(result.messages[0].content)["tools"]
        ]  # type: ignore[attr-defined]

    @pytest.mark.parametrize(
        "arguments",
        [
            {"query": 42},
            {"query": "x", "limit": 0},
            {"query": "x", "limit": -3},
            {"query": "x", "limit": 10**12},
            {"limit": 2},
            '{"query": ',
            "[1, 2]",
            {"query": "x", "extra": True},
        ],
    )
    def test_bad_arguments(self, arguments: object) -> None:
        """Bad arguments get a repairable error naming the schema, and no search."""
        result = run(ToolCall("s", "tool_search", arguments))  # type: ignore[arg-type]
        (message,) = result.messages  # type: ignore[attr-defined]
        assert message.is_error
        assert "Expected arguments (JSON schema)" in message.content
        assert [] == searched(result.events)  # type: ignore[attr-defined]

    def test_empty_and_huge_queries(self) -> None:
        """An empty query finds nothing; a 1 MB one is answered, its event query cut."""
        empty, huge = run(
            ToolCall("a", "tool_search", {"query": ""}),
            ToolCall("b", "tool_search", {"query": "email " * 200_000}),
        ).messages  # type: ignore[attr-defined]
        assert [] == json.loads(empty.content)["tools"]
        assert "send_email" == json.loads(huge.content)["tools"][0]["name"]
        result = run(ToolCall("b", "tool_search", {"query": "\ud800 email"}))
        assert "lone surrogate" in result.messages[0].content  # type: ignore[attr-defined]
        assert msgspec.json.encode(result.events)  # type: ignore[attr-defined]

    def test_limit(self) -> None:
        """`limit` bounds the results; the toolset's limit is the default."""
        query = {"query": "convert currency send email"}
        assert 1 == len(
            json.loads(
                run(ToolCall("s", "tool_search", query), toolset=Discovery(TOOLS, limit=1))
                .messages[0]
                .content
            )["tools"]
        )  # type: ignore[attr-defined]
        both = run(ToolCall("s", "tool_search", {**query, "limit": SEARCH_LIMIT}))
        assert 2 == len(json.loads(both.messages[0].content)["tools"])  # type: ignore[attr-defined]

    def test_limit_written_as_a_whole_float(self) -> None:
        """`"limit": 1.0` is an integer to JSON Schema: it is answered, never a crash."""
        query = {"query": "convert currency send email"}
        text = '{"query": "convert currency send email", "limit": 1.0}'
        for raw in (text, {**query, "limit": 1.0}):
            result = run(ToolCall("s", "tool_search", raw))
            (message,) = result.messages  # type: ignore[attr-defined]
            assert "ok" == message.status
            assert 1 == len(json.loads(message.content)["tools"])

    def test_answer_within_max_result_bytes(self) -> None:
        """``RunPolicy.max_result_bytes`` bounds the search answer dispatch writes (each
        tool found with its whole schema), cut with the marker tool results get (a
        2,000-byte limit let a 347 KB answer through)."""
        wide = [
            Tool.from_schema(
                f"report_{n}",
                f"Report number {n} on sales. " * 20,
                {
                    "type": "object",
                    "properties": {f"field_{i}": {"type": "string"} for i in range(40)},
                },
                exposure=Exposure.Deferred,
            )
            for n in range(10)
        ]
        query = ToolCall("s", "tool_search", {"query": "report sales", "limit": 10})
        whole = run(query, toolset=Discovery(Registry(wide)))
        assert len(whole.messages[0].content.encode()) > 10_000  # type: ignore[attr-defined]
        cut = run(query, toolset=Discovery(Registry(wide)), policy=RunPolicy(max_result_bytes=2000))
        (message,) = cut.messages  # type: ignore[attr-defined]
        assert "ok" == message.status
        assert 2000 >= len(message.content.encode())
        assert message.content.startswith('{"tools":[{"name":"report_')
        assert "[truncated: " in message.content

    def test_not_advertised(self) -> None:
        """tool_search outside the advertised set is an unknown tool."""
        result = run(ToolCall("s", "tool_search", {"query": "email"}), advertised=["get_weather"])
        assert "Unknown tool" in result.messages[0].content  # type: ignore[attr-defined]


class TestToolCall:
    def test_unwrapped_before_admission(self) -> None:
        """tool_call runs the real tool under the same id; events name the real tool."""
        result = run(
            ToolCall(
                "c",
                "tool_call",
                {"name": "convert_currency", "arguments": {"amount": 2, "currency": "EUR"}},
            )
        )
        (message,) = result.messages  # type: ignore[attr-defined]
        assert ("c", "convert_currency", "2.0 EUR") == (
            message.tool_call_id,
            message.name,
            message.content,
        )
        started = [e for e in result.events if isinstance(e, ToolStarted)]  # type: ignore[attr-defined]
        assert [("c", "convert_currency")] == [(e.call_id, e.tool_name) for e in started]

    def test_hooks_see_discovery_and_the_reached_tool(self) -> None:
        """A before_tool hook reads the registry's discovery tools and the deferred tool
        the call reached through tool_call; an after_tool hook the discovery tools
        (whatever else the batch sets: a deadline, limits, a repeated id). Without
        discovery tools, both read None."""
        seen: list[tuple[object, ...]] = []

        def before(c: ToolCall, env: DispatchEnv) -> ToolCall:
            found = env.discovery
            seen.append(("before", c.id, found and found.call, env.reached))
            return c

        def after(c: ToolCall, result: ToolResult, env: DispatchEnv) -> ToolResult:
            found = env.discovery
            seen.append(("after", c.id, found and found.search))
            return result

        hooks = [before_tool(before), after_tool(after)]
        wrapped = {"name": "convert_currency", "arguments": {"amount": 2, "currency": "EUR"}}
        result = run(
            ToolCall("c", "tool_call", wrapped),
            ToolCall("w", "get_weather", {"city": "Oslo"}),
            ToolCall("w", "get_weather", {"city": "Rome"}),
            middleware=hooks,
            policy=RunPolicy(deadline=30, max_tool_calls=1),
        )
        assert ["2.0 EUR", "error", "error"] == [
            m.content if m.status == "ok" else m.status
            for m in result.messages  # type: ignore[attr-defined]
        ]
        assert [
            ("before", "c", "tool_call", "convert_currency"),
            ("after", "c", "tool_search"),
        ] == seen
        seen.clear()
        dispatch_sync([ToolCall("w", "get_weather", {"city": "Oslo"})], TOOLS, middleware=hooks)
        assert [("before", "w", None, None), ("after", "w", None)] == seen

    def test_arguments_as_text(self) -> None:
        """String arguments are decoded (and repaired) like a direct call's."""
        result = run(
            ToolCall(
                "c",
                "tool_call",
                {"name": "convert_currency", "arguments": "{'amount': 2, 'currency': 'EUR',}"},
            )
        )
        assert "2.0 EUR" == result.messages[0].content  # type: ignore[attr-defined]

    def test_deferred_not_callable_directly(self) -> None:
        """A deferred tool called directly (not promoted) is an unknown tool."""
        result = run(ToolCall("c", "convert_currency", {"amount": 2, "currency": "EUR"}))
        assert "Unknown tool" in result.messages[0].content  # type: ignore[attr-defined]
        assert [] == RAN

    def test_reach_is_per_call(self) -> None:
        """A tool_call for a deferred tool does not open it to other calls of the batch."""
        result = run(
            ToolCall(
                "a", "tool_call", {"name": "send_email", "arguments": {"to": "x", "body": "y"}}
            ),
            ToolCall("b", "send_email", {"to": "x", "body": "y"}),
        )
        assert ["sent", True] == [result.messages[0].content, result.messages[1].is_error]  # type: ignore[attr-defined]

    @pytest.mark.parametrize(
        ("wrapper", "expected"),
        [
            ({"name": "drop_database", "arguments": {}}, "Unknown tool `drop_database`"),
            ({"name": "nope", "arguments": {}}, "Unknown tool `nope`"),
            ({"name": "tool_call", "arguments": {}}, "put the found tool's name"),
            ({"name": "tool_search", "arguments": {"query": "x"}}, "call `tool_search` directly"),
            ({"name": 7}, "`name` must be"),
            ({"arguments": {}}, "`name` must be"),
            ({"name": "send_email", "to": "x"}, "unexpected field"),
            ('{"name": "send_email", "arguments": ', "not valid JSON"),
            ("[1]", "must be a JSON object"),
            ({"name": "send_email", "arguments": [1, 2]}, "Expected `object`"),
            ({"name": "send_email", "arguments": {"to": 5}}, "Invalid arguments"),
            ({"name": "send_email", "arguments": "{bad"}, "not valid JSON"),
        ],
    )
    def test_bad_wrappers(self, wrapper: object, expected: str) -> None:
        """Every bad tool_call gets an error message, and nothing runs."""
        result = run(ToolCall("c", "tool_call", wrapper))  # type: ignore[arg-type]
        (message,) = result.messages  # type: ignore[attr-defined]
        assert message.is_error
        assert expected in message.content
        assert [] == RAN

    def test_advertised_set_sees_the_real_tool(self) -> None:
        """A direct tool outside the advertised set stays unknown through tool_call; a
        tool_call that is itself not advertised is unknown."""
        advertised = ["tool_search", "tool_call"]
        result = run(
            ToolCall("a", "tool_call", {"name": "get_weather", "arguments": {"city": "Oslo"}}),
            ToolCall(
                "b", "tool_call", {"name": "send_email", "arguments": {"to": "x", "body": "y"}}
            ),
            advertised=advertised,
        )
        unknown, sent = result.messages  # type: ignore[attr-defined]
        assert "Unknown tool `get_weather`" in unknown.content
        assert "sent" == sent.content
        hidden_wrapper = run(
            ToolCall(
                "c", "tool_call", {"name": "send_email", "arguments": {"to": "x", "body": "y"}}
            ),
            advertised=["get_weather"],
        )
        assert "Unknown tool `tool_call`" in hidden_wrapper.messages[0].content  # type: ignore[attr-defined]
        assert [("send_email", {"to": "x"})] == RAN

    def test_allowlist_sees_the_real_tool(self) -> None:
        """The allow-list is checked against the real tool, not the wrapper."""
        policy = RunPolicy(allowlist=["tool_search", "tool_call", "send_email"])
        result = run(
            ToolCall(
                "c",
                "tool_call",
                {"name": "convert_currency", "arguments": {"amount": 1, "currency": "X"}},
            ),
            policy=policy,
        )
        assert "Unknown tool" in result.messages[0].content  # type: ignore[attr-defined]
        assert [] == RAN

    def test_policy_middleware_sees_the_real_tool(self) -> None:
        """ToolPolicyMiddleware judges the real tool (here: unclassified, refused)."""
        guard = ToolPolicyMiddleware.require_classification()
        result = run(
            ToolCall(
                "c", "tool_call", {"name": "send_email", "arguments": {"to": "x", "body": "y"}}
            ),
            middleware=[guard],
        )
        assert "require_classification" in result.messages[0].content  # type: ignore[attr-defined]
        assert [] == RAN

    def test_approval_and_resume(self) -> None:
        """An approval-gated deferred tool reached by tool_call is deferred, then resumed."""
        toolset = Discovery(
            Combined(Registry.of(get_weather), ApprovalRequired(Registry.of(send_email)))
        )
        calls = [
            ToolCall(
                "c", "tool_call", {"name": "send_email", "arguments": {"to": "x", "body": "y"}}
            )
        ]
        first = dispatch_sync(calls, toolset)
        assert first.deferred is not None
        assert [("c", "send_email")] == [(c.id, c.name) for c in first.deferred.approvals]
        again = dispatch_sync(calls, toolset, approvals=first.deferred.approve_all())
        assert "sent" == again.messages[0].content
        resumed = dispatch_sync(
            first.deferred.approvals, toolset, approvals=DeferredToolResults().approve("c")
        )
        assert "sent" == resumed.messages[0].content

    def test_on_deferred_resumes_inline(self) -> None:
        """on_deferred approves a gated deferred tool reached by tool_call, in one dispatch."""
        toolset = Discovery(ApprovalRequired(Registry.of(get_weather, send_email)))
        wrapped = {"name": "send_email", "arguments": {"to": "x", "body": "y"}}
        result = dispatch_sync(
            [ToolCall("c", "tool_call", wrapped)],
            toolset,
            on_deferred=lambda pending: pending.approve_all(),
        )
        assert ("send_email", "sent") == (result.messages[0].name, result.messages[0].content)
        assert result.deferred is None

    def test_prefixed_discovery(self) -> None:
        """Around Discovery, Prefixed renames the intrinsic tools too, and they still work."""
        toolset = Prefixed(DISCOVERY, "x_")
        result = dispatch_sync(
            [
                ToolCall("s", "x_tool_search", {"query": "email"}),
                ToolCall(
                    "c",
                    "x_tool_call",
                    {"name": "x_send_email", "arguments": {"to": "a", "body": "b"}},
                ),
            ],
            toolset,
        )
        assert "x_send_email" == json.loads(result.messages[0].content)["tools"][0]["name"]
        assert "sent" == result.messages[1].content

    def test_promoted_then_direct(self) -> None:
        """Once promoted, the found tool is callable directly."""
        first = run(ToolCall("s", "tool_search", {"query": "email"}))
        promoted = DISCOVERY.promote(first.promoted)  # type: ignore[attr-defined]
        result = dispatch_sync([ToolCall("c", "send_email", {"to": "a", "body": "b"})], promoted)
        assert "sent" == result.messages[0].content


def test_hidden_stays_hidden_by_every_route() -> None:
    """A hidden tool is unreachable directly, through tool_call and through search."""
    toolset = Discovery(attrs.evolve(TOOLS) if False else TOOLS)
    calls = [
        ToolCall("1", "drop_database", {}),
        ToolCall("2", "tool_call", {"name": "drop_database"}),
        ToolCall("3", "tool_search", {"query": "drop database"}),
    ]
    result = dispatch_sync(calls, toolset)
    assert [] == RAN
    assert "drop_database" not in result.messages[2].content


def deep(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


class TestHostileWrappers:
    @pytest.mark.parametrize(
        "wrapper",
        [
            {"name": "send_email", "arguments": deep(100_000)},
            {"name": "send_email", "arguments": object()},
            {"name": "send_email", 3: "x"},
            {"name": "send_email", "arguments": float("nan")},
            {"name": "send_email" * 10_000},
            {"name": "\ud800", "arguments": {}},
            "[" * 100_000,
            '{"name": "send_email", "name": "drop_database", "arguments": {}}',
        ],
    )
    def test_answered_never_raised(self, wrapper: object) -> None:
        """Hostile tool_call wrappers are answered with an error, and nothing runs."""
        result = run(ToolCall("c", "tool_call", wrapper))  # type: ignore[arg-type]
        (message,) = result.messages  # type: ignore[attr-defined]
        assert message.is_error
        assert [] == RAN
        assert msgspec.json.encode(result.events)  # type: ignore[attr-defined]

    def test_a_description_with_a_lone_surrogate(self) -> None:
        """A description holding a lone surrogate (JSON from an MCP server can carry
        `"\\ud800"`) is escaped in tool_search's answer and in the budget, never a
        UnicodeEncodeError out of dispatch."""
        odd = Tool.from_schema(
            "odd_tool",
            "Find me \ud800 here.",
            {"type": "object"},
            fn=lambda: "",
            exposure="deferred",
        )
        result = run(
            ToolCall("s", "tool_search", {"query": "find"}), toolset=Discovery(Registry.of(odd))
        )
        (message,) = result.messages  # type: ignore[attr-defined]
        assert "ok" == message.status
        assert "Find me \\ud800 here." == json.loads(message.content)["tools"][0]["description"]
        assert msgspec.json.encode(result.events)  # type: ignore[attr-defined]
        direct = attrs.evolve(odd, exposure=Exposure.Direct)
        budgeted = Discovery(Registry.of(direct, get_weather), budget_bytes=10)
        assert [Exposure.Deferred] * 2 == [t.exposure for t in budgeted.tools()][2:]

    def test_bytes_are_json_text(self) -> None:
        """A wrapper sent as bytes is read as JSON text, as a direct call's bytes are;
        bytes that are not JSON (or repeat a field) are answered, never repaired."""
        sent = b'{"name": "convert_currency", "arguments": {"amount": 2, "currency": "EUR"}}'
        (message,) = run(ToolCall("c", "tool_call", sent)).messages  # type: ignore[attr-defined]
        assert ("convert_currency", "ok") == (message.name, message.status)
        for bad in (b"\xff\xfe", b"{name: 'send_email'}", b'{"name": "a", "name": "send_email"}'):
            (message,) = run(ToolCall("c", "tool_call", bad)).messages  # type: ignore[attr-defined]
            assert ("tool_call", "error") == (message.name, message.status)
            assert "Tool call not run" in message.content
        assert [("convert_currency", {"amount": 2.0, "currency": "EUR"})] == RAN

    def test_a_str_subclass_is_its_text(self) -> None:
        """Wrapper and search arguments of a ``str`` subclass (an SDK's own string type)
        are read as the text they hold (msgspec raised TypeError on them), and the result
        encodes."""

        class SdkText(str):
            pass

        sent = '{"name": "convert_currency", "arguments": {"amount": 2, "currency": "EUR"}}'
        result = run(
            ToolCall("c", "tool_call", SdkText(sent)),
            ToolCall("s", "tool_search", SdkText('{"query": "currency"}')),
        )
        assert [("convert_currency", "ok"), ("tool_search", "ok")] == [
            (m.name, m.status)
            for m in result.messages  # type: ignore[attr-defined]
        ]
        assert msgspec.json.encode(result)
        assert [("convert_currency", {"amount": 2.0, "currency": "EUR"})] == RAN

    def test_a_providers_reason_with_a_lone_surrogate_encodes(self) -> None:
        """A wrapper the provider could not read is answered quoting its reason, escaped."""
        result = run(ToolCall("c", "tool_call", {}, invalid="bad \udc80 text"))
        (message,) = result.messages  # type: ignore[attr-defined]
        assert ("tool_call", "error") == (message.name, message.status)
        assert "bad \\udc80 text" in message.content
        assert msgspec.json.encode(result)
