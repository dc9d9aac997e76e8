"""Redaction: argument values a tool's policy marks secret never leave admission.

``ToolPolicy.redact`` lists argument names (``password``, matched at any
depth) and ``$``-rooted paths (``$.auth.token``, matched exactly). Their
values are replaced by :data:`MARKER` wherever tinytools would otherwise
repeat the arguments: events, the effect ledger, and error messages that
echo what the model sent. The tool itself still receives the real values.

Arguments that are not an object are replaced whole when the tool redacts
anything: raw text that cannot be decoded (a broken document cannot be redacted
field by field) and valid JSON that is no object (``["ann", "hunter2"]``,
``"hunter2"``), which has no key to tell a secret by.

Two decisions worth knowing:

- A key is a secret's name, and a path a ``$``-path, but for case and
  ``-``/``_``/spaces in each segment (``PassWord``, ``pass-word``,
  ``$.Auth.TOKEN``) everywhere: even validated arguments carry keys the model
  typed, in a free-form object (a ``dict[str, str]`` parameter). Where arguments
  were *refused* (an unknown tool, arguments that fail the schema), a
  misspelling of a secret name (``pasword``, ``passwrod``) counts too. An
  unknown tool's arguments, and those of a discovery ``tool_call`` that cannot
  be read, belong to no one tool: every registered tool's redaction applies to
  them.
- Free text (a tool's exception message, a validation error) is scrubbed of each
  secret's text; a secret that is an array or an object, of each string and number
  inside it too. JSON's ``null``, ``true`` and ``false`` hold no text to hide: the value
  is still the marker in arguments, but those words stay in free text (where they name a
  type, as in "got `null`"). A secret shorter than :data:`SHORT` characters is removed
  only where it stands as a whole token, so that a one-letter secret does not turn every
  such letter into the marker (which would both garble the text and spell the secret out
  by its gaps). Its text is looked for as tools write it (JSON, ``repr``,
  percent-encoded in a URL, a typed value's ``str`` and ``repr``), and its start where a
  preview cut it short (``"sk-live-A1b2…``).
- Typed values (what validation converts arguments to: a msgspec Struct, a
  dataclass, an attrs class, a pydantic model, a NamedTuple) are read by their fields,
  a field's name as a key. A parser's or provider's reason for a call it could not read
  quotes the model's text, of which a secret may be any part: where the call's
  text is hidden, so is the reason (:func:`shown_reason`).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
import sys
import urllib.parse
from collections.abc import Mapping

import attrs
import msgspec

from ._declare.models import is_model, model_fields
from ._declare.registry import AnyTool, Registry
from ._suggest import normalize
from ._wire import ToolCall

__all__ = [
    "MARKER",
    "SHORT",
    "WITHHELD",
    "Redactor",
    "every_secret",
    "shown_arguments",
    "rewritten",
    "shown_reason",
]

#: What a redacted value is replaced with.
MARKER = "[redacted]"
#: Secrets with fewer characters than this are scrubbed from free text as whole tokens only.
SHORT = 6
#: How alike a typed key and a secret name must be to count as a misspelling of it.
_NEAR = 0.8
#: Keys longer than this are never compared for misspellings (a model may send any text).
_LONGEST_KEY = 128


class Redactor:
    """Redacts the values at one tool's redaction paths."""

    __slots__ = ("_folded", "_folded_paths", "_loose", "_names", "_paths")

    def __init__(self, paths: tuple[str, ...], *, loose: bool = False) -> None:
        """``loose``: also match misspellings of the secret names (for refused arguments,
        whose keys the model typed; see the module's docstring)."""
        self._names = frozenset(p for p in paths if not p.startswith("$"))
        self._paths = frozenset(p for p in paths if p.startswith("$"))
        self._loose = loose
        self._folded = frozenset(map(_fold, self._names))
        self._folded_paths = frozenset(
            "$" + "".join(f".{_fold(segment)}" for segment in path[2:].split("."))
            for path in self._paths
        )

    def _hit(self, key: str, path: str, typed: str, folded: str) -> bool:
        """Whether the value under ``key`` (at ``path``; both also ``_fold``-ed) is secret."""
        if key in self._names or path in self._paths:
            return True
        if typed in self._folded or folded in self._folded_paths:
            return True
        return self._loose and self._near(key, typed)

    def _near(self, key: str, typed: str) -> bool:
        """Whether ``key`` (``typed`` once folded) is one of the secret names but for a typo."""
        if len(key) > _LONGEST_KEY:
            return False
        for name in self._folded:
            comparable = min(len(typed), len(name)) >= 4 and abs(len(typed) - len(name)) <= 2
            if comparable and difflib.SequenceMatcher(None, typed, name).ratio() >= _NEAR:
                return True
        return False

    def arguments(self, value: Mapping[str, object]) -> tuple[dict[str, object], list[object]]:
        """A redacted copy of ``value`` and the secret values it held (no recursion).

        A container deeper than JSON text can be read (a host's value holding itself,
        say) is the marker: nothing below it is shown, and the walk ends.
        """
        secrets: list[object] = []
        root: dict[str, object] = dict(value)
        stack: list[tuple[object, str, str, int]] = [(root, "$", "$", 0)]
        while stack:
            node, path, folded, depth = stack.pop()
            if isinstance(node, dict):
                for key, item in list(node.items()):
                    name = _key_text(key)
                    typed = _fold(name)
                    child, folded_child = f"{path}.{name}", f"{folded}.{typed}"
                    if self._hit(name, child, typed, folded_child):
                        secrets.append(item)
                        node[key] = MARKER
                    else:
                        node[key] = self._descend(item, child, folded_child, stack, depth + 1)
            elif isinstance(node, list):
                for index, item in enumerate(node):
                    at = f"[{index}]"
                    node[index] = self._descend(item, path + at, folded + at, stack, depth + 1)
        return root, secrets

    @staticmethod
    def _descend(
        item: object,
        path: str,
        folded: str,
        stack: list[tuple[object, str, str, int]],
        depth: int,
    ) -> object:
        """A copy of a container to walk later (so the caller's value is never changed);
        a typed value (a Struct, a dataclass, a tuple, …) as the container :func:`_opened`
        makes of it, or the marker where reading its fields raised."""
        kind = type(item)
        if kind is str or kind is int or kind is float or kind is bool or item is None:
            return item  # (the common leaves, told at once)
        if isinstance(item, dict):
            item = dict(item)
        elif isinstance(item, list):
            item = list(item)
        else:
            try:
                opened = _opened(item)
            except Exception:  # a host's object whose field cannot be read: shown as nothing
                return MARKER
            if opened is None:
                return item
            item = opened
        if depth > sys.getrecursionlimit():
            return MARKER
        stack.append((item, path, folded, depth))
        return item

    def raw(self, arguments: object) -> tuple[dict[str, object] | str, list[object]]:
        """Redacted arguments in their own shape, and the secrets they held.

        An object (a dict, or JSON text of one) keeps its shape with each secret's value
        replaced. Anything else the model or a host sent — text that is not JSON, JSON
        that is not an object (``["ann", "hunter2"]``, ``"hunter2"``), a list or number
        in place of a dict — is the marker, and the whole of it a secret: it has no key
        to tell which part is one.
        """
        if isinstance(arguments, dict):
            return self.arguments(arguments)
        if not isinstance(arguments, (str, bytes)):
            return MARKER, [arguments]
        text = arguments if isinstance(arguments, str) else arguments.decode("utf-8", "replace")
        try:
            decoded = msgspec.json.decode(arguments)
        except (msgspec.DecodeError, UnicodeError, RecursionError):
            return MARKER, [text]
        if decoded is None or isinstance(decoded, bool):
            return MARKER, []  # (no text to hide: see the module's note on null)
        if not isinstance(decoded, dict):
            return MARKER, [text, decoded]
        redacted, secrets = self.arguments(decoded)
        # The same secret may stand in another field too: scrub the whole text.
        return self.scrub(msgspec.json.encode(redacted).decode(), secrets), secrets

    def emitted(self, data: object, secrets: list[object]) -> object:
        """A tool's ``Emit`` data with its secrets hidden, as the call's arguments are: the
        value under a secret key is the marker, and so is every string or number that
        holds one of ``secrets`` (the call's secret values: a string scrubbed of them, a
        key too). ``data`` is what the event would encode (checked JSON-encodable)."""
        plain = msgspec.to_builtins(data)  # (typed values as the event encodes them)
        box: list[object] = [self.arguments(plain)[0] if isinstance(plain, dict) else plain]
        stack: list[tuple[list[object] | dict[object, object], object]] = [(box, 0)]
        while stack:  # (iterative: emitted data may nest as deep as JSON allows)
            holder, at = stack.pop()
            item = holder[at]  # type: ignore[call-overload]
            if isinstance(item, str):
                holder[at] = self.scrub(item, secrets)  # type: ignore[call-overload]
            elif isinstance(item, (int, float)) and not isinstance(item, bool):
                if self.scrub(str(item), secrets) != str(item):
                    holder[at] = MARKER  # type: ignore[call-overload]
            elif isinstance(item, dict):
                copy: dict[object, object] = {
                    (self.scrub(k, secrets) if isinstance(k, str) else k): v
                    for k, v in item.items()
                }
                holder[at] = copy  # type: ignore[call-overload]
                stack.extend((copy, key) for key in copy)
            elif isinstance(item, list):
                listed = list(item)
                holder[at] = listed  # type: ignore[call-overload]
                stack.extend((listed, index) for index in range(len(listed)))
        return box[0]

    @staticmethod
    def scrub(text: str, secrets: list[object]) -> str:
        """``text`` with every secret's text form replaced by the marker (a short one
        only where it stands as a whole token); a secret that is an array or an object
        is also scrubbed of each string and number inside it (a tool's error may quote
        one item of it)."""
        forms = _forms(secrets)
        for form in forms:
            if form not in text:
                continue
            if len(form) >= SHORT:
                text = text.replace(form, MARKER)
            else:
                text = re.sub(rf"(?<!\w){re.escape(form)}(?!\w)", MARKER, text)
        return _cut_short(text, forms) if _CUT in text else text


#: What a preview ends a value it cut short with (``_validate.preview``).
_CUT = "…"
#: Longer than any preview dispatch writes (200 characters at most): how far before a
#: ``…`` the start of a secret is looked for (so that scrubbing stays linear in the text).
_PREVIEWED = 256


def _cut_short(text: str, forms: dict[str, None]) -> str:
    """``text`` with the start of a secret that a preview cut short (``"sk-live-A1b2…``)
    replaced by the marker: the longest start of any form that ends right at a ``…`` (a
    start shorter than :data:`SHORT` only where it begins a token, as a short secret)."""
    pieces: list[str] = []
    done = after = 0
    at = text.find(_CUT)
    while at != -1:
        lo = max(after, at - _PREVIEWED)
        start = min((at - _shown_start(text, lo, at, form) for form in forms), default=at)
        if start < at:
            pieces += (text[done:start], MARKER)
            done = at
        after = at + 1
        at = text.find(_CUT, after)
    return "".join(pieces) + text[done:]


def _shown_start(text: str, lo: int, at: int, form: str) -> int:
    """The length of the longest start of ``form`` that ``text[lo:at]`` ends with (0: none)."""
    start = text.find(form[0], max(lo, at - len(form)), at)
    while start != -1:
        if form.startswith(text[start:at]):
            shown = at - start
            if shown >= SHORT or start == 0 or re.match(r"\w", text[start - 1]) is None:
                return shown
        start = text.find(form[0], start + 1, at)
    return 0


def _fold(name: str) -> str:
    """A key or name as variants of it share: trimmed, lower case, no ``-``, ``_`` or
    spaces (``Pass-Word`` and ``password`` fold alike)."""
    return normalize(name).replace("_", "")


def _key_text(key: object) -> str:
    """An object key as a redaction path reads it, never by the key's own methods (a
    host's key of a ``str`` subclass is its text; one whose ``__str__`` raises must not
    end the dispatch that reports it)."""
    if type(key) is str:
        return key
    if issubclass(type(key), str):
        return str.__str__(key)  # (a str, by its type)
    if isinstance(key, (bytes, bytearray)):  # (b"password" names what "password" does)
        return bytes(key).decode("utf-8", "replace")
    try:
        return str(key)
    except Exception:  # a host's own key object
        return f"<{type(key).__name__}>"


def _opened(item: object) -> dict[object, object] | list[object] | None:
    """A typed value as a container of its values, one level deep (None for a scalar).

    What validation makes of the arguments (and a host may pass): a msgspec Struct, a
    dataclass, an attrs or a pydantic model instance is an object of its fields (a
    Struct's and a model's by the names JSON gives them), a NamedTuple too (its field
    names tell its secrets, though JSON shows it as an array), another tuple, a set or a
    frozenset an array, any other mapping an object.

    Raises:
        Exception: Whatever reading a host's object raised.
    """
    kind = type(item)
    if isinstance(item, msgspec.Struct):
        struct = type(item)  # (its fields read by the class: no method of it runs)
        values = (getattr(item, field) for field in struct.__struct_fields__)
        return dict(zip(struct.__struct_encode_fields__, values, strict=True))
    if isinstance(item, tuple):
        fields = getattr(kind, "_fields", None)
        if isinstance(fields, tuple) and len(fields) == len(item):
            return dict(zip(fields, item, strict=True))
        return list(item)
    if isinstance(item, (list, set, frozenset)):
        return list(item)
    if isinstance(item, Mapping):
        return dict(item.items())
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return {f.name: getattr(item, f.name) for f in dataclasses.fields(item)}
    if attrs.has(kind):
        return {a.name: getattr(item, a.name) for a in attrs.fields(kind)}
    if is_model(item):
        return model_fields(item)  # (by the names JSON gives them, as a Struct's)
    return None


def _forms(secrets: list[object]) -> dict[str, None]:
    """The text forms of ``secrets`` to scrub from free text, each once: an array's or
    object's whole JSON form, then those of every string (keys included) and number at
    any depth inside it (walked, not recursed: a host's value may hold itself); a typed
    value (a Struct, a dataclass, a UUID, bytes, …) also as ``str`` and ``repr`` write
    it, and its fields' values or its JSON value in turn."""
    forms: dict[str, None] = {}
    for secret in secrets:
        if not isinstance(secret, (str, int, float)) and secret is not None:
            forms[_json_form(secret)] = None
    stack = list(reversed(secrets))
    walked: set[int] = set()
    while stack:
        secret = stack.pop()
        if isinstance(secret, str):
            if secret != MARKER:
                forms.update(dict.fromkeys(_text_forms(secret)))
        elif type(secret) is dict or type(secret) is list or type(secret) is tuple:
            if id(secret) not in walked:
                walked.add(id(secret))
                items = (
                    [v for pair in secret.items() for v in pair]
                    if isinstance(secret, dict)
                    else secret
                )
                stack.extend(reversed(items))
        elif secret is None or isinstance(secret, bool):
            continue  # (null, true, false hide no text: scrubbed, "got `null`" would garble)
        elif isinstance(secret, (int, float)):
            forms[_scalar_form(secret)] = None
        elif id(secret) not in walked:
            walked.add(id(secret))
            forms.update(dict.fromkeys(_typed_forms(secret)))
            stack.extend(reversed(_inside(secret)))
    forms.pop("", None)
    return forms


def _typed_forms(value: object) -> list[str]:
    """How a tool's own text may write a typed value: ``str`` and ``repr`` (never raises)."""
    try:
        return [_scalar_form(value), repr(value)]
    except Exception:  # a host's failing __repr__
        return [_scalar_form(value)]


def _inside(value: object) -> list[object]:
    """What a typed value holds, for its own forms to be scrubbed too: its fields' values
    (a dict's keys also), or the JSON value it stands for (a UUID's text, bytes' base64
    text and their UTF-8 text); never raises."""
    try:
        opened = _opened(value)
    except Exception:  # a host's object whose field cannot be read
        opened = None
    if isinstance(opened, dict):
        if isinstance(value, Mapping):  # (its keys may be secret text, as a dict's are)
            return [v for pair in opened.items() for v in pair]
        return list(opened.values())  # (field names are the type's own, no secret)
    if opened is not None:
        return opened
    inside: list[object] = []
    if isinstance(value, (bytes, bytearray)):
        inside.append(bytes(value).decode("utf-8", "replace"))
    try:
        plain = msgspec.to_builtins(value)
    except Exception:  # (TypeError for an object msgspec has no form for)
        return inside
    if isinstance(plain, (str, int, float)):
        inside.append(plain)
    return inside


def _scalar_form(value: object) -> str:
    """A number's (or any other value's) text, by its base type's own method where it
    has one; never raises (an integer too long to print, a host's object)."""
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            kind = int if isinstance(value, int) else float
            return kind.__repr__(value)
        return str(value)
    except Exception:  # (ValueError past int's digit limit, a host's failing __str__)
        return ""


def _text_forms(secret: str) -> list[str]:
    """The ways a tool's own text may spell a secret string: as it is, in JSON (as
    msgspec and as ``json.dumps`` write it, non-ASCII escaped), as ``repr`` and
    ``ascii`` write it, and as the ``repr`` of its UTF-8 bytes (a tool that raises
    ``ValueError(json.dumps(arguments))`` or ``ValueError(secret.encode())``)."""
    forms = [secret, _json_form(secret)[1:-1], *_url_forms(secret)]
    if secret.isascii() and secret.isprintable() and "\\" not in secret:
        return forms  # (every other form is one of these)
    try:
        encoded = secret.encode("utf-8", "surrogatepass")
    except UnicodeError:  # (never for a str: kept so scrubbing never raises)
        encoded = b""
    more = [json.dumps(secret)[1:-1], repr(secret)[1:-1], ascii(secret)[1:-1], repr(encoded)[2:-1]]
    return list(dict.fromkeys(forms + more))


def _url_forms(secret: str) -> list[str]:
    """``secret`` percent-encoded as a URL carries it (a tool's error quoting the URL it
    could not reach): every character but letters and digits encoded, ``/`` kept, and as
    a form field (spaces as ``+``); none where it reads as itself."""
    try:
        encoded = [
            urllib.parse.quote(secret, safe="", errors="surrogatepass"),
            urllib.parse.quote(secret, errors="surrogatepass"),
            urllib.parse.quote_plus(secret, errors="surrogatepass"),
        ]
    except UnicodeError:  # (never for a str: kept so scrubbing never raises)
        return []
    return [form for form in encoded if form != secret]


def _json_form(value: object) -> str:
    """``value`` as JSON text shows it. A lone surrogate, which msgspec cannot encode,
    is shown escaped (``\\udXXX``), as the model's JSON text carried it."""
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError, OverflowError, RecursionError):
        pass
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except Exception:  # (a host's object whose repr raises too)
        return ""  # no JSON form to look for in the text
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)


def shown_arguments(tool: AnyTool, arguments: dict[str, object]) -> dict[str, object]:
    """A call's validated arguments as events and the ledger may show them (the tool's
    redactor is built once, with its plan)."""
    redactor = tool._plan.redactor
    return arguments if redactor is None else redactor.arguments(arguments)[0]


#: What dispatch says instead of a parser's or provider's reason for a call it could not
#: read, where :func:`shown_reason` withholds that reason.
WITHHELD = (
    "its text is malformed; the details are withheld, as they would quote text that may "
    "hold a secret"
)


def shown_reason(call: ToolCall, tool: AnyTool | None, tools: Registry) -> str:
    """The reason a parser or provider gave for ``call``, which it could not read, as
    events and the model's answer repeat it: :data:`WITHHELD` when the call may hold a
    secret — its ``tool`` redacts, or, for a call no one tool owns (``tool`` None: a
    fragment that names no tool, a ``tool_call`` wrapper), any of ``tools`` does.

    Such a reason quotes the model's text (``'<password>hunter22…'``), of which the
    secret may be any part: the text is hidden whole, so a part of it cannot be found
    and scrubbed. The one rule for every route that repeats a reason.
    """
    redacts = every_secret(tools) is not None if tool is None else bool(tool.policy.redact)
    return WITHHELD if redacts else str(call.invalid)


def rewritten(tool: AnyTool, tools: Registry) -> AnyTool:
    """``tool`` as it takes a call ``Rewrite`` sent it: the call's arguments were written
    for some other tool (the model misspelt a redacting tool's name, say), so every
    registered tool's redaction applies to them, loosely, as to an unknown call's — in
    events, the ledger and its error texts alike, which read the tool's plan."""
    every = every_secret(tools)
    if every is None:
        return tool
    paths = tuple(sorted(every._names | every._paths))  # (the tool's own among them)
    variant = attrs.evolve(tool, policy=attrs.evolve(tool.policy, redact=paths))
    variant._plan.redactor = every  # (planned strict for the tool's own arguments)
    return variant


def every_secret(tools: Registry) -> Redactor | None:
    """A loose redactor over the redaction paths of every one of ``tools`` (None when
    none redacts): for arguments no one tool owns — an unknown tool's (the model may
    have misspelt a redacting tool's name), a discovery ``tool_call`` wrapper's that
    cannot be read. Redacting a value no tool marks there hides nothing that runs.
    Made once per registry and kept on it (an unknown call among 10,000 tools costs no
    walk over them)."""
    try:
        return tools._secrets  # type: ignore[attr-defined,no-any-return]
    except AttributeError:
        pass
    values = tools.values()
    paths = tuple(dict.fromkeys(path for tool in values for path in tool.policy.redact))
    redactor = Redactor(paths, loose=True) if paths else None
    object.__setattr__(tools, "_secrets", redactor)  # (a registry is frozen: its own memo)
    return redactor
