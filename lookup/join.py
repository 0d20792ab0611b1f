"""Keeping a service registered: :class:`JoinManager`.

A service hands itself to a join manager once. The manager registers it with
each lookup service it is given, keeps every registration's lease alive
through a :class:`~landlord.LeaseRenewalManager`, and registers it again,
under the same service id, whenever a lookup service loses it: a lookup
service that restarted and forgot it answers the next renewal with
``UnknownLeaseError``, and the registration is back within that renewal round.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from typing import Any, Iterable, Sequence

import Pyro5.core
import Pyro5.errors

from landlord import FOREVER, LeaseRenewalEvent, LeaseRenewalManager, check_duration, proxies
from landlord.clock import SYSTEM_CLOCK, Clock

from .entry import Entry, modified_entries
from .item import ServiceItem, type_names, uri_of
from .registration import ServiceRegistration

__all__ = ["JoinManager"]

log = logging.getLogger(__name__)


class JoinManager:
    """Registers a service with lookup services and keeps it registered.

    Args:
        service: the service: an object registered with a Pyro5 daemon (its
            types are then taken from its class), a Pyro5 proxy, or a URI.
        types: type names or classes the service is registered under
            (default: the names of the service's class and its bases).
        attributes: its attribute entries.
        locators: the lookup services, as Pyro5 proxies or URIs.
        service_id: the id to register under (default: the first lookup
            service assigns one, and every other registration reuses it).
        lease_duration: the lease asked for each registration, in seconds.
        renewal_manager: keeps the leases alive (default: one of its own).
        retry_initial: seconds before retrying a lookup service that could not
            be reached; doubles with each failure...
        retry_max: ...up to this.
        clock: what retries are timed on.

    Raises:
        TypeError: a service without types (a bare URI or proxy and no ``types``),
            or locators that are not proxies or URIs.
        ValueError: an invalid duration or retry setting.
    """

    def __init__(self, service: Any, types: Iterable[str | type] | None = None,
                 attributes: Iterable[Entry] = (), locators: Iterable[Any] = (), *,
                 service_id: str | None = None, lease_duration: float = 60.0,
                 renewal_manager: LeaseRenewalManager | None = None, retry_initial: float = 0.5,
                 retry_max: float = 30.0, clock: Clock = SYSTEM_CLOCK) -> None:
        uri, own_types = _service_address(service)
        if types is None:
            if own_types is None:
                raise TypeError("give the types of a service known only by its URI or proxy")
            types = own_types
        self._item = ServiceItem(service_id, uri, types, attributes)
        self._lease_duration = check_duration(lease_duration)
        self._retry_initial = check_duration(retry_initial, name="retry_initial", allow_any=False)
        self._retry_max = check_duration(retry_max, name="retry_max", allow_any=False)
        if not 0 < self._retry_initial <= self._retry_max < math.inf:
            raise ValueError("need 0 < retry_initial <= retry_max < FOREVER")
        self._clock = clock
        self._owns_renewals = renewal_manager is None
        self._renewals = renewal_manager if renewal_manager is not None else LeaseRenewalManager(clock=clock)
        self._condition = threading.Condition()
        self._registrations: dict[str, ServiceRegistration] = {}
        self._due: dict[str, tuple[float, float]] = {}  # locator -> (next attempt, current backoff)
        self._closed = False
        self._times_registered = 0  # successful registrations, re-registrations included
        for locator in locators:
            self._due[_locator_uri(locator)] = (clock.monotonic(), self._retry_initial)
        self._thread = threading.Thread(target=self._run, name="JoinManager", daemon=True)
        self._thread.start()

    # -- what the service sees ------------------------------------------------------

    @property
    def service_id(self) -> str | None:
        """The service's id, once a lookup service has assigned it."""
        with self._condition:
            return self._item.service_id

    @property
    def item(self) -> ServiceItem:
        """The item registered (and registered again) everywhere."""
        with self._condition:
            return self._item

    def registrations(self) -> dict[str, ServiceRegistration]:
        """The current registration at each lookup service reached, by its URI."""
        with self._condition:
            return dict(self._registrations)

    def wait_registered(self, count: int = 1, timeout: float | None = None) -> bool:
        """Block until registered with at least ``count`` lookup services; return whether it happened."""
        with self._condition:
            return self._condition.wait_for(lambda: len(self._registrations) >= count or self._closed, timeout) \
                and len(self._registrations) >= count

    @property
    def times_registered(self) -> int:
        """How many registrations have succeeded so far, re-registrations included."""
        with self._condition:
            return self._times_registered

    def wait_times_registered(self, total: int, timeout: float | None = None) -> bool:
        """Block until :attr:`times_registered` reaches ``total``; return whether it did."""
        with self._condition:
            return self._condition.wait_for(lambda: self._times_registered >= total or self._closed, timeout) \
                and self._times_registered >= total

    def add_locators(self, locators: Iterable[Any]) -> None:
        """Also register with these lookup services."""
        with self._condition:
            for locator in locators:
                uri = _locator_uri(locator)
                if uri not in self._registrations and uri not in self._due:
                    self._due[uri] = (self._clock.monotonic(), self._retry_initial)
            self._condition.notify_all()

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
        with self._condition:
            self._closed = True
            registrations = list(self._registrations.values())
            self._registrations.clear()
            self._due.clear()
            self._condition.notify_all()
        self._thread.join()
        for registration in registrations:
            try:
                self._renewals.remove(registration.lease)
            except Exception:
                pass  # already dropped by the renewal manager
            if cancel:
                try:
                    registration.lease.cancel()
                except Exception as exc:  # the lookup service may be gone too
                    log.info("could not cancel %r: %s", registration, exc)
        if self._owns_renewals:
            self._renewals.close()

    def __enter__(self) -> JoinManager:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- keeping registered -------------------------------------------------------

    def _change(self, change: Any, method: str, *args: Any) -> None:
        with self._condition:
            self._item = change(self._item)
            registrations = dict(self._registrations)
        for locator, registration in registrations.items():
            try:
                getattr(registration, method)(*args)
            except Exception as exc:  # that registration is stale: register the new item there
                log.info("changing attributes at %s failed (%s); registering again", locator, exc)
                self._lost(locator, registration, None)

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._closed:
                    now = self._clock.monotonic()
                    ready = [uri for uri, (when, _) in self._due.items() if when <= now]
                    if ready:
                        break
                    deadline = min((when for when, _ in self._due.values()), default=math.inf)
                    self._clock.wait(self._condition, deadline)
                if self._closed:
                    return
            for locator in ready:
                self._register(locator)

    def _register(self, locator: str) -> None:
        with self._condition:
            item = self._item  # read anew: the first registration may just have assigned the id
        try:
            registration = proxies.proxy_for(locator).register(item, self._lease_duration)
        except Pyro5.errors.CommunicationError as exc:
            proxies.discard(locator)
            self._retry_later(locator, exc)
            return
        except Exception as exc:  # refused: keep trying, a policy may change its mind
            self._retry_later(locator, exc)
            return
        with self._condition:
            if self._closed or locator not in self._due:
                stale = True
            else:
                stale = False
                del self._due[locator]
                self._registrations[locator] = registration
                self._times_registered += 1
                if self._item.service_id is None:
                    self._item = self._item.replace(service_id=registration.service_id)
                self._condition.notify_all()
        if stale:
            try:
                registration.lease.cancel()
            except Exception:
                pass
            return
        log.info("registered %s with %s", registration.service_id, locator)
        # renew_duration: every renewal asks for the term given, so a dead service is gone within it
        self._renewals.renew_for(registration.lease, FOREVER,
                                 functools.partial(self._lost_event, locator, registration),
                                 renew_duration=self._lease_duration)

    def _retry_later(self, locator: str, exc: BaseException) -> None:
        with self._condition:
            if locator in self._due:
                _, backoff = self._due[locator]
                self._due[locator] = (self._clock.monotonic() + backoff, min(backoff * 2, self._retry_max))
        log.info("could not register with %s (%s); trying again", locator, exc)

    def _lost_event(self, locator: str, registration: ServiceRegistration, event: LeaseRenewalEvent) -> None:
        self._lost(locator, registration, event.exception)

    def _lost(self, locator: str, registration: ServiceRegistration, exception: BaseException | None) -> None:
        """A registration is gone (or stale): register again there, at once."""
        with self._condition:
            if self._closed or self._registrations.get(locator) is not registration:
                return
            del self._registrations[locator]
            self._due[locator] = (self._clock.monotonic(), self._retry_initial)
            self._condition.notify_all()
        try:
            self._renewals.remove(registration.lease)
        except Exception:
            pass  # the renewal manager dropped it already
        log.info("lost the registration with %s (%s); registering again", locator, exception)


def _service_address(service: Any) -> tuple[str, tuple[str, ...] | None]:
    """The service's URI, and its types when they can be read off its class."""
    daemon = getattr(service, "_pyroDaemon", None)
    if daemon is not None:
        return str(daemon.uriFor(service)), type_names(type(service))
    return uri_of(service), None


def _locator_uri(locator: Any) -> str:
    try:
        return uri_of(locator)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"a locator is a lookup service's proxy or URI, got {locator!r:.80}") from exc
