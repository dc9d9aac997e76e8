"""Google Gemini (``google-genai``, the Gemini API and Vertex AI): tools, calls, responses.

* :func:`declarations` — ``tools=[{"functionDeclarations": [{"name",
  "description", "parameters"}, ...]}]``: a list of one Gemini ``Tool``
  holding every declaration, ready for ``tools=`` (or ``[]`` for no tools).
  Keys use the REST spelling, which the SDK also accepts. A tool without
  parameters is declared without ``parameters`` (Gemini refuses an object
  with no properties).
* :func:`parse_calls` — the ``functionCall`` parts of the first candidate.
  Gemini omits ``args`` for a call without arguments, read as ``{}``; ``args``
  that are not an object fail closed (kept as JSON text, ``invalid`` set).
  Older models send no call ``id``: each call then gets a synthetic,
  deterministic one, derived from the whole response.
* :func:`assistant_message` — the model ``Content`` holding the calls as
  ``functionCall`` parts (see its note on thought signatures).
* :func:`tool_results` — all results of a turn as one user ``Content`` of
  ``functionResponse`` parts, ``response`` being ``{"output": value}`` or,
  for an error, ``{"error": content}`` (the keys Gemini documents). The value
  is the JSON object or array the content holds (a tool that returned a dict
  or a dataclass), else the content text. The call's
  ``id`` is echoed only when the model sent one (not for synthetic ids). A
  result's images and files go in the function response's ``parts`` as
  ``inlineData``.

**The schema subset.** ``parameters`` takes a subset of OpenAPI 3.0's schema
object, so :func:`subset_schema` projects each tool's JSON Schema:

* ``$ref`` to ``$defs``/``definitions`` are inlined. A recursive reference is
  cut where it recurs: that node keeps its ``type`` and a description saying
  it has the shape of the enclosing one;
* ``anyOf``/type lists with ``null`` become ``nullable: true`` (a single
  remaining branch is merged in); ``oneOf`` becomes ``anyOf``; a one-item
  ``allOf`` is merged; ``const`` becomes a one-value ``enum``;
* ``enum`` is kept only when all values are strings (typed ``string``);
  otherwise its values go to the description and the node keeps (or gets,
  when the values share one) its JSON type;
* a tuple's ``prefixItems`` become ``items`` (``anyOf`` of the positions)
  with the length pinned, the order stated in the description;
* ``additionalProperties``, ``title``, ``examples``, ``$schema``, a null
  ``default`` and other annotations are dropped (Gemini mishandles
  ``additionalProperties`` and ``title``);
* everything else Gemini lacks — ``default``, a ``format`` other than
  ``enum``/``date-time`` (strings), ``float``/``double`` (numbers) and
  ``int32``/``int64`` (integers), ``exclusiveMinimum``, ``multipleOf``,
  ``uniqueItems``, a many-item ``allOf``, ``not``, … — is removed and stated
  in the description (``default=3``). Admission still enforces the full
  schema.

Pass ``json_schema=True`` to send the schema unchanged as
``parametersJsonSchema`` instead, which current Gemini models accept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tinytools._inject import Context
from tinytools._text import printable
from tinytools._wire import ToolCall, ToolMessage

from ._attachments import ATTACHMENT_BYTES, Attached, attach, encoded
from ._dialect import decode_strict
from ._gemini_stream import FAILED_CALLS, ToolCallAccumulator, failed
from ._parsed import SyntheticIds, is_synthetic
from ._providers import (
    ANNOTATIONS,
    Tools,
    as_data,
    copy_schema,
    exposed_tools,
    json_text,
    make_call,
    note,
    preview,
)
from ._received import received
from ._turns import arguments_object, checked_calls

__all__ = [
    "FAILED_CALLS",
    "ToolCallAccumulator",
    "assistant_message",
    "declarations",
    "parse_calls",
    "subset_schema",
    "tool_results",
]

_KEEP = frozenset(
    {
        *("type", "format", "description", "nullable", "enum", "items", "properties"),
        *("required", "minItems", "maxItems", "minLength", "maxLength", "pattern"),
        *("minimum", "maximum", "minProperties", "maxProperties", "anyOf", "propertyOrdering"),
    }
)
_DROP = ANNOTATIONS | {"additionalProperties", "$defs", "definitions"}
_FORMATS = {
    "string": ("enum", "date-time"),
    "number": ("float", "double"),
    "integer": ("int32", "int64"),
}
_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}


def declarations(
    tools: Tools, *, json_schema: bool = False, context: Context | None = None
) -> list[dict[str, object]]:
    """The ``tools`` list of a ``generateContent`` request.

    Args:
        tools: A ``Registry``, any toolset, or an iterable of ``Tool``. Only
            ``Direct`` tools are declared: hidden ones never, deferred ones are
            found through discovery.
        json_schema: Send each schema unchanged as ``parametersJsonSchema``
            instead of projecting it to ``parameters``.
        context: The context a toolset is resolved with (pass the dispatch's, so
            that what is declared is what dispatch will admit).

    Returns:
        One Gemini ``Tool`` (``{"functionDeclarations": [...]}``) holding every
        declaration, or ``[]`` when no tool is declared.
    """
    found: list[object] = []
    for tool in exposed_tools(tools, context):
        description = printable(tool.description)  # a lone surrogate: its escape
        declaration: dict[str, object] = {"name": tool.name, "description": description}
        if json_schema:
            declaration["parametersJsonSchema"] = copy_schema(tool.parameters)
        elif (parameters := subset_schema(tool.parameters)).get("properties"):
            declaration["parameters"] = parameters
        found.append(declaration)
    return [{"functionDeclarations": found}] if found else []


def subset_schema(parameters: Mapping[str, object]) -> dict[str, object]:
    """The Gemini-subset projection of a JSON schema (a new dict; see the module doc)."""
    return _project(parameters, parameters, ("#",))


def _resolve(root: Mapping[str, object], ref: str) -> Mapping[str, object] | None:
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None  # only references inside the schema can be inlined
    node: object = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part.replace("~1", "/").replace("~0", "~"))
    return node if isinstance(node, Mapping) else None


def _project(node: object, root: Mapping[str, object], seen: tuple[str, ...]) -> dict[str, object]:
    if not isinstance(node, Mapping):
        return {}  # `true`: any value
    schema = dict(node)
    ref = schema.pop("$ref", None)
    if isinstance(ref, str):
        target = _resolve(root, ref)
        if target is None:
            note(schema, f"$ref={json_text(ref)} cannot be followed")
        elif ref in seen:
            shape = "arguments object" if ref == "#" else ref.rsplit("/", 1)[-1]
            cut = {"type": target["type"]} if isinstance(target.get("type"), str) else {}
            note(schema, f"Same shape as the enclosing {shape}; not expanded again")
            return {**cut, **{k: v for k, v in schema.items() if k == "description"}}
        else:
            return _project({**target, **schema}, root, (*seen, ref))
    return _finish(_simplify(schema), root, seen)


def _simplify(schema: dict[str, object]) -> dict[str, object]:
    """Rewrite combinators, ``const`` and type lists into the subset's forms."""
    if "oneOf" in schema:
        schema["anyOf"] = schema.pop("oneOf")
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
        del schema["allOf"]
        schema = {**all_of[0], **schema}
    if "const" in schema:
        schema["enum"] = [schema.pop("const")]
    types = schema.get("type")
    if isinstance(types, list):
        rest = [t for t in types if t != "null"]
        if len(rest) < len(types):
            schema["nullable"] = True
        if len(rest) == 1:
            schema["type"] = rest[0]
        else:
            del schema["type"]
            if rest:
                schema["anyOf"] = [{"type": t} for t in rest]
    return schema


def _finish(
    schema: dict[str, object], root: Mapping[str, object], seen: tuple[str, ...]
) -> dict[str, object]:
    out: dict[str, object] = {}
    notes: list[str] = []
    for key, value in schema.items():
        if key in _KEEP:
            out[key] = value
        elif key not in _DROP and not (key == "default" and value is None):
            text = json_text(value)
            notes.append(f"{key}={text if len(text) <= 120 else text[:119] + '…'}")
    if "anyOf" in out:
        _any_of(out, root, seen)
    if "prefixItems" in schema and "items" not in out:
        _widen_tuple(out, schema["prefixItems"], notes)
    if "items" in out:
        out["items"] = _project(out["items"], root, seen)
    properties = out.get("properties")
    if isinstance(properties, Mapping):
        out["properties"] = {k: _project(v, root, seen) for k, v in properties.items()}
        required = out.get("required")
        if isinstance(required, list):
            out["required"] = [name for name in required if name in properties]
    _fit_enum_and_format(out, notes)
    if notes:
        note(out, ", ".join(notes))
    return out


def _any_of(out: dict[str, object], root: Mapping[str, object], seen: tuple[str, ...]) -> None:
    """Project the branches; a ``null`` branch becomes ``nullable``, a lone branch is merged."""
    branches = out.pop("anyOf")
    kept = []
    for branch in branches if isinstance(branches, list) else ():
        projected = _project(branch, root, seen)
        if projected.get("type") == "null" or (projected.get("nullable") and len(projected) == 1):
            out["nullable"] = True
        else:
            kept.append(projected)
    if len(kept) == 1:
        merged = {**kept[0], **out}
        if "description" in kept[0] and "description" in out:
            merged["description"] = f"{out['description']} ({kept[0]['description']})"
        out.clear()
        out.update(merged)
    elif kept:
        out["anyOf"] = kept


def _widen_tuple(out: dict[str, object], prefix: object, notes: list[str]) -> None:
    positions = prefix if isinstance(prefix, list) else []
    unique: list[object] = []
    for item in positions:
        if item not in unique:
            unique.append(item)
    if unique:
        out["items"] = unique[0] if len(unique) == 1 else {"anyOf": unique}
        out.setdefault("minItems", len(positions))
        out.setdefault("maxItems", len(positions))
    notes[:] = [n for n in notes if not n.startswith("prefixItems=")]
    notes.append(f"in order: {', '.join(json_text(p) for p in positions)}")


def _fit_enum_and_format(out: dict[str, object], notes: list[str]) -> None:
    enum = out.get("enum")
    if isinstance(enum, list):
        if all(isinstance(value, str) for value in enum):
            out["type"] = "string"
        else:
            del out["enum"]
            notes.append(f"enum={json_text(enum)}")
            kinds = {_JSON_TYPES.get(type(value)) for value in enum}
            if "type" not in out and len(kinds) == 1 and None not in kinds:
                out["type"] = kinds.pop()  # Gemini wants a type on every property
    fmt = out.get("format")
    if fmt is not None and fmt not in _FORMATS.get(str(out.get("type")), ()):
        del out["format"]
        notes.append(f"format={json_text(fmt)}")


def parse_calls(response: object) -> list[ToolCall]:
    """The function calls of a response's first candidate, in order.

    Args:
        response: A ``GenerateContentResponse``, one candidate, a ``Content``
            or a list of parts; SDK objects or dicts, in the REST
            (``functionCall``) or the SDK's (``function_call``) spelling.
            One chunk of a stream is a response too, but a call may span
            chunks: read a stream with :class:`ToolCallAccumulator`.

    Raises:
        ToolCallsFailed: The candidate holds no call and finished because a
            call failed (``MALFORMED_FUNCTION_CALL``, ``UNEXPECTED_TOOL_CALL``,
            ``TOO_MANY_TOOL_CALLS``, ``MALFORMED_RESPONSE``,
            ``MISSING_THOUGHT_SIGNATURE``); the message says what to do.
        TypeError: ``response`` is text, a stream, or another object.
        ValueError: ``response`` is not shaped like any of these.
    """
    data = received(
        response,
        module="gemini",
        expects="a GenerateContentResponse, a candidate, a Content or its parts",
        accumulator="ToolCallAccumulator",
    )
    candidate = _candidate(data)
    parts = _parts(data)
    ids = SyntheticIds(lambda: json_text(data))
    calls: list[ToolCall] = []
    for part in parts:
        call = _function_call(part)
        if call is not None:
            calls.append(_make(call, ids, len(calls)))
    if not calls and candidate is not None:
        failed(candidate)
    return calls


def _function_call(part: object) -> Mapping[str, object] | None:
    """The ``functionCall`` of one part (``{"args": value}`` when it is not an object)."""
    part = as_data(part)
    if not isinstance(part, Mapping):
        return None
    call = part.get("functionCall") or part.get("function_call")
    if call is None:
        return None
    return call if isinstance(call, Mapping) else {"args": call}


def _make(call: Mapping[str, object], ids: SyntheticIds, index: int) -> ToolCall:
    args = call.get("args")
    return make_call(
        call.get("id"), call.get("name"), {} if args is None else args, ids=ids, index=index
    )


def _candidate(data: object) -> Mapping[str, object] | None:
    """The first candidate of a response, or the candidate itself; ``None`` otherwise."""
    if isinstance(data, Mapping) and "candidates" in data:
        candidates = data["candidates"]
        first = candidates[0] if isinstance(candidates, list) and candidates else None
        first = as_data(first)
        return first if isinstance(first, Mapping) else None
    if isinstance(data, Mapping) and "content" in data:
        return data
    return None


def _parts(data: object) -> list[object]:
    node = data
    if isinstance(node, Mapping) and "candidates" in node:
        candidates = node["candidates"]
        node = candidates[0] if isinstance(candidates, list) and candidates else {}
        node = as_data(node)
    if isinstance(node, Mapping) and "content" in node:
        node = as_data(node["content"])
    if isinstance(node, Mapping):
        node = node.get("parts") or []
    if not isinstance(node, list):
        shown = preview(data)
        raise ValueError(f"expected a Gemini response, candidate, content or parts, not {shown}")
    return node


def assistant_message(calls: Iterable[ToolCall], text: str | None = None) -> dict[str, object]:
    """The model ``Content`` that made ``calls``: its text, then one ``functionCall`` part each.

    Append it to ``contents``, then the :func:`tool_results` content. A call's
    ``id`` is written only when the model sent one (not for synthetic ids);
    ``args`` must be an object, so a call whose raw text is not a JSON object
    is written with ``{}`` (its error result says what was wrong).

    Gemini 2.5 and 3 models attach *thought signatures* to their parts, and
    Gemini 3 refuses a function-calling turn sent back without them. Calls do
    not carry them: append the candidate's own ``content`` (or
    :meth:`ToolCallAccumulator.message` for a stream) whenever you have it;
    this function is for turns that never came from Gemini (a replayed or
    prompt-guided history).

    Args:
        calls: The calls, as ``parse_calls`` or :class:`ToolCallAccumulator` gave them.
        text: The text the model wrote before them, if any.
    """
    parts: list[object] = [{"text": text}] if text else []
    for call in checked_calls(calls, "gemini.assistant_message"):
        function: dict[str, object] = {"name": call.name, "args": arguments_object(call)}
        if not is_synthetic(call.id):
            function["id"] = call.id
        parts.append({"functionCall": function})
    return {"role": "model", "parts": parts}


def _value(content: str) -> object:
    """The JSON object or array ``content`` holds, else ``content`` itself.

    Content is what the model may read (redacted and cut to the byte limit), so
    it is decoded rather than the host-side structured value sent; cut content
    no longer parses and goes as text.
    """
    if content[:1] in ("{", "["):
        value = decode_strict(content)
        if isinstance(value, (dict, list)):
            return value
    return content


def tool_results(
    messages: Iterable[ToolMessage], *, max_attachment_bytes: int | None = ATTACHMENT_BYTES
) -> list[dict[str, object]]:
    """Every ``ToolMessage`` as a ``functionResponse`` part of one user ``Content``.

    A message's attachments (a result's ``ImageBlock`` and ``FileBlock``) go in its
    function response's ``parts``, as ``{"inlineData": {"mimeType", "data"}}`` (base64):
    PNG, JPEG and WebP images, PDF and plain-text files, which Gemini 3 models read.
    Anything else — another type, a reference by URL (Gemini takes a function
    response's media as data), data that is not what its media type says, more than
    ``max_attachment_bytes`` — is left out, and a line of the response's text tells
    the model which attachment and why.

    Args:
        messages: The messages, such as ``dispatch(...).messages``.
        max_attachment_bytes: The most bytes of data one attachment may have (None:
            no limit; the default is 3,932,160, 5 MiB in base64).

    Returns:
        ``[]`` when there are no messages, else a list of one content dict.
    """
    parts: list[object] = []
    for m in messages:
        text, sent = attach(m, _native, max_attachment_bytes)
        response: dict[str, object] = {"name": m.name}
        response["response"] = {"error": text} if m.is_error else {"output": _value(text)}
        if sent:
            response["parts"] = [part for _, part in sent]
        if not is_synthetic(m.tool_call_id):
            response["id"] = m.tool_call_id
        parts.append({"functionResponse": response})
    return [{"role": "user", "parts": parts}] if parts else []


#: The media types a function response's parts take.
_MEDIA = frozenset({"image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"})


def _native(attached: Attached) -> dict[str, object] | str:
    """An attachment as a function response part, or why Gemini cannot take it."""
    if attached.media not in _MEDIA:
        return "Gemini takes PNG, JPEG and WebP images, PDF and plain text in a function response"
    if attached.data is None:
        return "Gemini takes a function response's media as data, not by URL"
    return {"inlineData": {"mimeType": attached.media, "data": encoded(attached)}}
