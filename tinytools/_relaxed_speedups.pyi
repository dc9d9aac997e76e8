from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

def rewrite(text: str, /) -> tuple[str, int] | None: ...
def keys_may_repeat(text: str | bytes, /) -> bool: ...
def unrepeated_decoder(
    decode: Callable[[str | bytes], T],
    refuse: Callable[[str | bytes], object],
    /,
) -> Callable[[str | bytes], T]: ...
