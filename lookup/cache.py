"""A client's local view of the services matching a template: :class:`LookupCache`.

The cache asks the lookup service for events about the template *before* it
takes a snapshot with ``lookup_all``, holds back the events that arrive while
the snapshot is on its way, and replays them over it. Events carry the whole
item as it now is, so replaying them in order always ends at the current
state. Afterwards every query is answered locally, without a round trip.
"""

from __future__ import annotations

import logging
import math
import threading
import uuid
from typing import Any, Callable

import Pyro5.api

from landlord import FOREVER, LeaseRenewalEvent, LeaseRenewalManager, check_duration, proxies
from landlord.clock import SYSTEM_CLOCK, Clock

from .events import ALL_TRANSITIONS, TRANSITION_MATCH_NOMATCH, ServiceEvent
from .item import ServiceItem, ServiceTemplate, uri_of

__all__ = ["LookupCache", "CacheListener"]

log = logging.getLogger(__name__)

MAX_SNAPSHOT = 100_000

CacheListener = Callable[[str, ServiceItem], object]
"""Called with ``"added"``, ``"changed"`` or ``"removed"`` and the item (for
``"removed"``, the item as it was last seen)."""


class _EventSink:
    """The Pyro5 object the lookup service sends this cache's events to."""

    def __init__(self, cache: LookupCache) -> None:
        self._cache = cache

    @Pyro5.api.expose
    def notify(self, event: ServiceEvent) -> None:
        self._cache._on_event(event)


class LookupCache:
    """Keeps the services matching ``template`` at one lookup service, current through events.

    Args:
        lookup: the lookup service's proxy or URI.
        template: which services to keep.
        daemon: a Pyro5 daemon, already serving, to receive events on
            (default: one of its own on 127.0.0.1, with its own thread).
        lease_duration: the event registration's lease, in seconds.
        renewal_manager: keeps that lease alive (default: one of its own).
        listener: told of every item added, changed or removed.
        retry_delay: seconds between attempts to (re)subscribe after a failure.
        clock: what retries are timed on.

    Raises:
        TypeError: ``lookup`` is not a proxy or URI, or ``template`` not a ServiceTemplate.
        ValueError: an invalid duration.
    """

    def __init__(self, lookup: Any, template: ServiceTemplate, *, daemon: Pyro5.api.Daemon | None = None,
                 lease_duration: float = 60.0, renewal_manager: LeaseRenewalManager | None = None,
                 listener: CacheListener | None = None, retry_delay: float = 1.0,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        if not isinstance(template, ServiceTemplate):
            raise TypeError(f"expected a ServiceTemplate, got {type(template).__name__}")
        self._lookup_uri = uri_of(lookup)
        self._template = template
        self._lease_duration = check_duration(lease_duration)
        self._retry_delay = check_duration(retry_delay, name="retry_delay", allow_any=False)
        self._listener = listener
        self._clock = clock
        self._condition = threading.Condition()
        self._items: dict[str, ServiceItem] = {}
        self._ready = False
        self._closed = False
        self._token = ""  # the handback of the current subscription
        self._last_sequence = 0
        self._held: list[ServiceEvent] | None = None  # events arriving while a snapshot is taken
        self._event_lease: Any = None
        self._needs_sync = True
        self._owns_renewals = renewal_manager is None
        self._renewals = renewal_manager if renewal_manager is not None else LeaseRenewalManager(clock=clock)
        self._owns_daemon = daemon is None
        self._daemon = daemon if daemon is not None else Pyro5.api.Daemon(host="127.0.0.1")
        self._sink = _EventSink(self)
        self._sink_uri = str(self._daemon.register(self._sink))
        if self._owns_daemon:
            threading.Thread(target=self._daemon.requestLoop, name="LookupCache-events", daemon=True).start()
        self._thread = threading.Thread(target=self._keep_subscribed, name="LookupCache", daemon=True)
        self._thread.start()

    # -- queries (local) ------------------------------------------------------------

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until the first snapshot is in; return whether it is."""
        with self._condition:
            return self._condition.wait_for(lambda: self._ready or self._closed, timeout) and self._ready

    def items(self, accept: Callable[[ServiceItem], bool] | None = None) -> list[ServiceItem]:
        """The items held (those ``accept`` accepts, if given)."""
        with self._condition:
            items = list(self._items.values())
        return [item for item in items if accept is None or accept(item)]

    def lookup(self, accept: Callable[[ServiceItem], bool] | None = None) -> Pyro5.api.Proxy | None:
        """A new proxy, owned by the calling thread, for the service of one item
        held (one ``accept`` accepts), or ``None``.

        A new proxy because a Pyro5 proxy belongs to the thread that made it,
        and the items' own were made on the threads that received them.
        """
        for item in self.items(accept):
            return Pyro5.api.Proxy(item.service_uri)
        return None

    def wait_until(self, condition: Callable[[list[ServiceItem]], bool], timeout: float | None = None) -> bool:
        """Block until ``condition(items)`` holds; return whether it did within ``timeout``."""
        with self._condition:
            return self._condition.wait_for(lambda: condition(list(self._items.values())), timeout)

    def __len__(self) -> int:
        with self._condition:
            return len(self._items)

    def close(self) -> None:
        """Stop: cancel the event registration and stop receiving events."""
        with self._condition:
            self._closed = True
            lease, self._event_lease = self._event_lease, None
            self._condition.notify_all()
        self._thread.join()
        if lease is not None:
            try:
                self._renewals.remove(lease)
            except Exception:
                pass  # already dropped
            try:
                lease.cancel()
            except Exception as exc:
                log.info("could not cancel the event registration: %s", exc)
        if self._owns_renewals:
            self._renewals.close()
        self._daemon.unregister(self._sink)
        if self._owns_daemon:
            self._daemon.shutdown()

    def __enter__(self) -> LookupCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- staying current ---------------------------------------------------------------

    def _keep_subscribed(self) -> None:
        while True:
            with self._condition:
                while not self._needs_sync and not self._closed:
                    self._clock.wait(self._condition, math.inf)
                if self._closed:
                    return
            try:
                self._subscribe()
            except Exception as exc:  # unreachable or refused: try again in a while
                log.info("could not subscribe to %s: %s", self._lookup_uri, exc)
                proxies.discard(self._lookup_uri)
                deadline = self._clock.monotonic() + self._retry_delay
                with self._condition:
                    while not self._closed and self._clock.monotonic() < deadline:
                        self._clock.wait(self._condition, deadline)

    def _subscribe(self) -> None:
        token = uuid.uuid4().hex
        with self._condition:
            self._token, self._last_sequence, self._held = token, 0, []
        lookup = proxies.proxy_for(self._lookup_uri)
        registration = lookup.notify(self._template, ALL_TRANSITIONS, self._sink_uri, token, self._lease_duration)
        snapshot = lookup.lookup_all(self._template, MAX_SNAPSHOT)
        changes: list[tuple[str, ServiceItem]] = []
        with self._condition:
            if self._closed:
                stale = registration.lease
            else:
                stale, self._event_lease = self._event_lease, registration.lease
                before = self._items
                self._items = {item.service_id: item for item in snapshot.items if item.service_id}
                changes = _differences(before, self._items)
                held, self._held = self._held or [], None
                for event in sorted(held, key=lambda e: e.sequence_number):
                    changes.extend(self._apply(event))
                self._needs_sync = False
                self._ready = True
                self._condition.notify_all()
        if stale is not None:
            try:
                stale.cancel()
            except Exception:
                pass
        if not self._closed:
            # renew_duration: each renewal asks for the term given, not the lookup service's maximum
            self._renewals.renew_for(registration.lease, FOREVER, self._subscription_lost,
                                     renew_duration=self._lease_duration)
        self._tell(changes)

    def _subscription_lost(self, event: LeaseRenewalEvent) -> None:
        log.info("lost the event registration at %s (%s); subscribing again", self._lookup_uri, event.exception)
        with self._condition:
            if event.lease is self._event_lease:
                self._event_lease = None
                self._needs_sync = True
                self._condition.notify_all()

    def _on_event(self, event: ServiceEvent) -> None:
        with self._condition:
            if event.handback != self._token:
                return  # an earlier subscription's, or someone else's
            if self._held is not None:
                self._held.append(event)
                return
            changes = self._apply(event)
            self._condition.notify_all()
        self._tell(changes)

    def _apply(self, event: ServiceEvent) -> list[tuple[str, ServiceItem]]:
        """Apply one event in order (call with the lock held); return what changed."""
        if event.sequence_number <= self._last_sequence:
            return []  # seen already
        if self._last_sequence and event.sequence_number != self._last_sequence + 1:
            self._needs_sync = True  # a gap: something was missed, take a fresh snapshot
            self._condition.notify_all()
        self._last_sequence = event.sequence_number
        old = self._items.get(event.service_id)
        if event.transition == TRANSITION_MATCH_NOMATCH or event.item is None:
            if old is None:
                return []
            del self._items[event.service_id]
            return [("removed", old)]
        self._items[event.service_id] = event.item
        return [("changed" if old is not None else "added", event.item)]

    def _tell(self, changes: list[tuple[str, ServiceItem]]) -> None:
        if self._listener is None:
            return
        for kind, item in changes:
            try:
                self._listener(kind, item)
            except Exception:
                log.exception("a LookupCache listener failed on %s %r", kind, item)


def _differences(before: dict[str, ServiceItem], after: dict[str, ServiceItem]) -> list[tuple[str, ServiceItem]]:
    changes = [("removed", item) for sid, item in before.items() if sid not in after]
    for sid, item in after.items():
        if sid not in before:
            changes.append(("added", item))
        elif before[sid] != item:
            changes.append(("changed", item))
    return changes
