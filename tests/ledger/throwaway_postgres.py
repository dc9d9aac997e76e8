"""A throwaway PostgreSQL cluster for tests and benchmarks: initdb, pg_ctl start, stop.

Finds the server's programs (``pg_config --bindir``, else the newest
``/usr/lib/postgresql/*/bin``), makes a cluster in a new temporary folder and starts
it on a Unix socket there (``tcp=True`` adds a loopback port). initdb refuses to run
as root: as root, the cluster belongs to the ``postgres`` user and its programs run
through ``runuser``.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

__all__ = ["Cluster", "Unavailable", "start"]


class Unavailable(Exception):
    """No PostgreSQL server could be started here (the message says why)."""


def _bindir() -> Path:
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        path = Path(out.stdout.strip())
        if (path / "initdb").exists():
            return path
    raise Unavailable(
        "no PostgreSQL server programs (initdb) found: install the server "
        "(`apt-get install postgresql`) or set TINYTOOLS_TEST_POSTGRES to a conninfo"
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    """A running throwaway cluster; :meth:`stop` ends it and removes its files."""

    def __init__(
        self, root: Path, bindir: Path, prefix: list[str], port: int, tcp: bool, options: str
    ):
        self.root, self.bindir, self.prefix, self.port = root, bindir, prefix, port
        self.options = options
        host = "127.0.0.1" if tcp else str(root)
        self.conninfo = f"host={host} port={port} dbname=postgres user=postgres"

    def crash(self) -> None:
        """Stop the server at once, as a crash would (``pg_ctl stop -m immediate``: no
        shutdown checkpoint, clients cut off); its files stay for :meth:`restart`."""
        self._pg_ctl("-m", "immediate", "-w", "stop")

    def restart(self) -> None:
        """Start the server again on the same files (crash recovery runs first)."""
        done = self._pg_ctl("-l", str(self.root / "log"), "-o", self.options, "-w", "start")
        if done.returncode != 0:
            raise Unavailable(f"`pg_ctl start` failed: {done.stderr or done.stdout}")

    def stop(self) -> None:
        self.crash()
        shutil.rmtree(self.root, ignore_errors=True)

    def _pg_ctl(self, *arguments: str) -> subprocess.CompletedProcess[str]:
        command = [*self.prefix, str(self.bindir / "pg_ctl"), "-D", str(self.root / "data")]
        return subprocess.run([*command, *arguments], capture_output=True, text=True)


def start(*, fsync: bool = False, tcp: bool = False) -> Cluster:
    """Start a cluster (``fsync=False`` for speed where durability is not under test).

    Raises:
        Unavailable: The programs are missing or the server did not start.
    """
    bindir = _bindir()
    prefix: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="tinytools-pg-"))
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        if runuser is None:
            raise Unavailable("running as root without `runuser` to start PostgreSQL as postgres")
        try:
            shutil.chown(root, "postgres", "postgres")
        except (LookupError, OSError) as error:
            raise Unavailable(f"running as root and no `postgres` user: {error}") from error
        prefix = [runuser, "-u", "postgres", "--"]
    port = _free_port()
    data, log = root / "data", root / "log"
    listen = "127.0.0.1" if tcp else ""
    options = f"-k {root} -p {port} -c listen_addresses='{listen}' -c max_connections=60"
    if not fsync:
        options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    steps = [
        [
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
        ],
        [
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(log),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        ],
    ]
    for step in steps:
        done = subprocess.run([*prefix, *step], capture_output=True, text=True)
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip()
            if log.exists():
                detail += "\n" + log.read_text(errors="replace")[-2000:]
            shutil.rmtree(root, ignore_errors=True)
            raise Unavailable(f"`{Path(step[0]).name}` failed: {detail}")
    return Cluster(root, bindir, prefix, port, tcp, options)


if __name__ == "__main__":  # print a conninfo, for a shell: see .ci/run
    import sys

    cluster = start(tcp="--tcp" in sys.argv)
    print(cluster.conninfo)
