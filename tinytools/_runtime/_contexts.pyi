import contextvars
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

def in_context(
    context: contextvars.Context, coroutine: Coroutine[Any, Any, T], /
) -> Awaitable[T]: ...
