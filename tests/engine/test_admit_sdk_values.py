"""Values of an SDK's own types (subclasses of ``str``, ``int``, ``float``; msgspec
encodes none of them) in a call's arguments: read as the plain values they hold on
every route, so the tool gets plain values and every result encodes."""

from __future__ import annotations

import enum
import json
from typing import Annotated, Any

import attrs
import msgspec
import pytest

from tests.sdk_types import SdkFloat, SdkInt, SdkText, sdk_typed
from tinytools import (
    CallDeferred,
    DeferredToolResults,
    Registry,
    RunPolicy,
    Tool,
    ToolAccess,
    ToolArgumentsError,
    ToolCall,
    ToolPolicy,
    ToolResult,
    dispatch,
    dispatch_sync,
    tool,
)

seen: list[dict[str, object]] = []


@tool
def search(query: str, limit: int = 3) -> dict[str, object]:
    """Search."""
    seen.append({"query": query, "limit": limit})
    return {"query": query, "limit": limit}


@tool
def later(query: str) -> str:
    """Deferred by the tool itself."""
    raise CallDeferred()


def _schema_fn(**arguments: object) -> dict[str, object]:
    seen.append(arguments)
    return arguments


SCHEMA = Tool.from_schema(
    "find",
    "Find.",
    {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
    fn=_schema_fn,
)
TOOLS = Registry.of(search, later, SCHEMA)


@pytest.fixture(autouse=True)
def _reset() -> None:
    seen.clear()


class TestRawTextOfAStrSubclass:
    @pytest.mark.parametrize("built", [search, SCHEMA], ids=["signature", "schema"])
    def test_validate_reads_it_as_its_text(self, built: Tool) -> None:
        """``Tool.validate`` raised msgspec's TypeError ("a bytes-like object is
        required"); it reads the text as dispatch does."""
        text = '{"query": "a", "limit": 2}'
        assert built.validate(SdkText(text)) == built.validate(text)
        for bad in ('{"query": 1}', '{"query": '):
            with pytest.raises(ToolArgumentsError) as plain:
                built.validate(bad)
            with pytest.raises(ToolArgumentsError) as sdk:
                built.validate(SdkText(bad))
            assert str(sdk.value) == str(plain.value)

    @pytest.mark.anyio
    async def test_a_call_the_tool_defers_is_carried_as_its_text(self) -> None:
        """A tool that raised ``CallDeferred`` on arguments of a str subclass left the
        subclass in ``DeferredToolRequests``: the result did not encode."""
        expected = dispatch_sync([ToolCall("c", "later", '{"query": "a"}')], TOOLS)
        calls = [ToolCall("c", "later", SdkText('{"query": "a"}'))]
        for result in (dispatch_sync(calls, TOOLS), await dispatch(calls, TOOLS)):
            assert result.deferred is not None
            assert [type(c.arguments) for c in result.deferred.calls] == [str]
            assert msgspec.json.encode(result) == msgspec.json.encode(expected)


class Level(enum.IntEnum):
    LOW = 1


@tool
def anything(query: str, limit: int = 3, extra: Any = None) -> dict[str, object]:
    """Takes any extra value."""
    seen.append({"query": query, "limit": limit, "extra": extra})
    return {"query": query, "limit": limit, "extra": extra}


MORE = Registry.of(anything, later, SCHEMA)


def _types(value: object) -> set[type]:
    if isinstance(value, dict):
        return {dict}.union(*map(_types, value), *map(_types, value.values()))
    if isinstance(value, list):
        return {list}.union(*map(_types, value))
    return {type(value)}


class TestDictArgumentsOfSubclasses:
    @pytest.mark.parametrize(
        "arguments",
        [
            {"query": "a", "limit": 2},
            {"query": "a", "limit": 2.0},
            {"query": "a", "limit": 2, "extra": [1, [2.5, "x"], {"k": 2**80}]},
            {"query": "a", "limit": "2"},  # invalid
            {"limit": 2},  # invalid
        ],
        ids=["flat", "integral-float", "nested", "invalid-type", "missing"],
    )
    @pytest.mark.parametrize("name", ["anything", "find", "later", "nope"])
    @pytest.mark.anyio
    async def test_are_read_as_the_plain_values_they_hold(
        self, arguments: dict[str, object], name: str
    ) -> None:
        """A schema tool ran with the subclasses and its result then failed to encode
        (a signature tool's ``Any`` parameter too, and its ``float`` parameter refused
        "got `SdkFloat`"): every route reads them as their plain values, so the call is
        answered exactly as the plain arguments are, and the tool gets plain values."""
        expected = msgspec.json.encode(dispatch_sync([ToolCall("c", name, arguments)], MORE))
        plain_seen = list(seen)
        seen.clear()
        calls = [ToolCall("c", name, sdk_typed(arguments))]  # type: ignore[arg-type]
        for result in (dispatch_sync(calls, MORE), await dispatch(calls, MORE)):
            assert msgspec.json.encode(result) == expected
        assert seen == plain_seen * 2
        assert all(_types(s) <= {dict, list, str, int, float, type(None)} for s in seen)

    @pytest.mark.parametrize("name", ["anything", "find"])
    def test_an_int_enum_is_its_value_for_the_model(self, name: str) -> None:
        """Enum members stay (msgspec encodes them as their values): the result encodes."""
        result = dispatch_sync([ToolCall("c", name, {"query": "a", "limit": Level.LOW})], MORE)
        assert [m.status for m in result.messages] == ["ok"]
        assert json.loads(result.messages[0].content)["limit"] == 1
        msgspec.json.encode(result)

    @pytest.mark.parametrize(
        ("value", "says"),
        [
            (SdkInt(int("f" * 5000, 16)), "Integer value out of range"),
            (SdkFloat("nan"), "Expected a finite `number`, got `NaN`"),
            (SdkText("a\ud800"), "String holds a lone surrogate"),
        ],
        ids=["huge-int", "nan", "lone-surrogate"],
    )
    @pytest.mark.parametrize("name", ["anything", "find"])
    def test_values_json_cannot_carry_are_refused_as_plain_ones_are(
        self, value: object, says: str, name: str
    ) -> None:
        for where in (
            {"query": "a", "limit": 1, "extra": value},
            {"query": "a", "extra": [[value]]},
        ):
            result = dispatch_sync([ToolCall("c", name, where)], MORE)
            [message] = result.messages
            assert message.is_error
            assert says in message.content
            msgspec.json.encode(result)
        assert seen == []


class TestDictArgumentsNoJsonCanWrite:
    @pytest.mark.parametrize(
        ("arguments", "path", "says"),
        [
            ({"query": "a", "extra": object()}, "$.extra", "Expected a JSON value, got `object`"),
            ({"query": "a", "extra": [1, {"k": print}]}, "$.extra[1].k", "got `builtin_function"),
            ({"query": "a", "extra": {(1, 2): "x"}}, "$.extra[[1,2]]", "object key, got `tuple`"),
            ({"query": "a", "extra": {None: 1}}, "$.extra[null]", "object key, got `NoneType`"),
            ({"query": "a", "extra": {1: "x"}}, "$.extra[1]", "object key, got `int`"),
            ({"query": "a", "extra": [{2.5: "x"}]}, "$.extra[0][2.5]", "object key, got `float`"),
            ({"query": "a", 7: "x"}, "$[7]", "object key, got `int`"),
        ],
        ids=["object", "function", "tuple-key", "none-key", "int-key", "float-key", "top-int-key"],
    )
    @pytest.mark.parametrize("name", ["anything", "find"])
    def test_are_refused_at_their_path(
        self, arguments: dict[str, object], path: str, says: str, name: str
    ) -> None:
        """A host's own object in dict arguments reached a schema tool (or an ``Any``
        parameter), and the result then failed to encode (its ``ToolStarted`` event
        carried the object): it is refused as that call's error, the tool not run."""
        result = dispatch_sync([ToolCall("c", name, arguments)], MORE)
        [message] = result.messages
        assert message.is_error
        assert f"at `{path}`: " in message.content
        assert says in message.content
        msgspec.json.encode(result)
        assert seen == []


class Mood(str, enum.Enum):
    """A str Enum, as tools and hosts return them."""

    CALM = "calm"


class TestResultsAndDecisionsOfAStrSubclass:
    @pytest.mark.parametrize(
        "result",
        [
            ToolResult.success(Mood.CALM),
            ToolResult.error(SdkText("calm")),
            ToolResult.success(SdkText("calm")),
        ],
        ids=["success-enum", "error", "success"],
    )
    def test_a_tool_result_built_from_one_holds_its_text(self, result: ToolResult) -> None:
        """``ToolResult.success(Mood.CALM)`` made a text block msgspec could not encode,
        and the call was answered "returned a bad value"."""

        @tool
        def mood() -> ToolResult:
            """The mood."""
            return result

        found = dispatch_sync([ToolCall("c", "mood", "{}")], Registry.of(mood))
        assert [m.content for m in found.messages] == ["calm"]
        msgspec.json.encode(found)

    def test_decisions_by_an_id_of_a_str_subclass(self) -> None:
        """A decision under an SDK's string id is the decision for that id; one for no
        call of the batch is reported in an event that encodes (it did not)."""
        gated = Tool.from_schema("gated", "Gated.", {"type": "object"}, fn=lambda: "ran")
        gated = attrs.evolve(gated, policy=ToolPolicy(access=ToolAccess(approval_required=True)))
        tools = Registry.of(gated)
        calls = [ToolCall("c", "gated", "{}")]
        decided = DeferredToolResults().approve(SdkText("c")).respond(SdkText("x"), SdkText("y"))
        assert [type(i) for i in decided.decisions] == [str, str]
        result = dispatch_sync(calls, tools, approvals=decided)
        assert [m.content for m in result.messages] == ["ran"]
        msgspec.json.encode(result)

    def test_a_decision_id_that_is_no_text_is_refused(self) -> None:
        with pytest.raises(TypeError, match="a call id is a str, got int"):
            DeferredToolResults().approve(3)  # type: ignore[arg-type]


@tool(policy=ToolPolicy(redact=("query",)))
def secret(query: str = "") -> str:
    """Redacts its query."""
    return "found"


class TestUnknownRouteOfAStrSubclass:
    @pytest.mark.parametrize(
        "policy", [RunPolicy(allowlist=frozenset()), RunPolicy()], ids=["disallowed", "case"]
    )
    def test_a_redacting_tool_reached_by_the_name_is_answered(self, policy: RunPolicy) -> None:
        """Raw text of a str subclass to a disallowed (or case-variant) name of a redacting
        tool crashed dispatch: the unknown-tool event's redaction decoded it with msgspec."""
        name = "secret" if policy.allowlist is not None else "Secret"
        text = '{"query": "hunter2"}'
        plain = dispatch_sync([ToolCall("c", name, text)], Registry.of(secret), policy=policy)
        sdk = dispatch_sync(
            [ToolCall("c", name, SdkText(text))], Registry.of(secret), policy=policy
        )
        assert msgspec.json.encode(sdk) == msgspec.json.encode(plain)
        assert b"hunter2" not in msgspec.json.encode(sdk)


@tool(policy=ToolPolicy(redact=("password",)))
def login(password: str = "", extra: Any = None) -> str:
    """Redacts the password."""
    return "ran"


class TestDictArgumentsHoldingThemselves:
    @pytest.mark.parametrize("leaf", [SdkText("x"), "x", float("nan")], ids=["sdk", "str", "nan"])
    @pytest.mark.parametrize("name", ["anything", "find", "login", "nope", "Login"])
    def test_are_answered_as_nested_too_deeply(self, leaf: object, name: str) -> None:
        """A host's dict arguments that hold themselves hung dispatch (the walks that
        look for values JSON cannot carry, and redaction, never ended): answered as
        nested too deeply, and the result encodes."""
        arguments: dict[str, object] = {"extra": {"a": leaf}}
        arguments["extra"]["self"] = arguments  # type: ignore[index]
        result = dispatch_sync(
            [ToolCall("c", name, arguments)], Registry.of(anything, SCHEMA, login)
        )
        [message] = result.messages
        assert message.is_error
        assert "nested too deeply" in message.content or "Unknown tool" in message.content
        msgspec.json.encode(result)
        assert seen == []


class _Key(str):
    """A host's own key type (an SDK's str subclass)."""


class _HostileKey(str):
    """A key whose own methods raise: dispatch must never need them."""

    __hash__ = str.__hash__

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("__eq__ of a key")

    def __str__(self) -> str:
        raise RuntimeError("__str__ of a key")

    def __format__(self, spec: str) -> str:
        raise RuntimeError("__format__ of a key")


class _KeyObject:
    """A hashable object of the host's as a key, whose own methods raise."""

    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("__eq__ of a key")

    def __str__(self) -> str:
        raise RuntimeError("__str__ of a key")

    __repr__ = __str__


@tool(policy=ToolPolicy(redact=("token",)))
def guarded(
    query: str, extra: dict[str, object] | None = None, token: str = ""
) -> dict[str, object]:
    """A redacting tool with an open mapping parameter."""
    seen.append({"query": query, "extra": extra, "token": token})
    return {"query": query}


GUARDED = Tool.from_schema(
    "guarded_schema",
    "A redacting schema tool.",
    {"type": "object", "properties": {"query": {"type": "string"}, "token": {"type": "string"}}},
    fn=_schema_fn,
    policy=ToolPolicy(redact=("token",)),
)


@tool
def described(
    query: str, extra: Annotated[Any, msgspec.Meta(description="anything at all")] = None
) -> dict[str, object]:
    """An open parameter under ``Annotated``: the same keys are refused as for ``Any``."""
    seen.append({"query": query, "extra": extra})
    return {"query": query}


KEYED = Registry.of(anything, SCHEMA, guarded, GUARDED, described)


def _key_types(value: object) -> set[type]:
    found: set[type] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.update(type(k) for k in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


class TestKeysJsonHasNoTextFor:
    @pytest.mark.parametrize("name", ["anything", "find", "guarded", "guarded_schema", "described"])
    @pytest.mark.parametrize(
        ("arguments", "path", "says"),
        [
            ({1: "x"}, "$[1]", "got `int`"),
            ({"query": "a", 2.5: "x"}, "$[2.5]", "got `float`"),
            ({"query": "a", "extra": {"k": {3: "x"}}}, "$.extra.k[3]", "got `int`"),
            ({"query": "a", _KeyObject(): "x"}, "$[<_KeyObject>]", "got `_KeyObject`"),
        ],
        ids=["int", "float", "nested-int", "object"],
    )
    def test_a_key_that_is_no_string_is_that_calls_invalid_arguments(
        self, name: str, arguments: dict[object, object], path: str, says: str
    ) -> None:
        """Defect: an int key in dict arguments reached a schema tool's function as a
        keyword ("Tool `find` failed: TypeError: keywords must be strings"), a signature
        tool's answer read "at `key` in `$`", and an int key below an open parameter
        reached the function (still so for ``Annotated[Any, Meta(...)]``, ``described``).
        JSON object keys are strings: every route answers the call's invalid arguments at
        the key's path, the tool not run."""
        result = dispatch_sync([ToolCall("c", name, arguments)], KEYED)
        [message] = result.messages
        assert message.is_error
        assert message.content.startswith(f"Invalid arguments for tool `{name}` at `{path}`: ")
        assert f"Expected a `string` object key, {says}" in message.content
        msgspec.json.encode(result)
        assert seen == []

    @pytest.mark.parametrize("name", ["Guarded", "guarded"])
    def test_unknown_or_disallowed_names_of_a_redacting_tool_answer_and_hide_it(
        self, name: str
    ) -> None:
        """The same arguments under a name that only nearly reaches a redacting tool, or
        one the allow-list refuses: the call is answered as unknown, the secret hidden,
        the result encodes; a hostile key's own methods never run."""
        for arguments in (
            {1: "x", "token": "hunter2-secret"},
            {_HostileKey("query"): "a", "token": "hunter2-secret"},
            {_KeyObject(): "x", "token": "hunter2-secret"},
        ):
            result = dispatch_sync(
                [ToolCall("c", name, arguments)],
                KEYED,
                policy=RunPolicy(allowlist=frozenset({"find"})),
            )
            [message] = result.messages
            assert message.content.startswith(f"Unknown tool `{name}`")
            assert "hunter2-secret" not in msgspec.json.encode(result).decode()
        assert seen == []


class TestKeysOfAStrSubclass:
    @pytest.mark.parametrize("name", ["anything", "find", "guarded", "guarded_schema"])
    @pytest.mark.parametrize("key", [_Key, _HostileKey], ids=["subclass", "hostile"])
    def test_every_tool_gets_plain_str_keys(self, name: str, key: type[str]) -> None:
        """Defect: a schema tool received keys of a str subclass unchanged (at every
        depth; a signature tool's were converted), and a redacting tool's redaction
        called a key's own ``__str__``, so a key whose methods raise ended dispatch.
        Every tool now gets plain ``str`` keys; no method of the key runs."""
        arguments = {key("query"): "a", key("extra"): {key("k"): [{key("deep"): 1}]}}
        result = dispatch_sync([ToolCall("c", name, arguments)], KEYED)
        [message] = result.messages
        assert not message.is_error, message.content
        [got] = seen
        assert _key_types(got) == {str}
        msgspec.json.encode(result)
