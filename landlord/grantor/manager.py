"""The grantor's bookkeeping: leased resources by cookie and by expiration."""

from __future__ import annotations

import collections
import logging
import math
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, NamedTuple

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import LeaseDeniedError, UnknownLeaseError
from .freeing import Endings, FreeCallback, FreeWithCookie
from .hooks import HookFanout, LeaseHooks
from .leasetable import LeaseTable
from .policy import LeasePolicy
from .reapers import Reaper, make_reaper
from .resource import LeasedResource
from .store import Store

__all__ = ["LeasedResource", "LeaseManager", "HeldLease", "StoredExtra", "unwrap_stored", "STORED_EXTRA",
           "FreeCallback", "FreeWithCookie", "ENDED", "ENDED_BY"]

log = logging.getLogger("landlord.manager")  # its name before it moved

REAP_CHUNK = 1000  # leases freed per turn of the lock when many expire at once
REVOKED_REMEMBERED = 10_000  # revoked cookies whose reason a late renewal is told
STORED_EXTRA = "landlord.lease/1"  # the key of a stored lease's envelope (attached resources, lifetime cap)
_UNKNOWN = "no such lease (it expired, was cancelled, or never existed)"
ENDED = -1e15  # the expiration of a lease restored as ended: before any clock's now, so due at once, never live
ENDED_BY = ("on_cancel", "on_expire")  # what a stored lease's end mark says: which callback frees it


class HeldLease(NamedTuple):
    """One lease as :meth:`LeaseManager.held` lists it."""

    cookie: str
    remaining: float  # seconds until its term ends (negative: in its grace, or not yet freed)
    resource: Any
    attached: list[Any]


class LeaseManager:
    """Owns the leased resources of a landlord and frees them when their leases end.

    Resources are kept by cookie (a dict) and by expiration (a lazy calendar,
    :mod:`landlord.grantor.leasetable`): register and cancel are O(1), a renewal costs
    the index nothing, and the reaper finds what is due bucket by bucket.
    Whatever the reaper, a lease past its expiration is never renewable and
    its resource is never handed out: the reaper only decides *when* expired
    resources are freed.

    With a policy's ``grace`` (:class:`~landlord.LeaseDurationPolicy`), a lease
    whose term has ended is no longer live (not handed out, not listed), but
    its resources are held for the grace period: a renewal within it revives
    the lease under the same cookie, and only after it are the resources freed.

    With a store, an end is *free first, forget after*: a lease's row is
    deleted only once the callbacks for its resources have returned, so a
    crash at any point (even ``kill -9``) leaves the row of every lease whose
    resources may not have been freed, and a landlord restarted on the store
    frees them (again). An expired lease needs nothing more: its row's
    expiration says it ran out, so it comes back expired and the reaper frees
    it (unless the wall clock was set back by more than the downtime: then it
    comes back with at most what it had left, and is freed at its end). A
    lease ended while live (cancelled, revoked) would come back live, so its
    end is written into its row first, saying which callback frees it; it
    comes back ended (:meth:`restore`), never live, and is freed at once.
    Marking every end instead would cost an expiry a second write per chunk
    for what its row already says. So with a store a callback runs *at least
    once* per ended lease: twice for a lease whose callback ran but whose row
    was not yet deleted when the process died.

    Args:
        policy: decides renewal terms (and the grace, its ``grace``).
        reaper: ``"sleeper"``, ``"polling"``, ``"lazy"`` or a :class:`~landlord.grantor.reapers.Reaper`.
        clock: the monotonic clock expiry is decided on.
        on_expire: called with each resource of a lease (its own and those
            attached) when the lease expires or is cancelled; never under the
            manager's lock. Its exceptions are logged and do not stop the
            reaper. A callback with a parameter named ``cookie`` is called as
            ``on_expire(resource, cookie=cookie)``, the cookie of the lease
            that ended, so a resource can tell a second call for one lease and
            make it harmless; any other is called with the resource alone.
            Exactly once per resource without a store; with one, at least once
            (a crash may repeat it: see above).
        on_cancel: if given, called instead of ``on_expire`` for leases
            cancelled while still live, so a landlord can tell the two apart
            (the same way, the same at-least-once).
        store: if given, every change is written to it (:mod:`landlord.grantor.store`): renewals
            under the lock; grants and ends outside it (no renewal waits for an etcd round trip).
        dump: what of a resource is written to ``store`` (default: the
            resource itself); ``None`` from it keeps that lease in memory only.
        hooks: observers told of every grant, renewal, denial and end (:mod:`landlord.grantor.hooks`).

    Raises:
        ValueError: an unknown reaper name.
        TypeError: ``hooks`` not :class:`~landlord.grantor.hooks.LeaseHooks`.
    """

    def __init__(self, policy: LeasePolicy, *, reaper: str | Reaper = "sleeper",
                 clock: Clock = SYSTEM_CLOCK, on_expire: FreeCallback | None = None,
                 on_cancel: FreeCallback | None = None, store: Store | None = None,
                 dump: Callable[[Any], Any] | None = None,
                 hooks: LeaseHooks | Sequence[LeaseHooks] | None = None) -> None:
        self.policy = policy
        self.clock = clock
        self.store = store
        self.grace = policy.grace  # fixed for the manager's life: the reaper's order depends on it
        self.hooks = _fanout(hooks)
        self._journal = _Journal(store, dump if dump is not None else _same, clock)
        self._endings = Endings(on_expire, on_cancel, self._journal.ended, store)  # free first, forget after
        self._lock = threading.Lock()
        self._revoked = _RevokedReasons()
        self._table = LeaseTable()
        self._by_cookie = self._table.by_cookie  # read often: one attribute lookup less
        self._reaper = make_reaper(reaper)
        self._reaper.start(self)

    def add_hooks(self, hooks: LeaseHooks) -> None:
        """Tell ``hooks`` too, after those already told, of every change from now on
        (for an observer that comes after the landlord was made: metrics attached when it is served).

        Raises:
            TypeError: ``hooks`` is not a :class:`~landlord.grantor.hooks.LeaseHooks`.
        """
        with self._lock:  # two callers at once must not lose one: each swaps in a new fanout
            told = self.hooks.hooks if self.hooks is not None else ()
            self.hooks = HookFanout([*told, hooks])  # one attribute: a renewal reads it once, whole

    def intercept_ends(self, intercept: Callable[[list[LeasedResource], bool], list[LeasedResource]]) -> None:
        """Give every batch of ended leases (and whether they were cancelled) to ``intercept`` before
        the callbacks, which free what it returns (how a landlord's named leases end in its claims).
        Called outside the lock, as the callbacks are."""
        self._endings.intercept = intercept

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
        self._reaper.expiration_added(resource.expiration + self.grace)
        if self.hooks is not None:
            self.hooks.granted(resource)

    def restore(self, resources: Sequence[LeasedResource], *, cancelled: Collection[str] = ()) -> None:
        """Hold resources read back from the store (not written again).

        Those already expired are freed by the reaper, as any other. So are
        those whose end was written before the landlord stopped (restored with
        the expiration ``ENDED``: never live), which may have been freed then
        already: they are freed again, at least once.

        Args:
            resources: the leases read back.
            cancelled: the cookies of those among ``resources`` that ended by a
                cancel: freed through ``on_cancel`` (the others through ``on_expire``).

        Raises:
            ValueError: a cookie already held, or one in ``cancelled`` not among
                ``resources`` with the expiration ``ENDED`` (nothing is restored).
        """
        with self._lock:
            cookies = [resource.cookie for resource in resources]
            if len(set(cookies)) != len(cookies) or any(cookie in self._by_cookie for cookie in cookies):
                raise ValueError("a restored resource has the cookie of another")
            ended = {resource.cookie for resource in resources if resource.expiration == ENDED}
            if not ended.issuperset(cancelled):
                raise ValueError("a restored lease said to be cancelled is not among those restored as ended")
            for resource in resources:
                self._table.add(resource)
            self._endings.restored_cancels.update(cancelled)
        if resources:
            self._reaper.expiration_added(min(resource.expiration for resource in resources) + self.grace)

    def resource_changed(self, cookie: str) -> None:
        """Write the resource of ``cookie`` to the store again (it changed in place).

        Raises:
            UnknownLeaseError: no such lease, or it has expired.
        """
        with self._lock:
            self._journal.put(self._live_or_raise(cookie))

    def attach(self, cookie: str, resource: Any) -> None:
        """Put ``resource`` under the live lease ``cookie`` too: it is freed with the lease's own.

        Raises:
            UnknownLeaseError: no such lease, or it has expired (nothing is attached).
        """
        with self._lock:
            leased = self._live_or_raise(cookie)
            leased.extended().attached.append(resource)
            try:
                self._journal.put(leased)
            except BaseException:  # not written, not attached
                leased.extended().attached.pop()
                raise

    def detach(self, cookie: str, resource: Any) -> None:
        """Take ``resource`` (the first attached one equal to it) off the live lease ``cookie``,
        unfreed: from now on it is the caller's.

        Raises:
            UnknownLeaseError: no such lease, or it has expired.
            ValueError: ``resource`` is not attached to it (the lease's own resource never is).
        """
        with self._lock:
            leased = self._live_or_raise(cookie)
            attached = leased.extended().attached
            if resource not in attached:
                raise ValueError(f"{resource!r:.60} is not attached to this lease")
            where = attached.index(resource)
            del attached[where]
            try:
                self._journal.put(leased)
            except BaseException:
                attached.insert(where, resource)
                raise

    def renewed(self, cookie: str, requested: float) -> float:
        """Renew the lease named ``cookie`` through the policy; return the seconds granted.

        A live lease (or one in its grace) is renewed as :meth:`renewed_all` would, without a
        batch's lists (half the cost in process); anything else (hooks to tell, a lease not
        held or dead) goes the batch's way.

        Raises:
            UnknownLeaseError: no such lease, or it has expired (and its grace has passed).
            LeaseDeniedError: the policy refused (the lease is unchanged).
        """
        if self.hooks is not None:  # the hooks hear of it as of a batch of one
            return self._renewed_as_batch(cookie, requested)
        self._reaper.on_use()
        with self._lock:
            resource = self._by_cookie.get(cookie)
            if resource is None or resource.expiration + self.grace <= self.clock.monotonic():
                granted = None  # not held, or dead: the batch frees it and says why
            else:
                old = resource.expiration
                try:
                    granted = self.policy.renew(resource, requested)
                except Exception:
                    resource.expiration = old  # a refusing policy changes nothing
                    raise
                new = resource.expiration
                if new < old:  # a later end needs nothing of the index
                    self._table.moved(resource, old)
                if new != old and self.store is not None:
                    self._journal.renewed([resource])
        if granted is None:
            return self._renewed_as_batch(cookie, requested)
        if new < old:
            self._reaper.expiration_added(new + self.grace)
        return granted

    def _renewed_as_batch(self, cookie: str, requested: float) -> float:
        [outcome] = self.renewed_all([cookie], [requested])
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def renewed_all(self, cookies: Sequence[str], requested: Sequence[float]) -> list[float | Exception]:
        """Renew many leases; for each, the seconds granted or the exception :meth:`renewed` would raise.

        A failing lease (unknown, expired, refused) fails alone and stays as it
        was. The lock is taken and the clock read once per chunk of
        ``REAP_CHUNK`` leases, not once per lease; the reaper is told only of
        leases that now end earlier than they did (the index still holds the
        earlier end of the others). A lease in its grace is revived.
        """
        self._reaper.on_use()
        hooks = self.hooks
        started = time.perf_counter() if hooks is not None else 0.0
        outcomes: list[float | Exception] = []
        for start in range(0, len(cookies), REAP_CHUNK):
            # most calls are one chunk: no copies of their lists
            chunk = zip(cookies, requested) if len(cookies) <= REAP_CHUNK else \
                zip(cookies[start:start + REAP_CHUNK], requested[start:start + REAP_CHUNK])
            with self._lock:
                found_dead, renewed, served, earliest = _renew_chunk(
                    self._table, self.policy, self.grace, self.clock.monotonic(), chunk, outcomes, self._revoked,
                    hooks is not None)
                if renewed:
                    self._journal.renewed(renewed)
            if found_dead:
                self._endings.end(found_dead)
            if earliest < math.inf:
                self._reaper.expiration_added(earliest + self.grace)
            if hooks is not None:
                _tell_renewals(hooks, cookies[start:start + REAP_CHUNK], outcomes[start:], served, found_dead)
        if hooks is not None:
            hooks.renewals_served(len(cookies), time.perf_counter() - started)
        return outcomes

    def cancel(self, cookie: str) -> None:
        """End the lease named ``cookie`` now and free its resources (one in its grace too).

        With a store, the end is written before ``on_cancel`` runs and the row
        deleted after (see the class docstring): a crash in between frees the
        resources again after a restart.

        Raises:
            UnknownLeaseError: no such lease, or it has already expired (and its grace passed).
            Exception: whatever the store raised writing the end (the lease is held as before).
        """
        self._reaper.on_use()
        with self._lock:
            cancellable = self._unfreed(self._by_cookie.get(cookie))
            resource = self._table.remove(cookie)
        if resource is not None:
            if cancellable:  # a live lease's row would bring it back live: say first that it ended
                self._write_end(resource, "on_cancel")
            self._endings.end([resource], cancelled=cancellable)
        if not cancellable:
            if resource is not None and self.hooks is not None:
                self.hooks.expired([resource])
            raise UnknownLeaseError(_UNKNOWN)
        if resource is not None and self.hooks is not None:
            self.hooks.cancelled(resource)

    def revoke(self, cookie: str, reason: str) -> LeasedResource:
        """End the lease ``cookie`` now, on the landlord's word, and free its resources
        (through ``on_expire``). A renewal of it from now on is denied with ``reason``
        (for the last ``REVOKED_REMEMBERED`` revocations; older ones are unknown).

        With a store, the end is written first, as for :meth:`cancel`.

        Returns:
            the lease as it was held (its ``extra.listener`` says whom to tell).

        Raises:
            UnknownLeaseError: no such lease, or it has expired (and its grace passed).
            Exception: whatever the store raised writing the end (the lease is held as before).
        """
        with self._lock:
            held = self._by_cookie.get(cookie)
            if held is None or not self._unfreed(held):
                raise UnknownLeaseError(_UNKNOWN)
            self._table.remove(cookie)
            self._revoked.remember(cookie, reason)
        try:
            self._write_end(held, "on_expire")
        except BaseException:
            with self._lock:
                self._revoked.forget(cookie)
            raise
        self._endings.end([held])
        if self.hooks is not None:
            self.hooks.revoked(held, reason)
        return held

    def listen(self, cookie: str, listener: str) -> None:
        """Remember ``listener`` (a URI) as whom to tell if the live lease ``cookie`` is revoked.

        Raises:
            UnknownLeaseError: no such lease, or it has expired.
        """
        with self._lock:
            self._live_or_raise(cookie).extended().listener = listener

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
            UnknownLeaseError: no such lease, or it has expired (or is in its grace).
        """
        self._reaper.on_use()
        with self._lock:
            resource = self._live(cookie)
            expired = None if resource else self._pop_dead(cookie)  # held but past its grace: free it now
        if expired is not None:
            self._endings.end([expired])
            if self.hooks is not None:
                self.hooks.expired([expired])
        if resource is None:
            raise UnknownLeaseError(_UNKNOWN)
        return resource

    def get_resource(self, cookie: str) -> Any:
        """The resource leased under ``cookie`` (see :meth:`get`)."""
        return self.get(cookie).resource

    def held(self, *, limit: int | None = None) -> list[HeldLease]:
        """The leases held, earliest expiration first (for listing; a copy taken under the lock).

        Args:
            limit: at most this many (``None``: all).
        """
        with self._lock:
            now = self.clock.monotonic()
            return [HeldLease(leased.cookie, leased.expiration - now, leased.resource, leased.attached)
                    for leased in self._table.earliest(limit)]

    def __len__(self) -> int:
        """How many resources are held (expired ones count until they are freed)."""
        self._reaper.on_use()
        return len(self._by_cookie)

    def cookies_starting(self, prefix: str, *, limit: int = 2) -> list[str]:
        """Up to ``limit`` cookies of held leases that start with ``prefix`` (an operator's
        eviction by prefix). The cookies are copied without the lock (one C-level copy of the
        dict's keys, atomic under the GIL), so a million leases never hold up a renewal."""
        found: list[str] = []
        for cookie in list(self._by_cookie):
            if cookie.startswith(prefix):
                found.append(cookie)
                if len(found) >= limit:
                    break
        return found

    def held_count(self) -> int:
        """How many resources are held, without waking a lazy reaper: safe to call from the
        policy, under the manager's lock (dict length is read atomically)."""
        return len(self._by_cookie)

    def __contains__(self, cookie: object) -> bool:
        return isinstance(cookie, str) and cookie in self._by_cookie

    # -- reaping --------------------------------------------------------------

    def next_expiration(self) -> float:
        """When the next lease is due to be freed: the earliest expiration held, plus the grace
        (``inf`` when nothing is)."""
        with self._lock:
            return self._table.next_expiration() + self.grace

    def reap(self) -> int:
        """Free every resource whose lease has expired (by now, and its grace passed); return how many.

        The lock is taken for one chunk of ``REAP_CHUNK`` leases at a time,
        and each chunk is freed before the next is taken: when a million leases
        expire together, renewals and the first ``on_expire`` wait for one
        chunk (milliseconds), not for all of them (seconds). With a store, a
        chunk's rows are deleted after its callbacks have run (see the class docstring).
        """
        due_before = self.clock.monotonic() - self.grace
        freed = 0
        while True:
            with self._lock:
                due, more = self._table.pop_due(due_before, REAP_CHUNK)
            self._endings.end(due)  # rows deleted after: a crash before brings them back expired, freed again
            if due and self.hooks is not None:
                self.hooks.expired(due)
            freed += len(due)
            if not more:
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

    def _live_or_raise(self, cookie: str) -> LeasedResource:
        resource = self._live(cookie)
        if resource is None:
            raise UnknownLeaseError(_UNKNOWN)
        return resource

    def _unfreed(self, resource: LeasedResource | None) -> bool:
        """Whether ``resource`` is held and still its lease's: live, or in its grace."""
        return resource is not None and resource.expiration + self.grace > self.clock.monotonic()

    def _pop_dead(self, cookie: str) -> LeasedResource | None:
        """Remove and return the lease ``cookie`` if it is held past its grace."""
        resource = self._by_cookie.get(cookie)
        if resource is None or self._unfreed(resource):
            return None
        return self._table.remove(cookie)

    # -- internals (call without the lock) -----------------------------------------

    def _write_end(self, leased: LeasedResource, ended_by: str) -> None:
        """Write to the store that ``leased``, taken out of the table while live, has ended, and
        which callback frees it: a crash before its row is deleted brings it back ended.

        Raises:
            Exception: whatever the store raised; ``leased`` is held again, as it was.
        """
        try:
            self._journal.put(leased, ended_by=ended_by)
        except BaseException:
            with self._lock:
                self._table.add(leased)
            self._reaper.expiration_added(leased.expiration + self.grace)
            raise



def _renew_chunk(table: LeaseTable, policy: LeasePolicy, grace: float, now: float,
                 chunk: Iterable[tuple[str, float]], outcomes: list[float | Exception], revoked: _RevokedReasons,
                 keep_served: bool) -> tuple[list[LeasedResource], list[LeasedResource], list[LeasedResource], float]:
    """Renew each lease of ``chunk`` (cookie, seconds asked) through ``policy`` at ``now``, under the
    manager's lock, appending each one's outcome to ``outcomes``: the seconds granted, or why not (a
    lease not held, or held past its grace, which is taken out of ``table``). A lease the policy
    refuses stays as it was; a lease in its grace is revived.

    Returns:
        what the store, the reaper and the hooks hear of after: the leases found dead (to be freed),
        those whose expiration moved (the store's to write), every one renewed (only with
        ``keep_served``: the hooks'), and the earliest end of those moved earlier (the only ones
        the reaper must hear of; ``inf``: none).
    """
    found_dead: list[LeasedResource] = []
    renewed: list[LeasedResource] = []
    served: list[LeasedResource] = []
    earliest = math.inf
    by_cookie = table.by_cookie
    for cookie, duration in chunk:
        resource = by_cookie.get(cookie)
        if resource is None or resource.expiration + grace <= now:
            if resource is not None:
                found_dead.append(resource)
                table.remove(cookie)
            outcomes.append(revoked.why_gone(cookie))
            continue
        old = resource.expiration
        try:
            granted = policy.renew(resource, duration)
        except Exception as exc:
            resource.expiration = old  # a refusing policy changes nothing
            outcomes.append(exc)
            continue
        if resource.expiration != old:
            if resource.expiration < old:  # a later end needs nothing of the index
                table.moved(resource, old)
                earliest = min(earliest, resource.expiration)
            renewed.append(resource)
        if keep_served:
            served.append(resource)
        outcomes.append(granted)
    return found_dead, renewed, served, earliest


def _tell_renewals(hooks: LeaseHooks, cookies: Sequence[str], outcomes: Sequence[float | Exception],
                   renewed: list[LeasedResource], found_dead: list[LeasedResource]) -> None:
    """Tell ``hooks`` of one chunk of renewals: those renewed, those found dead, then each denial."""
    if renewed:
        hooks.renewed(renewed)
    if found_dead:
        hooks.expired(found_dead)
    for cookie, outcome in zip(cookies, outcomes):
        if isinstance(outcome, Exception):
            hooks.denied(cookie, outcome)


class _RevokedReasons:
    """The reasons of the last ``REVOKED_REMEMBERED`` revocations, by cookie: what a late renewal is told.
    Used under the manager's lock."""

    __slots__ = ("_reasons",)

    def __init__(self) -> None:
        self._reasons: collections.OrderedDict[str, str] = collections.OrderedDict()  # cookie -> reason

    def remember(self, cookie: str, reason: str) -> None:
        self._reasons[cookie] = reason
        if len(self._reasons) > REVOKED_REMEMBERED:
            self._reasons.popitem(last=False)

    def forget(self, cookie: str) -> None:
        self._reasons.pop(cookie, None)

    def why_gone(self, cookie: str) -> Exception:
        """Why ``cookie`` cannot be renewed: revoked (with the landlord's reason), or unknown."""
        reason = self._reasons.get(cookie) if self._reasons else None
        if reason is None:
            return UnknownLeaseError(_UNKNOWN)
        return LeaseDeniedError(f"revoked by the landlord: {reason}")


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

    def put(self, resource: LeasedResource, *, ended_by: str | None = None) -> None:
        """Write ``resource``'s lease; ``ended_by`` (one of ``ENDED_BY``) marks it ended."""
        if self._store is None:
            return
        data = self._dump(resource.resource)
        if data is not None:
            wall, now = self._clock.time(), self._clock.monotonic()
            extra = resource.extra
            if extra is not None or ended_by is not None:  # an envelope only for the leases that need one
                attached = [] if extra is None else \
                    [dumped for dumped in map(self._dump, extra.attached) if dumped is not None]
                envelope = {"resource": data, "attached": attached,
                            "deadline": _wall_time(resource.deadline, now, wall)}
                if ended_by is not None:
                    envelope["ended_by"] = ended_by
                data = {STORED_EXTRA: envelope}
            self._store.put(resource.cookie, _wall_time(resource.expiration, now, wall), data, wall)

    def renewed(self, resources: list[LeasedResource]) -> None:
        if self._store is not None and resources:
            wall, now = self._clock.time(), self._clock.monotonic()
            self._store.renew([(r.cookie, _wall_time(r.expiration, now, wall)) for r in resources], wall)

    def ended(self, resources: list[LeasedResource]) -> None:
        if self._store is not None and resources:
            self._store.delete([resource.cookie for resource in resources])


class StoredExtra(NamedTuple):
    """A stored lease's data, out of its envelope (see :func:`unwrap_stored`)."""

    resource: Any  # what the codec dumped of the lease's own resource
    attached: list[Any]  # what it dumped of each attached one
    deadline: float  # the lifetime cap on the wall clock (``inf``: none)
    ended_by: str | None = None  # the lease had ended (one of ENDED_BY: the callback that frees it); None: live


def unwrap_stored(data: Any) -> StoredExtra:
    """What the manager stored for a lease: its resource's data, its attached resources', its cap,
    and whether it had ended (see :class:`LeaseManager` on ending with a store).

    Raises:
        ValueError: an envelope that is malformed (a damaged or forged row).
    """
    if not (isinstance(data, dict) and len(data) == 1 and STORED_EXTRA in data):
        return StoredExtra(data, [], math.inf)
    envelope = data[STORED_EXTRA]
    if not (isinstance(envelope, dict) and isinstance(envelope.get("attached"), list)
            and isinstance(envelope.get("deadline"), (int, float)) and "resource" in envelope
            and envelope.get("ended_by", ENDED_BY[0]) in ENDED_BY):
        raise ValueError(f"a malformed stored lease: {envelope!r:.80}")
    return StoredExtra(envelope["resource"], envelope["attached"], float(envelope["deadline"]),
                       envelope.get("ended_by"))


def _fanout(hooks: LeaseHooks | Sequence[LeaseHooks] | None) -> HookFanout | None:
    if hooks is None:
        return None
    return HookFanout([hooks] if isinstance(hooks, LeaseHooks) else list(hooks))


def _same(resource: Any) -> Any:
    return resource


def _wall_time(expiration: float, monotonic_now: float, wall_now: float) -> float:
    """A monotonic-clock expiration as a wall-clock time (``inf`` stays ``inf``)."""
    return expiration if math.isinf(expiration) else wall_now + (expiration - monotonic_now)
