"""The holder side: AbstractLease, LandlordLease used in-process, LeaseMap, and batching
(BatchableLease: a lease class of one's own batched, one that is not renewed one by one)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import pytest

from landlord import (
    ANY,
    FOREVER,
    AbstractLease,
    BatchableLease,
    FakeClock,
    Landlord,
    LandlordLease,
    Lease,
    LeaseDurationPolicy,
    LeaseMap,
    LeaseMapError,
    UnknownLeaseError,
)
from landlord.lease import renew_together


class ScriptedLease(AbstractLease):
    """A lease whose landlord answers from a script, advancing the clock as a slow round trip would."""

    def __init__(self, clock: FakeClock, answers: list, round_trip: float = 0.0) -> None:
        super().__init__(clock.time() + 10, clock=clock)
        self.answers, self.round_trip, self.requests = answers, round_trip, []
        self.fake_clock = clock

    def _do_renew(self, duration: float) -> float:
        self.requests.append(duration)
        self.fake_clock.advance(self.round_trip)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def cancel(self) -> None:
        pass


def test_expiration_remaining_expired(clock: FakeClock) -> None:
    lease = ScriptedLease(clock, [])
    assert lease.expiration == clock.time() + 10 and lease.remaining == 10 and not lease.expired
    clock.advance(12)
    assert lease.remaining == 0 and lease.expired


def test_renewal_counts_from_when_the_request_was_sent(clock: FakeClock) -> None:
    lease = ScriptedLease(clock, [30.0], round_trip=2.0)
    sent = clock.time()
    assert lease.renew(30) == 30.0
    assert lease.expiration == sent + 30  # not sent + round trip + 30
    assert lease.remaining == 28


@pytest.mark.parametrize("step", [-3600.0, 3600.0])
def test_a_step_of_the_wall_clock_moves_the_expiration_not_the_deadline(clock: FakeClock, step: float) -> None:
    lease = ScriptedLease(clock, [30.0])
    deadline, expiration = lease.deadline, lease.expiration
    assert deadline == clock.monotonic() + 10
    clock.jump_wall_clock(step)
    clock.advance(4)
    assert lease.remaining == 6 and not lease.expired  # on the monotonic clock: the step changes nothing
    assert (lease.deadline, lease.expiration) == (deadline, expiration)  # as last known: stepped clocks lie
    sent = clock.time(), clock.monotonic()
    lease.renew(30)
    assert (lease.expiration, lease.deadline) == (sent[0] + 30, sent[1] + 30)  # both from the request's sending


def test_failed_renewal_keeps_the_old_expiration(clock: FakeClock) -> None:
    lease = ScriptedLease(clock, [UnknownLeaseError("gone")])
    before = lease.expiration
    with pytest.raises(UnknownLeaseError):
        lease.renew(5)
    assert lease.expiration == before and lease.term == 10


def test_the_term_is_what_was_last_granted_not_what_is_left(clock: FakeClock) -> None:
    lease = ScriptedLease(clock, [3.0, 300.0])
    assert lease.term == 10  # no term given: the time left when it was made
    clock.advance(4)
    assert lease.term == 10 and lease.remaining == 6
    lease.renew(3)
    assert lease.term == 3
    clock.advance(2)
    lease.renew(FOREVER)
    assert lease.term == 300


def test_a_granted_lease_knows_its_term(clock: FakeClock) -> None:
    grantor = Landlord(clock=clock, reaper="lazy", policy=LeaseDurationPolicy(maximum=60))
    lease = grantor.new_lease("room", 3)
    clock.advance(2)
    assert lease.term == 3 and lease.remaining == 1
    assert grantor.new_lease("room", FOREVER).term == 60
    lease_map = LeaseMap({lease: 7})
    lease_map.renew_all()
    assert lease.term == 7


@pytest.mark.parametrize("bad", [-1, math.nan, "3", True])
def test_a_bad_term_is_refused(clock: FakeClock, bad: object) -> None:
    with pytest.raises(ValueError, match="term"):
        LandlordLease("c", "PYRO:x@127.0.0.1:1", "id", clock.time() + 5, clock=clock, term=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-5, math.nan, "1", None])
def test_bad_duration_sends_nothing(clock: FakeClock, bad: object) -> None:
    lease = ScriptedLease(clock, [1.0])
    with pytest.raises(ValueError):
        lease.renew(bad)  # type: ignore[arg-type]
    assert lease.requests == []


@pytest.mark.parametrize("answer", [-3.0, math.nan, "10", None, True])
def test_a_landlord_answering_nonsense_is_a_lease_error(clock: FakeClock, answer: object) -> None:
    from landlord import LeaseError
    lease = ScriptedLease(clock, [answer])
    before = lease.expiration
    with pytest.raises(LeaseError, match="not a grant"):
        lease.renew(5)
    assert lease.expiration == before


def test_a_grant_in_whole_seconds_is_recorded_as_a_float(clock: FakeClock) -> None:
    lease = ScriptedLease(clock, [30])
    granted = lease.renew(5)
    assert granted == 30.0 and type(granted) is float and type(lease.term) is float


def test_forever(clock: FakeClock) -> None:
    lease = ScriptedLease(clock, [FOREVER])
    lease.renew(FOREVER)
    assert math.isinf(lease.expiration) and math.isinf(lease.remaining) and not lease.expired


@pytest.mark.parametrize("bad", [math.nan, "soon", None, True])
def test_bad_expiration(bad: object) -> None:
    with pytest.raises(ValueError, match="expiration"):
        LandlordLease("cookie", "PYRO:obj@127.0.0.1:1", "id", bad)  # type: ignore[arg-type]


def landlord_for(clock: FakeClock, **kwargs) -> Landlord:
    return Landlord(policy=LeaseDurationPolicy(maximum=100, default=10), clock=clock, reaper="lazy", **kwargs)


def test_in_process_landlord_lease(clock: FakeClock) -> None:
    freed: list = []
    landlord = landlord_for(clock, on_expire=freed.append)
    lease = landlord.new_lease("room 1", 30)
    assert isinstance(lease, LandlordLease) and lease.landlord is landlord
    assert lease.remaining == 30 and landlord.get_resource(lease.cookie) == "room 1"
    clock.advance(20)
    assert lease.renew(ANY) == 10  # ANY: the policy's default, 10 s
    assert lease.renew(50) == 50 and lease.remaining == 50
    lease.cancel()
    assert freed == ["room 1"]
    with pytest.raises(UnknownLeaseError):
        lease.renew(5)
    with pytest.raises(UnknownLeaseError):
        lease.cancel()


def test_equality_is_landlord_id_and_cookie(clock: FakeClock) -> None:
    landlord = landlord_for(clock)
    lease = landlord.new_lease("r", 10)
    twin = LandlordLease(lease.cookie, "PYRO:obj@127.0.0.1:1", lease.landlord_id, 0.0)
    other = landlord.new_lease("r", 10)
    assert lease == twin and hash(lease) == hash(twin) and lease != other
    assert lease.can_batch(other) and not lease.can_batch(landlord_for(clock).new_lease("r", 1))
    assert lease != "not a lease"


def test_repr_hides_most_of_the_cookie(clock: FakeClock) -> None:
    lease = landlord_for(clock).new_lease("r", 10)
    assert lease.cookie not in repr(lease) and lease.cookie[:6] in repr(lease)


@pytest.mark.parametrize("args, error", [
    ((123, "PYRO:obj@127.0.0.1:1", "id", 0.0), TypeError),
    (("", "PYRO:obj@127.0.0.1:1", "id", 0.0), ValueError),
    (("x" * 1000, "PYRO:obj@127.0.0.1:1", "id", 0.0), ValueError),
    (("c", "not a uri", "id", 0.0), ValueError),
    (("c", 42, "id", 0.0), TypeError),
    (("c", "PYRO:obj@127.0.0.1:1", None, 0.0), TypeError),
    (("c", "PYRO:obj@127.0.0.1:1", "id", math.nan), ValueError),
])
def test_landlord_lease_rejects_malformed_fields(args: tuple, error: type) -> None:
    with pytest.raises(error):
        LandlordLease(*args)


def test_an_unregistered_landlords_lease_cannot_leave_the_process(clock: FakeClock) -> None:
    lease = landlord_for(clock).new_lease("r", 10)
    with pytest.raises(LookupError, match="not registered"):
        _ = lease.landlord_uri


# -- LeaseMap -------------------------------------------------------------------

class CountingLandlord(Landlord):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.calls: list[str] = []

    def renew(self, cookie, duration):  # type: ignore[no-untyped-def]
        self.calls.append("renew")
        return super().renew(cookie, duration)

    def renew_all(self, cookies, durations):  # type: ignore[no-untyped-def]
        self.calls.append("renew_all")
        return super().renew_all(cookies, durations)

    def cancel_all(self, cookies):  # type: ignore[no-untyped-def]
        self.calls.append("cancel_all")
        return super().cancel_all(cookies)


def test_lease_map_batches_per_landlord_and_reports_failures(clock: FakeClock) -> None:
    first = CountingLandlord(clock=clock, reaper="lazy", policy=LeaseDurationPolicy(maximum=100))
    second = CountingLandlord(clock=clock, reaper="lazy", policy=LeaseDurationPolicy(maximum=100))
    leases = [first.new_lease(i, 10) for i in range(5)] + [second.new_lease(i, 10) for i in range(3)]
    lease_map = leases[0].create_lease_map(40)
    for lease in leases[1:]:
        lease_map[lease] = 40
    doomed = leases[1]
    doomed.cancel()
    clock.advance(5)
    with pytest.raises(LeaseMapError) as caught:
        lease_map.renew_all()
    assert list(caught.value.failures) == [doomed]
    assert isinstance(caught.value.failures[doomed], UnknownLeaseError)
    assert doomed not in lease_map and len(lease_map) == 7
    assert first.calls == ["renew_all"] and second.calls == ["renew_all"]
    assert all(lease.remaining == 40 for lease in lease_map)
    lease_map.renew_all()  # the failed one is gone: no error now
    lease_map.cancel_all()
    assert len(lease_map) == 0 and len(first) == 0 and len(second) == 0
    assert first.calls[-1] == "cancel_all"


def test_lease_map_cancel_all_reports_failures_and_empties(clock: FakeClock) -> None:
    landlord = landlord_for(clock)
    leases = [landlord.new_lease(i, 10) for i in range(3)]
    lease_map = LeaseMap({lease: 10 for lease in leases})
    leases[2].cancel()
    with pytest.raises(LeaseMapError) as caught:
        lease_map.cancel_all()
    assert list(caught.value.failures) == [leases[2]] and len(lease_map) == 0


def test_lease_map_with_unbatchable_leases_renews_one_by_one(clock: FakeClock) -> None:
    leases = [ScriptedLease(clock, [20.0]), ScriptedLease(clock, [UnknownLeaseError("x")])]
    lease_map = LeaseMap({lease: 20 for lease in leases})
    with pytest.raises(LeaseMapError) as caught:
        lease_map.renew_all()
    assert list(caught.value.failures) == [leases[1]] and list(lease_map) == [leases[0]]
    assert leases[0].remaining == 20


def test_lease_map_checks_keys_and_durations(clock: FakeClock) -> None:
    lease = landlord_for(clock).new_lease("r", 10)
    lease_map = LeaseMap()
    with pytest.raises(TypeError):
        lease_map["not a lease"] = 10  # type: ignore[index]
    with pytest.raises(ValueError):
        lease_map[lease] = -7
    assert len(lease_map) == 0
    lease_map[lease] = ANY
    assert lease_map[lease] == ANY and lease_map.can_contain(lease)
    assert not lease_map.can_contain(landlord_for(clock).new_lease("r", 1))
    del lease_map[lease]
    assert isinstance(lease, Lease) and len(lease_map) == 0


def test_lease_map_splits_batches_into_calls_the_landlord_takes(clock: FakeClock,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from landlord.grantor import landlord as grantor
    from landlord.holder import landlordlease
    monkeypatch.setattr(landlordlease, "CALL_BATCH", 3)
    monkeypatch.setattr(grantor, "MAX_BATCH", 3)  # the landlord refuses more, as it would 100,001
    landlord = CountingLandlord(clock=clock, reaper="lazy", policy=LeaseDurationPolicy(maximum=100))
    lease_map = LeaseMap({landlord.new_lease(i, 10): 50 for i in range(7)})
    lease_map.renew_all()
    assert landlord.calls == ["renew_all"] * 3 and all(lease.remaining == 50 for lease in lease_map)
    lease_map.cancel_all()
    assert landlord.calls[3:] == ["cancel_all"] * 3 and len(landlord) == 0


# -- BatchableLease: a lease class of one's own, batched --------------------------------


class Office:
    """A third party's landlord: a lease of its own class, renewed and cancelled in batches.

    It grants what is asked (up to 30 s), refuses leases it has ``refused``, and
    records each call: ``("renew", n)``, ``("renew_batch", n)``, ``("cancel", n)``...
    """

    def __init__(self, clock: FakeClock, name: str = "office") -> None:
        self.clock = clock
        self.key: Hashable = ("office", name)
        self.calls: list[tuple[str, int]] = []
        self.refused: set[Lease] = set()

    def grant(self, lease: Lease, duration: float) -> float:
        if lease in self.refused:
            raise UnknownLeaseError(f"{lease!r} is not held here")
        return 30.0 if duration == ANY else min(duration, 30.0)


class Desk(AbstractLease):
    """A lease of an :class:`Office` that is not batchable: one call per lease."""

    __slots__ = ("office",)

    def __init__(self, office: Office) -> None:
        super().__init__(office.clock.time() + 10, clock=office.clock, term=10)
        self.office = office

    def _do_renew(self, duration: float) -> float:
        self.office.calls.append(("renew", 1))
        return self.office.grant(self, duration)

    def cancel(self) -> None:
        self.office.calls.append(("cancel", 1))
        self.office.grant(self, 0)


class BatchedDesk(Desk, BatchableLease):
    """A lease of an :class:`Office` that batches: one call per office."""

    __slots__ = ()

    def batch_key(self) -> Hashable:
        return self.office.key

    def renew_batch(self, leases: Sequence[BatchedDesk], durations: Sequence[float]) -> dict[Lease, Exception]:
        self.office.calls.append(("renew_batch", len(leases)))
        sent, failures = (self.clock.time(), self.clock.monotonic()), dict[Lease, Exception]()
        for lease, duration in zip(leases, durations):
            try:
                lease.record_grant(sent, lease.office.grant(lease, duration))
            except UnknownLeaseError as exc:
                failures[lease] = exc
        return failures

    def cancel_batch(self, leases: Sequence[BatchedDesk]) -> dict[Lease, Exception]:
        self.office.calls.append(("cancel_batch", len(leases)))
        return {lease: UnknownLeaseError("not held") for lease in leases if lease in self.office.refused}


def test_a_batchable_lease_class_of_ones_own_goes_in_one_call_per_key(clock: FakeClock) -> None:
    offices = [Office(clock, "north"), Office(clock, "south")]
    desks = [BatchedDesk(office) for office in offices for _ in range(3)]
    offices[0].refused.add(desks[1])
    lease_map = LeaseMap({desk: 20 for desk in desks})
    with pytest.raises(LeaseMapError) as caught:
        lease_map.renew_all()
    assert list(caught.value.failures) == [desks[1]] and desks[1] not in lease_map
    assert [office.calls for office in offices] == [[("renew_batch", 3)], [("renew_batch", 3)]]
    assert all(desk.remaining == 20 == desk.term for desk in lease_map)
    lease_map.cancel_all()
    assert [office.calls[-1] for office in offices] == [("cancel_batch", 2), ("cancel_batch", 3)]


def test_each_lease_of_a_map_is_renewed_for_its_own_duration(clock: FakeClock) -> None:
    offices = [Office(clock, "north"), Office(clock, "south")]
    desks: list[Desk] = [BatchedDesk(offices[i % 2]) if i % 3 else Desk(offices[0]) for i in range(12)]
    lease_map = LeaseMap({desk: float(i + 1) for i, desk in enumerate(desks)})  # the keys interleaved
    lease_map.renew_all()
    assert [desk.term for desk in desks] == [float(i + 1) for i in range(12)]
    assert sorted(offices[0].calls) == [("renew", 1)] * 4 + [("renew_batch", 4)]
    assert offices[1].calls == [("renew_batch", 4)]


def test_a_lease_that_is_not_batchable_is_renewed_and_cancelled_one_by_one(clock: FakeClock) -> None:
    office = Office(clock)
    desks = [Desk(office) for _ in range(3)]
    lease_map = LeaseMap({desk: 20 for desk in desks})
    assert not lease_map.can_contain(Desk(office))  # it cannot batch, not even with one of its kind
    lease_map.renew_all()
    assert office.calls == [("renew", 1)] * 3 and all(desk.remaining == 20 for desk in desks)
    lease_map.cancel_all()
    assert office.calls[3:] == [("cancel", 1)] * 3


def test_leases_handed_over_together_go_one_by_one_if_any_cannot_batch(clock: FakeClock) -> None:
    office = Office(clock)
    batched = BatchedDesk(office)
    for mixed in ([batched, BatchedDesk(office), Desk(office)], [Desk(office), batched]):
        office.calls.clear()
        assert renew_together(mixed, [20.0] * len(mixed)) == {}
        assert office.calls == [("renew", 1)] * len(mixed)
    office.calls.clear()
    assert renew_together([batched, BatchedDesk(office)], [20.0, 20.0]) == {}
    assert office.calls == [("renew_batch", 2)]


def test_can_batch_is_an_equal_batch_key_and_none_batches_with_nothing(clock: FakeClock) -> None:
    north, south = Office(clock, "north"), Office(clock, "south")
    desk = BatchedDesk(north)
    assert desk.can_batch(BatchedDesk(north)) and not desk.can_batch(BatchedDesk(south))
    assert not desk.can_batch(Desk(north))  # the same office, but a lease that does not batch
    assert not Desk(north).can_batch(desk)
    north.key = None  # a key of None: each lease goes on its own
    assert not desk.can_batch(BatchedDesk(north))
    LeaseMap({desk: 5, BatchedDesk(north): 5}).renew_all()
    assert north.calls == [("renew", 1)] * 2


def test_a_batch_that_fails_as_a_whole_fails_the_map_call(clock: FakeClock) -> None:
    office = Office(clock)

    class Unreachable(BatchedDesk):
        __slots__ = ()

        def renew_batch(self, leases: Sequence[BatchedDesk], durations: Sequence[float]) -> dict[Lease, Exception]:
            raise ConnectionError("no route to the office")

    lease_map = LeaseMap({Unreachable(office): 5, Unreachable(office): 5})
    with pytest.raises(ConnectionError):
        lease_map.renew_all()
    assert len(lease_map) == 2  # nothing is known of them: they stay
