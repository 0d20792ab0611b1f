"""LeaseStore, and a Landlord that keeps its leases in one: what comes back after a restart.

A restart is a new landlord on the same file with a new clock whose monotonic
time starts over (as a new process's does) and whose wall time has moved on
by the downtime. The crash itself, with real processes and kill -9, is in
tests/faults/test_durable.py.
"""

from __future__ import annotations

import logging
import math
import pathlib
import sqlite3
import threading
from collections.abc import Callable, Iterator
from typing import Any

import Pyro5.api
import pytest
from Pyro5.serializers import SerpentSerializer

from landlord import FOREVER, FakeClock, Landlord, LandlordLease, LeaseDurationPolicy, LeaseStore, UnknownLeaseError
from landlord.grantor.store import StoredLease, StoreInUseError


@pytest.fixture
def path(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "leases.sqlite"


def restarted_clock(before: FakeClock, downtime: float) -> FakeClock:
    """A new process's clock: monotonic time from 1,000 s (unrelated to the old one), wall time moved on."""
    return FakeClock(1000.0, wall_offset=before.time() + downtime - 1000.0)


class Freed:
    def __init__(self) -> None:
        self.resources: list[Any] = []

    def __call__(self, resource: Any) -> None:
        self.resources.append(resource)


@pytest.fixture
def landlords() -> Iterator[Callable[..., Landlord]]:
    """Makes landlords on a store, each one the restart of the one before: the one
    before is closed first, as a crashed process's store is (every change it made
    is already written; closing writes nothing more, it only lets the file go)."""
    made: list[Landlord] = []

    def make(path: pathlib.Path, clock: FakeClock, **kwargs: Any) -> Landlord:
        if made:
            made[-1].close()
        kwargs.setdefault("policy", LeaseDurationPolicy(maximum=FOREVER))
        landlord = Landlord(store=LeaseStore(path), clock=clock, reaper="lazy", **kwargs)
        made.append(landlord)
        return landlord

    yield make
    if made:
        made[-1].close()


def test_a_restarted_landlord_has_its_id_cookies_and_resources_back(path: pathlib.Path, landlords: Any) -> None:
    clock = FakeClock()
    first = landlords(path, clock)
    leases = [first.new_lease(f"room {n}", 60) for n in range(3)]
    first.close()

    again = landlords(path, restarted_clock(clock, downtime=10))
    assert again.landlord_id == first.landlord_id
    assert [again.get_resource(lease.cookie) for lease in leases] == ["room 0", "room 1", "room 2"]


def test_downtime_counts_against_the_lease_on_the_wall_clock(path: pathlib.Path, landlords: Any) -> None:
    clock = FakeClock()
    lease = landlords(path, clock).new_lease("room", 60)
    clock.advance(20)  # 40 s left when the landlord dies

    later = restarted_clock(clock, downtime=15)
    again = landlords(path, later)
    assert again.manager.get(lease.cookie).expiration == pytest.approx(later.monotonic() + 25)
    later.advance(24.9)
    assert again.get_resource(lease.cookie) == "room"
    later.advance(0.2)
    with pytest.raises(UnknownLeaseError):
        again.get_resource(lease.cookie)


def test_a_lease_that_ran_out_while_the_landlord_was_down_is_freed_once(path: pathlib.Path, landlords: Any) -> None:
    clock = FakeClock()
    first = landlords(path, clock)
    short, long = first.new_lease("short", 5), first.new_lease("long", 60)

    freed = Freed()
    again = landlords(path, restarted_clock(clock, downtime=30), on_expire=freed)
    assert again.manager.reap() == 1
    assert freed.resources == ["short"]
    assert again.get_resource(long.cookie) == "long"
    with pytest.raises(UnknownLeaseError):
        again.renew(short.cookie, 10)
    assert len(again.store) == 1  # the freed one is gone from the file too


@pytest.mark.parametrize("batch", [True, False], ids=["renew_all", "renew"])
def test_renewals_cancels_and_expiries_are_written(path: pathlib.Path, landlords: Any, batch: bool) -> None:
    clock = FakeClock()
    first = landlords(path, clock)
    renewed, cancelled, expiring = (first.new_lease(name, 10) for name in ("renewed", "cancelled", "expiring"))
    clock.advance(5)
    if batch:
        first.renew_all([renewed.cookie], [100.0])
    else:  # one lease takes a way of its own (LeaseManager.renewed)
        first.renew(renewed.cookie, 100.0)
    first.cancel(cancelled.cookie)
    clock.advance(6)
    assert first.manager.reap() == 1  # "expiring"
    assert len(first.store) == 1

    again = landlords(path, restarted_clock(clock, downtime=0))
    assert again.get_resource(renewed.cookie) == "renewed"
    assert again.manager.get(renewed.cookie).expiration == pytest.approx(again.clock.monotonic() + 94)
    for gone in (cancelled, expiring):
        with pytest.raises(UnknownLeaseError):
            again.get_resource(gone.cookie)


def test_a_wall_clock_set_back_while_down_gives_no_lease_more_time(path: pathlib.Path, landlords: Any) -> None:
    clock = FakeClock()
    lease = landlords(path, clock).new_lease("room", 60)
    clock.advance(10)

    again = landlords(path, restarted_clock(clock, downtime=-3600))  # the wall clock went back an hour
    assert again.manager.get(lease.cookie).expiration <= again.clock.monotonic() + 60


def test_forever_leases_come_back_forever(path: pathlib.Path, landlords: Any) -> None:
    clock = FakeClock()
    lease = landlords(path, clock).new_lease("room", FOREVER)
    again = landlords(path, restarted_clock(clock, downtime=10 ** 9))
    assert again.manager.get(lease.cookie).expiration == math.inf


def test_changed_resources_are_written_again(path: pathlib.Path, landlords: Any) -> None:
    clock = FakeClock()
    first = landlords(path, clock)
    lease = first.new_lease({"guests": 1}, 60)
    first.get_resource(lease.cookie)["guests"] = 2
    first.manager.resource_changed(lease.cookie)

    again = landlords(path, restarted_clock(clock, downtime=1))
    assert again.get_resource(lease.cookie) == {"guests": 2}


def test_a_resource_dumped_as_none_stays_in_memory_only(path: pathlib.Path, landlords: Any) -> None:
    class Picky(Landlord):
        def dump_resource(self, resource: Any) -> Any:
            return None if resource.startswith("secret") else resource

    clock = FakeClock()
    first = Picky(store=LeaseStore(path), clock=clock, reaper="lazy")
    kept, secret = first.new_lease("kept", 60), first.new_lease("secret", 60)
    first.renew(secret.cookie, 30)  # an update of a row that is not there changes nothing
    first.close()

    again = landlords(path, restarted_clock(clock, downtime=1))
    assert again.get_resource(kept.cookie) == "kept"
    with pytest.raises(UnknownLeaseError):
        again.get_resource(secret.cookie)


def test_load_resource_of_a_subclass_reads_what_dump_resource_wrote(path: pathlib.Path) -> None:
    class Boxed(Landlord):  # the default codec uses these overrides, as before there were codecs
        def dump_resource(self, resource: Any) -> Any:
            return {"boxed": resource}

        def load_resource(self, data: Any) -> Any:
            return data["boxed"]

    clock = FakeClock()
    first = Boxed(store=LeaseStore(path), clock=clock, reaper="lazy")
    lease = first.new_lease("room 7", 60)
    first.close()
    store = LeaseStore(path)
    assert [row.resource for row in store.leases(clock.time())] == [{"boxed": "room 7"}]
    store.close()
    again = Boxed(store=LeaseStore(path), clock=restarted_clock(clock, downtime=1), reaper="lazy")
    try:
        assert again.get_resource(lease.cookie) == "room 7"
    finally:
        again.close()


class Rooms:
    """A codec that files restored rooms by number, as a landlord's own index would."""

    def __init__(self) -> None:
        self.by_number: dict[int, Any] = {}
        self.calls: list[str] = []

    def dump(self, resource: Any) -> Any:
        self.calls.append("dump")
        return None if resource.get("private") else {"number": resource["number"]}

    def load(self, data: Any) -> Any:
        self.calls.append("load")
        if data["number"] < 0:
            raise ValueError("not a room")
        return {"number": data["number"]}

    def restored(self, leased: Any) -> None:
        self.calls.append("restored")
        assert leased.cookie and leased.expiration > 0  # a whole lease: cookie, expiration, resource
        self.by_number[leased.resource["number"]] = leased.resource


def test_a_codec_dumps_loads_and_files_what_comes_back(path: pathlib.Path) -> None:
    clock = FakeClock()
    first = Landlord(store=LeaseStore(path), clock=clock, reaper="lazy", codec=Rooms())
    assert isinstance(first.codec, Rooms)
    kept = first.new_lease({"number": 7}, 60)
    first.new_lease({"number": 8, "private": True}, 60)  # dumped as None: memory only
    first.store.put("f" * 22, clock.time() + 60, {"number": -1}, clock.time())  # type: ignore[union-attr]
    first.close()

    codec = Rooms()
    again = Landlord(store=LeaseStore(path), clock=restarted_clock(clock, downtime=1), reaper="lazy", codec=codec)
    try:
        assert codec.calls == ["load", "load", "restored"]  # every load before any restored
        assert codec.by_number == {7: {"number": 7}} and again.get_resource(kept.cookie) is codec.by_number[7]
        assert len(again) == 1 and len(again.store) == 1  # type: ignore[arg-type]  # the row it refused is gone
    finally:
        again.close()


def test_a_landlord_without_a_store_never_uses_its_codec() -> None:
    codec = Rooms()
    landlord = Landlord(reaper="lazy", codec=codec)
    try:
        landlord.new_lease({"number": 1}, 10)
        assert codec.calls == []
    finally:
        landlord.close()


def test_a_store_belongs_to_one_landlord_id(path: pathlib.Path, landlords: Any) -> None:
    landlords(path, FakeClock(), landlord_id="one")
    again = landlords(path, FakeClock(), landlord_id="one")
    again.close()
    store = LeaseStore(path)
    try:
        with pytest.raises(ValueError, match="belongs to landlord one"):
            Landlord(store=store, landlord_id="two")
        assert store.landlord_id() == "one"
    finally:
        store.close()


def test_one_store_at_a_time_has_a_file_and_name_open(path: pathlib.Path) -> None:
    first = LeaseStore(path, name="rooms")
    try:
        with pytest.raises(StoreInUseError):
            LeaseStore(path, name="rooms")  # two landlords writing the same leases would undo each other
        LeaseStore(path, name="cars").close()  # another name in the same file is another landlord's
    finally:
        first.close()
    LeaseStore(path, name="rooms").close()  # let go when closed (and when its process dies: test_durable)


def test_landlords_share_a_file_under_different_names(path: pathlib.Path) -> None:
    clock = FakeClock()
    rooms = Landlord(store=LeaseStore(path, name="rooms"), clock=clock, reaper="lazy")
    cars = Landlord(store=LeaseStore(path, name="cars"), clock=clock, reaper="lazy")
    room, car = rooms.new_lease("room", 60), cars.new_lease("car", 60)
    rooms.close()
    cars.close()

    rooms = Landlord(store=LeaseStore(path, name="rooms"), clock=clock, reaper="lazy")
    try:
        assert rooms.get_resource(room.cookie) == "room"
        with pytest.raises(UnknownLeaseError):
            rooms.get_resource(car.cookie)
    finally:
        rooms.close()


def test_a_damaged_row_is_dropped_and_the_others_come_back(path: pathlib.Path, landlords: Any,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    first = landlords(path, clock)
    good, bad = first.new_lease("good", 60), first.new_lease("bad", 60)
    first.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE leases SET resource = ? WHERE cookie = ?", (b"\x00not serpent(", bad.cookie))

    with caplog.at_level(logging.ERROR, logger="landlord.store"):
        again = landlords(path, restarted_clock(clock, downtime=1))
    assert "cannot read the resource" in caplog.text
    assert again.get_resource(good.cookie) == "good"
    assert bad.cookie not in again.manager
    assert len(again.store) == 1


def test_bad_store_arguments_are_refused(path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="synchronous"):
        LeaseStore(path, synchronous="OFF")
    for bad_name in ("", "a/b", "x" * 65, "rooms lock"):
        with pytest.raises(ValueError, match="name"):
            LeaseStore(path, name=bad_name)
    with pytest.raises(TypeError, match="path"):
        LeaseStore(42)  # type: ignore[arg-type]
    with pytest.raises(sqlite3.Error):
        LeaseStore(path.parent / "no such folder" / "leases.sqlite")


def test_the_store_keeps_settings_and_reports_remaining_time(path: pathlib.Path) -> None:
    store = LeaseStore(path, name="mine")
    try:
        store.set_setting("next", 7)
        store.put("c" * 22, 1_000_100.0, ["a", 1], now=1_000_000.0)
        assert store.get_setting("next") == 7
        assert store.get_setting("missing", "default") == "default"
        assert store.leases(now=1_000_040.0) == [StoredLease("c" * 22, 60.0, ["a", 1])]
    finally:
        store.close()


def test_a_holders_lease_works_against_the_restarted_landlord_over_the_wire(path: pathlib.Path) -> None:
    """The holder's LandlordLease outlives the landlord's daemon: same URI, id and cookie."""
    def serve(port: int) -> tuple[Landlord, Pyro5.api.Daemon, threading.Thread]:
        landlord = Landlord(store=LeaseStore(path), policy=LeaseDurationPolicy(maximum=600))
        daemon = Pyro5.api.Daemon(host="127.0.0.1", port=port)
        daemon.register(landlord, objectId="rooms")
        loop = threading.Thread(target=daemon.requestLoop, daemon=True)
        loop.start()
        return landlord, daemon, loop

    def stop(landlord: Landlord, daemon: Pyro5.api.Daemon, loop: threading.Thread) -> None:
        daemon.shutdown()
        loop.join(10)
        daemon.close()
        landlord.close()

    landlord, daemon, loop = serve(0)
    port = daemon.locationStr.rsplit(":", 1)[1]
    lease = landlord.new_lease("room", 600)
    received = _round_trip(lease)
    stop(landlord, daemon, loop)

    landlord, daemon, loop = serve(int(port))
    try:
        assert received.renew(300) == pytest.approx(300)
        assert landlord.manager.get(received.cookie).resource == "room"
        received.cancel()
        assert len(landlord.store) == 0
    finally:
        stop(landlord, daemon, loop)


def _round_trip(lease: LandlordLease) -> LandlordLease:
    """The lease as a holder in another process would get it (serialized and read back)."""
    serializer = SerpentSerializer()
    copy = serializer.loads(serializer.dumps(lease))
    assert isinstance(copy, LandlordLease) and copy == lease
    return copy


def test_attached_resources_and_a_lifetime_cap_survive_a_restart(path: pathlib.Path, landlords: Any) -> None:
    clock = FakeClock()
    freed = Freed()
    first = landlords(path, clock, policy=LeaseDurationPolicy(maximum=100, lifetime=50))
    lease = first.new_lease("lock", 40)
    first.attach(lease.cookie, "key a")
    first.attach(lease.cookie, "key b")
    first.detach(lease.cookie, "key a")
    plain = first.new_lease("plain", 40)
    clock.advance(10)

    later = restarted_clock(clock, downtime=5)  # 15 s into the lease's life
    again = landlords(path, later, policy=LeaseDurationPolicy(maximum=100, lifetime=50), on_expire=freed)
    assert again.attached(lease.cookie) == ["key b"]
    assert again.attached(plain.cookie) == []
    assert again.renew(lease.cookie, 100) == 35  # capped at its own grant + 50 s, not the restart's
    later.advance(35)
    assert len(again) == 0
    assert sorted(freed.resources) == ["key b", "lock", "plain"]


def test_a_malformed_envelope_drops_that_lease_only(path: pathlib.Path, landlords: Any,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    first = landlords(path, clock)
    kept = first.new_lease("kept", 60)
    first.close()
    store = LeaseStore(path)
    store.put("forged-cookie-0000000", clock.time() + 60, {"landlord.lease/1": {"resource": "x"}}, clock.time())
    store.close()
    again = landlords(path, clock)
    assert again.get_resource(kept.cookie) == "kept"
    assert len(again) == 1
    assert "cannot restore" in caplog.text


# -- a crash between freeing and forgetting: freed (again) after the restart -------------------------

class Crash(BaseException):
    """Stands for the process dying (``kill -9``): no handler catches it, nothing after it runs."""


class FreedWithCookies:
    """``on_expire``/``on_cancel`` taking the cookie: notes ``(kind, resource, cookie)``; dies at call ``crash_at``."""

    def __init__(self, kind: str, calls: list[tuple[str, Any, str]], *, crash_at: int = 0) -> None:
        self.kind, self.calls, self.crash_at, self.count = kind, calls, crash_at, 0

    def __call__(self, resource: Any, cookie: str) -> None:
        self.count += 1
        if self.count == self.crash_at:
            raise Crash  # before it could free anything
        self.calls.append((self.kind, resource, cookie))


def freeing(calls: list[tuple[str, Any, str]], *, crash_at: int = 0) -> dict[str, FreedWithCookies]:
    return {"on_expire": FreedWithCookies("expired", calls, crash_at=crash_at),
            "on_cancel": FreedWithCookies("cancelled", calls, crash_at=crash_at)}


def test_a_crash_while_expired_leases_are_freed_leaves_none_unfreed(path: pathlib.Path, landlords: Any) -> None:
    clock, before, after = FakeClock(), [], []
    first = landlords(path, clock, **freeing(before, crash_at=3))
    leases = [first.new_lease(f"room {n}", 10) for n in range(5)]
    clock.advance(11)
    with pytest.raises(Crash):
        first.manager.reap()  # the third callback dies: rooms 3 and 4 are not freed either
    assert [room for _, room, _ in before] == ["room 0", "room 1"]

    again = landlords(path, restarted_clock(clock, downtime=5), **freeing(after))
    assert len(again) == 0  # the lazy reaper frees what came back expired
    assert sorted(after) == sorted(("expired", f"room {n}", lease.cookie) for n, lease in enumerate(leases))
    assert len(again.store) == 0


@pytest.mark.parametrize(("end", "kind"), [("cancel", "cancelled"), ("revoke", "expired")])
def test_a_crash_while_a_live_lease_is_freed_frees_it_after_the_restart_and_never_revives_it(
        path: pathlib.Path, landlords: Any, end: str, kind: str) -> None:
    clock, after = FakeClock(), []
    first = landlords(path, clock, **freeing([], crash_at=1))
    ended, kept = first.new_lease("ended", FOREVER), first.new_lease("kept", FOREVER)
    with pytest.raises(Crash):
        first.cancel(ended.cookie) if end == "cancel" else first.revoke(ended.cookie, "evicted")

    again = landlords(path, restarted_clock(clock, downtime=5), **freeing(after))
    with pytest.raises(UnknownLeaseError):
        again.renew(ended.cookie, 60)  # ended: not back as the FOREVER lease it was
    assert after == [(kind, "ended", ended.cookie)]
    assert again.get_resource(kept.cookie) == "kept" and len(again) == 1 and len(again.store) == 1


@pytest.mark.parametrize("end", ["expiry", "cancel"])
def test_a_crash_after_the_callback_and_before_the_delete_calls_it_twice_with_one_cookie(
        path: pathlib.Path, landlords: Any, end: str) -> None:
    clock, calls = FakeClock(), []
    first = landlords(path, clock, **freeing(calls))
    lease = first.new_lease("room", 10)

    def crash(cookies: Any) -> None:
        raise Crash
    first.store.delete = crash
    with pytest.raises(Crash):
        if end == "cancel":
            first.cancel(lease.cookie)
        else:
            clock.advance(11)
            first.manager.reap()
    again = landlords(path, restarted_clock(clock, downtime=5), **freeing(calls))
    assert len(again) == 0
    kind = "cancelled" if end == "cancel" else "expired"
    assert calls == [(kind, "room", lease.cookie)] * 2  # at least once: the cookie tells the second call
    assert len(again.store) == 0


def test_an_unknown_end_mark_drops_that_lease_only(path: pathlib.Path, landlords: Any,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    first = landlords(path, clock)
    kept = first.new_lease("kept", 60)
    first.close()
    store = LeaseStore(path)
    envelope = {"resource": "x", "attached": [], "deadline": math.inf, "ended_by": "on_whim"}
    store.put("forged-cookie-0000000", clock.time() + 60, {"landlord.lease/1": envelope}, clock.time())
    store.close()
    again = landlords(path, clock)
    assert again.get_resource(kept.cookie) == "kept" and len(again) == 1
    assert "cannot restore" in caplog.text
