"""Tools shared by the engine's dispatch-level tests (tests/engine): each records its runs
in ``ran``, which the autouse ``_reset`` fixture (import it into a test module) clears."""

from __future__ import annotations

import pytest

from tinytools import (
    ApprovalRequired,
    Artifact,
    CallDeferred,
    Inject,
    Registry,
    Store,
    Tool,
    ToolCall,
    ToolPolicy,
    ToolResult,
    tool,
)

ran: list[tuple[str, object]] = []


@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    ran.append(("add", (a, b)))
    return a + b


@tool(exposure="hidden")
def admin() -> str:
    """Hidden from the model."""
    ran.append(("admin", None))
    return "root"


@tool
def fallback(name: str = "") -> str:
    """A compatibility tool for unknown calls."""
    ran.append(("fallback", name))
    return "fallback"


@tool
def report() -> ToolResult:
    """Return everything a result can carry."""
    return ToolResult.success(
        "done",
        structured={"rows": 2},
        artifacts=[Artifact("r.csv", b"a,b\n1,2\n", "text/csv")],
        follow_up="Now summarise the report.",
        metadata={"ms": 5},
    )


@tool
def big() -> str:
    """Return a long text."""
    return "é" * 500


@tool(policy=ToolPolicy.classified().with_access(approval_required=True))
def pay(amount: int) -> str:
    """Pay money (needs approval)."""
    ran.append(("pay", amount))
    return "paid"


@tool
def needs_ok() -> str:
    """Raise ApprovalRequired from inside."""
    raise ApprovalRequired({"why": "large"})


@tool
def later() -> str:
    """Raise CallDeferred from inside."""
    raise CallDeferred({"ticket": 7})


@tool
def stored(key: str, db: Inject[Store[dict[str, str]]]) -> str:
    """Read from the injected store."""
    return db[key]


external = Tool.from_schema("lookup", "Host-executed.", {"type": "object", "properties": {}})


TOOLS = Registry.of(add, admin, fallback, report, big, pay, needs_ok, later, stored, external)


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def call(call_id: str, name: str, arguments: object = "{}") -> ToolCall:
    """A call as a provider sends it."""
    return ToolCall(call_id, name, arguments)  # type: ignore[arg-type]
