"""Following one lookup service for a :class:`~lookup.LookupCache`: :class:`CachePeer`.

The follower asks the lookup service for events about the template *before*
it takes a snapshot with ``lookup_all`` (in parts, if the answer is long:
:func:`whole_snapshot`), holds back the events that arrive
while the snapshot is on its way, and replays them over it. Events carry the
whole item as it now is, so replaying them in order always ends at the
current state. A gap in the events' sequence numbers, or the event
registration lost (it could not be renewed), makes it subscribe and take a
snapshot anew, retrying at delays growing exponentially with jitter.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import uuid
from collections.abc import Callable
from typing import Any

import Pyro5.errors

from landlord import (
    FOREVER,
    SYSTEM_CLOCK,
    Backoff,
    Clock,
    LeaseRenewalEvent,
    LeaseRenewalManager,
    PeerErrors,
    UnknownLeaseError,
    timeout_within,
)

from ..events import ALL_TRANSITIONS, TRANSITION_MATCH_NOMATCH, ServiceEvent
from ..item import Expiry, ServiceItem, ServiceMatches, ServiceTemplate
from .peer import PeerThread, leader_proxy
from .view import MergedView

__all__ = ["CachePeer", "MAX_SNAPSHOT", "PROBE_TIMEOUT", "whole_snapshot"]

log = logging.getLogger("lookup.follower")  # its name before it moved; logs and tests know it by it

MAX_SNAPSHOT = 100_000
PROBE_TIMEOUT = 2.0  # seconds for a doubted lookup service to answer whether it is there (at most lease_duration)


class CachePeer:
    """Keeps one lookup service's listing in a :class:`MergedView` current, on a thread of its own.

    Everything but the thread's own bookkeeping is guarded by ``condition``,
    the cache's, which also guards ``view`` and ``errors``.

    Args:
        uri: the lookup service's URI.
        template: which services to follow.
        view: where its listing goes.
        condition: the cache's condition (notified on every change).
        sink_uri: the URI to hand the lookup service behind a proxy for its events.
        tell: tells the cache's listener of the view's changes (called without the lock).
        renewals: keeps the event registration's lease alive.
        lease_duration: the event registration's lease, asked for on every renewal.
        backoff: the delays between failed attempts to subscribe.
        errors: the cache's record of errors.
        clock: what retries are timed on.
        logger: the cache's logger: outages are logged there.
    """

    def __init__(self, uri: str, *, template: ServiceTemplate, view: MergedView, condition: threading.Condition,
                 sink_uri: Callable[[Any], str], tell: Callable[[], None], renewals: LeaseRenewalManager,
                 lease_duration: float, backoff: Backoff, errors: PeerErrors, clock: Clock,
                 logger: logging.Logger = log) -> None:
        self.uri = uri
        self._template = template
        self._view = view
        self._condition = condition
        self._sink_uri = sink_uri
        self._tell = tell
        self._renewals = renewals
        self._lease_duration = lease_duration
        self._logger = logger
        self._clock = clock
        self._peer = PeerThread(uri, condition=condition, clock=clock, backoff=backoff, errors=errors,
                                logger=logger, name="LookupCache")
        self._token: str | None = None  # the handback events are routed here by, while routed
        self._last_sequence = 0
        self._held: list[ServiceEvent] | None = None  # events arriving while a snapshot is taken
        self._event_lease: Any = None
        self._stopped_with: Any = None  # the event registration's lease held when stopped: to end
        self._needs_sync = True  # subscribe (again) and take a fresh snapshot
        self._subscribed = False  # its subscription is live and its snapshot in

    def start(self) -> None:
        self._peer.start(self._plan, "following")

    # -- with the condition held ------------------------------------------------------------------

    @property
    def subscribed(self) -> bool:
        """Whether its subscription is live, with the snapshot in."""
        return self._subscribed

    def receive(self, event: ServiceEvent) -> bool:
        """Take ``event`` if it is this subscription's; return whether it was applied to the view now
        (rather than held back for a snapshot on its way, or not this subscription's)."""
        if self._token is None or event.handback != self._token:
            return False  # an earlier subscription's, or someone else's
        if self._held is not None:
            self._held.append(event)
            return False
        self._apply(event)
        return True

    def stop(self) -> None:
        """Stop following, holding on to the event registration's lease, if any, for :meth:`let_go` or :meth:`end`."""
        self._peer.stop()
        self._token = None
        if self._event_lease is not None:
            self._stopped_with, self._event_lease = self._event_lease, None

    # -- without it ----------------------------------------------------------------------------

    def join(self) -> None:
        self._peer.join()

    def let_go(self) -> None:
        """After :meth:`stop`, the lookup service removed (and its listing gone from the view): the
        event registration is no longer renewed, and not cancelled; the listener hears what changed."""
        self._logger.info("no longer following %s", self.uri)
        if self._stopped_with is not None:
            with contextlib.suppress(Exception):  # already dropped
                self._renewals.remove(self._stopped_with)
        self._tell()

    def end(self, *, cancel: bool) -> None:
        """After :meth:`stop` and :meth:`join`, on closing: the event registration is no longer renewed,
        and cancelled if ``cancel``."""
        lease = self._stopped_with
        if lease is None:
            return
        try:
            self._renewals.remove(lease)
        except Exception:
            pass  # already dropped
        if cancel:
            try:
                lease.cancel()
            except Exception as exc:
                self._logger.info("could not cancel an event registration: %s", exc)

    def _plan(self, now: float) -> Callable[[], object] | float:
        """The thread's next step: forget a lost lookup service's orphans in time, subscribe when due."""
        orphan_deadline = self._view.orphan_deadline(self.uri)
        if now >= orphan_deadline:
            if self._view.forget_orphans(self.uri):
                self._logger.info("%s lost: its registrations there have run out (or %g s passed): "
                                  "no longer showing what only it listed of them", self.uri, self._view.orphan_timeout)
            self._condition.notify_all()
            return self._tell
        if self._needs_sync and now >= self._peer.due:
            return self._subscribe_or_retry
        if self._subscribed and self._view.doubted(self.uri):
            self._view.settle(self.uri)
            return self._probe
        return min(self._peer.due if self._needs_sync else math.inf, orphan_deadline)

    def _subscribe_or_retry(self) -> None:
        try:
            self._subscribe()
        except Exception as exc:  # unreachable or refused: try again in a while
            with self._condition:
                if self._peer.stopped:
                    return
                if self._held is not None:  # no longer on its way: stop routing its events here
                    self._token = self._held = None
                self._peer.retry_later(exc)
            self._peer.failed(exc, "subscribe to")
        self._tell()

    def _subscribe(self) -> None:
        token = uuid.uuid4().hex
        with self._condition:
            self._token, self._last_sequence, self._held = token, 0, []
        proxy = leader_proxy(self.uri)
        sink_uri = self._sink_uri(proxy)
        registration = proxy.notify(self._template, ALL_TRANSITIONS, sink_uri, token, self._lease_duration)
        try:
            snapshot = whole_snapshot(proxy, self._template, self._clock)
        except BaseException:
            _cancel_quietly(registration.lease)
            raise
        with self._condition:
            if self._peer.stopped:
                stale = registration.lease
            else:
                stale, self._event_lease = self._event_lease, registration.lease
                self._last_sequence = registration.sequence_number
                self._view.replace_listing(self.uri, *_listing(snapshot))
                held, self._held = self._held or [], None
                for event in sorted(held, key=lambda e: e.sequence_number):
                    self._apply(event)
                self._needs_sync = False
                self._subscribed = True
                self._peer.reached()
                self._condition.notify_all()
        if stale is registration.lease:
            _cancel_quietly(stale)
            return  # stopped meanwhile
        if stale is not None:  # the subscription this one replaces (after a gap in the events)
            try:
                self._renewals.remove(stale)
            except Exception:
                pass  # lost meanwhile: already dropped
            _cancel_quietly(stale)
        if not self._peer.recovered():
            self._logger.debug("subscribed to %s: %d item(s)", self.uri, len(snapshot.items))
        # renew_duration: each renewal asks for the term given, not the lookup service's maximum
        self._renewals.renew_for(registration.lease, FOREVER, self._lost, renew_duration=self._lease_duration)

    def _probe(self) -> None:
        """Another lookup service said gone what this one lists: is this one still there? Renew the
        event registration now, within ``PROBE_TIMEOUT``; one that cannot be reached (or has forgotten
        the registration) is lost now, not at the end of the registration's lease, up to
        ``lease_duration`` later: meanwhile its copy would keep a dead service shown."""
        with self._condition:
            lease = self._event_lease
        if lease is None:
            return
        try:
            with timeout_within(min(PROBE_TIMEOUT, self._lease_duration)):
                lease.renew(self._lease_duration)
        except (Pyro5.errors.CommunicationError, UnknownLeaseError) as exc:
            with contextlib.suppress(Exception):  # dropped already
                self._renewals.remove(lease)
            self._lose(lease, exc)
            self._tell()
        except Exception as exc:  # it answered: it is there
            self._logger.debug("%s answered a renewal with %r: it is there", self.uri, exc)

    def _lost(self, event: LeaseRenewalEvent) -> None:
        """The event registration could not be renewed: subscribe again, at once; keep the listing a while."""
        self._lose(event.lease, event.exception)

    def _lose(self, lease: Any, error: BaseException | None) -> None:
        """The event registration ``lease`` is lost (``error``: why): subscribe again, at once;
        keep the listing a while."""
        with self._condition:
            if self._peer.stopped or lease is not self._event_lease:
                return
            self._event_lease = None
            self._needs_sync = True
            self._subscribed = False
            self._view.lost(self.uri)
            if self._held is None:  # else the token is a new subscription's, on its way: keep routing it
                self._token = None
            self._peer.retry_now(error)
        self._peer.lost(error, "the event registration at", "subscribing")

    def _apply(self, event: ServiceEvent) -> None:
        """Apply one event in order (call with the condition held)."""
        if event.sequence_number <= self._last_sequence:
            return  # seen already
        if event.sequence_number != self._last_sequence + 1:
            self._needs_sync = True  # a gap: something was missed, take a fresh snapshot
            self._peer.retry_now()
        self._last_sequence = event.sequence_number
        if event.transition == TRANSITION_MATCH_NOMATCH or event.item is None:
            self._view.unlist(self.uri, event.service_id)
        else:
            self._view.report(self.uri, event.service_id, event.item, event.expiry)


def whole_snapshot(proxy: Any, template: ServiceTemplate, clock: Clock = SYSTEM_CLOCK) -> ServiceMatches:
    """Every item matching ``template`` (at most ``MAX_SNAPSHOT``), with their expiries: the
    lookup service's answer, and the rest of a long one, asked for after its cursor until none
    is left out. What changes between the parts, the events held back meanwhile put right. Each
    part's expiries are made as of the last part's arrival (on ``clock``'s monotonic time), since
    whoever reads them counts from then.

    Raises:
        What ``proxy.lookup_all`` raises (a cursor refused: the lookup service restarted, or
        another replica leads: the snapshot is taken anew).
    """
    answer = proxy.lookup_all(template, MAX_SNAPSHOT)
    parts, total, taken = [(answer, clock.monotonic())], answer.total, len(answer.items)
    while answer.cursor is not None and taken < MAX_SNAPSHOT:
        answer = proxy.lookup_all(template, MAX_SNAPSHOT - taken, answer.cursor)
        if not answer.items:
            break  # a server that moves on by nothing: what it gave is all there is
        parts.append((answer, clock.monotonic()))
        taken += len(answer.items)
    last = parts[-1][1]
    items = [item for part, _ in parts for item in part.items]
    expiries = [expiry for part, arrived in parts for expiry in _expiries_of(part, last - arrived)]
    return ServiceMatches._made(items, max(total, len(items)), expiries)


def _expiries_of(answer: ServiceMatches, since: float = 0.0) -> list[Expiry | None]:
    """An answer's expiries, one per item (``None`` each when it sent none), ``since`` seconds on."""
    if answer.expiries is None:
        return [None] * len(answer.items)
    return [expiry if expiry is None or not since else Expiry(max(0.0, expiry.remaining - since), expiry.term)
            for expiry in answer.expiries]


def _listing(snapshot: ServiceMatches) -> tuple[dict[str, ServiceItem], dict[str, Expiry]]:
    """A snapshot's items by service id, and their expiries where known (by service id too)."""
    items = {item.service_id: item for item in snapshot.items if item.service_id}
    expiries = {item.service_id: expiry for item, expiry in zip(snapshot.items, snapshot.expiries or ())
                if item.service_id and expiry is not None}
    return items, expiries


def _cancel_quietly(lease: Any) -> None:
    try:
        lease.cancel()
    except Exception:
        pass  # it runs out by itself
