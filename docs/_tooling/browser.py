"""A headless Chromium driven over the DevTools protocol, with the network off.

Used to render the docs' diagrams (``diagrams.py``) and to check the built site
offline (``check_site.py``). Chromium is Debian's (``apt-get install chromium``), never a
browser download; it is spoken to over ``--remote-debugging-pipe`` (file descriptors 3
and 4, one JSON message per NUL-terminated chunk), so the standard library is enough.
Every host but 127.0.0.1 is unreachable: names do not resolve and any other address
goes to a proxy that is not there.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["Browser", "chromium", "missing"]

_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")
_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-pipe",
    # The network off: no name resolves but 127.0.0.1, and any address but the loopback
    # (which Chromium never proxies) goes to a proxy on the discard port, where none listens.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--proxy-server=http://127.0.0.1:9",
)


def chromium() -> str | None:
    """The Chromium executable (``$CHROMIUM``, else the first of its usual names on
    ``PATH``), or None when there is none."""
    named = os.environ.get("CHROMIUM")
    return shutil.which(named) if named else next(filter(None, map(shutil.which, _NAMES)), None)


def missing() -> str:
    """Why :func:`chromium` found none, and what to do."""
    named = os.environ.get("CHROMIUM")
    if named:
        return f"CHROMIUM={named} is no executable (name Chromium's, or unset it)"
    return f"no Chromium on PATH ({', '.join(_NAMES)}): apt-get install chromium, or set CHROMIUM"


class Browser:
    """One headless Chromium with a fresh profile and one page; use it in ``with``."""

    def __init__(self, executable: str, *, width: int = 1280, height: int = 900) -> None:
        self._profile = tempfile.TemporaryDirectory(prefix="tinytools-chromium-")
        commands, self._commands = os.pipe()  # we write, Chromium reads (its fd 3)
        self._answers, answers = os.pipe()  # Chromium writes (its fd 4), we read

        def as_fds_3_and_4() -> None:  # (copies first: either end may already be 3 or 4)
            copies = os.dup(commands), os.dup(answers)
            os.dup2(copies[0], 3)  # inheritable, unlike the pipe's own ends
            os.dup2(copies[1], 4)

        self._process = subprocess.Popen(
            [
                executable,
                *_FLAGS,
                f"--user-data-dir={self._profile.name}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,  # fds 3 and 4 must reach Chromium; every other is close-on-exec
            start_new_session=True,  # its own process group, which __exit__ ends
            preexec_fn=as_fds_3_and_4,  # (the callers are single-threaded)
        )
        os.close(commands)
        os.close(answers)
        self._buffer = b""
        self._next_id = 0
        self._session = ""
        self._events: list[str] = []  # the methods of the events read so far

    def __enter__(self) -> Browser:
        targets = self.send("Target.getTargets")["targetInfos"]
        page = next(target for target in targets if target["type"] == "page")
        attached = self.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)
        self._session = attached["sessionId"]
        self.send("Page.enable")
        return self

    def __exit__(self, *exc: object) -> None:
        self._session = ""  # closing is the browser's command, not the page's
        try:
            self.send("Browser.close")
            self._process.wait(timeout=10)
        except (OSError, RuntimeError, subprocess.TimeoutExpired):
            pass
        finally:
            # Chromium's own helper processes are in the group it leads: end them too.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()
            os.close(self._commands)
            os.close(self._answers)
            self._profile.cleanup()

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Call one DevTools method (on the page, once attached); its result."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self._session:
            message["sessionId"] = self._session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read()
            if "method" in answer:
                self._events.append(answer["method"])
            elif answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer["result"]
                return result

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._answers, 1 << 16)
            if not chunk:
                raise RuntimeError(f"Chromium exited (status {self._process.poll()})")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        decoded: dict[str, Any] = json.loads(message)
        return decoded

    def open(self, url: str) -> None:
        """Load ``url`` and wait until it and everything it loads have loaded (or failed)."""
        self._events.clear()
        self.send("Page.navigate", url=url)
        while "Page.loadEventFired" not in self._events:
            answer = self._read()
            if "method" in answer:
                self._events.append(answer["method"])

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a promise awaited)."""
        answer = self.send(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression[:60]}...: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def screenshot(self, path: Path) -> None:
        """Save the page's visible part as a PNG."""
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot")["data"]))
