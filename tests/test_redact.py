"""Tests for `tinytools._redact`, through dispatch's events, ledger and messages."""

from __future__ import annotations

import json
from typing import Literal

import attrs
import msgspec
import pytest

from tinytools import (
    Defer,
    Emit,
    Exposure,
    Inject,
    Registry,
    RunPolicy,
    ToolCall,
    ToolPolicy,
    dispatch_sync,
    tool,
)
from tinytools._redact import MARKER, Redactor
from tinytools.discovery import Discovery
from tinytools.events import Custom, Event, InvalidToolArgs, ToolFailed, UnknownToolCall
from tinytools.formats import anthropic
from tinytools.testing import check_dispatch_invariants

seen: list[str] = []


@tool(policy=ToolPolicy(redact=("password", "$.auth.token")))
def login(user: str, password: str, auth: dict[str, str], mode: Literal["a", "b"] = "a") -> str:
    """Log in."""
    seen.append(password)
    return "welcome"


TOOLS = Registry.of(login)


@pytest.fixture(autouse=True)
def _reset() -> None:
    seen.clear()


def everything(result: object) -> str:
    """Every event and message of a result, as JSON text."""
    return (
        msgspec.json.encode(result.events).decode() + msgspec.json.encode(result.messages).decode()
    )  # type: ignore[attr-defined]


class TestRedactor:
    def test_names_any_depth_and_exact_paths(self) -> None:
        """Plain names match at any depth; `$` paths match exactly; the input is unchanged."""
        given = {"password": "p", "nested": [{"password": "q"}], "auth": {"token": "t", "x": 1}}
        redacted, secrets = Redactor(("password", "$.auth.token")).arguments(given)
        assert {
            "password": MARKER,
            "nested": [{"password": MARKER}],
            "auth": {"token": MARKER, "x": 1},
        } == redacted
        assert {"p", "q", "t"} == set(secrets)  # type: ignore[arg-type]
        assert "p" == given["password"]

    def test_names_and_paths_match_but_for_case_and_separators(self) -> None:
        """A key spelled as a secret's name or path segment but for case, ``-``, ``_``
        and spaces is that secret, even where the arguments were not refused; only a
        misspelling needs the loose form."""
        given = {"PassWord": "p", "x": {"pass-word": "q"}, "AUTH": {"Token ": "t"}, "pasword": "r"}
        redacted, secrets = Redactor(("password", "$.auth.token")).arguments(given)
        assert {
            "PassWord": MARKER,
            "x": {"pass-word": MARKER},
            "AUTH": {"Token ": MARKER},
            "pasword": "r",
        } == redacted
        assert {"p", "q", "t"} == set(secrets)  # type: ignore[arg-type]
        assert MARKER == Redactor(("password",), loose=True).arguments(given)[0]["pasword"]

    def test_unreadable_raw_text_replaced_whole(self) -> None:
        """Raw text that is not JSON is replaced entirely."""
        assert (MARKER, ['{"password": "hunt']) == Redactor(("password",)).raw('{"password": "hunt')


class _Recording:
    """An effect ledger that records the arguments it is given to keep."""

    def __init__(self) -> None:
        self.logged: list[object] = []

    def started(self, run_id: str, call_id: str, name: str, arguments: object) -> None:
        self.logged.append(arguments)

    def settled(self, run_id: str, call_id: str, status: str) -> None:
        pass


class TestDispatchRedaction:
    def test_started_event_and_ledger(self) -> None:
        """Secrets never reach events or the ledger, yet the tool gets the real value."""
        ledger = _Recording()
        raw = '{"user": "ann", "password": "hunter22", "auth": {"token": "tok-9"}}'
        result = dispatch_sync([ToolCall("c", "login", raw)], TOOLS, ledger=ledger)
        assert ["hunter22"] == seen
        text = everything(result) + msgspec.json.encode(ledger.logged).decode()
        assert "hunter22" not in text
        assert "tok-9" not in text
        assert MARKER in text

    def test_free_form_keys_the_model_typed(self) -> None:
        """Validated arguments may hold keys the model typed (a free-form object): a
        secret under ``Token`` or ``PASSWORD`` there never reaches events or the ledger."""
        ledger = _Recording()
        arguments = {
            "user": "ann",
            "password": "hunter22",
            "auth": {"Token": "tok-9", "scope": "read", "PASSWORD": "hunter23"},
        }
        result = dispatch_sync([ToolCall("c", "login", arguments)], TOOLS, ledger=ledger)
        assert ["ok"] == [m.status for m in result.messages]
        text = everything(result) + msgspec.json.encode(ledger.logged).decode()
        for secret in ("hunter22", "tok-9", "hunter23"):
            assert secret not in text
        assert "read" in text

    def test_error_messages_scrubbed(self) -> None:
        """An error that would echo a secret value shows the marker instead."""
        raw = '{"user": "ann", "password": "hunter22", "auth": {}, "mode": "hunter22"}'
        result = dispatch_sync([ToolCall("c", "login", raw)], TOOLS)
        text = everything(result)
        assert "hunter22" not in text
        assert "error" == result.messages[0].status

    @pytest.mark.parametrize(
        "spell",
        [
            lambda secret: json.dumps({"password": secret}),
            lambda secret: secret.encode(),
            lambda secret: ascii(secret),
        ],
        ids=["json.dumps", "bytes", "ascii"],
    )
    def test_a_tools_error_spelling_the_secret_its_own_way(self, spell: object) -> None:
        """A tool's exception that writes a secret escaped (``json.dumps``'s ``\\u00e4``,
        a bytes repr, ``ascii``) is scrubbed like the plain text, in the message and in
        the traceback of ``ToolFailed``."""
        secret = "p\u00e4ssw\u00f6rd\t42"

        @tool(policy=ToolPolicy(redact=("password",)))
        def unlock(password: str) -> str:
            """Unlock, or fail quoting what was sent."""
            raise ValueError(spell(password))  # type: ignore[operator]

        result = dispatch_sync([ToolCall("c", "unlock", {"password": secret})], Registry.of(unlock))
        assert ["error"] == [m.status for m in result.messages]
        shown = everything(result)
        for form in (json.dumps(secret)[1:-1], repr(secret.encode())[2:-1], ascii(secret)[1:-1]):
            assert form not in shown
        assert MARKER in result.messages[0].content

    def test_malformed_raw_redacted(self) -> None:
        """Malformed arguments of a redacting tool never appear in events."""
        result = dispatch_sync([ToolCall("c", "login", '{"password": "hunter22"')], TOOLS)
        assert "hunter22" not in everything(result)

    def test_a_secret_inside_arguments_that_are_no_object(self) -> None:
        """Arguments that are an array, not an object, are hidden whole, a secret's value
        under its name in an object inside included."""
        raw = '[{"password": "hunter22"}]'
        result = dispatch_sync([ToolCall("c", "login", raw)], TOOLS)
        assert ["error"] == [m.status for m in result.messages]
        assert "hunter22" not in everything(result)
        assert MARKER in everything(result)

    @pytest.mark.parametrize("name", ["loginn", "logni", "signin"])
    def test_an_unknown_name_hides_every_tools_secrets(self, name: str) -> None:
        """A call whose name is a misspelling of a redacting tool (or any other unknown
        name) shows no registered tool's secret in its event or in the model's answer."""
        arguments = {"user": "ann", "password": "hunter22", "auth": {"token": "tok-9"}}
        result = dispatch_sync([ToolCall("c", name, arguments)], TOOLS)
        assert ["error"] == [m.status for m in result.messages]
        [event] = [e for e in result.events if isinstance(e, UnknownToolCall)]
        assert {"user": "ann", "password": MARKER, "auth": {"token": MARKER}} == event.arguments
        assert "hunter22" not in everything(result)
        assert "tok-9" not in everything(result)
        check_dispatch_invariants([ToolCall("c", name, arguments)], result, TOOLS)


#: Arguments a model may send that are valid JSON but no object, each holding "hunter22".
NOT_OBJECTS = ['["ann", "hunter22"]', '"hunter22"', '[["hunter22"]]', '[{"user": "hunter22"}]']


@attrs.frozen
class _Login:
    user: str
    token: str


@tool(policy=ToolPolicy(redact=("token",)))
def signs_in(user: str, token: str, pin: int, emit: Inject[Emit]) -> str:
    """Sign in, reporting progress in every shape a tool might."""
    emit("progress", {"token": token, "user": user})  # under the secret's own key
    emit("progress", {"step": f"signing in with {token}", "pin": pin})  # in text, a number
    emit(f"as {token}", [[{"deep": token}]])  # in the name, nested
    emit("progress", _Login(user, token))  # a typed value
    emit("progress", {token: "as a key"})
    return "signed in"


@tool
def reports(token: str, emit: Inject[Emit]) -> str:
    """A tool that redacts nothing: its events keep what it emits."""
    emit("progress", {"token": token})
    return "ok"


class TestEmittedData:
    def test_a_secret_never_reaches_a_custom_event(self) -> None:
        """Defect: a tool's emit() repeated the call's redacted arguments in its Custom
        event (to on_event and DispatchResult.events) though its policy redacts them."""
        heard: list[Event] = []
        secret, pin = "sk-live-A1b2C3d4", 918273
        arguments = {"user": "ann", "token": secret, "pin": pin}
        result = dispatch_sync(
            [ToolCall("c", "signs_in", arguments)],
            [signs_in],
            on_event=heard.append,
            policy=RunPolicy(),
        )
        assert "signed in" == result.messages[0].content
        customs = [e for e in result.events if isinstance(e, Custom)]
        assert 5 == len(customs)
        text = msgspec.json.encode(heard).decode() + msgspec.json.encode(result.events).decode()
        assert secret not in text
        assert customs[0].data == {"token": MARKER, "user": "ann"}
        assert customs[1].data == {"step": f"signing in with {MARKER}", "pin": pin}
        assert customs[2].name == f"as {MARKER}"
        assert customs[2].data == [[{"deep": MARKER}]]
        assert customs[3].data == {"user": "ann", "token": MARKER}

    def test_a_secret_number_is_the_marker(self) -> None:
        @tool(policy=ToolPolicy(redact=("pin",)))
        def unlocks(pin: int, emit: Inject[Emit]) -> str:
            """Unlock, reporting the pin back."""
            emit("progress", {"tried": pin, "as text": f"pin {pin}"})
            return "open"

        result = dispatch_sync([ToolCall("c", "unlocks", {"pin": 4051992})], [unlocks])
        [custom] = [e for e in result.events if isinstance(e, Custom)]
        assert custom.data == {"tried": MARKER, "as text": f"pin {MARKER}"}

    def test_a_tool_that_redacts_nothing_keeps_its_data(self) -> None:
        result = dispatch_sync([ToolCall("c", "reports", {"token": "t-1"})], [reports])
        [custom] = [e for e in result.events if isinstance(e, Custom)]
        assert custom.data == {"token": "t-1"}


class TestArgumentsThatAreNoObject:
    """Arguments that are not an object have no key to tell a secret by: for a tool that
    redacts anything they are hidden whole on every route, as broken text is."""

    @pytest.mark.parametrize("raw", NOT_OBJECTS)
    def test_sent_to_the_tool(self, raw: str) -> None:
        """``InvalidToolArgs`` shows the marker, and no event, message or ledger row the
        value."""
        ledger = _Recording()
        result = dispatch_sync([ToolCall("c", "login", raw)], TOOLS, ledger=ledger)
        assert ["error"] == [m.status for m in result.messages]
        [event] = [e for e in result.events if isinstance(e, InvalidToolArgs)]
        assert MARKER == event.arguments
        assert "hunter22" not in everything(result) + msgspec.json.encode(ledger.logged).decode()
        assert [] == seen

    @pytest.mark.parametrize("raw", NOT_OBJECTS)
    def test_sent_to_an_unknown_name(self, raw: str) -> None:
        """An unknown name's event and answer (which quotes what was received) show the
        marker: every registered tool's redaction applies."""
        result = dispatch_sync([ToolCall("c", "loginn", raw)], TOOLS)
        [event] = [e for e in result.events if isinstance(e, UnknownToolCall)]
        assert MARKER == event.arguments
        assert f"Arguments received: {MARKER}." in result.messages[0].content
        assert "hunter22" not in everything(result)

    @pytest.mark.parametrize("raw", NOT_OBJECTS)
    @pytest.mark.parametrize("decoded", [False, True], ids=["as text", "as a value"])
    def test_sent_through_tool_call(self, raw: str, decoded: bool) -> None:
        """Unwrapped from discovery's ``tool_call`` (as text or as the decoded value inside
        the wrapper), the real tool's refusal hides them too."""
        tools = Discovery(Registry.of(attrs.evolve(login, exposure=Exposure.Deferred)))
        inner: object = msgspec.json.decode(raw) if decoded else raw
        call = ToolCall("c", "tool_call", {"name": "login", "arguments": inner})
        result = dispatch_sync([call], tools)
        [event] = [e for e in result.events if isinstance(e, InvalidToolArgs)]
        assert MARKER == event.arguments
        assert "hunter22" not in everything(result)

    @pytest.mark.parametrize(
        ("raw", "named"),
        [("null", "got `null`"), ('{"user": "ann", "auth": {}, "password": null}', "got `null`")],
    )
    def test_null_is_no_secret_text(self, raw: str, named: str) -> None:
        """JSON's ``null`` (and ``true``, ``false``) in place of the arguments or of a
        secret hides no text: the validation error still names the type it got (the word
        was scrubbed, so a model read "got `[redacted]`" and could not tell what to fix),
        while the event still shows the marker for the value."""
        result = dispatch_sync([ToolCall("c", "login", raw)], TOOLS)
        [event] = [e for e in result.events if isinstance(e, InvalidToolArgs)]
        assert MARKER in str(event.arguments)
        assert named in result.messages[0].content
        assert f"got `{MARKER}`" not in everything(result)

    @pytest.mark.parametrize("name", ["login", "loginn"])
    def test_a_host_call_holding_a_list(self, name: str) -> None:
        """A host's ``ToolCall`` whose arguments are a Python list (not a dict, not text)
        is answered, hidden whole (it raised ``TypeError`` out of dispatch)."""
        result = dispatch_sync([ToolCall("c", name, ["ann", "hunter22"])], TOOLS)  # type: ignore[arg-type]
        assert ["error"] == [m.status for m in result.messages]
        assert "hunter22" not in everything(result)
        assert MARKER in everything(result)

    def test_a_providers_response_holding_an_array(self) -> None:
        """A provider's tool call whose input is an array (parsed into its JSON text with
        a reason) is refused without showing it."""
        response = {
            "content": [
                {"type": "tool_use", "id": "t", "name": "login", "input": ["ann", "hunter22"]}
            ]
        }
        result = dispatch_sync(anthropic.parse_calls(response), TOOLS)
        assert ["error"] == [m.status for m in result.messages]
        assert "hunter22" not in everything(result)

    def test_deferred_by_a_hook_then_approved(self) -> None:
        """A hook defers the call before its arguments are checked: ``ToolDeferred``
        shows no arguments, the host gets the call as sent (to decide on it), and the
        approved call is refused on resume without showing them."""
        call = ToolCall("c", "login", '["ann", "hunter22"]')

        class Hold:
            def before_tool(self, call: ToolCall, env: object) -> object:
                return call if env.is_call_approved(call.id) else Defer()  # type: ignore[attr-defined]

        first = dispatch_sync([call], TOOLS, middleware=[Hold()])
        assert "hunter22" not in msgspec.json.encode(first.events).decode()
        assert first.deferred is not None
        assert (call,) == first.deferred.calls
        resumed = dispatch_sync(
            [call], TOOLS, middleware=[Hold()], approvals=first.deferred.approve("c")
        )
        assert ["error"] == [m.status for m in resumed.messages]
        assert "hunter22" not in everything(resumed)
        assert [] == seen


class TestSecretValuesThatAreNoScalar:
    """A secret's value may be an array or an object: a tool's error that quotes one item
    of it is scrubbed, in the message and in ``ToolFailed``'s traceback."""

    @pytest.mark.parametrize(
        "value", [["x", "hunter22"], {"first": "x", "second": "hunter22"}], ids=["array", "object"]
    )
    def test_a_tools_error_quoting_an_item(self, value: object) -> None:
        @tool(policy=ToolPolicy(redact=("password",)))
        def unlock(password: list[str] | dict[str, str]) -> str:
            """Unlock, or fail quoting one item of the password."""
            items = password if isinstance(password, list) else list(password.values())
            raise ValueError(f"no such key: {items[1]}")

        result = dispatch_sync([ToolCall("c", "unlock", {"password": value})], Registry.of(unlock))
        [message] = result.messages
        assert f"no such key: {MARKER}" in message.content
        [failed] = [e for e in result.events if isinstance(e, ToolFailed)]
        assert "hunter22" not in everything(result)
        assert "no such key" in failed.traceback


class TestDiscoveryWrapperRedaction:
    """A ``tool_call`` wrapper that cannot be read still holds another tool's arguments."""

    TOOLS = Discovery(Registry.of(attrs.evolve(login, exposure=Exposure.Deferred)))

    @pytest.mark.parametrize(
        ("arguments", "invalid"),
        [
            ('{"name": "login", "arguments": {"password": "hunter22"}} and more', None),
            ({"name": "login", "arguments": {"password": "hunter22"}}, "cut at hunter22"),
            ('[{"name": "login", "arguments": {"password": "hunter22"}}]', None),
            ('["login", ["ann", "hunter22"]]', None),
            (["login", ["ann", "hunter22"]], "cut at hunter22"),
        ],
        ids=[
            "unreadable text",
            "provider reason",
            "not an object",
            "an array holding an array",
            "provider reason over an array",
        ],
    )
    def test_the_answer_hides_the_secret(self, arguments: object, invalid: str | None) -> None:
        """The error answering an unreadable wrapper never quotes a secret of a registered
        tool (unreadable text is replaced whole)."""
        call = ToolCall("c", "tool_call", arguments, invalid)  # type: ignore[arg-type]
        result = dispatch_sync([call], self.TOOLS)
        [message] = result.messages
        assert message.content.startswith("Tool call not run: ")
        assert "hunter22" not in everything(result)
        assert [] == seen
