"""A client's local view of the services matching a template: :class:`LookupCache`.

For each lookup service it follows, the cache asks for events about the
template *before* it takes a snapshot with ``lookup_all``, holds back the
events that arrive while the snapshot is on its way, and replays them over
it. Events carry the whole item as it now is, so replaying them in order
always ends at the current state. Afterwards every query is answered
locally, without a round trip.

Several lookup services make one view: a service registered with three of
them is one item (by ``service_id``), added once, kept while any of them
lists it. Each lookup service is followed by a thread of its own, so one
that hangs delays no other; one that is lost (its event registration could
not be renewed) is subscribed to again, at delays growing exponentially with
jitter, and its outage is logged once at WARNING.

Callbacks are served on an address the lookup service can reach: the local
address of the cache's connection to it (one Pyro5 daemon per such address,
made when first needed), unless ``callback_host`` or ``daemon`` says otherwise.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import uuid
from collections.abc import Callable
from typing import Any

import Pyro5.api
import Pyro5.client
import Pyro5.core
import Pyro5.errors

from landlord import (
    FOREVER,
    SYSTEM_CLOCK,
    Backoff,
    Clock,
    LeaseRenewalEvent,
    LeaseRenewalManager,
    OutageLog,
    PeerErrors,
    check_duration,
    discard_proxy,
    proxy_for,
)
from landlord.serving import WILDCARD_HOSTS, uri_host

from .events import ALL_TRANSITIONS, TRANSITION_MATCH_NOMATCH, ServiceEvent
from .item import ServiceItem, ServiceTemplate, uri_of
from .service import DEFAULT_MAX_LEASE

__all__ = ["LookupCache", "CacheListener"]

log = logging.getLogger(__name__)

MAX_SNAPSHOT = 100_000
DEFAULT_RETRY_INITIAL = 0.5  # seconds
DEFAULT_RETRY_MAX = 30.0     # seconds

CacheListener = Callable[[str, ServiceItem], object]
"""Called with ``"added"``, ``"changed"`` or ``"removed"`` and the item (for
``"removed"``, the item as it was last seen)."""



class _EventSink:
    """The Pyro5 object lookup services send this cache's events to (one per daemon)."""

    def __init__(self, cache: LookupCache) -> None:
        self._cache = cache

    @Pyro5.api.expose
    def notify(self, event: ServiceEvent) -> None:
        self._cache._on_event(event)


class _Serving:
    """A daemon events are received on, the sink registered with it, and (if the cache made it) its thread."""

    __slots__ = ("daemon", "sink", "thread")

    def __init__(self, daemon: Pyro5.api.Daemon, sink: _EventSink, thread: threading.Thread | None) -> None:
        self.daemon = daemon
        self.sink = sink
        self.thread = thread  # None: the caller's daemon, served by the caller


class _Lookup:
    """One lookup service the cache follows. Guarded by the cache's condition,
    except ``backoff`` (its own thread's) and the immutable ``uri``, ``outage``."""

    __slots__ = ("uri", "items", "token", "last_sequence", "held", "event_lease", "needs_sync", "subscribed",
                 "due", "orphan_deadline", "backoff", "outage", "thread")

    def __init__(self, uri: str, due: float, backoff: Backoff) -> None:
        self.uri = uri
        self.items: dict[str, ServiceItem] = {}  # what it lists, as last known
        self.token = ""  # the handback of the current subscription
        self.last_sequence = 0
        self.held: list[ServiceEvent] | None = None  # events arriving while a snapshot is taken
        self.event_lease: Any = None
        self.needs_sync = True  # subscribe (again) and take a fresh snapshot
        self.subscribed = False  # its subscription is live and its snapshot in
        self.due = due  # the next attempt to subscribe
        self.orphan_deadline = math.inf  # lost: when to stop showing what only it listed
        self.backoff = backoff
        self.outage = OutageLog(log, uri)
        self.thread: threading.Thread | None = None


class LookupCache:
    """Keeps the services matching ``template`` at one or several lookup services, current through events.

    **One view of several lookup services.** An item is shown while at least
    one lookup service lists it, once, whatever the number that do, as the
    state last reported by any of them (one of them dropping it changes
    nothing while another lists it). The listener hears of the merged view:
    one ``"added"`` per service, ``"changed"`` when a lookup service reports
    a different state, ``"removed"`` when the last one listing it drops it.

    **A lookup service lost.** When the event registration at a lookup
    service is lost (it could not be renewed for its whole term: the lookup
    service is unreachable or has forgotten it), nothing another lookup
    service lists is lost, and the items *only* that lookup service listed
    are kept too: a client must not be told a live service vanished because
    one lookup service died. They stay until the cache has subscribed there
    again, when the fresh snapshot decides, or until ``orphan_timeout``
    seconds after the loss was noticed, when their registrations there would
    have run out anyway (the default, ``DEFAULT_MAX_LEASE`` = 300 s, is the
    longest lease a lookup service grants by default). Give the services'
    own lease term to have them dropped sooner, or 0 to drop them at once
    (what Jini's ServiceDiscoveryManager does). A client that finds such a
    service dead calls :meth:`discard`.

    **Discarding.** :meth:`discard` drops an item the client found dead (a
    call to it failed), as Jini's ServiceDiscoveryManager does, until a
    lookup service reports it anew: an event that carries it (registered
    again, or changed), or a fresh snapshot taken on subscribing (again).

    **Callback address.** Events are received on the local address of the
    connection to each lookup service (read from the connection once it is
    made), so a lookup service on another host can deliver them; the cache
    serves one Pyro5 daemon per local address it needs, made when first
    needed. Per address, not one daemon on all interfaces, because it then
    listens only where a lookup service can reach it, and every URI it
    hands out is one its daemon made. ``callback_host`` serves on that
    address instead (``"0.0.0.0"`` or ``"::"``: on all interfaces, each
    lookup service being given the local address of its own connection;
    ``"0.0.0.0"`` listens on IPv4 only, so a lookup service reached over
    IPv6 then fails to subscribe, with the reason in :attr:`last_error`);
    ``daemon``, when given, is used as it is. A URI naming ``0.0.0.0`` or
    ``::`` is never handed out: the connection's local address takes its place.

    **Saying what is wrong.** :meth:`wait_ready` returns ``False`` when the
    view is not current; :attr:`last_error` and :meth:`errors` say why. A
    lookup service that stays unreachable is logged at WARNING once per
    outage (first failure), its further failures at DEBUG, its recovery at INFO.

    Args:
        lookups: the lookup service's proxy or URI, or a list (any iterable)
            of them; the same URI given twice counts once.
        template: which services to keep.
        daemon: a Pyro5 daemon, already serving, to receive events on (it
            wins over ``callback_host``; default: daemons of the cache's own).
        callback_host: the address to receive events on (default: the local
            address of the connection to each lookup service).
        lease_duration: the event registrations' lease, in seconds; each is
            renewed for this term, and a lookup service that stops answering
            is noticed as lost within about this long.
        renewal_manager: keeps those leases alive (default: one of its own).
        listener: told of every item added, changed or removed.
        retry_initial: about how many seconds to wait before subscribing again
            after a failure (default 0.5); the wait doubles with each failure,
            and is shortened by up to half at random...
        retry_max: ...up to this (default 30; never below ``retry_delay``).
        retry_delay: the older name of ``retry_initial``, still understood.
        orphan_timeout: seconds to keep showing items that only a lost
            lookup service listed (see above); ``FOREVER``: until it is back.
        clock: what retries and ``orphan_timeout`` are timed on.

    Raises:
        TypeError: a lookup service that is not a proxy or URI, ``template``
            not a ServiceTemplate, ``callback_host`` not a str, or both
            ``retry_initial`` and ``retry_delay`` given.
        ValueError: no lookup service, an invalid duration or retry setting,
            or an empty ``callback_host``.
        OSError: ``callback_host`` is not an address of this host.
    """

    def __init__(self, lookups: Any, template: ServiceTemplate, *, daemon: Pyro5.api.Daemon | None = None,
                 callback_host: str | None = None, lease_duration: float = 60.0,
                 renewal_manager: LeaseRenewalManager | None = None, listener: CacheListener | None = None,
                 retry_initial: float | None = None, retry_max: float = DEFAULT_RETRY_MAX,
                 retry_delay: float | None = None, orphan_timeout: float = DEFAULT_MAX_LEASE,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        if not isinstance(template, ServiceTemplate):
            raise TypeError(f"expected a ServiceTemplate, got {type(template).__name__}")
        uris = _lookup_uris(lookups)
        if retry_delay is not None:
            if retry_initial is not None:
                raise TypeError("give retry_initial or its older name retry_delay, not both")
            retry_initial = check_duration(retry_delay, name="retry_delay", allow_any=False)
            retry_max = max(retry_max, retry_initial)
        self._retry_initial = check_duration(DEFAULT_RETRY_INITIAL if retry_initial is None else retry_initial,
                                             name="retry_initial", allow_any=False)
        self._retry_max = check_duration(retry_max, name="retry_max", allow_any=False)
        if not 0 < self._retry_initial <= self._retry_max < math.inf:
            raise ValueError("need 0 < retry_initial <= retry_max < FOREVER")
        self._lease_duration = check_duration(lease_duration)
        self._orphan_timeout = check_duration(orphan_timeout, name="orphan_timeout", allow_any=False)
        if callback_host is not None and not isinstance(callback_host, str):
            raise TypeError(f"callback_host must be a str, got {type(callback_host).__name__}")
        if callback_host is not None and not callback_host.strip("[]"):
            raise ValueError("callback_host must not be empty (give None for the connection's local address)")
        self._template = template
        self._listener = listener
        self._clock = clock
        self._condition = threading.Condition()
        self._lookups: dict[str, _Lookup] = {}
        self._by_token: dict[str, _Lookup] = {}  # routes events to their lookup service
        self._items: dict[str, ServiceItem] = {}  # the merged view
        self._discarded: set[str] = set()  # service ids dropped by discard() until reported anew
        self._outbox: list[tuple[str, ServiceItem]] = []  # changes not yet told to the listener
        self._telling = False  # a thread is telling the listener (it tells all that is in the outbox)
        self._errors = PeerErrors()  # of lookup services not reached since they failed
        self._closed = False
        self._owns_renewals = renewal_manager is None
        self._renewals = renewal_manager if renewal_manager is not None else LeaseRenewalManager(clock=clock)
        self._serving_lock = threading.Lock()
        self._by_address: dict[str, _Serving] = {}  # local address -> the daemon serving there
        self._fixed: _Serving | None = None  # the one daemon, when daemon= or callback_host= says which
        try:
            if daemon is not None:
                sink = _EventSink(self)
                daemon.register(sink)
                self._fixed = _Serving(daemon, sink, None)
            elif callback_host is not None:
                self._fixed = self._serve(callback_host.strip("[]"))
        except BaseException:
            if self._owns_renewals:
                self._renewals.close()
            raise
        with self._condition:
            for uri in uris:
                lookup = _Lookup(uri, clock.monotonic(), Backoff(self._retry_initial, self._retry_max))
                self._lookups[uri] = lookup
            for lookup in self._lookups.values():
                lookup.thread = threading.Thread(target=self._follow_logged, args=(lookup,),
                                                 name=f"LookupCache {lookup.uri}", daemon=True)
                lookup.thread.start()

    # -- queries (local) ------------------------------------------------------------

    def wait_ready(self, timeout: float | None = None, *, count: int = 1) -> bool:
        """Block until subscribed, with the snapshot in, at ``count`` lookup
        services (at least one, by default); return whether that happened.

        When it did not, :attr:`last_error` (or :meth:`errors`) says why.
        """
        with self._condition:
            return self._condition.wait_for(lambda: self._closed or self._subscribed_count() >= count, timeout) \
                and not self._closed and self._subscribed_count() >= count

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

    def discard(self, item: ServiceItem) -> None:
        """Drop ``item`` (by its service id): the client found the service dead.

        The listener is told it was ``"removed"``. It comes back only when a
        lookup service reports it anew: an event carrying it (registered
        again, or changed), or a snapshot taken on subscribing (again). An
        item not held is ignored.

        Raises:
            TypeError: ``item`` is not a ServiceItem.
        """
        if not isinstance(item, ServiceItem):
            raise TypeError(f"discard takes a ServiceItem, got {type(item).__name__}")
        service_id = item.service_id
        with self._condition:
            if service_id is None or service_id not in self._items:
                return
            self._discarded.add(service_id)
            self._outbox.extend(self._merge(service_id))
            self._condition.notify_all()
        log.info("discarded %s until a lookup service reports it anew", service_id)
        self._tell()

    def lookup_services(self) -> list[str]:
        """The URIs of the lookup services followed, in the order given."""
        return list(self._lookups)

    def subscribed(self) -> list[str]:
        """The URIs of the lookup services whose subscription is live, snapshot in."""
        with self._condition:
            return [uri for uri, lookup in self._lookups.items() if lookup.subscribed]

    @property
    def last_error(self) -> BaseException | None:
        """The latest exception met reaching a lookup service not reached since.

        ``None`` when every lookup service's last attempt succeeded (or none
        has failed yet). A lookup service's error is cleared when the cache
        has subscribed there again; :meth:`errors` has them all.
        """
        with self._condition:
            return self._errors.latest

    def errors(self) -> dict[str, BaseException]:
        """The last exception of each lookup service not reached since it failed, by its URI."""
        with self._condition:
            return self._errors.by_peer()

    def __len__(self) -> int:
        with self._condition:
            return len(self._items)

    def close(self) -> None:
        """Stop: cancel the event registrations and stop receiving events."""
        with self._condition:
            self._closed = True
            leases = [lookup.event_lease for lookup in self._lookups.values() if lookup.event_lease is not None]
            for lookup in self._lookups.values():
                lookup.event_lease = None
            self._by_token.clear()
            self._condition.notify_all()
        for lookup in self._lookups.values():
            if lookup.thread is not None and lookup.thread is not threading.current_thread():
                lookup.thread.join()
        for lease in leases:
            try:
                self._renewals.remove(lease)
            except Exception:
                pass  # already dropped
            try:
                lease.cancel()
            except Exception as exc:
                log.info("could not cancel an event registration: %s", exc)
        if self._owns_renewals:
            self._renewals.close()
        with self._serving_lock:
            servings = list(self._by_address.values()) + ([self._fixed] if self._fixed is not None else [])
            self._by_address.clear()
        for serving in servings:
            try:
                serving.daemon.unregister(serving.sink)
            except Exception:
                pass  # a caller's daemon closed before the cache
            if serving.thread is not None:  # one of ours
                serving.daemon.shutdown()
                if serving.thread is not threading.current_thread():
                    serving.thread.join(10)

    def __enter__(self) -> LookupCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- receiving events -----------------------------------------------------------

    def _serve(self, host: str) -> _Serving:
        """A daemon of the cache's own on ``host``, serving a sink, on a thread of its own."""
        daemon = Pyro5.api.Daemon(host=host, port=0)
        sink = _EventSink(self)
        daemon.register(sink)
        thread = threading.Thread(target=daemon.requestLoop, name=f"LookupCache-events {host}", daemon=True)
        thread.start()
        return _Serving(daemon, sink, thread)

    def _sink_uri(self, proxy: Any) -> str:
        """The URI to hand the lookup service behind ``proxy`` (this thread's) for its events."""
        serving = self._fixed
        if serving is None:
            address = _local_address(proxy)
            with self._serving_lock:
                if self._closed:
                    raise RuntimeError("the cache is closed")
                serving = self._by_address.get(address)
                if serving is None:
                    serving = self._by_address[address] = self._serve(address)
        uri = serving.daemon.uriFor(serving.sink)
        if uri.host in WILDCARD_HOSTS or uri.host is None:  # listening on all: name the address it is reached on
            address = _local_address(proxy)
            if uri.host == "0.0.0.0" and ":" in address:
                raise ValueError(f"events are received on 0.0.0.0 (IPv4 only), but {proxy._pyroUri} is reached "
                                 f"over IPv6 ({address}): give callback_host='::' to listen on both")
            uri = Pyro5.core.URI(f"PYRO:{uri.object}@{uri_host(address)}:{uri.port}")
        return str(uri)

    def _on_event(self, event: ServiceEvent) -> None:
        with self._condition:
            lookup = self._by_token.get(event.handback) if isinstance(event.handback, str) else None
            if lookup is None:
                return  # an earlier subscription's, or someone else's
            if lookup.held is not None:
                lookup.held.append(event)
                return
            self._outbox.extend(self._apply(lookup, event))
            self._condition.notify_all()
        self._tell()

    # -- following one lookup service -------------------------------------------------

    def _follow_logged(self, lookup: _Lookup) -> None:
        try:
            self._follow(lookup)
        except Exception:  # a bug: say so, rather than let the lookup service go quietly unfollowed
            log.exception("LookupCache stopped following %s", lookup.uri)

    def _follow(self, lookup: _Lookup) -> None:
        """One lookup service's thread: subscribe whenever needed, retry after failures, drop orphans in time."""
        while True:
            with self._condition:
                subscribe = False
                while not subscribe:
                    if self._closed:
                        return
                    now = self._clock.monotonic()
                    if now >= lookup.orphan_deadline:
                        lookup.orphan_deadline = math.inf
                        self._drop_listing(lookup)
                        break  # to tell the listener
                    subscribe = lookup.needs_sync and now >= lookup.due
                    if not subscribe:
                        self._clock.wait(self._condition, min(lookup.due if lookup.needs_sync else math.inf,
                                                              lookup.orphan_deadline))
            if not subscribe:
                self._tell()
                continue
            try:
                self._subscribe(lookup)
            except Exception as exc:  # unreachable or refused: try again in a while
                if isinstance(exc, Pyro5.errors.CommunicationError):
                    discard_proxy(lookup.uri)  # the next attempt goes out on a fresh connection
                with self._condition:
                    if self._closed:
                        return
                    if lookup.held is not None:
                        self._by_token.pop(lookup.token, None)
                        lookup.held = None
                    self._record_error(lookup, exc)
                    lookup.due = self._clock.monotonic() + lookup.backoff.next_delay()
                    self._condition.notify_all()
                lookup.outage.failed(exc, "subscribe to")
            self._tell()

    def _subscribe(self, lookup: _Lookup) -> None:
        token = uuid.uuid4().hex
        with self._condition:
            self._by_token.pop(lookup.token, None)
            lookup.token, lookup.last_sequence, lookup.held = token, 0, []
            self._by_token[token] = lookup
        proxy = proxy_for(lookup.uri)
        sink_uri = self._sink_uri(proxy)
        registration = proxy.notify(self._template, ALL_TRANSITIONS, sink_uri, token, self._lease_duration)
        try:
            snapshot = proxy.lookup_all(self._template, MAX_SNAPSHOT)
        except BaseException:
            _cancel_quietly(registration.lease)
            raise
        with self._condition:
            if self._closed:
                stale = registration.lease
            else:
                stale, lookup.event_lease = lookup.event_lease, registration.lease
                lookup.last_sequence = registration.sequence_number
                fresh = {item.service_id: item for item in snapshot.items if item.service_id}
                self._discarded.difference_update(fresh)  # a fresh snapshot reports them anew
                self._outbox.extend(self._replace_listing(lookup, fresh))
                held, lookup.held = lookup.held or [], None
                for event in sorted(held, key=lambda e: e.sequence_number):
                    self._outbox.extend(self._apply(lookup, event))
                lookup.needs_sync = False
                lookup.subscribed = True
                lookup.orphan_deadline = math.inf
                self._errors.reached(lookup.uri)
                self._condition.notify_all()
        if stale is registration.lease:
            _cancel_quietly(stale)
            return  # closed meanwhile
        if stale is not None:  # the subscription this one replaces (after a gap in the events)
            try:
                self._renewals.remove(stale)
            except Exception:
                pass  # lost meanwhile: already dropped
            _cancel_quietly(stale)
        lookup.backoff.reset()
        if not lookup.outage.recovered():
            log.debug("subscribed to %s: %d item(s)", lookup.uri, len(snapshot.items))
        # renew_duration: each renewal asks for the term given, not the lookup service's maximum
        self._renewals.renew_for(registration.lease, FOREVER, functools.partial(self._subscription_lost, lookup),
                                 renew_duration=self._lease_duration)

    def _subscription_lost(self, lookup: _Lookup, event: LeaseRenewalEvent) -> None:
        with self._condition:
            if self._closed or event.lease is not lookup.event_lease:
                return
            lookup.event_lease = None
            lookup.needs_sync = True
            lookup.subscribed = False
            lookup.due = self._clock.monotonic()  # at once: it may be back already
            if math.isinf(lookup.orphan_deadline):
                lookup.orphan_deadline = self._clock.monotonic() + self._orphan_timeout
            if lookup.held is None:  # else the token is a new subscription's, on its way: keep routing it
                self._by_token.pop(lookup.token, None)
            if event.exception is not None:
                self._record_error(lookup, event.exception)
            self._condition.notify_all()
        if isinstance(event.exception, Pyro5.errors.CommunicationError):  # unreachable for a whole term
            lookup.outage.failed(event.exception, "renew the event registration at")
        else:
            log.info("lost the event registration at %s (%s); subscribing again", lookup.uri, event.exception)

    def _record_error(self, lookup: _Lookup, exc: BaseException) -> None:
        """Call with the lock held."""
        self._errors.failed(lookup.uri, exc)

    # -- the merged view (all with the lock held) ----------------------------------------

    def _subscribed_count(self) -> int:
        return sum(1 for lookup in self._lookups.values() if lookup.subscribed)

    def _apply(self, lookup: _Lookup, event: ServiceEvent) -> list[tuple[str, ServiceItem]]:
        """Apply one event of ``lookup`` in order; return what changed in the merged view."""
        if event.sequence_number <= lookup.last_sequence:
            return []  # seen already
        if event.sequence_number != lookup.last_sequence + 1:
            lookup.needs_sync = True  # a gap: something was missed, take a fresh snapshot
            lookup.due = self._clock.monotonic()
            self._condition.notify_all()
        lookup.last_sequence = event.sequence_number
        service_id = event.service_id
        if event.transition == TRANSITION_MATCH_NOMATCH or event.item is None:
            if lookup.items.pop(service_id, None) is None:
                return []
            return self._merge(service_id)
        lookup.items[service_id] = event.item
        self._discarded.discard(service_id)  # reported anew
        return self._merge(service_id, reported=event.item)

    def _replace_listing(self, lookup: _Lookup, fresh: dict[str, ServiceItem]) -> list[tuple[str, ServiceItem]]:
        """``lookup`` now lists ``fresh`` (a snapshot); return what changed in the merged view."""
        before, lookup.items = lookup.items, fresh
        changes: list[tuple[str, ServiceItem]] = []
        for service_id in before:
            if service_id not in fresh:
                changes.extend(self._merge(service_id))
        for service_id, item in fresh.items():
            changes.extend(self._merge(service_id, reported=item if before.get(service_id) != item else None))
        return changes

    def _drop_listing(self, lookup: _Lookup) -> None:
        """Stop showing what only ``lookup`` (lost for ``orphan_timeout``) listed."""
        before, lookup.items = lookup.items, {}
        for service_id in before:
            self._outbox.extend(self._merge(service_id))
        if before:
            log.info("%s lost for %g s: no longer showing what only it listed", lookup.uri, self._orphan_timeout)
        self._condition.notify_all()

    def _merge(self, service_id: str, reported: ServiceItem | None = None) -> list[tuple[str, ServiceItem]]:
        """Bring the merged view of ``service_id`` in line with the listings; return the change.

        An item is shown, once, while any lookup service lists it and it is not
        discarded; as the state last reported by any of them (``reported``: the
        state a lookup service has just reported).
        """
        listed = [lookup.items[service_id] for lookup in self._lookups.values() if service_id in lookup.items]
        old = self._items.get(service_id)
        new: ServiceItem | None
        if not listed:
            self._discarded.discard(service_id)  # gone everywhere: nothing left to hold back
            new = None
        elif service_id in self._discarded:
            new = None
        elif reported is not None:
            new = reported
        elif old is not None:
            # still listed: one lookup service dropping it says nothing about its state, so the latest
            # state reported stays (falling back to another's older copy would flap back and forth)
            new = old
        else:
            new = listed[0]
        if new is None:
            if old is None:
                return []
            del self._items[service_id]
            return [("removed", old)]
        self._items[service_id] = new
        if old is None:
            return [("added", new)]
        return [("changed", new)] if old != new else []

    def _tell(self) -> None:
        """Tell the listener what changed, in order, from one thread at a time.

        A thread that finds another telling leaves its changes to it: the
        teller empties the outbox before it stops, and stops only under the
        lock. Nobody waits, so a listener may call back into the cache
        (``discard``, even ``close``) without a deadlock.
        """
        with self._condition:
            if self._telling:
                return
            self._telling = True
        try:
            while True:
                with self._condition:
                    changes, self._outbox = self._outbox, []
                    if not changes:
                        self._telling = False
                        return
                if self._listener is None:
                    continue
                for kind, item in changes:
                    try:
                        self._listener(kind, item)
                    except Exception:
                        log.exception("a LookupCache listener failed on %s %r", kind, item)
        except BaseException:
            with self._condition:
                self._telling = False
            raise


def _lookup_uris(lookups: Any) -> list[str]:
    """The URIs of one lookup service or several, in order, each once."""
    if isinstance(lookups, (str, Pyro5.core.URI, Pyro5.client.Proxy)):
        given = [lookups]
    else:
        try:
            given = list(lookups)
        except TypeError:
            raise TypeError(f"lookups must be a lookup service's proxy or URI, or a list of them, "
                            f"got {type(lookups).__name__}") from None
    if not given:
        raise ValueError("give at least one lookup service")
    uris: dict[str, None] = {}
    for lookup in given:
        try:
            uris[uri_of(lookup)] = None
        except (TypeError, ValueError) as exc:
            raise TypeError(f"a lookup service is a proxy or URI, got {lookup!r:.80}") from exc
    return list(uris)


def _local_address(proxy: Any) -> str:
    """The local address of ``proxy``'s connection (connecting it first if need be)."""
    if proxy._pyroConnection is None:
        proxy._pyroBind()
    sockname = proxy._pyroConnection.sock.getsockname()
    if not isinstance(sockname, tuple):
        return "127.0.0.1"  # a Unix domain socket: the lookup service is on this host
    host = str(sockname[0])
    if host.startswith("::ffff:") and "." in host:
        host = host[len("::ffff:"):]  # an IPv4 address seen through an IPv6 socket
    return host


def _cancel_quietly(lease: Any) -> None:
    try:
        lease.cancel()
    except Exception:
        pass  # it runs out by itself
