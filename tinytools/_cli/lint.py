"""The rules of ``tinytools check``: what a model or a provider will stumble on, per tool.

Each rule has a code, a severity and one sentence (:data:`RULES`). Errors are
what breaks a request or a run for sure (a provider refuses it, two tools share
a name, a file does not import); warnings are what makes a model call a tool
badly or what a provider quietly changes. The rules read the ``Tool`` specs only
(never a function's body), so checking thousands of tools takes milliseconds.

Where tinytools already adapts a schema for a provider (OpenAI's strict mode,
Gemini's subset), the rule says what the adaptation loses, because that is what
the model will not be told: the full schema is still enforced at admission.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Literal

import attrs

from tinytools._declare.spec import Exposure
from tinytools._suggest import normalize

from .target import Broken, Found

__all__ = ["DEFAULT_BUDGET", "OPENAI_MAX_TOOLS", "RULES", "Diagnostic", "Rule", "lint"]

Severity = Literal["error", "warning"]

#: The default budget for the declarations sent on every request, in bytes of
#: compact JSON in the OpenAI Chat shape (about 4,000 tokens).
DEFAULT_BUDGET = 16_384
#: OpenAI's documented limit on the functions of one request.
OPENAI_MAX_TOOLS = 128
#: Below this many words a description rarely tells a model when to call the tool.
_THIN_WORDS = 4


@attrs.frozen
class Rule:
    """A check: its code, severity and what it finds."""

    code: str
    severity: Severity
    summary: str


RULES: Mapping[str, Rule] = {
    rule.code: rule
    for rule in (
        Rule("TT000", "error", "the file or module raised while being imported"),
        Rule("TT001", "error", "the tool has no description"),
        Rule("TT002", "warning", f"the description is thin (fewer than {_THIN_WORDS} words)"),
        Rule("TT003", "warning", "a parameter has no description"),
        Rule("TT101", "warning", "the policy is unclassified (ToolPolicy())"),
        Rule("TT201", "error", "two different tools of one module share a name"),
        Rule("TT202", "warning", "two names of one module differ only in case or - versus _"),
        Rule("TT301", "warning", "OpenAI strict mode cannot express the schema"),
        Rule("TT302", "warning", "Gemini's schema subset cannot carry part of the schema"),
        Rule("TT303", "error", "anyOf/oneOf/allOf at the schema's top level (Anthropic refuses)"),
        Rule("TT401", "error", "the declarations sent on every request pass the byte budget"),
        Rule("TT402", "error", f"more than {OPENAI_MAX_TOOLS} direct tools (OpenAI refuses)"),
    )
}


@attrs.frozen
class Diagnostic:
    """One finding, in the ``path:line: code message`` shape linters print.

    Attributes:
        path: The file.
        line: The line (1-based).
        code: The rule's code (``TT001``).
        severity: ``"error"`` or ``"warning"``.
        tool: The tool's name, or ``None`` for a file-level finding.
        message: What is wrong and what to do.
    """

    path: str
    line: int
    code: str
    severity: Severity
    tool: str | None
    message: str


def lint(
    found: Sequence[Found],
    broken: Iterable[Broken] = (),
    *,
    budget: int = DEFAULT_BUDGET,
    ignore: frozenset[str] = frozenset(),
) -> list[Diagnostic]:
    """Every finding for the tools of a target, in file and line order.

    Args:
        found: The tools, as :func:`tinytools._cli.target.load` found them.
        broken: Files that failed to import.
        budget: The byte budget of the declarations of the direct tools.
        ignore: Codes not to report.
    """
    out = [Diagnostic(b.path, b.line, "TT000", "error", None, b.message) for b in broken]
    for item in found:
        if item.tool.exposure is not Exposure.Hidden:  # hidden tools never reach a model
            out.extend(_tool_rules(item))
    # Names and the manifest are per module: each module is a candidate toolset (two
    # modules of a folder may hold unrelated tools of one name).
    by_module: dict[str, list[Found]] = {}
    for item in found:
        by_module.setdefault(item.via.rpartition(":")[0], []).append(item)
    for members in by_module.values():
        out.extend(_name_rules(members))
        out.extend(_manifest_rules(members, budget))
    kept = [d for d in out if d.code not in ignore]
    return sorted(kept, key=lambda d: (d.path, d.line, d.code))


def _diagnostic(item: Found, code: str, message: str) -> Diagnostic:
    rule = RULES[code]
    return Diagnostic(item.path, item.line, code, rule.severity, item.tool.name, message)


def _tool_rules(item: Found) -> Iterator[Diagnostic]:
    tool = item.tool
    words = tool.description.split()
    if not words:
        yield _diagnostic(
            item, "TT001", f"tool `{tool.name}` has no description: write a docstring"
        )
    elif len(words) < _THIN_WORDS:
        yield _diagnostic(
            item,
            "TT002",
            f"tool `{tool.name}` has a thin description ({tool.description!r}): "
            "say what it does and when to call it",
        )
    properties = tool.parameters.get("properties")
    for name, schema in properties.items() if isinstance(properties, Mapping) else ():
        if not (isinstance(schema, Mapping) and str(schema.get("description", "")).strip()):
            yield _diagnostic(
                item,
                "TT003",
                f"parameter `{name}` of tool `{tool.name}` has no description: "
                "document it in the docstring's Args section or with Annotated",
            )
    if not tool.policy.classified:
        yield _diagnostic(
            item,
            "TT101",
            f"tool `{tool.name}` has an unclassified policy: state its side effects "
            "(ToolPolicy.read_only() or ToolPolicy.classified().with_side_effects(...))",
        )
    yield from _schema_rules(item)


def _schema_rules(item: Found) -> Iterator[Diagnostic]:
    from tinytools.formats._providers import strict_schema

    tool = item.tool
    try:
        strict_schema(tool.parameters)
    except ValueError as error:
        yield _diagnostic(
            item,
            "TT301",
            f"tool `{tool.name}`: OpenAI strict mode cannot express it ({error}); "
            "it is declared with strict=false",
        )
    lost = _gemini_losses(tool.parameters)
    if lost:
        yield _diagnostic(
            item,
            "TT302",
            f"tool `{tool.name}`: Gemini's schema subset has no {', '.join(lost)}; "
            "tinytools states it in the description and admission enforces it",
        )
    combinators = sorted({"anyOf", "oneOf", "allOf"} & tool.parameters.keys())
    if combinators:
        yield _diagnostic(
            item,
            "TT303",
            f"tool `{tool.name}` has {', '.join(combinators)} at the top level of its schema, "
            "which Anthropic refuses: make each alternative a property",
        )


def _gemini_losses(schema: Mapping[str, object]) -> list[str]:
    """What Gemini's subset drops from a schema (moved to prose by ``subset_schema``)."""
    from tinytools.formats.gemini import _DROP, _FORMATS, _KEEP

    converted = {"$ref", "oneOf", "const", "prefixItems"}
    lost: set[str] = set()

    def walk(node: object, refs: tuple[str, ...]) -> None:
        if not isinstance(node, Mapping):
            return
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in refs:
                lost.add("recursive $ref")
                return
            target = _resolve(schema, ref)
            walk(target, (*refs, ref))
        for key, value in node.items():
            if key in _KEEP or key in _DROP or key in converted:
                continue
            if key == "allOf" and isinstance(value, list) and len(value) == 1:
                continue
            if key == "default":  # stated in the description: the model still learns it
                continue
            lost.add(key)
        fmt, kind = node.get("format"), node.get("type")
        if fmt is not None and fmt not in _FORMATS.get(str(kind), ()):
            lost.add(f"format {fmt!r}")
        enum = node.get("enum")
        if isinstance(enum, list) and not all(isinstance(v, str) for v in enum):
            lost.add("non-string enum")
        for child in _children(node):
            walk(child, refs)

    walk(schema, ("#",))
    return sorted(lost)


def _children(node: Mapping[str, object]) -> Iterator[object]:
    properties = node.get("properties")
    if isinstance(properties, Mapping):
        yield from properties.values()
    for key in ("items", "additionalProperties", "not"):
        yield node.get(key)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        value = node.get(key)
        if isinstance(value, list):
            yield from value


def _resolve(root: Mapping[str, object], ref: str) -> object:
    if ref == "#":
        return root
    node: object = root
    for part in ref.removeprefix("#/").split("/") if ref.startswith("#/") else ():
        node = node.get(part) if isinstance(node, Mapping) else None
    return node if ref.startswith("#/") else None


def _name_rules(found: Sequence[Found]) -> Iterator[Diagnostic]:
    first: dict[str, Found] = {}
    variants: dict[str, Found] = {}
    for item in found:
        name = item.tool.name
        if name in first:
            other = first[name]
            yield _diagnostic(
                item,
                "TT201",
                f"tool `{name}` is also defined at {other.path}:{other.line} ({other.via}); "
                "a toolset refuses two tools of one name: rename one",
            )
            continue
        first[name] = item
        key = normalize(name)
        if key in variants:
            other = variants[key]
            yield _diagnostic(
                item,
                "TT202",
                f"tool `{name}` differs from `{other.tool.name}` ({other.path}:{other.line}) "
                "only in case or - versus _: a model will mix them up",
            )
        else:
            variants[key] = item


def _manifest_rules(found: Sequence[Found], budget: int) -> Iterator[Diagnostic]:
    from tinytools.discovery import declaration_bytes  # what openai_chat.declarations sends

    direct = [item for item in found if item.tool.exposure is Exposure.Direct]
    total = 2  # the brackets of the JSON list; a comma between declarations
    over_budget = False
    for count, item in enumerate(direct, start=1):
        total += declaration_bytes(item.tool) + (1 if count > 1 else 0)
        if total > budget and not over_budget:
            over_budget = True
            yield _diagnostic(
                item,
                "TT401",
                f"with tool `{item.tool.name}` the declarations of the first {count} direct "
                f"tools reach {total} bytes, over the budget of {budget}: defer tools "
                "(Exposure.Deferred behind tool_search) or raise --budget",
            )
        if count == OPENAI_MAX_TOOLS + 1:
            yield _diagnostic(
                item,
                "TT402",
                f"tool `{item.tool.name}` is direct tool number {count}; OpenAI refuses more "
                f"than {OPENAI_MAX_TOOLS} tools in one request: defer or split them",
            )
