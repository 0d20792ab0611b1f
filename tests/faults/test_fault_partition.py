"""A network partition between a holder and its landlord, made by a TCP proxy on loopback.

The landlord runs in its own process with its daemon's NAT address set to the
proxy, so the URI its leases carry leads through the proxy; the test's own
control calls go to the daemon's real port and never see the partition.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import Pyro5.api
import Pyro5.errors
import pytest
from conftest import free_port
from faultkit import (
    CALL_TIMEOUT,
    Journal,
    LandlordProcess,
    Listener,
    RecordingLease,
    Spawn,
    call_timeout,
    start_landlord,
)
from tcpproxy import Mode, TcpProxy

from landlord import FOREVER, LandlordLease, LeaseRenewalManager, UnknownLeaseError

__all__ = ["call_timeout"]  # a fixture, imported for pytest

# Leases here are short (renewed a third into their term), so the tests take
# seconds, not minutes.
RETRY = 0.2


@pytest.fixture
def behind_proxy(spawn: Spawn) -> Iterator[tuple[TcpProxy, LandlordProcess]]:
    """A landlord process whose leases lead through a TCP proxy (in PASS mode to begin with)."""
    port = free_port()
    with TcpProxy(("127.0.0.1", port)) as proxy:
        landlord = start_landlord(spawn, "--natport", str(proxy.port), port=port)
        assert landlord.uri == f"PYRO:rooms@127.0.0.1:{proxy.port}"
        yield proxy, landlord


def rent(landlord: LandlordProcess, resource: str, term: float) -> LandlordLease:
    with Pyro5.api.Proxy(landlord.direct) as control:
        lease: LandlordLease = control.rent(resource, term)
    assert lease.landlord == landlord.uri  # the way back to the landlord is through the proxy
    return lease


@pytest.mark.parametrize("partition", [Mode.DROP, Mode.HOLD])
def test_a_partition_shorter_than_the_lease_loses_nothing(
        behind_proxy: tuple[TcpProxy, LandlordProcess], call_timeout: float, partition: Mode) -> None:
    """The link goes dead (bytes thrown away, or held back as TCP would) as the lease is
    handed to the renewal manager; its renewal times out; the link heals before the
    lease ends. The listener hears nothing, the landlord frees nothing, the renewal
    manager renews after healing and the lease is still renewable."""
    proxy, landlord = behind_proxy
    term = 4.0
    journal, listener = Journal(), Listener()
    lease = RecordingLease(rent(landlord, "short", term), journal)
    with LeaseRenewalManager(retry_initial=RETRY) as manager:
        proxy.mode = partition
        cut_at = time.monotonic()
        manager.renew_for(lease, FOREVER, listener, renew_duration=term)
        failed = journal.wait_for_call(lease.landlord_id, ok=False, since=cut_at)
        assert isinstance(failed.error, Pyro5.errors.TimeoutError)
        assert failed.ended - failed.started >= CALL_TIMEOUT * 0.9  # timed out, as configured
        assert not lease.expired  # the test relies on healing in time
        proxy.mode = Mode.PASS
        healed_at = time.monotonic()
        journal.wait_for_call(lease.landlord_id, ok=True, since=healed_at)

        print(f"{partition.value} partition of {healed_at - cut_at:.2f}s in a {term}s lease: nothing lost")
        assert healed_at - cut_at < term
        assert listener.notices == [] and len(manager) == 1
        assert lease.renew(term) == term
    assert not any(line.startswith("freed") for line in landlord.child.output)


def test_a_partition_longer_than_the_lease_is_told_once_after_it_expires(
        behind_proxy: tuple[TcpProxy, LandlordProcess], call_timeout: float) -> None:
    """The link goes dead and stays dead past the lease's end. The renewal manager keeps
    trying (a timeout is indefinite) and tells its listener exactly once, with the
    communication error, once the lease has expired: not at the first failure, and not
    before the landlord's own expiry (give or take the request's one-way trip, which the
    holder's clock rightly counts against it). After healing, the landlord says the
    lease is unknown, and the listener hears nothing more."""
    proxy, landlord = behind_proxy
    term = 2.0
    journal, listener = Journal(), Listener()
    lease = RecordingLease(rent(landlord, "long", term), journal)
    with LeaseRenewalManager(retry_initial=RETRY) as manager:
        manager.renew_for(lease, FOREVER, listener, renew_duration=term)
        journal.wait_for_call(lease.landlord_id, ok=True, since=0)
        proxy.mode = Mode.DROP
        cut_at = time.monotonic()
        with Pyro5.api.Proxy(landlord.direct) as control:
            expires_at = control.expiration_of("long")  # final: no renewal gets through now
        [notice] = listener.wait_for(1, timeout=term + 10)
        freed_at = landlord.freed("long")
        failures_before_notice = [c for c in journal.calls(since=cut_at) if c.ended <= notice.monotonic]
        proxy.mode = Mode.PASS
        with pytest.raises(UnknownLeaseError):
            lease.renew(term)  # a definite answer, now that the landlord can be reached
        assert len(manager) == 0

    print(f"partition from {cut_at - expires_at:+.3f}s; landlord freed it at {freed_at - expires_at:+.3f}s; "
          f"holder told at {notice.monotonic - expires_at:+.3f}s after {len(failures_before_notice)} "
          f"failed calls (times from the landlord's expiry)")
    assert isinstance(notice.event.exception, Pyro5.errors.CommunicationError)
    assert notice.event.lease is lease
    assert notice.wall >= lease.expiration  # expired by the holder's clock...
    assert notice.monotonic >= expires_at - 0.05  # ...which is the landlord's, less a one-way trip
    assert failures_before_notice and all(not c.ok for c in failures_before_notice)
    assert len(listener.notices) == 1


def test_a_slow_link_costs_the_holder_the_round_trip_not_the_lease(
        behind_proxy: tuple[TcpProxy, LandlordProcess], call_timeout: float) -> None:
    """With 0.15 s added each way, a renewal still succeeds, and its new expiration is
    counted from when the request was sent: the holder's view is shorter than the
    landlord's by at least the one-way delay, never longer. A delay beyond the call
    timeout is a timeout, and the old expiration stays."""
    proxy, landlord = behind_proxy
    lease = rent(landlord, "slow", 30.0)
    proxy.delay, proxy.mode = 0.15, Mode.DELAY
    sent = time.time()
    assert lease.renew(30.0) == 30.0
    answered = time.time()
    assert answered - sent >= 0.3
    assert sent <= lease.expiration - 30.0 <= sent + 0.05
    with Pyro5.api.Proxy(landlord.direct) as control:  # not delayed
        landlord_left = control.expiration_of("slow") - time.monotonic()
    assert landlord_left >= lease.remaining + 0.15 - 0.05

    proxy.delay = CALL_TIMEOUT + 0.5
    before = lease.expiration
    with pytest.raises(Pyro5.errors.TimeoutError):
        lease.renew(30.0)
    assert lease.expiration == before
