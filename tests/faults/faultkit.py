"""What the fault tests share: landlord processes, a journal of renewal calls, a listener, a
short call timeout.

Not a conftest.py on purpose: the tests import ``from conftest import ...``
(tests/conftest.py, found through sys.path), and with no ``__init__.py`` a
second module named ``conftest`` here would shadow it for the whole suite.
Fixtures defined here are imported by the test modules that use them.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from conftest import Child, free_port

from landlord import LandlordLease, Lease, LeaseRenewalEvent, get_call_timeout, set_call_timeout
from landlord.testing import Recorder

# How long a remote lease call may take in these tests: long enough for an
# answer on a loaded two-core machine, short enough that a hang shows quickly.
CALL_TIMEOUT = 0.5

Spawn = Callable[..., Child]


@pytest.fixture
def call_timeout() -> Iterator[float]:
    """Remote lease calls time out after ``CALL_TIMEOUT`` seconds for this test (restored after)."""
    before = get_call_timeout()
    set_call_timeout(CALL_TIMEOUT)
    try:
        yield CALL_TIMEOUT
    finally:
        set_call_timeout(before)


@pytest.fixture
def short_call_timeout() -> Iterator[None]:
    """Remote lease calls time out after 2 s for this test (restored after): a server killed and
    started again is noticed soon, one under load still answers."""
    before = get_call_timeout()
    set_call_timeout(2.0)
    try:
        yield
    finally:
        set_call_timeout(before)


@dataclasses.dataclass
class LandlordProcess:
    """A tests/processes/fault_landlord.py child: its URIs and how to stop or freeze it."""

    child: Child
    port: int
    uri: str  # what its leases carry (through a proxy, if it sits behind one)
    direct: str  # its own port: for a test's control calls

    @property
    def pid(self) -> int:
        return self.child.pid

    def freed(self, resource: str, timeout: float = 20) -> float:
        """Wait for ``resource`` to be freed by expiry; when it was, on ``time.monotonic()``."""
        return float(self.child.wait_for(rf"^freed {resource} (\S+)$", timeout).group(1))


def start_landlord(spawn: Spawn, *options: str, port: int | None = None) -> LandlordProcess:
    """Start tests/processes/fault_landlord.py (on ``port``, or a free one) and wait until it serves."""
    port = port if port is not None else free_port()
    child = spawn("fault_landlord.py", "--port", str(port), *options)
    direct = child.expect("DIRECT:")
    return LandlordProcess(child, port, child.expect("URI:"), direct)


class Frozen:
    """SIGSTOP a process for the ``with`` block: a real hang. SIGCONT on leaving, whatever happens."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def __enter__(self) -> Frozen:
        os.kill(self.pid, signal.SIGSTOP)
        return self

    def thaw(self) -> None:
        """Let it run again now (leaving the block does it again, harmlessly)."""
        try:
            os.kill(self.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass

    def __exit__(self, *exc_info: object) -> None:
        self.thaw()


# -- what the renewal manager sends ----------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Call:
    """One renewal call a renewal manager made, and how it ended (times on ``time.monotonic()``)."""

    landlord_id: str
    leases: int
    started: float
    ended: float
    error: BaseException | None  # the whole call failed with this
    failures: dict[Any, Exception]  # leases the landlord refused one by one

    @property
    def ok(self) -> bool:
        return self.error is None and not self.failures


class Journal:
    """Every batch renewal sent through RecordingLease objects, for tests to wait on."""

    def __init__(self) -> None:
        self._calls: Recorder[Call] = Recorder()

    def record(self, call: Call) -> None:
        self._calls.record(call)

    def calls(self, landlord_id: str | None = None, *, since: float = -float("inf")) -> list[Call]:
        """The calls (to one landlord, started after ``since``), in the order they ended."""
        return [c for c in self._calls.items
                if (landlord_id is None or c.landlord_id == landlord_id) and c.started >= since]

    def wait_for(self, predicate: Callable[[Journal], bool], timeout: float, what: str) -> None:
        """Block until ``predicate(self)`` holds; fail the test if it has not within ``timeout``."""
        self._calls.wait_until(lambda calls: predicate(self), timeout, what=what)

    def wait_for_call(self, landlord_id: str, *, ok: bool, since: float, timeout: float = 15) -> Call:
        """The first call to ``landlord_id`` started after ``since`` that succeeded (or failed)."""
        def found(journal: Journal) -> bool:
            return any(c.ok == ok for c in journal.calls(landlord_id, since=since))

        self.wait_for(found, timeout, f"a {'successful' if ok else 'failed'} call to {landlord_id[:8]}")
        return next(c for c in self.calls(landlord_id, since=since) if c.ok == ok)


class RecordingLease(LandlordLease):
    """A LandlordLease whose batch renewals (what a renewal manager sends) go into a journal."""

    __slots__ = ("_journal",)

    def __init__(self, lease: LandlordLease, journal: Journal) -> None:
        super().__init__(lease.cookie, lease.landlord, lease.landlord_id, lease.expiration)
        self._journal = journal

    def renew_batch(self, leases: Sequence[LandlordLease], durations: Sequence[float]) -> dict[Lease, Exception]:
        started = time.monotonic()
        try:
            failures = super().renew_batch(leases, durations)
        except Exception as exc:
            self._journal.record(Call(self.landlord_id, len(leases), started, time.monotonic(), exc, {}))
            raise
        self._journal.record(Call(self.landlord_id, len(leases), started, time.monotonic(), None, failures))
        return failures


# -- what the holder is told ----------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Notice:
    """A LeaseRenewalEvent and when it arrived, on both of the holder's clocks."""

    event: LeaseRenewalEvent
    wall: float
    monotonic: float


class Losses:
    """A renewal listener: every lease it hears of was lost."""

    def __init__(self) -> None:
        self.events: list[LeaseRenewalEvent] = []

    def __call__(self, event: LeaseRenewalEvent) -> None:
        self.events.append(event)


class Listener:
    """A renewal manager listener that keeps every notice."""

    def __init__(self) -> None:
        self._notices: Recorder[Notice] = Recorder()

    def __call__(self, event: LeaseRenewalEvent) -> None:
        self._notices.record(Notice(event, time.time(), time.monotonic()))

    @property
    def notices(self) -> list[Notice]:
        return self._notices.items

    def wait_for(self, count: int, timeout: float = 15) -> list[Notice]:
        return self._notices.wait_for(count, timeout)
