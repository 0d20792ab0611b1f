"""Remote events of the lookup service: what they carry, and how they are delivered.

A client registers interest in the services matching a template (``notify``)
and names a listener: a Pyro5 object in its own process with a
``notify(event)`` method. The :class:`EventMailer` delivers each listener's
events in order, on its own worker threads, so a slow or dead listener never
holds up a request thread of the lookup service.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
from collections.abc import Callable, Hashable
from typing import Any

import Pyro5.errors

from landlord import SYSTEM_CLOCK, Clock, Lanes, discard_proxy, proxy_for

from .item import Expiry

__all__ = [
    "TRANSITION_MATCH_NOMATCH", "TRANSITION_NOMATCH_MATCH", "TRANSITION_MATCH_MATCH", "ALL_TRANSITIONS",
    "ServiceEvent", "EventRegistration", "EventMailer", "DeliveryObserver",
]

log = logging.getLogger(__name__)

TRANSITION_MATCH_NOMATCH = 1  # an item that matched no longer does (changed, cancelled, or expired)
TRANSITION_NOMATCH_MATCH = 2  # an item now matches that did not (new, or changed)
TRANSITION_MATCH_MATCH = 4    # an item that matched still does, but changed
ALL_TRANSITIONS = TRANSITION_MATCH_NOMATCH | TRANSITION_NOMATCH_MATCH | TRANSITION_MATCH_MATCH


@dataclasses.dataclass(frozen=True, slots=True, eq=False)  # eq=False: equal only to itself, as before
class ServiceEvent:
    """A change to the services matching an event registration's template.

    Args:
        event_id: the registration this event belongs to.
        sequence_number: increases by one with every event of the registration.
        handback: what the client gave when registering, returned unchanged.
        service_id: the service that changed.
        transition: one of the ``TRANSITION_*`` constants.
        item: the service item as it is now, or ``None`` once it is gone.
        expiry: when the item's registration ends (with ``item``; ``None``: not known,
            as from a lookup service before expiries were sent).
    """

    event_id: int
    sequence_number: int
    handback: Any = dataclasses.field(repr=False)  # the client's own: of any size
    service_id: str
    transition: int
    item: Any = dataclasses.field(repr=False)
    expiry: Expiry | None = dataclasses.field(default=None, repr=False)


@dataclasses.dataclass(frozen=True, slots=True, eq=False)  # eq=False: equal only to itself, as before
class EventRegistration:
    """The answer to ``notify``: the registration's id, its lease, and the sequence number so far.

    Args:
        event_id: identifies the registration; every event of it carries this id.
        lease: the registration's lease; cancel it, or stop renewing it, to stop the events.
        sequence_number: the number of the last event before this registration.
    """

    event_id: int
    lease: Any
    sequence_number: int = dataclasses.field(repr=False)


class DeliveryObserver:
    """Told how a mailer's deliveries go (for metrics: see :class:`lookup.server.LookupMetrics`);
    every method does nothing unless overridden. Called on a mailer thread, once per attempt:
    it must be quick, and what it raises is logged and changes no delivery."""

    def delivered(self) -> None:
        """An event reached its listener (one whose ``notify`` raised counts: it was reached)."""

    def failed(self) -> None:
        """An attempt could not reach the listener (it is tried again, unless given up on)."""

    def gave_up(self) -> None:
        """A listener was given up on after its last retry: its registration ends."""


class EventMailer:
    """Delivers events to listeners: in order per registration, never on the caller's thread.

    Each registration (``key``) is a :class:`~landlord.lanes.Lanes` lane, so
    its listener gets its events in order while different listeners proceed
    in parallel on a few worker threads. A listener that cannot be reached is
    tried again after each delay in ``retry_delays``; after the last, its mail
    is dropped and ``on_undeliverable(key)`` is called, once. An exception
    raised by the listener's own ``notify`` is logged and the event counts as
    delivered.

    Args:
        on_undeliverable: called with the key of a listener given up on.
        workers: number of delivery threads.
        retry_delays: seconds to wait before each retry of an unreachable listener.
        clock: what the retry delays are measured on.
        observer: told of each delivery, failed attempt and listener given up on
            (a :class:`DeliveryObserver`); the attribute ``observer`` may be set later.

    Raises:
        ValueError: ``workers`` is not a positive integer, or a delay is negative.
    """

    def __init__(self, *, on_undeliverable: Callable[[Hashable], None] | None = None, workers: int = 8,
                 retry_delays: tuple[float, ...] = (0.1, 0.5, 2.0), clock: Clock = SYSTEM_CLOCK,
                 observer: DeliveryObserver | None = None) -> None:
        if not all(delay >= 0 for delay in retry_delays):
            raise ValueError(f"retry delays must not be negative, got {retry_delays!r}")
        self.observer = observer
        self._on_undeliverable = on_undeliverable
        self._retry_delays = tuple(retry_delays)
        self._clock = clock
        self._lanes = Lanes(workers=workers, name="EventMailer")
        self._lock = threading.Lock()
        self._closing = threading.Condition(self._lock)  # retry pauses end early on close
        self._closed = False
        self._given_up: set[Hashable] = set()

    def post(self, key: Hashable, listener: Any, event: ServiceEvent) -> None:
        """Queue ``event`` for ``listener`` (a Pyro5 URI, or an object with ``notify``); never blocks."""
        self._lanes.submit(key, functools.partial(self._deliver, key, listener, event))

    def forget(self, key: Hashable) -> None:
        """Drop the mail of a registration that has ended."""
        self._lanes.discard(key)
        with self._lock:
            self._given_up.discard(key)

    def pending(self) -> int:
        """How many events wait to be delivered (being delivered included)."""
        return self._lanes.pending()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every queued event is delivered or dropped; return whether that happened."""
        return self._lanes.wait_idle(timeout)

    def close(self) -> None:
        """Stop delivering; undelivered mail is dropped."""
        with self._lock:
            self._closed = True
            self._closing.notify_all()
        self._lanes.close()

    def _deliver(self, key: Hashable, listener: Any, event: ServiceEvent) -> None:
        with self._lock:
            if key in self._given_up:
                return
        for attempt in range(len(self._retry_delays) + 1):
            try:
                _call_notify(listener, event)
                self._tell("delivered")
                return
            except Pyro5.errors.CommunicationError as exc:
                self._tell("failed")
                if attempt == len(self._retry_delays) or not self._pause(self._retry_delays[attempt]):
                    log.info("giving up on the listener of registration %r: %s", key, exc)
                    self._tell("gave_up")
                    self._give_up(key)
                    return
            except Exception:
                self._tell("delivered")
                log.warning("the listener of registration %r raised on %r", key, event, exc_info=True)
                return

    def _tell(self, outcome: str) -> None:
        observer = self.observer
        if observer is None:
            return
        try:
            getattr(observer, outcome)()
        except Exception:
            log.exception("the delivery observer %r failed", observer)

    def _give_up(self, key: Hashable) -> None:
        with self._lock:
            self._given_up.add(key)
        self._lanes.discard(key)
        if self._on_undeliverable is not None:
            try:
                self._on_undeliverable(key)
            except Exception:
                log.exception("on_undeliverable failed for %r", key)

    def _pause(self, seconds: float) -> bool:
        """Wait ``seconds`` on the clock; False if the mailer closed meanwhile."""
        deadline = self._clock.monotonic() + seconds
        with self._closing:
            while not self._closed and self._clock.monotonic() < deadline:
                self._clock.wait(self._closing, deadline)
            return not self._closed


def _call_notify(listener: Any, event: ServiceEvent) -> None:
    if not isinstance(listener, str):
        listener.notify(event)
        return
    try:
        proxy_for(listener).notify(event)
    except Pyro5.errors.CommunicationError:
        discard_proxy(listener)  # reconnect on the next try
        raise
