"""The lookup service: leased registrations, template lookup, and remote events.

Every registration is a lease of the lookup service (a
:class:`~landlord.Landlord`), so a service that stops renewing disappears by
itself: from every lookup at once when its lease runs out, whether or not the
reaper has freed it yet, and with a ``TRANSITION_MATCH_NOMATCH`` event to
whoever asked to hear about it.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import Pyro5.client
import Pyro5.core
import Pyro5.server

from landlord import (
    ANY,
    SYSTEM_CLOCK,
    Clock,
    Landlord,
    LeasedResource,
    LeaseDurationPolicy,
    LeasePolicy,
    LeaseStore,
    Reaper,
    UnknownLeaseError,
    check_duration,
)

from .entry import Entry, entry_class_name, entry_fields, entry_matches, modified_entries
from .events import (
    ALL_TRANSITIONS,
    TRANSITION_MATCH_MATCH,
    TRANSITION_MATCH_NOMATCH,
    TRANSITION_NOMATCH_MATCH,
    EventMailer,
    EventRegistration,
    ServiceEvent,
)
from .item import ServiceItem, ServiceMatches, ServiceTemplate, uri_of
from .registration import ServiceRegistration

__all__ = ["LookupService", "DEFAULT_MAX_LEASE", "DEFAULT_LEASE"]

log = logging.getLogger(__name__)

DEFAULT_MAX_LEASE = 300.0  # seconds: a dead service is gone within five minutes at worst
DEFAULT_LEASE = 60.0       # seconds, for a registration asking for ANY
MAX_MATCHES = 100_000      # the most items one lookup_all hands back
_NEXT_EVENT_ID = "next_event_id"  # a store setting
_SORT_BELOW = 0.25         # candidates under this share of all registrations are sorted into order, else scanned


class _ServiceRecord:
    """A registered item and its lease (the lease manager's resource for it)."""

    __slots__ = ("item", "cookie", "leased", "replaced")

    def __init__(self, item: ServiceItem) -> None:
        self.item = item
        self.cookie = ""
        self.leased: Any = None  # the LeasedResource: its expiration says whether the record is live
        self.replaced = False  # re-registered under the same id: its lease's end is not the service's

    def __repr__(self) -> str:
        return f"<registration {self.item.service_id}>"


class _EventRecord:
    """An event registration and its lease (the lease manager's resource for it)."""

    __slots__ = ("event_id", "template", "transitions", "listener", "handback", "sequence_number",
                 "cookie", "leased")

    def __init__(self, event_id: int, template: ServiceTemplate, transitions: int, listener: Any,
                 handback: Any) -> None:
        self.event_id = event_id
        self.template = template
        self.transitions = transitions
        self.listener = listener
        self.handback = handback
        self.sequence_number = 0
        self.cookie = ""
        self.leased: Any = None

    def __repr__(self) -> str:
        return f"<event registration {self.event_id}>"


_BOOL = "lookup.service:bool"  # tags a bool's index key: True must not find 1, nor 1 find True


def _value_key(value: Any) -> Any:
    """The index key of a field value, or ``None`` for a value the index does not key.

    Only values of exactly ``str``, ``int``, ``float`` or ``bool`` are keyed.
    For them :func:`~lookup.entry.wire_equal` is ``==``, except that a bool
    equals only a bool: hence its tag. Numbers that are ``==`` hash alike
    (``3`` and ``3.0``), so a dict finds every value that could be equal.
    """
    kind = type(value)
    if kind is str or kind is int or kind is float:
        return value
    if kind is bool:
        return (_BOOL, value)
    return None


class _ServiceIndex:
    """Which registrations a template could match: it narrows the candidates, it never decides.

    It mirrors the keys of :attr:`LookupService._services` (every registration
    stored there, live or expired but not yet freed) and is only read or
    changed under the service's lock. For each registration it files the
    service id under

    - each of its type names (a template's types must all be the item's);
    - each entry class name in the lineage of each of its entries (a template
      entry matches entries of its class or a subclass, by lineage name);
    - ``(class name, field, key)`` for each such class name and each field
      whose value has a key (see :func:`_value_key`), and under
      ``(class name, field)`` in :attr:`unkeyed` for a field with any other
      non-``None`` value (a list, a dict, an object of another type): those
      are candidates for any wanted value of that field, since only
      :func:`~lookup.entry.wire_equal` can say.

    :meth:`candidates` intersects the sets a template's types and non-``None``
    field values pick out; :meth:`ServiceTemplate.matches` still decides on
    every candidate, and liveness is still checked there. The index reads an
    item when it is stored: items are treated as immutable once registered
    (as they are when they arrive over the wire; attribute changes go through
    the service, which files the new item).
    """

    __slots__ = ("by_type", "by_class", "by_value", "unkeyed", "position", "_filed", "_positions")

    def __init__(self) -> None:
        self.by_type: dict[str, set[str]] = {}
        self.by_class: dict[str, set[str]] = {}
        self.by_value: dict[tuple[str, str, Any], set[str]] = {}
        self.unkeyed: dict[tuple[str, str], set[str]] = {}
        self.position: dict[str, int] = {}  # service id -> its place in the services dict's order
        self._filed: dict[str, list[tuple[dict[Any, set[str]], Any]]] = {}  # service id -> where it is filed
        self._positions = itertools.count()

    def __len__(self) -> int:
        return len(self.position)

    def put(self, service_id: str, item: ServiceItem) -> None:
        """File ``item`` under ``service_id``, replacing what was filed there (its place in the order kept)."""
        if service_id in self.position:
            self._unfile(service_id)
        else:
            self.position[service_id] = next(self._positions)
        filed: list[tuple[dict[Any, set[str]], Any]] = []
        for name in item.types:
            filed.append((self.by_type, name))
        for entry in item.attributes:
            fields = [(field, value, _value_key(value)) for field, value in entry._entry_fields().items()
                      if value is not None]
            for class_name in entry._entry_lineage:
                filed.append((self.by_class, class_name))
                for field, _value, key in fields:
                    if key is None:
                        filed.append((self.unkeyed, (class_name, field)))
                    else:
                        filed.append((self.by_value, (class_name, field, key)))
        for table, key in filed:
            ids = table.get(key)
            if ids is None:
                table[key] = {service_id}
            else:
                ids.add(service_id)
        self._filed[service_id] = filed

    def remove(self, service_id: str) -> None:
        """Forget ``service_id`` (nothing happens if it is not filed)."""
        if self.position.pop(service_id, None) is not None:
            self._unfile(service_id)

    def _unfile(self, service_id: str) -> None:
        for table, key in self._filed.pop(service_id, ()):
            ids = table.get(key)
            if ids is not None:
                ids.discard(service_id)
                if not ids:
                    del table[key]

    def candidates(self, template: ServiceTemplate) -> set[str] | None:
        """The ids of every registration ``template`` could match (a superset of
        those it does), or ``None`` when the template narrows nothing down
        (no types, no entries): then every registration is a candidate.
        """
        sets: list[set[str]] = []
        for name in template.types:
            ids = self.by_type.get(name)
            if not ids:
                return set()
            sets.append(ids)
        for wanted in template.attributes:
            class_name = wanted._entry_class_name
            ids = self.by_class.get(class_name)
            if not ids:
                return set()
            sets.append(ids)
            for field, value in wanted._entry_fields().items():
                if value is None:
                    continue  # a wildcard
                key = _value_key(value)
                if key is None:
                    continue  # not keyed: the class alone narrows, matches() decides
                hits = self.by_value.get((class_name, field, key))
                odd = self.unkeyed.get((class_name, field))
                if odd:
                    sets.append(hits | odd if hits else odd)
                elif hits:
                    sets.append(hits)
                else:
                    return set()
        if not sets:
            return None
        sets.sort(key=len)
        return sets[0].intersection(*sets[1:])


class LookupService(Landlord):
    """A lookup service: register a :class:`ServiceItem` under a lease; find
    services by template; hear about changes through remote events.

    Remote methods: :meth:`register`, :meth:`lookup`, :meth:`lookup_all`,
    :meth:`notify`, :meth:`entry_classes`, :meth:`field_values`,
    :meth:`service_types`, the attribute changes a :class:`ServiceRegistration`
    makes, and the landlord's ``renew``/``cancel``/``renew_all``/``cancel_all``.

    Args:
        policy: lease terms (default: at most ``DEFAULT_MAX_LEASE``, ``ANY`` gets ``DEFAULT_LEASE``).
        reaper: how expired registrations are freed (see :class:`~landlord.LeaseManager`).
        clock: the clock leases are decided on.
        landlord_id: a stable identity (default: the store's, else a new random one).
        mailer: delivers events (default: an :class:`~lookup.events.EventMailer` of its own).
        store: keep registrations and event registrations (with their leases)
            in this :class:`~landlord.LeaseStore`, and take back what it holds:
            after a crash the service answers as before for every lease that
            has not run out meanwhile; those that have are ended with their
            events. Event registrations whose listener is an in-process object
            (not a URI) are kept in memory only.
    """

    def __init__(self, *, policy: LeasePolicy | None = None, reaper: str | Reaper = "sleeper",
                 clock: Clock = SYSTEM_CLOCK, landlord_id: str | None = None,
                 mailer: EventMailer | None = None, store: LeaseStore | None = None) -> None:
        # RLock: the lease manager calls _lease_ended from inside calls made under this lock
        self._lock = threading.RLock()
        self._services: dict[str, _ServiceRecord] = {}
        self._index = _ServiceIndex()  # mirrors _services: which registrations a template could match
        self._events: dict[int, _EventRecord] = {}
        self._event_ids = itertools.count(1)
        self._mailer = mailer if mailer is not None else EventMailer(on_undeliverable=self._listener_gone)
        super().__init__(policy=policy or LeaseDurationPolicy(maximum=DEFAULT_MAX_LEASE, default=DEFAULT_LEASE),
                         reaper=reaper, clock=clock, on_expire=self._lease_ended, on_cancel=self._lease_ended,
                         landlord_id=landlord_id, store=store)
        if store is not None:  # event ids are never reused, not even those of registrations that ended
            self._event_ids = itertools.count(max([store.get_setting(_NEXT_EVENT_ID, 1), *
                                                   (event_id + 1 for event_id in self._events)]))

    # -- registering ------------------------------------------------------------

    @Pyro5.server.expose
    def register(self, item: ServiceItem, duration: float = ANY) -> ServiceRegistration:
        """Register ``item`` for a lease of ``duration`` seconds.

        An item without an id gets a new one; an item with the id of a live
        registration replaces it (and its lease).

        Raises:
            TypeError: ``item`` is not a ServiceItem.
            ValueError: an invalid duration.
            LeaseDeniedError: the policy refused.
        """
        if not isinstance(item, ServiceItem):
            raise TypeError(f"register takes a ServiceItem, got {type(item).__name__}")
        duration = check_duration(duration)
        if item.service_id is None:
            item = item.replace(service_id=str(uuid.uuid4()))
        service_id = item.service_id
        assert service_id is not None
        record = _ServiceRecord(item)
        with self._lock:  # held from the grant on: a lease ending at once finds its record stored
            lease = self.new_lease(record, duration)  # a refusal changes nothing
            record.cookie, record.leased = lease.cookie, self.manager.get(lease.cookie)
            old = self._services.get(service_id)
            previous = old.item if old is not None and self._live(old) else None
            if old is not None:
                old.replaced = True
                try:
                    self.manager.cancel(old.cookie)
                except UnknownLeaseError:
                    pass  # it ended meanwhile; replaced, so its end is ignored
            self._services[service_id] = record
            self._index.put(service_id, item)
            self._fire(service_id, previous, item)
        log.info("registered %s %s for %.1f s", service_id, list(item.types), lease.remaining)
        return ServiceRegistration(service_id, lease)

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
        templates = _check_entries(templates)
        if not isinstance(entries, (list, tuple)):
            raise TypeError(f"expected a list of entries (or None), got {type(entries).__name__}")
        changes = [None if e is None else _check_entries([e])[0] for e in entries]
        modified_entries([], templates, changes)  # checks lengths and classes before anything changes
        self._change_item(cookie, lambda item: item.replace(
            attributes=modified_entries(item.attributes, templates, changes)))

    def _change_item(self, cookie: str, change: Callable[[ServiceItem], ServiceItem]) -> None:
        record = self.get_resource(cookie)  # UnknownLeaseError once the lease is gone
        if not isinstance(record, _ServiceRecord):
            raise UnknownLeaseError("that lease is not a service registration's")
        with self._lock:
            if record.replaced or not self._live(record):
                raise UnknownLeaseError("no such registration (it expired, was cancelled, or was replaced)")
            before = record.item
            record.item = change(before)
            if self.store is not None:
                self.manager.resource_changed(record.cookie)
            if self._services.get(before.service_id or "") is record:
                self._index.put(before.service_id or "", record.item)
            self._fire(before.service_id or "", before, record.item)

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
    def lookup_all(self, template: ServiceTemplate, max_matches: int = MAX_MATCHES) -> ServiceMatches:
        """At most ``max_matches`` items matching ``template``, and how many match in all.

        Raises:
            TypeError: ``template`` is not a ServiceTemplate, or ``max_matches`` not an int.
            ValueError: ``max_matches`` negative or above ``MAX_MATCHES``.
        """
        if isinstance(max_matches, bool) or not isinstance(max_matches, int):
            raise TypeError(f"max_matches must be an int, got {type(max_matches).__name__}")
        if not 0 <= max_matches <= MAX_MATCHES:
            raise ValueError(f"max_matches must be 0 to {MAX_MATCHES}, got {max_matches}")
        items = self._matching(template)
        return ServiceMatches(items[:max_matches], len(items))

    @Pyro5.server.expose
    def entry_classes(self, template: ServiceTemplate) -> list[str]:
        """The distinct entry class names among the attributes of the items matching ``template``."""
        names = {entry_class_name(entry) for item in self._matching(template) for entry in item.attributes}
        return sorted(names)

    @Pyro5.server.expose
    def field_values(self, template: ServiceTemplate, index: int, field: str) -> list[Any]:
        """The distinct values of ``field`` in the attributes of matching items
        that match the template's attribute number ``index``.

        Raises:
            TypeError: a bad template, index or field name.
            ValueError: ``index`` out of range, or a field the template entry does not have.
        """
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"index must be an int, got {type(index).__name__}")
        if not isinstance(field, str):
            raise TypeError(f"field must be a str, got {type(field).__name__}")
        items = self._matching(template)
        if not 0 <= index < len(template.attributes):
            raise ValueError(f"the template has {len(template.attributes)} attribute(s), no number {index}")
        wanted = template.attributes[index]
        if field not in entry_fields(wanted):
            raise ValueError(f"{entry_class_name(wanted)} has no field {field!r}")
        values: list[Any] = []
        for item in items:
            for entry in item.attributes:
                if entry_matches(wanted, entry):
                    value = entry_fields(entry).get(field)
                    if value is not None and value not in values:
                        values.append(value)
        return values

    @Pyro5.server.expose
    def service_types(self, template: ServiceTemplate, prefix: str = "") -> list[str]:
        """The distinct type names of matching items that start with ``prefix``."""
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {type(prefix).__name__}")
        return sorted({name for item in self._matching(template) for name in item.types if name.startswith(prefix)})

    def _matching(self, template: ServiceTemplate, limit: int | None = None) -> list[ServiceItem]:
        if not isinstance(template, ServiceTemplate):
            raise TypeError(f"expected a ServiceTemplate, got {type(template).__name__}")
        self.manager.reap()  # free what has run out, so its events go out now
        found: list[ServiceItem] = []
        with self._lock:
            candidates: Iterable[_ServiceRecord]
            if template.service_id is not None:
                record = self._services.get(template.service_id)
                candidates = [record] if record is not None else []
            else:
                candidates = self._candidates(template)
            for record in candidates:
                if self._live(record) and template.matches(record.item):
                    found.append(record.item)
                    if limit is not None and len(found) >= limit:
                        break
        return found

    def _candidates(self, template: ServiceTemplate) -> Iterable[_ServiceRecord]:
        """The registrations ``template`` could match, in registration order (call with the lock held).

        The index narrows them down; the caller still checks each with
        ``template.matches`` and for liveness, so the answer is what scanning
        every registration would give, in the same order.
        """
        ids = self._index.candidates(template)
        if ids is None:
            return self._services.values()
        if len(ids) >= _SORT_BELOW * len(self._services):  # many of them: one pass in order beats sorting
            return [record for service_id, record in self._services.items() if service_id in ids]
        services, position = self._services, self._index.position
        return [services[service_id] for service_id in sorted(ids, key=position.__getitem__)]

    # -- events -------------------------------------------------------------------

    @Pyro5.server.expose
    def notify(self, template: ServiceTemplate, transitions: int, listener: Any, handback: Any = None,
               duration: float = ANY) -> EventRegistration:
        """Ask for events when items matching ``template`` make one of ``transitions``.

        Args:
            template: which items to watch.
            transitions: a bitwise or of the ``TRANSITION_*`` constants.
            listener: a Pyro5 proxy or URI of an object with ``notify(event)``
                (in-process: the object itself).
            handback: returned unchanged in every event.
            duration: the registration's lease.

        Raises:
            TypeError: a bad template or listener.
            ValueError: ``transitions`` not in 1..7, or an invalid duration.
            LeaseDeniedError: the policy refused.
        """
        if not isinstance(template, ServiceTemplate):
            raise TypeError(f"expected a ServiceTemplate, got {type(template).__name__}")
        if isinstance(transitions, bool) or not isinstance(transitions, int):
            raise TypeError(f"transitions must be an int, got {type(transitions).__name__}")
        if not 1 <= transitions <= ALL_TRANSITIONS:
            raise ValueError(f"transitions must combine TRANSITION_* values (1 to 7), got {transitions}")
        listener = _listener_address(listener)
        duration = check_duration(duration)
        with self._lock:
            record = _EventRecord(next(self._event_ids), template, transitions, listener, handback)
            if self.store is not None:
                self.store.set_setting(_NEXT_EVENT_ID, record.event_id + 1)
            lease = self.new_lease(record, duration)
            record.cookie, record.leased = lease.cookie, self.manager.get(lease.cookie)
            self._events[record.event_id] = record
        log.info("event registration %d for %r", record.event_id, template)
        return EventRegistration(record.event_id, lease, record.sequence_number)

    def _fire(self, service_id: str, before: ServiceItem | None, after: ServiceItem | None) -> None:
        """Post the events of one change (call with the lock held: sequence numbers follow changes)."""
        for record in self._events.values():
            if not self._live(record):
                continue
            matched = before is not None and record.template.matches(before)
            matches = after is not None and record.template.matches(after)
            if matched and matches:
                transition = TRANSITION_MATCH_MATCH
            elif matched:
                transition = TRANSITION_MATCH_NOMATCH
            elif matches:
                transition = TRANSITION_NOMATCH_MATCH
            else:
                continue
            if transition & record.transitions:
                record.sequence_number += 1
                if self.store is not None:  # before posting: a restart never repeats a number sent
                    with contextlib.suppress(UnknownLeaseError):  # it ended this instant
                        self.manager.resource_changed(record.cookie)
                event = ServiceEvent(record.event_id, record.sequence_number, record.handback, service_id,
                                     transition, after)
                self._mailer.post(record.event_id, record.listener, event)

    def _listener_gone(self, event_id: Any) -> None:
        with self._lock:
            record = self._events.get(event_id)
        if record is not None:
            log.info("listener of event registration %s is gone; cancelling it", event_id)
            try:
                self.manager.cancel(record.cookie)
            except UnknownLeaseError:
                pass

    # -- leases ending -----------------------------------------------------------------

    def _lease_ended(self, record: Any) -> None:
        """``on_expire`` and ``on_cancel``: a registration or event registration is over."""
        with self._lock:
            if isinstance(record, _ServiceRecord):
                if record.replaced or self._services.get(record.item.service_id or "") is not record:
                    return
                del self._services[record.item.service_id or ""]
                self._index.remove(record.item.service_id or "")
                log.info("registration %s ended", record.item.service_id)
                self._fire(record.item.service_id or "", record.item, None)
            elif isinstance(record, _EventRecord):
                if self._events.pop(record.event_id, None) is not None:
                    self._mailer.forget(record.event_id)

    # -- what the store keeps ---------------------------------------------------------

    def dump_resource(self, resource: Any) -> Any:
        """A registration or event registration as the store keeps it (see :meth:`landlord.Landlord.dump_resource`)."""
        if isinstance(resource, _ServiceRecord):
            item = resource.item
            return {"item": item.replace(service=item.service_uri)}  # a URI, not a proxy of this thread's
        if isinstance(resource, _EventRecord):
            if not isinstance(resource.listener, str):
                return None  # an in-process listener cannot outlive the process
            return {"event_id": resource.event_id, "template": resource.template,
                    "transitions": resource.transitions, "listener": resource.listener,
                    "handback": resource.handback, "sequence_number": resource.sequence_number}
        return super().dump_resource(resource)

    def load_resource(self, data: Any) -> Any:
        """A record back from :meth:`dump_resource`'s form.

        Raises:
            TypeError, ValueError: not a record this service wrote.
        """
        if not isinstance(data, dict):
            raise TypeError(f"a stored lookup record is a dict, got {type(data).__name__}")
        if "item" in data:
            if not isinstance(data["item"], ServiceItem) or data["item"].service_id is None:
                raise TypeError("a stored registration without a registered ServiceItem")
            item = data["item"]
            return _ServiceRecord(item.replace(service=item.service_uri))  # as stored: a URI, no proxy
        event_id, template, transitions = data.get("event_id"), data.get("template"), data.get("transitions")
        if not (isinstance(event_id, int) and isinstance(template, ServiceTemplate)
                and isinstance(transitions, int) and isinstance(data.get("listener"), str)
                and isinstance(data.get("sequence_number"), int)):
            raise ValueError(f"not a stored lookup record: {sorted(data)!r:.200}")
        record = _EventRecord(event_id, template, transitions, data["listener"], data.get("handback"))
        record.sequence_number = data["sequence_number"]
        return record

    def _restored(self, leased: LeasedResource) -> None:
        record = leased.resource
        record.cookie, record.leased = leased.cookie, leased
        if isinstance(record, _ServiceRecord):
            service_id = record.item.service_id or ""
            older = self._services.get(service_id)
            if older is not None:  # the process died between a re-registration and the old lease's cancel
                older.replaced = True
            self._services[service_id] = record
            self._index.put(service_id, record.item)
        elif isinstance(record, _EventRecord):
            self._events[record.event_id] = record

    def _live(self, record: _ServiceRecord | _EventRecord) -> bool:
        return bool(record.leased is not None and record.leased.expiration > self.clock.monotonic())

    def registrations(self) -> list[tuple[ServiceItem, float]]:
        """Every live registration and its seconds left (a local view, for operators)."""
        now = self.clock.monotonic()
        with self._lock:
            return [(r.item, r.leased.expiration - now) for r in self._services.values() if self._live(r)]

    def close(self) -> None:
        """Stop the reaper and the event delivery."""
        super().close()
        self._mailer.close()


def _check_entries(entries: object) -> list[Entry]:
    if not isinstance(entries, (list, tuple)):
        raise TypeError(f"expected a list of entries, got {type(entries).__name__}")
    for entry in entries:
        if not isinstance(entry, Entry):
            raise TypeError(f"expected entries, got a {type(entry).__name__}")
    return list(entries)


def _listener_address(listener: Any) -> Any:
    """A listener as the mailer reaches it: a URI string, or an in-process object."""
    if not isinstance(listener, (str, Pyro5.core.URI, Pyro5.client.Proxy)) and callable(
            getattr(listener, "notify", None)):
        return listener
    try:
        return uri_of(listener)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"listener must be a Pyro5 proxy or URI: {exc}") from exc
