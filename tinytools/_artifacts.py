"""Artifact stores: where a tool's host-side outputs are persisted.

A tool returns ``ToolResult(artifacts=...)``; dispatch hands each artifact to
the store given as ``dispatch(..., artifacts=store)`` and the message keeps
only an :class:`ArtifactRef`. Without a store the artifacts stay in memory on
the message. Two stores ship: :class:`MemoryArtifactStore` and
:class:`DirectoryArtifactStore`; any object with a synchronous ``put`` method
returning an :class:`ArtifactRef` works. A store without one is refused before any
tool runs (:func:`check_store`); a ``put`` that raises, or returns anything but an
``ArtifactRef`` a result can carry (:func:`stored`), aborts the batch with every call
answered — that call's result lost, as the abort says.
"""

# No `from __future__ import annotations` (msgspec decodes these Structs; see `_wire.py`).

import inspect
import re
from pathlib import Path
from typing import Protocol

import msgspec

from ._declare.spec import is_async_function
from ._wire import Artifact

__all__ = [
    "ArtifactRef",
    "ArtifactStore",
    "DirectoryArtifactStore",
    "MemoryArtifactStore",
    "ToolOutput",
    "check_store",
    "stored",
]


class ArtifactRef(msgspec.Struct, frozen=True, tag="artifact_ref"):
    """Where an artifact was put."""

    name: str
    media_type: str
    uri: str
    size: int


class ToolOutput(msgspec.Struct, frozen=True):
    """What ``ToolMessage.artifact`` holds: the host-side output of one call.

    Attributes:
        structured: The result's structured value (``None`` when it had none).
        artifacts: References to persisted artifacts, or the artifacts
            themselves when dispatch was given no store.
    """

    structured: object = None
    artifacts: tuple[ArtifactRef | Artifact, ...] = ()


class ArtifactStore(Protocol):
    """Persists artifacts; returns a reference the transcript keeps.

    One store given to dispatches that run at once is called from all their threads
    concurrently: both stores here may be shared so; a store of the host's own must be
    thread-safe itself.
    """

    def put(self, run_id: str, call_id: str, artifact: Artifact) -> "ArtifactRef":
        """Store ``artifact`` of call ``call_id`` in run ``run_id`` (synchronously: it is
        called while a result is folded, and never awaited)."""
        ...


_STORE_HINT = (
    "pass an object with a synchronous `put(run_id, call_id, artifact)` method returning "
    "an ArtifactRef, such as MemoryArtifactStore() or DirectoryArtifactStore(path)"
)


def check_store(store: object) -> None:
    """Refuse an ``artifacts`` store dispatch could not call, before any tool runs.

    A store is used only once a tool has returned artifacts: a store without a working
    ``put`` found then would lose that tool's result (the batch aborts with the tool's
    side effects done), so it is refused up front, as a non-callable ``on_event`` is.
    ``put`` is called while a result is folded, which awaits nothing: an ``async def``
    ``put`` is refused too (its coroutine would never run).

    Raises:
        TypeError: ``store`` has no ``put``, its ``put`` cannot be called, or is an
            ``async def`` function; saying what to pass.
    """
    put = getattr(store, "put", None)
    if put is None:
        problem = "it has no `put` method"
    elif not callable(put):
        problem = f"its `put` is {type(put).__name__}, which cannot be called"
    elif is_async_function(put):
        problem = "its `put` is async, which dispatch does not await (results fold synchronously)"
    else:
        return
    raise TypeError(
        f"artifacts must be an artifact store; got {type(store).__name__}, and {problem}: "
        f"{_STORE_HINT}"
    )


class PutReturned(TypeError):
    """A store's ``put`` returned something a result cannot carry (it raised nothing):
    dispatch says the store returned it, not that it raised."""


def stored(store: "ArtifactStore", run_id: str, call_id: str, artifact: Artifact) -> ArtifactRef:
    """What ``store.put`` returned for ``artifact``, once it is an ``ArtifactRef`` a result
    can carry (a result must encode, and decode back, whatever the store returned).

    Raises:
        PutReturned: ``put`` returned something else (an awaitable among them, closed: no
            one would run it), or a reference with fields of the wrong type; saying what
            to return. (What ``put`` raises propagates: dispatch aborts either way, the
            tool's result lost, as for any failing host callback.)
    """
    returned: object = store.put(run_id, call_id, artifact)
    if type(returned) is ArtifactRef:
        try:
            msgspec.json.decode(msgspec.json.encode(returned), type=ArtifactRef)
        except (TypeError, ValueError, OverflowError) as error:
            problem = f"an ArtifactRef a result cannot carry ({error})"
        else:
            return returned
    else:
        close = getattr(returned, "close", None)
        if inspect.iscoroutine(returned) and close is not None:
            close()  # (never awaited: without this, a RuntimeWarning later)
        problem = type(returned).__name__
    raise PutReturned(
        f"its put() returned {problem} for artifact {artifact.name!r:.80}; return "
        "ArtifactRef(name, media_type, uri, size) with str name, media_type and uri "
        "and an int size"
    )


class MemoryArtifactStore:
    """Keeps artifacts in a dict (for tests and short-lived processes).

    Safe to share between threads and batches: each ``put`` is one dict store, which is
    atomic, so no lock is held (a lock held by another thread as the process forks would
    hang the child's first ``put``).
    """

    def __init__(self) -> None:
        self._items: dict[str, Artifact] = {}

    def put(self, run_id: str, call_id: str, artifact: Artifact) -> "ArtifactRef":
        """Store ``artifact`` under ``memory://run/call/name``."""
        uri = f"memory://{run_id}/{call_id}/{artifact.name}"
        self._items[uri] = artifact
        return ArtifactRef(artifact.name, artifact.media_type, uri, len(artifact.data))

    def get(self, uri: str) -> Artifact:
        """The artifact stored under ``uri``."""
        return self._items[uri]


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _segment(text: str) -> str:
    cleaned = _UNSAFE.sub("_", text).lstrip(".")
    return cleaned or "_"


class DirectoryArtifactStore:
    """Writes each artifact to ``root/run/call/name`` (path parts sanitised)."""

    def __init__(self, root: "str | Path") -> None:
        self.root = Path(root)

    def put(self, run_id: str, call_id: str, artifact: Artifact) -> "ArtifactRef":
        """Write ``artifact`` and return a ``file://`` reference to it."""
        folder = self.root / _segment(run_id) / _segment(call_id)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / _segment(artifact.name)
        path.write_bytes(artifact.data)
        return ArtifactRef(
            artifact.name, artifact.media_type, path.resolve().as_uri(), len(artifact.data)
        )
