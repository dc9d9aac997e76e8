"""Tests for `tinytools._redact.Redactor.scrub`: no form of a secret survives in free text,
neither the start of one that a preview cut short nor one a URL percent-encoded."""

from __future__ import annotations

import urllib.parse

import msgspec
import pytest

from tinytools import Registry, Tool, ToolCall, ToolPolicy, dispatch_sync, tool
from tinytools._redact import MARKER, Redactor

#: An 88-character API key: longer than any preview of it.
SECRET = "sk-live-" + "A1b2C3d4E5" * 8

#: A schema for the secret's field per error kind that quotes the value it refused.
KINDS = {
    "pattern": {"type": "string", "pattern": "^sk-test-"},
    "format": {"type": "string", "format": "uuid"},
    "enum": {"type": "string", "enum": ["a", "b"]},
    "const": {"const": "x"},
    "anyOf": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 3}]},
    "oneOf": {"oneOf": [{"type": "string"}, {"type": "string", "minLength": 1}]},
    "not": {"not": {"type": "string"}},
}


def everything(result: object) -> str:
    """Every event and message of a result, as JSON text."""
    return (
        msgspec.json.encode(result.events).decode()  # type: ignore[attr-defined]
        + msgspec.json.encode(result.messages).decode()  # type: ignore[attr-defined]
    )


def starts(secret: str) -> list[str]:
    """Every start of ``secret`` long enough to tell it by (8 characters and more)."""
    return [secret[:n] for n in range(8, len(secret) + 1)]


class TestPreviewsCutShort:
    @pytest.mark.parametrize("kind", sorted(KINDS))
    def test_every_error_kind_that_quotes_the_value(self, kind: str) -> None:
        """A long secret refused by any check whose error quotes the value (cut to a
        preview) shows no start of it in the event or the model's message."""
        schema = {"type": "object", "properties": {"api_key": KINDS[kind]}}
        svc = Tool.from_schema(
            "svc",
            "Call a service.",
            schema,
            lambda **kw: "ok",
            policy=ToolPolicy(redact=("api_key",)),
        )
        result = dispatch_sync([ToolCall("c", "svc", {"api_key": SECRET})], Registry.of(svc))
        assert ["error"] == [m.status for m in result.messages]
        text = everything(result)
        assert [] == [start for start in starts(SECRET) if start in text]
        assert f'got "{MARKER}…' in result.messages[0].content or MARKER in text

    @pytest.mark.parametrize("pad", range(0, 64, 3))
    def test_cut_anywhere_inside_the_secret(self, pad: int) -> None:
        """An error quoting the whole arguments object cuts its preview at any place in
        the secret (here after ``pad`` characters of another field): no start of the
        secret survives, the other field's text does."""
        schema = {"type": "object", "not": {"required": ["api_key"]}}
        svc = Tool.from_schema(
            "svc",
            "Call a service.",
            schema,
            lambda **kw: "ok",
            policy=ToolPolicy(redact=("api_key",)),
        )
        arguments = {"note": "n" * pad, "api_key": SECRET}
        result = dispatch_sync([ToolCall("c", "svc", arguments)], Registry.of(svc))
        text = everything(result)
        assert [] == [start for start in starts(SECRET) if start in text]
        assert '{"note":"' + "n" * min(pad, 20) in result.messages[0].content

    def test_a_start_of_a_short_secret_only_where_a_token_starts(self) -> None:
        """A start of fewer than six characters before ``…`` is the marker only where it
        begins a token, as a short secret itself is."""
        assert f'got "{MARKER}… and "xab…' == Redactor.scrub('got "ab… and "xab…', ["abc"])

    def test_text_without_a_cut_is_unchanged(self) -> None:
        """Text with no ``…`` keeps every start of a secret that is not the whole of it."""
        assert "sk-live-A1 and …" == Redactor.scrub("sk-live-A1 and …", [SECRET])


class TestPercentEncoded:
    @pytest.mark.parametrize(
        "encode",
        [
            lambda s: urllib.parse.quote(s, safe=""),
            urllib.parse.quote,
            urllib.parse.quote_plus,
        ],
        ids=["quote(safe='')", "quote", "quote_plus"],
    )
    def test_a_url_holding_the_secret(self, encode: object) -> None:
        """A tool's error quoting a URL with the percent-encoded secret shows the marker
        in the message and ``ToolFailed`` (traceback included)."""
        secret = "p@ss/w0rd:42! ü"

        @tool(policy=ToolPolicy(redact=("password",)))
        def fetch_report(user: str, password: str) -> str:
            """Fetch the report with basic credentials in the URL."""
            raise ConnectionError(f"could not reach https://{user}:{encode(password)}@x.example/q")  # type: ignore[operator]

        call = ToolCall("c", "fetch_report", {"user": "ann", "password": secret})
        result = dispatch_sync([call], Registry.of(fetch_report))
        text = everything(result)
        assert encode(secret) not in text  # type: ignore[operator]
        assert f"https://ann:{MARKER}@x.example/q" in result.messages[0].content
