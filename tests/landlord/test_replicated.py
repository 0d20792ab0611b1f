"""landlord.replication.replicated: one replica of a landlord replicated through etcd.

Three replicas in this process, each on a Pyro5 daemon of its own and with an etcd client of its own,
against a real three-member etcd: one leads and the others name it; a lease names every replica and
follows the leader; when the leader goes, another loads every lease with its cookie and its remaining
term; a leader that cannot reach etcd goes silent (never a definite answer) and serves again when
etcd is back. The failover of separate processes (kill -9, SIGSTOP) is tests/faults/test_replicated_failover.py.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Iterator

import Pyro5.api
import Pyro5.errors
import pytest
from etcd_fixtures import FAILOVER, ReplicaGroup, cluster, etcd_cluster, new_group  # noqa: F401

from landlord import (
    FOREVER,
    LandlordLease,
    LeaseDurationPolicy,
    NotLeaderError,
    ReplicatedLandlord,
    UnknownLeaseError,
    replica_uris,
)
from landlord.replication.election import connect
from landlord.replication.replicated import replica_object_id
from landlord.testing import Recorder, ServingDaemon, free_port
from landlord.testing.etcd import EtcdCluster

# -- addresses, pure -------------------------------------------------------------------------------


def test_replica_uris_follow_from_addresses_and_the_group() -> None:
    assert replica_uris("h1:4000, 10.0.0.2:4001", "rooms") == [
        "PYRO:landlord.rooms@h1:4000", "PYRO:landlord.rooms@10.0.0.2:4001"]
    assert replica_uris([("::1", 4000), "[fe80::1]:4001"], "rooms") == [
        "PYRO:landlord.rooms@[::1]:4000", "PYRO:landlord.rooms@[fe80::1]:4001"]
    assert replica_object_id("rooms") == "landlord.rooms"


@pytest.mark.parametrize("addresses", ["h1", "h1:", ":4000", "h1:0", "h1:65536", "h1:port", "", "h1:1,h1:1"])
def test_replica_uris_refuse_what_is_not_host_port(addresses: str) -> None:
    with pytest.raises(ValueError):
        replica_uris(addresses, "rooms")


def test_replica_uris_refuse_a_bad_group_and_wrong_types() -> None:
    with pytest.raises(ValueError, match="group"):
        replica_uris("h1:4000", "a/b")
    with pytest.raises(TypeError):
        replica_uris(4000, "rooms")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        replica_uris([("h1", "4000", 1)], "rooms")  # type: ignore[list-item]


class Unconfirmed:
    """An election whose term is still wanted but not confirmed now (its keep-alives late)."""

    key = "/landlord/rooms/leader"
    revision: int | None = None


def test_a_term_unconfirmed_before_its_leases_are_loaded_is_loaded_again_after_a_pause() -> None:
    replica = ReplicatedLandlord(object(), group="rooms", replicas=replica_uris("h1:4000", "rooms"),  # type: ignore[arg-type]
                                 warm=False)
    replica._election = Unconfirmed()  # type: ignore[assignment]
    # not done: the loader pauses before it tries again (spinning, it starved the keep-alives of the GIL)
    assert replica._open(7) is False


# -- against etcd ----------------------------------------------------------------------------------


class Group(ReplicaGroup[ReplicatedLandlord]):
    """Three replicas of a new group; what their leases free goes to :attr:`expired`."""

    def __init__(self, cluster: EtcdCluster) -> None:
        self.expired: Recorder[object] = Recorder()
        super().__init__(cluster, lambda client, name, uris: ReplicatedLandlord(
            client, group=name, replicas=uris, on_expire=self.expired))


@pytest.fixture
def group(cluster: EtcdCluster) -> Iterator[Group]:
    started = Group(cluster)
    started.start()
    yield started
    started.close()


def remaining(replica: ReplicatedLandlord, lease: LandlordLease) -> float:
    """The seconds the replica (leading) gives ``lease``, on its own monotonic clock."""
    manager = replica.manager
    assert manager is not None
    return manager.get(lease.cookie).expiration - replica.clock.monotonic()


def test_one_replica_leads_and_the_others_name_it(group: Group) -> None:
    leader = group.leader()
    assert sum(replica.leading for replica in group.replicas) == 1
    for follower in group.followers(leader):
        with Pyro5.api.Proxy(follower.uri) as proxy:
            with pytest.raises(NotLeaderError) as caught:
                proxy.renew("a" * 22, 10.0)
        assert caught.value.leader == leader.uri
        with pytest.raises(NotLeaderError):
            follower.new_lease("room 101", 10.0)
    lease = leader.new_lease("room 101", 10.0)
    assert lease.landlords == tuple(group.uris)
    assert lease.landlord_id == leader.landlord_id
    assert leader.get_resource(lease.cookie) == "room 101"


def test_a_lease_sent_to_a_follower_first_follows_the_leader(group: Group) -> None:
    leader = group.leader()
    lease = leader.new_lease("room 7", 10.0)
    follower_uri = group.followers(leader)[0].uri
    assert follower_uri is not None
    # as a holder in another process would first reach the group: through a follower
    elsewhere = LandlordLease(lease.cookie, follower_uri, lease.landlord_id, time.time() + 10,
                              landlords=lease.landlords)
    assert elsewhere.renew(20.0) == pytest.approx(20.0)
    assert remaining(leader, lease) == pytest.approx(20.0, abs=0.5)


def test_a_definite_answer_comes_only_from_the_leader(group: Group) -> None:
    leader = group.leader()
    with Pyro5.api.Proxy(leader.uri) as proxy:
        with pytest.raises(UnknownLeaseError):
            proxy.renew("forged-cookie-of-22-ch", 10.0)
        with pytest.raises(ValueError):
            proxy.renew("a" * 22, math.nan)
        results = proxy.renew_all(["forged-cookie-of-22-ch"], [10.0])
    assert results.granted == [-1] and isinstance(results.denied[0], UnknownLeaseError)


def test_after_a_failover_every_cookie_renews_and_keeps_its_remaining_term(group: Group) -> None:
    leader = group.leader()
    leases = [leader.new_lease(f"room {number}", 30.0) for number in range(20)]
    renewed = leases[0]
    renewed.renew(60.0)  # written by the committer, within its interval
    before = {lease.cookie: remaining(leader, lease) for lease in leases}
    left_at = time.monotonic()
    leader.close()  # writes the renewals not yet written, then resigns
    successor = group.leader(excluding=leader)
    elapsed = time.monotonic() - left_at
    assert successor.landlord_id == leader.landlord_id
    bound = successor.commit_interval + 0.25  # plus this machine's one wall clock read twice, and the test's own steps
    for lease in leases:
        assert remaining(successor, lease) == pytest.approx(before[lease.cookie] - elapsed, abs=bound)
    assert remaining(successor, renewed) > 55
    for lease in leases:  # the same lease objects: they follow the new leader
        assert lease.renew(30.0) == pytest.approx(30.0)


def test_a_lease_whose_holder_died_before_the_failover_expires_in_its_own_term(group: Group) -> None:
    leader = group.leader()
    term = 2.0
    lease = leader.new_lease("orphan", term)
    deadline = time.monotonic() + term  # its holder is gone: nobody renews it
    leader.close()
    successor = group.leader(excluding=leader)
    [freed] = group.expired.wait_for(1, timeout=term + 5)
    assert freed == "orphan"
    late = time.monotonic() - deadline
    assert -successor.commit_interval - 0.1 <= late < 0.5, "freed at its deadline, not a full term after the failover"
    with pytest.raises(UnknownLeaseError):
        lease.renew(1.0)


def test_a_cancel_reaches_etcd_before_it_is_answered(group: Group) -> None:
    leader = group.leader()
    kept, cancelled = leader.new_lease("kept", FOREVER), leader.new_lease("cancelled", FOREVER)
    cancelled.cancel()
    assert group.expired.items == ["cancelled"]
    leader.close()
    successor = group.leader(excluding=leader)
    assert len(successor) == 1
    assert successor.get_resource(kept.cookie) == "kept"
    with pytest.raises(UnknownLeaseError):
        cancelled.renew(1.0)


def test_a_leader_cut_off_from_etcd_goes_silent_and_serves_again_when_etcd_is_back(
        cluster: EtcdCluster, group: Group) -> None:
    leader = group.leader()
    lease = leader.new_lease("room 9", 60.0)
    for member in range(3):
        cluster.pause_member(member)
    election = leader.election
    assert election is not None
    assert election.wait_until(lambda e: not e.leading, timeout=leader.ttl + 1)
    with Pyro5.api.Proxy(leader.uri) as proxy:
        proxy._pyroTimeout = 5
        for call in (lambda: proxy.renew(lease.cookie, 10.0), lambda: proxy.renew("forged-cookie-of-22-ch", 1.0)):
            with pytest.raises(Pyro5.errors.CommunicationError):  # never a definite answer
                call()
    for member in range(3):
        cluster.resume_member(member)
    group.leader(timeout=10.0)
    assert lease.renew(30.0) == pytest.approx(30.0)


def test_the_stores_failed_calls_leave_the_elections_keep_alives_a_member_to_ask(group: Group) -> None:
    """pyetcd blames a failed call on the member its client uses when the error comes, and passes over
    it for a while: the store's calls timing out on a dead member could pass over every member of a
    shared client, and the keep-alives, finding none, let the term lapse (a CI flake). Here every
    member of the client the replica was given is blamed again and again, for longer than a term."""
    leader = group.leader()
    election = leader.election
    assert election is not None
    given = leader._client  # what the store and the warm copy use
    import grpc  # here: without the client, the fixture skips first
    from pyetcd.exceptions import ConnectionTimeoutError, NoServerAvailableError

    class TimedOut(grpc.RpcError):
        def code(self) -> grpc.StatusCode:
            return grpc.StatusCode.DEADLINE_EXCEEDED

    stop = threading.Event()

    def blame_every_member() -> None:
        while not stop.is_set():
            for _ in given.endpoints:
                try:
                    assert given.channel  # the member the client uses now...
                except NoServerAvailableError:
                    break
                with contextlib.suppress(ConnectionTimeoutError):  # ...blamed as pyetcd blames a call timed out
                    given._manage_grpc_errors(TimedOut())
            stop.wait(0.05)

    blamer = threading.Thread(target=blame_every_member, name="blamer", daemon=True)
    blamer.start()
    try:
        lapsed = election.wait_until(lambda e: not e.leading, timeout=2 * leader.ttl + 0.5)
    finally:
        stop.set()
        blamer.join(5.0)
    assert not lapsed, "the keep-alives found no member to ask: the term went unconfirmed"
    assert leader.leading


def test_a_replica_given_an_election_client_elects_with_it_and_leaves_it_open(cluster: EtcdCluster) -> None:
    port = free_port()
    name = new_group()
    [uri] = replica_uris([("127.0.0.1", port)], name)
    slow = connect(cluster.endpoints, timeout=5.0)  # its calls could outlast a term: the election refuses it
    with pytest.raises(ValueError, match="client's timeout"):
        ReplicatedLandlord(connect(cluster.endpoints), group=name, replicas=[uri], election_client=slow).start(uri)
    slow.close()
    electing = connect(cluster.endpoints)
    replica = ReplicatedLandlord(connect(cluster.endpoints), group=name, replicas=[uri], election_client=electing)
    try:
        with ServingDaemon(port=port) as daemon:
            daemon.register(replica, replica.object_id)
            replica.start()
            assert replica.wait_leading(FAILOVER)
            value, _ = electing.get(f"/landlord/{name}/leader")
            assert value == uri.encode()
            replica.close()
        assert electing.get(f"/landlord/{name}/leader") == (None, None)  # resigned through it, and still open
    finally:
        replica.close()
        electing.close()


def test_a_replica_given_another_landlord_id_resigns_rather_than_lead(
        cluster: EtcdCluster, group: Group, caplog: pytest.LogCaptureFixture) -> None:
    group.leader()  # the group's landlord id is stored
    group.close()
    port = free_port()
    [uri] = replica_uris([("127.0.0.1", port)], group.name)
    stray = ReplicatedLandlord(connect(cluster.endpoints), group=group.name, replicas=[uri], landlord_id="another")
    with ServingDaemon(port=port) as daemon:
        daemon.register(stray, replica_object_id(group.name))
        stray.start()
        election = stray.election
        assert election is not None
        assert election.wait_until(lambda e: e.leader() is None and not e.leading and "resigns" in caplog.text,
                                   timeout=FAILOVER)
        assert not stray.leading
        with pytest.raises(Pyro5.errors.ConnectionClosedError):  # no leader known: nothing to tell
            stray.new_lease("x", 1.0)
        stray.close()
    assert "belongs to landlord" in caplog.text


def test_bad_options_are_refused_before_anything_starts(cluster: EtcdCluster) -> None:
    client = connect(cluster.endpoints)
    uris = replica_uris("127.0.0.1:4000", "rooms")
    for options, error in (({"group": "a/b"}, ValueError), ({"replicas": []}, ValueError),
                           ({"replicas": ["not a uri"]}, ValueError), ({"replicas": "PYRO:x@h:1"}, TypeError),
                           ({"commit_interval": 0.0}, ValueError), ({"ready_wait": math.inf}, ValueError),
                           ({"reaper": object()}, TypeError)):
        arguments: dict[str, object] = {"group": "rooms", "replicas": uris, **options}
        with pytest.raises(error):
            ReplicatedLandlord(client, **arguments)  # type: ignore[arg-type]
    replica = ReplicatedLandlord(client, group="rooms", replicas=uris, policy=LeaseDurationPolicy(maximum=10))
    with pytest.raises(RuntimeError, match="register"):
        replica.start()
    with pytest.raises(ValueError, match="not one of"):
        replica.start(candidate="PYRO:landlord.rooms@127.0.0.1:4001")
    assert replica.election is None and not replica.leading


def test_a_term_whose_leases_cannot_be_loaded_leaves_no_store_thread_behind(
        cluster: EtcdCluster, group: Group, monkeypatch: pytest.MonkeyPatch) -> None:
    leader = group.leader()
    attempts: list[str] = []

    def unreadable(self: ReplicatedLandlord, *, store: object, landlord_id: str | None) -> object:
        attempts.append("load")
        raise cluster_error  # as etcd failing to answer the load

    from pyetcd.exceptions import ConnectionTimeoutError  # here: without the client, the fixture skips first
    cluster_error = ConnectionTimeoutError("etcd did not answer")
    monkeypatch.setattr(ReplicatedLandlord, "make_landlord", unreadable)
    before = set(threading.enumerate())
    leader.close()  # a follower is elected and tries to load, again and again
    deadline = time.monotonic() + FAILOVER
    while len(attempts) < 5:
        assert time.monotonic() < deadline, "no replica tried to load the leases"
        threading.Event().wait(0.05)
    committers = [thread for thread in threading.enumerate()
                  if thread.name.startswith("renewal log") and thread not in before]
    assert len(committers) <= 1, f"{len(committers)} committer threads left by failed loads"


def test_attached_resources_caps_and_revocations_survive_a_failover(cluster: EtcdCluster) -> None:
    group = ReplicaGroup(cluster, lambda client, name, uris: ReplicatedLandlord(
        client, group=name, replicas=uris, policy=LeaseDurationPolicy(maximum=60, lifetime=40)))
    group.start()
    try:
        leader = group.leader()
        lease = leader.new_lease("session", 30.0)
        leader.attach(lease.cookie, "lock a")
        leader.attach(lease.cookie, "lock b")
        leader.detach(lease.cookie, "lock a")
        revoked = leader.new_lease("revoked", 30.0)
        leader.revoke(revoked.cookie, "maintenance")
        leader.close()
        successor = group.leader(excluding=leader)
        manager = successor.manager
        assert manager is not None
        assert manager.get(lease.cookie).attached == ["lock b"]
        assert lease.renew(60.0) <= 40.0  # the cap came along: 40 s from the grant, not from the failover
        with pytest.raises(UnknownLeaseError):
            revoked.renew(10.0)  # its end was written before revoke returned
    finally:
        group.close()
