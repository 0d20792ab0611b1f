"""The pinging of the name server face (lookup.service.pyrons.pinger) against real addresses: a Pyro5
daemon that answers, a port nobody listens on, and a listener that never answers (the timeout)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import Pyro5.api
import pytest
from conftest import free_port

from landlord.testing import Recorder
from lookup.service.pyrons.liveness import PingTerms
from lookup.service.pyrons.pinger import DaemonPinger, ping_daemon

TERMS = PingTerms(interval=0.2, timeout=0.15, retry=0.05, misses=2)


@pytest.fixture
def daemon_address() -> Iterator[str]:
    daemon = Pyro5.api.Daemon(host="127.0.0.1")
    loop = threading.Thread(target=daemon.requestLoop, daemon=True)
    loop.start()
    yield daemon.locationStr
    daemon.shutdown()
    loop.join(10)
    daemon.close()


@pytest.fixture
def silent_address() -> Iterator[str]:
    """A listener that takes connections (the kernel's backlog) and never says a word."""
    with socket.create_server(("127.0.0.1", 0), backlog=16) as listener:
        yield f"127.0.0.1:{listener.getsockname()[1]}"


def test_ping_daemon_reaches_a_pyro5_daemon_and_fails_elsewhere(daemon_address: str, silent_address: str) -> None:
    ping_daemon(daemon_address, 2.0)
    with pytest.raises(Exception):  # noqa: B017  (refused: whichever error Pyro5 makes of it)
        ping_daemon(f"127.0.0.1:{free_port()}", 2.0)
    asked = time.monotonic()
    with pytest.raises(Exception):  # noqa: B017  (timed out)
        ping_daemon(silent_address, 0.3)
    assert time.monotonic() - asked < 2.0


def test_a_live_daemon_answers_and_dead_or_silent_ones_are_given_up(daemon_address: str,
                                                                    silent_address: str) -> None:
    answered: Recorder[str] = Recorder()
    dead: Recorder[str] = Recorder()
    refused = f"127.0.0.1:{free_port()}"
    pinger = DaemonPinger(TERMS, answered, dead, workers=2)
    try:
        started = time.monotonic()
        for address in (daemon_address, refused, silent_address):
            pinger.watch(address)
        assert sorted(dead.wait_for(2, timeout=10)) == sorted([refused, silent_address])
        assert time.monotonic() - started < TERMS.removal_bound + 2
        answered.wait_until(lambda heard: heard.count(daemon_address) >= 3, timeout=10)
        assert set(answered.items) == {daemon_address} and pinger.watched() == 1
    finally:
        pinger.close()


def test_a_forgotten_address_is_pinged_no_more(daemon_address: str) -> None:
    answered: Recorder[str] = Recorder()
    pinger = DaemonPinger(TERMS, answered, Recorder())
    other = daemon_address.replace("127.0.0.1", "localhost")  # the same daemon, another address to watch
    try:
        pinger.watch(daemon_address)
        answered.wait_for(1, timeout=10)
        pinger.forget(daemon_address)
        pinger.watch(other)
        answered.wait_until(lambda heard: heard.count(other) >= 3, timeout=10)  # three rounds later
        assert answered.items.count(daemon_address) <= 2  # at most the one in flight when it was forgotten
        assert pinger.watched() == 1
    finally:
        pinger.close()


def test_a_stranger_s_silent_addresses_never_delay_the_pings_of_daemons_that_answer() -> None:
    answered: Recorder[str] = Recorder()
    dead: Recorder[str] = Recorder()
    silent_pinged = threading.Event()

    def ping(address: str, timeout: float) -> None:
        if address.startswith("silent"):  # a host that never answers: the whole timeout, then a miss
            silent_pinged.set()
            threading.Event().wait(timeout)
            raise TimeoutError(address)

    pinger = DaemonPinger(TERMS, answered, dead, ping=ping, workers=4)
    try:
        pinger.watch("steady:1")
        answered.wait_for(1, timeout=10)  # it has answered: it is pinged from the pool of those that answer
        for i in range(200):  # 200 x 2 pings x 0.15 s on 2 workers: 30 s of pinging
            pinger.watch(f"silent:{i}")
        assert silent_pinged.wait(10)
        started = time.monotonic()
        answered.wait_until(lambda heard: len(heard) >= 6, timeout=5)
        assert time.monotonic() - started < 5 * TERMS.interval + 1.0  # on time, not behind the 200
        assert not dead.items  # none of the 200 given up yet: their pool is still at it
    finally:
        pinger.close()


def test_a_pinger_needs_a_worker_for_each_pool() -> None:
    with pytest.raises(ValueError):
        DaemonPinger(TERMS, Recorder(), Recorder(), workers=1)
