"""CachePeer: one lookup service's listing kept current by a snapshot and events in sequence."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import Pyro5.server
import pytest

from landlord import SYSTEM_CLOCK, Backoff, LeaseRenewalManager, PeerErrors
from lookup import EventRegistration, LookupService, Name, ServiceEvent, ServiceItem, ServiceMatches, ServiceTemplate
from lookup.client.cachepeer import CachePeer
from lookup.client.callbacks import EventReceiver
from lookup.client.view import MergedView

QUOTER = "examples.Quoter"
TEMPLATE = ServiceTemplate(types=[QUOTER])


def item(name: str) -> ServiceItem:
    return ServiceItem(None, f"PYRO:{name}@127.0.0.1:9", (QUOTER,), [Name(name)])


def name_of(event: ServiceEvent) -> str | None:
    return None if event.item is None else event.item.attributes[0].name


class Watched(LookupService):
    """A lookup service that counts subscriptions, and can register an item while a snapshot is on its way."""

    def __init__(self) -> None:
        super().__init__()
        self.subscriptions = 0
        self.during_snapshot: ServiceItem | None = None
        self.delivered = threading.Event()  # the follower has taken the event about during_snapshot

    @Pyro5.server.expose
    def notify(self, template: ServiceTemplate, transitions: int, listener: Any, handback: Any = None,
               duration: float = -1.0) -> EventRegistration:
        self.subscriptions += 1
        return super().notify(template, transitions, listener, handback, duration)

    @Pyro5.server.expose
    def lookup_all(self, template: ServiceTemplate, max_matches: int = 1000) -> ServiceMatches:
        snapshot = super().lookup_all(template, max_matches)
        during, self.during_snapshot = self.during_snapshot, None
        if during is not None:  # a change after the snapshot was taken: its event arrives before the snapshot
            self.register(during, 60)
            assert self.delivered.wait(10)
        return snapshot


class Following:
    """A follower of one lookup service, its view, and the events its sink received (through ``deliver``)."""

    def __init__(self, uri: str, deliver: Callable[[ServiceEvent], bool],
                 taken: Callable[[ServiceEvent], object] = lambda event: None) -> None:
        self.condition = threading.Condition()
        self.view = MergedView([uri], orphan_timeout=300, clock=SYSTEM_CLOCK)
        self.renewals = LeaseRenewalManager()
        self.receiver = EventReceiver(self._deliver)
        self.received: list[tuple[str | None, bool]] = []  # (name, applied at once)
        self._filter = deliver
        self._taken = taken
        self.follower = CachePeer(uri, template=TEMPLATE, view=self.view, condition=self.condition,
                                 sink_uri=self.receiver.sink_uri, tell=lambda: None,
                                 renewals=self.renewals, lease_duration=60, backoff=Backoff(0.05, 0.2),
                                 errors=PeerErrors(), clock=SYSTEM_CLOCK)

    def _deliver(self, event: ServiceEvent) -> None:
        if not self._filter(event):
            return  # lost on the way
        with self.condition:
            applied = self.follower.receive(event)
            self.received.append((name_of(event), applied))
            self.condition.notify_all()
        self._taken(event)

    def names(self) -> set[str]:
        return {i.attributes[0].name for i in self.view.items()}

    def wait(self, predicate: Callable[[], bool]) -> bool:
        with self.condition:
            return self.condition.wait_for(predicate, 10)

    def close(self) -> None:
        with self.condition:
            self.follower.stop()
            self.condition.notify_all()
        self.follower.join()
        self.follower.end(cancel=True)
        self.renewals.close()
        self.receiver.close()


@pytest.fixture
def watched(daemon: Any) -> Iterator[tuple[Watched, str]]:
    service = Watched()
    yield service, daemon.register(service)
    service.close()


def test_events_arriving_while_the_snapshot_is_on_its_way_are_replayed_over_it(
        watched: tuple[Watched, str]) -> None:
    service, uri = watched
    service.register(item("before"), 60)
    service.during_snapshot = item("during")

    def taken(event: ServiceEvent) -> None:
        if name_of(event) == "during":
            service.delivered.set()  # the follower has it: only now is the snapshot returned

    following = Following(uri, lambda event: True, taken)
    try:
        following.follower.start()
        assert following.wait(lambda: following.follower.subscribed)
        assert following.names() == {"before", "during"}  # the snapshot lacked it: replayed from the held event
        assert ("during", False) in following.received  # held back when it arrived, not applied
    finally:
        following.close()


def test_a_gap_in_the_sequence_numbers_means_subscribing_and_a_fresh_snapshot(
        watched: tuple[Watched, str]) -> None:
    service, uri = watched
    lost: list[str | None] = []

    def deliver(event: ServiceEvent) -> bool:
        if name_of(event) == "missed" and not lost:
            lost.append(name_of(event))
            return False
        return True

    following = Following(uri, deliver)
    try:
        following.follower.start()
        assert following.wait(lambda: following.follower.subscribed)
        service.register(item("missed"), 60)  # its event is lost on the way
        service.register(item("next"), 60)  # its event's sequence number skips one
        assert following.wait(lambda: following.names() == {"missed", "next"})  # in the fresh snapshot
        assert service.subscriptions == 2 and lost == ["missed"]
    finally:
        following.close()


def test_an_event_of_another_subscription_is_not_taken(watched: tuple[Watched, str]) -> None:
    _, uri = watched
    following = Following(uri, lambda event: True)
    try:
        stray = ServiceEvent(1, 1, "someone else's handback", "s1", 2, item("stray").replace(service_id="s1"))
        with following.condition:
            assert not following.follower.receive(stray)  # not subscribed yet: nothing is routed here
        following.follower.start()
        assert following.wait(lambda: following.follower.subscribed)
        with following.condition:
            assert not following.follower.receive(stray)
        assert following.names() == set()
    finally:
        following.close()
