"""Keeping a service registered: :class:`JoinManager`.

A service hands itself to a join manager once. The manager registers it with
each lookup service it is given, keeps every registration's lease alive
through a :class:`~landlord.LeaseRenewalManager`, and registers it again,
under the same service id, whenever a lookup service loses it: a lookup
service that restarted and forgot it answers the next renewal with
``UnknownLeaseError``, and the registration is back within that renewal round.

Each lookup service is kept by a thread of its own, so one that hangs (a
partition: every call waits out its timeout) delays no other. One that cannot
be reached is retried for as long as the manager runs, at delays growing
exponentially with jitter (:class:`~landlord.Backoff`); its outage is logged
once at WARNING, the retries at DEBUG, the recovery at INFO, and the last
error is kept for :attr:`JoinManager.last_error` and :meth:`JoinManager.errors`.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from collections.abc import Iterable, Sequence
from typing import Any

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

from .entry import Entry, modified_entries
from .item import ServiceItem, type_names, uri_of
from .registration import ServiceRegistration

__all__ = ["JoinManager"]

log = logging.getLogger(__name__)


class _Locator:
    """One lookup service the manager keeps the service registered with.

    Every field but ``uri``, ``backoff``, ``outage`` and ``thread`` is guarded
    by the manager's condition; ``backoff`` is used by its own thread only.
    """

    __slots__ = ("uri", "registration", "due", "backoff", "outage", "thread")

    def __init__(self, uri: str, due: float, backoff: Backoff) -> None:
        self.uri = uri
        self.registration: ServiceRegistration | None = None
        self.due = due  # when to (re)register; inf while registered
        self.backoff = backoff
        self.outage = OutageLog(log, uri)
        self.thread: threading.Thread | None = None


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
        locators: the lookup services, as Pyro5 proxies or URIs.
        service_id: the id to register under (default: the first lookup
            service assigns one, and every other registration reuses it).
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
        uris = [_locator_uri(locator) for locator in locators]  # all checked before any thread starts
        self._clock = clock
        self._owns_renewals = renewal_manager is None
        self._renewals = renewal_manager if renewal_manager is not None else LeaseRenewalManager(clock=clock)
        self._condition = threading.Condition()
        self._locators: dict[str, _Locator] = {}
        self._closed = False
        self._assigning: _Locator | None = None  # registering while no id is assigned: the others wait
        self._times_registered = 0  # successful registrations, re-registrations included
        self._errors = PeerErrors()  # of lookup services not reached since they failed
        with self._condition:
            for locator_uri in uris:
                self._add_locator(locator_uri)

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
            return {uri: locator.registration for uri, locator in self._locators.items()
                    if locator.registration is not None}

    def locators(self) -> list[str]:
        """The URIs of every lookup service kept, registered with or not (yet)."""
        with self._condition:
            return list(self._locators)

    def wait_registered(self, count: int = 1, timeout: float | None = None) -> bool:
        """Block until registered with at least ``count`` lookup services; return whether it happened.

        When it did not, :attr:`last_error` (or :meth:`errors`) says why.
        """
        with self._condition:
            return self._condition.wait_for(lambda: self._registered() >= count or self._closed, timeout) \
                and self._registered() >= count

    @property
    def last_error(self) -> BaseException | None:
        """The latest exception met reaching a lookup service that has not been reached since.

        ``None`` when every lookup service's last attempt succeeded (or none
        has failed yet). A lookup service's error is cleared when it takes a
        registration again; :meth:`errors` has them all, by lookup service.
        """
        with self._condition:
            return self._errors.latest

    def errors(self) -> dict[str, BaseException]:
        """The last exception of each lookup service not reached since it failed, by its URI."""
        with self._condition:
            return self._errors.by_peer()

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
        """Also register with these lookup services (those already kept are ignored).

        Raises:
            TypeError: a locator that is not a proxy or URI (nothing is added then).
        """
        uris = [_locator_uri(locator) for locator in locators]
        with self._condition:
            if self._closed:
                return
            for uri in uris:
                if uri not in self._locators:
                    self._add_locator(uri)

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
            locators = list(self._locators.values())
            registrations = [locator.registration for locator in locators if locator.registration is not None]
            for locator in locators:
                locator.registration = None
            self._condition.notify_all()
        for locator in locators:
            if locator.thread is not None and locator.thread is not threading.current_thread():
                locator.thread.join()
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

    def _registered(self) -> int:
        return sum(1 for locator in self._locators.values() if locator.registration is not None)

    def _add_locator(self, uri: str) -> None:
        """Keep one more lookup service, on a thread of its own (call with the lock held)."""
        locator = _Locator(uri, self._clock.monotonic(), Backoff(self._retry_initial, self._retry_max))
        self._locators[uri] = locator
        locator.thread = threading.Thread(target=self._keep_logged, args=(locator,),
                                          name=f"JoinManager {uri}", daemon=True)
        locator.thread.start()

    def _change(self, change: Any, method: str, *args: Any) -> None:
        with self._condition:
            self._item = change(self._item)
            registrations = {locator: locator.registration for locator in self._locators.values()
                             if locator.registration is not None}
        for locator, registration in registrations.items():
            try:
                getattr(registration, method)(*args)
            except Exception as exc:  # that registration is stale: register the new item there
                log.info("changing attributes at %s failed (%s); registering again", locator.uri, exc)
                self._lost(locator, registration, exc)

    def _keep_logged(self, locator: _Locator) -> None:
        try:
            self._keep(locator)
        except Exception:  # a bug: say so, rather than let the lookup service go quietly unkept
            log.exception("JoinManager stopped keeping %s", locator.uri)

    def _keep(self, locator: _Locator) -> None:
        """One lookup service's thread: register whenever there is no registration, retrying after failures."""
        while True:
            with self._condition:
                while True:
                    if self._closed:
                        return
                    deadline = math.inf
                    if locator.registration is None:
                        if self._item.service_id is not None or self._assigning in (None, locator):
                            if self._clock.monotonic() >= locator.due:
                                break
                            deadline = locator.due
                        # else: another lookup service is assigning the id; wait for it, so there is one id
                    self._clock.wait(self._condition, deadline)
                if self._item.service_id is None:
                    self._assigning = locator
                item = self._item  # read anew: the first registration may just have assigned the id
            try:
                self._register(locator, item)
            finally:
                with self._condition:
                    if self._assigning is locator:
                        self._assigning = None
                        self._condition.notify_all()

    def _register(self, locator: _Locator, item: ServiceItem) -> None:
        try:
            registration = proxy_for(locator.uri).register(item, self._lease_duration)
        except Exception as exc:  # unreachable, or refused: keep trying, a policy may change its mind
            if isinstance(exc, Pyro5.errors.CommunicationError):
                discard_proxy(locator.uri)  # the next attempt goes out on a fresh connection
            self._failed(locator, exc)
            locator.outage.failed(exc, "register with")
            return
        with self._condition:
            stale = self._closed or locator.registration is not None
            if not stale:
                locator.registration = registration
                locator.due = math.inf
                self._errors.reached(locator.uri)
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
        locator.backoff.reset()
        locator.outage.recovered()
        log.info("registered %s with %s", registration.service_id, locator.uri)
        # renew_duration: every renewal asks for the term given, so a dead service is gone within it
        self._renewals.renew_for(registration.lease, FOREVER,
                                 functools.partial(self._lost_event, locator, registration),
                                 renew_duration=self._lease_duration)

    def _failed(self, locator: _Locator, exc: BaseException, *, retry_at_once: bool = False) -> None:
        """Record a failure to reach ``locator`` and when to try it next."""
        with self._condition:
            self._errors.failed(locator.uri, exc)
            if locator.registration is None:
                locator.due = self._clock.monotonic() + (0.0 if retry_at_once else locator.backoff.next_delay())
            self._condition.notify_all()

    def _lost_event(self, locator: _Locator, registration: ServiceRegistration, event: LeaseRenewalEvent) -> None:
        self._lost(locator, registration, event.exception)

    def _lost(self, locator: _Locator, registration: ServiceRegistration, exception: BaseException | None) -> None:
        """A registration is gone (or stale): register again there, at once."""
        with self._condition:
            if self._closed or locator.registration is not registration:
                return
            locator.registration = None
            locator.due = self._clock.monotonic()
            self._condition.notify_all()
        if exception is not None:
            self._failed(locator, exception, retry_at_once=True)
        try:
            self._renewals.remove(registration.lease)
        except Exception:
            pass  # the renewal manager dropped it already
        if isinstance(exception, Pyro5.errors.CommunicationError):  # unreachable for the whole term: an outage
            locator.outage.failed(exception, "renew the registration with")
        else:
            log.info("lost the registration with %s (%s); registering again", locator.uri, exception)


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
