"""Admission under hostile arguments and names (the hostile-input audit): every call is
answered, lone surrogates and non-finite numbers are refused at their path, a refused
call's previews and events encode and hide its secrets, a call id comes back verbatim."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tinytools
from tests.engine.hostile import TOOLS, _answered
from tinytools import (
    JsonBlock,
    Registry,
    RunPolicy,
    Tool,
    ToolCall,
    ToolPolicy,
    ToolResult,
    dispatch_sync,
    tool,
)
from tinytools._wire import wrap_return
from tinytools.events import InvalidToolArgs, UnknownToolCall


def _nested(depth: int) -> dict[str, object]:
    root: dict[str, object] = {}
    node = root
    for _ in range(depth):
        child: dict[str, object] = {}
        node["a"] = child
        node = child
    return root


class TestItem1EveryCallAnswered:
    @pytest.mark.parametrize(
        "arguments",
        [
            {"x": _nested(990)},
            {"x": int("f" * 5000, 16)},
            '{"x":' + "[" * 990 + "]" * 990 + "}",
            '{"x": ' + "9" * 5000 + "}",
        ],
        ids=["deep-dict", "huge-int-dict", "deep-raw", "huge-int-raw"],
    )
    @pytest.mark.parametrize("name", ["nope", "get_weather", "measure", "login"])
    def test_hostile_arguments_are_answered(self, name: str, arguments: object) -> None:
        [message] = _answered([ToolCall("c", name, arguments)]).messages  # type: ignore[arg-type]
        assert message.is_error


class TestItem3Redaction:
    SECRET = "hunter2-secret"

    @pytest.mark.parametrize(
        ("name", "options"),
        [
            ("LOGIN", {}),
            ("login", {"advertised": ["get_weather"]}),
            ("login", {"policy": RunPolicy(allowlist=["get_weather"])}),
        ],
        ids=["case-variant", "not-advertised", "not-allowed"],
    )
    def test_unknown_call_to_a_redacting_tool(self, name: str, options: dict[str, object]) -> None:
        arguments = {"user": "u", "password": self.SECRET}
        result = _answered([ToolCall("c", name, arguments)], **options)
        assert self.SECRET not in msgspec.json.encode(result).decode()
        [event] = [e for e in result.events if isinstance(e, UnknownToolCall)]
        assert event.arguments == {"user": "u", "password": "[redacted]"}

    def test_after_relaxed_repair(self) -> None:
        raw = "{'user': 5, 'password': '" + self.SECRET + "'}"
        result = _answered([ToolCall("c", "login", raw)])
        assert self.SECRET not in msgspec.json.encode(result).decode()
        assert any(isinstance(e, InvalidToolArgs) for e in result.events)

    @pytest.mark.parametrize("key", ["pasword", "Password", "pass-word", "passwrod", "PASSWD"])
    def test_a_misspelt_secret_key_is_redacted_where_arguments_are_refused(self, key: str) -> None:
        result = _answered([ToolCall("c", "login", {"user": "u", key: self.SECRET})])
        [message] = result.messages
        assert message.is_error
        assert self.SECRET not in msgspec.json.encode(result).decode()
        [event] = [e for e in result.events if isinstance(e, InvalidToolArgs)]
        assert event.arguments == {"user": "u", key: "[redacted]"}

    def test_unrelated_keys_of_refused_arguments_are_still_shown(self) -> None:
        result = _answered([ToolCall("c", "login", {"user": "u", "pass": 1, "passage": "x"})])
        [event] = [e for e in result.events if isinstance(e, InvalidToolArgs)]
        assert event.arguments == {"user": "u", "pass": 1, "passage": "x"}

    def test_a_short_secret_is_scrubbed_as_a_token_not_as_every_letter(self) -> None:
        @tool(policy=ToolPolicy(redact=("pin",)))
        def unlock(door: str, pin: str) -> str:
            """Unlock a door."""
            raise ValueError(f"door {door} refused pin {pin}")

        call = ToolCall("c", "unlock", {"door": "back", "pin": "a"})
        [message] = _answered([call], Registry.of(unlock)).messages
        assert message.is_error
        assert message.content.count("[redacted]") == 1
        assert "Tool `unlock` failed" in message.content
        assert "door back refused pin [redacted]" in message.content


class TestItem4Surrogates:
    def test_dict_argument_with_a_lone_surrogate_is_refused_at_its_path(self) -> None:
        [message] = _answered([ToolCall("c", "get_weather", {"city": "a\udc80"})]).messages
        assert message.is_error
        assert "`$.city`" in message.content
        assert "surrogate" in message.content

    @settings(max_examples=60, deadline=None)
    @given(
        name=st.text(max_size=12),
        arguments=st.one_of(
            st.text(max_size=40),
            st.dictionaries(st.text(max_size=6), st.text(max_size=10), max_size=3),
        ),
    )
    @example(name="g\udc80", arguments={"city": "a\udc80"})
    def test_arbitrary_text_encodes(self, name: str, arguments: object) -> None:
        for target in (name, "get_weather", "measure", "login"):
            _answered([ToolCall("c", target, arguments)])  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("calls", "options"),
        [
            (
                [ToolCall("c", "get_weather", {"city": "a"}), ToolCall("c", "g\udc80", {})],
                {},
            ),
            ([ToolCall("c", "g\udc80", {})], {"policy": RunPolicy(max_tool_calls=0)}),
            (
                [ToolCall("c", "g\udc80", {})],
                {"middleware": [tinytools.before_tool(lambda c, e: tinytools.Deny("no"))]},
            ),
            (
                [ToolCall("c", "g\udc80", {})],
                {"middleware": [tinytools.before_tool(lambda c, e: tinytools.Allow())]},
            ),
            (
                [ToolCall("c", "g\udc80", {})],
                {"middleware": [tinytools.before_tool(lambda c, e: tinytools.Defer())]},
            ),
            (
                [ToolCall("c", "g\udc80", {})],
                {"approvals": tinytools.DeferredToolResults().deny("c", "no")},
            ),
            (
                [ToolCall("c", "g\udc80", {})],
                {"approvals": tinytools.DeferredToolResults().respond("c", "r")},
            ),
            # a hook defers before anything checks the call: raw text or a dict holding one
            (
                [ToolCall("c", "get_weather", '{"city": "a\udc80"}')],
                {"middleware": [tinytools.before_tool(lambda c, e: tinytools.Defer())]},
            ),
            (
                [ToolCall("c", "get_weather", {"city": "a\udc80"})],
                {
                    "middleware": [
                        tinytools.before_tool(lambda c, e: tinytools.Defer(kind="approval"))
                    ]
                },
            ),
            ([ToolCall("c", "", "", invalid="no name \udc80")], {}),  # a provider's reason
        ],
        ids=[
            "repeated-id",
            "limit",
            "hook-deny",
            "hook-allow",
            "hook-defer",
            "resume-deny",
            "resume-respond",
            "hook-defer-text",
            "hook-defer-dict",
            "provider-reason",
        ],
    )
    def test_a_name_with_a_lone_surrogate_encodes_on_every_route(
        self, calls: list[ToolCall], options: dict[str, object]
    ) -> None:
        """A model's name (or text, or a provider's reason) holding a lone surrogate is
        escaped wherever a result carries it — messages, events, deferred calls (whose
        id alone is kept verbatim) — not only in the unknown-tool answer."""
        result = dispatch_sync(calls, TOOLS, **options)  # type: ignore[arg-type]
        assert msgspec.json.encode(result)
        if result.deferred is not None:  # resumed as it came back, denied: still encodes
            denied = result.deferred.deny("c", "no")
            again = _answered(list(result.deferred.all), approvals=denied)
            assert [m.status for m in again.messages] == ["denied"]
            assert msgspec.json.encode(again)

    @pytest.mark.parametrize(
        "raised",
        [
            OSError("cannot open caf\udce9.txt"),  # a name read with surrogateescape
            ValueError("bad \ud800"),
            tinytools.ModelRetry("fix \udce9"),
            tinytools.RetryableError("again \udce9"),
            tinytools.FatalToolError("dead \udce9"),
        ],
        ids=["file-name", "value-error", "model-retry", "retryable", "fatal"],
    )
    @pytest.mark.parametrize(
        "options",
        [
            {},
            {"policy": RunPolicy(tool_timeout=5)},
            {"middleware": [tinytools.after_tool(lambda c, r, e: r)]},
        ],
        ids=["inline", "threaded", "hooked"],
    )
    def test_an_exception_text_with_a_lone_surrogate_encodes(
        self, raised: BaseException, options: dict[str, object]
    ) -> None:
        """A tool's exception text (a file name read with ``surrogateescape``) reaches the
        message, ``ToolFailed`` (its traceback too) and ``ToolRetried`` escaped."""

        @tool(policy=ToolPolicy().with_runtime(max_retries=1))
        def opens(path: str) -> str:
            """Open a file."""
            raise raised

        try:
            result = dispatch_sync(
                [ToolCall("c", "opens", {"path": "x"})], Registry.of(opens), **options
            )  # type: ignore[arg-type]
        except tinytools.DispatchAborted as aborted:
            result = aborted.result
        [message] = result.messages
        assert message.is_error
        assert msgspec.json.encode(result)


class TestItem7NonFinite:
    @pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
    @pytest.mark.parametrize(("name", "key"), [("get_weather", "temp"), ("measure", "x")])
    def test_dict_arguments_refused_at_their_path(self, name: str, key: str, value: float) -> None:
        arguments: dict[str, object] = {key: value} | (
            {"city": "a"} if name == "get_weather" else {}
        )
        [message] = _answered([ToolCall("c", name, arguments)]).messages
        assert message.is_error
        assert f"`$.{key}`" in message.content
        assert "finite" in message.content

    @pytest.mark.parametrize(("name", "key"), [("get_weather", "temp"), ("measure", "x")])
    def test_raw_text_refused_at_its_path(self, name: str, key: str) -> None:
        city = '"city": "a", ' if name == "get_weather" else ""
        [message] = _answered([ToolCall("c", name, "{" + city + f'"{key}": 1e999}}')]).messages
        assert message.is_error
        assert f"`$.{key}`" in message.content

    def test_json_in_tag_text_dialect(self) -> None:
        from tinytools.formats import json_in_tag

        parsed = json_in_tag.parse(
            '<tool_call>{"name": "get_weather", '
            '"arguments": {"city": "a", "temp": 1e999}}</tool_call>',
            TOOLS,
        )
        [message] = _answered(list(parsed.calls)).messages
        assert message.is_error

    def test_wrap_return_refuses_nan(self) -> None:
        with pytest.raises(ValueError, match=r"\$\.a\[1\]"):
            wrap_return({"a": [1.0, float("nan")]})

    def test_nan_result_is_an_error_message_on_the_general_path(self) -> None:
        @tool
        def nan_tool() -> object:
            """NaN."""
            return {"a": float("nan")}

        result = _answered(
            [ToolCall("c", "nan_tool", {})], Registry.of(nan_tool), on_event=lambda e: None
        )
        assert result.messages[0].is_error
        assert "NaN" in result.messages[0].content

    def test_nan_result_is_an_error_message_without_hooks(self) -> None:
        """A plain return value with no hook to see it is folded directly, and refused
        alike."""

        @tool
        def nan_tool() -> object:
            """NaN."""
            return {"a": float("nan")}

        result = _answered([ToolCall("c", "nan_tool", {})], Registry.of(nan_tool))
        assert result.messages[0].is_error
        assert "NaN" in result.messages[0].content

    @pytest.mark.parametrize(
        ("result", "where"),
        [
            (ToolResult(content=(JsonBlock(float("nan")),)), "`content` holds"),
            (ToolResult(follow_up=(JsonBlock({"a": [float("inf")]}),)), "`follow_up` holds"),
            (ToolResult.success("x", structured={"a": float("-inf")}), "`structured` holds"),
            (ToolResult.success("x", metadata={"ms": float("nan")}), "`metadata` holds"),
        ],
        ids=["json-block", "follow-up", "structured", "metadata"],
    )
    @pytest.mark.parametrize("hooked", [False, True])
    def test_nan_in_a_returned_tool_result_is_an_error_message(
        self, result: ToolResult, where: str, hooked: bool
    ) -> None:
        """A ``ToolResult`` carrying NaN or an infinity (in a JSON block the model would
        read as ``null``, in its structured output or metadata) is refused as a plain
        value holding one is."""

        @tool
        def nan_tool() -> ToolResult:
            """NaN."""
            return result

        middleware = [tinytools.after_tool(lambda call, given, env: given)] if hooked else []
        found = _answered(
            [ToolCall("c", "nan_tool", {})], Registry.of(nan_tool), middleware=middleware
        )
        [message] = found.messages
        assert message.is_error
        assert where in message.content
        assert "NaN or an infinity" in message.content
        assert found.metadata == {}

    @pytest.mark.parametrize("data", [{"ms": float("nan")}, [1.0, float("inf")], float("-inf")])
    def test_nan_in_an_emitted_event_is_refused_to_the_tool(self, data: object) -> None:
        """A custom event's data holding NaN or an infinity would reach the host as
        ``null``: ``emit`` refuses it to the tool, as it refuses data JSON cannot encode."""
        refused: list[str] = []

        @tool
        def progress(emit: tinytools.Inject[tinytools.Emit]) -> str:
            """Emit progress."""
            try:
                emit("progress", data)
            except TypeError as error:
                refused.append(str(error))
            return "done"

        found = _answered([ToolCall("c", "progress", {})], Registry.of(progress))
        assert [m.status for m in found.messages] == ["ok"]
        assert [type(e).__name__ for e in found.events] == ["ToolStarted", "ToolCompleted"]
        [said] = refused
        assert "NaN or an infinity" in said


class _Text(str):
    pass


class _HostileInt(int):
    def __repr__(self) -> str:
        raise RuntimeError("repr raised")

    __str__ = __repr__


class TestHostArgumentsOfSubclasses:
    """Dict arguments a host built holding ``str``/``int``/``float`` subclasses (msgspec
    encodes none of them): the previews and events of a refused call are still made."""

    @pytest.mark.parametrize(
        "arguments",
        [
            {"city": 1, "note": _Text("a")},
            {_Text("city"): 1},
            {"city": "a", "temp": _HostileInt(3), "x": 1},
            {"city": [_Text("a\ud800"), _HostileInt(2**300)]},
        ],
        ids=["str-value", "str-key", "hostile-int", "nested"],
    )
    @pytest.mark.parametrize("name", ["get_weather", "nope", "login"])
    def test_a_refused_call_is_answered(self, arguments: dict[str, object], name: str) -> None:
        [message] = _answered([ToolCall("c", name, arguments)]).messages
        assert message.is_error


class TestSurrogateCallIds:
    """A call id is the host's key for matching answers: it comes back verbatim, even when
    it holds a lone surrogate (documented on ``ToolCall.id``), and still round-trips
    through the standard ``json`` module, which is what decoded it."""

    def test_the_id_is_echoed_exactly_and_json_round_trips_it(self) -> None:
        import json

        call_id = json.loads('"call_\\ud800"')
        [message] = dispatch_sync([ToolCall(call_id, "get_weather", {"city": "x"})], TOOLS).messages
        assert message.tool_call_id == call_id
        assert not message.is_error
        assert json.loads(json.dumps(message.tool_call_id)) == call_id


class TestRefusedTextCrashes:
    """Found by a review of the merged engine: malformed or out-of-range raw text that
    reached a path the property tests did not draw crashed ``dispatch_sync``."""

    @pytest.mark.parametrize(
        "arguments", ["\ud800true", 'x\udc80{"user": 1', '{"password": "\ud800'], ids=repr
    )
    def test_malformed_text_with_a_lone_surrogate_to_a_redacting_tool(self, arguments: str) -> None:
        [message] = _answered([ToolCall("c", "login", arguments)]).messages
        assert message.is_error
        assert "not valid JSON" in message.content

    @pytest.mark.parametrize(
        "arguments",
        ['{"temp": 1e400, "city": "x"}', '{"city": "x", "temp": 1e999,}', "1e999 {"],
        ids=repr,
    )
    @pytest.mark.parametrize("name", ["get_weather", "login", "measure"])
    def test_a_number_beyond_float_range_under_normalize(self, name: str, arguments: str) -> None:
        policy = RunPolicy(invalid_args=tinytools.policies.NormalizeThenReturnToolError())
        [message] = _answered([ToolCall("c", name, arguments)], policy=policy).messages
        assert message.is_error

    @pytest.mark.parametrize(
        "arguments",
        [
            {"user": "u", "password": ["\udc80", 1]},
            {"user": "\ud800", "password": {"k": "\ud800"}},
            {"\ud800": 1, "password": "\ud800"},
        ],
        ids=repr,
    )
    @pytest.mark.parametrize("invalid_args", ["ReturnToolError", "NormalizeThenReturnToolError"])
    def test_refused_arguments_whose_secret_holds_a_lone_surrogate(
        self, arguments: dict[str, object], invalid_args: str
    ) -> None:
        policy = RunPolicy(invalid_args=getattr(tinytools.policies, invalid_args)())
        [message] = _answered([ToolCall("c", "login", arguments)], policy=policy).messages
        assert message.is_error


def test_an_enum_of_many_values_is_listed_in_part() -> None:
    """A schema (an MCP server's, say) with 100,000 enum values: each invalid call's
    message listed all of them before the schema echoed them again (1.3 MB per call)."""
    picker = Tool.from_schema(
        "pick",
        "Pick one.",
        {"type": "object", "properties": {"x": {"enum": list(range(100_000))}}},
        fn=lambda **_: "ok",
    )
    [message] = dispatch_sync([ToolCall("c", "pick", {"x": "no"})], [picker]).messages
    error, _schema = message.content.split(" Expected arguments (JSON schema): ")
    assert error.endswith('19, … and 99980 more], got "no".')
    assert len(error) < 200
