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
from landlord.clock import FakeClock
from landlord.grantor.landlord import Landlord
from landlord.grantor.leasetable import LeaseTable
from landlord.grantor.manager import ENDED, STORED_EXTRA, LeaseManager, Standby, unwrap_stored
from landlord.grantor.resource import LeasedResource
from landlord.grantor.store import StoredLease
from landlord.replication.election import Election, LeadershipLost
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

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.revision = 0  # the fold's own start: nothing applied
        self.kvs: dict[bytes, types.SimpleNamespace] = {}
        self.folded = FoldedLeases(ROOT, name="test", clock=clock)
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


def replay(keys: Any, step: tuple[Any, ...], granted: set[str], retired: set[str]) -> None:
    """A script's step other than a grant, written to ``keys`` as a leader would (``granted`` and
    ``retired`` kept up to date); a step about no lease granted does nothing."""
    kind = step[0]
    if kind == "renew":
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
        else:
            replay(keys, step, granted, retired)
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


# -- the standby table kept beside the fold, pure (a fake clock) ------------------------------------------


def enveloped(resource: Any, *, ended_by: str | None = None, attached: tuple[Any, ...] = (),
              deadline: float = math.inf) -> bytes:
    """A resource as the manager stores one with an envelope (attached resources, a cap, an end mark)."""
    envelope: dict[str, Any] = {"resource": resource, "attached": list(attached), "deadline": deadline}
    if ended_by is not None:
        envelope["ended_by"] = ended_by
    return SERPENT.dumps({STORED_EXTRA: envelope})


def restored_by_hand(warm: Any, clock: FakeClock) -> dict[str, tuple[float, Any, list[Any], float]]:
    """What Landlord._restore makes of a warm copy's leases, one by one: expiration, resource, attached, cap."""
    now, wall = clock.monotonic(), clock.time()
    made = {}
    for cookie, expiration, written, data in warm.leases:
        extra = unwrap_stored(data)
        remaining = math.inf if math.isinf(expiration) else min(expiration - wall, expiration - written)
        made[cookie] = (now + remaining if extra.ended_by is None else ENDED, extra.resource, extra.attached,
                        now + (extra.deadline - wall))
    return made


def in_table(standby: Standby) -> dict[str, tuple[float, Any, list[Any], float]]:
    return {cookie: (leased.expiration, leased.resource, leased.attached, leased.deadline)
            for cookie, leased in standby.table.by_cookie.items()}


@settings(deadline=None)
@given(steps, st.lists(st.sampled_from(["on_cancel", "on_expire", "attached"]), min_size=6, max_size=6))
def test_the_standby_table_holds_what_a_landlord_would_restore_from_the_copy(
        script: list[tuple[Any, ...]], kinds: list[str]) -> None:
    clock = FakeClock(100.0)
    keys = Keys(clock)
    granted: set[str] = set()
    retired: set[str] = set()
    for step in script:
        kind = step[0]
        if kind == "grant" and step[1] not in granted | retired:
            granted.add(step[1])
            keys.put(f"{ROOT}leases/{step[1]}", pack_record(WALL + step[2], WALL, SERPENT.dumps(f"room {step[1]}")))
        elif kind == "grant":  # written again: ended (by a cancel or by expiry), or with a resource attached
            how = kinds[COOKIES.index(step[1])]
            data = enveloped("room", attached=("extra",), deadline=WALL + 500) if how == "attached" \
                else enveloped("room", ended_by=how)
            keys.put(f"{ROOT}leases/{step[1]}", pack_record(WALL + step[2], WALL, data))
        else:
            replay(keys, step, granted, retired)
        warm = keys.folded.warm()
        assert warm.standby is not None and warm.known is not None
        assert in_table(warm.standby) == restored_by_hand(warm, clock)
        assert warm.known == {cookie: (expiration, written) for cookie, expiration, written, _ in warm.leases}
        cancelled = {cookie for cookie, *_, data in warm.leases if unwrap_stored(data).ended_by == "on_cancel"}
        assert warm.standby.cancelled == cancelled


def test_a_lease_the_standby_cannot_restore_leaves_the_landlord_to_restore_one_by_one(
        caplog: pytest.LogCaptureFixture) -> None:
    keys = Keys(FakeClock())
    keys.put(f"{ROOT}leases/good", pack_record(WALL + 10, WALL, SERPENT.dumps("good")))
    with caplog.at_level(logging.WARNING, logger="landlord.warmcopy"):
        keys.put(f"{ROOT}leases/forged", pack_record(WALL + 10, WALL, SERPENT.dumps({STORED_EXTRA: "forged"})))
    assert keys.folded.warm().standby is None
    assert "forged" in caplog.text
    keys.delete(f"{ROOT}leases/forged".encode())
    standby = keys.folded.warm().standby
    assert standby is not None and list(standby.table.by_cookie) == ["good"]


class ReadyStore:
    """A store that holds nothing but a standby table for the landlord it is given to."""

    def __init__(self, standby: Standby | None) -> None:
        self._standby, self.settings, self.restored_one_by_one = standby, {}, False

    def standby(self, now: float) -> Standby | None:
        standby, self._standby = self._standby, None
        return standby

    def landlord_id(self) -> str | None:
        return None

    def claim(self, landlord_id: str) -> None:
        pass

    def leases(self, now: float) -> list[StoredLease]:
        self.restored_one_by_one = True
        return []

    def put(self, cookie: str, expiration: float, resource: Any, now: float) -> None:
        pass

    def renew(self, expirations: Any, now: float) -> None:
        pass

    def delete(self, cookies: Any) -> None:
        pass

    def __len__(self) -> int:
        return 0

    def get_setting(self, key: str, default: Any = None) -> Any:
        return self.settings.get(key, default)

    def set_setting(self, key: str, value: Any) -> None:
        self.settings[key] = value

    def close(self) -> None:
        pass


def test_a_landlord_takes_a_standby_table_whole_and_frees_what_had_ended_by_its_own_callback() -> None:
    clock = FakeClock(100.0)
    keys = Keys(clock)
    wall = clock.time()
    keys.put(f"{ROOT}leases/live", pack_record(wall + 30, wall, SERPENT.dumps("room")))
    keys.put(f"{ROOT}leases/cancelled", pack_record(wall + 30, wall, enveloped("gone", ended_by="on_cancel")))
    keys.put(f"{ROOT}leases/expired", pack_record(wall + 30, wall, enveloped("late", ended_by="on_expire")))
    for value, _ in pack_renewals([("live", wall + 60, wall + 1)]):
        keys.chunk(value)
    store = ReadyStore(keys.folded.warm().standby)
    freed: list[tuple[str, Any]] = []
    landlord = Landlord(store=store, clock=clock, reaper="lazy", on_cancel=lambda r: freed.append(("cancel", r)),
                        on_expire=lambda r: freed.append(("expire", r)))
    try:
        assert not store.restored_one_by_one
        # never more than it had when written: 59 s (written a second after now, to end 60 s after)
        assert landlord.manager.get("live").expiration == pytest.approx(clock.monotonic() + 59)
        assert landlord.renew("live", 20.0) == pytest.approx(20.0)
        landlord.manager.reap()
        assert sorted(freed) == [("cancel", "gone"), ("expire", "late")]
        assert len(landlord) == 1
    finally:
        landlord.close()


def test_a_landlord_with_a_codec_of_its_own_restores_one_by_one_never_taking_the_table() -> None:
    class Codec:
        def dump(self, resource: Any) -> Any:
            return resource

        def load(self, data: Any) -> Any:
            return data

        def restored(self, leased: Any) -> None:
            pass
    keys = Keys(FakeClock())
    keys.put(f"{ROOT}leases/live", pack_record(WALL + 30, WALL, SERPENT.dumps("room")))
    store = ReadyStore(keys.folded.warm().standby)
    landlord = Landlord(store=store, clock=FakeClock(), reaper="lazy", codec=Codec())
    landlord.close()
    assert store.restored_one_by_one


def test_a_manager_adopts_a_standby_table_only_while_it_holds_nothing() -> None:
    table = LeaseTable()
    table.add(LeasedResource("a", 10.0, "a"))
    manager = LeaseManager(LeaseDurationPolicy(), clock=FakeClock(), reaper="lazy")
    try:
        with pytest.raises(ValueError, match="cancelled"):
            manager.adopt(Standby(table, frozenset({"a"}), []))
        manager.adopt(Standby(table, frozenset(), []))
        assert manager.get("a").resource == "a"
        with pytest.raises(ValueError, match="holds nothing"):
            manager.adopt(Standby(LeaseTable(), frozenset(), []))
    finally:
        manager.close()


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


class Noticing(threading.Condition):
    """A condition that tells when a thread first waits on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


def test_a_new_leader_waits_for_its_copy_s_read_in_progress_and_its_retries_rather_than_read_twice(
        group: Group, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyetcd
    now = float(int(time.time()))
    group.store.put("held", now + 60, "r", now)
    read = WarmCopy._read
    reading, go_on = threading.Event(), threading.Event()
    attempts: list[int] = []

    def slow_read(copy: WarmCopy) -> FoldedLeases:
        reading.set()
        assert go_on.wait(10.0)
        attempts.append(1)
        if len(attempts) == 1:
            raise pyetcd.exceptions.ConnectionTimeoutError("etcd connection timeout")  # tried again after a pause
        return read(copy)
    monkeypatch.setattr(WarmCopy, "_read", slow_read)
    copy = WarmCopy(group.follower, group.election.key, catch_up=0.2)  # less than the read takes
    copy.changed = Noticing()
    group.copies.append(copy.start())
    assert reading.wait(10.0)
    taken: list[Any] = []
    taker = threading.Thread(target=lambda: taken.append(copy.take(group.election.revision or 0)))
    taker.start()
    assert copy.changed.waiting.wait(10.0), "take() gave up on a copy still reading"
    go_on.set()
    taker.join(10.0)
    assert taken and taken[0] is not None and [cookie for cookie, *_ in taken[0].leases] == ["held"]
    assert len(attempts) == 2


def test_a_term_that_ends_waits_no_more_for_its_copy_s_read(group: Group, monkeypatch: pytest.MonkeyPatch) -> None:
    read = WarmCopy._read
    reading, go_on = threading.Event(), threading.Event()

    def slow_read(copy: WarmCopy) -> FoldedLeases:
        reading.set()
        assert go_on.wait(10.0)
        return read(copy)
    monkeypatch.setattr(WarmCopy, "_read", slow_read)
    copy = group.copy()
    assert reading.wait(10.0)
    taken: list[Any] = []

    def take() -> None:
        try:
            copy.take(group.election.revision or 0, lambda: False)
        except LeadershipLost as exc:
            taken.append(exc)
    taker = threading.Thread(target=take)
    taker.start()
    taker.join(10.0)
    go_on.set()
    assert len(taken) == 1, "a term that is over waited for the copy's read"
    group.wait_caught_up(copy)  # the copy read on, for the next term, and follows
    assert copy.loads == 1 and copy.take(group.election.revision or 0) is not None


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
    assert successor.manager is not None and getattr(successor.manager.store, "ready_taken", False)
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


def test_a_big_read_pauses_the_collector_and_freezes_what_it_built_a_small_one_only_pauses_it() -> None:
    import gc

    from landlord.replication import warmcopy
    assert gc.isenabled() and gc.get_freeze_count() == 0
    with warmcopy._collector_paused() as built:
        assert not gc.isenabled()  # no full collection over the objects a read builds, while it builds them
        kept = [[number] for number in range(1000)]
        built.append(warmcopy.FREEZE_OVER + 1)
    try:
        assert gc.isenabled() and gc.get_freeze_count() >= len(kept)
    finally:
        gc.unfreeze()
    with warmcopy._collector_paused() as built:
        built.append(10)
    assert gc.isenabled() and gc.get_freeze_count() == 0
