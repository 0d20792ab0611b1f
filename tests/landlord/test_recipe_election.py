"""Election (landlord/recipe/election.py) and Claim.hand_over: campaign, lead, watch the leader
(pushed), resign, hand over to a named successor with no gap; in-process on a fake clock, and served."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import Pyro5.server
import pytest
from etcd_fixtures import FAILOVER, ReplicaGroup, cluster, etcd_cluster  # noqa: F401 (fixtures)

import landlord
from landlord import Election, FakeClock, Landlord, LandlordLease, LeaseDurationPolicy, ReplicatedLandlord
from landlord.recipe.election import leader_of
from landlord.testing import Recorder, ServingDaemon
from landlord.testing.etcd import EtcdCluster

TERM = 10.0


class Campaign:
    """A candidate campaigning on a thread of its own: what ``campaign`` returned, once it has."""

    def __init__(self, election: Election, timeout: float | None = None) -> None:
        self.election = election
        self.result: Recorder[bool | BaseException] = Recorder()
        self._thread = threading.Thread(target=self._run, args=(timeout,), daemon=True)
        self._thread.start()

    def _run(self, timeout: float | None) -> None:
        try:
            self.result.record(self.election.campaign(timeout))
        except BaseException as exc:
            self.result.record(exc)

    def outcome(self) -> bool | BaseException:
        [outcome] = self.result.wait_for(1)
        self._thread.join(10)
        return outcome

    @property
    def returned(self) -> bool:
        return len(self.result) > 0


@pytest.fixture
def grantor(clock: FakeClock) -> Iterator[Landlord]:
    landlord = Landlord(clock=clock, policy=LeaseDurationPolicy(maximum=100))
    yield landlord
    landlord.close()


@pytest.fixture
def candidates(grantor: Landlord) -> Iterator[Callable[[str], Election]]:
    made: list[Election] = []

    def make(value: str) -> Election:
        election = Election(grantor, "leader", value, duration=TERM)
        made.append(election)
        return election

    yield make
    for election in made:
        election.close()


def queued(clock: FakeClock, election: Election, timeout: float) -> Campaign:
    """``election`` campaigning with ``timeout``, once it waits in line at the landlord (it sleeps until
    the end of its wait on the fake clock: a deadline no other sleeper has, when timeouts differ)."""
    campaign = Campaign(election, timeout)
    clock.wait_for_sleeper(clock.monotonic() + timeout)
    return campaign


def test_one_candidate_leads_and_everyone_sees_it(candidates: Callable[[str], Election]) -> None:
    a, b = candidates("a"), candidates("b")
    assert a.leader() is None and not a.leading
    assert a.campaign() and a.leading and a.token == 1
    assert a.leader() == b.leader() == "a"
    assert not b.campaign(timeout=0) and not b.leading and b.token is None
    a.resign()
    assert not a.leading and b.leader() is None
    assert b.campaign(0) and b.token == 2 and a.leader() == "b"


def test_the_next_candidate_in_line_leads_when_the_leader_resigns(clock: FakeClock,
                                                                  candidates: Callable[[str], Election]) -> None:
    a, b, c = candidates("a"), candidates("b"), candidates("c")
    assert a.campaign()
    second, third = queued(clock, b, 400), queued(clock, c, 500)
    a.resign()
    assert second.outcome() is True and b.leading and b.token == 2
    assert not third.returned and not c.leading
    b.close()
    assert third.outcome() is True and c.token == 3 and c.leader() == "c"


def test_hand_over_passes_to_the_named_candidate_with_no_gap(clock: FakeClock, grantor: Landlord,
                                                             candidates: Callable[[str], Election]) -> None:
    a, b, c = candidates("a"), candidates("b"), candidates("c")
    seen: Recorder[str | None] = Recorder()
    watching = candidates("watcher")
    watching.watch(seen)
    seen.wait_for(1)
    assert a.campaign()
    seen.wait_until(lambda items: items[-1] == "a")
    first = queued(clock, c, 400)   # first in line: a release would go to c
    successor = queued(clock, b, 500)
    token = a.token
    assert token is not None
    a.hand_over("b")
    assert not a.leading and a.token is None and a.lease is None  # before b can be told
    assert successor.outcome() is True and b.leading
    assert b.token == token + 1  # no grant in between: every grant takes the next token
    assert not first.returned and not c.leading
    [view] = grantor.names()
    assert [grant.token for grant in view.holders] == [token + 1] and len(view.waiters) == 1
    seen.wait_until(lambda items: items[-1] == "b")
    after_a = seen.items[seen.items.index("a") + 1:]
    assert after_a == ["b"]  # never nobody, never c
    assert a.leader() == "b"
    b.resign()
    assert first.outcome() is True and c.token == token + 2


def test_a_refused_hand_over_changes_nothing(clock: FakeClock, candidates: Callable[[str], Election]) -> None:
    a, b = candidates("a"), candidates("b")
    with pytest.raises(RuntimeError, match="nothing to hand over"):
        a.hand_over("b")
    assert a.campaign()
    with pytest.raises(ValueError, match="nobody waits"):
        a.hand_over("b")  # b does not campaign
    assert a.leading and a.token == 1 and a.leader() == "a"
    waiting = queued(clock, b, 400)
    a.hand_over("b")
    assert waiting.outcome() is True and b.token == 2


def test_a_leader_revoked_stops_leading_and_is_told(grantor: Landlord, candidates: Callable[[str], Election]) -> None:
    a = candidates("a")
    lost: Recorder[str] = Recorder()
    a.on_lost(lost)
    assert a.campaign()
    assert a.lease is not None
    grantor.revoke(a.lease.cookie, "an operator ended it")
    assert lost.wait_for(1) == ["an operator ended it"]
    assert not a.leading and a.leader() is None


def test_a_watch_tells_each_change_of_leader_once(clock: FakeClock, candidates: Callable[[str], Election]) -> None:
    a, b = candidates("a"), candidates("b")
    seen: Recorder[str | None] = Recorder()
    b.watch(seen)
    assert seen.wait_for(1) == [None]
    assert a.campaign()
    seen.wait_until(lambda items: items == [None, "a"])
    waiting = queued(clock, b, 400)
    a.resign()
    assert waiting.outcome() is True
    seen.wait_until(lambda items: items == [None, "a", "b"])
    b.resign()
    seen.wait_until(lambda items: items == [None, "a", "b", None])
    assert a.campaign() and b.campaign(0) is False
    seen.wait_until(lambda items: items == [None, "a", "b", None, "a"])
    a.resign()
    assert a.campaign() and a.token == 4  # a new term of the same leader is a change too
    seen.wait_until(lambda items: items[5:] in (["a"], [None, "a"]))


def test_a_lost_watch_watches_again_and_misses_no_change(grantor: Landlord,
                                                         candidates: Callable[[str], Election]) -> None:
    a, b = candidates("a"), candidates("b")
    seen: Recorder[str | None] = Recorder()
    watch = b.watch(seen)
    seen.wait_for(1)
    lost = watch.lease
    assert isinstance(lost, LandlordLease)
    grantor.revoke(lost.cookie, "dropped")  # as when it could not be told
    assert a.campaign()  # while it watches again, or before
    seen.wait_until(lambda items: items == [None, "a"])
    assert watch.lease is not None and watch.lease.cookie != lost.cookie
    assert len(grantor._watches) == 1
    a.resign()
    seen.wait_until(lambda items: items == [None, "a", None])


def test_close_resigns_and_stops_watching(grantor: Landlord) -> None:
    a = Election(grantor, "leader", "a", duration=TERM)
    seen: Recorder[str | None] = Recorder()
    a.watch(seen)
    a.watch(seen)
    assert a.campaign()
    assert len(grantor._watches) == 2
    a.close()
    assert len(grantor._watches) == 0 and not grantor.names()


def test_with_election_campaigns_and_resigns(candidates: Callable[[str], Election]) -> None:
    a, b = candidates("a"), candidates("b")
    with a:
        assert a.leading and b.leader() == "a"
    assert not a.leading and b.leader() is None


def test_bad_arguments(grantor: Landlord) -> None:
    for value in (None, "", 7):
        with pytest.raises(TypeError):
            Election(grantor, "leader", value)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Election(grantor, "leader", "a", duration=-5)
    assert leader_of([]) is None and leader_of([(3, "x"), (4, None)]) == (3, "x")
    assert landlord.Election is Election


# -- served ------------------------------------------------------------------------------------


class Queueing(Landlord):
    """A landlord that records each request that waits in line (for tests to know when a candidate waits)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.queued: Recorder[str | None] = Recorder()

    @Pyro5.server.expose
    def acquire(self, *args: Any, **kwargs: Any) -> tuple[LandlordLease, int | None]:
        lease, token = super().acquire(*args, **kwargs)
        if token is None:
            self.queued.record(args[5] if len(args) > 5 else kwargs.get("value"))
        return lease, token


def test_served_campaign_watch_and_hand_over(daemon: ServingDaemon) -> None:
    grantor = Queueing(policy=LeaseDurationPolicy(maximum=100))
    uri = daemon.register(grantor)
    a, b, c = (Election(uri, "served", value, duration=5) for value in "abc")
    try:
        seen: Recorder[str | None] = Recorder()
        c.watch(seen)
        assert seen.wait_for(1) == [None]
        assert a.campaign() and a.leader() == "a"
        seen.wait_until(lambda items: items == [None, "a"])
        other, successor = Campaign(c), Campaign(b)
        grantor.queued.wait_until(lambda values: sorted(values) == ["b", "c"])  # type: ignore[type-var]
        token = a.token
        assert token is not None
        a.hand_over("b")
        assert not a.leading
        assert successor.outcome() is True and b.token == token + 1 and b.leader() == "b"
        seen.wait_until(lambda items: items == [None, "a", "b"])
        assert not other.returned
        b.resign()
        assert other.outcome() is True and c.leading
        seen.wait_until(lambda items: items == [None, "a", "b", "c"])
        assert not a.campaign(timeout=0)
    finally:
        for election in (a, b, c):
            election.close()
        grantor.close()


# -- a replica group over etcd -------------------------------------------------------------------


def test_replicated_leadership_and_its_watch_survive_a_failover(cluster: EtcdCluster) -> None:
    group = ReplicaGroup(cluster, lambda client, name, uris: ReplicatedLandlord(
        client, group=name, replicas=uris, policy=LeaseDurationPolicy(maximum=100)))
    group.start()
    a, b = (Election(group.uris, "replicated", value, duration=3) for value in "ab")
    try:
        first = group.leader()
        seen: Recorder[str | None] = Recorder()
        b.watch(seen)
        assert a.campaign(timeout=10) and a.leader() == "a"
        seen.wait_until(lambda items: items[-1:] == ["a"])
        token = a.token
        assert token is not None
        first.close()  # the leader goes: claims and tokens are in etcd, the watch is not
        successor = group.leader(excluding=first)
        assert b.leader() == "a" and a.leading
        campaign = Campaign(b)
        deadline = time.monotonic() + FAILOVER
        while not any(view.waiters for view in successor.answer(lambda landlord: landlord.names())):
            assert time.monotonic() < deadline, "b never waited in line"
            time.sleep(0.02)  # the pace of asking, not a wait standing in for an event
        a.hand_over("b")
        assert campaign.outcome() is True and b.leading and b.token is not None and b.token > token
        seen.wait_until(lambda items: items[-1:] == ["b"], timeout=20)  # heard through the watch made again
        assert seen.items.count("a") == 1  # watching again told nothing new while a led
    finally:
        a.close()
        b.close()
        group.close()
