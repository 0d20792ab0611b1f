"""Watches of a name's holders (landlord/grantor/watches.py, Landlord.watch_name): every change
pushed, coalesced, bounded, dropped when it cannot be told; in-process on a fake clock, and served."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import Pyro5.api
import pytest

from landlord import FakeClock, Landlord, LeaseDeniedError, LeaseDurationPolicy, LeaseStore, UnknownLeaseError
from landlord.grantor.hooks import LeaseHooks
from landlord.grantor.resource import LeasedResource
from landlord.grantor.watches import MAX_PER_NAME, MAX_WATCHES
from landlord.holder.claiminbox import ClaimInbox, Holders, NameListener
from landlord.testing import Recorder, ServingDaemon


class Listener(NameListener):
    """Records what each watch hears: (cookie, name, holders), and revocations."""

    def __init__(self) -> None:
        self.heard: Recorder[tuple[str, str, Holders]] = Recorder()
        self.revocations: Recorder[tuple[str, str]] = Recorder()

    def holders_changed(self, cookie: str, name: str, holders: Holders) -> None:
        self.heard.record((cookie, name, holders))

    def revoked(self, cookie: str, reason: str) -> None:
        self.revocations.record((cookie, reason))

    def last(self, cookie: str) -> Holders | None:
        told = [holders for heard, _, holders in self.heard.items if heard == cookie]
        return told[-1] if told else None

    def wait_for(self, cookie: str, holders: Holders) -> None:
        self.heard.wait_until(lambda items: any(c == cookie and h == holders for c, _, h in items),
                              what=f"{holders} told to {cookie[:6]}")


@pytest.fixture
def landlord(clock: FakeClock) -> Any:
    landlord = Landlord(clock=clock, policy=LeaseDurationPolicy(maximum=100), reaper="sleeper")
    yield landlord
    landlord.close()


def test_a_watch_hears_the_holders_at_once_and_after_each_change(landlord: Landlord, clock: FakeClock) -> None:
    listener = Listener()
    first, _ = landlord.acquire("db", 30, value="a")
    watch = landlord.watch_name("db", 50, listener)
    listener.wait_for(watch.cookie, [(1, "a")])
    second, none = landlord.acquire("db", 30, wait=60, value="b", listener=listener)
    assert none is None
    first.cancel()  # released: b holds at once
    listener.wait_for(watch.cookie, [(2, "b")])
    clock.advance(31)  # b's lease expires
    listener.wait_for(watch.cookie, [])
    third, token = landlord.acquire("db", 30, value="c")
    listener.wait_for(watch.cookie, [(token, "c")])
    landlord.revoke(third.cookie, "evicted")
    listener.wait_for(watch.cookie, [])
    assert [name for _, name, _ in listener.heard.items] == ["db"] * len(listener.heard)


def test_a_hand_over_is_one_change_and_a_semaphore_shows_every_holder(landlord: Landlord) -> None:
    listener = Listener()
    leader, one = landlord.acquire("leader", 30, value="a")
    landlord.acquire("leader", 30, wait=60, value="b", listener=listener)
    landlord.acquire("leader", 30, wait=60, value="c", listener=listener)
    watch = landlord.watch_name("leader", 50, listener)
    listener.wait_for(watch.cookie, [(one, "a")])
    landlord.hand_over(leader.cookie, "c")
    listener.wait_for(watch.cookie, [(one + 1, "c")])
    assert [holders for _, _, holders in listener.heard.items] == [[(one, "a")], [(one + 1, "c")]]

    pool = landlord.watch_name("pool", 50, listener)
    listener.wait_for(pool.cookie, [])
    _, t1 = landlord.acquire("pool", 30, limit=3, value="x")
    _, t2 = landlord.acquire("pool", 30, limit=3)
    listener.wait_for(pool.cookie, [(t1, "x"), (t2, None)])


def test_changes_while_a_notice_waits_are_merged_into_it(landlord: Landlord) -> None:
    class Slow(Listener):
        def __init__(self) -> None:
            super().__init__()
            self.go = threading.Event()

        def holders_changed(self, cookie: str, name: str, holders: Holders) -> None:
            assert self.go.wait(10)
            super().holders_changed(cookie, name, holders)

    slow = Slow()
    watch = landlord.watch_name("busy", 50, slow)
    tokens = []
    for _ in range(50):  # the first notice waits on the listener meanwhile
        lease, token = landlord.acquire("busy", 30)
        tokens.append(token)
        lease.cancel()
    last, token = landlord.acquire("busy", 30)
    slow.go.set()
    slow.wait_for(watch.cookie, [(token, None)])
    assert len(slow.heard) <= 3  # the first (whatever it said), maybe one between, and the last


def test_a_watch_ends_with_its_lease_and_is_told_no_more(clock: FakeClock) -> None:
    landlord = Landlord(clock=clock, reaper="lazy")  # expired leases are freed when the landlord is next used
    try:
        listener = Listener()
        cancelled = landlord.watch_name("a", 50, listener)
        expiring = landlord.watch_name("a", 10, listener)
        kept = landlord.watch_name("a", 50, listener)
        listener.wait_for(kept.cookie, [])
        cancelled.cancel()
        clock.advance(11)
        kept.renew(50)
        assert len(landlord._watches) == 1
        _, token = landlord.acquire("a", 30)
        listener.wait_for(kept.cookie, [(token, None)])
        assert listener.last(cancelled.cookie) == listener.last(expiring.cookie) == []
        with pytest.raises(UnknownLeaseError):
            expiring.renew(10)
        kept.cancel()
        assert len(landlord._watches) == 0 and not landlord._watches.watched("a")
    finally:
        landlord.close()


def test_watches_are_bounded_per_name_and_in_all(clock: FakeClock) -> None:
    landlord = Landlord(clock=clock, reaper="lazy")
    try:
        listener = NameListener()
        for _ in range(MAX_PER_NAME):
            landlord.watch_name("hot", 60, listener)
        with pytest.raises(LeaseDeniedError, match=f"too many watches of 'hot' \\({MAX_PER_NAME}\\)"):
            landlord.watch_name("hot", 60, listener)
        for i in range(MAX_WATCHES - MAX_PER_NAME):
            landlord.watch_name(f"name {i % 500}", 60, listener)
        with pytest.raises(LeaseDeniedError, match=f"too many watches \\({MAX_WATCHES}\\)"):
            landlord.watch_name("another", 60, listener)
        assert len(landlord._watches) == MAX_WATCHES
    finally:
        landlord.close()


def test_bad_arguments_lease_nothing(landlord: Landlord) -> None:
    before = len(landlord)
    for name, listener in [("", NameListener()), ("x" * 257, NameListener()), ("tab\t", NameListener()),
                           (42, NameListener()), ("a", None), ("a", "http://example.com"), ("a", 7),
                           ("a", "PYRO:obj@./u:/tmp/socket")]:
        with pytest.raises((TypeError, ValueError)):
            landlord.watch_name(name, 10, listener)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        landlord.watch_name("a", -5, NameListener())
    assert len(landlord) == before and len(landlord._watches) == 0


def test_a_watch_that_cannot_be_told_is_dropped_with_the_others_at_its_address(landlord: Landlord) -> None:
    class Broken(NameListener):
        def holders_changed(self, cookie: str, name: str, holders: Holders) -> None:
            raise ConnectionError("gone")

    broken, good = Broken(), Listener()
    doomed = [landlord.watch_name(name, 50, broken) for name in ("a", "b", "a")]
    kept = landlord.watch_name("a", 50, good)
    good.wait_for(kept.cookie, [])
    _, token = landlord.acquire("a", 30)
    good.wait_for(kept.cookie, [(token, None)])
    for lease in doomed:
        with pytest.raises(LeaseDeniedError, match="could not be told"):
            lease.renew(50)
    assert len(landlord._watches) == 1
    assert not good.revocations.items  # dropped watches are not told (they could not be)


def test_a_watch_revoked_by_the_landlord_is_told(landlord: Landlord) -> None:
    listener = Listener()
    watch = landlord.watch_name("a", 50, listener)
    landlord.revoke(watch.cookie, "an operator ended it")
    assert listener.revocations.wait_for(1) == [(watch.cookie, "an operator ended it")]


def test_a_watch_listener_that_hangs_never_delays_a_grant(landlord: Landlord) -> None:
    class Hung(NameListener):
        def __init__(self) -> None:
            self.release = threading.Event()

        def holders_changed(self, cookie: str, name: str, holders: Holders) -> None:
            self.release.wait(30)

    hung = Hung()
    try:
        landlord.watch_name("lock", 50, hung)
        held, _ = landlord.acquire("lock", 30)
        granted: Recorder[int] = Recorder()

        class Waiter(NameListener):
            def granted(self, cookie: str, token: int) -> None:
                granted.record(token)

        landlord.acquire("lock", 30, wait=60, listener=Waiter())
        held.cancel()
        assert len(granted.wait_for(1)) == 1  # while the watch's thread is stuck on the hung listener
    finally:
        hung.release.set()


def test_watches_are_not_stored(tmp_path: Path, clock: FakeClock) -> None:
    path = str(tmp_path / "leases.sqlite")
    landlord = Landlord(clock=clock, store=LeaseStore(path), reaper="lazy")
    watch = landlord.watch_name("a", 50, "PYRO:inbox@127.0.0.1:9")
    kept = landlord.new_lease("room", 50)
    landlord.close()
    again = Landlord(clock=clock, store=LeaseStore(path), reaper="lazy")
    try:
        assert again.renew(kept.cookie, 50) == 50
        with pytest.raises(UnknownLeaseError):
            again.renew(watch.cookie, 50)
    finally:
        again.close()


def test_served_a_watch_is_told_at_a_claim_inbox(daemon: ServingDaemon) -> None:
    landlord = Landlord(policy=LeaseDurationPolicy(maximum=100))
    inbox = ClaimInbox(host="127.0.0.1")
    try:
        heard: Recorder[Holders] = Recorder()
        with Pyro5.api.Proxy(daemon.register(landlord)) as proxy:
            watch = proxy.watch_name("db", 30, inbox.uri)
            inbox.watch(watch.cookie, lambda name, holders: heard.record(holders))
            assert heard.wait_for(1) == [[]]  # at once (perhaps before the inbox expected it)
            lease, token = proxy.acquire("db", 30, value="a")
            heard.wait_until(lambda items: items[-1] == [(token, "a")])
            lease.cancel()
            heard.wait_until(lambda items: items[-1] == [])
            with pytest.raises(ValueError, match="PYRO"):
                proxy.watch_name("db", 30, "http://127.0.0.1:9/")
            revoked: Recorder[str] = Recorder()
            other = proxy.watch_name("db", 30, inbox.uri)
            inbox.watch(other.cookie, lambda name, holders: None, revoked)
            landlord.revoke(other.cookie, "enough")
            assert revoked.wait_for(1) == ["enough"]
            watch.cancel()
    finally:
        inbox.close()
        landlord.close()


class Revoked(LeaseHooks):
    def __init__(self) -> None:
        self.reasons: Recorder[str] = Recorder()

    def revoked(self, leased: LeasedResource, reason: str) -> None:
        self.reasons.record(reason)


def test_served_an_unreachable_listener_is_dropped(daemon: ServingDaemon) -> None:
    hooks = Revoked()
    landlord = Landlord(policy=LeaseDurationPolicy(maximum=100), hooks=hooks)
    try:
        with Pyro5.api.Proxy(daemon.register(landlord)) as proxy:
            gone = [proxy.watch_name(name, 30, "PYRO:inbox@127.0.0.1:9") for name in ("a", "b", "c")]
            hooks.reasons.wait_for(3, timeout=30)
            assert len(landlord._watches) == 0
            for lease in gone:
                with pytest.raises(LeaseDeniedError, match="could not be told"):
                    lease.renew(30)
    finally:
        landlord.close()


def test_a_lazy_reaper_ending_watches_inside_a_new_one_is_no_deadlock(clock: FakeClock) -> None:
    landlord = Landlord(clock=clock, reaper="lazy")  # it frees expired leases inside the next call
    try:
        listener = Listener()
        old = [landlord.watch_name("a", 10, listener) for _ in range(3)]
        held, _ = landlord.acquire("a", 10)
        clock.advance(11)
        new = landlord.watch_name("a", 50, listener)  # ends the three and the holder in here
        listener.wait_for(new.cookie, [])
        assert len(landlord._watches) == 1 and landlord.name_holders("a") == []
        for lease in (*old, held):
            with pytest.raises(UnknownLeaseError):
                lease.renew(10)
    finally:
        landlord.close()


def test_one_remote_client_cannot_take_every_watch(daemon: ServingDaemon) -> None:
    landlord = Landlord(policy=LeaseDurationPolicy(maximum=100))
    landlord._watches.max_per_client = 20  # MAX_PER_CLIENT (1,000) in small
    inbox = ClaimInbox(host="127.0.0.1")
    try:
        with Pyro5.api.Proxy(daemon.register(landlord)) as stranger:
            watches = [stranger.watch_name(f"n{i}", 30, inbox.uri) for i in range(20)]
            with pytest.raises(LeaseDeniedError, match="the most one client may have"):
                stranger.watch_name("one more", 30, inbox.uri)
            assert landlord.watch_name("in-process", 30, Listener()) is not None  # the server's own: not counted
            watches[0].cancel()
            assert stranger.watch_name("one more", 30, inbox.uri) is not None  # an ended watch frees its count
    finally:
        inbox.close()
        landlord.close()
