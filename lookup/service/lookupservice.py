"""The lookup service: leased registrations, template lookup, and remote events.

Every registration is a lease of the lookup service (a
:class:`~landlord.Landlord`), so a service that stops renewing disappears by
itself: from every lookup at once when its lease runs out, whether or not the
reaper has freed it yet, and with a ``TRANSITION_MATCH_NOMATCH`` event to
whoever asked to hear about it.

:class:`LookupService` is the Pyro5-exposed facade: it checks what callers
send, grants the leases, and, under one lock, changes the registrations
(:class:`~lookup.service.registry.Registry`, which files items in the
:class:`~lookup.service.index.ServiceIndex`) and sends the events of each change
(:class:`~lookup.service.fanout.EventFanout`), so events follow changes in order.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import Pyro5.client
import Pyro5.core
import Pyro5.server

from landlord import (
    ANY,
    IN_PROCESS_CLIENT,
    SYSTEM_CLOCK,
    Clock,
    Landlord,
    LeasedResource,
    LeaseDurationPolicy,
    LeasePolicy,
    Reaper,
    Store,
    UnknownLeaseError,
    check_duration,
    client_of_call,
)

from ..entry import Entry, entry_class_name, entry_fields, entry_matches, modified_entries
from ..events import ALL_TRANSITIONS, EventRegistration
from ..item import MAX_MATCHES, ServiceItem, ServiceMatches, ServiceTemplate, check_cursor, uri_of
from ..ownership import check_claim, check_proof, new_registration_secret, service_id_for
from ..registration import DEFAULT_LEASE, DEFAULT_MAX_LEASE, ServiceRegistration
from .fanout import EventFanout, EventRecord
from .mailer import EventMailer
from .outbox import MailLimits
from .quotas import NAME_BYTES, ClientCounts, LookupLimits, attribute_bytes, fitting, value_bytes
from .registry import Registry, ServiceRecord

__all__ = ["LookupService", "RegistrationWatcher"]

log = logging.getLogger("lookup.service")  # its name before it moved; logs and tests know it by it

_NEXT_EVENT_ID = "next_event_id"  # a store setting

#: ``watcher(record, ended)``: told of each change of the registrations (see :meth:`LookupService.watch`)
RegistrationWatcher = Callable[[ServiceRecord, bool], None]


class LookupService(Landlord):
    """A lookup service: register a :class:`ServiceItem` under a lease; find
    services by template; hear about changes through remote events.

    Remote methods: :meth:`register`, :meth:`lookup`, :meth:`lookup_all`,
    :meth:`notify`, :meth:`entry_classes`, :meth:`field_values`,
    :meth:`service_types`, the attribute changes a :class:`ServiceRegistration`
    makes, and the landlord's ``renew``/``cancel``/``renew_all``/``cancel_all``.
    Local: :meth:`registrations`, :meth:`close`, and its parts, changed under its
    lock (read them only while it is quiet): :attr:`registry`, a
    :class:`~lookup.service.registry.Registry` with its
    :class:`~lookup.service.index.ServiceIndex`, and :attr:`fanout`, an
    :class:`~lookup.service.fanout.EventFanout`.

    Args:
        policy: lease terms (default: at most ``DEFAULT_MAX_LEASE``, ``ANY`` gets ``DEFAULT_LEASE``).
        reaper: how expired registrations are freed (see :class:`~landlord.LeaseManager`).
        clock: the clock leases are decided on.
        landlord_id: a stable identity (default: the store's, else a new random one).
        mailer: delivers events (default: an :class:`~lookup.service.mailer.EventMailer`
            of its own, which ends the registration of a listener it gives up
            on; a mailer of yours can do the same with ``on_undeliverable=``
            calling ``service.fanout.listener_gone``).
        store: keep registrations and event registrations (with their leases)
            in this :class:`~landlord.LeaseStore` (or any :class:`~landlord.Store`,
            such as a replica's etcd store), and take back what it holds:
            after a crash the service answers as before for every lease that
            has not run out meanwhile; those that have are ended with their
            events, and so are those whose end (expiry or cancel) the crash
            cut short: a listener may then hear of one end twice, with two
            sequence numbers. Event registrations whose listener is an
            in-process object (not a URI) are kept in memory only.
        callback_hosts: the only hosts an event listener's URI may name
            (``None``: any host); every listener URI must be ``PYRO:`` with a
            host and port whatever this says (:func:`landlord.check_callback_uri`).
        mail_limits: the bounds of its own mailer's delivery (a
            :class:`~lookup.service.outbox.MailLimits`: queue per listener, deadline,
            attempt timeout, attempts at once); not with ``mailer``.
        limits: what one client may hold (a :class:`~lookup.service.quotas.LookupLimits`:
            registrations, event registrations, bytes of attributes per
            registration; default: its defaults).

    Raises:
        TypeError: ``callback_hosts`` is a str, or not a list of str; ``limits`` not a LookupLimits.
        ValueError: an empty host in ``callback_hosts``, or both ``mailer`` and ``mail_limits``.
    """

    def __init__(self, *, policy: LeasePolicy | None = None, reaper: str | Reaper = "sleeper",
                 clock: Clock = SYSTEM_CLOCK, landlord_id: str | None = None,
                 mailer: EventMailer | None = None, store: Store | None = None,
                 callback_hosts: Iterable[str] | None = None, mail_limits: MailLimits | None = None,
                 limits: LookupLimits | None = None) -> None:
        if limits is not None and not isinstance(limits, LookupLimits):
            raise TypeError(f"limits must be a LookupLimits or None, got {type(limits).__name__}")
        #: what one client may hold (registrations, event registrations)
        self.limits = limits if limits is not None else LookupLimits()
        self._registrations_held = ClientCounts(self.limits.registrations_per_client, "registrations",
                                                exempt=[IN_PROCESS_CLIENT])
        self._event_registrations_held = ClientCounts(self.limits.event_registrations_per_client,
                                                      "event registrations", exempt=[IN_PROCESS_CLIENT])
        self._too_large = 0  # registrations refused for their attributes' size (counted under _counting)
        self._counting = threading.Lock()  # not the service's lock, which a replica holds across etcd writes
        # RLock: the lease manager calls _lease_ended from inside calls made under this lock
        self._lock = threading.RLock()
        self._watchers: tuple[RegistrationWatcher, ...] = ()  # before a store's leases are taken back and ended
        #: the registrations by service id, with their index (read only while the service is quiet)
        self.registry = Registry(clock=clock)
        #: the event registrations and their mail (read only while the service is quiet)
        self.fanout = EventFanout(clock=clock, cancel=self._cancel_lease, mailer=mailer, limits=mail_limits,
                                  persist=self._store_record if store is not None else None)
        super().__init__(policy=policy or LeaseDurationPolicy(maximum=DEFAULT_MAX_LEASE, default=DEFAULT_LEASE),
                         reaper=reaper, clock=clock, on_expire=self._lease_ended, on_cancel=self._lease_ended,
                         landlord_id=landlord_id, store=store, codec=_StoredRecords(self.registry, self.fanout, (
                             self._registrations_held, self._event_registrations_held)),
                         callback_hosts=callback_hosts)
        if store is not None:  # event ids are never reused, not even those of registrations that ended
            self.fanout.ids_from(store.get_setting(_NEXT_EVENT_ID, 1))

    # -- registering ------------------------------------------------------------

    @Pyro5.server.expose
    def register(self, item: ServiceItem, duration: float = ANY, proof: str | None = None) -> ServiceRegistration:
        """Register ``item`` for a lease of ``duration`` seconds.

        An item without an id gets a new, self-certifying one, and the
        registration carries the secret it came from. An item with an id
        replaces the id's registration (and ends its lease), if the caller
        proves the id is its own (:mod:`lookup.ownership`): an id that a live
        lease holds, or that came from a secret, needs ``proof``; any other
        id is taken by whoever registers it first.

        Args:
            item: the service item.
            duration: the lease asked for, in seconds.
            proof: the id's registration secret, or the cookie of the lease of
                its current registration; ``None`` for an item without an id.

        Raises:
            TypeError: ``item`` is not a ServiceItem, or ``proof`` not a str.
            ValueError: an invalid duration or proof, or a proof with an item without an id.
            NotOwnerError: ``proof`` does not prove the id is the caller's; nothing changed.
            LeaseDeniedError: the policy refused, or the caller holds as many registrations as
                :attr:`limits` allows; nothing changed.
            ValueError: the item's attributes are larger than :attr:`limits` allows.
        """
        item, duration, proof = _check_item(item), check_duration(duration), check_proof(proof)
        self._check_size(item)
        item, secret = _with_service_id(item, proof)
        client = client_of_call()
        record = ServiceRecord(item, client)
        with self._lock:  # held from the grant on: a lease ending at once finds its record stored
            holder = None
            if secret is None:  # an id just made from a new secret is nobody else's
                holder = self.registry.holder(record.service_id, self.manager.grace)
                check_claim(record.service_id, proof, holder.cookie if holder is not None else None)
            self._registrations_held.check(client, replacing=holder.cookie if holder is not None else None)
            lease = self.new_lease(record, duration)  # a refusal changes nothing
            self._registrations_held.hold(lease.cookie, client)
            record.cookie, record.leased, record.term = lease.cookie, self.manager.get(lease.cookie), lease.term
            old = self.registry.add(record)
            previous = old.item if old is not None and self.registry.live(old) else None
            if old is not None:  # replaced, so the end of its lease is ignored
                self._cancel_lease(old.cookie)
            self.fanout.fire(record.service_id, previous, item, self.registry.expiry(record))
            self._tell_watchers(record, False)
        log.info("registered %s %s for %.1f s", record.service_id, list(item.types), lease.remaining)
        return ServiceRegistration(record.service_id, lease, secret)

    @Pyro5.server.expose
    def add_attributes(self, cookie: str, entries: Sequence[Entry]) -> None:
        """Add attributes to the registration whose lease has ``cookie`` (see :class:`ServiceRegistration`)."""
        entries = _check_entries(entries)
        self._change_item(cookie, lambda item: item.replace(attributes=item.attributes + tuple(entries)))

    @Pyro5.server.expose
    def set_attributes(self, cookie: str, entries: Sequence[Entry]) -> None:
        """Replace the attributes of the registration whose lease has ``cookie``."""
        entries = _check_entries(entries)
        self._change_item(cookie, lambda item: item.replace(attributes=tuple(entries)))

    @Pyro5.server.expose
    def modify_attributes(self, cookie: str, templates: Sequence[Entry], entries: Sequence[Entry | None]) -> None:
        """Modify the attributes of the registration whose lease has ``cookie``
        (see :meth:`ServiceRegistration.modify_attributes`).

        Raises:
            TypeError, ValueError: lists of different lengths, non-entries, or
                a change of another entry class than its template's.
            UnknownLeaseError: no live registration has that lease.
        """
        self._change_item(cookie, _modification(templates, entries))

    def _change_item(self, cookie: str, change: Callable[[ServiceItem], ServiceItem]) -> None:
        record = self.get_resource(cookie)  # UnknownLeaseError once the lease is gone
        if not isinstance(record, ServiceRecord):
            raise UnknownLeaseError("that lease is not a service registration's")

        def checked(item: ServiceItem) -> ServiceItem:
            changed = change(item)
            self._check_size(changed)  # before the registry keeps it: a refusal changes nothing
            return changed

        with self._lock:
            before = self.registry.change(record, checked)
            if self.store is not None:
                self.manager.resource_changed(record.cookie)
            self.fanout.fire(record.service_id, before, record.item, self.registry.expiry(record))
            self._tell_watchers(record, False)

    # -- looking up -------------------------------------------------------------

    @Pyro5.server.expose
    def lookup(self, template: ServiceTemplate) -> Any:
        """The service of one item matching ``template``, or ``None``.

        Raises:
            TypeError: ``template`` is not a ServiceTemplate.
        """
        for item in self._matching(template, limit=1):
            return item.service
        return None

    @Pyro5.server.expose
    def lookup_all(self, template: ServiceTemplate, max_matches: int = MAX_MATCHES,
                   after: str | None = None) -> ServiceMatches:
        """At most ``max_matches`` items matching ``template``, in registration order, and how many
        match in all, with when each one's registration ends (see :class:`~lookup.item.Expiry`).

        The items of one answer measure at most :data:`~lookup.service.quotas.ANSWER_BYTES` in
        all (:func:`~lookup.service.quotas.answer_bytes`; but one item always goes), so that it
        fits a message however many register how much. An answer that leaves matches out, by this
        or by ``max_matches``, has a :attr:`~lookup.ServiceMatches.cursor`: ask again with
        ``after=`` it for the next of them (those registered since come in order, at the end; so
        does an id registered again since, which a pager that keeps items by id, as
        :class:`~lookup.LookupCache` does, takes as a change).

        Args:
            template: what to match.
            max_matches: the most items to hand back.
            after: a cursor of an earlier answer: only matches registered after its last item.

        Raises:
            TypeError: ``template`` is not a ServiceTemplate, ``max_matches`` not an int, or
                ``after`` not a str.
            ValueError: ``max_matches`` negative or above ``MAX_MATCHES``, or ``after`` not a
                cursor of this lookup service's (malformed, or from before a restart or failover).
        """
        if not 0 <= _check_int(max_matches, "max_matches") <= MAX_MATCHES:
            raise ValueError(f"max_matches must be 0 to {MAX_MATCHES}, got {max_matches}")
        _check_template(template)
        check_cursor(after)  # its size too, before any work is done on it
        self.manager.reap()  # free what has run out, so its events go out now
        with self._lock:
            records = self.registry.matching_records(template)
            start = self.registry.start_after(records, after)
            asked = records[start:start + max_matches]
            given = asked[:fitting(record.size for record in asked)]
            more = bool(given) and start + len(given) < len(records)
            return ServiceMatches._made([record.item for record in given], len(records),
                                        self.registry.expiries(given),
                                        self.registry.cursor(given[-1]) if more else None)

    @Pyro5.server.expose
    def entry_classes(self, template: ServiceTemplate) -> list[str]:
        """The distinct entry class names among the attributes of the items matching ``template``,
        sorted, as many as fit :data:`~lookup.service.quotas.ANSWER_BYTES`."""
        names = {entry_class_name(entry) for item in self._matching(template) for entry in item.attributes}
        return _within_budget(sorted(names))

    @Pyro5.server.expose
    def field_values(self, template: ServiceTemplate, index: int, field: str) -> list[Any]:
        """The distinct values of ``field`` in the attributes of matching items
        that match the template's attribute number ``index``, in the items' order, as many as
        fit :data:`~lookup.service.quotas.ANSWER_BYTES` (measured as attributes are).

        Raises:
            TypeError: a bad template, index or field name.
            ValueError: ``index`` out of range, or a field the template entry does not have.
        """
        _check_int(index, "index")
        _check_str(field, "field")
        items = self._matching(template)
        if not 0 <= index < len(template.attributes):
            raise ValueError(f"the template has {len(template.attributes)} attribute(s), no number {index}")
        wanted = template.attributes[index]
        if field not in entry_fields(wanted):
            raise ValueError(f"{entry_class_name(wanted)} has no field {field!r}")
        return _within_budget(_distinct_values(items, wanted, field))

    @Pyro5.server.expose
    def service_types(self, template: ServiceTemplate, prefix: str = "") -> list[str]:
        """The distinct type names of matching items that start with ``prefix``, sorted, as many as
        fit :data:`~lookup.service.quotas.ANSWER_BYTES` (a longer ``prefix`` finds the rest)."""
        _check_str(prefix, "prefix")
        return _within_budget(sorted({name for item in self._matching(template) for name in item.types
                                      if name.startswith(prefix)}))

    def _matching(self, template: ServiceTemplate, limit: int | None = None) -> list[ServiceItem]:
        _check_template(template)
        self.manager.reap()  # free what has run out, so its events go out now
        with self._lock:
            return self.registry.matching(template, limit)

    # -- events -------------------------------------------------------------------

    @Pyro5.server.expose
    def notify(self, template: ServiceTemplate, transitions: int, listener: Any, handback: Any = None,
               duration: float = ANY) -> EventRegistration:
        """Ask for events when items matching ``template`` make one of ``transitions``.

        Args:
            template: which items to watch.
            transitions: a bitwise or of the ``TRANSITION_*`` constants.
            listener: a Pyro5 proxy or ``PYRO:`` URI, with a host and port,
                of an object with ``notify(event)`` (in-process: the object
                itself); see :meth:`~landlord.Landlord.check_callback`.
            handback: returned unchanged in every event.
            duration: the registration's lease.

        Raises:
            TypeError: a bad template, or a listener neither a proxy, a URI nor an object with ``notify``.
            ValueError: ``transitions`` not in 1..7, an invalid duration, or a listener
                URI that is not ``PYRO:``, names no host and port, or a host not allowed.
            LeaseDeniedError: the policy refused, or the caller holds as many event registrations
                as :attr:`limits` allows; nothing changed.
        """
        _check_template(template)
        if not 1 <= _check_int(transitions, "transitions") <= ALL_TRANSITIONS:
            raise ValueError(f"transitions must combine TRANSITION_* values (1 to 7), got {transitions}")
        listener, duration = self._listener_address(listener), check_duration(duration)
        client = client_of_call()
        with self._lock:
            self._event_registrations_held.check(client)
            record = self.fanout.new_record(template, transitions, listener, handback)
            record.client = client
            if self.store is not None:
                self.store.set_setting(_NEXT_EVENT_ID, record.event_id + 1)
            lease = self.new_lease(record, duration)
            self._event_registrations_held.hold(lease.cookie, client)
            record.cookie, record.leased = lease.cookie, self.manager.get(lease.cookie)
            self.fanout.add(record)
        log.info("event registration %d for %r", record.event_id, template)
        return EventRegistration(record.event_id, lease, record.sequence_number)

    def _listener_address(self, listener: Any) -> Any:
        """A listener as the mailer reaches it: a URI string this service may call back, or an in-process object."""
        if not isinstance(listener, (str, Pyro5.core.URI, Pyro5.client.Proxy)) and callable(
                getattr(listener, "notify", None)):
            return listener
        try:
            uri = uri_of(listener)
        except TypeError as exc:
            raise TypeError(f"listener must be a Pyro5 proxy or URI: {exc}") from exc
        except ValueError as exc:
            raise ValueError(f"listener must be a PYRO: URI: {exc}") from exc
        return self.check_callback(uri)

    # -- leases ending -----------------------------------------------------------------

    def _lease_ended(self, record: Any) -> None:
        """``on_expire`` and ``on_cancel``: a registration or event registration is over."""
        with self._lock:
            if isinstance(record, ServiceRecord):
                self._registrations_held.release(record.cookie)
                if self.registry.end(record):
                    log.info("registration %s ended", record.service_id)
                    self.fanout.fire(record.service_id, record.item, None)
                    self._tell_watchers(record, True)
            elif isinstance(record, EventRecord):
                self._event_registrations_held.release(record.cookie)
                self.fanout.end(record)

    def limit_refusals(self) -> dict[str, int]:
        """Calls refused so far by its ``limits``, by the limit's name (what
        ``landlord_limits_refused_total{limit}`` reads when scraped)."""
        # without the service's lock, which a replica's registration holds across an etcd write: a scrape
        # waits for nobody (each count is one int, read whole)
        return {"registrations_per_client": self._registrations_held.refused,
                "event_registrations_per_client": self._event_registrations_held.refused,
                "attribute_bytes": self._too_large}

    def _check_size(self, item: ServiceItem) -> None:
        """Refuse an item whose attributes are larger than :attr:`limits` allows.

        Raises:
            ValueError: they are; the message says how large, and the limit.
        """
        size = attribute_bytes(item)
        if size > self.limits.attribute_bytes:
            with self._counting:
                self._too_large += 1
            raise ValueError(f"attributes of {size} bytes: a registration may carry at most "
                             f"{self.limits.attribute_bytes} here")

    def _cancel_lease(self, cookie: str) -> None:
        with contextlib.suppress(UnknownLeaseError):  # it ended meanwhile
            self.manager.cancel(cookie)

    def _store_record(self, record: EventRecord) -> None:
        with contextlib.suppress(UnknownLeaseError):  # it ended this instant
            self.manager.resource_changed(record.cookie)

    def watch(self, watcher: RegistrationWatcher) -> list[ServiceRecord]:
        """Call ``watcher(record, ended)`` after every registration, attribute change (``ended``
        false) and end of a registration (true) from now on, and return the live registrations now.

        In-process observers (the lookup browser's feed): ``watcher`` is called under the lock
        under which the registrations change, so it sees changes in order and nothing falls
        between the registrations returned and its first call; it must be quick (hand the
        record on, never wait). What it raises is logged. Renewals are not changes here: a
        :class:`~landlord.LeaseHooks` given to :attr:`manager` hears of those.
        Watching again with the same watcher only returns the registrations.
        """
        with self._lock:
            if watcher not in self._watchers:
                self._watchers = (*self._watchers, watcher)
            return [record for record in self.registry.records.values() if self.registry.live(record)]

    def _tell_watchers(self, record: ServiceRecord, ended: bool) -> None:
        for watcher in self._watchers:
            try:
                watcher(record, ended)
            except Exception:  # an observer's bug must not undo nor stop a registration
                log.exception("registration watcher %r failed", watcher)

    def registrations(self) -> list[tuple[ServiceItem, float]]:
        """Every live registration and its seconds left (a local view, for operators)."""
        with self._lock:
            return self.registry.registrations()

    def close(self) -> None:
        """Stop the reaper and the event delivery."""
        super().close()
        self.fanout.close()


class _StoredRecords:
    """The lookup service's :class:`~landlord.grantor.landlord.ResourceCodec`: registrations
    as the registry stores them, event registrations as the fan-out does; each taken back is
    counted again against the client who made it (``held``: the registrations' counts, the event
    registrations')."""

    __slots__ = ("_registry", "_fanout", "_held")

    def __init__(self, registry: Registry, fanout: EventFanout, held: tuple[ClientCounts, ClientCounts]) -> None:
        self._registry = registry
        self._fanout = fanout
        self._held = held

    def dump(self, resource: Any) -> Any:
        if isinstance(resource, ServiceRecord):
            return self._registry.dump(resource)
        if isinstance(resource, EventRecord):
            return self._fanout.dump(resource)
        return resource

    def load(self, data: Any) -> Any:
        """A record back from its stored form.

        Raises:
            TypeError, ValueError: not a record this service wrote.
        """
        if not isinstance(data, dict):
            raise TypeError(f"a stored lookup record is a dict, got {type(data).__name__}")
        return self._registry.load(data) if "item" in data else self._fanout.load(data)

    def restored(self, leased: LeasedResource) -> None:
        record = leased.resource
        if isinstance(record, ServiceRecord):
            self._registry.restored(leased)
            held = self._held[0]
        elif isinstance(record, EventRecord):
            self._fanout.restored(leased)
            held = self._held[1]
        else:
            return
        if record.client:  # a record stored before clients were is nobody's
            held.hold(leased.cookie, record.client)


def _modification(templates: object, entries: object) -> Callable[[ServiceItem], ServiceItem]:
    """What ``modify_attributes(cookie, templates, entries)`` does to an item, checked before anything changes.

    Raises:
        TypeError, ValueError: lists of different lengths, non-entries, or
            a change of another entry class than its template's.
    """
    wanted = _check_entries(templates)
    if not isinstance(entries, (list, tuple)):
        raise TypeError(f"expected a list of entries (or None), got {type(entries).__name__}")
    changes = [None if e is None else _check_entries([e])[0] for e in entries]
    modified_entries([], wanted, changes)  # checks lengths and classes
    return lambda item: item.replace(attributes=modified_entries(item.attributes, wanted, changes))


def _check_item(item: object) -> ServiceItem:
    """``item``, checked to be a ServiceItem.

    Raises:
        TypeError: not a ServiceItem.
    """
    if not isinstance(item, ServiceItem):
        raise TypeError(f"register takes a ServiceItem, got {type(item).__name__}")
    return item


def _with_service_id(item: ServiceItem, proof: str | None) -> tuple[ServiceItem, str | None]:
    """``item`` with its id, and the secret of the id when it had none (a new secret, and the id made from it).

    Raises:
        ValueError: a ``proof`` for an item without an id (a proof is of an id).
    """
    if item.service_id is not None:
        return item, None
    if proof is not None:
        raise ValueError("a proof is of a service id, and this item has none: register it with "
                         "service_id=lookup.ownership.service_id_for(secret) to choose the id by its secret")
    secret = new_registration_secret()
    return item.replace(service_id=service_id_for(secret)), secret


def _check_template(template: object) -> ServiceTemplate:
    if not isinstance(template, ServiceTemplate):
        raise TypeError(f"expected a ServiceTemplate, got {type(template).__name__}")
    return template


def _check_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return value


def _check_str(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


def _distinct_values(items: list[ServiceItem], wanted: Entry, field: str) -> list[Any]:
    """The distinct non-``None`` values of ``field`` in the attributes of ``items`` that ``wanted`` matches."""
    values: list[Any] = []
    for entry in (entry for item in items for entry in item.attributes if entry_matches(wanted, entry)):
        value = entry_fields(entry).get(field)
        if value is not None and value not in values:  # ==, not hashing: values may be lists or dicts
            values.append(value)
    return values


def _within_budget(values: list[Any]) -> list[Any]:
    """The leading ``values`` that fit one answer (:data:`~lookup.service.quotas.ANSWER_BYTES`),
    each measured as an attribute's value is, with a name's framing."""
    return values[:fitting(value_bytes(value) + NAME_BYTES for value in values)]


def _check_entries(entries: object) -> list[Entry]:
    if not isinstance(entries, (list, tuple)):
        raise TypeError(f"expected a list of entries, got {type(entries).__name__}")
    for entry in entries:
        if not isinstance(entry, Entry):
            raise TypeError(f"expected entries, got a {type(entry).__name__}")
    return list(entries)

