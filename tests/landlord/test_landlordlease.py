"""LandlordLease of a replicated landlord: its calls follow the group's leader.

Three real Pyro5 daemons in threads stand in for three replicas of one group:
each serves a facade over one shared Landlord (the group's state, as etcd
would hold it), and a facade whose replica does not lead answers
NotLeaderError naming the one that does. Every call a replica gets is
counted, so a test can say how many round trips a renewal took and where
each went.
"""

from __future__ import annotations

import math
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import Pyro5.api
import Pyro5.errors
import pytest
from conftest import ServingDaemon

from landlord import (
    FOREVER,
    FakeClock,
    Landlord,
    LandlordLease,
    LeaseDeniedError,
    LeaseDurationPolicy,
    LeaseError,
    LeaseMap,
    LeaseRenewalEvent,
    LeaseRenewalManager,
    NotLeaderError,
    RenewResults,
    UnknownLeaseError,
    timeout_within,
)
from landlord.holder import landlordlease
from landlord.holder.landlordlease import (
    MAX_LANDLORDS,
    MAX_REDIRECTS,
    check_landlords,
    known_leader,
    record_renewals,
)
from landlord.transport import proxies
from landlord.transport.verdicts import Verdict, classify

TERM = 10.0


class Replica:
    """One replica's remote face: leads, or names the leader (or whom :attr:`Group.names` says)."""

    def __init__(self, group: Group, index: int) -> None:
        self.group, self.index = group, index

    def _lead(self, method: str) -> Landlord:
        group = self.group
        if self.index in group.dead:
            # a closed daemon takes no new connections, but its worker threads keep serving open
            # ones: this closes them (Pyro5 drops a connection whose call raises this), as a
            # killed process's would be
            raise Pyro5.errors.ConnectionClosedError(f"replica {self.index} is dead")
        group.calls.append((self.index, method))
        if group.leader != self.index:
            named = group.names.get(self.index, group.leader_uri)
            raise NotLeaderError(f"replica {self.index} does not lead", named)
        return group.landlord

    @Pyro5.api.expose
    def renew(self, cookie: str, duration: float) -> float:
        return self._lead("renew").renew(cookie, duration)

    @Pyro5.api.expose
    def cancel(self, cookie: str) -> None:
        self._lead("cancel").cancel(cookie)

    @Pyro5.api.expose
    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> RenewResults:
        return self._lead("renew_all").renew_all(cookies, durations)

    @Pyro5.api.expose
    def cancel_all(self, cookies: Sequence[str]) -> dict[str, Exception]:
        return self._lead("cancel_all").cancel_all(cookies)


class Group:
    """Three replicas of one landlord group on three daemons; ``leader`` is the index that leads."""

    def __init__(self, clock: FakeClock | None = None, size: int = 3) -> None:
        self.daemons = [ServingDaemon() for _ in range(size)]
        self.uris = [str(serving.daemon.uriFor("landlord")) for serving in self.daemons]
        kwargs: dict[str, Any] = {} if clock is None else {"clock": clock}
        self.clock = clock
        self.landlord = Landlord(policy=LeaseDurationPolicy(maximum=TERM, default=TERM), reaper="lazy",
                                 landlord_id=f"group-{uuid.uuid4().hex}", replicas=self.uris, **kwargs)
        self.leader: int | None = 0
        self.names: dict[int, str | None] = {}  # what a follower names instead of the leader
        self.calls: list[tuple[int, str]] = []
        self.dead: set[int] = set()
        for i, serving in enumerate(self.daemons):
            serving.register(Replica(self, i), "landlord")

    @property
    def landlord_id(self) -> str:
        return self.landlord.landlord_id

    @property
    def leader_uri(self) -> str | None:
        return None if self.leader is None else self.uris[self.leader]

    def lease(self, first: int = 0, order: Sequence[int] | None = None) -> LandlordLease:
        """A holder's lease of the group, granted by replica ``first``, naming the replicas in ``order``."""
        granted = self.landlord.new_lease("resource", TERM)
        landlords = [self.uris[i] for i in (order if order is not None else range(len(self.uris)))]
        clock: dict[str, Any] = {} if self.clock is None else {"clock": self.clock}
        return LandlordLease(granted.cookie, self.uris[first], self.landlord_id, granted.expiration,
                             term=TERM, landlords=landlords, **clock)

    def kill(self, index: int) -> None:
        """Replica ``index`` dies: no connection to it, old or new, is answered."""
        self.dead.add(index)
        self.daemons[index].close()

    def close(self) -> None:
        for serving in self.daemons:
            serving.close()
        self.landlord.close()


@pytest.fixture
def group() -> Iterator[Group]:
    made = Group()
    yield made
    made.close()


@pytest.fixture
def hung() -> Iterator[list[str]]:
    """URIs of three listeners that take connections and never answer (a SIGSTOPped replica)."""
    sockets = []
    for _ in range(3):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        sockets.append(listener)
    yield [f"PYRO:landlord@127.0.0.1:{s.getsockname()[1]}" for s in sockets]
    for listener in sockets:
        listener.close()


def managed(group: Group, cookie: str) -> float:
    return group.landlord.manager.get(cookie).expiration


# -- following the leader --------------------------------------------------------------


def test_a_follower_names_the_leader_and_the_renewal_lands_there(group: Group) -> None:
    group.leader = 1
    lease = group.lease(first=0)
    before = managed(group, lease.cookie)
    assert lease.renew(TERM) == TERM
    assert group.calls == [(0, "renew"), (1, "renew")]
    assert managed(group, lease.cookie) >= before and known_leader(group.landlord_id) == group.uris[1]


def test_the_learnt_leader_is_asked_first_by_the_next_call(group: Group) -> None:
    group.leader = 2
    group.lease(first=0).renew(TERM)
    group.calls.clear()
    other = group.lease(first=0, order=[1, 0, 2])  # granted by a follower, its list in another order
    other.renew(TERM)
    other.cancel()
    assert group.calls == [(2, "renew"), (2, "cancel")]  # one round trip each
    with pytest.raises(UnknownLeaseError):
        group.landlord.get_resource(other.cookie)


def test_a_closed_leader_gives_way_to_the_next_replica_that_answers(group: Group) -> None:
    lease = group.lease(first=0)
    lease.renew(TERM)
    assert group.calls == [(0, "renew")]
    group.kill(0)
    group.leader = 2  # elected meanwhile; replica 1, next in the list, knows it
    group.calls.clear()
    assert lease.renew(TERM) == TERM
    assert group.calls == [(1, "renew"), (2, "renew")]
    group.calls.clear()
    lease.renew(TERM)
    assert group.calls == [(2, "renew")] and known_leader(group.landlord_id) == group.uris[2]


def test_a_follower_still_naming_the_dead_leader_is_passed_over_for_one_not_yet_asked(group: Group) -> None:
    lease = group.lease(first=0)
    lease.renew(TERM)
    group.kill(0)
    group.leader = 2
    group.names[1] = group.uris[0]  # replica 1 has not heard of the election yet
    group.calls.clear()
    assert lease.renew(TERM) == TERM
    assert group.calls == [(1, "renew"), (2, "renew")]  # not back to 1, which named the dead one
    assert known_leader(group.landlord_id) == group.uris[2]


def test_all_replicas_down_is_a_communication_error(group: Group) -> None:
    lease = group.lease()
    lease.renew(TERM)
    group.calls.clear()
    for i in range(3):
        group.kill(i)
    with pytest.raises(Pyro5.errors.CommunicationError) as caught:
        lease.renew(TERM)
    assert classify(caught.value) is Verdict.RETRY and group.calls == []


def test_replicas_that_never_answer_cost_one_calls_time_in_all(hung: list[str]) -> None:
    """Three replicas that never answer: the call gives up once its own timeout is spent, not three times over."""
    lease = LandlordLease("c", hung[0], f"hung-{uuid.uuid4().hex}", time.time() + 60, landlords=hung)
    started = time.monotonic()
    with timeout_within(1.0), pytest.raises(Pyro5.errors.CommunicationError):
        lease.renew(TERM)
    assert time.monotonic() - started < 2.0  # one timeout, not three (3 s)


class Scripted:
    """Stands in for ``proxies.proxy_for`` and the budget's clock: each URI's answer scripted,
    and how long it takes, on a fake clock; each call's timeout as the proxy would get it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 0.0
        self.answers: dict[str, tuple[float, Any]] = {}  # uri: (seconds it takes, a value or an exception)
        self.timeouts: list[tuple[str, float | None]] = []
        monkeypatch.setattr(landlordlease, "_now", lambda: self.now)
        monkeypatch.setattr(proxies, "proxy_for", self.proxy_for)

    def proxy_for(self, uri: str) -> Any:
        scripted = self

        class Proxy:
            def renew(self, cookie: str, duration: float) -> Any:
                scripted.timeouts.append((uri, proxies.current_timeout()))
                took, answer = scripted.answers[uri]
                scripted.now += took
                if isinstance(answer, Exception):
                    raise answer
                return answer

        return Proxy()


def test_a_redirect_gets_only_what_is_left_of_the_calls_time(monkeypatch: pytest.MonkeyPatch) -> None:
    scripted = Scripted(monkeypatch)
    a, b, c = (f"PYRO:landlord@10.0.0.{i}:7000" for i in range(1, 4))
    scripted.answers = {a: (0.6, NotLeaderError("no", b)), b: (0.3, Pyro5.errors.ConnectionClosedError("gone")),
                        c: (0.0, 5.0)}
    lease = LandlordLease("c", a, f"scripted-{uuid.uuid4().hex}", time.time() + 60, landlords=[a, b, c])
    with timeout_within(1.0):
        assert lease.renew(10) == 5.0
    assert [uri for uri, _ in scripted.timeouts] == [a, b, c]
    assert [t for _, t in scripted.timeouts] == pytest.approx([1.0, 0.4, 0.1])


def test_a_call_whose_time_is_spent_tries_no_further(monkeypatch: pytest.MonkeyPatch) -> None:
    scripted = Scripted(monkeypatch)
    a, b = "PYRO:landlord@10.0.0.1:7000", "PYRO:landlord@10.0.0.2:7000"
    scripted.answers = {a: (1.0, Pyro5.errors.TimeoutError("timed out")), b: (0.0, 5.0)}
    lease = LandlordLease("c", a, f"scripted-{uuid.uuid4().hex}", time.time() + 60, landlords=[a, b])
    with timeout_within(1.0), pytest.raises(Pyro5.errors.TimeoutError):
        lease.renew(10)
    assert [uri for uri, _ in scripted.timeouts] == [a]
    assert known_leader(lease.landlord_id) == b  # where the next call starts
    with timeout_within(1.0):
        assert lease.renew(10) == 5.0
    assert [uri for uri, _ in scripted.timeouts] == [a, b]


def test_a_hung_leader_is_left_for_the_next_replica_by_the_next_call(group: Group, hung: list[str]) -> None:
    """A frozen leader costs one timed-out call; the next goes to the next replica of the list."""
    landlords = [hung[0], *group.uris]
    granted = group.landlord.new_lease("r", TERM)
    lease = LandlordLease(granted.cookie, hung[0], group.landlord_id, granted.expiration, landlords=landlords)
    with timeout_within(0.5), pytest.raises(Pyro5.errors.CommunicationError):
        lease.renew(TERM)
    assert group.calls == []
    with timeout_within(0.5):
        assert lease.renew(TERM) == TERM
    assert group.calls == [(0, "renew")] and known_leader(group.landlord_id) == group.uris[0]


def test_redirect_loops_are_bounded(group: Group) -> None:
    group.leader = None  # an election under way: replicas 0 and 1 each name the other
    group.names = {0: group.uris[1], 1: group.uris[0]}
    with pytest.raises(NotLeaderError) as caught:
        group.lease(first=0).renew(TERM)
    assert len(group.calls) == 1 + MAX_REDIRECTS
    assert [i for i, _ in group.calls] == [0, 1, 0, 1][:1 + MAX_REDIRECTS]
    assert classify(caught.value) is Verdict.RETRY


def test_no_leader_known_raises_not_leader_to_the_caller(group: Group) -> None:
    group.leader = None
    lease = group.lease(first=1)
    with pytest.raises(NotLeaderError) as caught:
        lease.renew(TERM)
    assert caught.value.leader is None and group.calls == [(1, "renew")]
    group.leader = 1
    assert lease.renew(TERM) == TERM  # what the renewal manager's retry gets once one leads


def test_a_named_leader_that_is_not_a_pyro_uri_is_not_followed(group: Group) -> None:
    group.leader = None
    group.names = {0: "http://evil"}
    with pytest.raises(NotLeaderError):
        group.lease(first=0).renew(TERM)
    assert group.calls == [(0, "renew")]


def test_a_plain_lease_does_not_follow(group: Group) -> None:
    """A lease that names one landlord (an older sender's) behaves as it always did."""
    group.leader = 1
    granted = group.landlord.new_lease("r", TERM)
    plain = LandlordLease(granted.cookie, group.uris[0], group.landlord_id, granted.expiration)
    assert not plain.replicated and plain.landlords == (group.uris[0],)
    with pytest.raises(NotLeaderError) as caught:
        plain.renew(TERM)
    assert caught.value.leader == group.uris[1] and group.calls == [(0, "renew")]


def test_a_leader_learnt_through_a_forged_lease_steers_no_other_lease(group: Group) -> None:
    """Cookies go only where their own lease (or a replica it names) sends them."""
    rogue = Group()
    try:
        granted = rogue.landlord.new_lease("bait", TERM)
        forged = LandlordLease(granted.cookie, rogue.uris[1], group.landlord_id, granted.expiration,
                               landlords=rogue.uris)
        rogue.leader = 2
        forged.renew(TERM)  # redirected to the rogue's replica 2, learnt for the group's landlord id
        assert known_leader(group.landlord_id) == rogue.uris[2]
        rogue.calls.clear()
        group.lease(first=0).renew(TERM)
        assert rogue.calls == [] and group.calls == [(0, "renew")]
    finally:
        rogue.close()


def test_batches_of_one_group_are_one_call_to_the_leader(group: Group) -> None:
    group.leader = 1
    leases = [group.lease(first=i % 3, order=[(i + k) % 3 for k in range(3)]) for i in range(9)]
    assert len({lease.batch_key() for lease in leases}) == 1
    assert all(lease.can_batch(other) for lease in leases for other in leases)
    LeaseMap({lease: TERM for lease in leases}).renew_all()
    assert group.calls == [(0, "renew_all"), (1, "renew_all")]
    group.calls.clear()
    LeaseMap({lease: TERM for lease in leases}).cancel_all()
    assert group.calls == [(1, "cancel_all")] and len(group.landlord) == 0


# -- checking the group -------------------------------------------------------------------


URI = "PYRO:landlord@127.0.0.1:4160"


@pytest.mark.parametrize("bad, error", [
    ("PYRO:x@h:1", TypeError),  # a str is not a list of them
    (None, TypeError),
    ({"PYRO:x@h:1": 1}, TypeError),
    ([], ValueError),
    ([5], TypeError),
    ([URI, None], TypeError),
    (["http://evil"], ValueError),
    (["PYRONAME:landlord"], ValueError),  # a name needs a name server: not a replica's address
    ([""], ValueError),
    ([URI, URI], ValueError),
    ([f"PYRO:landlord@10.0.0.{i}:1" for i in range(MAX_LANDLORDS + 1)], ValueError),
    ([f"PYRO:{'x' * 2000}@h:1"], ValueError),
])
def test_malformed_landlords_are_refused(bad: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="landlords"):
        check_landlords(bad)
    if bad is not None:  # to a lease, None means a plain landlord
        with pytest.raises(error):
            LandlordLease("c", URI, "id", time.time() + 5, landlords=bad)


def test_a_group_of_its_own_landlord_alone_is_a_plain_lease() -> None:
    lease = LandlordLease("c", URI, "id", time.time() + 5, landlords=[URI])
    assert not lease.replicated and lease.landlords == (URI,)
    group = [URI, "PYRO:landlord@127.0.0.1:4161"]
    replicated = LandlordLease("c", Pyro5.api.URI(URI), "id", time.time() + 5, landlords=(URI, Pyro5.api.URI(group[1])))
    assert replicated.replicated and replicated.landlords == tuple(group)
    assert replicated == lease and hash(replicated) == hash(lease)  # equal by landlord id and cookie


# -- the renewal manager across a failover ------------------------------------------------


def settle(manager: LeaseRenewalManager) -> None:
    assert manager._wait_idle(10), "the renewal thread did not go back to sleep"


def run(clock: FakeClock, manager: LeaseRenewalManager, seconds: float) -> None:
    """Let ``seconds`` pass, stopping at every deadline the manager's thread sleeps towards."""
    end = clock.monotonic() + seconds
    settle(manager)
    while True:
        target = min(min(clock.sleeping_deadlines(), default=math.inf), end)
        if target > clock.monotonic():
            clock.advance(target - clock.monotonic())
        while clock.monotonic() < target:
            clock.advance(math.ulp(target))
        settle(manager)
        if target >= end:
            return


def test_a_renewal_manager_keeps_a_groups_leases_across_a_failover() -> None:
    clock = FakeClock()
    group = Group(clock=clock)
    lost: list[LeaseRenewalEvent] = []
    lock = threading.Lock()

    def listener(event: LeaseRenewalEvent) -> None:
        with lock:
            lost.append(event)

    try:
        with LeaseRenewalManager(clock=clock, retry_initial=0.5, retry_max=1.0) as manager:
            leases = [group.lease(first=i % 3, order=[(i + k) % 3 for k in range(3)]) for i in range(30)]
            for lease in leases:
                manager.renew_for(lease, FOREVER, listener)
            run(clock, manager, 3 * TERM)
            assert group.calls[-1] == (0, "renew_all") and lost == []
            group.leader = 2  # the failover: replica 0 now answers NotLeaderError naming replica 2
            group.calls.clear()
            run(clock, manager, 3 * TERM)
            assert lost == [] and len(manager) == len(leases)
            assert (0, "renew_all") in group.calls and (2, "renew_all") in group.calls
            assert group.calls[-1] == (2, "renew_all") and known_leader(group.landlord_id) == group.uris[2]
            now = clock.monotonic()
            assert all(managed(group, lease.cookie) > now for lease in leases)  # every one alive at the leader
            group.kill(2)  # and the new leader dies: replica 0 is elected again
            group.leader = 0
            run(clock, manager, 3 * TERM)
            assert lost == [] and all(managed(group, lease.cookie) > clock.monotonic() for lease in leases)
    finally:
        group.close()


@pytest.mark.parametrize("granted", [30.0, math.inf])
@pytest.mark.parametrize("landlords", [None, ("PYRO:a@127.0.0.1:1", "PYRO:b@127.0.0.1:2")])
def test_a_lease_made_by_granted_is_the_lease_init_makes(granted: float, landlords: tuple[str, ...] | None) -> None:
    clock = FakeClock(start=100.0, wall_offset=5_000.0)
    landlord = Landlord(clock=clock)
    checked = LandlordLease("c" * 22, landlord, "id", clock.time() + granted, clock=clock, term=granted,
                            landlords=landlords)
    fast = LandlordLease.granted("c" * 22, landlord, "id", granted, clock=clock, landlords=landlords)
    assert fast == checked
    seen = [(lease.cookie, lease.landlord, lease.landlord_id, lease.expiration, lease.deadline, lease.term,
             lease.replicated) for lease in (fast, checked)]
    assert seen[0] == seen[1]
    clock.advance(10.0)
    assert fast.remaining == checked.remaining == (math.inf if math.isinf(granted) else granted - 10.0)
    landlord.close()


# -- batches a holder sends fit the transport's smallest cap ------------------------------------

class RecordingLandlord(Landlord):
    """An in-process landlord that keeps each batch request as it was called."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.requests: list[tuple[str, tuple[Any, ...]]] = []

    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> RenewResults:
        self.requests.append(("renew_all", (cookies, durations)))
        return super().renew_all(cookies, durations)

    def cancel_all(self, cookies: Sequence[str]) -> dict[str, Exception]:
        self.requests.append(("cancel_all", (cookies,)))
        return super().cancel_all(cookies)


def test_a_holders_batch_calls_stay_well_under_64_kib_in_serpent_and_json() -> None:
    import random

    from Pyro5.serializers import JsonSerializer, SerpentSerializer

    from landlord.grantor.landlord import MAX_BATCH
    assert landlordlease.CALL_BATCH == 1000 and landlordlease.CALL_BATCH <= MAX_BATCH
    landlord = RecordingLandlord(reaper="lazy", policy=LeaseDurationPolicy(maximum=3600))
    try:
        leases = LeaseMap({landlord.new_lease(i, 60): random.uniform(0.1, 3600) for i in range(2500)})
        leases.renew_all()  # durations of 17 significant digits: the longest floats serpent writes
        leases.cancel_all()
    finally:
        landlord.close()
    assert [(method, len(args[0])) for method, args in landlord.requests] == \
        [("renew_all", 1000), ("renew_all", 1000), ("renew_all", 500)] + \
        [("cancel_all", 1000), ("cancel_all", 1000), ("cancel_all", 500)]
    for serializer in (SerpentSerializer(), JsonSerializer()):
        for method, args in landlord.requests:
            size = len(serializer.dumpsCall("landlord.Landlord", method, args, {}))
            assert size < 48 * 1024, (serializer.serializer_id, method, size)  # the cap is 64 KiB


def test_leases_naming_one_landlord_id_at_other_addresses_never_share_a_batch() -> None:
    def lease(uri: str, landlords: list[str] | None = None) -> LandlordLease:
        return LandlordLease(uuid.uuid4().hex, uri, "the-id", time.time() + 60, landlords=landlords)

    real, forged = lease("PYRO:rooms@10.0.0.1:9"), lease("PYRO:rooms@10.6.6.6:9")
    assert real.batch_key() != forged.batch_key()  # a forged lease would draw the real one's cookie
    assert real.batch_key() == lease("PYRO:rooms@10.0.0.1:9").batch_key()
    group = ["PYRO:g@10.0.0.1:9", "PYRO:g@10.0.0.2:9"]
    assert lease(group[0], group).batch_key() == lease(group[1], group[::-1]).batch_key()  # any order
    assert lease(group[0], group).batch_key() != lease(group[0], [group[0], "PYRO:g@10.6.6.6:9"]).batch_key()
    landlords = [Landlord(reaper="lazy", landlord_id="the-id") for _ in range(2)]
    try:  # in-process landlords: by the object itself
        first, second = (each.new_lease("r", 10) for each in landlords)
        assert first.batch_key() != second.batch_key()
        assert first.batch_key() == landlords[0].new_lease("s", 10).batch_key()
    finally:
        for each in landlords:
            each.close()


# -- a batch's answer ------------------------------------------------------------------------


def test_a_renew_all_answer_is_recorded_on_its_leases_from_when_it_was_sent() -> None:
    clock = FakeClock()
    leases = [LandlordLease(f"c{i}", URI, "the-id", clock.time() + 5, clock=clock) for i in range(3)]
    sent = (clock.time(), clock.monotonic())
    clock.advance(2)  # the round trip
    denied = LeaseDeniedError("no")
    failures = record_renewals(leases, sent, RenewResults([30.0, -1, 12.5], [denied]))
    assert failures == {leases[1]: denied}
    assert [lease.term for lease in leases] == [30.0, 5.0, 12.5]
    assert leases[0].expiration == sent[0] + 30 and leases[0].remaining == 28
    assert leases[2].deadline == sent[1] + 12.5


class NotingLease(LandlordLease):
    """A lease that records its grants its own way (and says so)."""

    __slots__ = ("noted",)

    def record_grant(self, sent: tuple[float, float], granted: float) -> None:
        self.noted = granted
        super().record_grant(sent, granted)


def test_a_batch_granted_whole_is_recorded_as_each_lease_would_record_it() -> None:
    clock = FakeClock()
    leases = [LandlordLease(f"c{i}", URI, "the-id", clock.time() + 5, clock=clock) for i in range(3)]
    one_by_one = [LandlordLease(f"c{i}", URI, "the-id", clock.time() + 5, clock=clock) for i in range(3)]
    sent = (clock.time(), clock.monotonic())
    clock.advance(2)
    grants = [30.0, math.inf, 12]  # an int among them: recorded as a float, as check_granted makes it
    assert record_renewals(leases, sent, RenewResults(grants, [])) == {}
    for lease, grant in zip(one_by_one, grants):
        lease.record_grant(sent, float(grant))
    assert [(lease.expiration, lease.deadline, lease.term) for lease in leases] == \
        [(lease.expiration, lease.deadline, lease.term) for lease in one_by_one]
    assert all(type(lease.term) is float for lease in leases)
    noting = [NotingLease(f"n{i}", URI, "the-id", clock.time() + 5, clock=clock) for i in range(2)]
    record_renewals([leases[0], *noting], sent, RenewResults([40.0, 41.0, 42.0], []))
    assert [lease.noted for lease in noting] == [41.0, 42.0] and leases[0].term == 40.0


def test_a_grant_that_is_not_a_number_of_seconds_fails_the_answer_wherever_it_is() -> None:
    clock = FakeClock()
    leases = [LandlordLease(f"c{i}", URI, "the-id", clock.time() + 5, clock=clock) for i in range(3)]
    for grants in ([30.0, 30.0, math.nan], [30.0, 30.0, -math.inf], [30.0, 30.0, True]):
        with pytest.raises(LeaseError, match="not a grant"):
            record_renewals(leases, (clock.time(), clock.monotonic()), RenewResults(grants, []))
        assert leases[2].term == 5  # the bad one is never recorded


@pytest.mark.parametrize("grant", [math.nan, -0.5, True, "5", None])
def test_a_grant_that_is_not_seconds_is_a_lease_error(grant: object) -> None:
    clock = FakeClock()
    leases = [LandlordLease(f"c{i}", URI, "the-id", clock.time() + 5, clock=clock) for i in range(2)]
    with pytest.raises(LeaseError, match="not a grant"):
        record_renewals(leases, (clock.time(), clock.monotonic()), RenewResults([30.0, grant], []))  # type: ignore[list-item]


def test_a_grant_of_whole_seconds_or_forever_is_recorded_as_a_float() -> None:
    clock = FakeClock()
    leases = [LandlordLease(f"c{i}", URI, "the-id", clock.time() + 5, clock=clock) for i in range(2)]
    assert record_renewals(leases, (clock.time(), clock.monotonic()), RenewResults([30, math.inf], [])) == {}
    assert [(type(lease.term), lease.term) for lease in leases] == [(float, 30.0), (float, math.inf)]


@pytest.mark.parametrize("answer", [None, RenewResults([30.0], []), RenewResults([30.0, 30.0], "no"),
                                    {"granted": [1.0, 1.0], "denied": []}])
def test_an_answer_that_is_not_the_batchs_results_is_a_lease_error(answer: object) -> None:
    clock = FakeClock()
    leases = [LandlordLease(f"c{i}", URI, "the-id", clock.time() + 5, clock=clock) for i in range(2)]
    with pytest.raises(LeaseError, match="answered renew_all"):
        record_renewals(leases, (clock.time(), clock.monotonic()), answer)
    assert all(lease.term == 5 for lease in leases)  # nothing recorded


def test_a_lease_timed_on_another_clock_keeps_its_landlords_term_and_time_left() -> None:
    uris = ("PYRO:landlord.g@10.0.0.1:1", "PYRO:landlord.g@10.0.0.2:1")
    wall = FakeClock(start=1_000.0, wall_offset=0.0)
    lease = LandlordLease("c" * 32, uris[0], "g", 1_030.0, clock=wall, term=30.0, landlords=uris)
    other = FakeClock(start=50.0, wall_offset=0.0)
    moved = lease.timed_on(other)
    assert moved.clock is other and moved.expiration == 80.0 and moved.remaining == 30.0
    assert (moved.cookie, moved.landlord, moved.landlord_id, moved.term) == (lease.cookie, uris[0], "g", 30.0)
    assert moved.landlords == uris
    plain = LandlordLease("d" * 32, uris[0], "p", 1_010.0, clock=wall).timed_on(other)
    assert plain.landlords == (uris[0],) and plain.remaining == 10.0
