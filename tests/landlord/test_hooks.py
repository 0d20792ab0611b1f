"""Lifecycle hooks (landlord.grantor.hooks): every grant, renewal, denial and end is told, once, in batches;
and what became of each request for a name (acquired at once or after waiting, queued, refused, timed out)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from landlord import FakeClock, Landlord, LeaseDeniedError, LeasedResource, LeaseDurationPolicy, UnknownLeaseError
from landlord.grantor.hooks import HookFanout, LeaseHooks
from landlord.grantor.reapers import Reaper
from landlord.testing import Recorder


class Never(Reaper):
    """A reaper that never frees: renewals and cancels find the dead leases themselves."""

    def start(self, manager: object) -> None:
        pass


class Journal(LeaseHooks):
    """Writes down what it is told, resource by resource."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []
        self.served: list[int] = []

    def granted(self, leased: LeasedResource) -> None:
        self.events.append(("granted", leased.resource))

    def renewed(self, leased: Sequence[LeasedResource]) -> None:
        self.events.append(("renewed", sorted(each.resource for each in leased)))

    def denied(self, cookie: str | None, error: Exception) -> None:
        self.events.append(("denied", type(error).__name__))

    def cancelled(self, leased: LeasedResource) -> None:
        self.events.append(("cancelled", leased.resource))

    def expired(self, leased: Sequence[LeasedResource]) -> None:
        self.events.append(("expired", sorted(each.resource for each in leased)))

    def renewals_served(self, count: int, seconds: float) -> None:
        assert seconds >= 0
        self.served.append(count)


def test_each_change_is_told_once(clock: FakeClock) -> None:
    journal = Journal()
    landlord = Landlord(policy=LeaseDurationPolicy(maximum=10, lifetime=15), clock=clock, reaper="lazy",
                        hooks=journal)
    a, b, c = (landlord.new_lease(name, 10) for name in "abc")
    clock.advance(5)
    landlord.renew_all([a.cookie, b.cookie, "x" * 22], [5, 5, 5])
    clock.advance(4)
    assert landlord.renew(a.cookie, 10) == 6  # up to the cap
    with pytest.raises(LeaseDeniedError):
        landlord.renew(a.cookie, 10)
    landlord.cancel(b.cookie)
    clock.advance(6)
    assert len(landlord) == 0  # the lazy reaper frees a and c
    assert journal.events == [
        ("granted", "a"), ("granted", "b"), ("granted", "c"),
        ("renewed", ["a", "b"]), ("denied", "UnknownLeaseError"),
        ("renewed", ["a"]), ("denied", "LeaseDeniedError"),
        ("cancelled", "b"),
        ("expired", ["a", "c"]),
    ]
    assert journal.served == [3, 1, 1]


def test_a_refused_grant_is_told_as_a_denial(clock: FakeClock) -> None:
    class Refusing(LeaseDurationPolicy):
        def lease_for(self, resource: LeasedResource, requested: float) -> object:  # type: ignore[override]
            raise LeaseDeniedError("full")

    journal = Journal()
    landlord = Landlord(policy=Refusing(), clock=clock, reaper="lazy", hooks=[journal])
    with pytest.raises(LeaseDeniedError):
        landlord.new_lease("room")
    assert journal.events == [("denied", "LeaseDeniedError")]


def test_an_expired_lease_found_by_a_renewal_or_cancel_is_told_as_expired(clock: FakeClock) -> None:
    journal = Journal()
    landlord = Landlord(policy=LeaseDurationPolicy(maximum=10), clock=clock, reaper=Never(), hooks=journal)
    a, b = landlord.new_lease("a", 10), landlord.new_lease("b", 10)
    clock.advance(10)
    with pytest.raises(UnknownLeaseError):
        landlord.renew(a.cookie, 10)
    with pytest.raises(UnknownLeaseError):
        landlord.cancel(b.cookie)
    assert journal.events[2:] == [("expired", ["a"]), ("denied", "UnknownLeaseError"), ("expired", ["b"])]


def test_a_failing_hook_is_logged_and_the_others_are_still_told(clock: FakeClock,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    class Broken(LeaseHooks):
        def granted(self, leased: LeasedResource) -> None:
            raise RuntimeError("broken hook")

    journal = Journal()
    landlord = Landlord(clock=clock, reaper="lazy", hooks=[Broken(), journal])
    with caplog.at_level(logging.ERROR, logger="landlord.hooks"):
        lease = landlord.new_lease("room", 10)
    assert "broken hook" in caplog.text
    assert journal.events == [("granted", "room")]
    assert landlord.get_resource(lease.cookie) == "room"  # the grant stands


class Names(LeaseHooks):
    """Writes down what it is told of named leases."""

    def __init__(self) -> None:
        self.events: list[tuple[object, ...]] = []

    def name_acquired(self, name: str, token: int, waited: bool) -> None:
        self.events.append(("acquired", name, token, waited))

    def name_queued(self, name: str) -> None:
        self.events.append(("queued", name))

    def name_refused(self, name: str, error: Exception) -> None:
        self.events.append(("refused", name, type(error).__name__))

    def name_timed_out(self, name: str) -> None:
        self.events.append(("timed out", name))


def test_what_became_of_each_request_for_a_name_is_told(clock: FakeClock) -> None:
    class Broken(LeaseHooks):
        def name_acquired(self, name: str, token: int, waited: bool) -> None:
            raise RuntimeError("broken hook")

    names = Names()
    landlord = Landlord(clock=clock, reaper="lazy", hooks=[Broken(), names])
    holder, token = landlord.acquire("orders", 10)
    assert token is not None
    with pytest.raises(LeaseDeniedError):
        landlord.acquire("orders", 10)
    first, _ = landlord.acquire("orders", 10, wait=5.0)
    second, _ = landlord.acquire("orders", 10, wait=5.0)
    landlord.cancel(holder.cookie)  # released: the first waiter's turn
    landlord.cancel(second.cookie)  # a waiter that leaves: neither a grant nor a timeout
    assert names.events == [("acquired", "orders", token, False), ("refused", "orders", "LeaseDeniedError"),
                            ("queued", "orders"), ("queued", "orders"), ("acquired", "orders", token + 1, True)]
    assert landlord.name_token(first.cookie) == token + 1  # a broken hook undoes nothing


def test_a_wait_that_times_out_is_told_before_its_waiter_is_revoked(clock: FakeClock) -> None:
    names = Names()
    landlord = Landlord(clock=clock, reaper="lazy", hooks=names)
    landlord.acquire("orders", 10)
    waiter, _ = landlord.acquire("orders", 10, wait=2.0)
    revoked = Recorder[str]()

    class Watching(LeaseHooks):
        def revoked(self, leased: LeasedResource, reason: str) -> None:
            revoked(reason)

    landlord.manager.add_hooks(Watching())
    clock.advance(3)
    assert "too long" in revoked.wait_for(1)[0]
    assert names.events[-1] == ("timed out", "orders")


def test_hooks_must_be_lease_hooks() -> None:
    with pytest.raises(TypeError, match="LeaseHooks"):
        HookFanout([object()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="LeaseHooks"):
        Landlord(hooks=[print])  # type: ignore[list-item]
