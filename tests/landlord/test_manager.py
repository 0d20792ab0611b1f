"""LeaseManager bookkeeping and its rules, on a fake clock."""

from __future__ import annotations

import collections
import logging
import threading
from typing import Any

import pytest

from landlord import (
    FakeClock,
    LazyReaper,
    LeaseDeniedError,
    LeasedResource,
    LeaseDurationPolicy,
    LeaseManager,
    Reaper,
    UnknownLeaseError,
)
from landlord.grantor.manager import ENDED, STORED_EXTRA

REAPERS = ["sleeper", "polling", "lazy"]


class Freed:
    """Records on_expire calls; lets a test wait for them."""

    def __init__(self) -> None:
        self.calls: collections.Counter[Any] = collections.Counter()
        self._condition = threading.Condition()

    def __call__(self, resource: Any) -> None:
        with self._condition:
            self.calls[resource] += 1
            self._condition.notify_all()

    def wait_for(self, *resources: Any, timeout: float = 10) -> None:
        with self._condition:
            assert self._condition.wait_for(lambda: all(self.calls[r] for r in resources), timeout), \
                f"{resources} not freed; freed: {dict(self.calls)}"


class IdleReaper(Reaper):
    """A reaper that never frees anything: shows liveness does not depend on the reaper."""

    def start(self, manager: LeaseManager) -> None:
        pass


def bound(clock: FakeClock, policy: LeaseDurationPolicy | None = None) -> LeaseDurationPolicy:
    """A policy bound as a landlord would bind it (the manager never makes leases)."""
    policy = policy or LeaseDurationPolicy(maximum=1000, default=10)
    policy.bind(clock=clock, lease_factory=lambda resource, granted: None)  # type: ignore[arg-type,return-value]
    return policy


def make_manager(clock: FakeClock, reaper: Any = "lazy", freed: Freed | None = None,
                 policy: LeaseDurationPolicy | None = None) -> LeaseManager:
    return LeaseManager(bound(clock, policy), reaper=reaper, clock=clock, on_expire=freed)


def grant(manager: LeaseManager, cookie: str, duration: float, resource: Any = None) -> LeasedResource:
    leased = LeasedResource(cookie, 0.0, resource if resource is not None else cookie)
    manager.policy.lease_for(leased, duration)
    manager.register(leased)
    return leased


def test_register_get_renew_cancel(clock: FakeClock) -> None:
    freed = Freed()
    manager = make_manager(clock, freed=freed)
    grant(manager, "a", 10, resource="thing")
    assert len(manager) == 1 and "a" in manager
    assert manager.get_resource("a") == "thing"
    clock.advance(5)
    assert manager.renewed("a", 20) == 20
    assert manager.get("a").expiration == 25
    manager.cancel("a")
    assert freed.calls == {"thing": 1}
    assert len(manager) == 0
    with pytest.raises(UnknownLeaseError):
        manager.cancel("a")
    with pytest.raises(UnknownLeaseError):
        manager.get_resource("a")
    assert freed.calls == {"thing": 1}


def test_duplicate_cookie_is_refused(clock: FakeClock) -> None:
    manager = make_manager(clock)
    grant(manager, "a", 10)
    with pytest.raises(ValueError, match="already"):
        grant(manager, "a", 10)
    assert len(manager) == 1


def test_unknown_cookies(clock: FakeClock) -> None:
    manager = make_manager(clock)
    for op in (lambda: manager.renewed("nope", 1), lambda: manager.cancel("nope"), lambda: manager.get("nope")):
        with pytest.raises(UnknownLeaseError):
            op()


def test_cancel_all_reports_failures_by_cookie(clock: FakeClock) -> None:
    freed = Freed()
    manager = make_manager(clock, freed=freed)
    grant(manager, "a", 10)
    grant(manager, "b", 10)
    failures = manager.cancel_all(["a", "x", "b"])
    assert list(failures) == ["x"] and isinstance(failures["x"], UnknownLeaseError)
    assert freed.calls == {"a": 1, "b": 1}


def test_denied_renewal_changes_nothing(clock: FakeClock) -> None:
    class Stingy(LeaseDurationPolicy):
        def renew(self, resource: LeasedResource, requested: float) -> float:
            resource.expiration = -1.0  # a careless policy that fails half-way
            raise LeaseDeniedError("no more")

    manager = make_manager(clock, policy=Stingy(maximum=100))
    grant(manager, "a", 10)
    with pytest.raises(LeaseDeniedError):
        manager.renewed("a", 10)
    assert manager.get("a").expiration == 10
    clock.advance(9)
    assert manager.get_resource("a") == "a"  # still indexed at its old expiration


@pytest.mark.parametrize("reaper", [*REAPERS, IdleReaper()], ids=[*REAPERS, "idle"])
def test_an_expired_lease_is_never_renewable(clock: FakeClock, reaper: Any) -> None:
    freed = Freed()
    manager = make_manager(clock, reaper=reaper, freed=freed)
    grant(manager, "a", 10)
    grant(manager, "b", 100)
    clock.advance(10)  # exactly at expiration: expired
    with pytest.raises(UnknownLeaseError):
        manager.renewed("a", 10)
    with pytest.raises(UnknownLeaseError):
        manager.get_resource("a")
    with pytest.raises(UnknownLeaseError):
        manager.cancel("a")
    freed.wait_for("a")
    manager.close()
    assert freed.calls == {"a": 1}  # freed exactly once, whoever noticed first
    assert manager.get_resource("b") == "b"


@pytest.mark.parametrize("reaper", REAPERS)
def test_every_reaper_frees_in_expiration_order(clock: FakeClock, reaper: str) -> None:
    order: list[str] = []
    done = threading.Event()

    def on_expire(resource: str) -> None:
        order.append(resource)
        if len(order) == 3:
            done.set()

    policy = bound(clock, LeaseDurationPolicy(maximum=1000))
    manager = LeaseManager(policy, reaper=reaper, clock=clock, on_expire=on_expire)
    for cookie, duration in [("c", 30), ("a", 10), ("b", 20), ("z", 500)]:
        grant(manager, cookie, duration)
    clock.advance(30)
    if reaper == "lazy":
        assert order == []  # nothing freed until the manager is used
        assert len(manager) == 1
    assert done.wait(10)
    manager.close()
    assert order == ["a", "b", "c"]
    assert manager.get_resource("z") == "z"


def test_sleeper_is_woken_by_an_earlier_expiration(clock: FakeClock) -> None:
    freed = Freed()
    manager = make_manager(clock, reaper="sleeper", freed=freed)
    clock.wait_for_sleeper(float("inf"))  # nothing held: sleeps until told
    grant(manager, "late", 100)
    clock.wait_for_sleeper(100)
    grant(manager, "early", 10)
    clock.wait_for_sleeper(10)  # it re-planned for the earlier lease
    clock.advance(10)
    freed.wait_for("early")
    clock.wait_for_sleeper(100)
    assert freed.calls == {"early": 1}
    manager.close()


def test_sleeper_follows_renewals(clock: FakeClock) -> None:
    freed = Freed()
    manager = make_manager(clock, reaper="sleeper", freed=freed)
    grant(manager, "a", 10)
    clock.wait_for_sleeper(10)
    manager.renewed("a", 50)
    clock.advance(10)  # the old deadline: wakes, finds nothing due, sleeps again
    clock.wait_for_sleeper(50)
    assert freed.calls == {}
    clock.advance(40)
    freed.wait_for("a")
    manager.close()


def test_polling_frees_within_one_interval_and_not_before_the_poll(clock: FakeClock) -> None:
    freed = Freed()
    manager = make_manager(clock, reaper="polling", freed=freed)  # interval 1 s
    clock.wait_for_sleeper(1.0)
    grant(manager, "a", 0.5)
    clock.advance(0.6)  # expired, but the poll is at 1.0
    clock.wait_for_sleeper(1.0)
    assert freed.calls == {}
    clock.advance(0.4)
    freed.wait_for("a")
    manager.close()


def test_lazy_reaper_has_no_thread_and_frees_on_next_use(clock: FakeClock) -> None:
    freed = Freed()
    before = threading.active_count()
    manager = make_manager(clock, reaper="lazy", freed=freed)
    assert threading.active_count() == before
    grant(manager, "a", 5)
    grant(manager, "b", 50)
    clock.advance(6)
    assert freed.calls == {}
    assert len(manager) == 1  # the next use frees "a"
    assert freed.calls == {"a": 1}


def test_on_expire_runs_outside_the_lock(clock: FakeClock) -> None:
    seen: list[int] = []
    policy = bound(clock, LeaseDurationPolicy(maximum=100))
    manager: LeaseManager

    def on_expire(resource: str) -> None:
        # re-entering the manager would deadlock if the lock were held here
        seen.append(len(manager))
        if resource == "a":
            grant(manager, "again", 5)

    manager = LeaseManager(policy, reaper="lazy", clock=clock, on_expire=on_expire)
    grant(manager, "a", 1)
    manager.cancel("a")
    assert seen == [0] and "again" in manager


def test_a_failing_on_expire_is_logged_and_reaping_goes_on(clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    freed = Freed()

    def on_expire(resource: str) -> None:
        freed(resource)
        if resource == "bad":
            raise RuntimeError("boom")

    policy = bound(clock, LeaseDurationPolicy(maximum=100))
    manager = LeaseManager(policy, reaper="sleeper", clock=clock, on_expire=on_expire)
    with caplog.at_level(logging.ERROR, logger="landlord.manager"):
        grant(manager, "bad", 1)
        grant(manager, "good", 2)
        grant(manager, "later", 3)
        clock.advance(2)
        freed.wait_for("bad", "good")
        clock.advance(1)
        freed.wait_for("later")  # the reaper thread survived
    manager.close()
    assert "on_expire failed" in caplog.text and "boom" in caplog.text


def test_freed_exactly_once_when_cancels_race_the_reaper(clock: FakeClock) -> None:
    freed = Freed()
    manager = make_manager(clock, reaper="sleeper", freed=freed)
    cookies = [f"c{i}" for i in range(300)]
    for cookie in cookies:
        grant(manager, cookie, 1)
    start = threading.Barrier(5)

    def cancel_everything() -> None:
        start.wait()
        for cookie in cookies:
            try:
                manager.cancel(cookie)
            except UnknownLeaseError:
                pass

    threads = [threading.Thread(target=cancel_everything) for _ in range(4)]
    for thread in threads:
        thread.start()
    start.wait()
    clock.advance(1)  # the reaper joins the race
    for thread in threads:
        thread.join()
    freed.wait_for(*cookies)
    manager.close()
    assert set(freed.calls) == set(cookies) and set(freed.calls.values()) == {1}
    assert len(manager) == 0


def test_close_stops_the_reaper_thread(clock: FakeClock) -> None:
    for reaper in ("sleeper", "polling"):
        manager = make_manager(clock, reaper=reaper)
        clock.wait_for_sleeper()
        manager.close()
        assert not any(t.name.endswith("Reaper") and t.is_alive() for t in threading.enumerate()
                       if t is getattr(manager._reaper, "_thread", None))


def test_unknown_reaper_names_and_types(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="unknown reaper"):
        make_manager(clock, reaper="eager")
    with pytest.raises(TypeError):
        make_manager(clock, reaper=42)


@pytest.mark.slow
def test_a_million_leases(clock: FakeClock) -> None:
    freed = Freed()
    manager = make_manager(clock, reaper="lazy", freed=freed,
                           policy=LeaseDurationPolicy(maximum=10_000_000, default=10))
    count = 1_000_000
    for i in range(count):
        grant(manager, f"c{i}", 1 + (i * 7919) % count)
    assert len(manager) == count
    assert manager.renewed("c0", 5) == 5
    manager.cancel("c1")
    clock.advance(1000)
    # durations are a permutation of 1..count: 1,000 of them (c0 among them) end by t=1000
    assert len(manager) == count - 1 - 1000
    assert sum(freed.calls.values()) == 1000 + 1  # the expired and the cancelled c1
    assert freed.calls["c0"] == 1 and freed.calls["c1"] == 1


def test_on_cancel_tells_cancellation_from_expiry(clock: FakeClock) -> None:
    expired, cancelled = Freed(), Freed()
    policy = bound(clock, LeaseDurationPolicy(maximum=100))
    manager = LeaseManager(policy, reaper="lazy", clock=clock, on_expire=expired, on_cancel=cancelled)
    grant(manager, "kept", 10)
    grant(manager, "given back", 10)
    grant(manager, "too late", 5)
    manager.cancel("given back")
    clock.advance(5)
    with pytest.raises(UnknownLeaseError):
        manager.cancel("too late")  # expired before the cancel arrived: an expiry
    assert cancelled.calls == {"given back": 1} and expired.calls == {"too late": 1}


def test_lazy_reaper_frees_a_lease_that_arrives_earlier_than_all_others(clock: FakeClock) -> None:
    freed = Freed()
    manager = make_manager(clock, reaper="lazy", freed=freed)
    grant(manager, "late", 100)
    assert len(manager) == 1  # the reaper now knows nothing expires before t=100
    grant(manager, "early", 5)
    clock.advance(5)
    assert len(manager) == 1 and freed.calls == {"early": 1}
    clock.advance(95)
    assert len(manager) == 0 and freed.calls == {"early": 1, "late": 1}


@pytest.mark.parametrize("reaper", ["sleeper", "lazy"])
def test_a_lease_renewed_for_less_than_it_had_left_is_freed_at_its_new_end(clock: FakeClock, reaper: str) -> None:
    freed = Freed()
    manager = make_manager(clock, reaper=reaper, freed=freed)
    grant(manager, "a", 100)
    if reaper == "sleeper":
        clock.wait_for_sleeper(100)
    else:
        assert len(manager) == 1  # the reaper now knows nothing expires before t=100
    assert manager.renewed("a", 10) == 10  # asked for less than it had left: granted
    if reaper == "sleeper":
        clock.wait_for_sleeper(10)  # told of the earlier end
    clock.advance(10)
    if reaper == "lazy":
        assert len(manager) == 0
    freed.wait_for("a")
    manager.close()


class StubTable:
    """What a reaper serves (:class:`~landlord.grantor.reapers.Reaped`), whose table gains a lease just after
    the reaper has read it: ``arrive`` runs once, between the read and its answer."""

    def __init__(self, clock: FakeClock, earliest: float) -> None:
        self.clock = clock
        self.earliest = earliest
        self.reaps = 0
        self.arrive: Any = None

    def reap(self) -> int:
        self.reaps += 1
        return 0

    def next_expiration(self) -> float:
        earliest = self.earliest
        arrive, self.arrive = self.arrive, None
        if arrive is not None:
            arrive()
        return earliest


def test_lazy_reaper_is_not_misled_by_a_lease_filed_while_it_reads_the_table(clock: FakeClock) -> None:
    reaper = LazyReaper()
    table = StubTable(clock, earliest=100)
    reaper.start(table)

    def early_lease() -> None:
        table.earliest = 10
        reaper.expiration_added(10)

    table.arrive = early_lease
    reaper.on_use()  # reads 100, but a lease ending at 10 was filed meanwhile
    assert table.reaps == 1
    clock.advance(10)
    reaper.on_use()
    assert table.reaps == 2  # not put off until t=100


def test_a_mass_expiry_is_freed_chunk_by_chunk(clock: FakeClock) -> None:
    from landlord.grantor import manager as manager_module
    still_held: list[int] = []
    manager: LeaseManager

    def on_expire(resource: str) -> None:
        still_held.append(len(manager._by_cookie))

    manager = LeaseManager(bound(clock), reaper="lazy", clock=clock, on_expire=on_expire)
    chunk = manager_module.REAP_CHUNK
    count = chunk * 2 + 5
    for i in range(count):
        grant(manager, f"c{i}", 1)
    clock.advance(1)
    assert manager.reap() == count and len(manager) == 0
    # the first callbacks ran while the later chunks were still waiting: nobody waited for all of them
    assert still_held[0] == count - chunk and still_held[chunk] == count - 2 * chunk and still_held[-1] == 0


def test_renewed_all_across_chunks_each_lease_fails_alone(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    from landlord.grantor import manager as manager_module
    monkeypatch.setattr(manager_module, "REAP_CHUNK", 4)
    freed = Freed()
    manager = make_manager(clock, freed=freed)
    for i in range(10):
        grant(manager, f"c{i}", 5 if i == 3 else 50)
    clock.advance(5)  # c3 is dead, not yet freed
    cookies = [f"c{i}" for i in range(10)] + ["nobody"]
    outcomes = manager.renewed_all(cookies, [20.0] * 11)
    assert [type(o).__name__ for o in outcomes] == ["float"] * 3 + ["UnknownLeaseError"] + ["float"] * 6 + \
        ["UnknownLeaseError"]
    assert all(manager.get(c).expiration == 25 for c in cookies if c not in ("c3", "nobody"))
    assert freed.calls == {"c3": 1} and len(manager) == 9


class FailingDeletes:
    """A store whose writes succeed and whose deletes fail (etcd unreachable, a disk gone read-only)."""

    def __init__(self) -> None:
        self.deletes = 0

    def landlord_id(self) -> str | None:
        return None

    def put(self, cookie: str, expiration: float, resource: Any, now: float) -> None:
        pass

    def renew(self, expirations: Any, now: float) -> None:
        pass

    def delete(self, cookies: Any) -> None:
        self.deletes += 1
        raise OSError("the store is unreachable")

    def close(self) -> None:
        pass


def test_a_store_failing_to_record_expiries_neither_keeps_nor_leaks_the_leases(
        clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    freed = Freed()
    store = FailingDeletes()
    manager = LeaseManager(bound(clock), reaper="lazy", clock=clock, on_expire=freed, store=store)  # type: ignore[arg-type]
    grant(manager, "a", 10)
    grant(manager, "b", 10)
    clock.advance(11)
    with caplog.at_level(logging.ERROR, logger="landlord.manager"):
        assert manager.reap() == 2
    assert freed.calls == {"a": 1, "b": 1} and len(manager) == 0
    assert store.deletes == 1 and "freed again after a restart" in caplog.text
    grant(manager, "c", 10)  # and the manager goes on working
    assert manager.renewed("c", 10) == 10


class SlowWrites(FailingDeletes):
    """A store whose grants and ends wait until released (an etcd round trip during etcd's own election)."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = threading.Event()
        self.release = threading.Event()

    def put(self, cookie: str, expiration: float, resource: Any, now: float) -> None:
        self.writing.set()
        assert self.release.wait(10), "never released"

    def delete(self, cookies: Any) -> None:
        self.put("", 0.0, None, 0.0)


@pytest.mark.parametrize("slow", ["grant", "cancel"])
def test_no_renewal_waits_for_a_grant_or_cancel_being_written(clock: FakeClock, slow: str) -> None:
    store = SlowWrites()
    store.release.set()
    manager = LeaseManager(bound(clock), reaper="lazy", clock=clock, store=store)  # type: ignore[arg-type]
    grant(manager, "held", 10)
    grant(manager, "going", 10)
    store.release.clear()
    store.writing.clear()
    writer = threading.Thread(target=(lambda: grant(manager, "new", 10)) if slow == "grant"
                              else (lambda: manager.cancel("going")))
    writer.start()
    assert store.writing.wait(10)
    try:
        assert manager.renewed("held", 10) == 10  # answered while the write waits
        assert "new" not in manager  # a grant is held only once written
    finally:
        store.release.set()
        writer.join(10)
    assert ("new" in manager) == (slow == "grant") and ("going" in manager) == (slow == "grant")


# -- several resources under one lease ------------------------------------------------------------

@pytest.mark.parametrize("end", ["expire", "cancel"])
def test_attached_resources_are_freed_with_the_lease(clock: FakeClock, end: str) -> None:
    freed = Freed()
    manager = make_manager(clock, freed=freed)
    grant(manager, "a", 10, resource="own")
    manager.attach("a", "key 1")
    manager.attach("a", "key 2")
    assert manager.get("a").attached == ["key 1", "key 2"]
    assert freed.calls == {}
    if end == "cancel":
        manager.cancel("a")
    else:
        clock.advance(10)
        assert len(manager) == 0  # the lazy reaper frees on use
    assert freed.calls == {"own": 1, "key 1": 1, "key 2": 1}


def test_a_detached_resource_is_not_freed(clock: FakeClock) -> None:
    freed = Freed()
    manager = make_manager(clock, freed=freed)
    grant(manager, "a", 10, resource="own")
    manager.attach("a", "key 1")
    manager.attach("a", "key 2")
    manager.detach("a", "key 1")
    with pytest.raises(ValueError, match="not attached"):
        manager.detach("a", "key 1")
    with pytest.raises(ValueError, match="not attached"):
        manager.detach("a", "own")  # the lease's own resource is not an attachment
    manager.cancel("a")
    assert freed.calls == {"own": 1, "key 2": 1}


def test_attaching_to_an_unknown_or_expired_lease_changes_nothing(clock: FakeClock) -> None:
    freed = Freed()
    manager = make_manager(clock, freed=freed)
    grant(manager, "a", 10, resource="own")
    with pytest.raises(UnknownLeaseError):
        manager.attach("nope", "key")
    clock.advance(10)
    with pytest.raises(UnknownLeaseError):
        manager.attach("a", "key")
    with pytest.raises(UnknownLeaseError):
        manager.detach("a", "key")
    assert len(manager) == 0
    assert freed.calls == {"own": 1}  # never "key": it was never attached


# -- grace ------------------------------------------------------------------------------------------

def test_a_lease_in_grace_is_not_live_but_a_renewal_revives_it(clock: FakeClock) -> None:
    freed = Freed()
    manager = make_manager(clock, freed=freed, policy=LeaseDurationPolicy(maximum=100, grace=5))
    grant(manager, "a", 10)
    clock.advance(12)  # term over, grace not
    with pytest.raises(UnknownLeaseError):
        manager.get("a")  # not handed out
    assert "a" in manager and freed.calls == {}  # but held
    assert manager.renewed("a", 10) == 10
    assert manager.get("a").expiration == 22  # the same cookie, a new term from now
    clock.advance(14.9)  # past the new term, within its grace
    assert freed.calls == {} and len(manager) == 1
    clock.advance(0.1)
    assert len(manager) == 0 and freed.calls == {"a": 1}
    with pytest.raises(UnknownLeaseError):
        manager.renewed("a", 10)


@pytest.mark.parametrize("reaper", REAPERS)
def test_every_reaper_waits_for_the_grace_before_freeing(clock: FakeClock, reaper: str) -> None:
    freed = Freed()
    manager = make_manager(clock, reaper=reaper, freed=freed, policy=LeaseDurationPolicy(maximum=100, grace=3))
    grant(manager, "a", 10)
    assert manager.next_expiration() == 13
    clock.advance(12.5)
    assert len(manager) == 1 and freed.calls == {}
    clock.advance(0.5)
    if reaper == "lazy":
        assert len(manager) == 0
    freed.wait_for("a")
    manager.close()
    assert freed.calls == {"a": 1}


def test_a_cancel_in_grace_frees_at_once_and_one_after_grace_is_unknown(clock: FakeClock) -> None:
    freed = Freed()
    cancelled: list[Any] = []
    manager = LeaseManager(bound(clock, LeaseDurationPolicy(maximum=100, grace=5)), reaper="lazy", clock=clock,
                           on_expire=freed, on_cancel=cancelled.append)
    grant(manager, "a", 10)
    grant(manager, "b", 10)
    clock.advance(11)
    manager.cancel("a")  # the holder is done with it: no need to wait out the grace
    assert cancelled == ["a"] and "a" not in manager
    clock.advance(4)
    with pytest.raises(UnknownLeaseError):
        manager.cancel("b")
    assert freed.calls == {"b": 1} and cancelled == ["a"]


def test_held_lists_leases_earliest_first_with_what_is_attached(clock: FakeClock) -> None:
    manager = make_manager(clock)
    grant(manager, "late", 30, resource="r-late")
    grant(manager, "soon", 10, resource="r-soon")
    manager.attach("late", "extra")
    clock.advance(4)
    assert [tuple(held) for held in manager.held()] == [("soon", 6.0, "r-soon", []),
                                                        ("late", 26.0, "r-late", ["extra"])]
    assert [held.cookie for held in manager.held(limit=1)] == ["soon"]


# -- ending with a store: free first, forget after -------------------------------------------------

class JournalledStore(FailingDeletes):
    """A store that succeeds and notes each write in ``steps``, the log the callbacks write to as well."""

    def __init__(self, steps: list[str], *, failing_puts: bool = False) -> None:
        super().__init__()
        self.steps = steps
        self.failing_puts = failing_puts

    def put(self, cookie: str, expiration: float, resource: Any, now: float) -> None:
        if self.failing_puts:
            raise OSError("the store is unreachable")
        ended = resource.get(STORED_EXTRA, {}).get("ended_by") if isinstance(resource, dict) else None
        self.steps.append(f"put {cookie}" + (f" ended by {ended}" if ended else ""))

    def delete(self, cookies: Any) -> None:
        self.steps.append(f"delete {' '.join(cookies)}")


def end_lease(manager: LeaseManager, clock: FakeClock, cookie: str, how: str) -> None:
    """End the lease ``cookie`` (granted for 10 s) ``how``; it was the only one due."""
    if how == "cancel":
        manager.cancel(cookie)
    elif how == "revoke":
        manager.revoke(cookie, "evicted")
    else:
        clock.advance(10)
        if how == "reap":
            assert manager.reap() == 1
        elif how == "renewal":
            with pytest.raises(UnknownLeaseError):
                manager.renewed(cookie, 10)
        elif how == "get":
            with pytest.raises(UnknownLeaseError):
                manager.get(cookie)
        else:  # a cancel of a lease already expired: an expiry
            with pytest.raises(UnknownLeaseError):
                manager.cancel(cookie)


@pytest.mark.parametrize(("how", "ended_by"), [
    ("reap", None), ("renewal", None), ("get", None), ("cancel of the dead", None),
    ("cancel", "on_cancel"), ("revoke", "on_expire")])
def test_a_store_forgets_a_lease_only_after_its_resources_are_freed(
        clock: FakeClock, how: str, ended_by: str | None) -> None:
    steps: list[str] = []
    manager = LeaseManager(bound(clock), reaper=IdleReaper(), clock=clock, store=JournalledStore(steps),  # type: ignore[arg-type]
                           on_expire=lambda room: steps.append(f"expired {room}"),
                           on_cancel=lambda room: steps.append(f"cancelled {room}"))
    grant(manager, "a", 10, resource="room")
    grant(manager, "b", 20, resource="other")
    del steps[:]
    end_lease(manager, clock, "a", how)
    freed = "cancelled room" if how == "cancel" else "expired room"
    # a lease ended live is marked ended first: else its row would bring it back live after a crash
    assert steps == ([f"put a ended by {ended_by}"] if ended_by else []) + [freed, "delete a"]


@pytest.mark.parametrize("how", ["cancel", "revoke"])
def test_a_live_lease_whose_end_cannot_be_written_stays_held_and_unfreed(clock: FakeClock, how: str) -> None:
    steps: list[str] = []
    store = JournalledStore(steps)
    manager = LeaseManager(bound(clock), reaper="lazy", clock=clock, store=store,  # type: ignore[arg-type]
                           on_expire=lambda room: steps.append(f"freed {room}"))
    grant(manager, "a", 10, resource="room")
    store.failing_puts = True
    with pytest.raises(OSError, match="unreachable"):
        end_lease(manager, clock, "a", how)
    store.failing_puts = False
    assert manager.get_resource("a") == "room" and manager.renewed("a", 10) == 10  # not "revoked" either
    assert steps == ["put a"]  # the grant only: nothing freed, nothing deleted
    clock.advance(10)
    assert len(manager) == 0 and steps[1:] == ["freed room", "delete a"]  # and it still ends as any other


def test_a_callback_with_a_cookie_parameter_gets_the_cookie(clock: FakeClock) -> None:
    calls: list[tuple[str, Any, str]] = []

    def expired(resource: Any, cookie: str) -> None:
        calls.append(("expired", resource, cookie))

    def cancelled(resource: Any, *, cookie: str) -> None:
        calls.append(("cancelled", resource, cookie))

    manager = LeaseManager(bound(clock), reaper="lazy", clock=clock, on_expire=expired, on_cancel=cancelled)
    grant(manager, "c1", 10, resource="own")
    manager.attach("c1", "key")
    grant(manager, "c2", 20, resource="other")
    manager.cancel("c1")
    clock.advance(20)
    assert len(manager) == 0
    assert calls == [("cancelled", "own", "c1"), ("cancelled", "key", "c1"), ("expired", "other", "c2")]


def test_a_callback_without_a_cookie_parameter_gets_the_resource_alone(clock: FakeClock) -> None:
    calls: list[tuple[Any, ...]] = []

    def anything(*args: Any, **kwargs: Any) -> None:  # takes a cookie, but not by that name: the old form
        calls.append((*args, *kwargs))

    manager = LeaseManager(bound(clock), reaper="lazy", clock=clock, on_expire=anything, on_cancel=calls.append)
    grant(manager, "c1", 10, resource="one")
    grant(manager, "c2", 10, resource="two")
    manager.cancel("c1")
    clock.advance(10)
    assert len(manager) == 0 and calls == ["one", ("two",)]  # type: ignore[comparison-overlap]


def test_restore_refuses_a_cancelled_cookie_it_is_not_given_as_ended(clock: FakeClock) -> None:
    manager = make_manager(clock)
    live = LeasedResource("live", clock.monotonic() + 10, "room")
    with pytest.raises(ValueError, match="cancelled"):
        manager.restore([live], cancelled=["live"])
    with pytest.raises(ValueError, match="cancelled"):
        manager.restore([live], cancelled=["nobody"])
    assert len(manager) == 0


def test_leases_restored_as_ended_are_never_live_and_freed_by_the_callback_they_ended_by(clock: FakeClock) -> None:
    calls: list[str] = []
    manager = LeaseManager(bound(clock, LeaseDurationPolicy(maximum=1000, default=10, grace=5)),
                           reaper=IdleReaper(), clock=clock,
                           on_expire=lambda room: calls.append(f"expired {room}"),
                           on_cancel=lambda room: calls.append(f"cancelled {room}"))
    manager.restore([LeasedResource("c", ENDED, "cancelled one"), LeasedResource("r", ENDED, "revoked one"),
                     LeasedResource("live", clock.monotonic() + 10, "live one")], cancelled=["c"])
    assert manager.next_expiration() < clock.monotonic()  # due now, grace and all
    for cookie in ("c", "r"):
        with pytest.raises(UnknownLeaseError):
            manager.renewed(cookie, 10)  # never revived, not even by a grace
    assert sorted(calls) == ["cancelled cancelled one", "expired revoked one"]
    assert manager.get_resource("live") == "live one"
