"""An SDK's own scalar types (subclasses of ``str``, ``int`` and ``float``), as provider
SDKs hand calls over, and :func:`sdk_typed` to dress decoded JSON in them."""

from __future__ import annotations

__all__ = ["SdkFloat", "SdkInt", "SdkText", "sdk_typed"]


class SdkText(str):
    """An SDK's own string type."""


class SdkInt(int):
    """An SDK's own integer type, whose methods must not be trusted."""

    def __repr__(self) -> str:
        raise RuntimeError("repr raised")


class SdkFloat(float):
    """An SDK's own float type."""


def sdk_typed(value: object) -> object:
    """``value`` (decoded JSON) with every key and scalar of an SDK's own type."""
    if isinstance(value, dict):
        return {SdkText(k): sdk_typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [sdk_typed(v) for v in value]
    if type(value) is str:
        return SdkText(value)
    if type(value) is int:
        return SdkInt(value)
    if type(value) is float:
        return SdkFloat(value)
    return value
