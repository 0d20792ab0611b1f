"""kill -9 of a landlord, and of a lookup service, that keep their leases in a store.

Restarted on the same port with the same store, each has every lease back:
the holders' renewal managers carry on with the same leases, and hear of no
loss; a join manager does not register again.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

import Pyro5.api
import pytest

from conftest import Child, free_port
from landlord import FOREVER, LeaseRenewalEvent, LeaseRenewalManager, set_call_timeout

pytestmark = pytest.mark.slow


class Losses:
    """A renewal listener: every lease it hears of was lost."""

    def __init__(self) -> None:
        self.events: list[LeaseRenewalEvent] = []

    def __call__(self, event: LeaseRenewalEvent) -> None:
        self.events.append(event)


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``condition`` (state held by other threads and processes) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.05)


@pytest.fixture
def short_call_timeout() -> Any:
    set_call_timeout(2.0)
    yield
    set_call_timeout(30.0)


def test_a_landlord_killed_and_restarted_on_its_store_loses_no_lease(
        spawn: Callable[..., Child], tmp_path: Path, short_call_timeout: None) -> None:
    port, store = str(free_port()), str(tmp_path / "rooms.sqlite")
    server = spawn("room_landlord.py", port, store)
    server.expect("took back")
    with Pyro5.api.Proxy(server.expect("URI:")) as rooms:
        leases = [rooms.rent(f"room {n}", 4.0) for n in range(200)]
    losses = Losses()
    with LeaseRenewalManager(round_trip_allowance=1.0, retry_initial=0.1) as manager:
        for lease in leases:
            manager.renew_for(lease, FOREVER, losses, renew_duration=4.0)
        server.kill()  # SIGKILL: no chance to write anything more
        killed_at = time.time()
        restarted = spawn("room_landlord.py", port, store)
        assert restarted.expect("took back") == "200"
        with Pyro5.api.Proxy(restarted.expect("URI:")) as rooms:
            back_at = time.time()
            # A 4 s term counted from a request sent after the kill: only the restarted landlord can have granted it.
            wait_until(lambda: min(lease.expiration for lease in leases) > killed_at + 4.0, 15,
                       "every lease renewed after the restart")
            assert rooms.held() == 200
        assert losses.events == [] and len(manager) == 200
    assert not [line for line in restarted.output + server.output if line.startswith("freed")]
    assert back_at - killed_at < 4.0  # the restart was quicker than the leases' term (else they would be gone)
