"""Folding: an exception's text, a fatal reason and a resumed denial never show a secret
argument's value."""

from __future__ import annotations

import msgspec
import pytest

from tests.engine.calls import call
from tinytools import (
    DispatchAborted,
    FatalToolError,
    ToolPolicy,
    ToolResult,
    dispatch_sync,
    tool,
)
from tinytools.events import (
    ToolFailed,
    ToolStarted,
)


@tool(policy=ToolPolicy(redact=("token",)))
def login(user: str, token: str) -> str:
    """Log in; fails loudly."""
    raise ValueError(f"token {token} rejected for {user}")


@tool(policy=ToolPolicy(redact=("token",)))
def doom(token: str) -> str:
    """Fail fatally, naming the token."""
    raise FatalToolError(f"cannot go on with {token}")


class TestSecretsInExceptions:
    def test_exception_text_is_scrubbed(self) -> None:
        """Defect: a redacting tool's exception text carried the secret into the message,
        the ToolFailed event and its traceback."""
        result = dispatch_sync(
            [call("l", "login", {"user": "ann", "token": "s3cr3t-XYZ"})], [login]
        )
        assert "s3cr3t-XYZ" not in result.messages[0].content
        assert "ann" in result.messages[0].content
        failed = [e for e in result.events if isinstance(e, ToolFailed)]
        assert failed
        assert all("s3cr3t-XYZ" not in (e.message + (e.traceback or "")) for e in failed)
        assert b"s3cr3t-XYZ" not in msgspec.json.encode(result)

    def test_fatal_reason_is_scrubbed(self) -> None:
        with pytest.raises(DispatchAborted) as info:
            dispatch_sync([call("d", "doom", {"token": "s3cr3t-XYZ"})], [doom])
        assert "s3cr3t-XYZ" not in info.value.reason
        assert b"s3cr3t-XYZ" not in msgspec.json.encode(info.value.result)

    def test_resumed_denial_does_not_show_secret_arguments(self) -> None:
        """Defect: on resume, a denied call's ToolStarted showed its raw arguments."""

        @tool(approval_required=True, policy=ToolPolicy(redact=("token",)))
        def guarded(token: str) -> str:
            """Needs approval."""
            return "ran"

        calls = [call("g", "guarded", {"token": "s3cr3t-XYZ"})]
        pending = dispatch_sync(calls, [guarded]).deferred
        assert pending is not None
        for decided in (pending.deny("g", "no"), pending.respond("g", ToolResult.success("done"))):
            result = dispatch_sync(calls, [guarded], approvals=decided)
            started = [e for e in result.events if isinstance(e, ToolStarted)]
            assert started
            assert b"s3cr3t-XYZ" not in msgspec.json.encode(started)
