"""Property tests: a secret a tool's policy redacts never leaves admission.

Each example hides one secret value under a key spelled as a redacted name (any
case and separators), at the top, inside a free-form object or an array, and sends
it as a dict, JSON text or broken JSON text — or sends arguments that are no object
and hold the secret with no key to tell it by (an array, a bare string, nested
arrays; as JSON text or as the value itself) — to the tool itself, to a misspelt or
unknown name, or through discovery's ``tool_call``. Whatever happens to the call
(runs, refused, unknown, unreadable), the secret appears in no event, no message
and no ledger row; the tool itself, when it runs, gets the real value.

The same holds for a secret inside typed parameters (a dataclass inside a msgspec
Struct's list, a NamedTuple inside a dict, an attrs class inside a tuple) that the
tool's error quotes by repr, and for a call the model wrote so that it cannot be
read, whose parser's or provider's reason quotes the secret.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import NamedTuple

import attrs
import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from tinytools import Exposure, Registry, ToolCall, ToolPolicy, dispatch_sync, tool
from tinytools.discovery import Discovery
from tinytools.formats import ptype, xml
from tinytools.policies import Rewrite, RunPolicy
from tinytools.testing import check_dispatch_invariants

seen: list[object] = []


@tool(policy=ToolPolicy(redact=("password",)))
def login(user: str, password: str, extra: dict[str, object] | None = None) -> str:
    """Log in."""
    seen.append(password)
    return "welcome"


DIRECT = Registry.of(login)
DISCOVERED = Discovery(Registry.of(attrs.evolve(login, exposure=Exposure.Deferred)))

#: The secret: distinctive, long enough to be scrubbed from any text it stands in.
secrets = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=6, max_size=16).map(
    lambda tail: f"S3CR3T{tail}"
)
#: The redacted name as a model may spell it.
spellings = st.sampled_from(["password", "Password", "PASSWORD", "pass-word", "Pass_Word"])
#: Where the secret stands.
places = st.sampled_from(["top", "free-form", "array"])
#: How the arguments are sent: an object (as a dict, JSON text or broken JSON text), or
#: no object, holding the secret as a value with no key (as JSON text or the value).
forms = st.sampled_from(["dict", "text", "broken text", "no object", "no object as text"])
#: Arguments that are no object, around the secret.
no_objects = st.sampled_from(
    [
        lambda secret: ["ann", secret],
        lambda secret: secret,
        lambda secret: [[secret]],
        lambda secret: [{"user": secret}],
    ]
)
#: Which name the call uses.
routes = st.sampled_from(["login", "loginn", "Login", "signin", "tool_call"])


def _arguments(secret: str, key: str, place: str) -> dict[str, object]:
    if place == "top":
        return {"user": "ann", key: secret}
    if place == "free-form":
        return {"user": "ann", "password": "p", "extra": {"nested": {key: secret}}}
    return {"user": "ann", "password": "p", "extra": {"list": [{key: secret}]}}


class TestSecretsNeverLeave:
    @settings(max_examples=150, deadline=None)
    @given(
        secret=secrets,
        key=spellings,
        place=places,
        form=forms,
        route=routes,
        no_object=no_objects,
    )
    def test_no_event_message_or_ledger_row_shows_the_secret(
        self,
        secret: str,
        key: str,
        place: str,
        form: str,
        route: str,
        no_object: Callable[[str], object],
    ) -> None:
        """The secret reaches the tool at most, never anything dispatch reports."""
        seen.clear()
        rows: list[object] = []

        class Ledger:
            def started(self, run_id: str, call_id: str, name: str, arguments: object) -> None:
                rows.append(arguments)

            def settled(self, run_id: str, call_id: str, status: str) -> None:
                pass

        arguments: object = _arguments(secret, key, place)
        if form.startswith("no object"):
            arguments = no_object(secret)
            if form.endswith("as text") or isinstance(arguments, str):
                arguments = msgspec.json.encode(arguments).decode()
        elif form != "dict":
            text = msgspec.json.encode(arguments).decode()
            arguments = text[:-1] if form == "broken text" else text
        if route == "tool_call":
            call = ToolCall("c", "tool_call", {"name": "login", "arguments": arguments})
            tools: object = DISCOVERED
        else:
            call = ToolCall("c", route, arguments)  # type: ignore[arg-type]
            tools = DIRECT
        result = dispatch_sync([call], tools, ledger=Ledger())  # type: ignore[arg-type]
        shown = (
            msgspec.json.encode(result.events).decode()
            + msgspec.json.encode(result.messages).decode()
            + msgspec.json.encode(rows).decode()
        )
        assert secret not in shown
        assert [] == [s for s in seen if s != "p" and s != secret]
        if route != "tool_call":
            check_dispatch_invariants([call], result, DIRECT)


@dataclasses.dataclass
class Account:
    user: str
    password: str


class Vault(msgspec.Struct, rename="camel"):
    vault_name: str
    accounts: list[Account]


class Pair(NamedTuple):
    user: str
    password: str


@attrs.frozen
class Key:
    label: str
    password: str


@tool(policy=ToolPolicy(redact=("password",)))
def store(
    vault: Vault,
    pairs: dict[str, Pair] | None = None,
    keys: tuple[Key, ...] = (),
    fail: bool = False,
) -> str:
    """Store credentials, or fail quoting every one of them."""
    if fail:
        raise ValueError(f"cannot store {vault!r}, {pairs}, {keys}")
    return "stored"


TYPED = Registry.of(store, login)

#: Where the secret stands in the typed arguments.
typed_places = st.sampled_from(["account", "pair", "key"])


def _typed_arguments(secret: str, place: str, fail: bool) -> dict[str, object]:
    arguments: dict[str, object] = {
        "vault": {"vaultName": "main", "accounts": [{"user": "ann", "password": "p"}]},
        "fail": fail,
    }
    if place == "account":
        arguments["vault"] = {
            "vaultName": "main",
            "accounts": [{"user": "ann", "password": secret}],
        }
    elif place == "pair":
        arguments["pairs"] = {"main": ["bob", secret]}
    else:
        arguments["keys"] = [{"label": "k", "password": secret}]
    return arguments


class TestTypedParameters:
    @settings(max_examples=60, deadline=None)
    @given(secret=secrets, place=typed_places, fail=st.booleans(), text=st.booleans())
    def test_a_secret_inside_typed_parameters(
        self, secret: str, place: str, fail: bool, text: bool
    ) -> None:
        """A secret inside a typed parameter appears in no event, message, traceback or
        ledger row, whether the tool runs or fails quoting every argument's repr."""
        rows: list[object] = []

        class Ledger:
            def started(self, run_id: str, call_id: str, name: str, arguments: object) -> None:
                rows.append(arguments)

            def settled(self, run_id: str, call_id: str, status: str) -> None:
                pass

        arguments: object = _typed_arguments(secret, place, fail)
        if text:
            arguments = msgspec.json.encode(arguments).decode()
        call = ToolCall("c", "store", arguments)  # type: ignore[arg-type]
        result = dispatch_sync([call], TYPED, ledger=Ledger())
        assert ["error" if fail else "ok"] == [m.status for m in result.messages]
        shown = (
            msgspec.json.encode(result.events).decode()
            + msgspec.json.encode(result.messages).decode()
            + msgspec.json.encode(rows).decode()
        )
        assert secret not in shown
        check_dispatch_invariants([call], result, TYPED)


#: Text a model may write that a parser cannot read, its reason quoting the secret; and
#: a provider's reason quoting it for a call named, unnamed, misspelt or rewritten.
unreadable = st.sampled_from(
    [
        lambda secret: ptype.parse(f'[login(user="ann", password={secret})]', TYPED).errors,
        lambda secret: (
            xml.parse(
                "<tool_call><login><user>ann</user><password>x</password></login>"
                f"<password>{secret}</password></tool_call>",
                TYPED,
            ).errors
        ),
        lambda secret: (
            xml.parse(
                "<tool_call><login><user>ann</user><password>x</password></login>"
                f"<password>pre {secret}</password></tool_call>",
                TYPED,
            ).errors
        ),
        lambda secret: [ToolCall("p", "login", f"{{'pw': {secret}", invalid=f"near {secret}")],
        lambda secret: [ToolCall("p", "", f"login({secret}", invalid=f"at '{secret}'")],
        lambda secret: [ToolCall("p", "loginn", f"{{{secret}", invalid=f"'{secret}' is bad")],
    ]
)


class TestUnreadableCalls:
    @settings(max_examples=60, deadline=None)
    @given(secret=secrets, make=unreadable, rewrite=st.booleans())
    def test_a_reason_quoting_the_secret(
        self, secret: str, make: Callable[[str], list[ToolCall]], rewrite: bool
    ) -> None:
        """A call that cannot be read, whose reason quotes the secret, shows the secret
        in no event or message, on every route (unknown names rewritten or not)."""
        calls = list(make(secret))
        assert [True] == [secret in str(call.invalid) for call in calls]
        policy = RunPolicy(unknown_tool=Rewrite("store") if rewrite else RunPolicy().unknown_tool)
        result = dispatch_sync(calls, TYPED, policy=policy)
        assert ["error"] == [m.status for m in result.messages]
        shown = (
            msgspec.json.encode(result.events).decode()
            + msgspec.json.encode(result.messages).decode()
        )
        assert secret not in shown
        check_dispatch_invariants(calls, result, TYPED, policy=policy)
