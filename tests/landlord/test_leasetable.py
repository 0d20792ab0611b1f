"""landlord.grantor.leasetable: the lazy calendar finds exactly the leases due, never late, whatever was renewed."""

from __future__ import annotations

import math
import random

import pytest

from landlord.grantor.leasetable import BUCKETS_PER_SECOND, LeaseTable
from landlord.grantor.resource import LeasedResource

WIDTH = 1 / BUCKETS_PER_SECOND


def held(cookie: str, expiration: float) -> LeasedResource:
    return LeasedResource(cookie, expiration, resource=cookie)


def drain(table: LeaseTable, due_before: float, limit: int = 1000) -> list[str]:
    """Every lease due by ``due_before``, in the order given, over as many calls as it takes."""
    cookies: list[str] = []
    more = True
    while more:
        due, more = table.pop_due(due_before, limit)
        assert len(due) <= limit
        cookies += [leased.cookie for leased in due]
    return cookies


def renew(table: LeaseTable, leased: LeasedResource, expiration: float) -> None:
    old, leased.expiration = leased.expiration, expiration
    table.moved(leased, old)


def test_fresh_leases_come_out_when_due_and_no_sooner_with_the_exact_next_expiration() -> None:
    table = LeaseTable()
    for cookie, expiration in [("a", 10.0), ("b", 10.5), ("c", 30.0)]:
        table.add(held(cookie, expiration))
    assert table.next_expiration() == 10.0
    assert drain(table, 9.999) == []
    assert drain(table, 10.0) == ["a"]
    assert table.next_expiration() == 10.5
    assert drain(table, 40.0) == ["b", "c"]
    assert table.next_expiration() == math.inf and len(table) == 0 and table.entries == 0


def test_within_one_bucket_leases_come_out_earliest_first_each_at_its_time() -> None:
    table = LeaseTable()
    times = [5.0 + WIDTH * fraction for fraction in (0.9, 0.1, 0.5, 0.3)]
    for number, expiration in enumerate(times):
        table.add(held(f"l{number}", expiration))
    found = []
    for expiration in sorted(times):
        assert table.next_expiration() == expiration  # the sleeper wakes for each, not for the bucket
        found += drain(table, expiration)
    assert found == ["l1", "l3", "l2", "l0"]


def test_a_lease_renewed_later_is_not_due_at_its_old_expiration_but_at_its_new_one() -> None:
    table = LeaseTable()
    leased = held("a", 10.0)
    table.add(leased)
    renew(table, leased, 100.0)
    assert table.entries == 1  # a renewal files nothing
    assert table.next_expiration() == 10.0  # a lower bound: the entry is where the lease was filed
    assert drain(table, 50.0) == []
    assert table.next_expiration() == 100.0  # filed again when its old bucket came due
    assert drain(table, 100.0) == ["a"]


@pytest.mark.parametrize("moved_by", [WIDTH * 0.25, 3.0])  # within its bucket, and to an earlier bucket
def test_a_lease_renewed_for_less_than_it_had_left_is_due_at_its_new_earlier_end(moved_by: float) -> None:
    table = LeaseTable()
    leased = held("a", 10.0 + WIDTH * 0.5)
    table.add(leased)
    renew(table, leased, leased.expiration - moved_by)
    assert table.next_expiration() <= leased.expiration
    assert drain(table, leased.expiration) == ["a"]
    assert drain(table, 100.0) == []  # its older entry is stale, not a second lease


def test_a_cancelled_lease_never_comes_out_and_its_stale_entries_are_rebuilt_away() -> None:
    table = LeaseTable()
    table.add(held("kept", 1_000.0))
    for number in range(30_000):
        table.add(held(f"c{number}", 500.0 + number * 0.001))
        assert table.remove(f"c{number}") is not None
    assert table.entries <= 2 * len(table) + 10_001  # rebuilt, not grown without bound
    assert table.remove("never held") is None
    assert drain(table, 2_000.0) == ["kept"]


def test_a_lease_that_never_ends_is_never_due_until_renewed_to_a_term() -> None:
    table = LeaseTable()
    forever = held("f", math.inf)
    table.add(forever)
    assert table.next_expiration() == math.inf and drain(table, 1e300) == []
    renew(table, forever, 20.0)
    assert drain(table, 20.0) == ["f"]


def test_a_lease_renewed_to_never_end_is_dropped_from_the_calendar_when_its_bucket_comes() -> None:
    table = LeaseTable()
    leased = held("a", 5.0)
    table.add(leased)
    renew(table, leased, math.inf)
    assert drain(table, 1e300) == [] and table.entries == 0 and len(table) == 1


def test_far_and_negative_expirations_are_filed_in_order() -> None:
    table = LeaseTable()
    for cookie, expiration in [("far", 1e200), ("farther", 1e250), ("past", -3.5)]:
        table.add(held(cookie, expiration))
    assert table.next_expiration() == -3.5
    assert drain(table, 0.0) == ["past"]
    assert table.next_expiration() <= 1e200
    assert drain(table, 1e200) == ["far"] and drain(table, 1e300) == ["farther"]


def test_a_mass_expiry_comes_out_in_chunks_of_the_limit_with_bounded_work() -> None:
    table = LeaseTable()
    for number in range(2_500):
        table.add(held(f"l{number}", 7.0))
    due, more = table.pop_due(7.0, 1000)
    assert len(due) == 1000 and more
    assert [leased.cookie for leased in due] == [f"l{number}" for number in range(1000)]  # filed order
    rest = drain(table, 7.0)
    assert len(rest) == 1500 and len(table) == 0


def test_renewed_entries_do_not_make_one_call_do_unbounded_work() -> None:
    table = LeaseTable()
    leases = [held(f"l{number}", 7.0) for number in range(10_000)]
    for leased in leases:
        table.add(leased)
    for leased in leases:
        renew(table, leased, 70.0)
    due, more = table.pop_due(8.0, 100)
    assert due == [] and more  # 400 entries moved, then it gives the lock back
    assert drain(table, 8.0) == [] and table.next_expiration() == 70.0


def test_earliest_lists_leases_by_their_real_expiration_whatever_their_entries() -> None:
    table = LeaseTable()
    leases = {cookie: held(cookie, expiration) for cookie, expiration in [("a", 3.0), ("b", 1.0), ("c", 2.0)]}
    for leased in leases.values():
        table.add(leased)
    renew(table, leases["b"], 9.0)
    assert [leased.cookie for leased in table.earliest(None)] == ["c", "a", "b"]
    assert [leased.cookie for leased in table.earliest(2)] == ["c", "a"]


@pytest.mark.parametrize("seed", range(8))
def test_against_a_plain_dict_the_due_leases_are_exactly_those_expired(seed: int) -> None:
    """Random grants, renewals (later and earlier), cancels and reaps; checked after each reap
    against the leases a plain dict says have ended, and next_expiration never late."""
    rng = random.Random(seed)
    table = LeaseTable()
    model: dict[str, LeasedResource] = {}
    now = 0.0
    for step in range(3_000):
        action = rng.random()
        if action < 0.35 or not model:
            leased = held(f"s{step}", now + rng.choice([rng.uniform(0, 0.2), rng.uniform(0, 5), math.inf]))
            table.add(leased)
            model[leased.cookie] = leased
        elif action < 0.6:
            leased = model[rng.choice(list(model))]
            renew(table, leased, now + rng.uniform(0, 5))
        elif action < 0.7:
            cookie = rng.choice(list(model))
            assert table.remove(cookie) is model.pop(cookie)
        else:
            now += rng.expovariate(20)
            expected_next = min((leased.expiration for leased in model.values()), default=math.inf)
            assert table.next_expiration() <= expected_next
            freed = drain(table, now, limit=rng.choice([1, 7, 1000]))
            ended = sorted(cookie for cookie, leased in model.items() if leased.expiration <= now)
            assert sorted(freed) == ended
            for cookie in ended:
                del model[cookie]
            assert set(table.by_cookie) == set(model)
