"""Keeping a service registered: :class:`JoinManager`.

A service hands itself to a join manager once. The manager registers it with
each lookup service it is given, keeps every registration's lease alive
through a :class:`~landlord.LeaseRenewalManager`, and registers it again,
under the same service id, whenever a lookup service loses it: a lookup
service that restarted and forgot it answers the next renewal with
``UnknownLeaseError``, and the registration is back within that renewal round.
Each registration sends the proof that the id is the service's own
(:mod:`lookup.ownership`): the registration secret the first lookup service
handed back with the id (or that was given), so the id comes back even to a
lookup service that forgot it, while a stranger who knows the id cannot take it.

Each lookup service is kept by a thread of its own, so one that hangs (a
partition: every call waits out its timeout) delays no other. One that cannot
be reached is retried for as long as the manager runs, at delays growing
exponentially with jitter (:class:`~landlord.Backoff`); its outage is logged
once at WARNING, the retries at DEBUG, the recovery at INFO, and the last
error is kept for :attr:`JoinManager.last_error` and :meth:`JoinManager.errors`.

The manager is a facade over one :class:`~lookup.client.joinpeer.JoinPeer` per lookup
service (register, keep, register again, retry), kept in a
:class:`~lookup.client.peerset.PeerSet` (lookup services added, removed and
discovered, their errors, closing), which share its condition.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from landlord import SYSTEM_CLOCK, Backoff, Clock, LeaseRenewalManager, check_duration

from ..discovery.multicast import LookupDiscovery
from ..entry import Entry, modified_entries
from ..item import ServiceItem, type_names, uri_of
from ..ownership import service_id_for
from ..registration import ServiceRegistration
from .joinpeer import Joined, JoinPeer
from .peer import check_retry, lookup_keys
from .peerset import PeerSet

__all__ = ["JoinManager"]

log = logging.getLogger("lookup.join")  # its name before it moved; logs and tests know it by it


class JoinManager:
    """Registers a service with lookup services and keeps it registered.

    Every lookup service given is kept for as long as the manager runs: one
    that cannot be reached, refuses, or forgets the registration is tried
    again (and again) until it takes it, under the same service id.

    Args:
        service: the service: an object registered with a Pyro5 daemon (its
            types are then taken from its class), a Pyro5 proxy, or a URI.
        types: type names or classes the service is registered under
            (default: the names of the service's class and its bases).
        attributes: its attribute entries.
        lookups: the lookup services: one, or several, each a Pyro5 proxy or URI, or a LookupGroup.
        service_id: the id to register under (default: the first lookup
            service assigns one, with its secret, and every other registration
            reuses both). An id chosen here without ``secret`` is the
            service's only while a registration of it lives
            (:mod:`lookup.ownership`): once every lease of it has ended, whoever
            registers it first has it.
        secret: a registration secret (:attr:`secret` of an earlier manager,
            or ``lookup.ownership.new_registration_secret()``): register under
            the id it proves (``service_id_for(secret)``), which no one without
            it can take, even after the leases have ended. Keep it, with the
            id, to get the same id back after this process restarts.
        lease_duration: the lease asked for each registration, in seconds,
            and for each renewal of it: a service that dies is gone from
            every lookup service within this term.
        renewal_manager: keeps the leases alive (default: one of its own).
        retry_initial: about how many seconds to wait before retrying a lookup
            service that could not be reached or refused; the wait doubles
            with each failure, and each is shortened by up to half at random
            (so that services which lost the same lookup service do not all
            retry at once)...
        retry_max: ...up to this.
        clock: what retries are timed on.
        groups: also join every lookup service of these discovery groups
            (``""``: the public group) found by discovery, with no address
            configured: each is registered with when discovered, and let go
            (no longer renewed, not cancelled) when discarded (see
            :class:`~lookup.discovery.multicast.LookupDiscovery`).
        discovery: a :class:`~lookup.discovery.multicast.LookupDiscovery` of the
            caller's to follow instead of ``groups`` (left open on :meth:`close`).

    Raises:
        TypeError: a service without types (a bare URI or proxy and no ``types``),
            lookups that are not proxies or URIs, both ``groups`` and ``discovery``,
            or a ``secret`` that is not a str.
        ValueError: an invalid duration or retry setting, bad groups, a secret of
            the wrong length, or a ``service_id`` that ``secret`` does not prove.
        OSError: ``groups`` given, and discovery cannot send on any interface.
    """

    def __init__(self, service: Any, types: Iterable[str | type] | None = None,
                 attributes: Iterable[Entry] = (), lookups: Iterable[Any] = (), *,
                 service_id: str | None = None, secret: str | None = None, lease_duration: float = 60.0,
                 renewal_manager: LeaseRenewalManager | None = None, retry_initial: float = 0.5,
                 retry_max: float = 30.0, clock: Clock = SYSTEM_CLOCK, groups: Iterable[str] | None = None,
                 discovery: LookupDiscovery | None = None) -> None:
        uri, own_types = _service_address(service)
        if types is None:
            if own_types is None:
                raise TypeError("give the types of a service known only by its URI or proxy")
            types = own_types
        self._joined = Joined(ServiceItem(_proved_id(service_id, secret), uri, types, attributes), secret)
        self._lease_duration = check_duration(lease_duration)
        self._retry = check_retry(retry_initial, retry_max)
        uris = lookup_keys(lookups, allow_none=True)  # all checked before any thread starts
        self._clock = clock
        self._owns_renewals = renewal_manager is None
        self._renewals = renewal_manager if renewal_manager is not None else LeaseRenewalManager(clock=clock)
        self._condition = threading.Condition()
        self._keepers = PeerSet(self._new_keeper, condition=self._condition)
        self._keepers.add(uris)
        self._keepers.follow(groups, discovery)

    # -- what the service sees ------------------------------------------------------

    @property
    def service_id(self) -> str | None:
        """The service's id, once a lookup service has assigned it."""
        with self._condition:
            return self._joined.item.service_id

    @property
    def secret(self) -> str | None:
        """The registration secret that proves the service's id is its own (see :mod:`lookup.ownership`):
        given, or handed back by the lookup service that assigned the id; ``None`` before that,
        or for an id chosen without a secret, or assigned by a lookup service from before secrets."""
        with self._condition:
            return self._joined.secret

    @property
    def item(self) -> ServiceItem:
        """The item registered (and registered again) everywhere."""
        with self._condition:
            return self._joined.item

    def registrations(self) -> dict[str, ServiceRegistration]:
        """The current registration at each lookup service reached, by its URI."""
        with self._condition:
            return {keeper.uri: keeper.registration for keeper in self._keepers
                    if keeper.registration is not None}

    def lookup_services(self) -> list[str]:
        """The URIs of every lookup service kept, registered with or not (yet), in the order given (then discovered)."""
        with self._condition:
            return self._keepers.keys()

    def wait_registered(self, count: int = 1, timeout: float | None = None) -> bool:
        """Block until registered with at least ``count`` lookup services; return whether it happened.

        When it did not, :attr:`last_error` (or :meth:`errors`) says why.
        """
        with self._condition:
            return self._condition.wait_for(lambda: self._registered() >= count or self._keepers.closed, timeout) \
                and self._registered() >= count

    @property
    def last_error(self) -> BaseException | None:
        """The latest exception met reaching a lookup service that has not been reached since.

        ``None`` when every lookup service's last attempt succeeded (or none
        has failed yet). A lookup service's error is cleared when it takes a
        registration again; :meth:`errors` has them all, by lookup service.
        """
        with self._condition:
            return self._keepers.errors.latest

    def errors(self) -> dict[str, BaseException]:
        """The last exception of each lookup service not reached since it failed, by its URI."""
        with self._condition:
            return self._keepers.errors.by_peer()

    @property
    def times_registered(self) -> int:
        """How many registrations have succeeded so far, re-registrations included."""
        with self._condition:
            return self._joined.times_registered

    def wait_times_registered(self, total: int, timeout: float | None = None) -> bool:
        """Block until :attr:`times_registered` reaches ``total``; return whether it did."""
        with self._condition:
            return self._condition.wait_for(lambda: self._joined.times_registered >= total or self._keepers.closed,
                                            timeout) and self._joined.times_registered >= total

    def add_lookups(self, lookups: Any) -> None:
        """Also register with these lookup services (those already kept are ignored).

        Raises:
            TypeError: one that is not a proxy, URI or LookupGroup (nothing is added then).
        """
        self._keepers.add(lookup_keys(lookups, allow_none=True))

    def remove_lookups(self, lookups: Any) -> None:
        """Stop keeping these lookup services (those not kept are ignored). Their registrations are
        no longer renewed, and end there when their leases run out; they are not cancelled (a lookup
        service let go is usually one that cannot be reached).

        Raises:
            TypeError: one that is not a proxy, URI or LookupGroup (nothing is removed then).
        """
        self._keepers.remove(lookup_keys(lookups, allow_none=True))

    def add_attributes(self, entries: Sequence[Entry]) -> None:
        """Add attributes here and at every lookup service."""
        self._change(lambda item: item.replace(attributes=item.attributes + tuple(entries)),
                     "add_attributes", list(entries))

    def set_attributes(self, entries: Sequence[Entry]) -> None:
        """Replace the attributes here and at every lookup service."""
        self._change(lambda item: item.replace(attributes=tuple(entries)), "set_attributes", list(entries))

    def modify_attributes(self, templates: Sequence[Entry], entries: Sequence[Entry | None]) -> None:
        """Modify attributes here and at every lookup service (see ServiceRegistration.modify_attributes)."""
        modified_entries([], templates, entries)  # checks before anything changes
        self._change(lambda item: item.replace(attributes=modified_entries(item.attributes, templates, entries)),
                     "modify_attributes", list(templates), list(entries))

    def close(self, *, cancel: bool = True) -> None:
        """Stop, and (by default) cancel every registration so the service leaves at once."""
        self._keepers.close(cancel=cancel)
        if self._owns_renewals:
            self._renewals.close()

    def __enter__(self) -> JoinManager:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _registered(self) -> int:
        return sum(1 for keeper in self._keepers if keeper.registration is not None)

    def _new_keeper(self, uri: str) -> JoinPeer:
        """The keeper of one more lookup service, on a thread of its own (the set starts it)."""
        return JoinPeer(uri, joined=self._joined, condition=self._condition, renewals=self._renewals,
                        lease_duration=self._lease_duration, backoff=Backoff(*self._retry),
                        errors=self._keepers.errors, clock=self._clock, logger=log)

    def _change(self, change: Callable[[ServiceItem], ServiceItem], method: str, *args: Any) -> None:
        """Change the item here, then at every lookup service registered with (with ``method``)."""
        with self._condition:
            self._joined.item = change(self._joined.item)
            registrations = [(keeper, registration) for keeper in self._keepers
                             if (registration := keeper.registration) is not None]
        for keeper, registration in registrations:
            keeper.update(registration, method, *args)


def _service_address(service: Any) -> tuple[str, tuple[str, ...] | None]:
    """The service's URI, and its types when they can be read off its class."""
    daemon = getattr(service, "_pyroDaemon", None)
    if daemon is not None:
        return str(daemon.uriFor(service)), type_names(type(service))
    return uri_of(service), None


def _proved_id(service_id: str | None, secret: str | None) -> str | None:
    """The id to register under: ``service_id``, or the one ``secret`` proves.

    Raises:
        TypeError, ValueError: a bad secret, or a ``service_id`` it does not prove.
    """
    if secret is None:
        return service_id
    proved = service_id_for(secret)
    if service_id is not None and service_id != proved:
        raise ValueError(f"the secret given proves the service id {proved}, not {service_id!r:.80}")
    return proved
