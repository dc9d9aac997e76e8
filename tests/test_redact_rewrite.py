"""Tests for `tinytools._redact.rewritten`: a call ``Rewrite`` sends to another tool keeps
every registered tool's secrets hidden, wherever dispatch repeats its arguments."""

from __future__ import annotations

import msgspec

from tinytools import Registry, ToolCall, ToolPolicy, dispatch_sync, tool
from tinytools._redact import MARKER
from tinytools.events import InvalidToolArgs, ToolStarted, UnknownToolCall
from tinytools.policies import Rewrite, RunPolicy
from tinytools.testing import check_dispatch_invariants


@tool(policy=ToolPolicy(redact=("password", "$.auth.token")))
def login(user: str, password: str) -> str:
    """Log in."""
    return "welcome"


@tool
def fallback(user: str = "", password: str = "", auth: dict[str, str] | None = None) -> str:
    """Answer a call of a name no tool has, failing when told to."""
    if user == "fail":
        raise ValueError(f"cannot serve {password} or {auth}")
    return "sorry"


TOOLS = Registry.of(login, fallback)
REWRITE = RunPolicy(unknown_tool=Rewrite("fallback"))


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


class TestRewrittenCall:
    def test_started_event_and_ledger_row(self) -> None:
        """A misspelt call of a redacting tool, rewritten to a tool that redacts nothing,
        shows the marker for the secret in ``ToolStarted`` and the ledger row."""
        ledger = _Recording()
        call = ToolCall("c", "loginn", {"user": "ann", "password": "hunter22"})
        result = dispatch_sync([call], TOOLS, policy=REWRITE, ledger=ledger)
        assert ["ok"] == [m.status for m in result.messages]
        assert "hunter22" not in shown(result, ledger)
        [started] = [e for e in result.events if isinstance(e, ToolStarted)]
        assert {"user": "ann", "password": MARKER, "auth": None} == started.arguments
        check_dispatch_invariants([call], result, TOOLS, policy=REWRITE)

    def test_the_target_tools_error(self) -> None:
        """The target's exception quoting the secrets is scrubbed (a path's too)."""
        arguments = {"user": "fail", "password": "hunter22", "auth": {"token": "tok-SECRET-9"}}
        call = ToolCall("c", "loginn", arguments)
        result = dispatch_sync([call], TOOLS, policy=REWRITE)
        assert ["error"] == [m.status for m in result.messages]
        text = shown(result, _Recording())
        assert "hunter22" not in text
        assert "tok-SECRET-9" not in text
        assert MARKER in result.messages[0].content

    def test_refused_by_the_target_misspelt_key_included(self) -> None:
        """Arguments the target refuses show no secret in ``InvalidToolArgs``, one under
        a misspelt key included (as for an unknown call's arguments)."""
        arguments = {"user": "ann", "pasword": "hunter22", "extra": 1}
        call = ToolCall("c", "loginn", arguments)
        result = dispatch_sync([call], TOOLS, policy=REWRITE)
        assert ["error"] == [m.status for m in result.messages]
        assert "hunter22" not in shown(result, _Recording())
        [unknown] = [e for e in result.events if isinstance(e, UnknownToolCall)]
        [invalid] = [e for e in result.events if isinstance(e, InvalidToolArgs)]
        assert unknown.arguments == invalid.arguments
        check_dispatch_invariants([call], result, TOOLS, policy=REWRITE)

    def test_a_direct_call_of_the_target(self) -> None:
        """A call naming the target itself shows its arguments as its own policy says."""
        call = ToolCall("c", "fallback", {"user": "ann", "password": "plain"})
        result = dispatch_sync([call], TOOLS, policy=REWRITE)
        [started] = [e for e in result.events if isinstance(e, ToolStarted)]
        assert {"user": "ann", "password": "plain", "auth": None} == started.arguments
