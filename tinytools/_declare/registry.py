"""``Registry``: an immutable name → :class:`Tool` mapping with the name rules.

Building one is a single pass over the tools (no compiling, no copying of
schemas), so a registry of thousands of tools is cheap. A registry is also the
simplest toolset (``tinytools.toolsets``): its tools are the same for every
context, and it explains its host-only (``Exposure.Hidden``) tools.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from tinytools._suggest import NameIndex
from tinytools.errors import ToolDefinitionError

from .exposure import ExposureExplanation
from .spec import Exposure, Tool
from .tool_policy import ToolPolicy

if TYPE_CHECKING:
    from tinytools._inject import Context
    from tinytools._wire import ToolCall

__all__ = ["UNSCANNED", "AnyTool", "Registry", "not_tools", "tool_items"]

#: A registry's ``_discovery`` before anything looked for discovery's intrinsic tools.
UNSCANNED = object()

#: A tool of any signature (what a registry holds).
AnyTool = Tool[..., object]


def not_tools(tools: object) -> TypeError:
    """The error for a ``tools`` argument that is not a collection of tools at all."""
    if isinstance(tools, Tool):
        hint = "wrap the one tool in a list ([tool]) or use Registry.of(tool)"
    elif isinstance(tools, (str, bytes)):
        hint = "a name is not a tool: pass the @tool functions themselves, in a list"
    elif isinstance(tools, Mapping):
        hint = "pass its tools, such as list(mapping.values())"
    elif callable(getattr(tools, "tools", None)):  # half a toolset
        hint = (
            "it has tools() but no explain(context): a toolset answers both "
            "(explain may return () when it leaves nothing out)"
        )
    else:
        hint = "pass a Registry, a toolset or a list of @tool functions"
    return TypeError(f"tools must be a collection of tools, got {type(tools).__name__}; {hint}")


def tool_items(tools: object) -> Iterator[object]:
    """The items of ``tools``, a collection of tools (each item still to be checked).

    Raises:
        TypeError: ``tools`` is not iterable, or is text or a mapping (whose characters or
            keys are no tools): :func:`not_tools`.
    """
    if isinstance(tools, (str, bytes, Mapping)):
        raise not_tools(tools)
    try:
        return iter(tools)  # type: ignore[call-overload,no-any-return]
    except TypeError:
        raise not_tools(tools) from None


class Registry(Mapping[str, AnyTool]):
    """An immutable set of tools, looked up by exact name.

    Args:
        tools: The tools; names must be unique. Another ``Registry`` counts as the
            collection of its tools: ``Registry(registry)`` is a new registry of the
            same tools, in the same order (as ``Registry(registry.values())`` is),
            although a registry is a mapping and other mappings are refused.

    Raises:
        ToolDefinitionError: Every duplicate or unusable name and every item
            that is not a :class:`Tool`, at once.
        TypeError: ``tools`` is not iterable (a single tool, for instance), or is a
            str or a mapping.
    """

    __slots__ = (
        "_discovery",
        "_limited",
        "_name_index",
        "_resolution",
        "_secrets",
        "_tools",
        "_withheld",
    )

    _tools: Mapping[str, AnyTool]
    _name_index: NameIndex
    #: Whether a tool declares its own byte limit (``_engine.fold.own_limits``; set on first need).
    _limited: bool
    _withheld: tuple[ExposureExplanation, ...]

    def __init__(self, tools: Iterable[AnyTool] | Registry = ()) -> None:
        found: dict[str, AnyTool] = {}
        problems: list[str] = []
        if isinstance(tools, Registry):  # a mapping of its tools: read as its tools
            tools = tools._tools.values()
        for candidate in tool_items(tools):
            item: object = candidate  # checked at run time too: callers may not type-check
            if not isinstance(item, Tool):
                problems.append(f"{item!r} is not a Tool; decorate it with @tool first")
                continue
            # The name itself was checked when the Tool was built (attrs validator).
            if item.name in found:
                problems.append(
                    f"two tools are named {item.name!r}; rename one "
                    "(attrs.evolve(tool, name=...) or @tool(name=...))"
                )
            else:
                found[item.name] = item
        if problems:
            raise ToolDefinitionError("Registry", problems)
        object.__setattr__(self, "_tools", found)
        # Discovery's intrinsic tools among them: looked for on the first dispatch.
        object.__setattr__(self, "_discovery", UNSCANNED)
        # The remote tools a toolset left out on the way to this registry, which each
        # dispatch reports (see toolsets._base.Resolution).
        object.__setattr__(self, "_withheld", ())

    @classmethod
    def of(cls, *tools: AnyTool) -> Registry:
        """``Registry.of(a, b)`` is ``Registry([a, b])``."""
        return cls(tools)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Registry is immutable; build a new one")

    def __getitem__(self, name: str) -> AnyTool:
        return self._tools[name]

    def get(self, name: str, default: AnyTool | None = None) -> AnyTool | None:  # type: ignore[override]
        """The tool named ``name``, or ``default``."""
        return self._tools.get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    @property
    def names(self) -> tuple[str, ...]:
        """The tool names, in registration order."""
        return tuple(self._tools)

    def tools(self, context: Context | None = None) -> tuple[AnyTool, ...]:
        """The tools, in registration order (the same for every ``context``)."""
        return tuple(self._tools.values())

    def explain(self, context: Context | None = None) -> tuple[ExposureExplanation, ...]:
        """Why the model cannot see some of the tools: one explanation per host-only
        (``Exposure.Hidden``) tool, in registration order."""
        return tuple(
            ExposureExplanation(
                tool.name,
                "host-only: its exposure is Exposure.Hidden, so it is never declared "
                "and a model cannot call it",
                "Registry",
                tool.name,
            )
            for tool in self._tools.values()
            if tool.exposure is Exposure.Hidden
        )

    def approval_needed(self, call: ToolCall, context: Context) -> bool:
        """Whether a call of an approval-gated tool waits for approval (always, here; a
        registry resolved from an ``ApprovalRequired(when=...)`` toolset asks ``when``)."""
        return True

    def policies(self) -> Mapping[str, ToolPolicy]:
        """A read-only snapshot of every tool's policy, by name, in registration order.

        For enforcement and audit code of the host's own: a mapping that cannot be
        changed, detached from the registry. (``ToolPolicyMiddleware`` reads each
        tool's ``policy`` as it resolves the call.)
        """
        return MappingProxyType({name: tool.policy for name, tool in self._tools.items()})

    def name_index(self) -> NameIndex:
        """The index that suggests names for unknown calls (built on first use, then kept)."""
        try:
            return self._name_index
        except AttributeError:
            object.__setattr__(self, "_name_index", NameIndex(self._tools))
            return self._name_index

    def __repr__(self) -> str:
        return f"Registry({', '.join(self._tools)})"
