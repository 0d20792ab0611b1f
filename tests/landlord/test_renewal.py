"""LeaseRenewalManager on a fake clock: schedule, failures, callbacks, batching, threads."""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import threading
import types
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

import hypothesis
import hypothesis.strategies as st
import Pyro5.errors
import pytest

import landlord.holder.renewal as renewal_module
from landlord import (
    ANY,
    FOREVER,
    AbstractLease,
    BatchableLease,
    FakeClock,
    Landlord,
    LandlordLease,
    Lease,
    LeaseDeniedError,
    LeasedResource,
    LeaseDurationPolicy,
    UnknownLeaseError,
    get_call_timeout,
)
from landlord.holder.renewal import (
    ANSWERING,
    FAILING,
    UNHEARD,
    Endpoints,
    LeaseRenewalEvent,
    LeaseRenewalManager,
    LeaseWarningEvent,
    attempt_timeout,
    renewal_time,
)
from landlord.holder.schedule import warning_time
from landlord.lease import sent_now
from landlord.transport import proxies

THIRD = 10 / 3  # the managers here renew a 10 s lease every third of its term


# -- fakes and helpers ---------------------------------------------------------------


class FakeLandlord:
    """A scripted, strict landlord for :class:`FakeLease`: counts calls, fails on demand.

    It grants what is asked up to ``maximum`` (``ANY``: the maximum) and, like a
    real landlord, refuses a renewal that arrives after the lease expired, so a
    late renewal shows up as a lost lease.
    """

    def __init__(self, clock: FakeClock, *, maximum: float = 10.0, batching: bool = True) -> None:
        self.clock, self.maximum = clock, maximum
        self.batching = batching  # its leases are BatchableLeases (batched under one key), or plain ones
        self.key: Hashable = ("fake", id(self))
        self.expires: dict[Lease, float] = {}  # the landlord's own view, wall clock
        self.single_calls: list[tuple[Lease, float]] = []
        self.batch_calls: list[list[float]] = []
        self.unreachable = False
        self.raised: list[Exception] = []
        self.denied: set[Lease] = set()
        self.cancelled: list[Lease] = []

    def lease(self, term: float = 10.0) -> FakeLease:
        lease = (BatchedFakeLease if self.batching else FakeLease)(self, self.clock.time() + term)
        self.expires[lease] = lease.expiration
        return lease

    def _reach(self) -> None:
        if self.unreachable:
            exc = Pyro5.errors.CommunicationError(f"unreachable (call {len(self.raised) + 1})")
            self.raised.append(exc)
            raise exc

    def _grant(self, lease: Lease, requested: float) -> float:
        now = self.clock.time()
        if lease in self.denied:
            raise LeaseDeniedError("no")
        if now >= self.expires[lease]:
            raise UnknownLeaseError("expired before the renewal arrived")
        granted = self.maximum if requested == ANY else min(requested, self.maximum)
        self.expires[lease] = now + granted
        return granted

    def renew(self, lease: Lease, requested: float) -> float:
        self.single_calls.append((lease, requested))
        self._reach()
        return self._grant(lease, requested)

    def renew_batch(self, leases: Sequence[FakeLease], durations: Sequence[float]) -> dict[Lease, Exception]:
        self.batch_calls.append(list(durations))
        self._reach()
        sent, failures = sent_now(self.clock), dict[Lease, Exception]()
        for lease, duration in zip(leases, durations):
            try:
                lease.record_grant(sent, self._grant(lease, duration))
            except Exception as exc:
                failures[lease] = exc
        return failures

    @property
    def requests(self) -> list[float]:
        """Every duration asked for, single or batched, in order."""
        return [d for _, d in self.single_calls] + [d for call in self.batch_calls for d in call]


class FakeLease(AbstractLease):
    """A lease answered by a :class:`FakeLandlord`, one by one (it is not a :class:`BatchableLease`)."""

    __slots__ = ("landlord",)

    def __init__(self, landlord: FakeLandlord, expiration: float) -> None:
        super().__init__(expiration, clock=landlord.clock)
        self.landlord = landlord

    def _do_renew(self, duration: float) -> float:
        return self.landlord.renew(self, duration)

    def cancel(self) -> None:
        self.landlord._reach()
        self.landlord.cancelled.append(self)



class BatchedFakeLease(FakeLease, BatchableLease):
    """A lease class of a third party's that batches: its landlord's leases go in one call."""

    __slots__ = ()

    def batch_key(self) -> Hashable:
        return self.landlord.key

    def renew_batch(self, leases: Sequence[BatchedFakeLease], durations: Sequence[float]) -> dict[Lease, Exception]:
        return self.landlord.renew_batch(leases, durations)

    def cancel_batch(self, leases: Sequence[BatchedFakeLease]) -> dict[Lease, Exception]:
        raise AssertionError("a renewal manager cancels one lease at a time")


class Recorder:
    """A callback that records its events and the wall-clock time of each."""

    def __init__(self, clock: FakeClock, then: Callable[[LeaseRenewalEvent], Any] | None = None) -> None:
        self.clock, self.then = clock, then
        self.events: list[LeaseRenewalEvent] = []
        self.times: list[float] = []

    def __call__(self, event: LeaseRenewalEvent) -> None:
        self.events.append(event)
        self.times.append(self.clock.time())
        if self.then is not None:
            self.then(event)


def settle(manager: LeaseRenewalManager) -> None:
    assert manager._wait_idle(10), "the renewal thread did not go back to sleep"


def advance_to(clock: FakeClock, target: float) -> None:
    """Move monotonic time to ``target`` exactly or just past it (floats round)."""
    if target > clock.monotonic():
        clock.advance(target - clock.monotonic())
    while clock.monotonic() < target:
        clock.advance(math.ulp(target))


def run(clock: FakeClock, manager: LeaseRenewalManager, seconds: float) -> None:
    """Let ``seconds`` pass, stopping at every deadline the thread sleeps towards to let it work."""
    end = clock.monotonic() + seconds
    settle(manager)
    for _ in range(100_000):
        target = min(min(clock.sleeping_deadlines(), default=math.inf), end)
        advance_to(clock, target)
        settle(manager)
        if target >= end:
            return
    raise AssertionError("the renewal thread never stopped waking up")


@pytest.fixture
def manager(clock: FakeClock) -> Iterator[LeaseRenewalManager]:
    with LeaseRenewalManager(clock=clock, retry_initial=1.0) as m:
        settle(m)
        yield m


class CountingLandlord(Landlord):
    """An in-process Landlord that counts the remote calls its leases make."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.renew_calls = 0
        self.renew_all_sizes: list[int] = []

    def renew(self, cookie: str, duration: float) -> float:
        self.renew_calls += 1
        return super().renew(cookie, duration)

    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> Any:
        self.renew_all_sizes.append(len(cookies))
        return super().renew_all(cookies, durations)


# -- the schedule --------------------------------------------------------------------


def test_renewal_time_is_a_third_into_the_term() -> None:
    assert renewal_time(100, 103, 3) == pytest.approx(101)  # a 3 s lease: after 1 s
    assert renewal_time(0, 3600, 3600) == pytest.approx(1200)  # an hour: after 20 minutes
    assert renewal_time(100, 102, 3) == 100  # less than two thirds left: at once
    assert renewal_time(0, 60, 60, renew_after=0.5) == 30  # at half, if asked
    assert renewal_time(50, 40, 10) == 50  # already expired: at once
    assert renewal_time(50, 50, 10) == 50
    assert renewal_time(0, FOREVER, FOREVER) == math.inf  # never, and no NaN
    assert renewal_time(0, 30, FOREVER) == pytest.approx(10)  # a term it cannot know: a third of what is left


@hypothesis.given(now=st.floats(0, 2e9), remaining=st.floats(1e-3, 1e7), term=st.floats(1e-3, 1e7),
                  renew_after=st.floats(0.01, 0.99))
def test_renewal_time_is_between_now_and_the_deadline_leaving_the_rest_of_the_term(
        now: float, remaining: float, term: float, renew_after: float) -> None:
    deadline = now + remaining
    at = renewal_time(now, deadline, term, renew_after=renew_after)
    assert now <= at <= deadline
    # what is left after the renewal goes out: the rest of the term, or all there is
    assert deadline - at == pytest.approx(min(remaining, (1 - renew_after) * term), rel=1e-6, abs=1e-3)


def test_an_attempt_waits_at_most_half_of_what_is_left() -> None:
    assert attempt_timeout(20) == 10 and attempt_timeout(1) == 0.5
    assert attempt_timeout(0.15) == 0.1  # a floor for a few round trips...
    assert attempt_timeout(0.05) == 0.05  # ...but never past the end
    assert attempt_timeout(0) > 0 and attempt_timeout(-1) > 0  # always a usable timeout


# -- keeping leases alive ------------------------------------------------------------


def test_renew_for_keeps_a_lease_alive_over_several_rounds(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = CountingLandlord(clock=clock, reaper="lazy", policy=LeaseDurationPolicy(maximum=10))
    lease = landlord.new_lease("room", 10)
    lost, done = Recorder(clock), Recorder(clock)
    start = clock.time()
    manager.renew_for(lease, 100, lost, on_desired_expiration=done)
    run(clock, manager, 99)
    assert not lost.events and not done.events
    assert landlord.get_resource(lease.cookie) == "room"  # never expired at the landlord
    # renewed every third of its 10 s term, each in one call; the one at 90 s reaches 100
    assert landlord.renew_all_sizes == [1] * 27 and landlord.renew_calls == 0
    run(clock, manager, 2)
    assert [e.exception for e in done.events] == [None]
    assert done.events[0].expiration == done.times[0] == start + 100
    assert not lost.events


def test_renew_duration_caps_every_request(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    capping, generous = FakeLandlord(clock, maximum=100), FakeLandlord(clock, maximum=100)
    capped, uncapped = capping.lease(10), generous.lease(10)
    manager.renew_for(capped, 100, renew_duration=3)
    manager.renew_for(uncapped, 30, renew_duration=FOREVER)
    run(clock, manager, 40)
    assert len(capping.requests) > 5 and set(capping.requests) == {3}
    # asked once, a third into its term, for the rest of its desired 30 s
    assert generous.requests == pytest.approx([30 - THIRD])
    with pytest.raises(UnknownLeaseError):
        manager.get_expiration(uncapped)
    assert manager.get_expiration(capped) == pytest.approx(clock.time() + 60)


def test_by_default_a_lease_keeps_its_own_term(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    """A 10 s lease kept for an hour is still a 10 s lease: a dead holder's resource goes within 10 s."""
    generous = FakeLandlord(clock, maximum=300)
    lease = generous.lease(10)
    manager.renew_for(lease, 3600)
    run(clock, manager, 600)
    assert len(generous.requests) == 180 and set(generous.requests) == {10}
    assert lease.term == 10 and lease.remaining <= 10
    assert generous.expires[lease] - clock.time() <= 10  # what the landlord would free it by


def test_the_term_kept_is_the_one_when_the_lease_was_handed_over(clock: FakeClock,
                                                                  manager: LeaseRenewalManager) -> None:
    """The last renewal before a desired expiration asks for less; a later extension gets the term back."""
    landlord = FakeLandlord(clock, maximum=300)
    lease = landlord.lease(10)
    manager.renew_for(lease, 12)
    run(clock, manager, 11)
    assert landlord.requests == pytest.approx([12 - THIRD]) and lease.term < 10  # only to 12 s
    manager.set_expiration(lease, clock.time() + 100)
    run(clock, manager, 20)
    assert landlord.requests[-1] == 10


def test_each_request_is_min_of_renew_duration_and_time_left(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock, maximum=100, batching=False)
    lease = landlord.lease(10)
    start = clock.time()
    manager.renew_for(lease, 20, renew_duration=6)
    run(clock, manager, 25)
    # at 3.3 s: 6 (to 9.3); then every 2 s (a third of 6): 6 each, to 19.3; at 15.3 s: the 4.7 s left
    assert landlord.requests == pytest.approx([6] * 6 + [20 - THIRD - 6 * 2])
    assert lease.expiration == pytest.approx(start + 20)


def test_forever_renews_indefinitely_without_overflow(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock, maximum=10)
    lease = landlord.lease(10)
    lost = Recorder(clock)
    manager.renew_for(lease, FOREVER, lost, renew_duration=FOREVER)
    assert manager.get_expiration(lease) == math.inf
    run(clock, manager, 1000)
    assert not lost.events and not lease.expired
    assert all(d == FOREVER for d in landlord.requests) and len(landlord.requests) == 299
    manager.renew_until(lease, FOREVER, renew_duration=ANY)
    run(clock, manager, 100)
    assert landlord.requests[-1] == ANY and not lease.expired


def test_a_forever_lease_wanted_forever_needs_no_renewal(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock, maximum=FOREVER)
    lease = landlord.lease(FOREVER)
    manager.renew_for(lease, FOREVER)
    settle(manager)
    assert clock.sleeping_deadlines() == [math.inf]
    run(clock, manager, 1e9)
    assert landlord.requests == [] and manager.get_expiration(lease) == math.inf


def test_renew_until_reaching_the_desired_expiration_drops_the_lease(
        clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock, maximum=10)
    lease = landlord.lease(10)
    seen_managed: list[bool] = []

    def still_managed(event: LeaseRenewalEvent) -> None:
        try:
            manager.get_expiration(event.lease)
            seen_managed.append(True)
        except UnknownLeaseError:
            seen_managed.append(False)

    lost, done = Recorder(clock), Recorder(clock, then=still_managed)
    desired = clock.time() + 25
    manager.renew_until(lease, desired, lost, on_desired_expiration=done)
    run(clock, manager, 100)
    assert [(e.lease, e.expiration, e.exception) for e in done.events] == [(lease, desired, None)]
    assert done.times == [desired] and seen_managed == [False]
    assert not lost.events
    assert lease.expiration == pytest.approx(desired)  # the last renewal asked only for what was left
    calls = len(landlord.batch_calls)
    run(clock, manager, 100)
    assert len(landlord.batch_calls) == calls and len(done.events) == 1


def test_a_desired_expiration_already_past_drops_the_lease_at_once(
        clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock)
    lease = landlord.lease(10)
    done = Recorder(clock)
    manager.renew_for(lease, 0, on_desired_expiration=done)
    settle(manager)
    assert len(done.events) == 1 and landlord.requests == []
    assert len(manager) == 0


# -- failures --------------------------------------------------------------------------


def test_a_denial_is_reported_once_at_once(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    class Denying(LeaseDurationPolicy):
        def renew(self, resource: LeasedResource, requested: float) -> float:
            raise LeaseDeniedError("not you again")

    landlord = Landlord(clock=clock, reaper="lazy", policy=Denying(maximum=10))
    lease = landlord.new_lease("room", 10)
    lost = Recorder(clock)
    manager.renew_for(lease, 100, lost)
    run(clock, manager, 100)
    assert len(lost.events) == 1
    assert isinstance(lost.events[0].exception, LeaseDeniedError)
    assert lost.times[0] < lease.expiration  # at the first renewal, not when the lease ran out
    with pytest.raises(UnknownLeaseError):
        manager.get_expiration(lease)


def test_unreachable_for_less_than_the_term_loses_nothing(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock)
    lease = landlord.lease(10)
    lost = Recorder(clock)
    manager.renew_for(lease, 100, lost)
    run(clock, manager, 5)  # renewed at 3.3 s: the lease ends at 13.3 s
    landlord.unreachable = True
    run(clock, manager, 4.8)  # the renewal at 6.7 s and its retries fail
    assert len(landlord.raised) >= 3
    landlord.unreachable = False
    run(clock, manager, 50)
    assert not lost.events and not lease.expired
    assert landlord.expires[lease] == lease.expiration


def test_unreachable_until_after_expiry_is_reported_then_with_the_last_error(
        clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock)
    lease = landlord.lease(10)
    lost = Recorder(clock)
    manager.renew_for(lease, 100, lost)
    landlord.unreachable = True
    run(clock, manager, 9.99)
    assert not lost.events  # still retrying: the lease has not run out
    run(clock, manager, 30)
    assert len(lost.events) == 1
    event = lost.events[0]
    assert event.exception is landlord.raised[-1]
    assert lost.times[0] >= lease.expiration  # after the actual expiry, not before
    assert lost.times[0] == pytest.approx(lease.expiration)  # ...and promptly
    raised = len(landlord.raised)
    run(clock, manager, 30)
    assert len(landlord.raised) == raised and len(manager) == 0


class ForgetfulLandlord(FakeLandlord):
    """Fails as FakeLandlord does when unreachable, counting its failures but keeping none of them (the
    frame that raised one and kept it would make a cycle of the test's own)."""

    failed = 0

    def _reach(self) -> None:
        if self.unreachable:
            self.failed += 1
            raise Pyro5.errors.CommunicationError(f"unreachable (call {self.failed})")


def test_a_failed_attempt_leaves_no_cycle_for_the_garbage_collector(
        clock: FakeClock, manager: LeaseRenewalManager, caplog: pytest.LogCaptureFixture) -> None:
    # a renewal service retrying a stranger's leases at dead landlords failed 2,000 attempts in 12 s; each
    # left its traceback in a cycle through the renewal thread's frame, freed only by full collections,
    # which held the service 73 ms at a time (a canary's renewal over 250 ms on a loaded machine)
    landlord = ForgetfulLandlord(clock)
    manager.renew_for(landlord.lease(10), 100, Recorder(clock))
    run(clock, manager, 5)
    caplog.set_level(logging.ERROR, logger="landlord.renewal")  # captured records would keep the errors alive
    gc.collect()
    gc.disable()  # what the failures leave stays for the collection below to find
    try:
        landlord.unreachable = True
        run(clock, manager, 4.8)  # the renewal at 6.7 s and its retries fail
        assert landlord.failed >= 3
        gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection frees, kept in gc.garbage to look at
        gc.collect()
        cyclic = [found for found in gc.garbage if isinstance(found, types.FrameType)
                  and found.f_code.co_filename == renewal_module.__file__]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert cyclic == [], [frame.f_code.co_name for frame in cyclic]


class BoundRecordingLandlord(FakeLandlord):
    """Records the call timeout each renewal attempt would go out with, and when."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.bounds: list[tuple[float, float | None]] = []

    def renew_batch(self, leases: Sequence[Lease], durations: Sequence[float]) -> dict[Lease, Exception]:
        self.bounds.append((self.clock.monotonic(), proxies._timeout()))
        return super().renew_batch(leases, durations)


def test_every_attempt_waits_at_most_half_of_what_its_lease_has_left(
        clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = BoundRecordingLandlord(clock)
    lease = landlord.lease(10)
    lost = Recorder(clock)
    manager.renew_for(lease, FOREVER, lost)
    landlord.unreachable = True
    run(clock, manager, 11)
    assert len(lost.events) == 1 and len(landlord.bounds) >= 4
    deadline = lease.deadline
    for at, bound in landlord.bounds:
        assert bound is not None and bound <= max((deadline - at) / 2, 0.1) + 1e-9
    assert landlord.bounds[0][1] == pytest.approx((10 - THIRD) / 2)  # the first: half of two thirds
    assert [b for _, b in landlord.bounds] == sorted((b for _, b in landlord.bounds), reverse=True)  # shrinking
    assert proxies._timeout() == get_call_timeout()  # the manager's thread bounded only its own calls


def test_retries_back_off_exponentially_with_jitter(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    """retry_initial 1 s, doubling; each delay a random share of up to half below its ceiling (landlord.Backoff)."""
    landlord = BoundRecordingLandlord(clock)
    lease = landlord.lease(100)  # long enough that half of what is left never cuts a delay short here
    manager.renew_for(lease, FOREVER)
    landlord.unreachable = True
    run(clock, manager, 100 / 3 + 20)
    times = [at for at, _ in landlord.bounds]
    gaps = [later - earlier for earlier, later in zip(times, times[1:])][:4]
    ceilings = [1.0, 2.0, 4.0, 8.0]
    assert len(gaps) == 4
    assert all(ceiling / 2 - 1e-9 <= gap <= ceiling + 1e-9 for gap, ceiling in zip(gaps, ceilings)), gaps
    assert any(gap < ceiling - 1e-6 for gap, ceiling in zip(gaps, ceilings)), gaps  # jittered, not the ceilings


class TimingOutLandlord(FakeLandlord):
    """An unreachable landlord as a partition makes one: each attempt waits its whole bound, then times out."""

    def renew_batch(self, leases: Sequence[FakeLease], durations: Sequence[float]) -> dict[Lease, Exception]:
        self.batch_calls.append(list(durations))
        if self.unreachable:
            started = self.clock.monotonic()
            self.clock.advance(proxies._timeout() or 0.0)
            exc = Pyro5.errors.TimeoutError(f"no answer since {started}")
            self.raised.append(exc)
            raise exc
        return super().renew_batch(leases, durations)


def test_after_a_timeout_the_next_attempt_goes_out_at_once(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    """The backoff counts from when the failed attempt was sent: one that waited a whole
    timeout is followed at once by another, on a fresh connection, not a backoff later."""
    landlord = TimingOutLandlord(clock)
    lease = landlord.lease(10)
    manager.renew_for(lease, FOREVER)
    landlord.unreachable = True
    attempts: list[float] = []
    original = landlord.renew_batch

    def timed(leases: Sequence[Lease], durations: Sequence[float]) -> dict[Lease, Exception]:
        attempts.append(clock.monotonic())
        return original(leases, durations)

    landlord.renew_batch = timed  # type: ignore[method-assign]
    run(clock, manager, THIRD + (10 - THIRD) / 2 + 0.06)
    assert len(attempts) == 2
    first_failed = attempts[0] + (10 - THIRD) / 2  # the first attempt waited half of what was left
    assert attempts[1] - first_failed == pytest.approx(0.05, abs=1e-6)  # not retry_initial (1 s) later


def test_a_whole_batch_failing_to_communicate_is_retried_for_every_lease(
        clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock)
    leases = [landlord.lease(10) for _ in range(5)]
    lost = Recorder(clock)
    for lease in leases:
        manager.renew_for(lease, 100, lost)
    run(clock, manager, 7)
    landlord.unreachable = True
    run(clock, manager, 2)
    landlord.unreachable = False
    run(clock, manager, 30)
    assert not lost.events
    assert all(call == [call[0]] * 5 for call in landlord.batch_calls)  # still one call for all five


# -- the managed set ---------------------------------------------------------------------


def test_remove_cancel_clear_get_and_set_expiration(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock)
    a, b, c = landlord.lease(), landlord.lease(), landlord.lease()
    lost = Recorder(clock)
    now = clock.time()
    for lease in (a, b, c):
        manager.renew_for(lease, 50, lost, on_desired_expiration=lost)
    assert manager.get_expiration(a) == now + 50 and len(manager) == 3
    manager.set_expiration(a, now + 70)
    assert manager.get_expiration(a) == now + 70
    manager.renew_for(a, 30)  # replaces its settings
    assert manager.get_expiration(a) == now + 30 and len(manager) == 3

    manager.remove(b)
    with pytest.raises(UnknownLeaseError):
        manager.remove(b)
    with pytest.raises(UnknownLeaseError):
        manager.get_expiration(b)
    with pytest.raises(UnknownLeaseError):
        manager.set_expiration(b, now + 5)
    assert landlord.cancelled == []  # removed, not cancelled

    manager.cancel(c)
    assert landlord.cancelled == [c] and len(manager) == 1
    with pytest.raises(UnknownLeaseError):
        manager.cancel(c)
    assert landlord.cancelled == [c]

    manager.renew_for(b, 50)
    landlord.unreachable = True
    with pytest.raises(Pyro5.errors.CommunicationError):
        manager.cancel(b)
    assert len(manager) == 1  # removed even though the cancel failed
    landlord.unreachable = False

    manager.clear()
    assert len(manager) == 0
    run(clock, manager, 100)
    assert landlord.requests == [] and lost.events == []


def test_set_expiration_to_the_past_drops_the_lease_promptly(clock: FakeClock,
                                                              manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock)
    lease = landlord.lease()
    done = Recorder(clock)
    manager.renew_for(lease, FOREVER, on_desired_expiration=done)
    run(clock, manager, 3)
    manager.set_expiration(lease, clock.time() - 1)
    settle(manager)
    assert len(done.events) == 1 and done.times == [clock.time()]


@pytest.mark.parametrize("call", [
    lambda m, lease: m.renew_for(lease, -5),
    lambda m, lease: m.renew_for(lease, math.nan),
    lambda m, lease: m.renew_for(lease, ANY),
    lambda m, lease: m.renew_for(lease, "10"),
    lambda m, lease: m.renew_for(lease, True),
    lambda m, lease: m.renew_for(lease, 10, renew_duration=0),
    lambda m, lease: m.renew_for(lease, 10, renew_duration=-3),
    lambda m, lease: m.renew_for(lease, 10, renew_duration=math.nan),
    lambda m, lease: m.renew_until(lease, math.nan),
    lambda m, lease: m.renew_until(lease, -math.inf),
    lambda m, lease: m.renew_until(lease, None),
    lambda m, lease: m.set_expiration(lease, math.nan),
], ids=["negative", "nan", "any", "str", "bool", "renew-0", "renew-negative", "renew-nan",
        "until-nan", "until-minus-inf", "until-none", "set-nan"])
def test_bad_values_are_value_errors_and_change_nothing(clock: FakeClock, manager: LeaseRenewalManager,
                                                        call: Callable[..., Any]) -> None:
    landlord = FakeLandlord(clock)
    lease = landlord.lease()
    manager.renew_for(lease, 50)
    before = manager.get_expiration(lease)
    with pytest.raises(ValueError):
        call(manager, lease)
    assert manager.get_expiration(lease) == before and len(manager) == 1
    run(clock, manager, 19)
    assert len(landlord.requests) == 5  # still renewed as before: every third of the term


@pytest.mark.parametrize("call", [
    lambda m, lease: m.renew_for("not a lease", 10),
    lambda m, lease: m.renew_until(None, 10),
    lambda m, lease: m.renew_for(lease, 10, "not callable"),
    lambda m, lease: m.renew_for(lease, 10, on_desired_expiration=42),
    lambda m, lease: m.remove("x"),
    lambda m, lease: m.cancel(3),
    lambda m, lease: m.get_expiration(object()),
    lambda m, lease: m.set_expiration("x", 5),
])
def test_wrong_types_are_type_errors(clock: FakeClock, manager: LeaseRenewalManager,
                                     call: Callable[..., Any]) -> None:
    lease = FakeLandlord(clock).lease()
    with pytest.raises(TypeError):
        call(manager, lease)
    assert len(manager) == 0


def test_bad_options() -> None:
    for options in ({"round_trip_allowance": -1}, {"round_trip_allowance": math.inf}, {"batch_window": math.nan},
                    {"retry_initial": 0}, {"retry_initial": 5, "retry_max": 1}, {"max_batch": 0},
                    {"renew_after": 0}, {"renew_after": 1}, {"renew_after": math.nan}, {"renew_after": True}):
        with pytest.raises(ValueError):
            LeaseRenewalManager(**options)


def test_the_old_round_trip_allowance_warns_that_it_is_ignored() -> None:
    with pytest.warns(DeprecationWarning, match="round_trip_allowance"):
        LeaseRenewalManager(round_trip_allowance=2.0).close()


# -- callbacks -------------------------------------------------------------------------


def test_a_callback_may_call_back_into_the_manager(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock)
    lease = landlord.lease()
    again = Recorder(clock)

    def renew_once_more(event: LeaseRenewalEvent) -> None:
        manager.renew_for(event.lease, 20, on_desired_expiration=again)

    manager.renew_for(lease, 2, on_desired_expiration=renew_once_more)  # the lease itself runs 10 s
    run(clock, manager, 2.5)
    assert manager.get_expiration(lease) == pytest.approx(clock.time() - 0.5 + 20)
    run(clock, manager, 30)
    assert len(again.events) == 1 and len(manager) == 0
    assert lease.expiration == again.events[0].expiration == again.times[0]  # kept alive to the end


def test_a_failing_callback_is_logged_and_the_thread_lives_on(clock: FakeClock, manager: LeaseRenewalManager,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    landlord = FakeLandlord(clock)
    doomed, kept = landlord.lease(), landlord.lease()
    landlord.denied.add(doomed)

    def explode(event: LeaseRenewalEvent) -> None:
        raise RuntimeError("listener bug")

    with caplog.at_level(logging.ERROR, logger="landlord.renewal"):
        manager.renew_for(doomed, 100, explode)
        manager.renew_for(kept, 100)
        run(clock, manager, 50)
    assert "listener bug" in caplog.text
    assert len(manager) == 1 and not kept.expired
    assert landlord.expires[kept] == kept.expiration


def test_a_lost_lease_without_listener_is_logged(clock: FakeClock, manager: LeaseRenewalManager,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    landlord = FakeLandlord(clock)
    lease = landlord.lease()
    landlord.denied.add(lease)
    with caplog.at_level(logging.WARNING, logger="landlord.renewal"):
        manager.renew_for(lease, 100)
        run(clock, manager, 10)
    assert "LeaseDeniedError" in caplog.text and len(manager) == 0


# -- batching --------------------------------------------------------------------------


def test_batchable_leases_of_one_landlord_go_in_one_call_per_round(clock: FakeClock,
                                                                    manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock)  # its leases: a BatchableLease class that is not a LandlordLease
    leases = []
    for _ in range(50):  # issued over half a second: within one batch window
        leases.append(landlord.lease())
        manager.renew_for(leases[-1], FOREVER)
        clock.advance(0.01)
    run(clock, manager, THIRD * 5 + 0.5)
    assert [len(call) for call in landlord.batch_calls] == [50] * 5
    assert landlord.single_calls == []
    assert all(landlord.expires[lease] == lease.expiration > clock.time() for lease in leases)


def test_leases_that_are_not_batchable_are_renewed_one_by_one(clock: FakeClock,
                                                              manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock, batching=False)  # plain leases of one landlord: no batch key
    leases = [landlord.lease() for _ in range(3)]
    for lease in leases:
        manager.renew_for(lease, FOREVER)
    run(clock, manager, 7)
    assert landlord.batch_calls == [] and len(landlord.single_calls) == 6


def test_three_landlords_three_calls_per_round(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlords = [CountingLandlord(clock=clock, reaper="lazy", policy=LeaseDurationPolicy(maximum=10))
                 for _ in range(3)]
    lost = Recorder(clock)
    for landlord in landlords:
        for i in range(300):
            manager.renew_for(landlord.new_lease(i, 10), FOREVER, lost)
    run(clock, manager, THIRD * 4 + 0.5)
    for landlord in landlords:
        assert landlord.renew_all_sizes == [300] * 4 and landlord.renew_calls == 0
        assert len(landlord) == 300
    assert not lost.events


def test_max_batch_splits_a_batch(clock: FakeClock) -> None:
    landlord = FakeLandlord(clock)
    with LeaseRenewalManager(clock=clock, max_batch=4) as manager:
        for _ in range(10):
            manager.renew_for(landlord.lease(), FOREVER)
        run(clock, manager, THIRD + 0.5)
    assert sorted(len(call) for call in landlord.batch_calls) == [2, 4, 4]


def test_a_lease_far_from_due_does_not_join_a_batch(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock, maximum=100)
    short, long = landlord.lease(10), landlord.lease(100)
    manager.renew_for(short, FOREVER, renew_duration=10)
    manager.renew_for(long, FOREVER, renew_duration=100)
    run(clock, manager, THIRD + 0.5)
    assert landlord.batch_calls == [[10]]


# -- threads ---------------------------------------------------------------------------


def test_leases_added_and_removed_from_many_threads(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock)
    leases = [landlord.lease() for _ in range(400)]
    errors: list[BaseException] = []

    def worker(mine: list[Lease]) -> None:
        try:
            for lease in mine:
                manager.renew_for(lease, FOREVER)
            for lease in mine[::2]:
                manager.remove(lease)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(leases[i::4],)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not errors and len(manager) == 200
    run(clock, manager, THIRD + 0.5)
    assert [len(call) for call in landlord.batch_calls] == [200]


def test_close_stops_the_thread(clock: FakeClock) -> None:
    manager = LeaseRenewalManager(clock=clock, name="renewer-under-test")
    settle(manager)
    assert manager._thread.name == "renewer-under-test" and manager._thread.is_alive()
    lease = FakeLandlord(clock).lease()
    manager.renew_for(lease, 100)
    manager.close()
    assert not manager._thread.is_alive()
    manager.close()  # twice is fine
    with pytest.raises(RuntimeError):
        manager.renew_for(lease, 100)
    with pytest.raises(UnknownLeaseError):
        manager.get_expiration(lease)


def test_close_from_a_callback(clock: FakeClock) -> None:
    landlord = FakeLandlord(clock)
    manager = LeaseRenewalManager(clock=clock)
    closed = threading.Event()

    def close(event: LeaseRenewalEvent) -> None:
        manager.close()
        closed.set()

    manager.renew_for(landlord.lease(), 0, on_desired_expiration=close)
    assert closed.wait(10)
    manager._thread.join(10)
    assert not manager._thread.is_alive()


def test_context_manager_on_the_system_clock() -> None:
    with LeaseRenewalManager() as manager:
        assert manager._thread.is_alive()
    assert not manager._thread.is_alive()


class HangingLandlord(FakeLandlord):
    """A fake landlord whose calls block until released, as a hung process would."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.release = threading.Event()
        self.entered = threading.Event()

    def _reach(self) -> None:
        self.entered.set()
        assert self.release.wait(10)
        super()._reach()


class SignallingLandlord(FakeLandlord):
    """A fake landlord that lets a test wait for its batch calls."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.called = threading.Condition()

    def renew_batch(self, leases: Sequence[Lease], durations: Sequence[float]) -> dict[Lease, Exception]:
        try:
            return super().renew_batch(leases, durations)
        finally:
            with self.called:
                self.called.notify_all()

    def wait_for_calls(self, count: int) -> None:
        with self.called:
            assert self.called.wait_for(lambda: len(self.batch_calls) >= count, 10), self.batch_calls


def test_a_hanging_landlord_does_not_stall_renewals_to_another(clock: FakeClock,
                                                                manager: LeaseRenewalManager) -> None:
    hung, healthy = HangingLandlord(clock), SignallingLandlord(clock)
    stuck, fine = hung.lease(10), healthy.lease(10)
    manager.renew_for(stuck, 100)
    manager.renew_for(fine, 100)
    settle(manager)
    advance_to(clock, clock.monotonic() + THIRD)  # both due: a third into their 10 s terms
    assert hung.entered.wait(10)  # one call is stuck in the hung landlord...
    healthy.wait_for_calls(1)  # ...and the other landlord was renewed all the same
    assert fine.remaining == pytest.approx(10)
    hung.release.set()
    settle(manager)
    assert stuck.remaining == pytest.approx(10) and len(manager) == 2


# -- warnings before an end -------------------------------------------------------------------


class WarningRecorder:
    """An ``on_warning`` callback recording each warning and the monotonic time it came."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.events: list[LeaseWarningEvent] = []
        self.times: list[float] = []

    def __call__(self, event: LeaseWarningEvent) -> None:
        self.events.append(event)
        self.times.append(self.clock.monotonic())


def test_warning_time_is_before_the_end_but_after_the_first_attempt_had_its_chance() -> None:
    # a 10 s lease ending at 10: renewed at 3.33; its first attempt has until 6.67 at most
    assert warning_time(0.0, 10.0, 10.0, 2.0) == 8.0
    assert warning_time(0.0, 10.0, 10.0, 9.0) == pytest.approx(10 - 10 / 3)
    assert warning_time(9.0, 10.0, 10.0, 5.0) == 9.5  # late: half of what is left


def test_a_warning_comes_before_the_desired_expiration_and_again_after_it_is_moved(
        clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock)
    lease = landlord.lease(10)
    start = clock.monotonic()
    warned, reached = WarningRecorder(clock), Recorder(clock)
    manager.renew_for(lease, 100, on_desired_expiration=reached, on_warning=warned, warn_before=20)
    run(clock, manager, 85)
    assert [(e.reason, e.left, e.exception) for e in warned.events] == [("desired", 20.0, None)]
    assert warned.times == [pytest.approx(start + 80)] and len(manager) == 1  # still kept
    manager.set_expiration(lease, clock.time() + 100)  # the holder woke up: 100 s more
    run(clock, manager, 150)
    assert [e.reason for e in warned.events] == ["desired", "desired"]
    assert warned.times[1] == pytest.approx(start + 165)  # 20 s before the new end, 185
    assert len(reached.events) == 1 and reached.events[0].expiration == warned.events[1].expiration


def test_a_healthy_lease_is_never_warned_about_its_own_end(clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock)
    lease = landlord.lease(10)
    warned = WarningRecorder(clock)
    manager.renew_for(lease, FOREVER, on_warning=warned, warn_before=9)  # more than the 6.7 s a renewal leaves
    run(clock, manager, 100)
    assert warned.events == [] and len(landlord.requests) >= 25


def test_a_lease_that_cannot_be_renewed_is_warned_about_before_it_ends(
        clock: FakeClock, manager: LeaseRenewalManager) -> None:
    landlord = FakeLandlord(clock)
    lease = landlord.lease(10)
    start = clock.monotonic()
    warned, lost = WarningRecorder(clock), Recorder(clock)
    manager.renew_for(lease, 100, lost, on_warning=warned, warn_before=3)
    landlord.unreachable = True
    run(clock, manager, 9)
    assert [(e.reason, e.left) for e in warned.events] == [("unrenewed", 3.0)]
    assert warned.times == [pytest.approx(start + 7)] and not lost.events
    assert warned.events[0].exception in landlord.raised  # why it could not be renewed
    landlord.unreachable = False  # back in time: renewed, and a later outage warns again
    run(clock, manager, 20)
    assert len(warned.events) == 1 and not lost.events
    landlord.unreachable = True
    run(clock, manager, 30)
    assert [e.reason for e in warned.events] == ["unrenewed", "unrenewed"] and len(lost.events) == 1
    wall = clock.time() - clock.monotonic()
    assert lost.times[0] - (warned.times[1] + wall) == pytest.approx(3.0)  # 3 s before it was lost


def test_warning_settings_are_checked_and_a_bad_one_changes_nothing(
        clock: FakeClock, manager: LeaseRenewalManager) -> None:
    lease = FakeLandlord(clock).lease(10)
    warned = WarningRecorder(clock)
    for kwargs, error, words in [
        ({"on_warning": warned}, TypeError, "go together"),
        ({"warn_before": 5}, TypeError, "go together"),
        ({"on_warning": "print", "warn_before": 5}, TypeError, "callable"),
        ({"on_warning": warned, "warn_before": 0}, ValueError, "positive"),
        ({"on_warning": warned, "warn_before": -1}, ValueError, "warn_before"),
        ({"on_warning": warned, "warn_before": math.nan}, ValueError, "warn_before"),
        ({"on_warning": warned, "warn_before": math.inf}, ValueError, "finite"),
        ({"on_warning": warned, "warn_before": "5"}, ValueError, "warn_before"),
    ]:
        with pytest.raises(error, match=words):
            manager.renew_for(lease, 100, **kwargs)  # type: ignore[arg-type]
        with pytest.raises(error, match=words):
            manager.renew_until(lease, clock.time() + 100, **kwargs)  # type: ignore[arg-type]
    assert len(manager) == 0


# -- a landlord too slow for rounds to be instant -------------------------------------------------


class SlowLandlord(FakeLandlord):
    """A landlord made slow on purpose: one worker, ``per_lease`` seconds of work per lease renewed.

    A call waits for the work before it (calls its holder gave up on too: the
    landlord still works through them), then takes its own, and grants as of
    its end. A holder whose call timeout is shorter sees a ``TimeoutError``
    then, as a real one would; those leases are renewed all the same when the
    landlord gets to them, unbeknownst to the holder. ``margins`` holds, per
    call answered, the least time any of its leases had left when renewed.
    """

    def __init__(self, clock: FakeClock, *, per_lease: float) -> None:
        super().__init__(clock)
        self.per_lease = per_lease
        self.free_at = -math.inf  # monotonic: when its worker is done with what it was sent
        self.abandoned: list[tuple[float, list[Lease], list[float]]] = []
        self.margins: list[float] = []

    def renew_batch(self, leases: Sequence[Lease], durations: Sequence[float]) -> dict[Lease, Exception]:
        now = self.clock.monotonic()
        done = max(now, self.free_at) + self.per_lease * len(leases)
        self.free_at = done
        bound = proxies._timeout()
        if bound is not None and done - now > bound:
            self.abandoned.append((done, list(leases), list(durations)))
            self.clock.advance(bound)
            raise Pyro5.errors.TimeoutError("receiving: timeout")
        self.clock.advance(done - now)
        self._catch_up()
        wall = self.clock.time()
        self.margins.append(min(self.expires[lease] for lease in leases) - wall)
        return super().renew_batch(leases, durations)

    def _catch_up(self) -> None:
        """The work of calls given up on, done by now: those leases are renewed (the holder never knew)."""
        while self.abandoned and self.abandoned[0][0] <= self.clock.monotonic():
            _, leases, durations = self.abandoned.pop(0)
            for lease, duration in zip(leases, durations):
                try:
                    self._grant(lease, duration)
                except (UnknownLeaseError, LeaseDeniedError):
                    pass


class TimedLog(logging.Handler):
    """Records WARNINGs of ``landlord.pace`` with the fake monotonic time each was logged at."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(logging.WARNING)
        self.clock = clock
        self.records: list[tuple[float, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((self.clock.monotonic(), record.getMessage()))


@pytest.fixture
def pace_log(clock: FakeClock) -> Iterator[TimedLog]:
    handler, logger = TimedLog(clock), logging.getLogger("landlord.pace")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


@contextlib.contextmanager
def keeping_6000(landlord: SlowLandlord, lost: Recorder) -> Iterator[LeaseRenewalManager]:
    """A manager (calls of at most 1,000) keeping 6,000 fresh 10 s leases of ``landlord`` forever."""
    with LeaseRenewalManager(clock=landlord.clock, max_batch=1000) as manager:
        for _ in range(6000):
            manager.renew_for(landlord.lease(10), FOREVER, lost)
        yield manager


def test_a_slow_landlord_is_measured_and_its_leases_renewed_late_in_their_term_rather_than_lost(
        clock: FakeClock, pace_log: TimedLog) -> None:
    """6,000 leases of 10 s, in six calls of a second each at 0.8 ms a lease: a round takes 4.8 s,
    more than the 3.3 s between a renewal a third into the term and a third left. Sent a third in
    (as before the manager measured its landlord) the six calls queue behind one another, every
    round later than the last, until attempts time out on leases with little left and the landlord
    spends its time on calls given up on. Measured, the manager waits for calls as long as they take,
    and with its landlord's lane busy it renews as late as still finishes with a third of the term left:
    once every two thirds of a term, a load the landlord can carry."""
    landlord = SlowLandlord(clock, per_lease=0.8e-3)
    lost = Recorder(clock)
    with keeping_6000(landlord, lost) as manager:
        run(clock, manager, 120)
    assert lost.events == []
    assert sum(len(call) for call in landlord.batch_calls) >= 6000 * 15  # every lease renewed all along
    first_round = 6
    assert min(landlord.margins[first_round:]) >= 10 / 3 - 0.01  # each call done with a third of the term left
    assert not landlord.abandoned and not landlord.raised
    # the first round, sent before anything was measured, came late and was warned of; none since
    assert [at for at, _ in pace_log.records if at > 10] == []


def test_a_landlord_that_cannot_be_kept_up_with_is_warned_about_before_a_lease_is_lost(
        clock: FakeClock, pace_log: TimedLog) -> None:
    """Kept up with at 0.5 ms a lease, the landlord slows to 1.3 ms: a round of 6,000 then takes 7.8 s,
    more than the two thirds of a 10 s term between the latest safe renewals. Leases will be lost;
    the warning comes first."""
    landlord = SlowLandlord(clock, per_lease=0.5e-3)
    lost = Recorder(clock)
    with keeping_6000(landlord, lost) as manager:
        run(clock, manager, 40)
        assert lost.events == [] and not pace_log.records
        landlord.per_lease = 1.3e-3
        run(clock, manager, 80)
    assert lost.events, "6,000 leases at 1.3 ms each cannot be renewed every 6.7 s"
    first_lost = min(lost.times) - (clock.time() - clock.monotonic())
    warned = [at for at, message in pace_log.records if "cannot be kept up with" in message]
    assert warned and warned[0] < first_lost


# -- where calls go: one lane per endpoint, and whether it answers ------------------------------

def test_leases_naming_one_address_share_one_lane_whatever_their_landlord_ids() -> None:
    endpoints = Endpoints()

    def lane(uri: str, landlord_id: str, landlords: list[str] | None = None) -> Hashable:
        lease = LandlordLease("c" * 22, uri, landlord_id, 1e12, landlords=landlords)
        return endpoints.lane_of(lease, ("landlord", landlord_id))

    assert lane("PYRO:rooms@10.0.0.1:9", "a") == lane("PYRO:other@10.0.0.1:9", "b") == ("endpoint", "10.0.0.1:9")
    assert lane("PYRO:rooms@10.0.0.1:10", "a") != lane("PYRO:rooms@10.0.0.1:9", "a")
    group = ["PYRO:g@10.0.0.2:9", "PYRO:g@10.0.0.3:9"]
    assert lane(group[0], "group", group) == lane(group[1], "group", group) == ("endpoint", "10.0.0.2:9")
    landlord = Landlord(reaper="lazy")  # an in-process landlord: the call's own lane
    try:
        in_process = landlord.new_lease("r", 10)
        assert endpoints.lane_of(in_process, ("landlord", "mine")) == ("landlord", "mine")
    finally:
        landlord.close()


def test_an_endpoints_standing_is_how_its_last_call_went() -> None:
    endpoints = Endpoints(remembered=2)
    first, second, third = ("endpoint", "a:1"), ("endpoint", "b:1"), ("endpoint", "c:1")
    assert endpoints.standing(first) == UNHEARD and not endpoints.answering(first)
    endpoints.heard(first, answered=False)
    assert endpoints.standing(first) == FAILING
    endpoints.heard(first, answered=True)
    assert endpoints.standing(first) == ANSWERING and endpoints.answering(first)
    endpoints.heard(first, answered=False)
    assert endpoints.standing(first) == FAILING and not endpoints.answering(first)
    for lane in (first, second, first, third):  # at most two of a standing: the one heard from longest ago goes
        endpoints.heard(lane, answered=True)
    assert [endpoints.standing(lane) for lane in (first, second, third)] == [ANSWERING, UNHEARD, ANSWERING]


class HangingWatcher:
    """A revocation watcher whose watch of a lease at ``hung`` never returns until released."""

    def __init__(self, hung: str) -> None:
        self.hung = hung
        self.release = threading.Event()
        self.watched: list[str] = []
        self.seen = threading.Condition()

    def watch(self, lease: LandlordLease, on_revoked: Callable[[str], None]) -> None:
        if lease.landlord == self.hung:
            self.release.wait(30)
        with self.seen:
            self.watched.append(lease.landlord)
            self.seen.notify_all()

    def unwatch(self, lease: LandlordLease) -> None:
        pass


def test_a_watch_that_hangs_keeps_no_worker_from_a_landlord_that_answers(clock: FakeClock) -> None:
    hung, answering = "PYRO:rooms@10.0.0.1:9", "PYRO:rooms@10.0.0.2:9"
    watcher = HangingWatcher(hung)
    manager = LeaseRenewalManager(clock=clock, workers=1, doubtful_workers=1, revocations=watcher)
    try:
        manager._endpoints.heard(manager._endpoints.lane_of(LandlordLease("c" * 22, answering, "b", 1e12), None),
                                 answered=True)  # as after a renewal it answered
        manager.renew_for(LandlordLease("h" * 22, hung, "a", clock.time() + 60, clock=clock), 30)
        manager.renew_for(LandlordLease("g" * 22, answering, "b", clock.time() + 60, clock=clock), 30)
        with watcher.seen:
            assert watcher.seen.wait_for(lambda: answering in watcher.watched, 10), watcher.watched
        assert hung not in watcher.watched  # still hanging, on a worker of the doubtful's
    finally:
        watcher.release.set()
        manager.close()
