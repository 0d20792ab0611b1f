"""Keeping a service registered with one lookup service, for a :class:`~lookup.JoinManager`: :class:`JoinPeer`.

A keeper registers the service, keeps the registration's lease alive through
a :class:`~landlord.LeaseRenewalManager`, and registers it again, under the
same service id, whenever the lookup service loses it. One that cannot be
reached or refuses is retried, on the keeper's own thread, at delays growing
exponentially with jitter (:class:`~lookup.client.peer.PeerThread`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from collections.abc import Callable
from typing import Any

from landlord import FOREVER, Backoff, Clock, LeaseRenewalEvent, LeaseRenewalManager, PeerErrors

from ..item import ServiceItem
from ..registration import ServiceRegistration
from .peer import PeerThread, leader_proxy

__all__ = ["JoinPeer", "Joined"]

log = logging.getLogger("lookup.keeper")  # its name before it moved; logs and tests know it by it


class Joined:
    """What a manager's keepers share, guarded by its condition: the item, its secret, and who is assigning its id.

    Args:
        item: the item to register (its id ``None`` until one is assigned).
        secret: the registration secret its id came from (see :mod:`lookup.ownership`),
            if known: every registration sends it as the proof that the id is the service's.
    """

    __slots__ = ("item", "secret", "assigning", "times_registered")

    def __init__(self, item: ServiceItem, secret: str | None = None) -> None:
        self.item = item  # registered (and registered again) everywhere
        self.secret = secret  # set from the first registration when the lookup service assigns the id
        self.assigning: JoinPeer | None = None  # registering while no id is assigned: the others wait
        self.times_registered = 0  # successful registrations, re-registrations included


class JoinPeer:
    """Keeps ``joined.item`` registered with one lookup service, on a thread of its own.

    While the service has no id, one keeper registers at a time, so the id
    the first lookup service assigns is the one every other registers under.

    Args:
        uri: the lookup service's URI.
        joined: what the manager's keepers share.
        condition: the manager's condition, guarding ``joined``, ``errors``
            and the keeper's registration (notified on every change).
        renewals: keeps the registration's lease alive.
        lease_duration: the lease asked for on registering and on every renewal.
        backoff: the delays between failed attempts.
        errors: the manager's record of errors.
        clock: what retries are timed on.
        logger: the manager's logger: registrations and outages are logged there.
    """

    def __init__(self, uri: str, *, joined: Joined, condition: threading.Condition, renewals: LeaseRenewalManager,
                 lease_duration: float, backoff: Backoff, errors: PeerErrors, clock: Clock,
                 logger: logging.Logger = log) -> None:
        self.uri = uri
        self._joined = joined
        self._condition = condition
        self._renewals = renewals
        self._lease_duration = lease_duration
        self._logger = logger
        self._registration: ServiceRegistration | None = None
        self._stopped_with: ServiceRegistration | None = None  # the registration held when stopped: to end
        self._lost_cookie: str | None = None  # of the registration last lost here: it may still hold the id
        self._peer = PeerThread(uri, condition=condition, clock=clock, backoff=backoff, errors=errors,
                                logger=logger, name="JoinManager")

    def start(self) -> None:
        self._peer.start(self._plan, "keeping")

    # -- with the condition held ------------------------------------------------------------------

    @property
    def registration(self) -> ServiceRegistration | None:
        """The current registration there, ``None`` while there is none."""
        return self._registration

    def stop(self) -> None:
        """Stop keeping, holding on to the registration, if any, for :meth:`let_go` or :meth:`end`."""
        self._peer.stop()
        if self._registration is not None:
            self._stopped_with, self._registration = self._registration, None

    # -- without it ----------------------------------------------------------------------------

    def join(self) -> None:
        self._peer.join()

    def let_go(self) -> None:
        """After :meth:`stop`, the lookup service removed: the registration is no longer renewed,
        and not cancelled (it ends there when its lease runs out)."""
        self._logger.info("no longer keeping a registration with %s", self.uri)
        if self._stopped_with is not None:
            with contextlib.suppress(Exception):  # already dropped by the renewal manager
                self._renewals.remove(self._stopped_with.lease)

    def end(self, *, cancel: bool) -> None:
        """After :meth:`stop` and :meth:`join`, on closing: the registration is no longer renewed,
        and cancelled if ``cancel``, so the service leaves at once."""
        registration = self._stopped_with
        if registration is None:
            return
        try:
            self._renewals.remove(registration.lease)
        except Exception:
            pass  # already dropped by the renewal manager
        if cancel:
            try:
                registration.lease.cancel()
            except Exception as exc:  # the lookup service may be gone too
                self._logger.info("could not cancel %r: %s", registration, exc)

    def update(self, registration: ServiceRegistration, method: str, *args: Any) -> None:
        """Change the attributes of ``registration`` there (``method``: ``"add_attributes"``, ...);
        if that fails, the registration is stale: register the new item there."""
        try:
            getattr(registration, method)(*args)
        except Exception as exc:
            self._logger.info("changing attributes at %s failed (%s); registering again", self.uri, exc)
            self._lost(registration, exc)

    def _plan(self, now: float) -> Callable[[], object] | float:
        """The thread's next step: register when there is no registration and it is due."""
        joined = self._joined
        if self._registration is not None:
            return math.inf
        if joined.item.service_id is None and joined.assigning not in (None, self):
            return math.inf  # another lookup service is assigning the id; wait for it, so there is one id
        if now < self._peer.due:
            return self._peer.due
        if joined.item.service_id is None:
            joined.assigning = self
        item = joined.item  # read anew: the first registration may just have assigned the id
        proof = self._proof()
        return lambda: self._register_then_release(item, proof)

    def _proof(self) -> str | None:
        """What proves the id is the service's (with the condition held): its secret; else the
        cookie of the registration lost here, which may still hold an id the service chose."""
        if self._joined.item.service_id is None:
            return None
        return self._joined.secret if self._joined.secret is not None else self._lost_cookie

    def _register_then_release(self, item: ServiceItem, proof: str | None) -> None:
        try:
            self._register(item, proof)
        finally:
            with self._condition:
                if self._joined.assigning is self:
                    self._joined.assigning = None
                    self._condition.notify_all()

    def _register(self, item: ServiceItem, proof: str | None) -> None:
        # no proof, no third argument: a lookup service from before proofs takes this call too
        proved = () if proof is None else (proof,)
        try:
            registration = leader_proxy(self.uri).register(item, self._lease_duration, *proved)
        except Exception as exc:  # unreachable, or refused (NotOwnerError too): keep trying, it may change its mind
            with self._condition:
                self._peer.retry_later(exc)
            self._peer.failed(exc, "register with")
            return
        joined = self._joined
        with self._condition:
            stale = self._peer.stopped or self._registration is not None
            if not stale:
                self._registration = registration
                self._lost_cookie = None
                self._peer.reached()
                joined.times_registered += 1
                if joined.item.service_id is None:
                    joined.item = joined.item.replace(service_id=registration.service_id)
                    joined.secret = registration.secret  # None from a lookup service before secrets
                self._condition.notify_all()
        if stale:
            try:
                registration.lease.cancel()
            except Exception:
                pass
            return
        self._peer.recovered()
        self._logger.info("registered %s with %s", registration.service_id, self.uri)
        # renew_duration: every renewal asks for the term given, so a dead service is gone within it
        self._renewals.renew_for(registration.lease, FOREVER, self._lost_event, renew_duration=self._lease_duration)

    def _lost_event(self, event: LeaseRenewalEvent) -> None:
        with self._condition:
            registration = self._registration
        if registration is not None and event.lease is registration.lease:
            self._lost(registration, event.exception)

    def _lost(self, registration: ServiceRegistration, error: BaseException | None) -> None:
        """``registration`` is gone (or stale): register again there, at once."""
        with self._condition:
            if self._peer.stopped or self._registration is not registration:
                return
            self._registration = None
            self._lost_cookie = registration.lease.cookie
            self._peer.retry_now(error)
        try:
            self._renewals.remove(registration.lease)
        except Exception:
            pass  # the renewal manager dropped it already
        self._peer.lost(error, "the registration with", "registering")
