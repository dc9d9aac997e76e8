"""Artifact stores: where a tool's host-side outputs are persisted.

A tool returns ``ToolResult(artifacts=...)``; dispatch hands each artifact to
the store given as ``dispatch(..., artifacts=store)`` and the message keeps
only an :class:`ArtifactRef`. Without a store the artifacts stay in memory on
the message. Two stores ship: :class:`MemoryArtifactStore` and
:class:`DirectoryArtifactStore`; any object with a ``put`` method works.
"""

# No `from __future__ import annotations` (msgspec decodes these Structs; see `_wire.py`).

import re
import threading
from pathlib import Path
from typing import Protocol

import msgspec

from ._wire import Artifact

__all__ = [
    "ArtifactRef",
    "ArtifactStore",
    "DirectoryArtifactStore",
    "MemoryArtifactStore",
    "ToolOutput",
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
    """Persists artifacts; returns a reference the transcript keeps."""

    def put(self, run_id: str, call_id: str, artifact: Artifact) -> "ArtifactRef":
        """Store ``artifact`` of call ``call_id`` in run ``run_id``."""
        ...


class MemoryArtifactStore:
    """Keeps artifacts in a dict (for tests and short-lived processes)."""

    def __init__(self) -> None:
        self._items: dict[str, Artifact] = {}
        self._lock = threading.Lock()

    def put(self, run_id: str, call_id: str, artifact: Artifact) -> "ArtifactRef":
        """Store ``artifact`` under ``memory://run/call/name``."""
        uri = f"memory://{run_id}/{call_id}/{artifact.name}"
        with self._lock:
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
