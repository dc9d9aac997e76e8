"""Many workers, one ledger: 8 processes, and 8 threads, dispatch the same 50
non-idempotent calls; the side-effect log shows each call ran exactly once."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from pathlib import Path

import ledger_children as children
from conftest import make_ledger

WORKERS = 8
#: Worker processes racing: each is a new interpreter (~0.3 s of CPU to start), and four
#: on CI's two cores race as eight do; threads, cheap, stay eight.
PROCESSES = 4
EVERY_CALL = Counter(f"w{n}" for n in range(children.WORKER_CALLS))


def test_processes_run_each_call_once(
    kind_and_place: tuple[str, str], run_id: str, tmp_path: Path
) -> None:
    """4 processes, started together, racing on the same calls: each ran exactly once,
    and between them the workers answered every call as run once."""
    kind, where = kind_and_place
    effects = str(tmp_path / "effects")
    command = [sys.executable, str(Path(children.__file__)), "worker", kind, where, run_id, effects]
    ran = children.race([[*command, str(index)] for index in range(PROCESSES)])
    assert EVERY_CALL == Counter(children.effects(effects))
    assert EVERY_CALL == Counter(ran)


def test_threads_run_each_call_once(
    kind_and_place: tuple[str, str], run_id: str, tmp_path: Path
) -> None:
    """8 threads sharing one ledger object: each call ran exactly once."""
    effects = str(tmp_path / "effects")
    ledger = make_ledger(*kind_and_place)
    barrier = threading.Barrier(WORKERS)
    ran: list[str] = []
    failures: list[BaseException] = []

    def work(index: int) -> None:
        try:
            barrier.wait()
            ran.extend(children.work(ledger, run_id, effects, index))
        except BaseException as error:  # reported below, in the test's thread
            failures.append(error)

    threads = [threading.Thread(target=work, args=(index,)) for index in range(WORKERS)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        ledger.close()
    assert [] == failures
    assert EVERY_CALL == Counter(children.effects(effects))
    assert EVERY_CALL == Counter(ran)
