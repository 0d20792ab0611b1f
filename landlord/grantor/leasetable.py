"""The grantor's table of held leases: by cookie, and by when they end.

The order by expiration is a *lazy calendar*. Each lease is filed once, by
its cookie, in a bucket of ``1 / BUCKETS_PER_SECOND`` seconds, and each bucket
knows the earliest expiration filed in it. A renewal that moves a lease later
files nothing: the lease's entry stays where it was, a lower bound of its
expiration, and is filed again only when its bucket comes due and the lease is
found to live on. So a renewal costs the index nothing, and a lease renewed
many times per term is filed again about once per term, by the reaper.

Why not a sorted index of ``(expiration, cookie)`` (what this replaced): it
re-keyed every renewal (a remove and an add, most of a renewal's cost at a
million leases: ``docs/performance.md``), and it kept a tuple per lease (64
bytes). The calendar keeps a list slot per lease (8 bytes) and a few hundred
bytes per bucket.

Entries are lower bounds, never later than the lease's expiration: a renewal
that moves a lease *earlier* (a holder asking for less than it has left) files
it again at once. An entry may outlive its lease (a cancelled one is not
searched for); it is dropped when its bucket comes due, and the whole calendar
is rebuilt from the dict if such entries outnumber the live leases.

Not thread-safe: the :class:`~landlord.LeaseManager` calls it under its lock.
"""

from __future__ import annotations

import heapq
import math

from .resource import LeasedResource

__all__ = ["LeaseTable", "BUCKETS_PER_SECOND"]

BUCKETS_PER_SECOND = 8  # 1/8 s: ~190 B a bucket, so a million leases over 1,000 s pay ~1.5 B a lease for them
_FAR = 1e15  # seconds: later expirations share one bucket (and inf is not filed: it never ends)
_FAR_KEY = int(_FAR * BUCKETS_PER_SECOND)
_STALE_SLACK = 10_000  # entries beyond twice the live leases that trigger a rebuild
_WORK_PER_DUE = 4  # pop_due touches at most this many entries per lease it may return


def _bucket_of(expiration: float) -> int:
    # int() is monotone, so a later expiration is never in an earlier bucket
    return int(expiration * BUCKETS_PER_SECOND) if expiration < _FAR else _FAR_KEY


class LeaseTable:
    """The held leases by cookie (:attr:`by_cookie`, a dict) and by expiration (a lazy calendar).

    The calendar is three parts: ``_buckets``, each a list of cookies, by
    bucket number; ``_floors``, the earliest expiration filed in each bucket;
    ``_keys``, a heap of the bucket numbers. The bucket being taken apart
    (``_front_key`` and before) is a heap ``_front`` of ``(expiration, cookie)``,
    for the leases found not yet due in it: they come out in order, so the
    sleeper wakes for each at its time.
    """

    __slots__ = ("by_cookie", "_buckets", "_floors", "_keys", "_front", "_front_key", "_entries")

    def __init__(self) -> None:
        self.by_cookie: dict[str, LeasedResource] = {}
        self._buckets: dict[int, list[str]] = {}
        self._floors: dict[int, float] = {}
        self._keys: list[int] = []
        self._front: list[tuple[float, str]] = []
        self._front_key = -_FAR_KEY - 1  # every bucket number is above it until one is taken apart
        self._entries = 0  # cookies filed in the calendar, the stale ones too

    def __len__(self) -> int:
        return len(self.by_cookie)

    def add(self, leased: LeasedResource) -> None:
        """Hold ``leased`` (whose cookie is not held: the caller checks)."""
        self.by_cookie[leased.cookie] = leased
        self._file(leased.cookie, leased.expiration)

    def remove(self, cookie: str) -> LeasedResource | None:
        """Stop holding the lease ``cookie``; return it (``None``: not held).

        Its calendar entry stays, stale, until its bucket comes due (or a rebuild)."""
        leased = self.by_cookie.pop(cookie, None)
        if leased is not None and self._entries > 2 * len(self.by_cookie) + _STALE_SLACK:
            self._rebuild()
        return leased

    def moved(self, leased: LeasedResource, old: float) -> None:
        """``leased``'s expiration changed from ``old``: file it again if it now ends earlier (its
        entry, at ``old`` or before, may no longer be a lower bound; a later end needs nothing)."""
        if leased.expiration < old:
            self._file(leased.cookie, leased.expiration)

    def next_expiration(self) -> float:
        """A lower bound of the earliest expiration held (``inf``: none), exact unless
        the earliest entry is of a lease since renewed or cancelled."""
        earliest = self._front[0][0] if self._front else math.inf
        if self._keys:
            earliest = min(earliest, self._floors[self._keys[0]])
        return earliest

    def earliest(self, limit: int | None) -> list[LeasedResource]:
        """Up to ``limit`` held leases (``None``: all), earliest expiration first
        (sorted from the dict: for an operator's listing, not for a hot path)."""
        def expiration(leased: LeasedResource) -> float:
            return leased.expiration
        if limit is None:
            return sorted(self.by_cookie.values(), key=expiration)
        return heapq.nsmallest(limit, self.by_cookie.values(), key=expiration)

    def pop_due(self, due_before: float, limit: int) -> tuple[list[LeasedResource], bool]:
        """Stop holding up to ``limit`` leases whose expiration is ``due_before`` or earlier; return
        them, and whether more may be due (the work is bounded too: call again to go on).

        Leases come out bucket by bucket, earliest bucket first; within the
        bucket being taken apart, earliest first.
        """
        front = self._front
        due: list[LeasedResource] = []
        budget = _WORK_PER_DUE * limit
        while budget > 0 and len(due) < limit:
            if front and front[0][0] <= due_before:
                budget -= 1
                self._settle(heapq.heappop(front)[1], due_before, due)
                continue
            if not (self._keys and self._floors[self._keys[0]] <= due_before):
                return due, False
            budget = self._take_apart(due_before, limit, due, budget)
        return due, True

    @property
    def entries(self) -> int:
        """How many cookies the calendar holds, stale ones included (at most about twice the live leases)."""
        return self._entries

    # -- internals ----------------------------------------------------------------------

    def _file(self, cookie: str, expiration: float) -> None:
        if expiration == math.inf:
            return  # never ends: nothing to reap (a renewal to a finite term files it then)
        self._entries += 1
        key = _bucket_of(expiration)
        if key <= self._front_key:
            heapq.heappush(self._front, (expiration, cookie))
            return
        bucket = self._buckets.get(key)
        if bucket is None:
            self._buckets[key] = [cookie]
            self._floors[key] = expiration
            heapq.heappush(self._keys, key)
        else:
            bucket.append(cookie)
            if expiration < self._floors[key]:
                self._floors[key] = expiration

    def _settle(self, cookie: str, due_before: float, due: list[LeasedResource]) -> None:
        """One entry taken out of the calendar: its lease is due (freed into ``due``), renewed
        since it was filed (filed again: to the front heap if still in the bucket being taken
        apart, else to its own), or gone (a stale entry, dropped)."""
        self._entries -= 1
        leased = self.by_cookie.get(cookie)
        if leased is None:
            return  # the lease was cancelled, or already freed through another entry
        if leased.expiration <= due_before:
            del self.by_cookie[cookie]
            due.append(leased)
        else:
            self._file(cookie, leased.expiration)

    def _take_apart(self, due_before: float, limit: int, due: list[LeasedResource], budget: int) -> int:
        """Go through the earliest bucket, in the order filed: free what is due, move what was
        renewed to its bucket now, and put what is not yet due in the front heap. Return the budget left."""
        key = self._keys[0]
        self._front_key = max(self._front_key, key)  # from now on, this bucket's arrivals go to the front
        bucket = self._buckets[key]
        taken = 0
        for cookie in bucket:
            if budget <= 0 or len(due) >= limit:
                break
            taken += 1
            budget -= 1
            self._settle(cookie, due_before, due)
        if taken == len(bucket):
            heapq.heappop(self._keys)
            del self._buckets[key], self._floors[key]
        else:
            del bucket[:taken]  # what is left is filed no earlier than before: the floor stays a lower bound
        return budget

    def _rebuild(self) -> None:
        """File every held lease afresh, dropping the stale entries (amortised over the cancels that made them)."""
        self._buckets.clear()
        self._floors.clear()
        self._keys.clear()
        self._front.clear()
        self._front_key = -_FAR_KEY - 1
        self._entries = 0
        for cookie, leased in self.by_cookie.items():
            self._file(cookie, leased.expiration)
