"""What a PostgreSQL conninfo may show of itself in a message: never what could be secret.

libpq's messages quote the conninfo. A parse error quotes the text around the problem,
which is the password when a stray ``%``, space or quote sits in it; a connection error
quotes the host, user, database or options it used, where a password split by an
unescaped ``@`` or ``/`` in a URI lands. So a message names the database by the fields
that have the form such a field takes (the others, the password always, are ``***``),
says in its own words what libpq could not parse, and of a connection error hides each
quoted part that could come from a field it does not show.
"""

from __future__ import annotations

import re

from tinytools._redact import Redactor

__all__ = ["connect_failure", "described", "parse"]

#: The fields a message names the database by, each with the form it must have to be shown.
_SHOWN = {
    "host": re.compile(r"[\w.:%/,-]+"),
    "hostaddr": re.compile(r"[\w.:%,]+"),
    "port": re.compile(r"[0-9,]+"),
    "dbname": re.compile(r"[\w.$-]+"),
    "user": re.compile(r"[\w.$@-]+"),
}
#: libpq's parse errors by how they start, each told in words that quote nothing.
_UNPARSABLE = (
    ("invalid percent-encoded token", "a '%' in the URI is not followed by two hex digits"),
    ("forbidden value %00", "the URI holds %00"),
    ('missing "="', "a word is not followed by '='"),
    ("invalid connection option", "it names an option libpq does not know"),
    ("unterminated quoted string", "a quoted value is not closed"),
    ("invalid URI query parameter", "its URI query names an option libpq does not know"),
    ("extra key/value separator", "a URI query parameter holds two '='"),
    ("missing key/value separator", "a URI query parameter has no '='"),
    ("end of string reached", "an IPv6 address in the URI has no closing ']'"),
    ("IPv6 host address may not be empty", "an IPv6 address in the URI is empty"),
    ("unexpected character", "the URI has an unexpected character after its host"),
)
_QUOTING = (
    "libpq's own message is not shown, as it quotes the conninfo. In key=value form, put a "
    "value holding spaces or quotes in single quotes (with \\' and \\\\ inside); in a URI, "
    "percent-encode the user name and password (% as %25, @ as %40, / as %2F, : as %3A, "
    "# as %23, ? as %3F, a space as %20)"
)
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")


def parse(conninfo: str) -> dict[str, str] | str:
    """The conninfo's fields, or (a text) what libpq found wrong with it.

    Raises:
        ImportError: psycopg is not installed.
    """
    from psycopg.conninfo import conninfo_to_dict

    try:
        return {name: str(value) for name, value in conninfo_to_dict(conninfo).items()}
    except Exception as error:
        said = str(error).strip()
    problem = next((why for start, why in _UNPARSABLE if said.startswith(start)), None)
    return f"libpq cannot parse the conninfo{f' ({problem})' if problem else ''}. {_QUOTING}"


def described(conninfo: str) -> str:
    """The conninfo for a message: the fields that show where the database is, each
    shown only when it has the form such a field takes; every other one as ``***``."""
    try:
        fields = parse(conninfo)
    except ImportError:
        return "<conninfo>"
    if isinstance(fields, str):
        return "<conninfo libpq cannot parse>"
    from psycopg.conninfo import make_conninfo

    return str(make_conninfo("", **{k: v if _shows(k, v) else "***" for k, v in fields.items()}))


def connect_failure(said: str, fields: dict[str, str]) -> str:
    """libpq's or psycopg's message for a failed connection, with each quoted part that
    could come from a field :func:`described` does not show replaced by that field's
    name (``<options>``), and the password nowhere."""
    hidden = {name: value for name, value in fields.items() if value and not _shows(name, value)}
    if any(quote in value for value in hidden.values() for quote in "\"'"):
        # (a quote inside a value makes the quoted parts of the message unreadable)
        return "libpq's message is not shown: it quotes a part of the conninfo shown as ***"
    shown = {
        part for name, value in fields.items() if _shows(name, value) for part in value.split(",")
    }

    def hide(match: re.Match[str]) -> str:
        inner = match.group()[1:-1]
        if inner and inner not in shown:
            for name, value in hidden.items():
                if inner in value or value in inner:
                    return f"<{name}>"
        return match.group()

    return Redactor.scrub(_QUOTED.sub(hide, said), list(hidden.values()))


def _shows(name: str, value: str) -> bool:
    form = _SHOWN.get(name)
    return form is not None and form.fullmatch(value) is not None
