"""landlord.holder.schedule: what is due when, per batch of leases, on times passed in (no threads, no sleeps)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import Pyro5.errors
import pytest

from landlord import ANY, FOREVER, AbstractLease, BatchableLease, FakeClock, Lease, LeaseDeniedError, UnknownLeaseError
from landlord.holder.schedule import Call, LeaseRenewalEvent, Schedule, Told, retry_time

THIRD = 10 / 3  # a 10 s lease is renewed a third into its term
A, B = ("landlord", "A"), ("landlord", "B")


class Plain(AbstractLease):
    """A lease that does not batch (not a :class:`BatchableLease`); the schedule never calls it."""

    __slots__ = ()

    def __init__(self, clock: FakeClock, term: float = 10.0) -> None:
        super().__init__(clock.time() + term, clock=clock, term=term)

    def _do_renew(self, duration: float) -> float:
        raise AssertionError("a schedule makes no calls")

    def cancel(self) -> None:
        raise AssertionError("a schedule makes no calls")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {id(self):x}>"


class Held(Plain, BatchableLease):
    """A lease of the landlord ``key`` (``None``: one renewed on its own); the schedule never calls it."""

    __slots__ = ("key",)

    def __init__(self, clock: FakeClock, term: float = 10.0, key: Hashable | None = A) -> None:
        super().__init__(clock, term)
        self.key = key

    def batch_key(self) -> Hashable | None:
        return self.key

    def renew_batch(self, leases: Sequence[Held], durations: Sequence[float]) -> dict[Lease, Exception]:
        raise AssertionError("a schedule makes no calls")

    def cancel_batch(self, leases: Sequence[Held]) -> dict[Lease, Exception]:
        raise AssertionError("a schedule makes no calls")


class Listener:
    def __init__(self) -> None:
        self.events: list[LeaseRenewalEvent] = []

    def __call__(self, event: LeaseRenewalEvent) -> None:
        self.events.append(event)


def schedule(**options: object) -> Schedule:
    """A schedule without jitter unless asked: retry delays are the backoff's ceilings."""
    options.setdefault("random", lambda: 0.0)
    return Schedule(**options)  # type: ignore[arg-type]


def add(s: Schedule, lease: Plain, now: float, *, desired: float = math.inf, renew_duration: float | None = None,
        listener: Listener | None = None, on_desired: Listener | None = None) -> None:
    s.add(lease, desired=desired, desired_wall=desired + 1000, now=now, listener=listener, on_desired=on_desired,
          renew_duration=lease.term if renew_duration is None else renew_duration)


def renewed(s: Schedule, call: Call, clock: FakeClock, granted: float = 10.0,
            failures: dict[Held, BaseException] | None = None) -> list[Told]:
    """The landlord grants ``granted`` to each lease of ``call`` not in ``failures``, now."""
    leases, _ = call.requests()
    sent = clock.time(), clock.monotonic()
    for lease in leases:
        if lease not in (failures or {}):
            assert isinstance(lease, AbstractLease)
            lease.record_grant(sent, granted)
    return s.finished(call, clock.monotonic(), failures=failures)


def to(clock: FakeClock, time: float) -> float:
    clock.advance(time - clock.monotonic())
    return time


def members(call: Call) -> list[Held]:
    return call.requests()[0]  # type: ignore[return-value]


# -- the timing rules -------------------------------------------------------------------


def test_retry_time_counts_the_delay_from_sending_and_never_passes_the_deadline() -> None:
    assert retry_time(5, 10, 1) == 6
    assert retry_time(5, 10, 4) == 7.5  # near the end: half of what is left instead
    assert retry_time(5, 10, 1, waited=0.3) == pytest.approx(5.7)  # the failed attempt waited already
    assert retry_time(5, 10, 1, waited=3) == 5.05  # waited longer than the delay: at once, bar 50 ms
    assert retry_time(9.99, 10, 1) == 10  # never past the deadline: the loss is told then
    assert retry_time(5, math.inf, 1) == 6


# -- batches ------------------------------------------------------------------------------


def test_leases_of_one_landlord_due_within_the_window_share_one_entry(clock: FakeClock) -> None:
    s = schedule()
    for _ in range(100):  # issued over half a second
        add(s, Held(clock), clock.monotonic())
        clock.advance(0.005)
    assert len(s) == 100 and s.queued() == 1
    assert s.next_due() == pytest.approx(THIRD)  # the first one's due: none is renewed late
    add(s, Held(clock, key=B), clock.monotonic())  # another landlord
    add(s, Held(clock, key=None), clock.monotonic())  # leases renewed on their own
    add(s, Held(clock, key=None), clock.monotonic())
    to(clock, 2)
    add(s, Held(clock), clock.monotonic())  # due more than the window later
    assert len(s) == 104 and s.queued() == 5


def test_a_round_goes_out_in_one_call_and_comes_back_as_one_entry(clock: FakeClock) -> None:
    s = schedule()
    leases = []
    for _ in range(100):
        leases.append(Held(clock))
        add(s, leases[-1], clock.monotonic())
        clock.advance(0.005)
    assert s.take_due(THIRD - 0.01) == ([], [])  # not yet
    calls, told = s.take_due(to(clock, THIRD))
    assert told == [] and len(calls) == 1 and members(calls[0]) == leases
    assert calls[0].lane == A and calls[0].sent == THIRD
    assert calls[0].deadline() == pytest.approx(10)  # the first to end
    assert s.queued() == 0 and s.next_due() == math.inf  # out until the call returns
    clock.advance(0.2)
    assert renewed(s, calls[0], clock) == []
    assert s.queued() == 1 and s.next_due() == pytest.approx(THIRD + 0.2 + THIRD)  # a third into the new term
    calls, _ = s.take_due(to(clock, s.next_due()))
    assert len(calls) == 1 and len(calls[0]) == 100


def test_renewals_due_within_the_window_join_a_call_to_their_landlord(clock: FakeClock) -> None:
    s = schedule()
    first = Held(clock)  # due at 3.33
    to(clock, 2 / 3)
    joining = Held(clock)  # due at 4.0: joins
    add(s, joining, clock.monotonic())
    add(s, first, clock.monotonic())  # sooner than the open batch: an entry of its own
    late = Held(clock, term=12)  # due at 0.67 + 4 = 4.67: more than the window after 3.34
    add(s, late, clock.monotonic())
    other = Held(clock, key=B)  # another landlord's, due at 4.0
    add(s, other, clock.monotonic())
    dropping = Held(clock)  # granted past its desired expiration (3.5): dropped then, not renewed
    add(s, dropping, clock.monotonic(), desired=3.5)
    assert s.queued() == 5
    calls, told = s.take_due(to(clock, THIRD + 0.01))
    assert told == [] and [members(call) for call in calls] == [[first, joining]]
    assert s.queued() == 3 and s.next_due() == 3.5


def test_a_batch_larger_than_max_batch_goes_in_several_calls_each_backing_off_on_its_own(
        clock: FakeClock) -> None:
    s = schedule(max_batch=4, batch_window=0.5)
    for _ in range(10):
        add(s, Held(clock, term=100), 0.0)
    due = 100 / 3
    calls, _ = s.take_due(to(clock, due))
    assert sorted(len(call) for call in calls) == [2, 4, 4] and len({call.lane for call in calls}) == 1
    for delay in (1, 2, 4):  # each call's own delays; one shared backoff would make them 1, 2, 4 within a round
        for call in calls:
            s.finished(call, due, error=Pyro5.errors.CommunicationError("down"))
        assert s.next_due() == due + delay
        calls, _ = s.take_due(to(clock, due + delay))
        assert sorted(len(call) for call in calls) == [2, 4, 4]  # all due together again
        due += delay


def test_leases_back_from_one_call_are_due_by_their_own_deadline_and_term(clock: FakeClock) -> None:
    s = schedule(batch_window=0.0)  # no window: each due time is an entry of its own
    leases = [Held(clock) for _ in range(5)]
    for lease in leases:
        add(s, lease, 0.0)
    calls, _ = s.take_due(to(clock, THIRD))
    sent = clock.time(), clock.monotonic()
    for lease, granted in zip(leases, (10.0, 10.0, 15.0, 10.0)):  # runs of equal grants, interleaved
        lease.record_grant(sent, granted)
    # right after a 10 s grant, one ending at the same moment with a 9 s term: due a third into that term
    leases[4].record_grant((sent[0] + 1, sent[1] + 1), 9.0)
    assert s.finished(calls[0], THIRD) == []
    assert s.queued() == 3
    by_due = []
    while s.next_due() < math.inf:
        due = s.next_due()
        calls, _ = s.take_due(to(clock, due))
        by_due.append((due, sorted(leases.index(lease) for call in calls for lease in members(call))))
    assert by_due == [(pytest.approx(2 * THIRD), [0, 1, 3]), (pytest.approx(THIRD + 4), [4]),
                      (pytest.approx(THIRD + 5), [2])]


@pytest.mark.parametrize("kind", ["not batchable", "no batch key"])
def test_leases_without_a_batch_key_go_one_per_call(clock: FakeClock, kind: str) -> None:
    s = schedule()
    alone = [Plain(clock) if kind == "not batchable" else Held(clock, key=None) for _ in range(3)]
    for lease in alone:
        add(s, lease, 0.0)
    calls, _ = s.take_due(to(clock, THIRD))
    assert sorted(len(call) for call in calls) == [1, 1, 1]
    assert {call.lane for call in calls} == {("lease", id(lease)) for lease in alone}
    for call in calls:
        renewed(s, call, clock)
    assert s.queued() == 3


# -- what each renewal asks for -------------------------------------------------------------


def test_each_request_is_renew_duration_but_no_further_than_the_desired_expiration(clock: FakeClock) -> None:
    s = schedule()
    short, capped, chosen, forever = Held(clock), Held(clock), Held(clock), Held(clock)
    add(s, short, 0.0, desired=12)
    add(s, capped, 0.0, desired=100, renew_duration=6)
    add(s, chosen, 0.0, desired=100, renew_duration=ANY)
    add(s, forever, 0.0, renew_duration=FOREVER)
    calls, _ = s.take_due(to(clock, THIRD))
    assert calls[0].requests() == ([short, capped, chosen, forever], [pytest.approx(12 - THIRD), 6, ANY, FOREVER])


# -- failures ---------------------------------------------------------------------------------


def test_a_definite_answer_lets_the_lease_go_at_once(clock: FakeClock) -> None:
    s = schedule()
    refused, kept, lost = Held(clock), Held(clock), Listener()
    add(s, refused, 0.0, listener=lost)
    add(s, kept, 0.0, listener=lost)
    calls, _ = s.take_due(to(clock, THIRD))
    denial = LeaseDeniedError("no")
    told = renewed(s, calls[0], clock, failures={refused: denial})
    assert told == [(lost, LeaseRenewalEvent(refused, math.inf, denial))]
    assert s.expiration(refused) is None and len(s) == 1 and s.queued() == 1
    calls, _ = s.take_due(to(clock, s.next_due()))
    unknown = UnknownLeaseError("gone")
    told = s.finished(calls[0], clock.monotonic(), error=unknown)
    assert told == [(lost, LeaseRenewalEvent(kept, math.inf, unknown))]
    assert len(s) == 0 and s.queued() == 0


def test_without_an_answer_a_lease_is_retried_until_its_deadline_then_told_lost(clock: FakeClock) -> None:
    s = schedule(retry_initial=1.0, retry_max=60.0)
    lease, lost = Held(clock), Listener()
    add(s, lease, 0.0, listener=lost)
    calls, _ = s.take_due(THIRD)
    s.finished(calls[0], THIRD + 0.3, error=Pyro5.errors.TimeoutError("no answer"))
    # the first delay (1 s) counts from when the attempt was sent, 0.3 s before it failed
    assert s.next_due() == pytest.approx(THIRD + 1)
    attempts, told = [], []
    for number in range(100):
        now = s.next_due()
        calls, told = s.take_due(now)
        if told:
            break
        attempts.append(now)
        error = Pyro5.errors.CommunicationError(f"attempt {number}")
        assert s.finished(calls[0], now, error=error) == []
    assert told == [(lost, LeaseRenewalEvent(lease, math.inf, error))]  # with the last error...
    assert now == lease.deadline == 10  # ...when the term ends, not sooner nor later
    # doubling (2, 4...) until half of what is left is less: then halving towards the end
    left = 10 - THIRD - 3  # after the attempts 1 s and 2 s apart
    assert attempts[:4] == pytest.approx([THIRD + 1, THIRD + 3, 10 - left / 2, 10 - left / 4])
    gaps = [b - a for a, b in zip(attempts[2:], attempts[3:])]
    assert gaps == sorted(gaps, reverse=True) and all(gap >= 0.05 - 1e-9 for gap in gaps)
    assert len(s) == 0


def test_retry_delays_are_jittered(clock: FakeClock) -> None:
    s = schedule(retry_initial=2.0, random=lambda: 0.5)
    add(s, Held(clock), 0.0)
    calls, _ = s.take_due(THIRD)
    s.finished(calls[0], THIRD, error=Pyro5.errors.CommunicationError("down"))
    assert s.next_due() == pytest.approx(THIRD + 1.5)  # a quarter of the 2 s ceiling taken off


def test_a_lease_that_fails_alone_is_retried_alone(clock: FakeClock) -> None:
    s = schedule()
    failing, fine = Held(clock), Held(clock)
    add(s, failing, 0.0)
    add(s, fine, 0.0)
    calls, _ = s.take_due(to(clock, THIRD))
    assert renewed(s, calls[0], clock, failures={failing: Pyro5.errors.CommunicationError("lost")}) == []
    assert s.queued() == 2 and s.next_due() == THIRD + 1  # the retry; the renewed one a third on
    calls, _ = s.take_due(to(clock, THIRD + 1))
    assert [members(call) for call in calls] == [[failing]]  # the other is due more than the window later


# -- desired expirations ---------------------------------------------------------------------


def test_a_desired_expiration_reached_lets_the_lease_go_without_an_error(clock: FakeClock) -> None:
    s = schedule()
    lease, done = Held(clock), Listener()
    add(s, lease, 0.0, desired=12, on_desired=done)
    calls, _ = s.take_due(to(clock, THIRD))
    renewed(s, calls[0], clock, granted=12 - THIRD)  # the landlord grants what was asked: up to 12
    assert s.next_due() == 12  # no renewal needed: dropped then
    assert s.take_due(11.9) == ([], [])
    assert s.take_due(12) == ([], [(done, LeaseRenewalEvent(lease, 1012, None))])
    assert len(s) == 0


def test_a_lease_granted_past_its_desired_expiration_is_never_renewed(clock: FakeClock) -> None:
    s = schedule()
    lease, done = Held(clock), Listener()
    add(s, lease, 0.0, desired=5, on_desired=done)
    assert s.next_due() == 5
    assert s.take_due(5) == ([], [(done, LeaseRenewalEvent(lease, 1005, None))])


def test_a_lease_that_never_ends_wanted_forever_is_never_due(clock: FakeClock) -> None:
    s = schedule()
    add(s, Held(clock, term=FOREVER), 0.0)
    assert len(s) == 1 and s.queued() == 0 and s.next_due() == math.inf


# -- changes --------------------------------------------------------------------------------------


def test_remove_and_set_expiration(clock: FakeClock) -> None:
    s = schedule()
    a, b = Held(clock), Held(clock)
    add(s, a, 0.0)
    add(s, b, 0.0)
    assert s.queued() == 1
    assert s.set_expiration(a, desired=2, desired_wall=1002, now=0.0)
    assert s.expiration(a) == 1002 and s.queued() == 2 and s.next_due() == 2
    assert s.remove(a) and not s.remove(a)
    assert s.expiration(a) is None and not s.set_expiration(a, desired=5, desired_wall=5, now=0.0)
    assert s.remove(b) and len(s) == 0 and s.queued() == 0 and s.next_due() == math.inf


def test_a_lease_given_a_new_desired_expiration_goes_once_in_its_next_call(clock: FakeClock) -> None:
    s = schedule()
    a, b, lost = Held(clock), Held(clock), Listener()
    add(s, a, 0.0, listener=lost)
    add(s, b, 0.0, listener=lost)
    assert s.set_expiration(a, desired=100, desired_wall=1100, now=0.0)  # due as before: back in with b
    calls, _ = s.take_due(to(clock, THIRD))
    assert sorted(len(call) for call in calls) == [1, 1] or [len(call) for call in calls] == [2]
    assert sorted(id(lease) for call in calls for lease in members(call)) == sorted([id(a), id(b)])
    told = [t for call in calls for t in s.finished(call, clock.monotonic(), error=LeaseDeniedError("no"))]
    assert sorted(id(event.lease) for _, event in told) == sorted([id(a), id(b)]) and len(s) == 0


def test_leases_removed_or_replaced_while_their_call_is_out_are_left_alone(clock: FakeClock) -> None:
    s = schedule()
    removed, replaced, kept, lost = Held(clock), Held(clock), Held(clock), Listener()
    for lease in (removed, replaced, kept):
        add(s, lease, 0.0, listener=lost)
    calls, _ = s.take_due(to(clock, THIRD))
    s.remove(removed)
    add(s, replaced, clock.monotonic(), desired=50)  # new settings: its own entry from now on
    assert s.queued() == 1
    told = s.finished(calls[0], clock.monotonic(), error=LeaseDeniedError("no"))
    assert told == [(lost, LeaseRenewalEvent(kept, math.inf, told[0][1].exception))]  # only the one still out
    assert s.expiration(replaced) == 1050 and s.expiration(removed) is None and len(s) == 1


def test_set_expiration_while_the_call_is_out_applies_when_it_returns(clock: FakeClock) -> None:
    s = schedule()
    lease, done = Held(clock), Listener()
    add(s, lease, 0.0, on_desired=done)
    calls, _ = s.take_due(to(clock, THIRD))
    assert s.set_expiration(lease, desired=THIRD + 5, desired_wall=7, now=THIRD)
    assert s.queued() == 0  # not queued twice
    renewed(s, calls[0], clock)
    assert s.next_due() == THIRD + 5  # granted past it: dropped then
    assert s.take_due(THIRD + 5) == ([], [(done, LeaseRenewalEvent(lease, 7, None))])


def test_clear_forgets_every_lease_and_the_calls_out(clock: FakeClock) -> None:
    s = schedule()
    out, waiting = Held(clock), Held(clock, term=30)
    add(s, out, 0.0)
    add(s, waiting, 0.0)
    calls, _ = s.take_due(to(clock, THIRD))
    s.clear()
    assert len(s) == 0 and s.queued() == 0 and s.next_due() == math.inf
    assert s.finished(calls[0], clock.monotonic(), error=LeaseDeniedError("no")) == []
    assert s.queued() == 0 and len(s) == 0


@pytest.mark.parametrize("options", [
    {"renew_after": 0}, {"renew_after": 1}, {"renew_after": math.nan}, {"renew_after": True},
    {"batch_window": -1}, {"batch_window": math.inf}, {"batch_window": "1"},
    {"max_batch": 0}, {"max_batch": 2.5},
    {"retry_initial": 0}, {"retry_initial": 5, "retry_max": 1}, {"retry_max": math.inf},
])
def test_bad_options(options: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Schedule(**options)  # type: ignore[arg-type]
