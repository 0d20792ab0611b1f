"""Revocation: the landlord ends a lease early; a holder that asked hears at once, others at their next renewal."""

from __future__ import annotations

import time
from typing import Any

import Pyro5.api
import pytest

from landlord import (
    FOREVER,
    FakeClock,
    Landlord,
    LandlordLease,
    LeaseDeniedError,
    LeaseDurationPolicy,
    LeaseRenewalEvent,
    LeaseRenewalManager,
    UnknownLeaseError,
)
from landlord.grantor.hooks import LeaseHooks
from landlord.grantor.resource import LeasedResource
from landlord.holder.revocations import RevocationReceiver
from landlord.testing import Recorder, ServingDaemon


class Revocations(LeaseHooks):
    def __init__(self) -> None:
        self.told: list[tuple[Any, str]] = []

    def revoked(self, leased: LeasedResource, reason: str) -> None:
        self.told.append((leased.resource, reason))


def test_revoke_frees_at_once_and_a_later_renewal_is_denied_with_the_reason(clock: FakeClock) -> None:
    freed: Recorder[str] = Recorder()
    hooks = Revocations()
    landlord = Landlord(clock=clock, reaper="lazy", on_expire=freed, hooks=hooks)
    lease = landlord.new_lease("room 101", 60)
    landlord.attach(lease.cookie, "key 101")
    other = landlord.new_lease("room 102", 60)
    landlord.revoke(lease.cookie, "the building is closing")
    assert freed.items == ["room 101", "key 101"]
    assert hooks.told == [("room 101", "the building is closing")]
    with pytest.raises(LeaseDeniedError, match="revoked by the landlord: the building is closing"):
        landlord.renew(lease.cookie, 60)
    result = landlord.renew_all([lease.cookie, other.cookie], [60, 60])
    assert result.granted[1] == 60 and isinstance(result.denied[0], LeaseDeniedError)
    with pytest.raises(UnknownLeaseError):
        landlord.revoke(lease.cookie, "again")


def test_bad_revocations_and_listeners_change_nothing(clock: FakeClock) -> None:
    landlord = Landlord(clock=clock, reaper="lazy")
    lease = landlord.new_lease("room", 60)
    with pytest.raises(TypeError):
        landlord.revoke(lease.cookie, 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at most"):
        landlord.revoke(lease.cookie, "x" * 1001)
    with pytest.raises(UnknownLeaseError):
        landlord.revoke("x" * 22, "no such lease")
    for listener, error in [(42, TypeError), ("not a uri", ValueError), ("PYRONAME:x", ValueError),
                            ("PYRO:x@h:1" + "x" * 600, ValueError)]:
        with pytest.raises(error):
            landlord.listen(lease.cookie, listener)  # type: ignore[arg-type]
    with pytest.raises(UnknownLeaseError):
        landlord.listen("y" * 22, "PYRO:obj@127.0.0.1:9")
    assert landlord.renew(lease.cookie, 60) == 60  # still there, unchanged


def test_a_renewal_manager_without_a_receiver_learns_at_the_next_renewal(clock: FakeClock) -> None:
    landlord = Landlord(policy=LeaseDurationPolicy(maximum=30), clock=clock, reaper="lazy")
    lease = landlord.new_lease("room", 30)
    lost: Recorder[LeaseRenewalEvent] = Recorder()
    with LeaseRenewalManager(clock=clock) as renewals:
        renewals.renew_for(lease, FOREVER, lost)
        landlord.revoke(lease.cookie, "maintenance")
        assert renewals._wait_idle()
        assert lost.items == []  # not yet: nothing told it
        clock.advance(10)  # a third of the term: the renewal goes out, and is denied
        [event] = lost.wait_for(1)
    assert isinstance(event.exception, LeaseDeniedError) and "maintenance" in str(event.exception)


def test_a_listening_holder_hears_of_a_revocation_at_once(daemon: ServingDaemon) -> None:
    class Rooms(Landlord):
        @Pyro5.api.expose
        def rent(self, room: str) -> LandlordLease:
            return self.new_lease(room, 60)

    rooms = Rooms(policy=LeaseDurationPolicy(maximum=60))
    uri = daemon.register(rooms)
    lost: Recorder[LeaseRenewalEvent] = Recorder()
    with RevocationReceiver(host="127.0.0.1") as receiver, \
            LeaseRenewalManager(revocations=receiver) as renewals:
        with Pyro5.api.Proxy(uri) as proxy:
            lease = proxy.rent("101")
        renewals.renew_for(lease, FOREVER, lost)
        assert receiver.watching(lease, timeout=10)
        rooms.revoke(lease.cookie, "double booked")
        [event] = lost.wait_for(1)
        assert event.lease == lease and "double booked" in str(event.exception)
        assert len(renewals) == 0 and len(receiver) == 0
    rooms.close()


def test_a_holder_in_another_process_from_its_landlord_hears_at_once(spawn: Any) -> None:
    server = spawn("served_landlord.py")
    uri = server.expect("URI:")
    lost: Recorder[LeaseRenewalEvent] = Recorder()
    with RevocationReceiver(host="127.0.0.1") as receiver, \
            LeaseRenewalManager(revocations=receiver) as renewals, Pyro5.api.Proxy(uri) as proxy:
        lease = proxy.rent("101", 60)
        renewals.renew_for(lease, FOREVER, lost)
        assert receiver.watching(lease, timeout=10)
        asked = time.monotonic()
        proxy.evict(lease.cookie, "fire drill")
        [event] = lost.wait_for(1)
        heard = time.monotonic() - asked
        server.wait_for("^freed 101$")
    assert isinstance(event.exception, LeaseDeniedError) and "fire drill" in str(event.exception)
    assert heard < 5, f"heard after {heard:.1f} s; the next renewal was 20 s away"


def test_a_notice_for_a_lease_not_watched_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    with RevocationReceiver(host="127.0.0.1") as receiver, Pyro5.api.Proxy(receiver.uri) as inbox:
        with caplog.at_level("INFO", logger="landlord.revocation"):
            inbox.revoked("z" * 22, "forged")
        with pytest.raises(TypeError):
            inbox.revoked(1, 2)
    assert "not watched" in caplog.text


class _Told:
    """An in-process listener that records what it is told."""

    def __init__(self) -> None:
        self.told: Recorder[tuple[str, str]] = Recorder()

    def revoked(self, cookie: str, reason: str) -> None:
        self.told.record((cookie, reason))


def test_a_listener_that_hangs_holds_up_its_own_lane_and_no_other() -> None:
    import socket

    from landlord.grantor.revocations import Notices

    with socket.socket() as blackhole:  # accepts connections (the kernel does), never answers
        blackhole.bind(("127.0.0.1", 0))
        blackhole.listen(8)
        hung = f"PYRO:holder@127.0.0.1:{blackhole.getsockname()[1]}"
        notices = Notices(timeout=3.0)
        live = _Told()
        started = time.monotonic()
        try:
            notices.post(hung, "revoked", ("c1", "r"), "c1 was revoked", lane="stranger")
            notices.post(live, "revoked", ("c2", "first"), "c2 was revoked", lane="friend")
            notices.post(live, "revoked", ("c3", "second"), "c3 was revoked", lane="friend")
            assert live.told.wait_for(2) == [("c2", "first"), ("c3", "second")]  # in order, and not held up
            assert time.monotonic() - started < 3.0
        finally:
            notices.close()
