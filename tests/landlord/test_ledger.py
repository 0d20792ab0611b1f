"""landlord.renewalservice.ledger: a renewal service's books (its sets, whose set each lease is in,
what each client holds), kept without threads, clocks or remote calls; and written through to a store."""

from __future__ import annotations

import dataclasses
import pathlib
import time
from collections.abc import Iterator

import pytest

import landlord.wire  # noqa: F401 (LandlordLease's serpent converters, for the store)
from landlord import LandlordLease, UnknownLeaseError
from landlord.renewalservice.ledger import SetLedger
from landlord.renewalservice.sets import SetStore


@dataclasses.dataclass(frozen=True)
class Limits:
    sets_per_client: int = 2
    leases_per_set: int = 3
    leases_per_client: int = 4


def lease(number: int) -> LandlordLease:
    return LandlordLease(f"cookie-{number:04d}", "PYRO:rooms@10.0.0.1:4000", "rooms", time.time() + 60)


@pytest.fixture
def ledger() -> SetLedger:
    return SetLedger(Limits())


@pytest.fixture
def stored(tmp_path: pathlib.Path) -> Iterator[tuple[SetLedger, SetStore]]:
    store = SetStore(tmp_path / "sets.sqlite")
    yield SetLedger(Limits(), store), store
    store.close()


def test_a_set_opened_and_named_is_filed_for_its_client(ledger: SetLedger) -> None:
    renewal_set = ledger.open("s1", "10.0.0.7")
    assert (renewal_set.set_id, renewal_set.cookie, renewal_set.client) == ("s1", "", "10.0.0.7")
    ledger.name(renewal_set, "cookie-s1")
    assert ledger.sets == {"s1": renewal_set} and renewal_set.cookie == "cookie-s1"
    assert len(ledger) == 1 and ledger.held_by("10.0.0.7") == (1, 0) and ledger.held_by("10.0.0.8") == (0, 0)


def test_a_client_holding_its_sets_is_refused_another_and_others_are_not(ledger: SetLedger) -> None:
    ledger.open("s1", "10.0.0.7")
    ledger.open("s2", "10.0.0.7")
    with pytest.raises(ValueError, match=r"at most 2 renewal sets \(10.0.0.7 holds 2\)"):
        ledger.open("s3", "10.0.0.7")
    assert "s3" not in ledger.sets and ledger.held_by("10.0.0.7") == (2, 0)
    ledger.open("s3", "10.0.0.8")
    assert ledger.held_by("10.0.0.8") == (1, 0)


def test_a_set_whose_lease_was_not_granted_is_forgotten_once(ledger: SetLedger) -> None:
    ledger.open("s1", "10.0.0.7")
    ledger.unopen("s1")
    ledger.unopen("s1")
    assert not ledger.sets and ledger.held_by("10.0.0.7") == (0, 0)


def test_a_lease_added_counts_against_its_set_and_its_client_once(ledger: SetLedger) -> None:
    renewal_set = ledger.open("s1", "10.0.0.7")
    member = ledger.add(renewal_set, lease(1), 1000.0, 30.0)
    again = ledger.add(renewal_set, lease(1), 2000.0, 10.0)  # new settings, the same member
    assert (again.key, again.desired, again.renew_duration) == (member.key, 2000.0, 10.0)
    assert renewal_set.members == {lease(1): again}
    assert ledger.held_by("10.0.0.7") == (1, 1) and ledger.leases() == [lease(1)]


def test_a_lease_is_in_one_set_at_most(ledger: SetLedger) -> None:
    first, second = ledger.open("s1", "10.0.0.7"), ledger.open("s2", "10.0.0.7")
    ledger.add(first, lease(1), 1000.0, 30.0)
    with pytest.raises(ValueError, match="in another renewal set"):
        ledger.add(second, lease(1), 1000.0, 30.0)
    assert not second.members and ledger.held_by("10.0.0.7") == (2, 1)


def test_a_full_set_and_a_client_holding_its_leases_are_refused_a_lease_more(ledger: SetLedger) -> None:
    first, second = ledger.open("s1", "10.0.0.7"), ledger.open("s2", "10.0.0.7")
    for number in range(3):
        ledger.add(first, lease(number), 1000.0, 30.0)
    with pytest.raises(ValueError, match="a renewal set holds at most 3 leases"):
        ledger.add(first, lease(3), 1000.0, 30.0)
    ledger.add(first, lease(0), 1500.0, 30.0)  # one already in the set takes no room
    ledger.add(second, lease(3), 1000.0, 30.0)
    with pytest.raises(ValueError, match=r"at most 4 leases together \(10.0.0.7 holds 4\)"):
        ledger.add(second, lease(4), 1000.0, 30.0)
    assert ledger.held_by("10.0.0.7") == (2, 4) and len(second.members) == 1


def test_a_lease_dropped_makes_room_and_is_in_no_set(ledger: SetLedger) -> None:
    first, second = ledger.open("s1", "10.0.0.7"), ledger.open("s2", "10.0.0.7")
    member = ledger.add(first, lease(1), 1000.0, 30.0)
    assert ledger.drop(first, lease(1)) == member
    assert ledger.drop(first, lease(1)) is None
    assert ledger.held_by("10.0.0.7") == (2, 0) and ledger.leases() == []
    ledger.add(second, lease(1), 1000.0, 30.0)  # free to join another set


def test_a_set_ended_gives_back_its_leases_and_a_client_holding_nothing_is_forgotten(ledger: SetLedger) -> None:
    renewal_set = ledger.open("s1", "10.0.0.7")
    ledger.add(renewal_set, lease(1), 1000.0, 30.0)
    ledger.add(renewal_set, lease(2), 1000.0, 30.0)
    ended, leases = ledger.end("s1")
    assert ended is renewal_set and sorted(leases, key=lambda each: each.cookie) == [lease(1), lease(2)]
    assert not ledger.sets and ledger.leases() == [] and ledger.held_by("10.0.0.7") == (0, 0)
    assert ledger.end("s1") == (None, [])


def test_a_set_that_ended_takes_no_lease_and_gives_none_back_twice(ledger: SetLedger) -> None:
    renewal_set, other = ledger.open("s1", "10.0.0.7"), ledger.open("s2", "10.0.0.7")
    ledger.add(renewal_set, lease(1), 1000.0, 30.0)
    ledger.add(other, lease(3), 1000.0, 30.0)
    ledger.end("s1")  # as when its lease expires between renew_for finding the set and taking the lock
    with pytest.raises(UnknownLeaseError, match="s1 has ended"):
        ledger.add(renewal_set, lease(2), 1000.0, 30.0)
    with pytest.raises(UnknownLeaseError, match="s1 has ended"):
        ledger.drop(renewal_set, lease(1))
    assert ledger.held_by("10.0.0.7") == (1, 1) and ledger.leases() == [lease(3)]


def test_a_set_named_after_it_ended_is_not_filed_again(stored: tuple[SetLedger, SetStore]) -> None:
    ledger, store = stored
    renewal_set = ledger.open("s1", "10.0.0.7")
    ledger.end("s1")  # its lease ended the instant it was granted
    ledger.name(renewal_set, "cookie-s1")
    assert not ledger.sets and store.sets() == []


def test_every_change_is_written_to_the_store(stored: tuple[SetLedger, SetStore]) -> None:
    ledger, store = stored
    renewal_set = ledger.open("s1", "10.0.0.7")
    assert store.sets() == []  # not before its lease is granted
    ledger.name(renewal_set, "cookie-s1")
    member = ledger.add(renewal_set, lease(1), 1000.0, 30.0)
    [kept] = store.sets()
    assert (kept.set.set_id, kept.set.cookie, kept.set.client, kept.leases) == ("s1", "cookie-s1", "10.0.0.7", [])
    ledger.write(renewal_set, lease(1), member)
    ledger.add(renewal_set, lease(2), 1000.0, 30.0)
    ledger.drop(renewal_set, lease(2))
    [kept] = store.sets()
    assert kept.leases == [(lease(1), member)] and member.key >= 1
    renewal_set.failure_listener = "PYRO:listener@10.0.0.7:5000"
    ledger.save(renewal_set)
    assert store.sets()[0].set.failure_listener == "PYRO:listener@10.0.0.7:5000"
    ledger.end("s1")
    assert store.sets() == []


def test_member_keys_come_from_the_store_when_there_is_one(stored: tuple[SetLedger, SetStore]) -> None:
    ledger, store = stored
    renewal_set = ledger.open("s1", "10.0.0.7")
    first = ledger.add(renewal_set, lease(1), 1000.0, 30.0)
    assert ledger.add(renewal_set, lease(2), 1000.0, 30.0).key == first.key + 1
    assert store.new_key() == first.key + 2


def test_a_set_restored_is_filed_with_its_members_counted(stored: tuple[SetLedger, SetStore]) -> None:
    ledger, store = stored
    renewal_set = ledger.open("s1", "10.0.0.7")
    ledger.name(renewal_set, "cookie-s1")
    for number in (1, 2):
        ledger.write(renewal_set, lease(number), ledger.add(renewal_set, lease(number), 1000.0, 30.0))
    [kept] = store.sets()
    restored = SetLedger(Limits(), store)
    restored.restore(kept.set, kept.leases)
    assert restored.sets == {"s1": kept.set} and len(kept.set.members) == 2
    assert restored.held_by("10.0.0.7") == (1, 2)
    assert sorted(each.cookie for each in restored.leases()) == ["cookie-0001", "cookie-0002"]
    with pytest.raises(ValueError, match="in another renewal set"):
        restored.add(restored.open("s2", "10.0.0.7"), lease(1), 1000.0, 30.0)
