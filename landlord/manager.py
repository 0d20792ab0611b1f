"""The grantor's bookkeeping: leased resources by cookie and by expiration."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sortedcontainers import SortedList

from .clock import SYSTEM_CLOCK, Clock
from .errors import UnknownLeaseError
from .policy import LeasePolicy
from .reapers import Reaper, make_reaper
from .resource import LeasedResource
from .store import Store

__all__ = ["LeasedResource", "LeaseManager"]

log = logging.getLogger(__name__)

REAP_CHUNK = 1000  # leases freed per turn of the lock when many expire at once


class LeaseManager:
    """Owns the leased resources of a landlord and frees them when their leases end.

    Resources are kept by cookie (a dict) and by expiration (a sorted list),
    so register, renew and cancel are O(log n) and finding what is due is O(1).
    Whatever the reaper, a lease past its expiration is never renewable and
    its resource is never handed out: the reaper only decides *when* expired
    resources are freed.

    Args:
        policy: decides renewal terms.
        reaper: ``"sleeper"``, ``"polling"``, ``"lazy"`` or a :class:`~landlord.reapers.Reaper`.
        clock: the monotonic clock expiry is decided on.
        on_expire: called with the resource, exactly once, when its lease
            expires or is cancelled; never under the manager's lock. Its
            exceptions are logged and do not stop the reaper.
        on_cancel: if given, called instead of ``on_expire`` for leases
            cancelled while still live, so a landlord can tell the two apart.
        store: if given, every change is written to it (:mod:`landlord.store`): renewals
            under the lock; grants and ends outside it (no renewal waits for an etcd round trip).
        dump: what of a resource is written to ``store`` (default: the
            resource itself); ``None`` from it keeps that lease in memory only.

    Raises:
        ValueError: an unknown reaper name.
    """

    def __init__(self, policy: LeasePolicy, *, reaper: str | Reaper = "sleeper",
                 clock: Clock = SYSTEM_CLOCK, on_expire: Callable[[Any], None] | None = None,
                 on_cancel: Callable[[Any], None] | None = None, store: Store | None = None,
                 dump: Callable[[Any], Any] | None = None) -> None:
        self.policy = policy
        self.clock = clock
        self.store = store
        self._journal = _Journal(store, dump if dump is not None else _same, clock)
        self._on_expire = on_expire
        self._on_cancel = on_cancel if on_cancel is not None else on_expire
        self._lock = threading.Lock()
        self._table = _Table()
        self._by_cookie = self._table.by_cookie  # read often: one attribute lookup less
        self._reaper = make_reaper(reaper)
        self._reaper.start(self)

    # -- holding --------------------------------------------------------------

    def register(self, resource: LeasedResource) -> None:
        """Start managing ``resource``, whose expiration the policy has set.

        Raises:
            ValueError: a resource with the same cookie is already held.
        """
        self._reaper.on_use()
        if self.store is not None:
            with self._lock:
                self._check_new(resource.cookie)
            self._journal.put(resource)  # first: a failed write leaves nothing leased
        with self._lock:
            self._check_new(resource.cookie)
            self._table.add(resource)
        self._reaper.expiration_added(resource.expiration)

    def restore(self, resources: Sequence[LeasedResource]) -> None:
        """Hold resources read back from the store (not written again).

        Those already expired are freed by the reaper, as any other.

        Raises:
            ValueError: a cookie already held (nothing is restored).
        """
        with self._lock:
            cookies = [resource.cookie for resource in resources]
            if len(set(cookies)) != len(cookies) or any(cookie in self._by_cookie for cookie in cookies):
                raise ValueError("a restored resource has the cookie of another")
            for resource in resources:
                self._table.add(resource)
        if resources:
            self._reaper.expiration_added(min(resource.expiration for resource in resources))

    def resource_changed(self, cookie: str) -> None:
        """Write the resource of ``cookie`` to the store again (it changed in place).

        Raises:
            UnknownLeaseError: no such lease, or it has expired.
        """
        with self._lock:
            resource = self._live(cookie)
            if resource is None:
                raise UnknownLeaseError("no such lease (it expired, was cancelled, or never existed)")
            self._journal.put(resource)

    def renewed(self, cookie: str, requested: float) -> float:
        """Renew the lease named ``cookie`` through the policy; return the seconds granted.

        Raises:
            UnknownLeaseError: no such lease, or it has expired.
            LeaseDeniedError: the policy refused (the lease is unchanged).
        """
        [outcome] = self.renewed_all([cookie], [requested])
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def renewed_all(self, cookies: Sequence[str], requested: Sequence[float]) -> list[float | Exception]:
        """Renew many leases; for each, the seconds granted or the exception :meth:`renewed` would raise.

        A failing lease (unknown, expired, refused) fails alone and stays as it
        was. The lock is taken, the clock read and the reaper told once per
        chunk of ``REAP_CHUNK`` leases, not once per lease.
        """
        self._reaper.on_use()
        outcomes: list[float | Exception] = []
        for start in range(0, len(cookies), REAP_CHUNK):
            found_dead: list[LeasedResource] = []
            renewed: list[LeasedResource] = []
            earliest = math.inf
            with self._lock:
                now = self.clock.monotonic()
                for cookie, duration in zip(cookies[start:start + REAP_CHUNK], requested[start:start + REAP_CHUNK]):
                    resource = self._by_cookie.get(cookie)
                    if resource is None or resource.expiration <= now:
                        if resource is not None:
                            found_dead.append(resource)
                            self._table.remove(cookie)
                        outcomes.append(
                            UnknownLeaseError("no such lease (it expired, was cancelled, or never existed)"))
                        continue
                    old = resource.expiration
                    try:
                        granted = self.policy.renew(resource, duration)
                    except Exception as exc:
                        resource.expiration = old  # a refusing policy changes nothing
                        outcomes.append(exc)
                        continue
                    if resource.expiration != old:
                        self._table.moved(resource, old)
                        renewed.append(resource)
                    earliest = min(earliest, resource.expiration)
                    outcomes.append(granted)
                self._journal.renewed(renewed)
            self._journal.ended(found_dead)
            self._free(found_dead)
            if earliest < math.inf:
                self._reaper.expiration_added(earliest)
        return outcomes

    def cancel(self, cookie: str) -> None:
        """End the lease named ``cookie`` now and free its resource.

        Raises:
            UnknownLeaseError: no such lease, or it has already expired.
        """
        self._reaper.on_use()
        with self._lock:
            live = self._live(cookie) is not None
            resource = self._table.remove(cookie)
        if resource is not None:
            self._journal.ended([resource])
        self._free([resource] if resource else [], cancelled=live)
        if not live:
            raise UnknownLeaseError("no such lease (it expired, was cancelled, or never existed)")

    def cancel_all(self, cookies: Iterable[str]) -> dict[str, Exception]:
        """Cancel many leases; return the failures by cookie (empty when all succeeded)."""
        failures: dict[str, Exception] = {}
        for cookie in cookies:
            try:
                self.cancel(cookie)
            except UnknownLeaseError as exc:
                failures[cookie] = exc
        return failures

    def get(self, cookie: str) -> LeasedResource:
        """The live leased resource named ``cookie``.

        Raises:
            UnknownLeaseError: no such lease, or it has expired.
        """
        self._reaper.on_use()
        with self._lock:
            resource = self._live(cookie)
            expired = None if resource else self._table.remove(cookie)  # held but expired: free it now
        if expired is not None:
            self._journal.ended([expired])
        if resource is None:
            self._free([expired] if expired else [])
            raise UnknownLeaseError("no such lease (it expired, was cancelled, or never existed)")
        return resource

    def get_resource(self, cookie: str) -> Any:
        """The resource leased under ``cookie`` (see :meth:`get`)."""
        return self.get(cookie).resource

    def __len__(self) -> int:
        """How many resources are held (expired ones count until they are freed)."""
        self._reaper.on_use()
        return len(self._by_cookie)

    def __contains__(self, cookie: object) -> bool:
        return isinstance(cookie, str) and cookie in self._by_cookie

    # -- reaping --------------------------------------------------------------

    def next_expiration(self) -> float:
        """The earliest expiration held (``inf`` when nothing is)."""
        with self._lock:
            return self._table.next_expiration()

    def reap(self) -> int:
        """Free every resource whose lease has expired (by now); return how many.

        The lock is taken for one chunk of ``REAP_CHUNK`` leases at a time,
        and each chunk is freed before the next is taken: when a million leases
        expire together, renewals and the first ``on_expire`` wait for one
        chunk (milliseconds), not for all of them (seconds).
        """
        now = self.clock.monotonic()
        freed = 0
        while True:
            with self._lock:
                due = self._table.pop_due(now, REAP_CHUNK)
            try:
                self._journal.ended(due)
            except Exception:  # the leases have ended all the same: a store that missed it
                # brings them back expired after a restart, to be freed then (at least once)
                log.exception("could not write the end of %d expired lease(s) to %r; freed anyway",
                              len(due), self.store)
            self._free(due)
            freed += len(due)
            if len(due) < REAP_CHUNK:
                return freed

    def close(self) -> None:
        """Stop the reaper, then close the store. Held resources stay held (and are not freed)."""
        self._reaper.close()
        if self.store is not None:
            self.store.close()

    # -- internals (call with the lock held) ------------------------------------

    def _check_new(self, cookie: str) -> None:
        if cookie in self._by_cookie:
            raise ValueError("a resource with this cookie is already leased")

    def _live(self, cookie: str) -> LeasedResource | None:
        resource = self._by_cookie.get(cookie)
        if resource is None or resource.expiration <= self.clock.monotonic():
            return None
        return resource

    def _free(self, resources: list[LeasedResource], *, cancelled: bool = False) -> None:
        callback = self._on_cancel if cancelled else self._on_expire
        if callback is None:
            return
        for resource in resources:
            try:
                callback(resource.resource)
            except Exception:
                log.exception("%s failed for %r", "on_cancel" if cancelled else "on_expire", resource)


class _Table:
    """The held resources by cookie (a dict) and by expiration (a sorted list of ``(expiration, cookie)``)."""

    __slots__ = ("by_cookie", "_by_expiration")

    def __init__(self) -> None:
        self.by_cookie: dict[str, LeasedResource] = {}
        self._by_expiration: SortedList[tuple[float, str]] = SortedList()

    def add(self, resource: LeasedResource) -> None:
        self.by_cookie[resource.cookie] = resource
        self._by_expiration.add((resource.expiration, resource.cookie))

    def remove(self, cookie: str) -> LeasedResource | None:
        resource = self.by_cookie.pop(cookie, None)
        if resource is not None:
            self._by_expiration.remove((resource.expiration, cookie))
        return resource

    def moved(self, resource: LeasedResource, old: float) -> None:
        """``resource``'s expiration changed from ``old``."""
        self._by_expiration.remove((old, resource.cookie))
        self._by_expiration.add((resource.expiration, resource.cookie))

    def next_expiration(self) -> float:
        return self._by_expiration[0][0] if self._by_expiration else math.inf

    def pop_due(self, now: float, limit: int) -> list[LeasedResource]:
        """Remove and return up to ``limit`` resources whose expiration is ``now`` or earlier, earliest first."""
        due: list[LeasedResource] = []
        by_expiration = self._by_expiration
        while len(due) < limit and by_expiration and by_expiration[0][0] <= now:
            _, cookie = by_expiration.pop(0)
            due.append(self.by_cookie.pop(cookie))
        return due


class _Journal:
    """Writes the manager's changes to its store, if it has one (see :class:`LeaseManager`'s ``store``).

    Expirations are kept on the monotonic clock and stored as wall-clock
    times, which is what survives a restart.
    """

    __slots__ = ("_store", "_dump", "_clock")

    def __init__(self, store: Store | None, dump: Callable[[Any], Any], clock: Clock) -> None:
        self._store = store
        self._dump = dump
        self._clock = clock

    def put(self, resource: LeasedResource) -> None:
        if self._store is None:
            return
        data = self._dump(resource.resource)
        if data is not None:
            wall, now = self._clock.time(), self._clock.monotonic()
            self._store.put(resource.cookie, _wall_time(resource.expiration, now, wall), data, wall)

    def renewed(self, resources: list[LeasedResource]) -> None:
        if self._store is not None and resources:
            wall, now = self._clock.time(), self._clock.monotonic()
            self._store.renew([(r.cookie, _wall_time(r.expiration, now, wall)) for r in resources], wall)

    def ended(self, resources: list[LeasedResource]) -> None:
        if self._store is not None and resources:
            self._store.delete([resource.cookie for resource in resources])


def _same(resource: Any) -> Any:
    return resource


def _wall_time(expiration: float, monotonic_now: float, wall_now: float) -> float:
    """A monotonic-clock expiration as a wall-clock time (``inf`` stays ``inf``)."""
    return expiration if math.isinf(expiration) else wall_now + (expiration - monotonic_now)
