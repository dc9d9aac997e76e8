"""tinytools tools served by `tinytools.formats.mcp.server`, for tests/test_mcp_server.py.

Imported by the tests (in-process, through the SDK's own client) and run as a stdio
subprocess: ``python tests/mcp_served.py [trio|asyncio]`` (the backend the server runs
on; asyncio when not given).

The waiting tools wait on a gate that ``release`` opens: a test holds a call open until
its client has seen the call's first progress notification, then releases it with a
second, concurrent call (over stdio the test cannot reach the server's memory).
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from typing import Annotated

import anyio
import msgspec

from tinytools import Emit, Inject, Registry, ToolPolicy, tool
from tinytools.formats import mcp

#: How long a waiting tool waits for its gate before giving up: a bound that keeps a
#: broken test from hanging the suite, never the synchronisation itself.
PATIENCE = 60.0
SECRET = "hunter2-correct-horse"

_thread_gates: dict[str, threading.Event] = {}
_async_gates: dict[str, anyio.Event] = {}  # (each made, set and awaited on the event loop)
_lock = threading.Lock()


def _thread_gate(name: str) -> threading.Event:
    with _lock:
        return _thread_gates.setdefault(name, threading.Event())


def _async_gate(name: str) -> anyio.Event:
    if name not in _async_gates:
        _async_gates[name] = anyio.Event()
    return _async_gates[name]


@dataclasses.dataclass
class Forecast:
    """The weather forecast for a city."""

    city: str
    high_c: float


@tool(policy=ToolPolicy.read_only().with_side_effects(network=True))
def forecast(city: str) -> Forecast:
    """The weather forecast for a city.

    Args:
        city: The city, such as "Oslo".
    """
    return Forecast(city, 21.5)


@tool
def squares(n: Annotated[int, msgspec.Meta(ge=0, le=50)]) -> list[int]:
    """The first n square numbers."""
    return [i * i for i in range(n)]


@tool(
    policy=ToolPolicy.classified()
    .with_side_effects(writes_files=True, destructive=True)
    .with_runtime(idempotent=True)
)
def delete_note(title: str) -> str:
    """Delete a note."""
    return f"deleted {title}"


@tool(approval_required=True)
def wipe_disk(disk: str) -> str:
    """Wipe a disk (needs approval)."""
    return f"wiped {disk}"


@tool
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(reason)


@tool(policy=ToolPolicy(redact=("password",)))
def login(user: str, password: str, emit: Inject[Emit]) -> str:
    """Log a user in."""
    emit("checking", {"message": f"checking {user}"})
    raise PermissionError(f"wrong password {password!r} for {user}")


@tool
def report(name: str, data: object, emit: Inject[Emit]) -> str:
    """Emit one custom event (``data`` as given), then answer."""
    emit(name, data)
    return "reported"


@tool
def report_many(values: list[object], emit: Inject[Emit]) -> str:
    """Emit one event per value, as ``{"progress": value}``."""
    for value in values:
        emit("step", {"progress": value})
    return "reported"


@tool(blocking=True)
def wait_in_thread(gate: str, emit: Inject[Emit]) -> str:
    """Emit, wait for the gate on a worker thread, emit again."""
    emit("waiting", {"progress": 1, "total": 2, "message": f"waiting for {gate}"})
    if not _thread_gate(gate).wait(PATIENCE):
        return "never released"
    emit("released", {"progress": 2, "total": 2, "message": "released"})
    return "released"


@tool
async def wait_async(gate: str, emit: Inject[Emit]) -> str:
    """Emit, wait for the gate on the event loop, emit again."""
    emit("waiting", {"progress": 1, "total": 2, "message": f"waiting for {gate}"})
    with anyio.move_on_after(PATIENCE) as waited:
        await _async_gate(gate).wait()
    if waited.cancelled_caught:
        return "never released"
    emit("released", {"progress": 2, "total": 2, "message": "released"})
    return "released"


@tool
async def release(gate: str) -> str:
    """Open a gate."""
    _thread_gate(gate).set()
    _async_gate(gate).set()
    return f"released {gate}"


@tool(exposure="hidden")
def host_only() -> str:
    """Never listed, never callable."""
    return "host"


@tool(exposure="deferred")
def rarely_used() -> str:
    """Found through discovery only."""
    return "rare"


TOOLS = Registry.of(
    forecast,
    squares,
    delete_note,
    wipe_disk,
    fail,
    login,
    report,
    report_many,
    wait_in_thread,
    wait_async,
    release,
    host_only,
    rarely_used,
)

server = mcp.server(TOOLS, name="tinytools-served", version="1.0")


async def main() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
