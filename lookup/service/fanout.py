"""Event fan-out: the lookup service's event registrations, and the events each change sends.

An :class:`EventRecord` is one ``notify`` registration and its lease. The
:class:`EventFanout` keeps them by event id, numbers each registration's
events as it sends them (after a restart too: see :meth:`EventFanout.fire`),
hands them to an :class:`~lookup.service.mailer.EventMailer` and ends a registration
whose listener cannot be reached. It is also the store codec of event
registrations, the events' part of the lookup service's
:class:`~landlord.grantor.landlord.ResourceCodec`.
"""

from __future__ import annotations

import itertools
import logging
import types
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from landlord import Clock, LeasedResource, UnknownLeaseError

from ..events import (
    TRANSITION_MATCH_MATCH,
    TRANSITION_MATCH_NOMATCH,
    TRANSITION_NOMATCH_MATCH,
    ServiceEvent,
)
from ..item import Expiry, ServiceItem, ServiceTemplate
from .mailer import EventMailer
from .outbox import MailLimits

__all__ = ["EventRecord", "EventFanout"]

log = logging.getLogger("lookup.fanout")  # its name before it moved; logs and tests know it by it


class EventRecord:
    """An event registration and its lease (the lease manager's resource for it).

    Args:
        event_id: the registration's id, never reused.
        template: which items it watches.
        transitions: a bitwise or of the ``TRANSITION_*`` constants it wants.
        listener: a Pyro5 URI (a str), or an in-process object with ``notify``.
        handback: sent back in each of its events.

    Attributes:
        sequence_number: the number of its last event sent.
        cookie, leased: its lease's cookie and :class:`~landlord.LeasedResource`, once granted.
        client: who made it (see :func:`landlord.client_of_call`; ``""``: not known), stored with it.
    """

    __slots__ = ("event_id", "template", "transitions", "listener", "handback", "sequence_number",
                 "cookie", "leased", "client")

    def __init__(self, event_id: int, template: ServiceTemplate, transitions: int, listener: Any,
                 handback: Any) -> None:
        self.event_id = event_id
        self.template = template
        self.transitions = transitions
        self.listener = listener
        self.handback = handback
        self.sequence_number = 0
        self.cookie = ""
        self.leased: LeasedResource | None = None
        self.client = ""

    def __repr__(self) -> str:
        return f"<event registration {self.event_id}>"


class EventFanout:
    """The event registrations by id, and the events of each change to the registrations.

    Not thread-safe, but for :meth:`listener_gone`: its owner calls it under
    the lock under which it changes the registrations, so each
    registration's events are numbered in the order of the changes.

    Args:
        clock: decides whether a registration's lease is live.
        cancel: cancels a lease by cookie (how a registration whose listener
            is gone is ended); its :class:`~landlord.UnknownLeaseError` is ignored.
        mailer: delivers the events (default: an :class:`~lookup.service.mailer.EventMailer`
            that calls :meth:`listener_gone` when it gives up on a listener).
        persist: if given, called with a registration after its sequence
            number moved on and before the event goes out, to store it, so a
            restart never sends a number twice.
        limits: the default mailer's bounds (see :class:`~lookup.service.outbox.MailLimits`).

    Raises:
        ValueError: both ``mailer`` and ``limits`` given (a mailer has its own).
    """

    def __init__(self, *, clock: Clock, cancel: Callable[[str], None], mailer: EventMailer | None = None,
                 persist: Callable[[EventRecord], None] | None = None, limits: MailLimits | None = None) -> None:
        if mailer is not None and limits is not None:
            raise ValueError("give a mailer or its limits, not both")
        self.clock = clock
        self._cancel = cancel
        self._persist = persist
        self._mailer = mailer if mailer is not None else EventMailer(on_undeliverable=self.listener_gone,
                                                                     limits=limits)
        self._records: dict[int, EventRecord] = {}
        self._ids = itertools.count(1)

    @property
    def mailer(self) -> EventMailer:
        """What delivers the events."""
        return self._mailer

    @property
    def records(self) -> Mapping[int, EventRecord]:
        """Every event registration by id, live or expired but not yet freed (a read-only view)."""
        return types.MappingProxyType(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def get(self, event_id: int) -> EventRecord | None:
        return self._records.get(event_id)

    def live(self, record: EventRecord) -> bool:
        """Whether ``record``'s lease has not run out."""
        return record.leased is not None and record.leased.expiration > self.clock.monotonic()

    # -- registrations ------------------------------------------------------------------

    def new_record(self, template: ServiceTemplate, transitions: int, listener: Any,
                   handback: Any) -> EventRecord:
        """A registration with the next event id (not stored until :meth:`add`)."""
        return EventRecord(next(self._ids), template, transitions, listener, handback)

    def ids_from(self, first: int) -> None:
        """Number new registrations from ``first`` on, or from after the highest id held if that is later."""
        self._ids = itertools.count(max([first, *(event_id + 1 for event_id in self._records)]))

    def add(self, record: EventRecord) -> None:
        """Store ``record``, its lease granted: from now on it hears of changes.

        Raises:
            ValueError: ``record`` has no lease.
        """
        if record.leased is None:
            raise ValueError(f"{record!r} has no lease")
        self._records[record.event_id] = record

    def end(self, record: EventRecord) -> None:
        """Forget ``record`` as its lease ends, and drop its undelivered events."""
        if self._records.pop(record.event_id, None) is not None:
            self._mailer.forget(record.event_id)

    def listener_gone(self, event_id: Hashable) -> None:
        """The mailer gave up on the listener of ``event_id``: cancel that registration's lease.

        Called on a mailer thread, under no lock: it only reads the registration
        and cancels its lease; the lease's end comes back through :meth:`end`.
        """
        record = self._records.get(event_id) if isinstance(event_id, int) else None  # the mailer's key
        if record is not None:
            log.info("listener of event registration %s is gone; cancelling it", event_id)
            try:
                self._cancel(record.cookie)
            except UnknownLeaseError:
                pass

    def close(self) -> None:
        """Stop delivering events."""
        self._mailer.close()

    # -- events -------------------------------------------------------------------------

    def fire(self, service_id: str, before: ServiceItem | None, after: ServiceItem | None,
             expiry: Expiry | None = None) -> None:
        """Send the events of one change of ``service_id``'s item from ``before`` to ``after``
        (``None``: not registered) to every live registration that wants its transition;
        ``expiry``: when the registration of ``after`` ends, sent with it."""
        now = self.clock.monotonic()
        for record in self._records.values():
            leased = record.leased
            if leased is None or leased.expiration <= now:
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
                if self._persist is not None:  # before posting: a restart never repeats a number sent
                    self._persist(record)
                event = ServiceEvent(record.event_id, record.sequence_number, record.handback, service_id,
                                     transition, after, expiry if after is not None else None)
                self._mailer.post(record.event_id, record.listener, event)

    # -- the store codec of event registrations -----------------------------------------

    def dump(self, record: EventRecord) -> dict[str, Any] | None:
        """What the store keeps of ``record``, or ``None`` (memory only) for an in-process listener."""
        if not isinstance(record.listener, str):
            return None  # an in-process listener cannot outlive the process
        return {"event_id": record.event_id, "template": record.template, "transitions": record.transitions,
                "listener": record.listener, "handback": record.handback,
                "sequence_number": record.sequence_number, "client": record.client}

    def load(self, data: Mapping[str, Any]) -> EventRecord:
        """A record (with no lease yet) back from what :meth:`dump` made of it.

        Raises:
            ValueError: not a stored event registration.
        """
        event_id, template, transitions = data.get("event_id"), data.get("template"), data.get("transitions")
        if not (isinstance(event_id, int) and isinstance(template, ServiceTemplate)
                and isinstance(transitions, int) and isinstance(data.get("listener"), str)
                and isinstance(data.get("sequence_number"), int) and isinstance(data.get("client", ""), str)):
            raise ValueError(f"not a stored lookup record: {sorted(data)!r:.200}")
        record = EventRecord(event_id, template, transitions, data["listener"], data.get("handback"))
        record.sequence_number = data["sequence_number"]
        record.client = data.get("client", "")  # stored before clients were: not known
        return record

    def restored(self, leased: LeasedResource) -> None:
        """Store a record taken back from the store with its lease, ``leased``.

        Raises:
            TypeError: ``leased`` is not an event registration's.
        """
        record = leased.resource
        if not isinstance(record, EventRecord):
            raise TypeError(f"not an event registration: {record!r:.80}")
        record.cookie, record.leased = leased.cookie, leased
        self._records[record.event_id] = record
