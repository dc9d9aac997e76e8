"""Attacker-style tests: a model tries every path to a tool it must not run.

The protected tools are instrumented: each records a run in ``ran``. Every
attack goes through ``dispatch_sync`` as a host would wire it (the names shown
to the model as ``advertised``, a sandbox rule, the run's policies) and must
leave ``ran`` empty and ``DispatchResult.executed`` empty.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import attrs
import pytest

from tinytools import (
    Allow,
    AnyTool,
    ApprovalOutcome,
    DeferredToolResults,
    Deny,
    HumanApprovalMiddleware,
    Registry,
    RunPolicy,
    ToolCall,
    ToolPolicy,
    ToolPolicyMiddleware,
    dispatch_sync,
    tool,
)
from tinytools.policies import Rewrite

ran: list[str] = []


@tool(exposure="hidden")
def admin_shell(command: str = "") -> str:
    """Host-only: never shown to the model."""
    ran.append("admin_shell")
    return "root"


@tool(approval_required=True, destructive=True)
def wire_money(amount: int = 1) -> str:
    """Shown, but every call needs a human's approval."""
    ran.append("wire_money")
    return "sent"


@tool(policy=ToolPolicy.read_only().with_runtime(sandbox="required"))
def run_code(source: str = "") -> str:
    """Shown, but runs only in a sandbox (this run has none)."""
    ran.append("run_code")
    return "ran"


@tool(read_only=True)
def secret() -> str:
    """Registered, but not offered to the model this turn."""
    ran.append("secret")
    return "secret"


@tool(read_only=True, exposure="deferred")
def lazy() -> str:
    """Found only through discovery; never advertised here."""
    ran.append("lazy")
    return "lazy"


@tool(approval_required=True)
def send_email(to: str = "") -> str:
    """Needs approval; a human allows it in the collision attack."""
    ran.append("send_email")
    return "sent"


@tool(read_only=True)
def search(query: str = "") -> str:
    """Harmless, and shown."""
    return "results"


TOOLS = Registry.of(admin_shell, wire_money, run_code, secret, lazy, send_email, search)
PROTECTED = ("admin_shell", "wire_money", "run_code", "secret", "lazy")
ADVERTISED = ("search", "wire_money", "run_code", "send_email")
GUARD = ToolPolicyMiddleware.require_sandbox()


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


@attrs.frozen
class Attack:
    """One attempt: the calls the model makes and how the host runs the batch."""

    calls: tuple[ToolCall, ...]
    policy: RunPolicy = attrs.field(factory=RunPolicy)
    advertised: tuple[str, ...] | None = ADVERTISED
    approvals: DeferredToolResults | None = None
    middleware: tuple[object, ...] = (GUARD,)


def call(name: str, call_id: str = "c1") -> ToolCall:
    """The model's call of ``name`` with no arguments."""
    return ToolCall(call_id, name, {})


#: Names a model might send for ``name``: case, spaces, invisible and look-alike characters.
VARIANTS: dict[str, Callable[[str], str]] = {
    "upper": str.upper,
    "title": str.title,
    "swapcase": str.swapcase,
    "leading space": lambda n: " " + n,
    "trailing space": lambda n: n + " ",
    "trailing newline": lambda n: n + "\n",
    "tab": lambda n: "\t" + n,
    "zero-width space": lambda n: n[:3] + "\u200b" + n[3:],
    "zero-width joiner": lambda n: n + "\u200d",
    "byte order mark": lambda n: "\ufeff" + n,
    "fullwidth": lambda n: "".join(chr(ord(c) + 0xFEE0) if c.isalpha() else c for c in n),
    "cyrillic a/e": lambda n: n.replace("a", "\u0430").replace("e", "\u0435"),
    "hyphen": lambda n: n.replace("_", "-"),
    "namespaced": lambda n: "functions." + n,
}


def attacks() -> Iterator[object]:
    """Every attack, as pytest params."""
    for name in PROTECTED:
        yield pytest.param(Attack((call(name),)), id=f"direct {name}")
        if name != "secret":  # only the advertised set protects it
            yield pytest.param(
                Attack((call(name),), advertised=None), id=f"direct {name}, nothing advertised"
            )
        for label, variant in VARIANTS.items():
            yield pytest.param(Attack((call(variant(name)),)), id=f"{label} {name}")
        rewrite = RunPolicy(unknown_tool=Rewrite(name))
        yield pytest.param(Attack((call("nope"),), rewrite), id=f"rewrite to {name}")
        yield pytest.param(
            Attack((call(name),), RunPolicy(unknown_tool=Rewrite(name.upper()))),
            id=f"rewrite to a variant of {name}",
        )
        allow = RunPolicy(allowlist=("search",))
        yield pytest.param(Attack((call(name),), allow, None), id=f"allow-list without {name}")
        yield pytest.param(
            Attack((call("nope"),), attrs.evolve(allow, unknown_tool=Rewrite(name)), None),
            id=f"rewrite past the allow-list to {name}",
        )
        yield pytest.param(
            Attack((call(name),), RunPolicy(allowlist=())), id=f"empty allow-list, {name}"
        )
        if name != "wire_money":  # approving is the human's right for an approval tool
            forged = DeferredToolResults().approve("c1")
            yield pytest.param(
                Attack((call(name),), approvals=forged), id=f"forged approval of {name}"
            )
    yield pytest.param(
        Attack((call("wire_money"),), approvals=DeferredToolResults().approve("c2")),
        id="approval of another call id",
    )
    yield pytest.param(
        Attack((call("wire_money"), call("wire_money", "c2"))), id="approval tool, twice"
    )


class TestAttacks:
    def test_control(self) -> None:
        """The same wiring runs what is allowed: a shown tool, an approval tool once approved."""
        calls = [call("search", "c0"), call("wire_money")]
        first = dispatch_sync(calls, TOOLS, middleware=[GUARD], advertised=ADVERTISED)
        assert (["c0"], []) == (list(first.executed), ran)
        assert first.deferred is not None
        resumed = dispatch_sync(
            first.deferred.all,
            TOOLS,
            middleware=[GUARD],
            advertised=ADVERTISED,
            approvals=first.deferred.approve_all(),
        )
        assert (["c1"], ["wire_money"]) == (list(resumed.executed), ran)

    @pytest.mark.parametrize("attack", list(attacks()))
    def test_nothing_protected_runs(self, attack: Attack) -> None:
        """The attack answers or defers every call, and no protected tool runs."""
        result = dispatch_sync(
            attack.calls,
            TOOLS,
            policy=attack.policy,
            middleware=attack.middleware,
            advertised=attack.advertised,
            approvals=attack.approvals,
        )
        assert ([], ()) == (ran, result.executed)

    def test_human_deny_on_rewrite(self) -> None:
        """A human is asked about the tool a Rewrite retargets to, and a denial holds."""
        asked: list[str | None] = []

        def deny(call: ToolCall, found: AnyTool | None) -> ApprovalOutcome:
            asked.append(None if found is None else found.name)
            return Allow() if found is None else Deny("no")

        dispatch_sync(
            [call("nope")],
            TOOLS,
            policy=RunPolicy(unknown_tool=Rewrite("wire_money")),
            middleware=[HumanApprovalMiddleware(deny)],
        )
        assert (["wire_money"], []) == (asked, ran)

    def test_repeated_call_id_inherits_no_approval(self) -> None:
        """A call reusing the id of a call the human allowed is not approved by it."""
        asked: list[str] = []

        def allow_email(call: ToolCall, found: AnyTool | None) -> ApprovalOutcome:
            asked.append(call.name)
            return Allow() if call.name == "send_email" else Deny("no")

        result = dispatch_sync(
            [call("send_email"), call("wire_money")],
            TOOLS,
            middleware=[HumanApprovalMiddleware(allow_email)],
        )
        assert (["send_email"], ["send_email"]) == (asked, ran)
        assert ["ok", "error"] == [message.status for message in result.messages]
