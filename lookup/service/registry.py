"""The lookup service's registrations: each :class:`ServiceRecord` (an item and
its lease) by service id, filed in a :class:`~lookup.service.index.ServiceIndex`.

The :class:`Registry` decides what is registered and what a template finds;
it grants no leases and sends no events (the lookup service does, around its
calls). It is also the store codec of registrations: :meth:`Registry.dump`,
:meth:`Registry.load` and :meth:`Registry.restored` are the registrations' part
of the lookup service's :class:`~landlord.grantor.landlord.ResourceCodec`.
"""

from __future__ import annotations

import bisect
import logging
import secrets
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from landlord import Clock, LeasedResource, UnknownLeaseError

from ..item import Expiry, ServiceItem, ServiceTemplate
from ..packed import keep_packing
from .index import ServiceIndex
from .quotas import answer_bytes

__all__ = ["ServiceRecord", "Registry"]

_new_tuple = tuple.__new__

log = logging.getLogger("lookup.registry")  # its name before it moved; logs and tests know it by it


class ServiceRecord:
    """A registered item and its lease (the lease manager's resource for it).

    Args:
        item: the item, with its service id.

    Attributes:
        item: the item as registered (attribute changes put a new one here).
        cookie: its lease's cookie, once granted.
        leased: its lease's :class:`~landlord.LeasedResource`, once granted:
            its expiration says whether the registration is live.
        replaced: registered again under the same id: the end of this
            record's lease is not the end of the service's registration.
        term: the seconds its lease was granted, once granted (``None``: not
            known: a record taken back from the store, which keeps no term).
        client: who registered it (see :func:`landlord.client_of_call`; ``""``: not known, a
            record stored before clients were), stored with it so that its client's count
            survives a restart.
        size: what its item counts for in an answer (:func:`~lookup.service.quotas.answer_bytes`).
    """

    __slots__ = ("item", "cookie", "leased", "replaced", "term", "client", "size")

    def __init__(self, item: ServiceItem, client: str = "") -> None:
        self.item = item
        self.size = answer_bytes(item)  # once per registration, not on every answer
        self.cookie = ""
        self.leased: LeasedResource | None = None
        self.replaced = False
        self.term: float | None = None
        self.client = client

    @property
    def service_id(self) -> str:
        return self.item.service_id or ""

    def __repr__(self) -> str:
        return f"<registration {self.item.service_id}>"


class Registry:
    """Every registration by service id, live or expired but not yet freed, and the index of their items.

    Not thread-safe: its owner (the lookup service) calls it under one lock,
    the same under which it sends the events of each change, so that events
    follow changes in order.

    Args:
        clock: decides whether a lease is live (its monotonic time).
        index: where items are filed (default: a new :class:`~lookup.service.index.ServiceIndex`).
    """

    def __init__(self, *, clock: Clock, index: ServiceIndex | None = None) -> None:
        self.clock = clock
        self.index = index if index is not None else ServiceIndex()
        self._records: dict[str, ServiceRecord] = {}  # in the order first registered: the order of answers
        self._epoch = secrets.token_hex(4)  # in every cursor: one from another registry (a restart, a term) is refused

    @property
    def records(self) -> Mapping[str, ServiceRecord]:
        """Every stored record by service id, in registration order (a read-only view)."""
        return types.MappingProxyType(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def get(self, service_id: str) -> ServiceRecord | None:
        """The record stored under ``service_id`` (live or not), or ``None``."""
        return self._records.get(service_id)

    def live(self, record: ServiceRecord) -> bool:
        """Whether ``record``'s lease has not run out (whether or not it is still stored)."""
        return record.leased is not None and record.leased.expiration > self.clock.monotonic()

    def holder(self, service_id: str, grace: float = 0.0) -> ServiceRecord | None:
        """The record whose lease holds ``service_id`` now, or ``None``: its lease is live,
        or in its ``grace`` seconds after its term (a renewal may still revive it).

        Raises:
            ValueError: a negative or NaN ``grace``.
        """
        if not grace >= 0:
            raise ValueError(f"grace must be zero or more seconds, got {grace}")
        record = self._records.get(service_id)
        if record is None or record.leased is None:
            return None
        return record if record.leased.expiration + grace > self.clock.monotonic() else None

    # -- changes --------------------------------------------------------------------

    def add(self, record: ServiceRecord) -> ServiceRecord | None:
        """Store ``record`` (its lease granted) under its service id, and file its item.

        Returns:
            The record it replaces, if any, now marked ``replaced`` (its lease
            is the caller's to cancel), else ``None``.

        Raises:
            ValueError: ``record`` has no service id or no lease.
        """
        if not record.item.service_id or record.leased is None:
            raise ValueError(f"{record!r} has no service id or no lease")
        service_id = record.item.service_id
        old = self._records.get(service_id)
        if old is not None:
            old.replaced = True
        self._records[service_id] = record
        self.index.put(service_id, record.item)
        keep_packing(record.item)  # packed for the wire once, not on every answer
        return old

    def change(self, record: ServiceRecord, change: Callable[[ServiceItem], ServiceItem]) -> ServiceItem:
        """Give ``record`` the item ``change`` makes of its item, and file it; return the item before.

        Raises:
            UnknownLeaseError: ``record`` was replaced or its lease has run out.
        """
        if record.replaced or not self.live(record):
            raise UnknownLeaseError("no such registration (it expired, was cancelled, or was replaced)")
        before = record.item
        record.item = change(before)
        record.size = answer_bytes(record.item)
        if self._records.get(record.service_id) is record:
            self.index.put(record.service_id, record.item)
        keep_packing(record.item)
        return before

    def end(self, record: ServiceRecord) -> bool:
        """Remove ``record`` as its lease ends; whether the service's registration ended with it
        (not if it was replaced, or is not the record stored)."""
        service_id = record.service_id
        if record.replaced or self._records.get(service_id) is not record:
            return False
        del self._records[service_id]
        self.index.remove(service_id)
        return True

    # -- answers --------------------------------------------------------------------

    def matching(self, template: ServiceTemplate, limit: int | None = None) -> list[ServiceItem]:
        """The items of live registrations ``template`` matches, in registration order, at most ``limit``."""
        return [record.item for record in self.matching_records(template, limit)]

    def matching_records(self, template: ServiceTemplate, limit: int | None = None) -> list[ServiceRecord]:
        """The live registrations ``template`` matches, in registration order, at most ``limit``."""
        now = self.clock.monotonic()
        candidates: Iterable[ServiceRecord]
        if template.service_id is not None:
            record = self._records.get(template.service_id)
            candidates = (record,) if record is not None else ()
            decided = False
        else:
            candidates = self.index.in_order(template, self._records)
            decided = self.index.decides(template)  # by type, or one field: matches() would say yes to each
        found: list[ServiceRecord] = []
        for record in candidates:
            leased = record.leased
            if leased is not None and leased.expiration > now and (decided or template.matches(record.item)):
                found.append(record)
                if limit is not None and len(found) >= limit:
                    break
        return found

    def cursor(self, record: ServiceRecord) -> str:
        """Where an answer that ends at ``record`` goes on from (see :meth:`start_after`)."""
        return f"{self._epoch}.{self.index.position[record.service_id]}"

    def start_after(self, records: list[ServiceRecord], cursor: str | None) -> int:
        """The place in ``records`` (stored ones, in registration order) of the first registered after
        the one ``cursor`` names (from :meth:`cursor`): 0 for ``None``. A registration ended since
        takes no other's place: every id keeps its place in the order while it stays registered.

        Raises:
            TypeError: ``cursor`` is not a str or None.
            ValueError: ``cursor`` is not one of this registry's (malformed, or from before a restart
                or another term of a replica): ask again from the start.
        """
        if cursor is None:
            return 0
        if not isinstance(cursor, str):
            raise TypeError(f"a cursor is a str, got {type(cursor).__name__}")
        epoch, _, place = cursor.partition(".")
        if epoch != self._epoch or not (place.isascii() and place.isdigit()) or len(place) > 20:
            raise ValueError(f"cursor {cursor!r:.40} is not this lookup service's (it restarted, or another "
                             "replica leads): ask again from the start")
        position = self.index.position
        return bisect.bisect_right(records, int(place), key=lambda record: position[record.service_id])

    def expiry(self, record: ServiceRecord) -> Expiry | None:
        """When ``record``'s registration ends, to send with its item; ``None`` once it has no time left.

        Its term is the one granted, or what it has left if that is more (a renewal for
        longer than the grant) or the term is not known.
        """
        return _expiry(record, self.clock.monotonic())

    def expiries(self, records: list[ServiceRecord]) -> list[Expiry | None]:
        """When ``records``' registrations end (see :meth:`expiry`), in order."""
        now = self.clock.monotonic()
        return [_expiry(record, now) for record in records]

    def registrations(self) -> list[tuple[ServiceItem, float]]:
        """Every live registration's item and its seconds left, in registration order."""
        now = self.clock.monotonic()
        return [(record.item, record.leased.expiration - now) for record in self._records.values()
                if record.leased is not None and record.leased.expiration > now]

    # -- the store codec of registrations ---------------------------------------------

    def dump(self, record: ServiceRecord) -> dict[str, Any]:
        """What the store keeps of ``record``: ``{"item": item, "client": client}``, the service as its URI."""
        item = record.item
        return {"item": item.replace(service=item.service_uri),  # a URI, not a proxy of this thread's
                "client": record.client}

    def load(self, data: Mapping[str, Any]) -> ServiceRecord:
        """A record (with no lease yet) back from what :meth:`dump` made of it.

        Raises:
            TypeError: not a registered :class:`ServiceItem` under ``"item"``.
        """
        item, client = data.get("item"), data.get("client", "")
        if not isinstance(item, ServiceItem) or item.service_id is None:
            raise TypeError("a stored registration without a registered ServiceItem")
        if not isinstance(client, str):
            raise TypeError(f"a stored registration's client is a str, got {type(client).__name__}")
        return ServiceRecord(item.replace(service=item.service_uri), client)  # as stored: a URI, no proxy

    def restored(self, leased: LeasedResource) -> None:
        """Store a record taken back from the store with its lease, ``leased``.

        A record stored under the same id before it is marked replaced: the
        process died between a registration again and the old lease's cancel.

        Raises:
            TypeError: ``leased`` is not a registration's.
        """
        record = leased.resource
        if not isinstance(record, ServiceRecord):
            raise TypeError(f"not a registration: {record!r:.80}")
        record.cookie, record.leased = leased.cookie, leased
        self.add(record)


def _expiry(record: ServiceRecord, now: float) -> Expiry | None:
    leased, term = record.leased, record.term
    if leased is None:
        return None
    remaining = leased.expiration - now
    if remaining <= 0:
        return None
    if term is None or term < remaining:
        term = remaining
    return _new_tuple(Expiry, (remaining, term))  # made for every item of every answer: without a call of __new__
