"""A client's local view of the services matching a template: :class:`LookupCache`.

For each lookup service it follows, the cache asks for events about the
template *before* it takes a snapshot with ``lookup_all``, holds back the
events that arrive while the snapshot is on its way, and replays them over
it. Events carry the whole item as it now is, so replaying them in order
always ends at the current state. Afterwards every query is answered
locally, without a round trip.

Several lookup services make one view: a service registered with three of
them is one item (by ``service_id``), added once, kept while any of them
lists it (one that is lost, for at most its registration's term there).
Each lookup service is followed by a thread of its own, so one that hangs
delays no other; one that is lost (its event registration could not be
renewed) is subscribed to again, at delays growing exponentially with
jitter, and its outage is logged once at WARNING.

Callbacks are served on an address the lookup service can reach: the local
address of the cache's connection to it (one Pyro5 daemon per such address,
made when first needed), unless ``callback_host`` or ``daemon`` says otherwise.

The cache is a facade over its parts, which share its condition:
:class:`~lookup.client.view.MergedView` (the one view, pure bookkeeping) and its
:class:`~lookup.client.view.Teller`, a :class:`~lookup.client.cachepeer.CachePeer` per lookup
service (subscribe, snapshot, events, re-subscribe) kept in a
:class:`~lookup.client.peerset.PeerSet` (lookup services added, removed and
discovered, their errors, closing), and an
:class:`~lookup.client.callbacks.EventReceiver` (the daemons events arrive on).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

import Pyro5.api
import Pyro5.client
import Pyro5.core

from landlord import SYSTEM_CLOCK, Backoff, Clock, LeaseRenewalManager, check_duration

from ..discovery.multicast import LookupDiscovery
from ..events import ServiceEvent
from ..item import ServiceItem, ServiceTemplate
from ..registration import DEFAULT_MAX_LEASE
from .cachepeer import CachePeer
from .callbacks import EventReceiver
from .peer import check_retry, lookup_keys
from .peerset import PeerSet
from .view import MergedView, Teller

__all__ = ["LookupCache", "CacheListener"]

log = logging.getLogger("lookup.cache")  # its name before it moved; logs and tests know it by it

DEFAULT_RETRY_INITIAL = 0.5  # seconds
DEFAULT_RETRY_MAX = 30.0     # seconds

CacheListener = Callable[[str, ServiceItem], object]
"""Called with ``"added"``, ``"changed"`` or ``"removed"`` and the item (for
``"removed"``, the item as it was last seen)."""


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
    one lookup service died. But each is kept at most as long as its
    registration there can still run: lookup services say, with every item
    they send, when its registration ends and its term
    (:class:`~lookup.item.Expiry`), and a registration may have been renewed
    just before the loss, so an item is kept for its term from the moment
    the loss is noticed (or to its end as last said, if later). The fresh
    snapshot decides once the cache has subscribed there again.
    ``orphan_timeout`` caps this (0: drop them at once, as Jini's
    ServiceDiscoveryManager does), and alone decides for items whose
    lookup service did not say (one before expiries; the default,
    ``DEFAULT_MAX_LEASE`` = 300 s, is the longest lease a lookup service
    grants by default).

    **A service reported gone.** A lookup service that is not lost and
    reports an item gone (an event, or a snapshot without it) has it
    dropped unless another lookup service that is not lost lists it: what a
    lost one last listed does not keep it. A lookup service is lost when its
    event registration cannot be renewed for ``lease_duration``, or sooner:
    one that still lists an item another says is gone is asked at once
    (its event registration renewed, waiting at most
    :data:`~lookup.client.cachepeer.PROBE_TIMEOUT`), and is lost if it cannot be
    reached or has forgotten the registration; one that answers keeps the
    item (it may have the service indeed). A client that finds a service
    dead calls :meth:`discard`.

    **Discarding.** :meth:`discard` drops an item the client found dead (a
    call to it failed), as Jini's ServiceDiscoveryManager does, until a
    lookup service reports it anew: an event that carries it (registered
    again, or changed), or a fresh snapshot taken on subscribing (again).

    **Callback address.** Events are received on the local address of the
    connection to each lookup service, so a lookup service on another host
    can deliver them: one Pyro5 daemon of the cache's own per such address
    (see :mod:`lookup.client.callbacks` for why). ``callback_host`` serves on that
    address instead (``"0.0.0.0"`` or ``"::"``: on all interfaces;
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
        orphan_timeout: the most seconds to keep showing items that only a lost
            lookup service listed, each kept for its registration's term (see
            above); for items whose term is not known, ``FOREVER`` keeps them until it is back.
        clock: what retries, expiries and ``orphan_timeout`` are timed on.
        groups: also follow every lookup service of these discovery groups
            (``""``: the public group) found by discovery, with no address
            configured (``lookups`` may then be empty): each is followed from
            when it is discovered; when discarded (no announcement heard for
            several intervals) it is no longer followed, and what only it
            listed is removed at once, as Jini's ServiceDiscoveryManager does
            (see :class:`~lookup.discovery.multicast.LookupDiscovery`).
        discovery: a :class:`~lookup.discovery.multicast.LookupDiscovery` of the
            caller's to follow instead of ``groups`` (left open on :meth:`close`).

    Raises:
        TypeError: a lookup service that is not a proxy or URI, ``template``
            missing or not a ServiceTemplate, ``callback_host`` not a str, or both
            ``retry_initial`` and ``retry_delay`` given, or both ``groups`` and ``discovery``.
        ValueError: no lookup service (and no discovery), an invalid duration or
            retry setting, an empty ``callback_host``, or bad groups.
        OSError: ``callback_host`` is not an address of this host; ``groups``
            given, and discovery cannot send on any interface.
    """

    def __init__(self, lookups: Any = (), template: ServiceTemplate | None = None, *,
                 daemon: Pyro5.api.Daemon | None = None,
                 callback_host: str | None = None, lease_duration: float = 60.0,
                 renewal_manager: LeaseRenewalManager | None = None, listener: CacheListener | None = None,
                 retry_initial: float | None = None, retry_max: float = DEFAULT_RETRY_MAX,
                 retry_delay: float | None = None, orphan_timeout: float = DEFAULT_MAX_LEASE,
                 clock: Clock = SYSTEM_CLOCK, groups: Iterable[str] | None = None,
                 discovery: LookupDiscovery | None = None) -> None:
        if not isinstance(template, ServiceTemplate):
            raise TypeError(f"expected a ServiceTemplate, got {type(template).__name__}")
        if groups is not None and discovery is not None:
            raise TypeError("give groups or a discovery, not both")
        uris = lookup_keys(lookups, allow_none=groups is not None or discovery is not None)
        if retry_delay is not None:
            if retry_initial is not None:
                raise TypeError("give retry_initial or its older name retry_delay, not both")
            retry_initial = check_duration(retry_delay, name="retry_delay", allow_any=False)
            retry_max = max(retry_max, retry_initial)
        retry = check_retry(DEFAULT_RETRY_INITIAL if retry_initial is None else retry_initial, retry_max)
        lease_duration = check_duration(lease_duration)
        orphan_timeout = check_duration(orphan_timeout, name="orphan_timeout", allow_any=False)
        self._condition = threading.Condition()
        self._view = MergedView(uris, orphan_timeout=orphan_timeout, clock=clock)
        self._teller = Teller(self._condition, self._view.take_changes, listener, logger=log)
        self._receiver = EventReceiver(self._on_event, daemon=daemon, callback_host=callback_host)
        self._owns_renewals = renewal_manager is None
        self._renewals = renewal_manager if renewal_manager is not None else LeaseRenewalManager(clock=clock)
        self._template, self._lease_duration, self._retry, self._clock = template, lease_duration, retry, clock
        self._followers = PeerSet(self._new_follower, condition=self._condition, forget=self._view.remove_lookup)
        self._followers.add(uris)
        self._followers.follow(groups, discovery)

    # -- queries (local) ------------------------------------------------------------

    def wait_ready(self, timeout: float | None = None, *, count: int = 1) -> bool:
        """Block until subscribed, with the snapshot in, at ``count`` lookup
        services (at least one, by default); return whether that happened.

        When it did not, :attr:`last_error` (or :meth:`errors`) says why.
        """
        followers = self._followers
        with self._condition:
            return self._condition.wait_for(lambda: followers.closed or self._subscribed_count() >= count, timeout) \
                and not followers.closed and self._subscribed_count() >= count

    def items(self, accept: Callable[[ServiceItem], bool] | None = None) -> list[ServiceItem]:
        """The items held (those ``accept`` accepts, if given)."""
        with self._condition:
            items = self._view.items()
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
            return self._condition.wait_for(lambda: condition(self._view.items()), timeout)

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
        with self._condition:
            if item.service_id is None or not self._view.discard(item.service_id):
                return
            self._condition.notify_all()
        log.info("discarded %s until a lookup service reports it anew", item.service_id)
        self._teller.tell()

    def lookup_services(self) -> list[str]:
        """The URIs of the lookup services followed, in the order given (then discovered)."""
        with self._condition:
            return self._followers.keys()

    def add_lookups(self, lookups: Any) -> None:
        """Also follow these lookup services (those followed already are ignored).

        Raises:
            TypeError: one that is not a proxy or URI (nothing is added then).
        """
        self._followers.add(lookup_keys(lookups, allow_none=True))

    def remove_lookups(self, lookups: Any) -> None:
        """Stop following these lookup services (those not followed are ignored): what only they
        listed is removed at once; their event registrations are no longer renewed (not cancelled:
        one let go is usually one that cannot be reached).

        Raises:
            TypeError: one that is not a proxy or URI (nothing is removed then).
        """
        self._followers.remove(lookup_keys(lookups, allow_none=True))

    def subscribed(self) -> list[str]:
        """The URIs of the lookup services whose subscription is live, snapshot in."""
        with self._condition:
            return [follower.uri for follower in self._followers if follower.subscribed]

    @property
    def last_error(self) -> BaseException | None:
        """The latest exception met reaching a lookup service not reached since.

        ``None`` when every lookup service's last attempt succeeded (or none
        has failed yet). A lookup service's error is cleared when the cache
        has subscribed there again; :meth:`errors` has them all.
        """
        with self._condition:
            return self._followers.errors.latest

    def errors(self) -> dict[str, BaseException]:
        """The last exception of each lookup service not reached since it failed, by its URI."""
        with self._condition:
            return self._followers.errors.by_peer()

    def __len__(self) -> int:
        with self._condition:
            return len(self._view)

    def close(self) -> None:
        """Stop: cancel the event registrations and stop receiving events."""
        self._followers.close()
        if self._owns_renewals:
            self._renewals.close()
        self._receiver.close()

    def __enter__(self) -> LookupCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _subscribed_count(self) -> int:
        return sum(1 for follower in self._followers if follower.subscribed)

    def _new_follower(self, uri: str) -> CachePeer:
        """The follower of one more lookup service, on a thread of its own (with the condition held; the set
        starts it): the view takes its listing from now on."""
        self._view.add_lookup(uri)
        return CachePeer(uri, template=self._template, view=self._view, condition=self._condition,
                         sink_uri=self._receiver.sink_uri, tell=self._teller.tell, renewals=self._renewals,
                         lease_duration=self._lease_duration, backoff=Backoff(*self._retry),
                         errors=self._followers.errors, clock=self._clock, logger=log)

    def _on_event(self, event: ServiceEvent) -> None:
        """An event has arrived (on a receiver's thread): to the follower whose subscription it is."""
        if not isinstance(event.handback, str):
            return  # not one of ours
        with self._condition:
            if not any(follower.receive(event) for follower in self._followers):
                return  # held back for a snapshot on its way, or an earlier subscription's
            self._condition.notify_all()
        self._teller.tell()
