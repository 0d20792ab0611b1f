"""landlord.replication.warmcopy: a follower's warm copy of its group's leases.

The fold kept one event at a time is checked against :func:`~landlord.replication.etcdstore.fold` of the
same keys, without etcd. Against a real three-member etcd: a copy follows a leader's grants, renewals and
cancels through its watch and hands over what a fresh read gives; one whose revision etcd compacted away
reads the group again; one not caught up hands over nothing. With replicas: a follower takes over from
its copy, reading nothing from etcd, with every lease and its time left; one whose copy cannot be had
reads etcd, as before.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import types
from collections.abc import Iterator
from typing import Any

import pytest
from etcd_fixtures import ReplicaGroup, cluster, etcd_cluster, new_group  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st
from Pyro5.serializers import SerpentSerializer

from landlord import FOREVER, LeaseDurationPolicy, ReplicatedLandlord
from landlord.replication.election import Election
from landlord.replication.etcdstore import (
    EtcdLeaseStore,
    Record,
    fold,
    pack_ended,
    pack_record,
    pack_renewals,
    read_group,
    unpack_chunk,
    unpack_record,
)
from landlord.replication.warmcopy import FoldedLeases, WarmCopy
from landlord.testing.etcd import EtcdCluster

ROOT = "/landlord/g/"
WALL = 1_700_000_000.0
SERPENT = SerpentSerializer()


# -- the fold, one event at a time, pure -----------------------------------------------------------------


class Keys:
    """A group's keys as etcd would hold them, each write at a revision of its own, and the events
    they make, applied to a FoldedLeases as they come."""

    def __init__(self) -> None:
        self.revision = 0  # the fold's own start: nothing applied
        self.kvs: dict[bytes, types.SimpleNamespace] = {}
        self.folded = FoldedLeases(ROOT, name="test")
        self.chunks = 0

    def put(self, key: str, value: bytes) -> None:
        self.revision += 1
        old = self.kvs.get(key.encode())
        kv = types.SimpleNamespace(key=key.encode(), value=value, mod_revision=self.revision,
                                   create_revision=old.create_revision if old else self.revision)
        self.kvs[kv.key] = kv
        self.folded.apply(kv, deleted=False)

    def delete(self, key: bytes) -> None:
        if self.kvs.pop(key, None) is not None:  # as etcd: deleting no key makes no revision
            self.revision += 1
            self.folded.apply(types.SimpleNamespace(key=key, value=b"", mod_revision=self.revision,
                                                    create_revision=0), deleted=True)

    def chunk(self, value: bytes) -> None:
        self.chunks += 1
        self.put(f"{ROOT}log/w-{self.chunks:012d}", value)

    def compact(self) -> None:
        """What the leader's compaction does: the latest expirations anew, the ended keys, the old chunks."""
        folded = self.folded_now()
        old = [key for key in self.kvs if key.startswith(f"{ROOT}log/".encode())]
        for value, _ in pack_renewals([(cookie, expiration, written) for cookie, expiration, written, _
                                       in folded.leases]):
            self.chunk(value)
        for cookie in folded.ended:
            self.delete(f"{ROOT}leases/{cookie}".encode())
        for key in old:
            self.delete(key)

    def folded_now(self) -> Any:
        records, chunks = {}, []
        for key, kv in self.kvs.items():
            name = key.decode()
            if name.startswith(f"{ROOT}leases/"):
                expiration, written, resource = unpack_record(kv.value)
                records[name[len(ROOT) + 7:]] = Record(kv.mod_revision, kv.create_revision, expiration, written,
                                                       resource)
            else:
                chunks.append((kv.mod_revision, unpack_chunk(kv.value)))
        return fold(records, chunks)


def as_loaded(folded: Any) -> list[tuple[str, float, float, Any]]:
    return [(cookie, expiration, written, SERPENT.loads(data)) for cookie, expiration, written, data
            in folded.leases]


COOKIES = [f"c{i}" for i in range(6)]
steps = st.lists(st.one_of(
    st.tuples(st.just("grant"), st.sampled_from(COOKIES), st.integers(0, 100)),
    st.tuples(st.just("renew"), st.lists(st.tuples(st.sampled_from(COOKIES), st.integers(0, 100)), min_size=1)),
    st.tuples(st.just("end"), st.lists(st.sampled_from(COOKIES), min_size=1)),
    st.tuples(st.just("delete"), st.sampled_from(COOKIES)),
    st.tuples(st.just("compact")),
), max_size=30)


@settings(deadline=None)
@given(steps)
def test_the_fold_kept_event_by_event_is_the_fold_of_the_keys(script: list[tuple[Any, ...]]) -> None:
    keys = Keys()
    granted: set[str] = set()
    retired: set[str] = set()  # ended or deleted: a cookie is never used again
    for step in script:
        kind = step[0]
        if kind == "grant" and step[1] not in granted | retired:
            granted.add(step[1])
            keys.put(f"{ROOT}leases/{step[1]}", pack_record(WALL + step[2], WALL, SERPENT.dumps(f"room {step[1]}")))
        elif kind == "grant" and step[1] in granted:
            keys.put(f"{ROOT}leases/{step[1]}", pack_record(WALL + step[2], WALL, SERPENT.dumps("changed")))
        elif kind == "renew":
            for value, _ in pack_renewals([(cookie, WALL + 1000 + at, WALL + 1) for cookie, at in step[1]]):
                keys.chunk(value)
        elif kind == "end" and granted.intersection(step[1]):
            ended = granted.intersection(step[1])
            granted -= ended
            retired |= ended
            for value, _ in pack_ended(sorted(ended)):
                keys.chunk(value)
        elif kind == "delete" and step[1] in granted:
            granted.discard(step[1])
            retired.add(step[1])
            keys.delete(f"{ROOT}leases/{step[1]}".encode())
        elif kind == "compact":
            keys.compact()
        expected = keys.folded_now()
        warm = keys.folded.warm()
        assert warm.leases == as_loaded(expected)
        assert warm.ended == expected.ended
        assert set(warm.chunks) == {key.decode() for key in keys.kvs if b"/log/" in key}
        assert keys.folded.revision == keys.revision


def test_a_fold_read_at_once_equals_the_fold_kept_event_by_event() -> None:
    keys = Keys()
    keys.put(f"{ROOT}leases/a", pack_record(WALL + 10, WALL, SERPENT.dumps("a")))
    keys.put(f"{ROOT}leases/b", pack_record(WALL + 20, WALL, SERPENT.dumps("b")))
    for value, _ in pack_renewals([("a", WALL + 30, WALL + 1)]):
        keys.chunk(value)
    for value, _ in pack_ended(["b"]):
        keys.chunk(value)
    records = {kv.key.decode()[len(ROOT) + 7:]: Record(kv.mod_revision, kv.create_revision,
                                                     *unpack_record(kv.value))
               for kv in keys.kvs.values() if b"/leases/" in kv.key}
    chunks = [(kv.mod_revision, kv.key.decode(), unpack_chunk(kv.value)) for kv in keys.kvs.values()
              if b"/log/" in kv.key]
    read = FoldedLeases.read(ROOT, records, chunks, keys.revision, name="test").warm()
    kept = keys.folded.warm()
    assert read.leases == kept.leases == [("a", WALL + 30, WALL + 1, "a")]
    assert read.ended == kept.ended == {"b"} and read.chunks == kept.chunks


def test_malformed_keys_and_unreadable_resources_are_logged_and_never_handed_over(
        caplog: pytest.LogCaptureFixture) -> None:
    keys = Keys()
    keys.put(f"{ROOT}leases/good", pack_record(WALL + 10, WALL, SERPENT.dumps("good")))
    keys.put(f"{ROOT}leases/was-good", pack_record(WALL + 10, WALL, SERPENT.dumps("ok")))
    with caplog.at_level(logging.WARNING, logger="landlord.warmcopy"):
        keys.put(f"{ROOT}leases/was-good", b"junk")  # rewritten malformed: no lease now, as a load would say
        keys.put(f"{ROOT}leases/unreadable", pack_record(WALL + 10, WALL, b"(unclosed"))
        keys.put(f"{ROOT}log/junk", b"junk")
        keys.put(f"{ROOT}settings/k", b"anything")  # not a lease's: changes nothing
    assert keys.folded.warm().leases == [("good", WALL + 10, WALL, "good")]
    logged = " ".join(record.getMessage() for record in caplog.records)
    assert "was-good" in logged and "unreadable" in logged and "log/junk" in logged


# -- against a real three-member etcd ------------------------------------------------------------------


class Group:
    """A group with a leader (an Election on its own client), its store, and a follower's warm copy."""

    def __init__(self, cluster: EtcdCluster) -> None:
        self.client = cluster.client()
        self.election = Election(self.client, group=new_group(), candidate="r1").start()
        assert self.election.wait_until(lambda e: e.leading, 5.0), self.election
        self.store = EtcdLeaseStore(self.client, self.election, commit_interval=60.0)
        self.follower = cluster.client()
        self.copies: list[WarmCopy] = []

    def copy(self, **options: Any) -> WarmCopy:
        made = WarmCopy(self.follower, self.election.key, **options)
        self.copies.append(made)
        return made.start()

    def revision(self) -> int:
        return int(self.client.get_range_response(b"/", b"\0", count_only=True).header.revision)

    def wait_caught_up(self, copy: WarmCopy, timeout: float = 10.0) -> None:
        wanted = self.revision()
        with copy.changed:
            assert copy.changed.wait_for(lambda: (copy.revision or 0) >= wanted, timeout), (copy.revision, wanted)

    def read(self) -> list[tuple[str, float, float, Any]]:
        """What a fresh read of etcd folds to, resources read."""
        records, chunks, _ = read_group(self.client, self.election.key, "test")
        return as_loaded(fold(records, [(revision, chunk) for revision, _, chunk in chunks]))

    def close(self) -> None:
        for copy in self.copies:
            copy.close()
        self.store.close()
        self.election.close()
        self.client.close()
        self.follower.close()


@pytest.fixture
def group(cluster: EtcdCluster) -> Iterator[Group]:
    made = Group(cluster)
    yield made
    made.close()


def test_a_copy_follows_grants_renewals_and_cancels_and_hands_over_what_a_fresh_read_gives(group: Group) -> None:
    store = group.store
    now = float(int(time.time()))
    store.put("before", now + 60, "read at first", now)
    copy = group.copy()
    group.wait_caught_up(copy)
    assert copy.loads == 1 and len(copy) == 1
    cookies = [f"c{i:021d}" for i in range(300)]
    for i, cookie in enumerate(cookies):  # grants, seen through the watch
        store.put(cookie, now + 10, {"room": i}, now)
    store.renew([(cookie, now + 100) for cookie in cookies[:50]], now + 1)
    store.flush()  # renewals: a chunk of the log
    store.delete(cookies[50:60])  # a small cancel: keys deleted
    store.delete(cookies[100:300])  # a large one: an ended chunk
    store.put("before", now + 60, "changed", now + 2)
    group.wait_caught_up(copy)
    assert copy.loads == 1, "followed by its watch, never read again"
    warm = copy.take(group.election.revision or 0)
    assert warm is not None and warm.leases == group.read()
    assert [cookie for cookie, *_ in warm.leases] == ["before", *cookies[:50], *cookies[60:100]]
    assert warm.leases[1][1:] == (now + 100, now + 1, {"room": 0})
    assert warm.ended == set(cookies[100:300])
    assert copy.revision is None and copy.take(0) is None, "handed over once; stopped until resumed"


def test_a_copy_whose_revision_etcd_compacted_away_reads_the_group_again(
        group: Group, monkeypatch: pytest.MonkeyPatch) -> None:
    now = float(int(time.time()))
    group.store.put("first", now + 60, "r", now)
    read = WarmCopy._read

    def read_then_compact(copy: WarmCopy) -> FoldedLeases:
        folded = read(copy)
        if copy.loads == 1:  # written after the read, then compacted away before the watch begins
            group.store.put("missed", now + 60, "r", now)
            group.store.set_setting("k", 1)  # so that the compacted revision is past the watch's first
            group.client.compact(group.revision(), physical=True)
            compacted.set()
        return folded
    compacted = threading.Event()
    monkeypatch.setattr(WarmCopy, "_read", read_then_compact)
    copy = group.copy()
    assert compacted.wait(10.0)
    group.wait_caught_up(copy)
    assert copy.loads == 2
    warm = copy.take(group.election.revision or 0)
    assert warm is not None and [cookie for cookie, *_ in warm.leases] == ["first", "missed"]


def test_a_copy_not_caught_up_in_time_hands_over_nothing_and_resumed_reads_afresh(group: Group) -> None:
    copy = group.copy(catch_up=0.2)
    group.wait_caught_up(copy)
    started = time.monotonic()
    assert copy.take(group.revision() + 1000) is None  # a revision it never reaches
    assert 0.2 <= time.monotonic() - started < 2.0
    assert copy.revision is None
    copy.resume()
    group.wait_caught_up(copy)
    assert copy.loads == 2
    with pytest.raises(ValueError, match="catch_up"):
        WarmCopy(group.follower, group.election.key, catch_up=0)


# -- replicas -------------------------------------------------------------------------------------------


@pytest.fixture
def replicas(cluster: EtcdCluster) -> Iterator[ReplicaGroup[ReplicatedLandlord]]:
    made: ReplicaGroup[ReplicatedLandlord] = ReplicaGroup(cluster, lambda client, name, uris: ReplicatedLandlord(
        client, group=name, replicas=uris, policy=LeaseDurationPolicy(maximum=FOREVER))).start()
    yield made
    made.close()


def wait_followers_caught_up(leader: ReplicatedLandlord, followers: list[ReplicatedLandlord]) -> None:
    """Until every follower's copy has applied what the leader wrote."""
    store = leader.manager.store if leader.manager is not None else None
    assert isinstance(store, EtcdLeaseStore) and store.wait_flushed(5.0)
    client = leader._client
    wanted = client.get_range_response(b"/", b"\0", count_only=True).header.revision
    for follower in followers:
        copy = follower.warm_copy
        assert copy is not None
        with copy.changed:
            assert copy.changed.wait_for(lambda: (copy.revision or 0) >= wanted, 10.0)  # noqa: B023


def term_source(replica: ReplicatedLandlord) -> str:
    manager = replica.manager
    assert manager is not None and isinstance(manager.store, EtcdLeaseStore)
    return manager.store.source


def test_a_follower_takes_over_from_its_copy_reading_nothing_with_every_lease_and_its_time_left(
        replicas: ReplicaGroup[ReplicatedLandlord]) -> None:
    leader = replicas.leader()
    assert term_source(leader) == "etcd" or term_source(leader) == "the warm copy"
    leases = [leader.new_lease(f"room {i}", 30.0) for i in range(20)]
    forever = leader.new_lease("forever", FOREVER)
    leases[0].renew(60.0)
    leases[1].cancel()
    wait_followers_caught_up(leader, replicas.followers(leader))
    loads = {id(f): f.warm_copy.loads for f in replicas.followers(leader) if f.warm_copy is not None}
    leader.close()
    successor = replicas.leader(excluding=leader)
    assert term_source(successor) == "the warm copy"
    assert successor.warm_copy is not None and successor.warm_copy.loads == loads[id(successor)]
    assert len(successor) == 20
    manager = successor.manager
    assert manager is not None
    now = successor.clock.monotonic()
    assert manager.get(leases[0].cookie).expiration - now == pytest.approx(60.0, abs=1.0)
    assert manager.get(leases[2].cookie).expiration - now == pytest.approx(30.0, abs=1.0)
    assert manager.get(forever.cookie).expiration == math.inf
    assert successor.get_resource(leases[3].cookie) == "room 3"
    for lease in leases[2:]:
        assert lease.renew(30.0) == pytest.approx(30.0)


def test_a_follower_whose_copy_cannot_be_had_reads_etcd(replicas: ReplicaGroup[ReplicatedLandlord]) -> None:
    leader = replicas.leader()
    lease = leader.new_lease("room", 30.0)
    wait_followers_caught_up(leader, replicas.followers(leader))
    for follower in replicas.followers(leader):
        copy = follower.warm_copy
        assert copy is not None
        copy.take(0)  # handed over: it has none to give now
    leader.close()
    successor = replicas.leader(excluding=leader)
    assert term_source(successor) == "etcd"
    assert lease.renew(30.0) == pytest.approx(30.0)
