"""A replicated landlord's failover, with real processes: three replicas over a real three-member etcd.

Each replica is tests/processes/replica_landlord.py; this process holds the leases. A holder keeps
renewing every lease in a batch through the failover and records every answer: across kill -9 of
the leader, SIGSTOP of the leader past its TTL, the loss of an etcd member or of etcd's quorum
(the leader goes silent within its TTL, and serves again once etcd is back), no renewal is ever
refused (a definite answer), every cookie still renews afterwards, a lease nobody renews still
expires at its own deadline, and a new leader serves within 3 s of the old one's death.
"""

from __future__ import annotations

import collections
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import Pyro5.api
import Pyro5.errors
import pytest
from conftest import Spawner
from etcd_fixtures import cluster, etcd_cluster, new_group  # noqa: F401

from landlord import (
    LandlordLease,
    LeaseError,
    NotLeaderError,
    RenewResults,
    UnknownLeaseError,
    replica_uris,
    timeout_within,
)
from landlord.testing import WaitFailed, free_port
from landlord.testing.etcd import EtcdCluster, leading_replica, replica_status

TERM = 20.0  # seconds each renewed lease is granted
FAILOVER_GOAL = 3.0  # seconds from the leader's death to the first renewal served by its successor
TTL = 2.0  # the replicas' election TTL (ReplicatedLandlord's default)
COMMIT_INTERVAL = 0.1  # ReplicatedLandlord's default
SKEW = 0.3  # this machine's one clock read by two processes, plus the test's own steps


class Replicas:
    """Three replica processes of one group; ``children[i]`` serves ``uris[i]``."""

    def __init__(self, spawn: Spawner, cluster: EtcdCluster) -> None:
        self.group = new_group()
        ports = [free_port() for _ in range(3)]
        addresses = ",".join(f"127.0.0.1:{port}" for port in ports)
        self.uris = replica_uris(addresses, self.group)
        endpoints = ",".join(cluster.endpoints)
        self.children = [spawn("replica_landlord.py", endpoints, self.group, str(port), addresses) for port in ports]
        self.events: list[tuple[float, str]] = []  # what the test did, when (time.monotonic())
        for child in self.children:
            child.wait_for(r"^replica at ", timeout=20)

    def note(self, event: str) -> None:
        """Record what the test does now, for :meth:`failure_report` to place among the replicas' lines."""
        self.events.append((time.monotonic(), event))

    def failure_report(self, last: int = 40) -> str:
        """Each replica's last ``last`` lines of output (its warnings: a term lost, an etcd outage) and
        the test's events, timed from the first event noted: what a failed test shows."""
        start = self.events[0][0] if self.events else 0.0
        told = [f"{at - start:+8.3f} s  test: {event}" for at, event in self.events]
        for index, child in enumerate(self.children):
            told.append(f"replica {index} ({self.uris[index]}, {'running' if child.alive else 'ended'}):")
            told.extend(f"{line.time - start:+8.3f} s  {line.text}" for line in child.lines[-last:])
        return "\n".join(told)

    def status(self, index: int) -> dict[str, Any] | None:
        return replica_status(self.uris[index])

    def leader(self, *, excluding: int | None = None, timeout: float = 10.0) -> int:
        """The index of the replica that answers as leader."""
        return leading_replica(self.uris, excluding=excluding, timeout=timeout)

    def proxy(self, index: int) -> Pyro5.api.Proxy:
        proxy = Pyro5.api.Proxy(self.uris[index])
        proxy._pyroTimeout = 5.0
        return proxy


@pytest.fixture
def replicas(spawn: Spawner, cluster: EtcdCluster) -> Iterator[Replicas]:
    yield Replicas(spawn, cluster)


class Holder:
    """Renews ``leases`` in one batch call after another on a thread of its own, through the group,
    and counts every answer by kind: granted, definite (a LeaseError: must never happen while a cookie
    lives), or retry (a communication error or NotLeaderError)."""

    def __init__(self, leases: list[LandlordLease]) -> None:
        self.leases = leases
        self.answers: collections.Counter[str] = collections.Counter()
        self.definite: list[BaseException] = []
        self.granted_at: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="holder", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        cookies = [lease.cookie for lease in self.leases]
        while not self._stop.is_set():
            try:
                with timeout_within(1.0):
                    results: RenewResults = self.leases[0].call_landlord("renew_all", cookies, [TERM] * len(cookies))
            except (Pyro5.errors.CommunicationError, NotLeaderError):
                self.answers["retry"] += 1
                self._stop.wait(0.02)  # a holder's retry pause
                continue
            if results.denied:
                self.definite.extend(results.denied)
                self.answers["definite"] += 1
            else:
                self.answers["granted"] += 1
                self.granted_at.append(time.monotonic())

    def first_grant_after(self, moment: float, timeout: float = 10.0) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            later = [at for at in list(self.granted_at) if at > moment]
            if later:
                return later[0] - moment
            self._stop.wait(0.01)
        raise WaitFailed(f"no renewal granted within {timeout} s of the failover")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5.0)


def rent(replicas: Replicas, leader: int, count: int, duration: float, prefix: str) -> list[LandlordLease]:
    with replicas.proxy(leader) as proxy:
        return [proxy.rent(f"{prefix} {number}", duration) for number in range(count)]


def left(replicas: Replicas, leader: int, lease: LandlordLease) -> float:
    with replicas.proxy(leader) as proxy:
        seconds: float = proxy.left(lease.cookie)
        return seconds


def test_kill_9_of_the_leader_loses_no_cookie_keeps_every_term_and_a_successor_serves_within_3_s(
        replicas: Replicas) -> None:
    leader = replicas.leader()
    renewed = rent(replicas, leader, 50, TERM, "room")
    orphans = rent(replicas, leader, 3, 4.0, "orphan")  # their holder is gone: nobody renews them
    orphans_end = time.monotonic() + 4.0
    assert all(lease.landlords == tuple(replicas.uris) for lease in renewed + orphans)
    holder = Holder(renewed)
    try:
        while holder.answers["granted"] < 3:
            threading.Event().wait(0.01)
        killed_at = time.monotonic()
        replicas.note(f"kill -9 of replica {leader}, the leader")
        replicas.children[leader].kill()
        failover = holder.first_grant_after(killed_at)
        successor = replicas.leader(excluding=leader)
        assert failover <= FAILOVER_GOAL, f"the first renewal was served {failover:.2f} s after the kill"
        for lease in orphans:  # their remaining term is kept, not reset by the failover
            expected = orphans_end - time.monotonic()
            assert left(replicas, successor, lease) == pytest.approx(expected, abs=COMMIT_INTERVAL + SKEW)
        freed = replicas.children[successor]
        for number in range(3):
            line = freed.wait_for(rf"^freed orphan {number} \S+$", timeout=10)
            assert line.string  # freed by the successor...
        late = time.monotonic() - orphans_end
        assert late < 1.0, f"...at their own deadline, not a term after the failover ({late:.2f} s late)"
        holder.stop()
        assert holder.definite == [], "a live lease was refused"
        for lease in renewed:  # every cookie still renews, from this thread as from the holder's
            assert lease.renew(TERM) == pytest.approx(TERM)
    finally:
        holder.stop()


class Streamer:
    """Grants, renews and cancels without pause through the group, on a thread of its own, following the
    leader as a client would (a call that fails goes to the replica that leads now); records what was
    acknowledged: leases granted, leases cancelled, and each renewed lease's term as granted."""

    def __init__(self, replicas: Replicas) -> None:
        self.replicas = replicas
        self.granted: list[LandlordLease] = []
        self.cancelled: set[str] = set()
        self.maybe_cancelled: set[str] = set()  # cancels that got no definite answer
        self.definite: list[BaseException] = []
        self.unanswered = 0  # calls that may or may not have been applied (no answer came)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="streamer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        leader = self.replicas.leader()
        number = 0
        while not self._stop.is_set():
            try:
                with self.replicas.proxy(leader) as proxy, timeout_within(1.0):
                    lease: LandlordLease = proxy.rent(f"stream {number}", TERM)
                self.granted.append(lease)
                number += 1
                if number % 3 == 0:  # every third granted is cancelled, through the group
                    self._cancel(self.granted[-2])
                renewed = self.granted[len(self.granted) // 2]
                if renewed.cookie not in self.cancelled | self.maybe_cancelled:
                    renewed.renew(TERM)
            except (Pyro5.errors.CommunicationError, NotLeaderError) as exc:
                self.unanswered += not isinstance(exc, NotLeaderError)
                self._stop.wait(0.02)
                leader = self.replicas.leader(timeout=10.0)
            except LeaseError as exc:
                self.definite.append(exc)

    def _cancel(self, victim: LandlordLease) -> None:
        try:
            victim.cancel()
        except (Pyro5.errors.CommunicationError, NotLeaderError):
            self.maybe_cancelled.add(victim.cookie)  # no answer from the leader that may have applied it
            raise
        except UnknownLeaseError:
            # the group call's first try was applied, its answer lost with the leader; the retry at the
            # successor finds the lease gone: cancelled all the same
            self.maybe_cancelled.add(victim.cookie)
            return
        self.cancelled.add(victim.cookie)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15.0)


def test_kill_9_of_the_leader_mid_stream_the_successor_takes_over_from_its_warm_copy_losing_nothing(
        replicas: Replicas) -> None:
    leader = replicas.leader()
    streamer = Streamer(replicas)
    try:
        deadline = time.monotonic() + 20
        while len(streamer.granted) < 30:  # grants, renewals and cancels under way
            assert time.monotonic() < deadline, "the stream did not start"
            threading.Event().wait(0.01)
        granted_before = len(streamer.granted)
        replicas.note(f"kill -9 of replica {leader}, the leader")
        replicas.children[leader].kill()
        successor = replicas.leader(excluding=leader, timeout=TTL + 8)
        deadline = time.monotonic() + 20
        while len(streamer.granted) < granted_before + 30:  # the stream goes on, served by the successor
            assert time.monotonic() < deadline, "the stream did not resume after the failover"
            threading.Event().wait(0.01)
    finally:
        streamer.stop()
    assert streamer.definite == [], "an acknowledged lease was refused"
    with replicas.proxy(successor) as proxy:
        assert proxy.term_source() == "the warm copy", "the successor read every lease from etcd again"
        assert proxy.term_took_standby(), "the successor restored every lease one by one"
        held, live = proxy.replica_status()["held"], len(streamer.granted) - len(streamer.cancelled)
    # a grant or cancel that got no answer may or may not have been applied: at most one lease each
    assert live - streamer.unanswered - len(streamer.maybe_cancelled) <= held <= live + streamer.unanswered
    for lease in streamer.granted:  # every acknowledged grant lives on; every acknowledged cancel stays done
        if lease.cookie in streamer.maybe_cancelled:
            continue
        if lease.cookie in streamer.cancelled:
            with pytest.raises(LeaseError):
                lease.renew(TERM)
        else:
            assert lease.renew(TERM) == pytest.approx(TERM)


def test_a_leader_stopped_past_its_ttl_is_fenced_answers_nothing_and_rejoins_as_a_follower(
        replicas: Replicas) -> None:
    leader = replicas.leader()
    leases = rent(replicas, leader, 10, TERM, "room")
    old = replicas.children[leader]
    replicas.note(f"SIGSTOP to replica {leader}, the leader")
    old.process.send_signal(signal.SIGSTOP)
    try:
        successor = replicas.leader(excluding=leader, timeout=TTL + 8)
        # calls queued on the stopped leader's sockets, answered (or not) once it runs again
        queued: dict[str, Any] = {}

        def call_old_leader(name: str, call: Any) -> None:
            try:
                with replicas.proxy(leader) as proxy:
                    proxy._pyroTimeout = 10.0
                    queued[name] = call(proxy)
            except BaseException as exc:
                queued[name] = exc

        callers = [threading.Thread(target=call_old_leader, args=(name, call)) for name, call in (
            ("renew", lambda proxy: proxy.renew(leases[0].cookie, TERM)),
            ("rent", lambda proxy: proxy.rent("written by a fenced leader", TERM)),
            ("forged", lambda proxy: proxy.renew("forged-cookie-of-22-ch", TERM)))]
        for caller in callers:
            caller.start()
        threading.Event().wait(0.3)  # the calls reach the stopped process's sockets (a margin, not a sync)
    finally:
        replicas.note(f"SIGCONT to replica {leader}")
        old.process.send_signal(signal.SIGCONT)
    for caller in callers:
        caller.join(15)
    for name, outcome in queued.items():  # silence, or "ask the leader": never an answer of its own
        assert isinstance(outcome, (Pyro5.errors.CommunicationError, NotLeaderError)), (name, outcome)
        assert not isinstance(outcome, LeaseError)
    deadline = time.monotonic() + 10
    while (status := replicas.status(leader)) is None or status["leader"] != replicas.uris[successor]:
        assert time.monotonic() < deadline, f"the old leader did not rejoin as a follower: {status}"
        threading.Event().wait(0.05)
    assert status["leading"] is False
    with replicas.proxy(successor) as proxy:
        assert proxy.replica_status()["held"] == 10  # the fenced leader's grant was never written
    for lease in leases:
        assert lease.renew(TERM) == pytest.approx(TERM)


def test_killing_one_etcd_member_goes_unnoticed_by_holders(cluster: EtcdCluster, replicas: Replicas) -> None:
    leader = replicas.leader()
    leases = rent(replicas, leader, 20, TERM, "room")
    holder = Holder(leases)
    try:
        while holder.answers["granted"] < 3:
            threading.Event().wait(0.01)
        member = cluster.leader()
        replicas.note(f"kill of etcd member {member}, etcd's leader")
        cluster.kill_member(member)  # the worst one: etcd elects a leader of its own
        granted = holder.answers["granted"]
        holder.first_grant_after(time.monotonic())
        while holder.answers["granted"] < granted + 50:  # renewals go on through etcd's own election
            assert holder.answers["retry"] == 0, holder.answers
            threading.Event().wait(0.01)
        more = rent(replicas, replicas.leader(), 1, TERM, "after")  # a write goes through the two left
        holder.stop()
        assert holder.definite == [] and holder.answers["retry"] == 0, holder.answers
        assert more[0].renew(TERM) == pytest.approx(TERM)
    finally:
        holder.stop()


def test_losing_etcd_quorum_silences_the_leader_within_its_ttl_and_service_resumes_with_nothing_lost(
        cluster: EtcdCluster, replicas: Replicas) -> None:
    leader = replicas.leader()
    leases = rent(replicas, leader, 20, TERM, "room")
    holder = Holder(leases)
    try:
        holder.first_grant_after(time.monotonic())
        lost_at = time.monotonic()
        replicas.note("etcd members 0 and 1 paused: no quorum")
        for member in (0, 1):  # a majority of three gone: etcd answers nobody
            cluster.pause_member(member)
        retries = holder.answers["retry"]
        deadline = lost_at + TTL + 1.0
        while time.monotonic() < deadline and holder.answers["retry"] == retries:
            threading.Event().wait(0.05)
        last_grant = holder.granted_at[-1]
        assert last_grant - lost_at < TTL, f"renewals were granted {last_grant - lost_at:.2f} s into the outage"
        assert holder.answers["retry"] > retries, "the holder kept being answered without etcd"
        replicas.note("etcd members 0 and 1 resumed")
        for member in (0, 1):
            cluster.resume_member(member)
        back_at = time.monotonic()
        holder.first_grant_after(back_at, timeout=15.0)  # measured: 3.6 s (etcd's election, then ours)
        holder.stop()
        assert holder.definite == [], "a live lease was refused"
        for lease in leases:
            assert lease.renew(TERM) == pytest.approx(TERM)
    finally:
        holder.stop()
