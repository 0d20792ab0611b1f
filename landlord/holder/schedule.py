"""What to renew when: the schedule behind :class:`~landlord.LeaseRenewalManager`, as plain data.

A :class:`Schedule` holds every managed lease and answers, for a time it is
given, what is due: which leases to renew in which call, and which to let go
(their desired expiration reached, or their term over after failed
attempts). It reads no clock, starts no thread and makes no call: the
manager (:mod:`landlord.holder.renewal`) passes the time in, makes the calls, hands
the outcomes back, and tells listeners what the schedule returns. Every
rule here can be tested by calling it with numbers.

Bookkeeping is per *batch*, not per lease. Leases of one landlord (of equal
batch keys, :func:`~landlord.lease.batch_key_of`: see
:class:`~landlord.lease.BatchableLease`) that fall due within ``batch_window``
seconds of one another share one batch: one place in the queue, one due time
(the earliest of theirs), one retry state (a :class:`~landlord.Backoff` and the
last error). A lease is so renewed at its own due time or up to
``batch_window`` sooner, never later: the same rule by which leases soon due
join a call that goes to their landlord anyway. Leases renewed in one call get
the same grant at the same moment, so they come back as one batch: a round of
10,000 leases is one queue entry, not 10,000, and their next renewal time is
worked out once for each run of leases with equal deadlines and terms, not
once per lease. Leases without a batch key (not batchable) are batches of one.

The timing rules, on the holder's monotonic clock:

* :func:`renewal_time`: renew once ``renew_after`` (a third) of the term has passed;
* :func:`attempt_timeout`: an attempt waits at most half of what its lease has left,
  but at least a few times what a call of its size has been measured to take;
* :func:`retry_time`: after a failure worth retrying (:func:`landlord.transport.verdicts.classify`),
  try again after the backoff's next delay counted from when the failed attempt
  was sent, or sooner near the end, but never past the lease's deadline: a lease
  whose renewals kept failing is reported lost when its term ends.

A round takes time: each landlord's calls are timed (:class:`~landlord.holder.pace.Pace`),
and a batch is started early enough to finish while a third of its term is still
left (:func:`~landlord.holder.pace.planned_start`); a batch handed over in bulk is split
into calls started one measured call-time apart, back from that bound.
"""

from __future__ import annotations

import copy
import dataclasses
import heapq
import itertools
import math
import operator
import random as _random
from collections.abc import Callable, Hashable, Mapping

from ..duration import ANY, check_duration
from ..lease import Lease, batch_key_of
from ..transport.backoff import Backoff
from ..transport.verdicts import Verdict, classify
from .pace import Pace, finish_by, planned_start

__all__ = ["Schedule", "Call", "LeaseRenewalEvent", "LeaseWarningEvent", "Callback", "WarningCallback", "Told",
           "Warned", "renewal_time", "warning_time", "attempt_timeout", "retry_time", "RENEW_AFTER", "check_finite"]

# A lease granted up to this close to its desired expiration counts as
# reaching it: chasing the last sliver would mean a flurry of tiny renewals.
_COVER_SLACK = 1e-3
# The soonest a lease is renewed again after an attempt, so a landlord that
# grants (next to) nothing, or fails at once, cannot make the thread spin.
_MIN_GAP = 0.05
# A renewal goes out once this share of the lease's term has passed (etcd's and
# ZooKeeper's clients renew at a third too). Renewing at a half would cost a
# third fewer calls, but a partition from the moment of renewal to half the
# term would then leave nothing of the term to get through on.
RENEW_AFTER = 1 / 3
# An attempt may take this share of the time its lease has left; the rest is
# for further attempts on fresh connections.
_ATTEMPT_SHARE = 0.5
# ...but never less than this many seconds (unless less is left): a connection,
# Pyro5's handshake and one call need a few round trips...
_MIN_ATTEMPT = 0.1
# ...nor less than this many times what a call of its size has been measured to
# take: a slow landlord still working on a call must not be sent it again.
_SLOW_FACTOR = 3.0

# What a batch's due time is for. Renewals and retries of one landlord join
# one call when due close together; a drop happens at its own time.
_RENEW, _RETRY, _DROP = 0, 1, 2


def renewal_time(now: float, deadline: float, term: float, *, renew_after: float = RENEW_AFTER) -> float:
    """When to renew a lease of ``term`` seconds that ends at ``deadline``, as seen at ``now``.

    Once ``renew_after`` of the term has passed: at ``deadline - (1 - renew_after) * term``,
    so with the default a 3 s lease is renewed after 1 s, a one-hour lease
    after 20 min; never before ``now`` nor after ``deadline``. A lease with
    less than ``(1 - renew_after) * term`` left (one that arrived late, or
    missed renewals) is renewed at once.

    Args:
        now: the current time (the manager uses its monotonic clock).
        deadline: when the lease ends, on the same clock (``math.inf`` for FOREVER).
        term: the seconds last granted to the lease (``lease.term``).
        renew_after: the share of the term after which to renew, above 0 and below 1.

    Returns:
        A time on that clock no earlier than ``now``; ``math.inf`` for a lease
        that never ends (it needs no renewal); ``now`` for a lease already expired.
    """
    if math.isinf(deadline):
        return math.inf  # inf - inf would be NaN below
    if deadline <= now:
        return now
    lead = (1 - renew_after) * (term if math.isfinite(term) else deadline - now)
    return min(max(deadline - lead, now), deadline)


def attempt_timeout(left: float, expected: float = 0.0) -> float:
    """The longest one renewal attempt may wait when its lease has ``left`` seconds to run.

    Half of what is left, but at least 0.1 s and three times ``expected``, what
    a call of its size has been measured to take (never more than is left):
    an attempt stuck on a dead connection gives up while there is still time
    for another on a fresh one, and each further attempt gets half as long;
    a landlord that is slow but working is waited for, not sent the same
    renewals again while it still works on them.
    """
    floor = max(_MIN_ATTEMPT, _SLOW_FACTOR * expected)
    return min(max(left, 0.0), max(left * _ATTEMPT_SHARE, floor)) or _MIN_ATTEMPT


def warning_time(now: float, deadline: float, term: float, warn_before: float, *,
                 renew_after: float = RENEW_AFTER) -> float:
    """When to warn that a lease ending at ``deadline`` has not been renewed, if it still has not been.

    ``warn_before`` seconds before its end, but never before half the time
    from its renewal (:func:`renewal_time`) to its end has passed: by then
    the first attempt has been answered or has given up
    (:func:`attempt_timeout`), so a healthy lease renewed on time is never
    warned about, however large ``warn_before`` is.
    """
    return max(deadline - warn_before, finish_by(renewal_time(now, deadline, term, renew_after=renew_after), deadline))


def retry_time(now: float, deadline: float, delay: float, *, waited: float = 0.0) -> float:
    """When to try again to renew a lease that ends at ``deadline``, after an attempt failed at ``now``.

    The backoff's ``delay`` counts from when the failed attempt was sent,
    ``waited`` seconds before ``now``: one that timed out has waited already,
    and a link that healed meanwhile is tried again at once. Near the end, half
    the time left is taken rather than overshoot it: every chance to reach the
    landlord in time is taken. Never sooner than 50 ms after ``now`` (a landlord
    that fails at once must not make the thread spin), never after
    ``deadline`` (the lease is then lost, and reported).

    Args:
        now: when the attempt failed.
        deadline: when the lease ends, on the same clock.
        delay: the backoff's next delay (:meth:`Backoff.next_delay`).
        waited: how long the failed attempt waited for an answer.
    """
    retry = now + max(min(delay - waited, (deadline - now) / 2), _MIN_GAP)
    return deadline if retry >= deadline else retry


@dataclasses.dataclass(frozen=True, slots=True)
class LeaseRenewalEvent:
    """What a listener is told about a lease the manager has stopped renewing.

    Attributes:
        lease: the lease, no longer managed when the callback runs.
        expiration: its desired expiration (wall clock; ``math.inf`` for FOREVER).
        exception: why it was lost, or ``None`` when its desired expiration was reached.
    """

    lease: Lease
    expiration: float
    exception: BaseException | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class LeaseWarningEvent:
    """A warning about a lease the manager still keeps: it will soon end.

    Attributes:
        lease: the lease, still managed when the callback runs.
        expiration: its desired expiration (wall clock; ``math.inf`` for FOREVER).
        reason: ``"desired"``: its desired expiration comes within the warning
            time (renew the manager's hold with :meth:`~landlord.LeaseRenewalManager.set_expiration`
            to keep it); ``"unrenewed"``: the lease itself ends within the warning
            time and has not been renewed (its landlord is slow or unreachable).
        left: seconds from the warning to that end (the desired expiration, or the lease's).
        exception: the last failed renewal's error, if there was one.
    """

    lease: Lease
    expiration: float
    reason: str
    left: float
    exception: BaseException | None = None


Callback = Callable[[LeaseRenewalEvent], object]
WarningCallback = Callable[[LeaseWarningEvent], object]
Told = tuple[Callback | None, LeaseRenewalEvent]  # whom to tell (None: nobody, log it) what
Warned = tuple[WarningCallback, LeaseWarningEvent]
_DESIRED, _UNRENEWED = "desired", "unrenewed"


class _Kept:
    """One managed lease: what its holder asked for, and the batch it is in."""

    __slots__ = ("lease", "key", "desired", "desired_wall", "renew_duration", "listener", "on_desired", "batch",
                 "warning")

    def __init__(self, lease: Lease, desired: float, desired_wall: float, renew_duration: float,
                 listener: Callback | None, on_desired: Callback | None,
                 warning: tuple[WarningCallback, float] | None = None) -> None:
        self.lease = lease
        self.key = batch_key_of(lease)
        self.desired = desired  # monotonic
        self.desired_wall = desired_wall  # as given
        self.renew_duration = renew_duration
        self.listener = listener
        self.on_desired = on_desired
        self.warning = warning  # whom to warn, and how many seconds before an end
        # Set exactly while the lease is managed by this entry: cleared when it is removed,
        # replaced or dropped, which is how a call in flight learns to ignore it.
        self.batch: _Batch | None = None


class _Batch:
    """Leases of one landlord sharing one due time and one retry state."""

    __slots__ = ("key", "kind", "due", "at", "part", "members", "live", "token", "taken", "backoff", "error")

    def __init__(self, key: Hashable | None, kind: int, due: float, members: list[_Kept],
                 backoff: Backoff | None = None, error: BaseException | None = None, *,
                 at: float | None = None, part: int = 0) -> None:
        self.key = key
        self.kind = kind
        self.due = due
        self.at = due if at is None else at  # its renewal time as the terms say; ``due`` may be planned sooner
        self.part = part  # of a batch handed over in bulk and split (0: the first, or not split)
        self.members = members  # those whose .batch is no longer this one have left
        self.live = len(members)
        self.token: int | None = None  # matches its heap item while queued
        self.taken = False  # its leases went out in calls; each leaves it when its call returns
        self.backoff = backoff  # None until a call of these leases failed and may be retried
        self.error = error  # the last such failure, reported if the leases run out


class Call:
    """One renewal call to make: leases of one landlord, or one lease without a batch key.

    Made by :meth:`Schedule.take_due`; hand it back to :meth:`Schedule.finished`
    with the outcome.

    Attributes:
        key: the leases' batch key; ``None`` for a lease renewed on its own.
        sent: when the call was taken to be sent (the retry backoff counts from it).
        finish: when it should be done by (:func:`~landlord.holder.pace.finish_by`, for its first lease to end).
    """

    __slots__ = ("key", "sent", "finish", "_members", "_backoff", "_pace", "_deadline")

    def __init__(self, key: Hashable | None, members: list[_Kept], sent: float, backoff: Backoff | None, *,
                 pace: Pace | None = None, renew_after: float = RENEW_AFTER) -> None:
        self.key = key
        self.sent = sent
        self._pace = pace  # its landlord's, measured by every call to it (those before this one in its round too)
        first = min(members, key=_deadline).lease
        # its leases' deadlines move only when it is answered: the first one's end, once for the call
        self._deadline = first.deadline
        # as the terms say: done while (1 - renew_after) / 2 of the term (a third) is left; for a lease
        # handed over with less than that left, within the first half of what it had
        finish = finish_by(first.deadline - (1 - renew_after) * first.term, first.deadline)
        self.finish = finish if sent <= finish else finish_by(sent, first.deadline)
        self._members = members
        self._backoff = backoff

    @property
    def lane(self) -> Hashable:
        """The lane to send it on: one per landlord, one per lease without a key."""
        return self.key if self.key is not None else ("lease", id(self._members[0].lease))

    @property
    def first(self) -> Lease:
        """One of its leases (they share a landlord): what tells where the call goes."""
        return self._members[0].lease

    def requests(self) -> tuple[list[Lease], list[float]]:
        """The leases, and the seconds to ask for each: its ``renew_duration``, but no
        further than its desired expiration (as seen at :attr:`sent`); ``ANY`` stays ``ANY``."""
        sent = self.sent
        leases = [kept.lease for kept in self._members]
        # min() spelt out: this runs once per lease of every round
        durations = [asked if (asked := kept.renew_duration) == ANY or (left := kept.desired - sent) >= asked
                     else left for kept in self._members]
        return leases, durations

    def deadline(self) -> float:
        """When the first of its leases ends (the call must not wait past it: :func:`attempt_timeout`),
        as it did when the call was made."""
        return self._deadline

    @property
    def expected(self) -> float:
        """The seconds a call of its size to its landlord has been measured to take (0: not yet)."""
        return self._pace.expected(len(self._members)) if self._pace is not None else 0.0

    def timeout(self, now: float) -> float:
        """The longest it may wait if sent at ``now`` (:func:`attempt_timeout`)."""
        return attempt_timeout(self.deadline() - now, self.expected)

    def __len__(self) -> int:
        return len(self._members)

    def __repr__(self) -> str:
        return f"<Call of {len(self._members)} lease(s), key {self.key!r}>"


class _Queue:
    """Batches by due time: a heap whose items stay live while their batch's token matches."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Batch]] = []  # (due, token, batch); stale items skipped
        self._tokens = itertools.count()
        self._live = 0  # batches with a live item

    def __len__(self) -> int:
        return self._live

    def push(self, batch: _Batch) -> None:
        """Queue a batch not queued yet; one never due (``math.inf``) is left out."""
        if math.isinf(batch.due):
            return
        heap = self._heap
        if len(heap) > 2 * self._live + 64:  # batches emptied leave stale items behind: drop them
            self._heap = heap = [item for item in heap if item[2].token == item[1]]
            heapq.heapify(heap)
        batch.token = token = next(self._tokens)
        heapq.heappush(heap, (batch.due, token, batch))
        self._live += 1

    def discard(self, batch: _Batch) -> None:
        if batch.token is not None:
            batch.token = None
            self._live -= 1

    def first(self) -> float:
        """When the first batch is due; ``math.inf`` if none is queued."""
        heap = self._heap
        while heap and heap[0][2].token != heap[0][1]:
            heapq.heappop(heap)
        return heap[0][0] if heap else math.inf

    def pop_due(self, time: float, accept: Callable[[_Batch], bool] | None = None) -> list[_Batch]:
        """Take out the batches due by ``time`` (those ``accept`` takes, if given), soonest first."""
        heap, taken, held = self._heap, [], []
        while heap and heap[0][0] <= time:
            item = heapq.heappop(heap)
            batch = item[2]
            if batch.token != item[1]:
                continue
            if accept is None or accept(batch):
                self.discard(batch)
                taken.append(batch)
            else:
                held.append(item)
        for item in held:
            heapq.heappush(heap, item)
        return taken

    def clear(self) -> None:
        for _, _, batch in self._heap:
            batch.token = None
        self._heap.clear()
        self._live = 0


class Schedule:
    """Every managed lease, in batches queued by due time.

    Not thread-safe: its owner calls it under one lock. Times are seconds on
    the holder's monotonic clock, but for the wall-clock ``desired_wall``,
    which is only reported back.

    Args:
        renew_after: the share of a lease's term after which it is renewed
            (see :func:`renewal_time`), above 0 and below 1.
        batch_window: a lease due within this many seconds of a call to its
            landlord goes in it, rather than waiting for one of its own.
        max_batch: the most leases in one call.
        retry_initial: the first retry delay's ceiling, in seconds
            (:class:`~landlord.Backoff`: doubling, jittered)...
        retry_max: ...and the largest.
        random: the backoff's jitter source, a float in ``[0, 1)`` per draw.

    Raises:
        ValueError: ``renew_after`` not a number strictly between 0 and 1;
            ``batch_window``, ``retry_initial`` or ``retry_max`` negative, NaN,
            infinite or not a number; ``retry_initial`` not positive,
            ``retry_max < retry_initial``; ``max_batch`` not a positive int.
    """

    def __init__(self, *, renew_after: float = RENEW_AFTER, batch_window: float = 1.0, max_batch: int = 10_000,
                 retry_initial: float = 1.0, retry_max: float = 60.0,
                 random: Callable[[], float] = _random.random) -> None:
        if isinstance(renew_after, bool) or not isinstance(renew_after, (int, float)) or not 0 < renew_after < 1:
            raise ValueError(f"renew_after must be a share of the term above 0 and below 1, got {renew_after!r}")
        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise ValueError(f"max_batch must be a positive int, got {max_batch!r}")
        self._window = check_finite(batch_window, "batch_window")
        retry_initial, retry_max = check_finite(retry_initial, "retry_initial"), check_finite(retry_max, "retry_max")
        if not retry_initial > 0 or retry_max < retry_initial:
            raise ValueError(f"need 0 < retry_initial <= retry_max, got {retry_initial!r} and {retry_max!r}")
        self._renew_after = float(renew_after)
        self._max_batch = max_batch
        self._retry = (retry_initial, retry_max, random)
        self._kept: dict[Lease, _Kept] = {}
        self._queue = _Queue()
        self._open: dict[Hashable, _Batch] = {}  # per key, the batch a lease added next may join
        self._paces: dict[Hashable, Pace] = {}  # per key, how long its calls take
        # warnings to give: (when, order, lease's entry, reason, the end it is about); one whose lease
        # was let go, or whose end has moved since (renewed, a new desired expiration), is skipped
        self._alarms: list[tuple[float, int, _Kept, str, float]] = []
        self._alarm_order = itertools.count()

    # -- the managed set ---------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._kept)

    def expiration(self, lease: Lease) -> float | None:
        """The desired expiration of ``lease`` as it was given (wall clock); ``None`` if not managed."""
        kept = self._kept.get(lease)
        return None if kept is None else kept.desired_wall

    def queued(self) -> int:
        """How many batches wait in the queue: a batch of any size counts once."""
        return len(self._queue)

    def add(self, lease: Lease, *, desired: float, desired_wall: float, renew_duration: float, now: float,
            listener: Callback | None = None, on_desired: Callback | None = None,
            on_warning: WarningCallback | None = None, warn_before: float = 0.0) -> None:
        """Manage ``lease`` (with these settings instead of its old ones, if managed already).

        Its next step is queued as seen at ``now``: a renewal at :func:`renewal_time`,
        or, if it is granted to its desired expiration already, its drop then. A
        call in flight for it is ignored when it returns.

        Args:
            lease: the lease.
            desired: its desired expiration on the monotonic clock (``math.inf``: none).
            desired_wall: the same, as given on the wall clock (reported back).
            renew_duration: the most to ask for in one renewal (``ANY``: the landlord's choice).
            now: the current time.
            listener: told if the lease is lost.
            on_desired: told when its desired expiration is reached.
            on_warning: warned ``warn_before`` seconds before its desired expiration, and
                before the lease itself ends unrenewed (:func:`warning_time`).
            warn_before: seconds; used with ``on_warning`` only.
        """
        old = self._kept.get(lease)
        if old is not None:
            self._detach(old)
        warning = (on_warning, warn_before) if on_warning is not None else None
        kept = _Kept(lease, desired, desired_wall, renew_duration, listener, on_desired, warning)
        self._kept[lease] = kept
        self._place(kept, now)
        if warning is not None:
            self._alarm_desired(kept, now)
            self._alarm_unrenewed(kept, now)

    def set_expiration(self, lease: Lease, *, desired: float, desired_wall: float, now: float) -> bool:
        """Change the desired expiration of a managed lease; ``False`` if it is not managed."""
        kept = self._kept.get(lease)
        if kept is None:
            return False
        kept.desired, kept.desired_wall = desired, desired_wall
        if kept.warning is not None:
            self._alarm_desired(kept, now)
        batch = kept.batch
        if batch is not None and not batch.taken:  # else its call, when it returns, queues it anew
            self._detach(kept)
            self._place(kept, now)
        return True

    def remove(self, lease: Lease) -> bool:
        """Stop managing ``lease``; ``False`` if it was not managed."""
        kept = self._kept.pop(lease, None)
        if kept is None:
            return False
        self._detach(kept)
        return True

    def let_go(self, lease: Lease, error: BaseException) -> Told | None:
        """Stop managing ``lease`` because of ``error`` (its landlord revoked it, say); whom
        to tell what, or ``None`` if it was not managed."""
        kept = self._kept.pop(lease, None)
        if kept is None:
            return None
        self._detach(kept)
        return kept.listener, LeaseRenewalEvent(kept.lease, kept.desired_wall, error)

    def clear(self) -> None:
        """Stop managing every lease; calls in flight are ignored when they return."""
        for kept in self._kept.values():
            kept.batch = None
        self._kept.clear()
        self._queue.clear()
        self._open.clear()
        self._alarms.clear()

    # -- what is due -------------------------------------------------------------------

    def next_due(self) -> float:
        """When the first queued batch or warning is due; ``math.inf`` if none is."""
        first = self._queue.first()
        return min(first, self._alarms[0][0]) if self._alarms else first

    def take_warnings(self, now: float) -> list[Warned]:
        """The warnings due at ``now``: whom to warn, with what. Each is given once, and only if
        it still holds: the lease is still managed, and the end it is about has not moved."""
        alarms, warned = self._alarms, []
        while alarms and alarms[0][0] <= now:
            _, _, kept, reason, end = heapq.heappop(alarms)
            if kept.warning is None or self._kept.get(kept.lease) is not kept:
                continue
            if reason == _DESIRED:
                if end != kept.desired:
                    continue
            elif end != kept.lease.deadline or end >= kept.desired - _COVER_SLACK:
                continue  # renewed since, or granted to its desired expiration
            error = kept.batch.error if kept.batch is not None else None
            warned.append((kept.warning[0], LeaseWarningEvent(kept.lease, kept.desired_wall, reason,
                                                              max(end - now, 0.0), error)))
        return warned

    def take_due(self, now: float) -> tuple[list[Call], list[Told]]:
        """Take what is due at ``now``: the calls to make, and whom to tell what of the leases let go.

        A lease whose desired expiration has come is let go (``on_desired``, no
        exception); so is one whose renewals failed until its deadline came
        (``listener``, the last error). A landlord's other due leases go in
        calls of at most ``max_batch``, joined by its renewals due within
        ``batch_window``; a lease without a batch key goes in a call of its own.
        Their leases are out until the call is :meth:`finished`.
        """
        told: list[Told] = []
        by_key: dict[Hashable, list[_Batch]] = {}
        singles: list[_Batch] = []
        for batch in self._queue.pop_due(now):
            if batch.key is None:
                singles.append(batch)
            else:
                by_key.setdefault(batch.key, []).append(batch)
        if by_key and self._window > 0:  # renewals soon due join a call that goes to their landlord anyway
            for batch in self._queue.pop_due(now + self._window, lambda b: b.kind != _DROP and b.key in by_key):
                by_key[batch.key].append(batch)
        calls: list[Call] = []
        after = self._renew_after
        for key, batches in by_key.items():
            members = _collect(batches, now, told, self._kept)
            backoff = max((b.backoff for b in batches if b.backoff is not None), key=_failures, default=None)
            pace = self._pace(key)
            for start in range(0, len(members), self._max_batch):  # each call backs off on its own
                calls.append(Call(key, members[start:start + self._max_batch], now,
                                  backoff if start == 0 else copy.copy(backoff), pace=pace, renew_after=after))
        for batch in singles:
            members = _collect([batch], now, told, self._kept)
            calls.extend([Call(None, members, now, batch.backoff, renew_after=after)] if members else [])
        return calls, told

    def finished(self, call: Call, now: float, *, failures: Mapping[Lease, BaseException] | None = None,
                 error: BaseException | None = None, started: float | None = None) -> list[Told]:
        """Record how ``call`` went, as seen at ``now``, and queue its leases' next steps.

        How long it took is measured for its landlord (:class:`~landlord.holder.pace.Pace`,
        which warns if the landlord cannot be kept up with). A lease renewed is
        queued for its next renewal (at least 50 ms on), started early enough
        that a call like this one finishes in time (:func:`~landlord.holder.pace.planned_start`);
        one refused (a definite answer, :func:`~landlord.transport.verdicts.classify`) is let go;
        one whose call may be retried is queued for :func:`retry_time` with the
        call's backoff, or let go if its deadline has come. Leases removed or
        replaced while the call was out are left alone.

        Args:
            call: a call from :meth:`take_due`, finished.
            now: when it returned.
            failures: the leases that failed, with why (a batch call's answer).
            error: what the whole call raised, if it did: every lease in it failed so.
            started: when it was actually sent (default :attr:`Call.sent`; later when it
                waited for its landlord's lane).

        Returns:
            Whom to tell what, of the leases let go.
        """
        told: list[Told] = []
        retry: dict[float, list[_Kept]] = {}
        drop: dict[float, list[_Kept]] = {}
        expected, busy = self._measure(call, now, call.sent if started is None else started, error is None)
        if error is None and not failures:  # the usual answer: every lease renewed
            renewed, backoff, last_error = call._members, call._backoff, None
        else:
            renewed, backoff, last_error = self._failed(call, now, failures, error, retry, told)
        fresh = self._next_renewals(renewed, now, expected, busy, drop)
        for kind, by_due in ((_RENEW, fresh), (_RETRY, retry), (_DROP, drop)):
            for i, (due, members) in enumerate(_sweep(by_due, self._window if kind != _DROP else 0.0)):
                # each batch backs off on its own
                self._new_batch(call.key, kind, due, members, backoff if i == 0 else copy.copy(backoff), last_error)
        return told

    def _failed(self, call: Call, now: float, failures: Mapping[Lease, BaseException] | None,
                error: BaseException | None, retry: dict[float, list[_Kept]],
                told: list[Told]) -> tuple[list[_Kept], Backoff | None, BaseException | None]:
        """Sort out a call that failed in whole (``error``) or in part (``failures``): the leases
        renewed all the same; those to retry go in ``retry`` by due time, those let go in ``told``.

        Returns:
            The leases renewed, the backoff the retries share, and the last error to retry after.
        """
        renewed: list[_Kept] = []
        whole = None if error is None else classify(error)  # the same for every lease in the call
        backoff, delay, last_error = call._backoff, math.nan, None
        for kept in call._members:
            if kept.batch is None:
                continue  # removed, replaced or cleared while the call was out
            exc = error if error is not None else failures.get(kept.lease) if failures else None
            if exc is None:
                renewed.append(kept)
            elif (whole if whole is not None else classify(exc)) is Verdict.RETRY and now < kept.lease.deadline:
                if math.isnan(delay):  # one draw per call: its leases back off together
                    if backoff is None:
                        backoff = Backoff(self._retry[0], self._retry[1], random=self._retry[2])
                    delay = backoff.next_delay()
                due = retry_time(now, kept.lease.deadline, delay, waited=now - call.sent)
                retry.setdefault(min(due, kept.desired), []).append(kept)
                last_error = exc
            else:  # a definite answer, or retried until the lease ran out
                self._end(kept)
                told.append((kept.listener, LeaseRenewalEvent(kept.lease, kept.desired_wall, exc)))
        return renewed, backoff, last_error

    def _next_renewals(self, renewed: list[_Kept], now: float, expected: float, busy: bool,
                       drop: dict[float, list[_Kept]]) -> dict[float, list[_Kept]]:
        """The next renewal of each lease just ``renewed``, as seen at ``now``, by due time (those
        granted to their desired expiration go in ``drop`` instead), for a landlord whose calls of
        this size take ``expected`` seconds and whose lane is ``busy`` or not.

        Leases renewed in one call share their deadline and term (one grant, one moment), so
        their due time is worked out once for each run of equal ones, not once per lease.
        """
        fresh: dict[float, list[_Kept]] = {}
        plan, after, soonest = busy or expected > 0, self._renew_after, now + _MIN_GAP
        last_deadline = last_term = math.nan  # NaN equals nothing: the first lease works its due out
        group: list[_Kept] = []
        for kept in renewed:
            if kept.batch is None:
                continue  # removed, replaced or cleared while the call was out
            lease = kept.lease
            deadline, term = lease.deadline, lease.term
            if deadline >= kept.desired - _COVER_SLACK:
                drop.setdefault(kept.desired, []).append(kept)
                continue
            if deadline != last_deadline or term != last_term:
                due = renewal_time(now, deadline, term, renew_after=after)
                if plan:  # a landlord measured: no call at all per lease before that
                    due = planned_start(due, deadline, expected, now, busy=busy)
                group = fresh.setdefault(max(due, soonest), [])
                last_deadline, last_term = deadline, term
            group.append(kept)
            if kept.warning is not None:
                self._alarm_unrenewed(kept, now)
        return fresh

    # -- bookkeeping ---------------------------------------------------------------------

    def _pace(self, key: Hashable) -> Pace:
        pace = self._paces.get(key)
        if pace is None:
            pace = self._paces[key] = Pace()
        return pace

    def _measure(self, call: Call, now: float, started: float, answered: bool) -> tuple[float, bool]:
        """Record how long ``call`` took for its landlord, if it ``answered`` (a call that timed out
        or found no one says nothing of its pace): what a call of its size is now expected to take,
        and whether its lane is busy (:meth:`~landlord.holder.pace.Pace.busy`)."""
        if call.key is None:
            return 0.0, False  # one lease per call: its time is a round trip, nothing to plan by
        pace = self._pace(call.key)
        if answered:
            first = call._members[0].lease
            pace.record(call.key, started=started, ended=now, leases=len(call), term=first.term,
                        late=now - call.finish)
        return pace.expected(len(call)), pace.busy()

    def _place(self, kept: _Kept, now: float) -> None:
        """Queue a lease's next step on its own, or in its landlord's open batch when that is due
        at most ``batch_window`` sooner (it would join that batch's call anyway).

        A full open batch (``max_batch`` leases: a call's worth) is followed by
        another, and once calls have been measured each such part is planned to
        start one call-time before the one opened before it, so that sent one
        after the other they all finish in time (:func:`~landlord.holder.pace.planned_start`);
        the first part is due at its renewal time.
        """
        lease = kept.lease
        if lease.deadline >= kept.desired - _COVER_SLACK:
            self._new_batch(kept.key, _DROP, kept.desired, [kept])
            return
        at = renewal_time(now, lease.deadline, lease.term, renew_after=self._renew_after)
        batch = self._open.get(kept.key) if kept.key is not None else None
        if batch is not None and batch.token is not None and batch.at <= at <= batch.at + self._window:
            if batch.live < self._max_batch:
                batch.members.append(kept)
                batch.live += 1
                kept.batch = batch
                return
            part = batch.part + 1
        else:
            part = 0
        # part k goes out k full calls before the bound, so the parts before it finish in time too; the
        # first part's size is not known yet, and it fits if a call of max_batch does
        pace = self._paces.get(kept.key) if kept.key is not None else None
        expected = part * pace.expected(self._max_batch) if pace is not None else 0.0
        due = planned_start(at, lease.deadline, expected, now, busy=pace is not None and pace.busy())
        self._new_batch(kept.key, _RENEW, due, [kept], at=at, part=part)

    def _new_batch(self, key: Hashable | None, kind: int, due: float, members: list[_Kept],
                   backoff: Backoff | None = None, error: BaseException | None = None, *,
                   at: float | None = None, part: int = 0) -> None:
        batch = _Batch(key, kind, due, members, backoff if kind == _RETRY else None, error if kind == _RETRY else None,
                       at=at, part=part)
        for kept in members:
            kept.batch = batch
        if kind == _RENEW and key is not None:
            self._open[key] = batch
        self._queue.push(batch)

    def _alarm_desired(self, kept: _Kept, now: float) -> None:
        """Warn before the desired expiration (at once if it is nearer than the warning time)."""
        assert kept.warning is not None
        if math.isfinite(kept.desired):
            self._alarm(max(kept.desired - kept.warning[1], now), kept, _DESIRED, kept.desired)

    def _alarm_unrenewed(self, kept: _Kept, now: float) -> None:
        """Warn before the lease's current end, if it is not renewed by then (:func:`warning_time`)."""
        assert kept.warning is not None
        deadline = kept.lease.deadline
        if now < deadline < kept.desired - _COVER_SLACK:
            at = warning_time(now, deadline, kept.lease.term, kept.warning[1], renew_after=self._renew_after)
            self._alarm(at, kept, _UNRENEWED, deadline)

    def _alarm(self, at: float, kept: _Kept, reason: str, end: float) -> None:
        heapq.heappush(self._alarms, (at, next(self._alarm_order), kept, reason, end))

    def _detach(self, kept: _Kept) -> None:
        """Take a lease out of its batch; a batch left empty leaves the queue."""
        batch, kept.batch = kept.batch, None
        if batch is None or batch.taken:
            return
        batch.live -= 1
        if batch.live == 0:
            self._queue.discard(batch)
            batch.members = []
        elif batch.live * 2 < len(batch.members) and len(batch.members) > 32:
            batch.members = [k for k in batch.members if k.batch is batch]

    def _end(self, kept: _Kept) -> None:
        """Stop managing a lease that is due or out in a call (so in no queued batch)."""
        del self._kept[kept.lease]
        kept.batch = None


def _collect(batches: list[_Batch], now: float, told: list[Told], kept_by_lease: dict[Lease, _Kept]) -> list[_Kept]:
    """The leases of ``batches`` to renew now. Those to let go instead (their desired expiration
    come, or their deadline after failed renewals) leave ``kept_by_lease``, and ``told`` says so."""
    members: list[_Kept] = []
    for batch in batches:
        live = [kept for kept in batch.members if kept.batch is batch]
        if len(live) != batch.live:  # one taken out and placed back in the same batch is listed twice
            live = list(dict.fromkeys(live))
        error = batch.error
        if error is None:
            staying = [kept for kept in live if now < kept.desired]
        else:  # retried until it actually expired: let go
            staying = [kept for kept in live if now < kept.desired and now < kept.lease.deadline]
        if len(staying) != len(live):
            _let_go(live, now, error, told, kept_by_lease)
        members += staying
        batch.taken, batch.members = True, []
    return members


def _let_go(live: list[_Kept], now: float, error: BaseException | None, told: list[Told],
            kept_by_lease: dict[Lease, _Kept]) -> None:
    """Of the leases of a batch taken at ``now``, let go those whose desired expiration has come
    (``on_desired``), or whose deadline has after failed renewals (``listener``, with ``error``)."""
    for kept in live:
        if now >= kept.desired:
            told.append((kept.on_desired, LeaseRenewalEvent(kept.lease, kept.desired_wall, None)))
        elif error is not None and now >= kept.lease.deadline:
            told.append((kept.listener, LeaseRenewalEvent(kept.lease, kept.desired_wall, error)))
        else:
            continue
        del kept_by_lease[kept.lease]
        kept.batch = None


def _sweep(by_due: dict[float, list[_Kept]], window: float) -> list[tuple[float, list[_Kept]]]:
    """Leases by due time, in groups that each span at most ``window`` from their first (its due)."""
    if len(by_due) <= 1:
        return list(by_due.items())
    groups: list[tuple[float, list[_Kept]]] = []
    for due in sorted(by_due):
        if groups and due <= groups[-1][0] + window:
            groups[-1][1].extend(by_due[due])
        else:
            groups.append((due, list(by_due[due])))
    return groups


def _failures(backoff: Backoff) -> int:
    return backoff.failures


_deadline = operator.attrgetter("lease.deadline")  # of a _Kept; a key for min(), with no Python frame per lease


def check_finite(value: object, name: str) -> float:
    """A finite, non-negative number of seconds.

    Raises:
        ValueError: a negative number, NaN, infinity or a non-number.
    """
    value = check_duration(value, name=name, allow_any=False)
    if math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value
