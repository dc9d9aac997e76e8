"""``Prepared``: a per-run function that may drop tools or change them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from tinytools._declare.exposure import ExposureExplanation
from tinytools._declare.registry import AnyTool
from tinytools._declare.schema_check import schema_problems
from tinytools._declare.validate import SchemaValidator
from tinytools.errors import ToolDefinitionError

from ._base import Resolution, Wrapper, checked_tools, label

if TYPE_CHECKING:
    from tinytools._declare.validate import Arguments, StructValidator
    from tinytools._inject import Context

__all__ = ["Prepared"]

_FIELDS = ("description", "parameters", "policy", "exposure", "format", "fn")


class _Narrowed(SchemaValidator):
    """The schema a ``prepare`` step showed the model, checked before the tool's own
    validator (which still converts the arguments for the function): arguments must
    pass both."""

    __slots__ = ("_original",)

    def __init__(
        self, schema: dict[str, object], original: StructValidator | SchemaValidator
    ) -> None:
        injected = original.injected if isinstance(original, SchemaValidator) else frozenset()
        super().__init__(schema, "draft7", injected)
        self._original = original

    def validate(self, tool_name: str, arguments: Arguments) -> dict[str, object]:
        super().validate(tool_name, arguments)
        return self._original.validate(tool_name, arguments)

    @property
    def models(self) -> bool:
        """Whether the tool's own arguments hold a pydantic model (see ``Tool``'s plan)."""
        return bool(getattr(self._original, "models", False))


@attrs.frozen
class Prepared(Wrapper):
    """The tools of ``toolset`` as ``prepare(context, tools)`` makes them, every run.

    ``prepare`` may drop tools, reorder them, or change them with
    ``attrs.evolve`` (description, parameters, policy, exposure, format); it
    may not add or rename tools (use ``Renamed``). A tool whose ``parameters``
    it changed must pass both that schema (the one the model sees, checked
    as JSON Schema draft 7) and the tool's own. It runs on every dispatch (its
    previous result is reused downstream when it returns the very same tools).

    Args:
        toolset: The toolset to prepare.
        prepare: ``prepare(context, tools) -> Iterable[Tool]``.

    Raises:
        ToolDefinitionError: ``prepare`` raised, returned something that is not
            a tool, added or renamed a tool, returned a tool twice, or gave a
            tool a schema that is not valid JSON Schema (draft 7) or lets the
            model set an injected parameter (when resolved).
    """

    prepare: Callable[[Context | None, tuple[AnyTool, ...]], Iterable[AnyTool]] = attrs.field(
        validator=attrs.validators.is_callable()
    )

    reads_context = True
    asks_every_time = True

    def label(self) -> str:
        return f"Prepared({label(self.prepare)})"

    def _adapt(self, inner: Resolution, context: Context | None) -> Resolution:
        where = self.label()
        try:
            returned: object = self.prepare(context, inner.tools)
            if isinstance(returned, (str, bytes)) or not isinstance(returned, Iterable):
                raise TypeError(f"it returned {returned!r}, not an iterable of tools")
            tools = checked_tools(where, returned)
        except ToolDefinitionError:
            raise
        except Exception as error:
            raise ToolDefinitionError(where, [f"prepare raised {error!r}"]) from error
        before = {tool.name: tool for tool in inner.tools}
        problems: list[str] = []
        seen: set[str] = set()
        out: list[AnyTool] = []
        explained: list[ExposureExplanation] = []
        for tool in tools:
            original = before.get(tool.name)
            if original is None:
                problems.append(
                    f"prepare returned a tool named {tool.name!r} that it was not given; "
                    "prepare may drop or change tools, not add or rename them (use Renamed)"
                )
            elif tool.name in seen:
                problems.append(f"prepare returned {tool.name!r} twice")
            elif tool is original:  # unchanged (the common case): nothing to compare
                seen.add(tool.name)
                out.append(tool)
            else:
                seen.add(tool.name)
                shown = _shown_problems(tool, original)
                if shown:
                    problems += [f"{tool.name!r} as prepared: {p}" for p in shown]
                    continue
                tool = _checkable(tool, original)
                out.append(tool)
                changed = [f for f in _FIELDS if getattr(tool, f) != getattr(original, f)]
                if changed:
                    reason = f"changed by prepare: {', '.join(changed)}"
                    explained.append(ExposureExplanation(tool.name, reason, where, tool.name))
        if problems:
            raise ToolDefinitionError(where, problems)
        explained += [
            ExposureExplanation(name, "left out by prepare for this run", where)
            for name in before
            if name not in seen
        ]
        gates = {n: w for n, w in inner.gates.items() if n in seen}
        return Resolution(tuple(out), (*inner.explanations, *explained), gates)


def _shown_problems(tool: AnyTool, original: AnyTool) -> list[str]:
    """Why the schema ``prepare`` gave ``tool`` cannot be shown to the model (empty when it
    can): checked when resolved, as ``Tool.from_schema`` checks a schema when built, so no
    call of the run meets a schema that cannot be enforced."""
    schema = tool.parameters
    if schema is original.parameters or schema == original.parameters:
        return []
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return ['it must be an object schema ({"type": "object", ...})']
    problems: list[str] = []
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        problems += [
            f"parameter `{name}` is injected but the schema lets the model set it; "
            "remove it from the schema's properties"
            for name in original.injected
            if name in properties
        ]
    try:
        problems += schema_problems(schema, "draft7")
    except Exception as error:  # a value that is not JSON (a set, an object...)
        problems.append(f"it cannot be checked as JSON Schema ({error!r})")
    return problems


def _checkable(tool: AnyTool, original: AnyTool) -> AnyTool:
    """``tool``, made to check the schema it now shows when ``prepare`` changed it."""
    if tool.parameters == original.parameters or tool._validator is not original._validator:
        return tool
    schema = dict(tool.parameters)
    return attrs.evolve(tool, validator=_Narrowed(schema, original._validator))
