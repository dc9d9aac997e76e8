"""The traceback a ``ToolFailed`` event carries: the tool's frames with their source lines,
the same for every failure at the same place (frames are formatted once, then remembered)."""

from __future__ import annotations

from tinytools import Registry, ToolCall, dispatch_sync, tool
from tinytools.events import ToolFailed


@tool
def explode(depth: int) -> int:
    """Fail after ``depth`` nested calls."""
    return _deeper(depth)


def _deeper(depth: int) -> int:
    if depth <= 0:
        raise KeyError("gone")  # the line the traceback shows
    return _deeper(depth - 1)


def _traceback(depth: int) -> str:
    result = dispatch_sync([ToolCall("c", "explode", {"depth": depth})], Registry([explode]))
    [failed] = [e for e in result.events if isinstance(e, ToolFailed)]
    assert failed.traceback is not None
    return failed.traceback


def test_frames_and_source_lines() -> None:
    text = _traceback(2)
    assert text.startswith("Traceback (most recent call last):\n")
    assert ", in explode\n    return _deeper(depth)\n" in text
    assert text.count(", in _deeper\n") == 3
    assert '    raise KeyError("gone")  # the line the traceback shows\n' in text
    assert text.endswith("KeyError: 'gone'\n")


def test_same_failure_same_traceback() -> None:
    assert _traceback(1) == _traceback(1)
    assert _traceback(3).count(", in _deeper\n") == 4
