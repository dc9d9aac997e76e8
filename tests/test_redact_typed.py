"""Tests for `tinytools._redact` on typed values: a secret inside a parameter validation
converts (a dataclass, a msgspec Struct, an attrs class, a NamedTuple, a TypedDict, bytes,
a UUID…) or inside a host's own Python values (tuples, sets, bytes keys)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import NamedTuple, TypedDict

import attrs
import msgspec
import pytest

from tinytools import Registry, ToolCall, ToolPolicy, dispatch_sync, tool
from tinytools._redact import MARKER, Redactor
from tinytools.events import InvalidToolArgs, ToolFailed, ToolStarted
from tinytools.testing import check_dispatch_invariants


@dataclasses.dataclass
class Auth:
    user: str
    token: str


class Creds(msgspec.Struct, rename="camel"):
    user_name: str
    password: str


@attrs.define
class Key:
    label: str
    token: str


class Pair(NamedTuple):
    user: str
    token: str


class Login(TypedDict):
    user: str
    password: str


class Wallet(msgspec.Struct, array_like=True):
    owner: str
    password: str


SECRETS = ("tok-SECRET-1", "hunter22", "tok-SECRET-3", "tok-SECRET-4", "hunter25", "hunter26")


@tool(policy=ToolPolicy(redact=("token", "$.auth.token", "password")))
def connect(
    auth: Auth,
    creds: Creds,
    keys: list[Key],
    pairs: dict[str, tuple[Pair, int]],
    login: Login | None = None,
    wallet: Wallet | None = None,
) -> str:
    """Connect, or fail quoting every argument."""
    raise ValueError(f"refused {auth} {creds!r} {keys} {pairs} {login} {wallet}")


ARGUMENTS: dict[str, object] = {
    "auth": {"user": "ann", "token": "tok-SECRET-1"},
    "creds": {"userName": "bob", "password": "hunter22"},
    "keys": [{"label": "k1", "token": "tok-SECRET-3"}],
    "pairs": {"main": [["cid", "tok-SECRET-4"], 1]},
    "login": {"user": "dan", "password": "hunter25"},
    "wallet": ["eve", "hunter26"],
}


class _Recording:
    """An effect ledger that records the arguments it is given to keep."""

    def __init__(self) -> None:
        self.logged: list[object] = []

    def started(self, run_id: str, call_id: str, name: str, arguments: object) -> None:
        self.logged.append(arguments)

    def settled(self, run_id: str, call_id: str, status: str) -> None:
        pass


def shown(result: object, ledger: _Recording) -> str:
    """Every event, message and ledger row, as JSON text."""
    return (
        msgspec.json.encode(result.events).decode()  # type: ignore[attr-defined]
        + msgspec.json.encode(result.messages).decode()  # type: ignore[attr-defined]
        + msgspec.json.encode(ledger.logged).decode()
    )


class TestTypedParameters:
    def test_no_secret_inside_a_typed_value_is_shown(self) -> None:
        """A secret inside a dataclass, a Struct (renamed fields), an attrs class, a
        NamedTuple, a TypedDict or an array-like Struct, nested in lists, dicts, tuples
        and Optionals, reaches no event, message, traceback or ledger row, though the
        tool's error quotes every value's repr."""
        ledger = _Recording()
        call = ToolCall("c", "connect", ARGUMENTS)
        result = dispatch_sync([call], Registry.of(connect), ledger=ledger)
        assert ["error"] == [m.status for m in result.messages]
        text = shown(result, ledger)
        assert [] == [secret for secret in SECRETS if secret in text]
        assert "refused Auth(user='ann', token='[redacted]')" in result.messages[0].content
        [failed] = [e for e in result.events if isinstance(e, ToolFailed)]
        assert failed.traceback is not None
        assert "ValueError" in failed.traceback
        check_dispatch_invariants([call], result, Registry.of(connect))

    def test_shown_by_field_names_as_json_names_them(self) -> None:
        """``ToolStarted`` shows each typed value as an object of its fields (a Struct's
        by their JSON names; a NamedTuple's and an array-like Struct's by theirs), each
        secret field the marker, every other value as it is."""
        result = dispatch_sync([ToolCall("c", "connect", ARGUMENTS)], Registry.of(connect))
        [started] = [e for e in result.events if isinstance(e, ToolStarted)]
        assert {
            "auth": {"user": "ann", "token": MARKER},
            "creds": {"userName": "bob", "password": MARKER},
            "keys": [{"label": "k1", "token": MARKER}],
            "pairs": {"main": [{"user": "cid", "token": MARKER}, 1]},
            "login": {"user": "dan", "password": MARKER},
            "wallet": {"owner": "eve", "password": MARKER},
        } == msgspec.json.decode(msgspec.json.encode(started.arguments))

    def test_a_whole_typed_value_that_is_secret(self) -> None:
        """A secret that is a typed value is scrubbed from a tool's error as its repr
        writes it, and each of its fields' values alone."""

        @tool(policy=ToolPolicy(redact=("auth",)))
        def sign(auth: Auth) -> str:
            """Sign, or fail quoting the credentials."""
            raise ValueError(f"bad {auth!r}; token {auth.token}; user {auth.user}")

        call = ToolCall("c", "sign", {"auth": {"user": "annabel", "token": "tok-SECRET-1"}})
        result = dispatch_sync([call], Registry.of(sign))
        text = shown(result, _Recording())
        assert "tok-SECRET-1" not in text
        assert "annabel" not in text
        assert "Auth(" not in result.messages[0].content

    @pytest.mark.parametrize(
        ("annotation", "sent", "spell"),
        [
            (bytes, "aHVudGVyMjIh", lambda v: f"{v} {v.decode()}"),
            (uuid.UUID, "2b1e8e38-5b0c-4b8e-9b8a-6a3f2c1d0e9f", lambda v: f"{v!r} {v}"),
        ],
        ids=["bytes", "uuid"],
    )
    def test_a_secret_of_a_typed_scalar(self, annotation: type, sent: str, spell: object) -> None:
        """A secret converted to bytes or a UUID is scrubbed as ``str``/``repr`` write it
        and as JSON sent it (base64, text), its UTF-8 text too."""

        def fn(password: object) -> str:
            raise ValueError(f"{spell(password)} {sent}")  # type: ignore[operator]

        fn.__annotations__ = {"password": annotation, "return": str}
        unlock = tool(name="unlock", policy=ToolPolicy(redact=("password",)))(fn)
        result = dispatch_sync([ToolCall("c", "unlock", {"password": sent})], Registry.of(unlock))
        content = result.messages[0].content
        for form in (sent, "hunter22!"):
            assert form not in content
        assert MARKER in content

    def test_a_tool_that_redacts_nothing_shows_typed_values(self) -> None:
        """A tool with no secret shows its validated typed values as they are (no walk)."""

        @tool
        def open_(auth: Auth) -> str:
            """Open."""
            return "ok"

        call = ToolCall("c", "open_", {"auth": {"user": "ann", "token": "t"}})
        result = dispatch_sync([call], Registry.of(open_))
        [started] = [e for e in result.events if isinstance(e, ToolStarted)]
        assert {"auth": Auth("ann", "t")} == started.arguments


class TestHostValues:
    @pytest.mark.parametrize(
        "holder",
        [list, tuple, lambda items: frozenset(map(Pair.__call__, *zip(*items, strict=True)))],
        ids=["list", "tuple", "frozenset of NamedTuple"],
    )
    def test_a_secret_inside_a_tuple_or_set(self, holder: object) -> None:
        """A host's arguments holding a secret inside a tuple or a set (as Python code
        builds them) are redacted in ``InvalidToolArgs`` as inside a list."""

        @tool(policy=ToolPolicy(redact=("password", "token")))
        def login(user: str, password: str) -> str:
            """Log in."""
            return "welcome"

        if holder in (list, tuple):
            extra = holder([{"password": "hunter22"}])  # type: ignore[operator]
        else:
            extra = holder([("ann", "hunter22")])  # type: ignore[operator]
        arguments = {"user": "ann", "password": "x", "accounts": extra}
        result = dispatch_sync([ToolCall("c", "login", arguments)], Registry.of(login))
        [event] = [e for e in result.events if isinstance(e, InvalidToolArgs)]
        text = msgspec.json.encode(result.events).decode() + result.messages[0].content
        assert "hunter22" not in text
        assert MARKER in msgspec.json.encode(event.arguments).decode()

    def test_a_bytes_key(self) -> None:
        """A key of bytes names what its text does: ``b"password"``'s value is redacted."""
        redacted, secrets = Redactor(("password",)).arguments({b"password": "hunter22", "a": 1})
        assert {b"password": MARKER, "a": 1} == redacted
        assert ["hunter22"] == secrets
