"""Tests for `tinytools call` (`tinytools._cli.cmd_call`)."""

from __future__ import annotations

import json

from cli_run import run_cli

WEATHER = "examples/weather.py"


class TestCall:
    def test_ok(self):
        """A good call runs: exit 0, the tool's answer, started and completed events."""
        done = run_cli("call", WEATHER, "get_weather", '{"city": "Paris", "days": 2}')

        assert (0, "") == (done.returncode, done.stderr)
        assert done.stdout.startswith(
            'Message (ok):\n    {"city":"Paris","units":"celsius","daily_highs":[18,19]}\n'
        )
        assert "\n    tool_started " in done.stdout
        assert "\n    tool_completed " in done.stdout

    def test_relaxed_json_is_repaired(self):
        """Relaxed JSON, as a model writes it, is repaired and reported."""
        done = run_cli("call", WEATHER, "get_weather", "{city: 'Paris', days: 2,}", "--json")
        document = json.loads(done.stdout)

        assert 0 == done.returncode
        assert "ok" == document["message"]["status"]
        assert ["invalid_tool_args", "tool_started", "tool_completed"] == [
            e["kind"] for e in document["events"]
        ]
        assert "repaired" == document["events"][0]["recovery"]
        assert ["call_1"] == document["executed"]

    def test_invalid_arguments(self):
        """A schema violation is answered with the model's error message, exit 1."""
        done = run_cli("call", WEATHER, "get_weather", '{"city": "Paris", "days": 99}')

        assert 1 == done.returncode
        assert done.stdout.startswith("Message (error):\n")
        assert "$.days" in done.stdout

    def test_unknown_tool(self):
        """An unknown name is answered as a model would hear it, with a suggestion, exit 1."""
        done = run_cli("call", WEATHER, "get_wether", "--json")
        document = json.loads(done.stdout)

        assert 1 == done.returncode
        assert "error" == document["message"]["status"]
        assert "`get_weather`" in document["message"]["content"]
        assert ["unknown_tool_call"] == [e["kind"] for e in document["events"]]

    def test_stdin(self):
        """`-` reads the arguments from standard input."""
        done = run_cli("call", WEATHER, "get_weather", "-", "--json", stdin='{"city": "Oslo"}')

        assert "Oslo" in json.loads(done.stdout)["message"]["content"]

    def test_external_tool_deferred(self):
        """An external tool's valid call is deferred to the host: nothing runs, exit 0."""
        arguments = '{"owner": "o", "repo": "r", "title": "t"}'
        done = run_cli("call", "examples/external.py", "create_issue", arguments, "--json")
        document = json.loads(done.stdout)

        assert 0 == done.returncode
        assert document["message"] is None
        assert ["create_issue"] == [c["name"] for c in document["deferred"]]
        assert [] == document["executed"]

    def test_needs_state(self):
        """A tool needing state the command line cannot give fails with a clear message."""
        done = run_cli("call", "examples/shop.py", "add_to_cart", '{"items": []}')

        assert 1 == done.returncode
        assert "cannot be injected" in done.stderr
        assert "runs from Python with a Context" in done.stderr

    def test_approval(self, tmp_path):
        """A call that needs approval waits (exit 1) unless --approve runs it."""
        (tmp_path / "gated.py").write_text(
            "from tinytools import ToolPolicy, tool\n"
            "@tool(policy=ToolPolicy.classified().with_access(approval_required=True))\n"
            "def wipe(path: str) -> str:\n"
            '    """Delete a file.\n\n    Args:\n        path: The file.\n    """\n'
            "    return f'deleted {path}'\n"
        )
        waiting = run_cli("call", "gated.py", "wipe", '{"path": "x"}', cwd=tmp_path)
        approved = run_cli("call", "gated.py", "wipe", '{"path": "x"}', "--approve", cwd=tmp_path)

        assert 1 == waiting.returncode
        assert waiting.stdout.startswith("Awaiting approval: nothing ran;")
        assert 0 == approved.returncode
        assert "deleted x" in approved.stdout

    def test_help_has_examples(self):
        """`call --help` shows examples."""
        out = run_cli("call", "--help").stdout

        assert "examples:\n  tinytools call examples/weather.py get_weather" in out


def test_tool_output_cannot_drive_the_terminal(tmp_path):
    """Control characters in a tool's answer are printed as escapes: a tool (or the text a
    model made it echo) cannot retitle the terminal, move the cursor or hide lines."""
    module = tmp_path / "loud.py"
    module.write_text(
        "from tinytools import tool\n\n\n"
        "@tool\n"
        "def shout(text: str) -> str:\n"
        '    """Echo text."""\n'
        "    return text\n"
    )
    hostile = "\x1b]0;owned\x07\x1b[2Ahidden\x9b31m\rover"
    done = run_cli("call", str(module), "shout", json.dumps({"text": hostile}))
    assert 0 == done.returncode, done.stderr
    assert not any(c in done.stdout for c in "\x1b\x07\x9b\r")
    assert "\\x1b]0;owned\\x07\\x1b[2Ahidden\\x9b31m\\x0dover" in done.stdout


def test_tool_text_in_json_and_errors_cannot_drive_the_terminal(tmp_path):
    """--json escapes DEL and the C1 controls too (json.dumps leaves them raw) and still
    decodes to the tool's text; a fatal error's message on stderr is escaped."""
    module = tmp_path / "loud.py"
    module.write_text(
        "from tinytools import tool\n"
        "from tinytools.errors import FatalToolError\n\n\n"
        "@tool\n"
        "def shout(text: str) -> str:\n"
        '    """Echo text."""\n'
        "    return text\n\n\n"
        "@tool\n"
        "def stop(text: str) -> str:\n"
        '    """Stop the batch."""\n'
        "    raise FatalToolError(text)\n"
    )
    hostile = "\x9b2J\x1b]0;owned\x07\x7f"
    echoed = run_cli("call", str(module), "shout", json.dumps({"text": hostile}), "--json")
    stopped = run_cli("call", str(module), "stop", json.dumps({"text": hostile}))

    assert 0 == echoed.returncode, echoed.stderr
    assert not any(c in echoed.stdout for c in "\x1b\x07\x9b\x7f")
    assert hostile == json.loads(echoed.stdout)["message"]["content"]
    assert 1 == stopped.returncode
    assert not any(c in stopped.stderr + stopped.stdout for c in "\x1b\x07\x9b\x7f")
    assert "\\x9b2J\\x1b]0;owned\\x07\\x7f" in stopped.stderr
