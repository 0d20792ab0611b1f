"""A lease renewal service, after Jini's Norm: :class:`LeaseRenewalService`.

A process that must sleep, or has no thread to spare, hands its leases to a
renewal service and may exit; the service renews them, batched per landlord
(one :class:`~landlord.LeaseRenewalManager`), until each one's desired
expiration. Leases are held in *renewal sets*. A set is itself a lease from
the service: while its holder renews it, the service renews the set's
leases; once it ends (expired or cancelled), the service stops, and the
leases end within their own terms, as if their holder had died. Nothing is
cancelled for the holder.

Listeners are Pyro5 objects the holder names by URI (see
:class:`~landlord.renewalservice.client.RenewalSetListener`):

* ``renewal_failed(set_id, lease, reason)``: a lease of the set was denied
  or lost (its landlord refused, or could not be reached for its whole
  term); it has left the set;
* ``expiration_warning(set_id, lease, expiration)``: the set's own lease
  (``lease``, as Jini's warning carries it) ends at ``expiration`` (wall
  clock), ``warn_before`` seconds from now; renew it to keep the set. Once
  per term of the set's lease. The listener so gets the capability to renew
  the set: name one you trust with it.

Events go out best effort, from a few threads of their own, one listener
address (host and port) at a time (:class:`SetEvents`): a listener that hangs
holds up only the events to its own address, never one that took its last
event, and once a delivery there has failed, events to that address are skipped (logged) for ``SKIP_AFTER_FAILURE``
seconds, so a stranger's listener that never answers costs one delivery
timeout a while, not one per event. A set is named to listeners by its
``set_id``, never by the cookie of its lease, which is the capability to
change it.

A service takes only what it may renew (:class:`RenewalLimits`): a client,
known by the host its calls come from (the peer address of its connection:
:func:`client_of_call`), may hold so many sets, each of so many leases, and
so many leases in all; the sets a client makes count against it whoever adds
to them. A lease is renewed on its landlord's address's lane
(:class:`~landlord.holder.renewal.Endpoints`), so one set's dead or hung landlords
hold up no other's. Every URI the service
will call is checked first: a lease's landlord (each of a replicated
landlord's group) must be a ``PYRO:`` URI (:func:`check_pyro_uri`), at one of
``landlord_hosts`` when the service is given them, and a listener a callback
the service takes (:meth:`~landlord.Landlord.check_callback`, with its
``callback_hosts``). A
refusal is a clear error (``ValueError``, or ``TypeError`` for a thing of
the wrong kind) and changes nothing.

With a ``store`` (an SQLite file), the sets, their listeners and their
leases survive a restart: the set leases come back with their remaining
terms (:mod:`landlord.grantor.store`), and every member is renewed at once, since
its landlord's clock went on meanwhile.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import itertools
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any

import Pyro5.api
import Pyro5.callcontext
import Pyro5.core
import Pyro5.server

from ..clock import SYSTEM_CLOCK, Clock
from ..duration import FOREVER, check_duration
from ..errors import UnknownLeaseError
from ..grantor.landlord import Landlord
from ..grantor.policy import LeaseDurationPolicy, LeasePolicy
from ..grantor.revocations import NOTICE_TIMEOUT
from ..grantor.store import LeaseStore
from ..holder.landlordlease import MAX_URI_LENGTH, LandlordLease
from ..holder.renewal import (
    ANSWERING,
    FAILING,
    UNHEARD,
    Endpoints,
    LeaseRenewalEvent,
    LeaseRenewalManager,
    renew_duration_for,
)
from ..holder.schedule import RENEW_AFTER
from ..lease import AbstractLease, Lease
from ..transport.callbacks import check_hosts, host_key, parse_pyro_uri
from ..transport.clients import IN_PROCESS, IPV6_CLIENT_PREFIX, UNIX_SOCKET, client_of_call
from ..transport.lanes import Lanes
from .ledger import SetLedger
from .sets import Member, RenewalSet, SetStore

__all__ = ["LeaseRenewalService", "RenewalLimits", "SetEvents", "SERVICE_OBJECT_ID", "DEFAULT_PORT", "MAX_MEMBERS",
           "DEFAULT_SET_LEASE", "MAX_SET_LEASE", "SETS_PER_CLIENT", "LEASES_PER_CLIENT", "IN_PROCESS", "UNIX_SOCKET",
           "IPV6_CLIENT_PREFIX",
           "check_pyro_uri", "client_of_call"]

log = logging.getLogger("landlord.renewalservice")  # its name before it moved into renewalservice/

SERVICE_OBJECT_ID = "landlord.RenewalService"  # fixed, so host and port are enough to reach it
DEFAULT_PORT = 4162  # beside the lookup service's 4160
MAX_MEMBERS = 10_000  # leases one set may hold (by default)
SETS_PER_CLIENT = 16  # sets one client may hold (by default)
LEASES_PER_CLIENT = 10_000  # leases one client's sets may hold together (by default)
SKIP_AFTER_FAILURE = 30.0  # seconds events to a listener's address are skipped after a delivery there failed
EVENT_WORKERS = 2  # listener addresses that took their last event, told at once
UNHEARD_EVENT_WORKERS = 4  # listener addresses not yet tried, told at once (and one failing)
DEFAULT_SET_LEASE = 600.0  # seconds a set's lease runs when ANY is asked
MAX_SET_LEASE = 3600.0  # the longest a set's lease is granted for


@dataclasses.dataclass(frozen=True, slots=True)
class RenewalLimits:
    """What one client may hold in a :class:`LeaseRenewalService`, and where its leases may lead.

    Args:
        sets_per_client: renewal sets one client may hold at once.
        leases_per_set: leases one set may hold.
        leases_per_client: leases all of one client's sets may hold together.
        landlord_hosts: the hosts a lease's landlord may be at, compared with the
            host of its URI as written, ignoring case (no name is resolved);
            ``None``: any host.

    Raises:
        TypeError: a limit that is not an ``int``, or hosts that are not strings.
        ValueError: a limit below 1, or an empty host.
    """

    sets_per_client: int = SETS_PER_CLIENT
    leases_per_set: int = MAX_MEMBERS
    leases_per_client: int = LEASES_PER_CLIENT
    landlord_hosts: frozenset[str] | None = None

    def __post_init__(self) -> None:
        for name in ("sets_per_client", "leases_per_set", "leases_per_client"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if self.landlord_hosts is not None:
            object.__setattr__(self, "landlord_hosts", _hosts(self.landlord_hosts))


def _hosts(hosts: Iterable[str]) -> frozenset[str]:
    """Landlord hosts as a URI's host is compared with them (:func:`landlord.transport.callbacks.check_hosts`)."""
    checked = check_hosts(hosts, "landlord")
    assert checked is not None  # given hosts, never None
    return checked


def check_pyro_uri(uri: object, what: str, *, hosts: frozenset[str] | None = None,
                   max_length: int = MAX_URI_LENGTH) -> str:
    """``uri`` if the service may call it: a ``PYRO:`` URI (a ``PYRONAME:`` or ``PYROMETA:``
    one would send it to a name server), at most ``max_length`` characters, at one of
    ``hosts`` when they are given (lower-cased; ``None``: any host).

    The renewal service's rule for the landlords of the leases it is handed (a
    landlord on a Unix socket of the service's host is taken when no hosts are
    given). Its listeners are held to the rule every server's callbacks are,
    :meth:`~landlord.Landlord.check_callback`.

    Raises:
        TypeError: ``uri`` is not a ``str`` (or ``Pyro5.core.URI``).
        ValueError: it is too long, malformed, not ``PYRO:``, or at a host not among ``hosts``.
    """
    if isinstance(uri, Pyro5.core.URI):
        uri = str(uri)
    if not isinstance(uri, str):
        raise TypeError(f"{what} must be a PYRO: URI, got {type(uri).__name__}")
    parsed = parse_pyro_uri(uri, what, max_length=max_length)
    if hosts is not None and host_key(parsed.host or "") not in hosts:
        raise ValueError(f"{what} is at {parsed.host!r:.80}, which this service does not renew with "
                         f"(its landlord hosts: {', '.join(sorted(hosts))})")
    return uri


class SetEvents:
    """Calls listeners' remote methods for a renewal service, so that no listener holds up another's.

    One lane per listener address (host and port: :mod:`landlord.transport.lanes`), so
    events to one listener arrive in order and a listener that hangs holds up
    only its own address; and, as the renewal manager's calls
    (:class:`~landlord.holder.renewal.Endpoints`), addresses that took their last
    event have ``workers`` threads of their own, those not yet tried
    ``UNHEARD_EVENT_WORKERS``, and those whose last delivery failed one, so no
    number of hung listeners delays an event to one that answers. A delivery that fails (unreachable,
    or no answer within ``timeout``) is logged at WARNING, and events to that
    address posted in the next ``skip_for`` seconds are skipped, each logged,
    without a call. Best effort, like :class:`~landlord.grantor.revocations.Notices`.

    Args:
        clock: times the skipping.
        timeout: the most one delivery may take, in seconds.
        skip_for: how long an address that failed is skipped.
        workers: the most deliveries under way at once to addresses that took their last event.

    Raises:
        ValueError: ``workers`` is not a positive integer.
    """

    def __init__(self, clock: Clock = SYSTEM_CLOCK, *, timeout: float = NOTICE_TIMEOUT,
                 skip_for: float = SKIP_AFTER_FAILURE, workers: int = EVENT_WORKERS) -> None:
        self._clock = clock
        self._timeout = timeout
        self._skip_for = skip_for
        self._lock = threading.Lock()
        self._failed: dict[str, float] = {}  # address -> until when it is skipped (monotonic)
        self._standing = Endpoints()  # under the lock: how each address took its last event
        self._pools: dict[str, Lanes] = {}
        try:
            for standing, count in ((ANSWERING, workers), (UNHEARD, UNHEARD_EVENT_WORKERS), (FAILING, 1)):
                self._pools[standing] = Lanes(workers=count, name=f"RenewalServiceEvents-{standing}")
        except BaseException:
            for pool in self._pools.values():
                pool.close()
            raise

    def post(self, listener: str, method: str, args: tuple[Any, ...], about: str) -> None:
        """Call ``method(*args)`` on the Pyro5 object at ``listener`` (a checked ``PYRO:`` URI), soon."""
        address = _address(listener)
        with self._lock:
            standing = self._standing.standing(address)
        self._submit(address, standing, functools.partial(self._deliver, address, listener, method, args, about))

    def wait_idle(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` real seconds in all) until no event is queued or under way;
        return whether that happened in time."""
        end = time.monotonic() + timeout
        # an event may move from one pool to another: idle only when all are, seen one after the other
        while True:
            if not all(pool.wait_idle(max(0.0, end - time.monotonic())) for pool in self._pools.values()):
                return False
            if all(pool.pending() == 0 for pool in self._pools.values()):
                return True

    def close(self, wait: float = NOTICE_TIMEOUT) -> None:
        """Send what is queued, waiting at most ``wait`` seconds in all; drop the rest."""
        self.wait_idle(wait)
        for pool in self._pools.values():
            pool.close()

    def _submit(self, address: str, standing: str, deliver: Any) -> None:
        self._pools[standing].submit(address, functools.partial(self._in_turn, address, standing, deliver))

    def _in_turn(self, address: str, standing: str, deliver: Any) -> None:
        """Deliver now, or move to the pool of the address's standing if it changed since it was queued."""
        with self._lock:
            now_standing = self._standing.standing(address)
        if now_standing != standing:
            self._submit(address, now_standing, deliver)
        else:
            deliver()

    def _deliver(self, address: str, listener: str, method: str, args: tuple[Any, ...], about: str) -> None:
        now = self._clock.monotonic()
        with self._lock:
            skipped = self._failed.get(address, -math.inf) > now
        if skipped:
            log.warning("did not tell %s that %s: a delivery there failed in the last %g s", listener, about,
                        self._skip_for)
            return
        try:  # a connection of its own, closed after: listeners are many, events rare
            with Pyro5.api.Proxy(listener) as proxy:
                proxy._pyroTimeout = self._timeout
                getattr(proxy, method)(*args)
        except Exception as exc:
            log.warning("could not tell %s that %s (%s: %s); events to %s are skipped for %g s", listener, about,
                        type(exc).__name__, exc, address, self._skip_for)
            with self._lock:
                self._standing.heard(address, answered=False)
                if len(self._failed) >= _FAILED_ADDRESSES:
                    self._failed = {a: t for a, t in self._failed.items() if t > now}
                self._failed[address] = self._clock.monotonic() + self._skip_for
        else:
            with self._lock:
                self._standing.heard(address, answered=True)


_FAILED_ADDRESSES = 4096  # failed addresses remembered before those no longer skipped are forgotten


def _address(uri: str) -> str:
    """The host and port (or socket path) a checked ``PYRO:`` URI names."""
    try:
        return str(Pyro5.core.URI(uri).location or uri)
    except Exception:
        return uri


class LeaseRenewalService(Landlord):
    """Keeps other processes' leases alive in renewal sets (see the module docstring).

    A :class:`~landlord.Landlord` whose resources are renewal sets: serve it
    with :func:`landlord.serving.serve_landlord` under :data:`SERVICE_OBJECT_ID`
    (``python -m landlord renewal-service`` does), and a set's lease is
    renewed and cancelled like any other.

    Remote methods, beside a landlord's: :meth:`create_set`, :meth:`renew_for`,
    :meth:`remove`, :meth:`leases`, :meth:`set_failure_listener`, :meth:`set_warning_listener`.

    What it holds (the sets, the set each lease is in, what each client holds) is kept,
    under its lock, by a :class:`~landlord.renewalservice.ledger.SetLedger`; the service
    decides, renews, warns and tells.

    Args:
        policy: the terms of the sets' own leases (default: up to an hour, 10 min when ``ANY``).
        clock: times the sets' leases, the warnings and the renewals.
        store: an SQLite file to keep the sets in (``None``: in memory only).
        renewal_manager: renews the sets' leases (default: one of the service's own, closed with it).
        reaper: how ended sets are found (see :class:`~landlord.LeaseManager`).
        callback_hosts: the only hosts its clients' listeners may name (``None``: any;
            see :meth:`~landlord.Landlord.check_callback`).
        limits: what one client may hold, and where its leases may lead (default: :class:`RenewalLimits`'s).

    Raises:
        TypeError: ``limits`` is not a :class:`RenewalLimits`.
        sqlite3.Error, StoreInUseError: the store cannot be opened, or another service has it open.
    """

    def __init__(self, *, policy: LeasePolicy | None = None, clock: Clock = SYSTEM_CLOCK,
                 store: str | os.PathLike[str] | None = None,
                 renewal_manager: LeaseRenewalManager | None = None, reaper: str = "sleeper",
                 callback_hosts: Iterable[str] | None = None, limits: RenewalLimits | None = None) -> None:
        if limits is not None and not isinstance(limits, RenewalLimits):
            raise TypeError(f"limits must be a RenewalLimits, got {type(limits).__name__}")
        self.limits = limits or RenewalLimits()
        self._lock = threading.RLock()  # before the landlord restores, whose reaper may end a set at once
        lease_store = LeaseStore(store, name="renewal-service") if store is not None else None  # claims the file
        self._ledger = SetLedger(self.limits, SetStore(store) if store is not None else None)  # under the lock
        self._owns_renewals = renewal_manager is None
        self._renewals = renewal_manager or LeaseRenewalManager(clock=clock, name="RenewalService")
        self._events = SetEvents(clock)
        self._alarms = _Alarms(clock, self._warn)
        try:
            super().__init__(policy=policy or LeaseDurationPolicy(MAX_SET_LEASE, DEFAULT_SET_LEASE), clock=clock,
                             on_expire=self._set_ended, reaper=reaper, store=lease_store,
                             callback_hosts=callback_hosts)
            if self._ledger.store is not None:
                self._take_back(self._ledger.store)
        except BaseException:
            self._alarms.close()
            if self._owns_renewals:
                self._renewals.close()
            for each in (self._ledger.store, lease_store):
                if each is not None:
                    each.close()
            raise

    # -- remote: the sets ------------------------------------------------------------------

    @Pyro5.server.expose
    def create_set(self, duration: float) -> tuple[str, LandlordLease]:
        """A new, empty renewal set: its id, and its lease for ``duration`` seconds (``ANY``: the default).

        Raises:
            ValueError: an invalid duration, or the calling client holds ``sets_per_client`` sets already.
            LeaseDeniedError: the policy refused.
        """
        duration = check_duration(duration)
        client = client_of_call()
        set_id = uuid.uuid4().hex
        with self._lock:  # filed first: a lease ending at once finds its set to end
            renewal_set = self._ledger.open(set_id, client)
        try:
            lease = self.new_lease(set_id, duration)
        except BaseException:
            with self._lock:
                self._ledger.unopen(set_id)
            raise
        with self._lock:
            self._ledger.name(renewal_set, lease.cookie)
        log.info("renewal set %s created for %.1f s", set_id, lease.term)
        return set_id, lease

    @Pyro5.server.expose
    def renew_for(self, cookie: str, lease: Lease, duration: float = FOREVER,
                  renew_duration: float | None = None) -> None:
        """Keep ``lease`` alive for ``duration`` more seconds (``FOREVER``: while the set lasts)
        in the set whose lease is ``cookie``; a lease in the set already gets these settings.

        Args:
            cookie: the set's lease's cookie.
            lease: any lease that crossed the wire.
            duration: seconds from now.
            renew_duration: the most one renewal asks for (default: the lease's own term).

        Raises:
            TypeError: ``lease`` is not a Lease, or a malformed cookie or number.
            ValueError: an invalid duration; a lease whose landlord the service may not call
                (:func:`check_pyro_uri`; with ``landlord_hosts``, a lease that is not a
                :class:`~landlord.LandlordLease`); a full set (``leases_per_set``); the set's
                client holding ``leases_per_client`` leases; a lease already in another set.
            UnknownLeaseError: no live set has that cookie.
        """
        if not isinstance(lease, Lease):
            raise TypeError(f"expected a Lease, got {type(lease).__name__}")
        _check_landlords_of(lease, self.limits.landlord_hosts)
        duration = check_duration(duration, allow_any=False)
        lease = _on_clock(lease, self.clock)
        asked = renew_duration_for(lease, renew_duration)
        renewal_set = self._set_of(cookie)
        with self._lock:
            member = self._ledger.add(renewal_set, lease, self.clock.time() + duration, asked)
            self._keep(renewal_set.set_id, lease, member)
            self._ledger.write(renewal_set, lease, member)

    @Pyro5.server.expose
    def remove(self, cookie: str, lease: Lease) -> bool:
        """Stop renewing ``lease`` in the set (it is not cancelled); ``False`` if it was not there.

        Raises:
            TypeError: ``lease`` is not a Lease, or a malformed cookie.
            UnknownLeaseError: no live set has that cookie.
        """
        if not isinstance(lease, Lease):
            raise TypeError(f"expected a Lease, got {type(lease).__name__}")
        renewal_set = self._set_of(cookie)
        with self._lock:
            if self._ledger.drop(renewal_set, lease) is None:
                return False
        _quietly_remove(self._renewals.remove, lease)
        return True

    @Pyro5.server.expose
    def leases(self, cookie: str) -> list[Lease]:
        """The leases the set renews, as last renewed.

        Raises:
            UnknownLeaseError: no live set has that cookie.
        """
        renewal_set = self._set_of(cookie)
        with self._lock:
            return list(renewal_set.members)

    @Pyro5.server.expose
    def set_failure_listener(self, cookie: str, listener: str | None) -> None:
        """Tell the Pyro5 object at ``listener`` (``None``: nobody) of each lease the set loses.

        Raises:
            TypeError, ValueError: ``listener`` is not a callback this service takes
                (:meth:`~landlord.Landlord.check_callback`).
            UnknownLeaseError: no live set has that cookie.
        """
        listener = None if listener is None else self.check_callback(listener)
        renewal_set = self._set_of(cookie)
        with self._lock:
            renewal_set.failure_listener = listener
            self._ledger.save(renewal_set)

    @Pyro5.server.expose
    def set_warning_listener(self, cookie: str, listener: str | None, warn_before: float = 0.0) -> None:
        """Warn the Pyro5 object at ``listener`` (``None``: nobody) ``warn_before`` seconds before
        the set's lease ends, once per term: ``expiration_warning(set_id, lease, expiration)``.

        Raises:
            TypeError, ValueError: ``listener`` is not a callback this service takes, or ``warn_before``
                not a positive, finite number of seconds.
            UnknownLeaseError: no live set has that cookie.
        """
        listener = None if listener is None else self.check_callback(listener)
        before = check_duration(warn_before, name="warn_before", allow_any=False)
        if listener is not None and not 0 < before < math.inf:
            raise ValueError(f"warn_before must be positive and finite, got {before!r}")
        renewal_set = self._set_of(cookie)
        with self._lock:
            renewal_set.warning_listener, renewal_set.warn_before = listener, before
            renewal_set.warned_for = None
            self._ledger.save(renewal_set)
        self._arm(renewal_set)

    # -- remote: a set's lease renewed moves its warning -----------------------------------

    @Pyro5.server.expose
    def renew(self, cookie: str, duration: float) -> float:
        granted = super().renew(cookie, duration)
        self._arm_cookie(cookie)
        return granted

    @Pyro5.server.expose
    def renew_all(self, cookies: Any, durations: Any) -> Any:
        results = super().renew_all(cookies, durations)
        for cookie in cookies:
            self._arm_cookie(cookie)
        return results

    # -- local ----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop renewing (no lease is cancelled), send the events queued, close the stores."""
        self._alarms.close()
        if self._owns_renewals:
            self._renewals.close()
        else:
            for lease in self._ledger.leases():
                _quietly_remove(self._renewals.remove, lease)
        self._events.close()
        super().close()
        if self._ledger.store is not None:
            self._ledger.store.close()

    def sets(self) -> int:
        """How many renewal sets are held."""
        with self._lock:
            return len(self._ledger)

    def held_by(self, client: str) -> tuple[int, int]:
        """How many sets ``client`` (a host, or :data:`IN_PROCESS`) holds, and leases in them."""
        with self._lock:
            return self._ledger.held_by(client)

    def limit_refusals(self) -> dict[str, int]:
        """Calls refused so far by its ``limits``, by the limit's name (what
        ``landlord_limits_refused_total{limit}`` reads when scraped)."""
        return dict(self._ledger.refused)  # without the lock: a scrape waits for nobody (a copy of three ints)

    # -- the work ---------------------------------------------------------------------------

    def _set_of(self, cookie: str) -> RenewalSet:
        set_id = self.get_resource(cookie)  # UnknownLeaseError for no live set
        with self._lock:
            renewal_set = self._ledger.sets.get(set_id)
        if renewal_set is None:  # created this instant, or ending
            raise UnknownLeaseError("no such renewal set")
        return renewal_set

    def _keep(self, set_id: str, lease: Lease, member: Member) -> None:
        self._renewals.renew_until(lease, member.desired, functools.partial(self._lost, set_id),
                                   renew_duration=member.renew_duration,
                                   on_desired_expiration=functools.partial(self._reached, set_id))

    def _lost(self, set_id: str, event: LeaseRenewalEvent) -> None:
        """The renewal manager lost a lease (denied, unknown, or unreachable for its whole term)."""
        with self._lock:
            renewal_set = self._ledger.sets.get(set_id)
            if renewal_set is None or self._ledger.drop(renewal_set, event.lease) is None:
                return
            listener = renewal_set.failure_listener
        reason = f"{type(event.exception).__name__}: {event.exception}"
        log.warning("renewal set %s lost %r: %s", set_id, event.lease, reason)
        if listener is not None:
            self._events.post(listener, "renewal_failed", (set_id, event.lease, reason),
                              f"renewal set {set_id} lost a lease")

    def _reached(self, set_id: str, event: LeaseRenewalEvent) -> None:
        """A lease reached its desired expiration: it leaves the set, quietly."""
        with self._lock:
            renewal_set = self._ledger.sets.get(set_id)
            if renewal_set is not None:
                self._ledger.drop(renewal_set, event.lease)

    def _set_ended(self, set_id: Any) -> None:
        """The set's own lease ended: stop renewing its leases (they end within their terms)."""
        with self._lock:
            renewal_set, leases = self._ledger.end(set_id)
        for lease in leases:
            _quietly_remove(self._renewals.remove, lease)
        if renewal_set is not None:
            log.info("renewal set %s ended: %d lease(s) no longer renewed", set_id, len(leases))

    # -- the set's own lease: warnings ------------------------------------------------------

    def _arm_cookie(self, cookie: Any) -> None:
        try:
            self._arm(self._set_of(cookie))
        except UnknownLeaseError:  # renewed, but ended since: nothing to warn about
            pass

    def _arm(self, renewal_set: RenewalSet) -> None:
        """Set the set's warning alarm for its lease's current end."""
        if renewal_set.warning_listener is None:
            return
        try:
            end = self.manager.get(renewal_set.cookie).expiration
        except UnknownLeaseError:
            return
        self._alarms.set(end - renewal_set.warn_before, renewal_set.set_id)

    def _warn(self, set_id: str) -> None:
        """An alarm rang: warn of the set's end if it is still due (the lease may have been renewed)."""
        with self._lock:
            renewal_set = self._ledger.sets.get(set_id)
            if renewal_set is None or renewal_set.warning_listener is None:
                return
            try:
                leased = self.manager.get(renewal_set.cookie)
            except UnknownLeaseError:
                return
            end, now = leased.expiration, self.clock.monotonic()
            if end - renewal_set.warn_before > now or renewal_set.warned_for == end:
                return  # renewed since (the renewal set a later alarm), or warned already
            renewal_set.warned_for = end
            listener, left = renewal_set.warning_listener, end - now
            lease = self._make_lease(leased, left)
        log.info("renewal set %s ends in %.1f s: warning %s", set_id, left, listener)
        self._events.post(listener, "expiration_warning", (set_id, lease, lease.expiration),
                          f"renewal set {set_id} ends soon")

    # -- restart ------------------------------------------------------------------------------

    def _take_back(self, set_store: SetStore) -> None:
        """The sets whose lease the landlord took back, with their members; the rest forgotten."""
        now = self.clock.monotonic()
        kept = 0
        for stored in set_store.sets():
            renewal_set = stored.set
            try:
                alive = self.get_resource(renewal_set.cookie) == renewal_set.set_id
            except UnknownLeaseError:
                alive = False
            if not alive:
                set_store.delete_set(renewal_set.set_id)
                continue
            members = [(_on_clock(lease, self.clock), member) for lease, member in stored.leases]
            with self._lock:
                self._ledger.restore(renewal_set, members)
                for lease, member in members:
                    _renew_at_once(lease, member.renew_duration, (self.clock.time(), now))
                    self._keep(renewal_set.set_id, lease, member)
            kept += len(members)
            self._arm(renewal_set)
        log.info("renewal service took back %d set(s) keeping %d lease(s)", len(self._ledger), kept)


def _check_landlords_of(lease: Lease, hosts: frozenset[str] | None) -> None:
    """Refuse ``lease`` unless each URI it would call is one the service may call (:func:`check_pyro_uri`).

    A lease of another class renews itself as its class says: with ``hosts`` the
    service cannot tell where that goes, so it is refused.

    Raises:
        ValueError: it is refused.
    """
    if not isinstance(lease, LandlordLease):
        if hosts is not None:
            raise ValueError(f"this service renews only LandlordLeases (its landlord hosts are limited), "
                             f"not a {type(lease).__name__}")
        return
    if not isinstance(lease.landlord, str):
        return  # an in-process landlord object: the service's own process, no URI to follow
    for uri in lease.landlords:
        check_pyro_uri(uri, "a lease's landlord", hosts=hosts)


def _on_clock(lease: Lease, clock: Clock) -> Lease:
    """``lease`` timed on ``clock``, the service's: a :class:`LandlordLease` that came over the
    wire or from the store is timed on the system clock, which a service on another clock
    (a test's) would not compare with its own."""
    if not isinstance(lease, LandlordLease) or lease.clock is clock:
        return lease
    return lease.timed_on(clock)


def _renew_at_once(lease: Lease, term: float, now: tuple[float, float]) -> None:
    """Make a lease read back from the store due for renewal now, with time for its first attempt.

    Its stored expiration is when it was added; how long it really has is its
    landlord's to say, so it is renewed at once: it is given a deadline at which
    :func:`~landlord.holder.renewal.renewal_time` is now.
    """
    if not isinstance(lease, AbstractLease) or not 0 < term < math.inf:
        return
    lease.record_grant(now, (1 - RENEW_AFTER) * term)  # now: (wall, monotonic); the term asked stays renew_duration


class _Alarms:
    """Calls ``ring(name)`` at the times set, from one thread, on ``clock``'s monotonic time.

    Setting a name again adds an alarm; stale ones ring too, and ``ring`` decides.
    """

    def __init__(self, clock: Clock, ring: Any) -> None:
        self._clock = clock
        self._ring = ring
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, str]] = []
        self._order = itertools.count()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="RenewalServiceAlarms", daemon=True)
        self._thread.start()

    def set(self, at: float, name: str) -> None:
        with self._cond:
            heapq.heappush(self._heap, (at, next(self._order), name))
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._closed:
                    return
                first = self._heap[0][0] if self._heap else math.inf
                if first > self._clock.monotonic():
                    self._clock.wait(self._cond, first)
                    continue
                _, _, name = heapq.heappop(self._heap)
            try:
                self._ring(name)
            except Exception:
                log.exception("a renewal set's warning failed")


def _quietly_remove(remove: Any, lease: Lease) -> None:
    """``remove(lease)``, where the lease may already be gone."""
    try:
        remove(lease)
    except UnknownLeaseError:
        pass
