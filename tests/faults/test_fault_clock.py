"""Wall clocks that jump, on the grantor's side and on the holder's.

Expiry is decided on the grantor's monotonic clock and the wire carries
seconds remaining, never absolute times: a wall-clock step on either side must
change no grantor decision. The FakeClock tests show it step by step; the
process tests run a landlord whose wall clock is hours wrong.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from typing import Any

import Pyro5.api
import pytest
import serpent
from faultkit import Listener, Spawn, start_landlord
from Pyro5.serializers import serializers

from landlord import (
    FOREVER,
    FakeClock,
    Landlord,
    LandlordLease,
    LeaseDurationPolicy,
    LeaseRenewalManager,
    UnknownLeaseError,
)

HOUR = 3600.0
TERM = 10.0


def on_the_wire(lease: LandlordLease) -> dict[str, Any]:
    """The dict a lease travels as, exactly as Pyro5's serpent serializer writes it."""
    return serpent.loads(serializers["serpent"].dumps(lease))  # type: ignore[no-any-return]


@pytest.fixture
def grantor_clock() -> FakeClock:
    return FakeClock(start=100.0, wall_offset=1_700_000_000.0)


@pytest.fixture
def holder_clock() -> FakeClock:
    # another machine: its monotonic clock started elsewhere, its wall clock is its own
    return FakeClock(start=5_000.0, wall_offset=1_700_000_042.0)


class Freed:
    """An ``on_expire`` that keeps what was freed."""

    def __init__(self) -> None:
        self.resources: list[Any] = []
        self.event = threading.Event()

    def __call__(self, resource: Any) -> None:
        self.resources.append(resource)
        self.event.set()


@pytest.fixture
def freed() -> Freed:
    return Freed()


@pytest.fixture
def landlord(grantor_clock: FakeClock, daemon: Any, freed: Freed) -> Iterator[Landlord]:
    """A landlord on the grantor's fake clock, registered with a daemon so its leases can be sent."""
    grantor = Landlord(clock=grantor_clock, policy=LeaseDurationPolicy(maximum=600), on_expire=freed)
    daemon.register(grantor)
    yield grantor
    grantor.close()


def test_a_step_of_the_grantors_wall_clock_changes_no_expiry(
        landlord: Landlord, grantor_clock: FakeClock, freed: Freed) -> None:
    """The grantor's wall clock jumps three hours forward, then six back, then three forward
    again. The lease's expiration (monotonic) never moves, the reaper keeps sleeping until
    it, a renewal grants exactly what was asked, a lease granted meanwhile travels with its
    full term, and the lease ends exactly one term after its last renewal, not earlier or later."""
    lease = landlord.new_lease("desk", TERM)
    ends_at = landlord.manager.get(lease.cookie).expiration
    assert ends_at == grantor_clock.monotonic() + TERM
    grantor_clock.wait_for_sleeper(ends_at)

    for step in (+3 * HOUR, -6 * HOUR, +3 * HOUR):
        grantor_clock.jump_wall_clock(step)
        assert landlord.manager.get(lease.cookie).expiration == ends_at
        grantor_clock.wait_for_sleeper(ends_at)  # the reaper still sleeps until then, and only then
        assert freed.resources == []
        sent = on_the_wire(landlord.new_lease(f"granted at {step:+}", TERM))
        assert sent["remaining"] == sent["term"] == TERM and set(sent) == {
            "__class__", "cookie", "landlord", "landlord_id", "remaining", "term"}  # no absolute time anywhere

    grantor_clock.advance(TERM / 2)
    grantor_clock.jump_wall_clock(-2 * HOUR)
    assert landlord.renew(lease.cookie, TERM) == TERM
    ends_at = grantor_clock.monotonic() + TERM
    assert landlord.manager.get(lease.cookie).expiration == ends_at
    grantor_clock.jump_wall_clock(+4 * HOUR)
    grantor_clock.advance(TERM - 0.001)
    assert landlord.get_resource(lease.cookie) == "desk"  # a step forward did not end it
    grantor_clock.advance(0.001)
    with pytest.raises(UnknownLeaseError):
        landlord.renew(lease.cookie, TERM)  # nor did a step back keep it alive
    assert freed.event.wait(10)
    assert freed.resources == ["desk"]


def holder_view(lease: LandlordLease, landlord: Landlord, holder_clock: FakeClock) -> LandlordLease:
    """``lease`` as a holder on ``holder_clock`` receives it: its remaining time added to that
    holder's own wall clock (what the wire converter does with the holder's real clock)."""
    remaining = on_the_wire(lease)["remaining"]
    return LandlordLease(lease.cookie, landlord, lease.landlord_id, holder_clock.time() + remaining,
                         clock=holder_clock)


def test_a_step_of_the_holders_wall_clock_changes_no_grantor_decision(
        landlord: Landlord, grantor_clock: FakeClock, holder_clock: FakeClock) -> None:
    """A holder whose wall clock jumps hours either way asks for durations and gets
    durations: the grantor grants the same, ends the lease at the same monotonic time,
    and refuses it once that has passed, whatever the holder's clock says."""
    lease = holder_view(landlord.new_lease("chair", TERM), landlord, holder_clock)
    assert lease.remaining == TERM
    for step in (+5 * HOUR, -10 * HOUR):
        holder_clock.jump_wall_clock(step)
        for clock in (grantor_clock, holder_clock):
            clock.advance(1.0)
        assert lease.renew(TERM) == TERM
        assert landlord.manager.get(lease.cookie).expiration == grantor_clock.monotonic() + TERM
        assert lease.remaining == TERM  # counted from the send
    # Whatever the holder's wall clock says after another step back (what the
    # holder's own view does with it is the holder's business), the grantor
    # ends the lease one term after the last renewal on its monotonic clock.
    holder_clock.jump_wall_clock(-HOUR)
    grantor_clock.advance(TERM - 0.001)
    assert landlord.get_resource(lease.cookie) == "chair"
    grantor_clock.advance(0.001)
    with pytest.raises(UnknownLeaseError):
        lease.renew(TERM)


# -- the renewal manager of a holder whose wall clock steps ---------------------------------

def run(manager: LeaseRenewalManager, clocks: tuple[FakeClock, FakeClock], seconds: float) -> None:
    """Let ``seconds`` pass on both machines, stopping wherever the renewal thread (on the
    first clock) sleeps until, so that it works on time."""
    holder, grantor = clocks
    end = holder.monotonic() + seconds
    assert manager._wait_idle(10)
    while holder.monotonic() < end:
        step = min(min(holder.sleeping_deadlines(), default=math.inf), end) - holder.monotonic()
        step = max(step, 1e-6)  # float rounding must not stall the loop
        grantor.advance(step)
        holder.advance(step)
        assert manager._wait_idle(10), "the renewal thread did not go back to sleep"


@pytest.fixture
def kept_lease(landlord: Landlord, grantor_clock: FakeClock,
               holder_clock: FakeClock) -> Iterator[tuple[LandlordLease, LeaseRenewalManager, Listener]]:
    """A lease the holder's renewal manager keeps FOREVER, renewed for TERM at a time."""
    lease = holder_view(landlord.new_lease("lamp", TERM), landlord, holder_clock)
    listener = Listener()
    with LeaseRenewalManager(clock=holder_clock) as manager:
        manager.renew_for(lease, FOREVER, listener, renew_duration=TERM)
        run(manager, (holder_clock, grantor_clock), 2 * TERM)  # renewing normally first
        assert landlord.get_resource(lease.cookie) == "lamp"
        yield lease, manager, listener


def test_a_holders_clock_stepping_forward_does_not_stop_its_renewals(
        kept_lease: tuple[LandlordLease, LeaseRenewalManager, Listener], landlord: Landlord,
        grantor_clock: FakeClock, holder_clock: FakeClock) -> None:
    """The holder's wall clock jumps three hours ahead: its renewal manager renews at the
    next due time as measured on the monotonic clock, and the lease stays alive."""
    lease, manager, listener = kept_lease
    holder_clock.jump_wall_clock(+3 * HOUR)
    run(manager, (holder_clock, grantor_clock), 3 * TERM)
    assert landlord.get_resource(lease.cookie) == "lamp"
    assert listener.notices == [] and len(manager) == 1
    assert 0 < lease.remaining <= TERM


def test_a_holders_clock_stepping_back_does_not_stop_its_renewals(
        kept_lease: tuple[LandlordLease, LeaseRenewalManager, Listener], landlord: Landlord,
        grantor_clock: FakeClock, holder_clock: FakeClock) -> None:
    """The holder's wall clock jumps an hour back (an NTP step, a VM restored): its renewal
    manager must still renew within the lease's term, which the grantor measures on its
    monotonic clock, so the lease stays alive. (Until 7ea0149 the manager scheduled on the
    wall clock, slept an extra hour and lost the lease.)"""
    lease, manager, listener = kept_lease
    holder_clock.jump_wall_clock(-HOUR)
    run(manager, (holder_clock, grantor_clock), 3 * TERM)
    assert listener.notices == []
    assert landlord.get_resource(lease.cookie) == "lamp"


def test_a_lease_sent_after_a_step_of_the_grantors_wall_clock_carries_its_true_term(
        landlord: Landlord, grantor_clock: FakeClock) -> None:
    """A landlord that keeps a lease object and sends it a moment later (a step of its wall
    clock in between) must send the time the lease really has left, not that plus the step.
    (Until 7ea0149 it sent an hour too much after an hour's step back.)"""
    lease = landlord.new_lease("shelf", TERM)
    grantor_clock.jump_wall_clock(-HOUR)
    assert on_the_wire(lease)["remaining"] == pytest.approx(TERM)


# -- a landlord process whose wall clock is hours wrong ---------------------------------

@pytest.mark.parametrize("skew", [+5 * HOUR, -5 * HOUR], ids=["5h-ahead", "5h-behind"])
def test_a_landlord_with_a_skewed_wall_clock_grants_true_terms(spawn: Spawn, skew: float) -> None:
    """A landlord process whose wall clock is five hours off grants leases the holder sees
    with their true remaining time (not five hours more or none), renews them for what was
    asked, and a renewal manager keeps one alive across several terms."""
    landlord = start_landlord(spawn, "--wall-offset", str(skew), "--verbose")
    with Pyro5.api.Proxy(landlord.direct) as control:
        assert control.wall_time() - time.time() == pytest.approx(skew, abs=60)  # really skewed
        asked_at = time.time()
        lease = control.rent("skewed", 30.0)
        long_lease_left = lease.remaining
        short = control.rent("kept", 1.0)
    assert 29.0 < long_lease_left <= 30.0
    assert lease.expiration <= asked_at + 30.0 + 0.01
    assert lease.renew(20.0) == 20.0 and 19.0 < lease.remaining <= 20.0

    listener = Listener()
    with LeaseRenewalManager() as manager:
        manager.renew_for(short, FOREVER, listener, renew_duration=1.0)
        for _ in range(3):  # three renewals of a 1 s lease: kept alive past its first term
            landlord.child.wait_for(r"^renewed kept ", timeout=10)
        assert listener.notices == [] and 0 < short.remaining <= 1.0
    assert not any(line.startswith("freed kept") for line in landlord.child.output)
