"""Load-adaptive terms (landlord.grantor.adaptive): terms grow with the leases held and the renewals measured,
so the renewal load stays under its cap; back to min_term when idle; within bounds. Fake clock throughout."""

from __future__ import annotations

import heapq
import math

import pytest

from landlord import ANY, FOREVER, FakeClock, Landlord, LeaseDeniedError, LeaseDurationPolicy, UnknownLeaseError
from landlord.grantor.adaptive import AIM, SLOTS, AdaptivePolicy
from landlord.grantor.policy import LeasePolicy


def served(clock: FakeClock, policy: LeasePolicy) -> Landlord:
    return Landlord(policy=policy, clock=clock, reaper="lazy")


def hold(landlord: Landlord, count: int, duration: float = ANY) -> list[str]:
    return [landlord.new_lease(number, duration).cookie for number in range(count)]


class Holders:
    """Holders that renew each lease a share into its term (a third, as a LeaseRenewalManager does),
    those due together in one call, asking for ANY; each renewal's time is noted."""

    def __init__(self, landlord: Landlord, clock: FakeClock, *, share: float = 1 / 3) -> None:
        self.landlord = landlord
        self.clock = clock
        self.share = share
        self.due: list[tuple[float, int, str]] = []
        self.renewed_at: list[float] = []
        self._added = 0

    def add(self, count: int) -> list[str]:
        now = self.clock.monotonic()
        cookies = []
        for _ in range(count):
            lease = self.landlord.new_lease(self._added, ANY)
            self._added += 1
            heapq.heappush(self.due, (now + self.share * lease.term, self._added, lease.cookie))
            cookies.append(lease.cookie)
        return cookies

    def run_until(self, end: float) -> None:
        while self.due and self.due[0][0] < end:
            self.clock.advance(max(0.0, self.due[0][0] - self.clock.monotonic()))
            now = self.clock.monotonic()
            cookies = []
            while self.due and self.due[0][0] <= now:
                cookies.append(heapq.heappop(self.due)[2])
            results = self.landlord.renew_all(cookies, [ANY] * len(cookies))
            assert not results.denied
            for cookie, granted in zip(cookies, results.granted):
                self._added += 1
                heapq.heappush(self.due, (now + self.share * granted, self._added, cookie))
            self.renewed_at += [now] * len(cookies)
        self.clock.advance(max(0.0, end - self.clock.monotonic()))

    def rate(self, since: float, until: float) -> float:
        """Renewals per second the landlord served between the two times."""
        return sum(1 for at in self.renewed_at if since <= at < until) / (until - since)


# -- terms from the count --------------------------------------------------------------------------


def test_an_idle_landlord_grants_min_term(clock: FakeClock) -> None:
    policy = AdaptivePolicy(renewal_cap=100, min_term=2, max_term=50)
    landlord = served(clock, policy)
    assert landlord.new_lease("a", ANY).term == 2
    assert landlord.new_lease("b", FOREVER).term == 2
    assert landlord.new_lease("c", 1).term == 1  # asked for less
    assert policy.term == 2 and policy.renewals_per_term == 1 and policy.renewal_rate == 0


def test_terms_grow_with_the_leases_held_before_any_renewal(clock: FakeClock) -> None:
    # Reggie's rule until renewals are measured: each lease renewed once a term
    cap = 100.0
    landlord = served(clock, AdaptivePolicy(renewal_cap=cap, min_term=1, max_term=1000))
    terms = []
    for total in (160, 800, 1600):
        hold(landlord, total - len(landlord))
        probe = landlord.new_lease("probe", ANY)
        terms.append(probe.term)
        landlord.cancel(probe.cookie)
    assert terms == pytest.approx([160 / (AIM * cap), 800 / (AIM * cap), 1600 / (AIM * cap)])
    assert terms == pytest.approx([2.0, 10.0, 20.0])


def test_terms_stay_within_max_term_however_many_leases(clock: FakeClock) -> None:
    policy = AdaptivePolicy(renewal_cap=10, min_term=1, max_term=5)
    landlord = served(clock, policy)
    cookies = hold(landlord, 1000)  # 1000 / (0.8 * 10) = 125 s, beyond max_term
    assert landlord.new_lease("x", FOREVER).term == 5
    clock.advance(0.5)  # the first were granted min_term, while few were held
    for requested in (ANY, FOREVER, 1e9, 5.5):
        results = landlord.renew_all(cookies, [requested] * len(cookies))
        assert not results.denied and max(results.granted) == min(results.granted) == 5, requested
    assert policy.term == 5


def test_a_renewal_gets_min_term_at_least_unless_it_asks_for_less(clock: FakeClock) -> None:
    policy = AdaptivePolicy(renewal_cap=1000, min_term=10, max_term=100)
    landlord = served(clock, policy)
    lease = landlord.new_lease("a", ANY)
    assert lease.term == 10
    for requested, granted in ((ANY, 10), (FOREVER, 10), (30, 10), (3, 3), (10, 10)):
        clock.advance(2)
        assert landlord.renew(lease.cookie, requested) == granted, requested


# -- terms from the measured renewals ----------------------------------------------------------------


def test_renewals_a_third_into_each_term_triple_it_and_the_load_stays_at_its_aim(clock: FakeClock) -> None:
    cap = 100.0
    policy = AdaptivePolicy(renewal_cap=cap, min_term=1, max_term=1000, window=30)
    holders = Holders(served(clock, policy), clock)
    holders.add(400)
    # as the last was granted (399 held): 5 s, each lease counted once a term
    assert policy.term == pytest.approx(399 / (AIM * cap))
    holders.run_until(150)
    assert policy.renewals_per_term == pytest.approx(3, rel=0.05)
    assert policy.term == pytest.approx(3 * 400 / (AIM * cap), rel=0.05)  # 15 s
    assert policy.renewal_rate == pytest.approx(AIM * cap, rel=0.1)
    assert holders.rate(90, 150) == pytest.approx(AIM * cap, rel=0.1)  # as the holders saw it too


def test_the_renewal_load_stays_under_its_cap_while_the_leases_grow_tenfold(clock: FakeClock) -> None:
    cap, step, seconds = 100.0, 80, 60.0
    fixed_term = 3 * step / (AIM * cap)  # the adaptive policy's term at the first step, for the fixed one
    rates: dict[str, list[float]] = {}
    for name, policy in (("adaptive", AdaptivePolicy(renewal_cap=cap, min_term=1, max_term=1000, window=30)),
                         ("fixed", LeaseDurationPolicy(maximum=fixed_term, default=fixed_term))):
        clock = FakeClock()
        holders = Holders(served(clock, policy), clock)
        rates[name] = []
        for _ in range(10):
            holders.add(step)
            start = clock.monotonic()
            holders.run_until(start + seconds)
            rates[name].append(holders.rate(start + seconds / 2, start + seconds))  # once settled
    assert max(rates["adaptive"]) <= cap, rates["adaptive"]
    assert rates["fixed"][-1] >= 9 * rates["fixed"][0] and rates["fixed"][-1] > 5 * cap, rates["fixed"]


def test_terms_shrink_back_to_min_term_when_holders_leave_or_go_quiet(clock: FakeClock) -> None:
    cap = 100.0
    policy = AdaptivePolicy(renewal_cap=cap, min_term=1, max_term=1000, window=30)
    landlord = served(clock, policy)
    holders = Holders(landlord, clock)
    holders.add(400)
    holders.run_until(120)
    assert policy.term == pytest.approx(15, rel=0.05)
    # the holders of all but ten leave; those ten go on renewing a third into each term
    leaving = {cookie for _, _, cookie in holders.due[10:]}
    landlord.cancel_all(list(leaving))
    holders.due = [entry for entry in holders.due if entry[2] not in leaving]
    heapq.heapify(holders.due)
    holders.run_until(200)
    assert policy.term == 1 and policy.renewals_per_term == pytest.approx(3, rel=0.1)  # 10 * 3 / 80: 0.375 s
    assert policy.renewal_rate < 0.5 * AIM * cap
    # then they stop: after the slot of the last renewal and a whole window, nothing is measured
    clock.advance(30 + 30 / SLOTS)
    assert policy.renewal_rate == 0 and policy.renewals_per_term == 1
    assert landlord.new_lease("late", ANY).term == 1


def test_leases_that_ran_out_stop_counting_once_freed(clock: FakeClock) -> None:
    policy = AdaptivePolicy(renewal_cap=10, min_term=1, max_term=1000, window=10)
    landlord = served(clock, policy)
    crashed = hold(landlord, 400)  # 50 s each
    kept = landlord.new_lease("kept", 2)
    assert policy.term == 50
    clock.advance(1.5)
    landlord.renew(kept.cookie, 2)  # the window starts
    clock.advance(60)  # the 400 ran out; their holders crashed
    with pytest.raises(UnknownLeaseError):
        landlord.renew(crashed[0], ANY)
    landlord.renew(landlord.new_lease("again", 1).cookie, ANY)  # a use frees them; the window moves on
    assert len(landlord) == 1 and policy.term == 1


def test_the_rate_is_counted_over_a_sliding_window(clock: FakeClock) -> None:
    policy = AdaptivePolicy(renewal_cap=1000, min_term=100, max_term=1000, window=10)  # slots of 1 s
    landlord = served(clock, policy)
    cookie = landlord.new_lease("a", ANY).cookie
    landlord.renew(cookie, ANY)  # t=0: the window starts, this renewal in its first slot
    clock.advance(0.5)
    for _ in range(49):
        landlord.renew(cookie, ANY)
    clock.advance(0.5)
    landlord.renew(cookie, ANY)  # t=1: the first slot closes with 50 renewals in 1 s
    assert policy.renewal_rate == 50
    clock.advance(4)
    landlord.renew(cookie, ANY)  # t=5: 51 renewals in the 5 s measured so far
    assert policy.renewal_rate == pytest.approx(51 / 5)
    clock.advance(6)
    landlord.renew(cookie, ANY)  # t=11: the window is [1, 11): the 50 have slid out, 2 renewals left in it
    assert policy.renewal_rate == pytest.approx(2 / 10)
    assert SLOTS == 10
    clock.advance(10.9)
    assert policy.renewal_rate == pytest.approx(2 / 10)  # the last renewal's slot, [11, 12), not yet out
    clock.advance(0.1)
    assert policy.renewal_rate == 0  # a whole window since: read as quiet, before the next renewal


def test_time_handed_back_early_is_what_counts_not_the_number_of_calls(clock: FakeClock) -> None:
    # a holder renewing with half its term left renews twice a term; one renewing at the last moment, once
    cap = 10.0
    for share, per_term in ((0.5, 2.0), (0.999, 1.0)):
        policy = AdaptivePolicy(renewal_cap=cap, min_term=1, max_term=1000, window=100)
        clock = FakeClock()
        holders = Holders(served(clock, policy), clock, share=share)
        holders.add(80)
        holders.run_until(400)
        assert policy.renewals_per_term == pytest.approx(per_term, rel=0.05), share
        assert policy.term == pytest.approx(per_term * 80 / (AIM * cap), rel=0.05), share


# -- what it keeps of LeaseDurationPolicy --------------------------------------------------------------


def test_lifetime_and_grace_work_as_in_the_duration_policy(clock: FakeClock) -> None:
    landlord = served(clock, AdaptivePolicy(renewal_cap=100, min_term=10, max_term=100, lifetime=25, grace=5))
    lease = landlord.new_lease("a", ANY)
    clock.advance(9)
    assert landlord.renew(lease.cookie, ANY) == 10
    clock.advance(9)
    assert landlord.renew(lease.cookie, ANY) == 7  # up to the cap: less than min_term
    clock.advance(6)
    with pytest.raises(LeaseDeniedError, match="lifetime cap of 25"):
        landlord.renew(lease.cookie, ANY)
    other = landlord.new_lease("b", ANY)
    clock.advance(12)  # 2 s into its grace
    assert landlord.renew(other.cookie, ANY) == 10  # revived


# -- options -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("options, error, message", [
    ({"renewal_cap": "100"}, TypeError, "renewal_cap must be a number"),
    ({"renewal_cap": True}, TypeError, "renewal_cap must be a number"),
    ({"renewal_cap": None}, TypeError, "renewal_cap must be a number"),
    ({"renewal_cap": 0}, ValueError, "renewal_cap must be positive"),
    ({"renewal_cap": -5}, ValueError, "renewal_cap must be positive"),
    ({"renewal_cap": math.nan}, ValueError, "renewal_cap must be positive"),
    ({"renewal_cap": math.inf}, ValueError, "renewal_cap must be positive"),
    ({"renewal_cap": 100, "min_term": 0}, ValueError, "min_term must be positive"),
    ({"renewal_cap": 100, "min_term": "1"}, TypeError, "min_term must be a number"),
    ({"renewal_cap": 100, "max_term": FOREVER}, ValueError, "max_term must be positive and finite"),
    ({"renewal_cap": 100, "max_term": 10**400}, ValueError, "max_term must be positive and finite"),
    ({"renewal_cap": 100, "min_term": 20, "max_term": 10}, ValueError, "max_term .10. is shorter than min_term"),
    ({"renewal_cap": 100, "window": 0}, ValueError, "window must be positive"),
    ({"renewal_cap": 100, "window": [60]}, TypeError, "window must be a number"),
    ({"renewal_cap": 100, "grace": -1}, ValueError, "grace"),
    ({"renewal_cap": 100, "lifetime": 0}, ValueError, "lifetime must be positive"),
])
def test_bad_options_are_refused(options: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        AdaptivePolicy(**options)  # type: ignore[arg-type]


def test_options_are_keyword_only_and_the_cap_is_required() -> None:
    with pytest.raises(TypeError):
        AdaptivePolicy(100)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        AdaptivePolicy()  # type: ignore[call-arg]


def test_repr_names_the_options_and_the_term_now(clock: FakeClock) -> None:
    policy = AdaptivePolicy(renewal_cap=5000, min_term=0.5, max_term=60, window=20, grace=2, lifetime=3600)
    assert repr(policy) == ("AdaptivePolicy(renewal_cap=5000, min_term=0.5, max_term=60, window=20, grace=2, "
                            "lifetime=3600; term now 0.5)")
    assert repr(AdaptivePolicy(renewal_cap=10)) == (
        "AdaptivePolicy(renewal_cap=10, min_term=10, max_term=600, window=60; term now 10)")
