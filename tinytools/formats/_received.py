"""What the provider parsers accept, and what they say when they cannot read it.

``parse_calls`` never answers "no calls" for a response it did not understand:

* :func:`received` turns the argument into plain data, or raises ``TypeError``
  naming what to pass instead — text (use a text dialect's ``parse``), a
  stream or its iterator (feed each event to the module's accumulator), or any
  other object that is neither an SDK model nor JSON-shaped data;
* :func:`refuse_stream_event` raises ``TypeError`` for one streamed event
  passed where the finished response is expected;
* :class:`ToolCallsFailed` is raised when the response itself reports that the
  model's call failed and holds no call to answer (Gemini's
  ``MALFORMED_FUNCTION_CALL``, for instance).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from ._providers import as_data

__all__ = ["ToolCallsFailed", "received", "refuse_stream_event"]


class ToolCallsFailed(ValueError):
    """The response reports a failed tool call and holds none that can be answered.

    Nothing can be sent back as a tool result (there is no call id to answer);
    retry the request, or add a user turn telling the model what went wrong.

    Attributes:
        provider: The provider module that read the response (``"gemini"``, …).
        reason: The provider's code for the failure (``"MALFORMED_FUNCTION_CALL"``).
        detail: The provider's own message about it, when it sent one.
    """

    def __init__(self, provider: str, reason: str, detail: str | None, advice: str) -> None:
        self.provider = provider
        self.reason = reason
        self.detail = detail
        said = f" ({provider} said: {detail})" if detail else ""
        super().__init__(f"the response holds no tool calls: {reason}{said}. {advice}")


def received(value: object, *, module: str, expects: str, accumulator: str | None) -> object:
    """``value`` as plain data (an SDK model's ``model_dump()``), or a ``TypeError``.

    Args:
        value: What the caller passed to ``parse_calls``.
        module: The provider module, for the message (``"openai_chat"``).
        expects: What ``parse_calls`` takes, in words.
        accumulator: The module's streaming accumulator, named when ``value``
            looks like a stream.

    Raises:
        TypeError: ``value`` is text, bytes, a stream, or another object that
            is neither JSON-shaped data nor an SDK model.
    """
    data = as_data(value)
    if isinstance(data, (Mapping, list, tuple)):
        return list(data) if isinstance(data, tuple) else data
    where = f"tinytools.formats.{module}.parse_calls takes {expects}"
    if isinstance(data, (str, bytes, bytearray)):
        hint = (
            "for a model's text (a prompt-guided model) use a text dialect's parse(text, tools), "
            "such as tinytools.formats.json_in_tag.parse"
        )
    elif accumulator and (_is_stream(data)):
        hint = (
            f"this looks like a stream: feed each event to "
            f"tinytools.formats.{module}.{accumulator}().add(event) and read its calls()"
        )
    else:
        hint = "pass the SDK's response object or its JSON as a dict"
    raise TypeError(f"{where}, not {type(value).__name__}; {hint}")


def _is_stream(data: object) -> bool:
    name = type(data).__name__.lower()
    return isinstance(data, (Iterator, Iterable)) or "stream" in name or hasattr(data, "__aiter__")


def refuse_stream_event(data: object, *, module: str, kinds: tuple[str, ...], what: str) -> None:
    """Raise ``TypeError`` when ``data`` is one streamed event, not a finished response.

    Args:
        data: The plain data ``parse_calls`` received.
        module: The provider module, for the message.
        kinds: Prefixes (or whole values) of the ``type`` field that mark a stream event.
        what: How to get the finished response instead.
    """
    if not isinstance(data, Mapping):
        return
    kind = data.get("type")
    if isinstance(kind, str) and any(kind == k or kind.startswith(k) for k in kinds):
        raise TypeError(
            f"tinytools.formats.{module}.parse_calls got a stream event ({kind!r}), not a "
            f"finished response; {what}"
        )
