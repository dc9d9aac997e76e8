"""Tests for `tinytools._redact.shown_reason`: a parser's or provider's reason for a call
it could not read quotes the model's text, so where that text may hold a secret the
reason is withheld on every route that repeats it."""

from __future__ import annotations

import attrs
import msgspec
import pytest

from tinytools import Exposure, Registry, ToolCall, ToolPolicy, dispatch_sync, tool
from tinytools._redact import WITHHELD
from tinytools.discovery import Discovery
from tinytools.formats import ptype, xml
from tinytools.testing import check_dispatch_invariants


@tool(policy=ToolPolicy(redact=("password",)))
def login(user: str, password: str) -> str:
    """Log in."""
    return "welcome"


@tool
def search(query: str) -> str:
    """Search."""
    return "found"


TOOLS = Registry.of(login, search)
PLAIN = Registry.of(search)


def everything(result: object) -> str:
    """Every event and message of a result, as JSON text."""
    return (
        msgspec.json.encode(result.events).decode()  # type: ignore[attr-defined]
        + msgspec.json.encode(result.messages).decode()  # type: ignore[attr-defined]
    )


#: Calls whose reason quotes the secret, by route: text parsers (a fragment naming the
#: tool; one naming none), a provider's reason for a named call and for an unnamed one.
ROUTES = {
    "ptype, named": lambda: ptype.parse('[login(user="ann", password=hunter22)]', TOOLS).errors,
    "xml, unnamed": lambda: (
        xml.parse(
            "<tool_call><login><user>ann</user><password>x</password></login>"
            "<password>hunter22</password></tool_call>",
            TOOLS,
        ).errors
    ),
    "provider, named": lambda: [
        ToolCall("p1", "login", '{"password": hunter22}', invalid="bad value: hunter22")
    ],
    "provider, unnamed": lambda: [
        ToolCall("p2", "", '{"password": hunter22}', invalid="no name near 'hunter22'")
    ],
}


class TestReasonWithheld:
    @pytest.mark.parametrize("route", sorted(ROUTES))
    def test_no_route_repeats_a_reason_that_quotes_the_secret(self, route: str) -> None:
        """The reason, which quotes ``hunter22``, reaches neither ``InvalidToolArgs`` nor
        the model: both say the text is malformed and that the details are withheld."""
        calls = list(ROUTES[route]())
        assert [True] == ["hunter22" in str(call.invalid) for call in calls]
        result = dispatch_sync(calls, TOOLS)
        assert ["error"] == [m.status for m in result.messages]
        assert "hunter22" not in everything(result)
        assert WITHHELD in result.messages[0].content
        check_dispatch_invariants(calls, result, TOOLS)

    def test_through_tool_call(self) -> None:
        """A provider's reason for a ``tool_call`` wrapper (whose arguments are another
        tool's) is withheld when any registered tool redacts."""
        tools = Discovery(Registry.of(attrs.evolve(login, exposure=Exposure.Deferred)))
        wrapper = {"name": "login", "arguments": {"user": "ann", "password": "x"}}
        call = ToolCall("c", "tool_call", wrapper, invalid="could not read 'hunter22'")
        result = dispatch_sync([call], tools)
        assert ["error"] == [m.status for m in result.messages]
        assert "hunter22" not in everything(result)
        assert WITHHELD in result.messages[0].content


class TestReasonKept:
    def test_no_tool_redacts(self) -> None:
        """With no redacting tool registered, an unnamed call's reason is the answer."""
        call = ToolCall("p", "", "search(", invalid="unclosed call near 'search('")
        result = dispatch_sync([call], PLAIN)
        assert "unclosed call near 'search('" in result.messages[0].content
        check_dispatch_invariants([call], result, PLAIN)

    def test_a_tool_that_redacts_nothing(self) -> None:
        """A call naming a tool that redacts nothing keeps its reason, though another
        registered tool redacts."""
        call = ToolCall("p", "search", '{"query": tea', invalid="bad value: tea")
        result = dispatch_sync([call], TOOLS)
        assert "bad value: tea" in result.messages[0].content
        assert WITHHELD not in result.messages[0].content
