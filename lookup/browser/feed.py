"""The browser's event feed: the lookup service's registration changes, fanned out to page clients.

A :class:`BrowserFeed` watches a :class:`~lookup.service.lookupservice.LookupService`
in-process (:meth:`~lookup.service.lookupservice.LookupService.watch` for
registrations, attribute changes and ends; a :class:`~landlord.LeaseHooks` on
its lease manager for renewals, which move a registration's end). The service
only appends each change to a bounded backlog and goes on: one feed thread
turns changes into JSON messages, keeps a mirror of the registrations (what a
new client is sent first), and puts each message in every client's bounded
queue. A client whose queue is full is dropped (its stream ends; the page
reconnects and starts from a new snapshot): a slow reader never makes the
service, nor the other clients, wait. A backlog that overflows (the feed
thread far behind) is dropped whole and the mirror taken again from the service.

Messages (one JSON object each; times are the server's wall clock, in ms):

* ``{"kind": "snapshot", "now": ms, "registrations": [registration, ...]}``, first, and after a resync;
* ``{"kind": "put", "registration": registration}``: registered, or its attributes changed;
* ``{"kind": "renewed", "id": service_id, "expires": ms}``;
* ``{"kind": "gone", "id": service_id}``: its registration ended (expired, cancelled, evicted).

A registration is ``{"id", "types", "attributes": [{"class", "fields"}], "address", "expires"}``,
and for a client with the admin token also ``"lease"``: its cookie's first
:data:`LEASE_PREFIX_SHOWN` characters (enough to evict it, never the whole cookie).
"""

from __future__ import annotations

import collections
import json
import logging
import queue
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from landlord import LeasedResource, LeaseHooks, UnknownLeaseError
from landlord.admin import PREFIX_SHOWN

from ..entry import entry_class_name, entry_fields
from ..item import ServiceItem
from ..service.lookupservice import LookupService
from ..service.registry import ServiceRecord

__all__ = ["BrowserFeed", "FeedLimits", "Subscription", "LEASE_PREFIX_SHOWN"]

log = logging.getLogger("lookup.browser")

LEASE_PREFIX_SHOWN = PREFIX_SHOWN  #: characters of a lease's cookie the page shows (as ``lookup leases`` does)
_VALUE_WIDTH = 200  #: characters of a value that is not JSON (its repr), at most


@dataclass(frozen=True)
class FeedLimits:
    """What the feed holds at most.

    Args:
        clients: page clients streaming at once (one more is refused).
        client_queue: messages waiting for one client (one more drops it).
        backlog: changes waiting for the feed thread (one more drops them all, and the feed resyncs).

    Raises:
        ValueError: a limit below 1.
    """

    clients: int = 32
    client_queue: int = 1024
    backlog: int = 100_000

    def __post_init__(self) -> None:
        for name in ("clients", "client_queue", "backlog"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int of at least 1, got {value!r}")


class Subscription:
    """One page client's stream: its queue of encoded messages, read by its HTTP thread.

    Args:
        admin: it was given the admin token: its registrations carry their lease's prefix.
        size: the most messages it may have waiting.
    """

    def __init__(self, admin: bool, size: int) -> None:
        self.admin = admin
        self._queue: queue.Queue[bytes | None] = queue.Queue(maxsize=size)
        self.dropped = False

    def next(self, timeout: float) -> bytes | None:
        """The next message (JSON, UTF-8), or ``None``: none within ``timeout`` seconds, or dropped
        (then :attr:`dropped` is true)."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def offer(self, message: bytes) -> bool:
        """Queue ``message`` without waiting; false if the queue is full (the client is too slow)."""
        try:
            self._queue.put_nowait(message)
        except queue.Full:
            return False
        return True

    def drop(self) -> None:
        """End the stream: its reader wakes up to find :attr:`dropped` (only the feed thread puts)."""
        self.dropped = True
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._queue.put_nowait(None)


class _Renewals(LeaseHooks):
    """Hears of renewals (which move a registration's end) for the feed; quick: a renewal waits for it."""

    def __init__(self, feed: BrowserFeed) -> None:
        self._feed = feed

    def renewed(self, leased: Sequence[LeasedResource]) -> None:
        if not self._feed.streaming:  # nobody is watching: nothing to do per lease
            return
        self._feed.push_all([("renewed", each.resource.service_id, None, each.cookie, each.expiration)
                             for each in leased if isinstance(each.resource, ServiceRecord)])


# a change as the service hands it over: kind ("put", "gone", "renewed"), service id, item, cookie, expiration
_Change = tuple[str, str, ServiceItem | None, str, float]


class BrowserFeed:
    """Fans the registration changes of ``service`` out to page clients (see the module's docstring).

    Args:
        service: the lookup service watched (in this process).
        limits: its bounds (default: :class:`FeedLimits`'s).

    Raises:
        TypeError: ``limits`` is not a FeedLimits.
    """

    def __init__(self, service: LookupService, limits: FeedLimits | None = None) -> None:
        if limits is not None and not isinstance(limits, FeedLimits):
            raise TypeError(f"limits must be a FeedLimits, got {type(limits).__name__}")
        self.limits = limits if limits is not None else FeedLimits()
        self._service = service
        self._changed = threading.Condition()
        self._backlog: collections.deque[_Change] = collections.deque()
        self._overflowed = False
        self._joining: list[Subscription] = []
        self._clients: list[Subscription] = []
        self._mirror: dict[str, tuple[dict[str, Any], str]] = {}  # service id: (registration, cookie)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="lookup-browser-feed", daemon=True)
        self._started = False

    @property
    def streaming(self) -> bool:
        """Whether any client streams now (or is about to)."""
        return bool(self._clients or self._joining)

    @property
    def clients(self) -> int:
        """How many clients stream now."""
        with self._changed:
            return len(self._clients) + len(self._joining)

    def start(self) -> None:
        """Start watching the service and feeding clients (once)."""
        if self._started:
            return
        self._started = True
        self._service.manager.add_hooks(_Renewals(self))
        self._rebuild(self._service.watch(self._watcher))
        self._thread.start()

    def close(self) -> None:
        """Stop the feed thread and end every client's stream (the service keeps the watcher,
        which from now on does nothing)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            ended = self._clients + self._joining
            self._clients, self._joining = [], []
        for subscription in ended:
            subscription.drop()
        if self._started:
            self._thread.join(timeout=5)

    def subscribe(self, admin: bool) -> Subscription | None:
        """A new client's stream, whose first message is a snapshot; ``None`` if
        ``limits.clients`` stream already (or the feed is closed)."""
        with self._changed:
            if self._closed or len(self._clients) + len(self._joining) >= self.limits.clients:
                return None
            subscription = Subscription(admin, self.limits.client_queue)
            self._joining.append(subscription)
            self._changed.notify()
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """Stop sending to ``subscription`` (its client went away)."""
        with self._changed:
            for clients in (self._clients, self._joining):
                if subscription in clients:
                    clients.remove(subscription)

    # -- from the service (quick, never waiting) ----------------------------------------

    def _watcher(self, record: ServiceRecord, ended: bool) -> None:
        if ended:
            self.push(("gone", record.service_id, None, record.cookie, 0.0))
        elif record.leased is not None:
            self.push(("put", record.service_id, record.item, record.cookie, record.leased.expiration))

    def push(self, change: _Change) -> None:
        """Hand one change to the feed thread (see :meth:`push_all`)."""
        self.push_all([change])

    def push_all(self, changes: Sequence[_Change]) -> None:
        """Hand changes to the feed thread, taking its lock once (a batch of renewals is one call);
        past ``limits.backlog`` the backlog is dropped and the feed resyncs from the service."""
        if not changes:
            return
        with self._changed:
            if self._closed:
                return
            for change in changes:
                if len(self._backlog) >= self.limits.backlog:
                    self._backlog.clear()
                    self._overflowed = True
                else:
                    self._backlog.append(change)
            self._changed.notify()

    # -- the feed thread -----------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._changed:
                while not (self._backlog or self._joining or self._overflowed or self._closed):
                    self._changed.wait()
                if self._closed:
                    return
                changes = list(self._backlog)
                self._backlog.clear()
                overflowed, self._overflowed = self._overflowed, False
                joining, self._joining = self._joining, []
                self._clients.extend(joining)
            try:
                self._feed(changes, overflowed, joining)
            except Exception:  # a bug here must not end the page's updates for good
                log.exception("the lookup browser's feed failed; resyncing")
                with self._changed:
                    self._overflowed = True

    def _feed(self, changes: list[_Change], overflowed: bool, joining: list[Subscription]) -> None:
        if overflowed:
            log.warning("the lookup browser's feed fell behind the service; resyncing its clients")
            self._rebuild(self._service.watch(self._watcher))
            self._send_snapshots(self._clients)
            return
        for change in changes:
            self._apply(change)
        self._send_snapshots(joining)

    def _rebuild(self, records: list[ServiceRecord]) -> None:
        self._mirror = {}
        for record in records:
            if record.leased is not None:
                self._mirror[record.service_id] = (self._registration(record.item, record.leased.expiration),
                                                   record.cookie)

    def _apply(self, change: _Change) -> None:
        kind, service_id, item, cookie, expiration = change
        if kind == "put" and item is not None:
            registration = self._registration(item, expiration)
            self._mirror[service_id] = (registration, cookie)
            self._send({"kind": "put", "registration": registration},
                       {"kind": "put", "registration": _with_lease(registration, cookie)})
        elif kind == "gone" and self._mirror.get(service_id, (None, cookie))[1] == cookie:
            self._mirror.pop(service_id, None)
            self._send({"kind": "gone", "id": service_id}, None)
        elif kind == "renewed" and service_id in self._mirror and self._mirror[service_id][1] == cookie:
            registration = self._mirror[service_id][0]
            registration["expires"] = self._wall_ms(expiration)
            self._send({"kind": "renewed", "id": service_id, "expires": registration["expires"]}, None)

    def _send_snapshots(self, subscriptions: list[Subscription]) -> None:
        if not subscriptions:
            return
        self._refresh_expiries()
        now = round(self._service.clock.time() * 1000)
        public = [registration for registration, _ in self._mirror.values()]
        plain = _encoded({"kind": "snapshot", "now": now, "registrations": public})
        admin = _encoded({"kind": "snapshot", "now": now, "registrations": [
            _with_lease(registration, cookie) for registration, cookie in self._mirror.values()]})
        for subscription in subscriptions:
            self._offer(subscription, admin if subscription.admin else plain)

    def _refresh_expiries(self) -> None:
        """Each registration's end as its lease says now: renewals are not followed while nobody streams."""
        for service_id, (registration, cookie) in list(self._mirror.items()):
            try:
                registration["expires"] = self._wall_ms(self._service.manager.get(cookie).expiration)
            except UnknownLeaseError:  # ended: its "gone" is on its way
                self._mirror.pop(service_id, None)

    def _send(self, public: dict[str, Any], admin: dict[str, Any] | None) -> None:
        if not self._clients:
            return
        plain = _encoded(public)
        privileged = _encoded(admin) if admin is not None else plain
        for subscription in list(self._clients):
            self._offer(subscription, privileged if subscription.admin else plain)

    def _offer(self, subscription: Subscription, message: bytes) -> None:
        if not subscription.offer(message):
            log.info("dropped a lookup browser client that read too slowly")
            self.unsubscribe(subscription)
            subscription.drop()

    def _registration(self, item: ServiceItem, expiration: float) -> dict[str, Any]:
        return {"id": item.service_id or "", "types": list(item.types),
                "attributes": [{"class": entry_class_name(entry), "fields": entry_fields(entry)}
                               for entry in item.attributes],
                "address": item.service_uri, "expires": self._wall_ms(expiration)}

    def _wall_ms(self, expiration: float) -> int:
        """A monotonic expiration as the wall clock's milliseconds, which the page counts down to."""
        clock = self._service.clock
        return round((clock.time() + expiration - clock.monotonic()) * 1000)


def _with_lease(registration: dict[str, Any], cookie: str) -> dict[str, Any]:
    return {**registration, "lease": cookie[:LEASE_PREFIX_SHOWN]}


def _encoded(message: dict[str, Any]) -> bytes:
    """``message`` as JSON (one line: JSON escapes newlines in strings); a value JSON has no form for as its repr."""
    return json.dumps(message, default=_shown, ensure_ascii=False, separators=(",", ":")).encode()


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _VALUE_WIDTH else text[:_VALUE_WIDTH - 1] + "…"
