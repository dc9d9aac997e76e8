"""Discovery's intrinsic calls at admission: ``tool_call`` unwrapped, ``tool_search`` answered.

Admission calls :func:`opening` for every call of a batch whose registry holds
discovery's intrinsic tools (``tinytools.discovery``), before anything else
looks at the call:

* a ``tool_call(name, arguments)`` becomes the call of ``name`` with
  ``arguments``, under the same call id, so every gate that follows — the
  advertised set, the allow-list, ``before_tool`` middleware, approvals,
  schema validation and repair — and every event and ledger row sees the real
  tool. A ``Deferred`` tool reached this way counts as advertised for this one
  call (``DispatchEnv.reached``); nothing else is widened, so a ``Hidden``,
  unknown, disallowed or non-advertised name is answered exactly as if the
  model had called it directly. A wrapper that cannot be read is answered with
  a repairable error naming the shape to send.
* a ``tool_search(query, limit)`` is answered here with the best-matching
  ``Deferred`` tools the model may call, and emits ``ToolSearched``. It runs
  nothing of the host's, so no middleware sees it.

Either intrinsic tool that is not callable this turn (not advertised, not on
the allow-list) is left alone: admission answers it as an unknown tool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from tinytools import repair
from tinytools._declare.json_values import text_problem
from tinytools._declare.registry import UNSCANNED, AnyTool, Registry
from tinytools._declare.spec import Exposure
from tinytools._redact import MARKER, every_secret, shown_reason
from tinytools._text import json_type, preview, printable
from tinytools._wire import ToolCall, ToolMessage, plain_call
from tinytools.errors import ToolArgumentsError, ToolDefinitionError
from tinytools.events import Event, ToolSearched
from tinytools.toolsets._intrinsic import Intrinsic

if TYPE_CHECKING:
    from tinytools._engine.env import DispatchEnv
    from tinytools.discovery import Catalog

    from .admission import Admission

__all__ = ["Intrinsics", "intrinsics_of", "opening"]

_SHAPE = 'Send {"name": "<a tool\'s name>", "arguments": {<its arguments>}}.'
_EVENT_QUERY = 1000  # characters of the query the event keeps


class Intrinsics:
    """The intrinsic tools a registry holds (by the names the model sees) and the
    catalogue of its ``Deferred`` tools (built on the first search, then kept)."""

    __slots__ = ("_catalog", "_registry", "call", "limit", "search")

    def __init__(self, registry: Registry, search: str | None, call: str | None, limit: int):
        self._registry = registry
        self.search = search
        self.call = call
        self.limit = limit
        self._catalog: Catalog | None = None

    def catalog(self) -> Catalog:
        if self._catalog is None:
            from tinytools.discovery import Catalog

            deferred = [t for t in self._registry.values() if t.exposure is Exposure.Deferred]
            self._catalog = Catalog(deferred)
        return self._catalog


def intrinsics_of(registry: Registry) -> Intrinsics | None:
    """The registry's intrinsic tools, or None when it has none (found once, then kept)."""
    known = getattr(registry, "_discovery", UNSCANNED)
    if known is not UNSCANNED:
        return known  # type: ignore[return-value]
    search = call = None
    limit = 5
    for tool in registry.values():
        fn = tool.fn
        if type(fn) is Intrinsic:
            first: str | None = search if fn.kind == "search" else call
            if first is not None:
                # Two discoveries in one registry (Combined, or one nested in another under
                # Prefixed): dispatch answers one pair, the other would run as plain tools.
                raise ToolDefinitionError(
                    "Discovery",
                    [
                        f"{first!r} and {tool.name!r} are both discovery's tool_{fn.kind}: "
                        "combine the toolsets inside one Discovery instead of combining "
                        "two Discovery toolsets"
                    ],
                )
            if fn.kind == "search":
                search, limit = tool.name, fn.limit
            else:
                call = tool.name
    found = None if search is None and call is None else Intrinsics(registry, search, call, limit)
    object.__setattr__(registry, "_discovery", found)
    return found


def opening(call: ToolCall, batch: Admission) -> ToolCall | ToolMessage:
    """The call admission goes on with (a ``tool_call`` unwrapped), or the answer.

    On resume, a call of a ``Deferred`` tool is the unwrapped call the host was
    asked about (``DeferredToolRequests`` holds the real call): it counts as
    reached through ``tool_call`` while that is callable, and runs only if the
    host's decision binds it, as every resumed call does.
    """
    env = batch.env
    env._reached = None
    intrinsics = env._intrinsics
    assert intrinsics is not None
    name = call.name
    if name == intrinsics.call and env.lookup(name) is not None:
        return _unwrapped(plain_call(call), intrinsics, env)
    if name == intrinsics.search and env.lookup(name) is not None:
        return _searched(plain_call(call), intrinsics, env, batch.emit)
    if batch.resume is not None and intrinsics.call is not None:
        target = env.tools.get(name)
        deferred = target is not None and target.exposure is Exposure.Deferred
        if deferred and env.lookup(intrinsics.call) is not None:
            env._reached = name
    return call


def _error(call: ToolCall, text: str) -> ToolMessage:
    # (a provider's reason quoted in the text may hold a lone surrogate: escaped)
    return ToolMessage(
        tool_call_id=call.id, name=call.name, content=printable(text), is_error=True, status="error"
    )


def _wrapper(call: ToolCall, tools: Registry) -> dict[str, object] | str:
    """The wrapper's arguments as an object, or why they cannot be read (with every
    registered tool's secrets taken out: the wrapper holds another tool's arguments)."""
    raw = call.arguments
    if isinstance(raw, (str, bytes)):  # bytes are JSON text too, as for any tool
        try:
            value: object = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError, UnicodeError):
            text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
            value = repair.recover_relaxed_object(raw) if isinstance(raw, str) else None
            if value is None:  # (text that cannot be read cannot be redacted: replaced whole)
                shown = text if every_secret(tools) is None else MARKER
                return f"its arguments are not valid JSON: {preview(shown, 120, raw_text=True)}"
        else:
            problem = text_problem(raw)  # a repeated field is ambiguous: refused, as everywhere
            if problem is not None:
                return f"its arguments at `{problem[0]}`: {problem[1]}"
    else:
        value = raw
    if call.invalid is not None and not isinstance(raw, (str, bytes)):
        reason = shown_reason(call, None, tools)  # (it may quote what it could not read)
        return f"the provider could not read its arguments ({reason})"
    if not isinstance(value, dict):
        # (what is no object has no key to tell a secret by: its kind alone is named)
        found = preview(value, 60) if every_secret(tools) is None else f"a JSON {json_type(value)}"
        return f"its arguments must be a JSON object, not {found}"
    return value


def _unwrapped(call: ToolCall, intrinsics: Intrinsics, env: DispatchEnv) -> ToolCall | ToolMessage:
    wrapper = _wrapper(call, env.tools)
    if isinstance(wrapper, str):
        return _error(call, f"Tool call not run: {wrapper}. {_SHAPE}")
    extra = sorted(str(key) for key in wrapper if key not in ("name", "arguments"))
    if extra:
        listed = ", ".join(f"`{preview(k, 40, raw_text=True)}`" for k in extra[:5])
        text = (
            f"Tool call not run: unexpected field(s) {listed}; put the tool's arguments "
            f"inside `arguments`. {_SHAPE}"
        )
        return _error(call, text)
    name = wrapper.get("name")
    if not isinstance(name, str):
        return _error(call, f"Tool call not run: `name` must be a tool's name (a string). {_SHAPE}")
    if name in (intrinsics.call, intrinsics.search):
        text = (
            f"Tool call not run: `{call.name}` calls the tools `{intrinsics.search}` finds, "
            f"not `{name}`; put the found tool's name in `name`"
            + (f", or call `{name}` directly." if name != call.name else ".")
        )
        return _error(call, text)
    arguments = wrapper.get("arguments", {})
    if not isinstance(arguments, (dict, str)):
        # Checked by the real tool's validation, as the same value sent directly would be.
        try:
            arguments = msgspec.json.encode(arguments).decode()
        except (TypeError, ValueError, OverflowError, RecursionError, UnicodeError):
            text = f"Tool call not run: `arguments` is not a JSON value. {_SHAPE}"
            return _error(call, text)
    target = env.tools.get(name)
    if target is not None and target.exposure is Exposure.Deferred:
        env._reached = name
    return ToolCall(call.id, name, arguments)


def _searched(
    call: ToolCall, intrinsics: Intrinsics, env: DispatchEnv, emit: Callable[[Event], None]
) -> ToolMessage:
    tool: AnyTool = env.tools[call.name]
    try:
        if call.invalid is not None:
            raise ToolArgumentsError(call.name, call.invalid, malformed=True)
        arguments = tool.validate(call.arguments)
    except ToolArgumentsError as error:
        schema = tool._plan.schema_text(tool.parameters)
        return _error(call, f"{error} Expected arguments (JSON schema): {schema}")
    query = arguments["query"]
    limit = arguments.get("limit", intrinsics.limit)
    if isinstance(limit, float):  # JSON Schema's integer admits 2.0: the schema checked it is whole
        limit = int(limit)
    assert isinstance(query, str)
    assert isinstance(limit, int)
    policy = env.policy
    keep = None if policy.allowlist is None else policy.allows
    matches = intrinsics.catalog().top(query, limit, keep)
    found = [env.tools[match.name] for match in matches]
    names = tuple(t.name for t in found)
    emit(ToolSearched(call_id=call.id, query=query[:_EVENT_QUERY], names=names))
    payload: dict[str, object] = {
        "tools": [
            # A description may hold a lone surrogate (an MCP server's JSON can): escaped.
            {"name": t.name, "description": printable(t.description), "parameters": t.parameters}
            for t in found
        ]
    }
    if found and intrinsics.call is not None:
        payload["call_with"] = f'{intrinsics.call} {{"name": ..., "arguments": {{...}}}}'
    elif not found:
        payload["hint"] = "No tool matched; search again with other words."
    content = msgspec.json.encode(payload).decode()
    return ToolMessage(tool_call_id=call.id, name=call.name, content=content)
