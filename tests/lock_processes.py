"""What the lock tests with real processes share (tests/faults/test_lock_faults.py,
tests/faults/test_lock_replicated.py): their processes, and what their lines mean.

The landlord is ``python -m landlord.testing.lockcheck landlord --verbose`` (it prints ``leased
<name> <token> <when>`` for each named lease asked for, ``None`` for a waiter queued, and
``expired|cancelled <name> <token> <when>`` as they end), the resource ``... lockcheck resource``
(a Fence over a log), each holder tests/processes/lock_holder.py (driven from stdin; see its
docstring). Times are ``time.monotonic()``, which every process of the machine shares.

Test modules import the fixture from here (``from lock_processes import processes``), as they do
tests/etcd_fixtures.py's.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PROCESSES

from landlord.testing import ChildProcess

__all__ = ["LOCKCHECK", "Processes", "processes", "holding", "queued", "deadlines", "ask", "renewed_after"]

LOCKCHECK = ("-m", "landlord.testing.lockcheck")


class Processes:
    """Starts the processes of a test; kills and reaps them all after it."""

    def __init__(self) -> None:
        self.started: list[ChildProcess] = []

    def start(self, *args: str, name: str, stdin: bool = False) -> ChildProcess:
        child = ChildProcess(*args, name=name, stdin=stdin)
        self.started.append(child)
        return child

    def landlord(self, port: int, store: Path | None = None) -> tuple[ChildProcess, str]:
        """``lockcheck landlord --verbose`` on ``port`` (on ``store``); it and its URI once it serves."""
        options = ["--store", str(store)] if store is not None else []
        child = self.start(*LOCKCHECK, "landlord", "--port", str(port), "--verbose", *options, name="landlord")
        return child, child.read_uri()

    def resource(self, log: Path) -> str:
        """``lockcheck resource`` (fenced), logging to ``log``; its URI."""
        return self.start(*LOCKCHECK, "resource", "--log", str(log), name="resource").read_uri()

    def holder(self, name: str, target: str, *options: str) -> ChildProcess:
        """tests/processes/lock_holder.py on the lock ``x`` of ``target``, once it listens."""
        child = self.start(str(PROCESSES / "lock_holder.py"), target, "x", "--id", name, *options,
                           name=f"holder {name}", stdin=True)
        child.expect("ready")
        return child


@pytest.fixture
def processes() -> Iterator[Processes]:
    started = Processes()
    yield started
    for child in started.started:
        child.close()


def holding(holder: ChildProcess, command: str = "acquire", timeout: float = 20.0) -> tuple[int, float]:
    """Send ``command`` (or nothing: ``""``) and wait for its ``holding`` line: the token, and when."""
    if command:
        holder.send(command)
    found = holder.wait_for(r"^holding (\d+) (\S+)$", timeout)
    return int(found.group(1)), float(found.group(2))


def queued(landlord: ChildProcess, holder: ChildProcess) -> None:
    """Have ``holder`` wait for the lock, and wait until the landlord has queued it."""
    mark = landlord.mark()
    holder.send("acquire")
    landlord.wait_count(r"^leased x None ", 1, start=mark)


def deadlines(holder: ChildProcess) -> list[tuple[float, float]]:
    """Every (valid until, lease deadline) the holder has printed so far."""
    return [(float(m.group(1)), float(m.group(2))) for _, m in holder.matches(r"^deadline (\S+) (\S+)$")]


def ask(holder: ChildProcess, command: str, answer: str) -> re.Match[str]:
    """Send ``command``; the match of the first line after it that matches ``answer``."""
    mark = holder.mark()
    holder.send(command)
    return holder.wait_count(answer, 1, start=mark)[0][1]


def renewed_after(holder: ChildProcess, moment: float, timeout: float) -> float:
    """Wait for the holder to print a lease deadline after ``moment``; that deadline."""
    until, start = time.monotonic() + timeout, 0
    while True:
        line, found = holder.wait_count(r"^deadline \S+ (\S+)$", 1, max(0.01, until - time.monotonic()),
                                        start=start)[0]
        if float(found.group(1)) > moment:
            return float(found.group(1))
        start = line.index + 1
