import contextvars
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

def in_context(
    context: contextvars.Context, fn: Callable[..., Coroutine[Any, Any, T]], /, *args: Any
) -> Awaitable[T]: ...
