"""LeaseRenewalManager against real daemons and real processes, on the real clock.

The fake-clock tests in test_renewal.py pin the schedule down; these show it
holds up over Pyro5: batching on the wire, a landlord that dies, a landlord
that freezes for less than the lease term, a landlord that says no.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import Pyro5.api
import Pyro5.errors
import pytest
from conftest import Child, free_port

from landlord import (
    FOREVER,
    Landlord,
    LandlordLease,
    Lease,
    LeaseDeniedError,
    LeaseDurationPolicy,
    LeasePolicy,
    LeaseRenewalEvent,
    LeaseRenewalManager,
    RenewResults,
    set_call_timeout,
)
from landlord.grantor.manager import LeasedResource
from landlord.holder.landlordlease import CALL_BATCH
from landlord.holder.renewal import FAILING


class Listener:
    """Records LeaseRenewalEvents with the wall-clock time each arrived."""

    def __init__(self) -> None:
        self.events: list[tuple[float, LeaseRenewalEvent]] = []
        self.arrived = threading.Event()

    def __call__(self, event: LeaseRenewalEvent) -> None:
        self.events.append((time.time(), event))
        self.arrived.set()


class BatchLandlord(Landlord):
    """Grants many leases per call, and counts the renewal calls it gets."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.single_renewals = 0
        self.batch_sizes: list[int] = []
        self.renewed_at: list[float] = []  # time.monotonic() of each renew_all
        self.renewed = threading.Condition()

    @Pyro5.api.expose
    def rent_many(self, count: int, duration: float) -> list[LandlordLease]:
        return [self.new_lease(i, duration) for i in range(count)]

    @Pyro5.api.expose
    def renew(self, cookie: str, duration: float) -> float:
        self.single_renewals += 1
        return super().renew(cookie, duration)

    @Pyro5.api.expose
    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> RenewResults:
        results = super().renew_all(cookies, durations)
        with self.renewed:
            self.batch_sizes.append(len(cookies))
            self.renewed_at.append(time.monotonic())
            self.renewed.notify_all()
        return results

    def wait_for_renewals(self, count: int, timeout: float) -> None:
        with self.renewed:
            assert self.renewed.wait_for(lambda: sum(self.batch_sizes) >= count, timeout), self.batch_sizes


@pytest.fixture
def short_call_timeout() -> Iterator[None]:
    set_call_timeout(0.5)
    yield
    set_call_timeout(30.0)


def test_ten_thousand_leases_over_three_landlords_one_call_per_batch(daemon: Any, close_later: list) -> None:
    # Each renewal goes out at half the remaining term (2 s before the end):
    # room for a loaded CI machine to be slow with a 3,334-lease batch.
    term, rounds = 4.0, 3
    landlords = [BatchLandlord(policy=LeaseDurationPolicy(maximum=term)) for _ in range(3)]
    close_later.extend(landlords)
    leases: list[LandlordLease] = []
    for landlord, count in zip(landlords, (3334, 3333, 3333)):
        with Pyro5.api.Proxy(daemon.register(landlord)) as proxy:
            leases.extend(proxy.rent_many(count, term))
    listener = Listener()
    with LeaseRenewalManager() as manager:
        for lease in leases:
            manager.renew_for(lease, FOREVER, listener)
        for landlord in landlords:
            landlord.wait_for_renewals(rounds * len(landlord), timeout=60)
    assert listener.events == []
    for landlord in landlords:
        assert landlord.single_renewals == 0
        assert len(landlord) == len(landlord.manager) and len(landlord) >= 3333  # none expired
        # one call per batch of CALL_BATCH: a round is four calls (3,334 leases), or eight when
        # grants straddled the batch window
        per_round = math.ceil(len(landlord) / CALL_BATCH)
        assert max(landlord.batch_sizes) <= CALL_BATCH
        assert len(landlord.batch_sizes) <= (2 * rounds + 2) * per_round, landlord.batch_sizes


def test_a_killed_landlord_is_reported_after_the_lease_expires_not_before(
        spawn: Callable[..., Child], short_call_timeout: None) -> None:
    server = spawn("room_landlord.py", str(free_port()))
    with Pyro5.api.Proxy(server.expect("URI:")) as rooms:
        lease = rooms.rent("doomed", 2.0)
    listener = Listener()
    with LeaseRenewalManager(retry_initial=0.1) as manager:
        manager.renew_for(lease, FOREVER, listener)
        server.kill()
        assert listener.arrived.wait(15)
        assert len(manager) == 0
    [(told_at, event)] = listener.events
    assert isinstance(event.exception, Pyro5.errors.CommunicationError)
    assert event.lease is lease and told_at >= lease.expiration  # not before it had really expired


class ObservedLease(LandlordLease):
    """A LandlordLease that lets a test wait for the outcome of each batch renewal."""

    __slots__ = ()
    outcomes: list[str] = []
    changed = threading.Condition()

    def renew_batch(self, leases: Sequence[LandlordLease], durations: Sequence[float]) -> dict[Lease, Exception]:
        outcome = "failed"
        try:
            failures = super().renew_batch(leases, durations)
            outcome = "renewed" if not failures else "failed"
            return failures
        finally:
            with ObservedLease.changed:
                ObservedLease.outcomes.append(outcome)
                ObservedLease.changed.notify_all()

    @classmethod
    def wait_for(cls, outcome: str, timeout: float = 15) -> None:
        with cls.changed:
            assert cls.changed.wait_for(lambda: outcome in cls.outcomes, timeout), cls.outcomes


def test_a_landlord_frozen_for_less_than_the_term_loses_nothing(
        spawn: Callable[..., Child], short_call_timeout: None) -> None:
    server = spawn("room_landlord.py", str(free_port()))
    with Pyro5.api.Proxy(server.expect("URI:")) as rooms:
        rented = rooms.rent("kept", 6.0)
    lease = ObservedLease(rented.cookie, rented.landlord, rented.landlord_id, rented.expiration)
    ObservedLease.outcomes.clear()
    listener = Listener()
    os.kill(server.process.pid, signal.SIGSTOP)  # alive but silent, as across a partition
    try:
        with LeaseRenewalManager(retry_initial=0.2) as manager:
            manager.renew_for(lease, FOREVER, listener)
            ObservedLease.wait_for("failed")  # the renewal 4.4 s in timed out...
            assert not lease.expired
            os.kill(server.process.pid, signal.SIGCONT)  # ...and the landlord is back before the 6 s are up
            ObservedLease.wait_for("renewed")
            assert listener.events == [] and len(manager) == 1
            assert lease.remaining > 4
    finally:
        os.kill(server.process.pid, signal.SIGCONT)


def test_a_denial_over_the_wire_is_reported_once_at_once(daemon: Any, close_later: list) -> None:
    class NoRenewals(LeasePolicy):
        def lease_for(self, resource: LeasedResource, requested: float) -> Any:
            resource.expiration = self.clock.monotonic() + requested
            return self._make_lease(resource, requested)

        def renew(self, resource: LeasedResource, requested: float) -> float:
            raise LeaseDeniedError("this landlord renews nothing")

    landlord = BatchLandlord(policy=NoRenewals())
    close_later.append(landlord)
    with Pyro5.api.Proxy(daemon.register(landlord)) as proxy:
        [lease] = proxy.rent_many(1, 3.0)
    listener = Listener()
    with LeaseRenewalManager() as manager:
        manager.renew_for(lease, FOREVER, listener)
        assert listener.arrived.wait(10)
        assert len(manager) == 0
        assert manager._endpoints.answering(manager._endpoints.lane_of(lease, None))  # a refusal is an answer
    [(told_at, event)] = listener.events
    assert isinstance(event.exception, LeaseDeniedError)
    assert told_at < lease.expiration  # definite: told at once, not at expiry


class SilentServer:
    """A TCP server that accepts every connection and never says a word: a landlord hung
    behind a partition, as a holder sees it (its kernel takes the connection, nothing answers)."""

    def __init__(self) -> None:
        import socket

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted: list[float] = []
        self.connections: list[Any] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return  # closed
            self.accepted.append(time.monotonic())
            self.connections.append(connection)

    def close(self) -> None:
        self.sock.close()
        for connection in self.connections:
            connection.close()


def test_a_renewal_into_silence_gives_up_in_time_and_the_loss_is_told_when_the_term_ends(
        caplog: pytest.LogCaptureFixture) -> None:
    """The call timeout is 30 s, the lease 3 s. Each attempt waits at most half of what its
    lease has left, then the connection is dropped and the next attempt made on a fresh one,
    so the holder hears of the loss when the term ends, not 30 s later; each failure is a WARNING."""
    silent = SilentServer()
    try:
        lease = LandlordLease("cookie-of-a-hung-landlord", f"PYRO:rooms@127.0.0.1:{silent.port}", "hung",
                              time.time() + 3.0, term=3.0)
        listener = Listener()
        started = time.monotonic()
        with caplog.at_level("WARNING", logger="landlord.renewal"), \
                LeaseRenewalManager(retry_initial=0.1) as manager:
            manager.renew_for(lease, FOREVER, listener)
            assert listener.arrived.wait(10), "the loss was never told"
        told_after = time.monotonic() - started
        [(told_at, event)] = listener.events
        assert isinstance(event.exception, Pyro5.errors.TimeoutError)
        assert told_at >= lease.expiration  # not before the term ended...
        assert told_after < 3.0 + 0.5, told_after  # ...and promptly then, not after the 30 s call timeout
        # the first attempt a third into the term, then ever shorter ones, each on a fresh connection
        assert len(silent.accepted) >= 3 and silent.accepted[0] - started == pytest.approx(1.0, abs=0.3)
        assert sum("renewing 1 of 1 lease(s)" in r.getMessage() for r in caplog.records
                   if r.levelname == "WARNING") >= 3
    finally:
        silent.close()


@pytest.mark.slow
def test_hung_landlords_at_more_addresses_than_workers_keep_no_worker_from_one_that_answers(
        daemon: Any, close_later: list) -> None:
    """Twelve addresses that take connections and never answer, named by 24 leases of 24
    landlords, each attempt allowed 10 s (the call timeout): more hung calls than the manager
    has workers. The canary's landlord answered before: its renewals keep their workers."""
    term = 3.0
    rooms = BatchLandlord(policy=LeaseDurationPolicy(maximum=term))
    close_later.append(rooms)
    with Pyro5.api.Proxy(daemon.register(rooms)) as proxy:
        [canary] = proxy.rent_many(1, term)
    listener = Listener()
    silent = [SilentServer() for _ in range(12)]
    set_call_timeout(10.0)  # each hung attempt may wait three of the canary's terms (and the test ends sooner)
    try:
        with LeaseRenewalManager(workers=4, doubtful_workers=2) as manager:
            manager.renew_for(canary, FOREVER, listener)
            rooms.wait_for_renewals(1, timeout=10)  # its landlord has answered
            attacked = time.monotonic()
            for number in range(24):  # due at once (a third of the term is long past), never answered
                manager.renew_for(LandlordLease(f"hung-{number:016d}", f"PYRO:rooms@127.0.0.1:"
                                                f"{silent[number % 12].port}", f"hung-{number}",
                                                time.time() + 1000, term=3600), FOREVER, listener)
            rooms.wait_for_renewals(6, timeout=4 * term)  # five more rounds of the canary's
            assert sum(bool(server.accepted) for server in silent) >= 2  # the hung calls hold their workers
            assert listener.events == [] and len(rooms) == 1
            for server in silent:  # their hung calls end now
                server.close()
    finally:
        set_call_timeout(30.0)
        for server in silent:
            server.close()
    times = [attacked] + [at for at in rooms.renewed_at if at > attacked]
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    assert max(gaps) < term * 2 / 3, gaps  # renewed a third into each term, as without the attack


@pytest.mark.slow
def test_once_hung_landlords_have_failed_a_landlord_never_heard_from_is_renewed_at_once(
        daemon: Any, close_later: list) -> None:
    """Four silent addresses (twice the workers for landlords not yet heard from), each named by
    30 leases of landlords of their own, each attempt allowed 5 s. Once each has failed, their
    calls queue with the failing: a canary whose landlord the manager has never reached, added
    then, is renewed a third into each of its 3 s terms."""
    term = 3.0
    rooms = BatchLandlord(policy=LeaseDurationPolicy(maximum=term))
    close_later.append(rooms)
    listener = Listener()
    silent = [SilentServer() for _ in range(4)]
    set_call_timeout(5.0)
    try:
        with LeaseRenewalManager(workers=4, doubtful_workers=2) as manager:
            hung = [LandlordLease(f"hung-{number:016d}", f"PYRO:rooms@127.0.0.1:{silent[number % 4].port}",
                                  f"hung-{number}", time.time() + 1000, term=3600) for number in range(120)]
            for lease in hung:  # due at once, never answered
                manager.renew_for(lease, FOREVER, listener)
            lanes = {manager._endpoints.lane_of(lease, None) for lease in hung}
            with manager._cond:
                assert manager._cond.wait_for(
                    lambda: all(manager._endpoints.standing(lane) == FAILING for lane in lanes), 30)
            with Pyro5.api.Proxy(daemon.register(rooms)) as proxy:
                [canary] = proxy.rent_many(1, term)
            added = time.monotonic()
            manager.renew_for(canary, FOREVER, listener)
            rooms.wait_for_renewals(4, timeout=4 * term)
            assert listener.events == [] and len(rooms) == 1
            for server in silent:  # their hung calls end now
                server.close()
    finally:
        set_call_timeout(30.0)
        for server in silent:
            server.close()
    times = [added] + rooms.renewed_at
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    assert max(gaps) < term * 2 / 3, gaps  # the first a third into its term, as without the attack
