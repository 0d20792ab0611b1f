"""HoldersWatch (landlord/recipe/watch.py): a name's holders pushed to a callback; a watch lost
(revoked, a renewal refused, the landlord restarted) is made again; close stops it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import Pyro5.server
import pytest

from landlord import FakeClock, Landlord, LeaseDeniedError, LeaseDurationPolicy, LeaseRenewalManager
from landlord.holder.claiminbox import ClaimInbox, Holders
from landlord.recipe.target import Target
from landlord.recipe.watch import HoldersWatch
from landlord.testing import Recorder, ServingDaemon
from landlord.transport.backoff import Backoff

TERM = 9.0


class Refusing(Landlord):
    """Refuses the watches it is told to (for the tries to watch again)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.refuse = 0
        self.asked: Recorder[str] = Recorder()

    @Pyro5.server.expose
    def watch_name(self, *args: Any, **kwargs: Any) -> Any:
        self.asked.record(args[0])
        if self.refuse:
            self.refuse -= 1
            raise LeaseDeniedError("not now")
        return super().watch_name(*args, **kwargs)


@pytest.fixture
def parts(clock: FakeClock) -> Iterator[tuple[Refusing, LeaseRenewalManager, ClaimInbox]]:
    grantor = Refusing(clock=clock, policy=LeaseDurationPolicy(maximum=100))
    renewals = LeaseRenewalManager(clock=clock)
    inbox = ClaimInbox(serve=False, clock=clock)
    yield grantor, renewals, inbox
    renewals.close()
    inbox.close()
    grantor.close()


def watching(parts: tuple[Refusing, LeaseRenewalManager, ClaimInbox], heard: Recorder[Holders],
             **options: Any) -> HoldersWatch:
    grantor, renewals, inbox = parts
    return HoldersWatch(Target(grantor), "db", heard, duration=TERM, renewals=renewals, inbox=inbox,
                        **options).start()


def test_holders_come_at_once_and_after_each_change_until_closed(parts: Any) -> None:
    grantor = parts[0]
    heard: Recorder[Holders] = Recorder()
    watch = watching(parts, heard)
    assert heard.wait_for(1) == [[]]
    lease, token = grantor.acquire("db", 30, value="a")
    heard.wait_until(lambda items: items[-1] == [(token, "a")])
    lease.cancel()
    heard.wait_until(lambda items: items[-1] == [])
    watch.close()
    assert watch.lease is None and len(grantor._watches) == 0
    told = len(heard)
    grantor.acquire("db", 30)
    grantor.watch_name("db", 30, parts[2])  # a notice through the same inbox: the closed watch hears nothing
    assert len(heard) == told


def test_a_watch_whose_renewal_is_refused_watches_again(parts: Any, clock: FakeClock) -> None:
    grantor = parts[0]
    heard: Recorder[Holders] = Recorder()
    watch = watching(parts, heard)
    heard.wait_for(1)
    first = watch.lease
    grantor.cancel(first.cookie)  # behind its back: the next renewal is refused as unknown
    _, token = grantor.acquire("db", 30, value="a")
    clock.advance(TERM / 2)  # the renewal is due
    heard.wait_until(lambda items: items[-1] == [(token, "a")])
    assert watch.lease is not None and watch.lease.cookie != first.cookie
    assert len(grantor._watches) == 1
    watch.close()


def test_watching_again_backs_off_while_refused_and_close_stops_it(parts: Any, clock: FakeClock) -> None:
    grantor = parts[0]
    heard: Recorder[Holders] = Recorder()
    watch = watching(parts, heard, backoff=Backoff(0.5, 4, jitter=0))
    heard.wait_for(1)
    grantor.refuse = 2
    grantor.revoke(watch.lease.cookie, "dropped")
    grantor.asked.wait_for(2)  # at once, refused
    clock.wait_for_sleeper(clock.monotonic() + 0.5)
    clock.advance(0.5)
    grantor.asked.wait_for(3)  # refused again: the pause doubles
    clock.wait_for_sleeper(clock.monotonic() + 1.0)
    _, token = grantor.acquire("db", 30)
    clock.advance(1.0)
    heard.wait_until(lambda items: items[-1] == [(token, None)])
    assert len(grantor.asked) == 4 and len(grantor._watches) == 1

    grantor.refuse = 100
    grantor.revoke(watch.lease.cookie, "dropped")
    grantor.asked.wait_for(5)
    clock.wait_for_sleeper(clock.monotonic() + 0.5)  # reset after the success: the first pause again
    watch.close()  # wakes it, and it stops
    assert watch.lease is None and len(grantor._watches) == 0


def test_a_refused_watch_raises(parts: Any) -> None:
    parts[0].refuse = 1
    with pytest.raises(LeaseDeniedError, match="not now"):
        watching(parts, Recorder())
    grantor, renewals, inbox = parts
    with pytest.raises(ValueError):
        HoldersWatch(Target(grantor), "", Recorder(), duration=TERM, renewals=renewals, inbox=inbox).start()


def test_served_a_landlord_that_restarted_is_watched_again(daemon: ServingDaemon) -> None:
    first = Landlord(policy=LeaseDurationPolicy(maximum=100))
    uri = daemon.register(first, "restarting")
    renewals, inbox = LeaseRenewalManager(), ClaimInbox(host="127.0.0.1")
    heard: Recorder[Holders] = Recorder()
    watch = HoldersWatch(Target(uri), "db", heard, duration=1.5, renewals=renewals, inbox=inbox).start()
    second = Landlord(policy=LeaseDurationPolicy(maximum=100))
    try:
        assert heard.wait_for(1) == [[]]
        daemon.daemon.unregister("restarting")
        first.close()
        assert daemon.register(second, "restarting") == uri  # knows nothing of the watch
        _, token = second.acquire("db", 30, value="b")
        heard.wait_until(lambda items: items[-1] == [(token, "b")], timeout=20)  # a renewal refused, watched again
        assert len(second._watches) == 1
    finally:
        watch.close()
        renewals.close()
        inbox.close()
        second.close()
    assert len(second._watches) == 0
