"""Keep leases alive from one background thread: :class:`LeaseRenewalManager`.

A holder hands its leases to a manager with a *desired* expiration (how long
it wants each lease, possibly ``FOREVER``); the manager renews them in time,
batches the renewals of leases that share a landlord, and tells the holder
through callbacks when a lease is lost or its desired expiration is reached.

Each renewal asks for the lease's own term again (``lease.term``, what the
landlord granted last) unless told otherwise, so a 3 s lease renewed for an
hour is still a 3 s lease, and a holder that dies frees its resource within
about 3 s. When to renew is :func:`renewal_time`: once a third of the term
has passed, as etcd's and ZooKeeper's clients do, which leaves two thirds of
the term to get through, so a partition of up to half the term loses nothing.

What happens on failure:

* a :class:`~landlord.LeaseError` (denied, unknown) is definite: the lease is
  dropped and its ``listener`` told at once;
* a Pyro5 ``CommunicationError`` is indefinite: the renewal is retried until
  the lease has actually expired by the holder's clock, and only then dropped
  and reported with the last error. No attempt waits past half the time its
  lease has left (:func:`attempt_timeout`): a call stuck on a dead connection
  gives up, the connection is dropped, and the next attempt goes out on a
  fresh one, at shrinking intervals as the end nears, so a lease is reported
  lost when its term ends, not when the link comes back;
* any other exception is treated as definite (nothing suggests retrying helps).

Failed renewals are logged at WARNING on ``landlord.renewal``.

Every time here is on the holder's monotonic clock (``clock.monotonic()``),
the clock ``lease.deadline`` is on: a step of the wall clock neither delays
nor hurries a renewal. Desired expirations are given and reported on the wall
clock, as ``lease.expiration`` is, and converted when they are given.

One thread decides what is due; the remote calls go out on a few worker
threads, one :mod:`lane <landlord.lanes>` per landlord, so a landlord that
hangs (until the call timeout, :func:`landlord.set_call_timeout`) holds up
its own renewals and no one else's.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import itertools
import logging
import math
import numbers
import threading
import warnings
from collections.abc import Callable, Hashable
from types import TracebackType

import Pyro5.errors

from . import proxies
from .clock import SYSTEM_CLOCK, Clock
from .duration import ANY, check_duration
from .errors import UnknownLeaseError
from .landlordlease import CALL_BATCH
from .lanes import Lanes
from .lease import Lease

__all__ = ["LeaseRenewalManager", "LeaseRenewalEvent", "renewal_time", "attempt_timeout", "RENEW_AFTER"]

log = logging.getLogger(__name__)

# A lease granted up to this close to its desired expiration counts as
# reaching it: chasing the last sliver would mean a flurry of tiny renewals.
_COVER_SLACK = 1e-3
# The soonest a lease is renewed again after an attempt, so a landlord that
# grants (next to) nothing cannot make the thread spin.
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
# Pyro5's handshake and one call need a few round trips.
_MIN_ATTEMPT = 0.1


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


def attempt_timeout(left: float) -> float:
    """The longest one renewal attempt may wait when its lease has ``left`` seconds to run.

    Half of what is left, but at least 0.1 s (or all of it, when less is left):
    an attempt stuck on a dead connection gives up while there is still time
    for another on a fresh one, and each further attempt gets half as long.
    """
    return min(max(left, 0.0), max(left * _ATTEMPT_SHARE, _MIN_ATTEMPT)) or _MIN_ATTEMPT


@dataclasses.dataclass(frozen=True)
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


Callback = Callable[[LeaseRenewalEvent], object]


class _Entry:
    """One managed lease and its renewal state (guarded by the manager's lock)."""

    __slots__ = ("lease", "key", "desired", "desired_wall", "renew_duration", "listener", "on_desired",
                 "token", "busy", "last_error", "failures")

    def __init__(self, lease: Lease, key: Hashable | None, desired: tuple[float, float], renew_duration: float,
                 listener: Callback | None, on_desired: Callback | None) -> None:
        # renew_duration: what each renewal asks for at most (the lease's term when it was handed over, by default)
        self.lease = lease
        self.key = key
        self.desired_wall, self.desired = desired  # as given (wall clock), and as kept (monotonic)
        self.renew_duration = renew_duration
        self.listener = listener
        self.on_desired = on_desired
        self.token: int | None = None  # matches its live heap item; None: not queued
        self.busy = False  # a renewal is in flight
        self.last_error: BaseException | None = None
        self.failures = 0  # consecutive indefinite failures


class LeaseRenewalManager:
    """Keeps leases renewed until their desired expiration, from one background thread.

    Leases may be added, changed and removed from any thread. Callbacks run on
    the manager's threads, after the lease has been removed and with no lock
    held, so they may call back into the manager; an exception in a callback
    is logged and ignored.

    Leases whose ``_batch_key()`` is equal (a :class:`~landlord.LandlordLease`
    of the same landlord) and that fall due within ``batch_window`` seconds of
    one another are renewed in one remote call (up to ``max_batch`` leases per
    call); leases without a key are renewed one by one.

    Args:
        clock: the holder's clocks: renewals are timed on its ``monotonic()``
            (the clock of ``lease.deadline``), desired expirations given on its ``time()``.
        renew_after: the share of a lease's term after which it is renewed
            (default a third; see :func:`renewal_time`), above 0 and below 1.
        round_trip_allowance: deprecated and ignored (it shaped the schedule
            before renewals went out at a share of the term); giving it warns.
        batch_window: a lease due within this many seconds joins a batch going
            to its landlord now, rather than waiting for a call of its own.
        retry_initial: the first delay, in seconds, before retrying after a
            communication failure; it doubles with each further failure...
        retry_max: ...up to this many seconds.
        max_batch: the most leases renewed in one call (default ``CALL_BATCH``, 10,000).
        workers: the most remote calls in flight at once (to different landlords).
        name: the background thread's name.

    Raises:
        ValueError: an option out of range (negative, NaN, infinite, or
            ``renew_after`` not strictly between 0 and 1,
            ``retry_initial`` not positive, ``retry_max < retry_initial``,
            ``max_batch < 1``, ``workers < 1``).
    """

    def __init__(self, *, clock: Clock = SYSTEM_CLOCK, renew_after: float = RENEW_AFTER,
                 round_trip_allowance: float | None = None, batch_window: float = 1.0,
                 retry_initial: float = 1.0, retry_max: float = 60.0, max_batch: int = CALL_BATCH,
                 workers: int = 4, name: str = "LeaseRenewalManager") -> None:
        if round_trip_allowance is not None:
            _check_finite(round_trip_allowance, "round_trip_allowance")
            warnings.warn("round_trip_allowance is ignored: leases are renewed once renew_after "
                          "of their term has passed", DeprecationWarning, stacklevel=2)
        if isinstance(renew_after, bool) or not isinstance(renew_after, (int, float)) or not 0 < renew_after < 1:
            raise ValueError(f"renew_after must be a share of the term above 0 and below 1, got {renew_after!r}")
        self._renew_after = float(renew_after)
        self._batch_window = _check_finite(batch_window, "batch_window")
        self._retry_initial = _check_finite(retry_initial, "retry_initial")
        self._retry_max = _check_finite(retry_max, "retry_max")
        if not self._retry_initial > 0 or self._retry_max < self._retry_initial:
            raise ValueError(f"need 0 < retry_initial <= retry_max, got {retry_initial!r} and {retry_max!r}")
        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise ValueError(f"max_batch must be a positive int, got {max_batch!r}")
        self._max_batch = max_batch
        self._clock = clock
        self._cond = threading.Condition()
        self._entries: dict[Lease, _Entry] = {}
        self._heap: list[tuple[float, int, _Entry]] = []  # (due, token, entry); stale items skipped
        self._tokens = itertools.count()
        self._closed = False
        self._lanes = Lanes(workers=workers, name=f"{name}-call")
        self._in_flight = 0  # groups handed to the lanes and not yet recorded
        # What the thread is doing, so that changes wake it only when needed.
        self._sleeping = False
        self._sleep_until = -math.inf  # the due it sleeps towards; -inf while awake
        self._sleep_deadline = -math.inf  # the last due it slept towards (for _wait_idle)
        self._wake = False  # notified while asleep, not yet awake
        self._thread = threading.Thread(target=self._run_logged, name=name, daemon=True)
        self._thread.start()

    # -- public ------------------------------------------------------------------

    def renew_for(self, lease: Lease, duration: float, listener: Callback | None = None, *,
                  renew_duration: float | None = None, on_desired_expiration: Callback | None = None) -> None:
        """Keep ``lease`` alive for ``duration`` more seconds (``FOREVER``: until removed).

        A lease already managed gets these settings instead of its old ones.

        Args:
            lease: the lease to keep.
            duration: seconds from now; ``FOREVER`` for no end.
            listener: called with a :class:`LeaseRenewalEvent` if the lease is lost.
            renew_duration: the most to ask for in one renewal. ``None`` (the
                default): the lease's own term (``lease.term`` as it is now),
                so a short lease stays short however long it is kept; give
                ``FOREVER`` or a longer figure to ask for more, ``ANY`` to let
                the landlord choose. Each renewal asks for
                ``min(renew_duration, desired expiration - now)``.
            on_desired_expiration: called with a :class:`LeaseRenewalEvent`
                when the desired expiration is reached and the lease dropped.

        Raises:
            TypeError: ``lease`` is not a :class:`~landlord.Lease`, or a callback is not callable.
            ValueError: ``duration`` is negative, NaN, ``ANY`` or not a number;
                ``renew_duration`` is not positive (nor ``ANY`` or ``None``).
            RuntimeError: the manager is closed.
        """
        duration = check_duration(duration, allow_any=False)
        self._add(lease, (self._clock.time() + duration, self._clock.monotonic() + duration), listener,
                  renew_duration, on_desired_expiration)

    def renew_until(self, lease: Lease, expiration: float, listener: Callback | None = None, *,
                    renew_duration: float | None = None, on_desired_expiration: Callback | None = None) -> None:
        """Keep ``lease`` alive until the wall-clock time ``expiration`` (``FOREVER``: until removed).

        Otherwise as :meth:`renew_for`; an expiration already past drops the
        lease at once, through ``on_desired_expiration``.

        Raises:
            TypeError: ``lease`` is not a :class:`~landlord.Lease`, or a callback is not callable.
            ValueError: ``expiration`` is NaN, ``-inf`` or not a number;
                ``renew_duration`` is not positive (nor ``ANY`` or ``None``).
            RuntimeError: the manager is closed.
        """
        self._add(lease, self._desired(_check_expiration(expiration)), listener, renew_duration,
                  on_desired_expiration)

    def remove(self, lease: Lease) -> None:
        """Stop managing ``lease`` without cancelling it. No callback runs.

        Raises:
            TypeError: ``lease`` is not a :class:`~landlord.Lease`.
            UnknownLeaseError: the lease is not managed here.
        """
        _check_lease(lease)
        with self._cond:
            entry = self._entries.pop(lease, None)
            if entry is None:
                raise UnknownLeaseError(f"{lease!r} is not managed by this renewal manager")
            entry.token = None

    def cancel(self, lease: Lease) -> None:
        """Stop managing ``lease``, then cancel it (it is removed even if the cancel fails).

        Raises:
            TypeError: ``lease`` is not a :class:`~landlord.Lease`.
            UnknownLeaseError: the lease is not managed here (it is not cancelled),
                or its landlord no longer knows it.
            LeaseError, Pyro5.errors.CommunicationError: as :meth:`Lease.cancel`.
        """
        self.remove(lease)
        lease.cancel()

    def clear(self) -> None:
        """Stop managing every lease, cancelling none. No callback runs."""
        with self._cond:
            self._forget_all()

    def get_expiration(self, lease: Lease) -> float:
        """The desired expiration of ``lease`` (wall clock; ``math.inf`` for FOREVER).

        Raises:
            TypeError: ``lease`` is not a :class:`~landlord.Lease`.
            UnknownLeaseError: the lease is not managed here.
        """
        _check_lease(lease)
        with self._cond:
            return self._entry(lease).desired_wall

    def set_expiration(self, lease: Lease, expiration: float) -> None:
        """Change the desired expiration of a managed lease, keeping its other settings.

        Raises:
            TypeError: ``lease`` is not a :class:`~landlord.Lease`.
            ValueError: ``expiration`` is NaN, ``-inf`` or not a number.
            UnknownLeaseError: the lease is not managed here.
        """
        _check_lease(lease)
        desired = self._desired(_check_expiration(expiration))
        with self._cond:
            entry = self._entry(lease)
            entry.desired_wall, entry.desired = desired
            if not entry.busy:  # else the renewal in flight reschedules it
                self._schedule(entry, self._clock.monotonic())

    def close(self) -> None:
        """Stop the thread and forget every lease (cancelling none; no callback runs).

        Returns once the thread has ended; a renewal in flight is waited for
        (at most the remote call timeout). Safe to call more than once, and
        from a callback.
        """
        with self._cond:
            self._closed = True
            self._forget_all()
            self._cond.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join()
        self._lanes.close()

    def __enter__(self) -> LeaseRenewalManager:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __len__(self) -> int:
        with self._cond:
            return len(self._entries)

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._entries)} leases"
        return f"<LeaseRenewalManager {state}>"

    # -- bookkeeping (all under self._cond) ---------------------------------------

    def _desired(self, expiration: float) -> tuple[float, float]:
        """A desired wall-clock expiration, and the same moment on the monotonic clock."""
        if math.isinf(expiration):
            return expiration, expiration
        return expiration, self._clock.monotonic() + (expiration - self._clock.time())

    def _add(self, lease: Lease, desired: tuple[float, float], listener: Callback | None,
             renew_duration: float | None, on_desired: Callback | None) -> None:
        _check_lease(lease)
        for name, callback in (("listener", listener), ("on_desired_expiration", on_desired)):
            if callback is not None and not callable(callback):
                raise TypeError(f"{name} must be callable or None, got {type(callback).__name__}")
        if renew_duration is None:
            term = lease.term
            renew_duration = term if term > 0 else ANY  # a lease with no term to speak of: the landlord's choice
        else:
            renew_duration = check_duration(renew_duration, name="renew_duration")
            if renew_duration != ANY and not renew_duration > 0:
                raise ValueError(f"renew_duration must be positive, FOREVER, ANY or None, got {renew_duration!r}")
        entry = _Entry(lease, lease._batch_key(), desired, renew_duration, listener, on_desired)
        with self._cond:
            if self._closed:
                raise RuntimeError("this LeaseRenewalManager is closed")
            old = self._entries.get(lease)
            if old is not None:
                old.token = None  # replaced: a renewal in flight for it is ignored
            self._entries[lease] = entry
            self._schedule(entry, self._clock.monotonic())

    def _entry(self, lease: Lease) -> _Entry:
        entry = self._entries.get(lease)
        if entry is None:
            raise UnknownLeaseError(f"{lease!r} is not managed by this renewal manager")
        return entry

    def _forget_all(self) -> None:
        for entry in self._entries.values():
            entry.token = None
        self._entries.clear()
        self._heap.clear()

    def _schedule(self, entry: _Entry, now: float, *, floor: float | None = None) -> None:
        """Queue ``entry`` for its next action: renewal, or dropping at its desired expiration."""
        if entry.lease.deadline >= entry.desired - _COVER_SLACK:
            due = entry.desired  # no renewal needed; drop it then
        else:
            due = renewal_time(now, entry.lease.deadline, entry.lease.term, renew_after=self._renew_after)
            if floor is not None:
                due = max(due, floor)
        self._push(entry, due)

    def _push(self, entry: _Entry, due: float) -> None:
        entry.token = token = next(self._tokens)
        if math.isinf(due):
            return  # never due: left out of the queue until it changes
        if len(self._heap) > 2 * len(self._entries) + 64:
            # replaced and removed entries leave stale items behind; drop them
            self._heap = [item for item in self._heap if item[2].token == item[1]]
            heapq.heapify(self._heap)
        heapq.heappush(self._heap, (due, token, entry))
        if due < self._sleep_until and not self._wake:  # asleep, and not yet told to wake up
            self._wake = True
            self._cond.notify_all()

    def _next_due(self) -> float:
        heap = self._heap
        while heap and heap[0][2].token != heap[0][1]:
            heapq.heappop(heap)
        return heap[0][0] if heap else math.inf

    def _drop(self, entry: _Entry) -> None:
        if self._entries.get(entry.lease) is entry:
            del self._entries[entry.lease]
        entry.token = None

    def _take_due(self, now: float) -> tuple[list[list[_Entry]], list[tuple[Callback | None, LeaseRenewalEvent]]]:
        """Dequeue what is due at ``now``: groups to renew, and events of leases dropped."""
        heap = self._heap
        due: list[_Entry] = []
        while heap and heap[0][0] <= now:
            _, token, entry = heapq.heappop(heap)
            if entry.token == token:
                due.append(entry)
        events: list[tuple[Callback | None, LeaseRenewalEvent]] = []
        batches: dict[Hashable, list[_Entry]] = {}
        singles: list[list[_Entry]] = []
        for entry in due:
            if now >= entry.desired:
                self._drop(entry)
                events.append((entry.on_desired, LeaseRenewalEvent(entry.lease, entry.desired_wall, None)))
            elif entry.last_error is not None and now >= entry.lease.deadline:
                self._drop(entry)  # retried until it actually expired
                events.append((entry.listener, LeaseRenewalEvent(entry.lease, entry.desired_wall, entry.last_error)))
            elif entry.key is None:
                singles.append([entry])
            else:
                batches.setdefault(entry.key, []).append(entry)
        if batches and self._batch_window > 0:
            # leases soon due join a call that goes to their landlord anyway
            horizon, held = now + self._batch_window, []
            while heap and heap[0][0] <= horizon:
                item = heapq.heappop(heap)
                entry = item[2]
                if entry.token != item[1]:
                    continue
                if entry.key in batches and entry.lease.deadline < entry.desired - _COVER_SLACK:
                    batches[entry.key].append(entry)
                else:
                    held.append(item)
            for item in held:
                heapq.heappush(heap, item)
        groups: list[list[_Entry]] = []
        for batch in batches.values():
            groups.extend(batch[i:i + self._max_batch] for i in range(0, len(batch), self._max_batch))
        groups.extend(singles)
        for group in groups:
            for entry in group:
                entry.token, entry.busy = None, True
        return groups, events

    # -- the thread -----------------------------------------------------------------

    def _run_logged(self) -> None:
        try:
            self._run()
        except Exception:  # a bug: say so loudly, the leases are no longer renewed
            log.exception("%s stopped by an error; leases are no longer renewed", self._thread.name)

    def _run(self) -> None:
        clock = self._clock
        while True:
            with self._cond:
                if self._closed:
                    return
                now = clock.monotonic()
                due = self._next_due()
                if due > now:
                    self._sleeping, self._sleep_until, self._sleep_deadline = True, due, due
                    self._wake = False
                    self._cond.notify_all()  # for _wait_idle
                    try:
                        clock.wait(self._cond, due)
                    finally:
                        self._sleeping, self._sleep_until = False, -math.inf
                    continue
                groups, events = self._take_due(now)
                self._in_flight += len(groups)
            self._fire(events)
            for group in groups:
                lane = group[0].key if group[0].key is not None else ("lease", id(group[0].lease))
                if not self._lanes.submit(lane, functools.partial(self._renew, group, now)):
                    self._renew_cancelled(group)  # closed meanwhile

    def _renew(self, group: list[_Entry], now: float) -> None:
        """Renew one group (one call), then record the outcome and run the callbacks."""
        leases = [entry.lease for entry in group]
        durations = [ANY if e.renew_duration == ANY else min(e.renew_duration, e.desired - now) for e in group]
        left = min(lease.deadline for lease in leases) - self._clock.monotonic()
        failures: dict[Lease, BaseException]
        try:
            with proxies.timeout_within(attempt_timeout(left)):  # a stuck call must not outlive the lease
                if group[0].key is None:
                    leases[0].renew(durations[0])
                    failures = {}
                else:
                    failures = dict(leases[0]._renew_batch(leases, durations))
        except Exception as exc:  # the whole call failed: every lease in it shares the outcome
            failures = dict.fromkeys(leases, exc)
        log.debug("renewed %d lease(s), %d failed", len(leases), len(failures))
        if failures:
            _log_failures(leases[0], len(leases), failures, left)
        events: list[tuple[Callback | None, LeaseRenewalEvent]] = []
        with self._cond:
            t = self._clock.monotonic()
            for entry in group:
                entry.busy = False
                if self._entries.get(entry.lease) is not entry:
                    continue  # removed or replaced meanwhile
                error = failures.get(entry.lease)
                if error is None:
                    entry.last_error, entry.failures = None, 0
                    self._schedule(entry, t, floor=t + _MIN_GAP)
                elif isinstance(error, Pyro5.errors.CommunicationError):
                    entry.last_error = error
                    entry.failures += 1
                    if t >= entry.lease.deadline:
                        self._drop(entry)
                        events.append((entry.listener, LeaseRenewalEvent(entry.lease, entry.desired_wall, error)))
                    else:
                        self._push(entry, self._retry_time(entry, t, waited=t - now))
                else:  # a definite answer
                    self._drop(entry)
                    events.append((entry.listener, LeaseRenewalEvent(entry.lease, entry.desired_wall, error)))
        self._fire(events)
        with self._cond:  # done only once the callbacks have run: _wait_idle counts on it
            self._in_flight -= 1
            self._cond.notify_all()

    def _renew_cancelled(self, group: list[_Entry]) -> None:
        with self._cond:
            self._in_flight -= 1
            for entry in group:
                entry.busy = False
            self._cond.notify_all()

    def _retry_time(self, entry: _Entry, now: float, *, waited: float = 0.0) -> float:
        """When to try again after ``entry.failures`` communication failures in a row,
        the last of which failed at ``now`` after waiting ``waited`` seconds for an answer."""
        backoff = min(self._retry_max, self._retry_initial * 2.0 ** min(entry.failures - 1, 64))
        expiration = entry.lease.deadline
        # The backoff counts from when the failed attempt went out: one that
        # timed out has waited already, and a link that healed meanwhile is
        # tried again at once. Near the end, halve the time left rather than
        # overshoot it: every chance to reach the landlord in time is taken.
        delay = max(min(backoff - waited, (expiration - now) / 2), _MIN_GAP)
        retry = now + delay
        if retry >= expiration:
            retry = expiration  # then it is dropped and reported
        return min(retry, entry.desired)

    def _fire(self, events: list[tuple[Callback | None, LeaseRenewalEvent]]) -> None:
        for callback, event in events:
            if callback is None:
                if event.exception is not None:
                    log.warning("lost %r: %s: %s", event.lease, type(event.exception).__name__, event.exception)
                continue
            try:
                callback(event)
            except Exception:
                log.exception("a lease renewal callback failed on %r", event)

    def _wait_idle(self, timeout: float = 10.0) -> bool:
        """For tests on a fake clock: wait until the thread sleeps with nothing left to do now.

        Returns ``False`` if it did not within ``timeout`` real seconds.
        """
        def idle() -> bool:
            return self._closed or (self._sleeping and not self._wake and self._in_flight == 0
                                    and self._sleep_deadline > self._clock.monotonic())

        with self._cond:
            return self._cond.wait_for(idle, timeout)


def _log_failures(first: Lease, count: int, failures: dict[Lease, BaseException], left: float) -> None:
    """One WARNING line for a renewal call that failed, in whole or in part."""
    kinds = sorted({type(exc).__name__ for exc in failures.values()})
    example = next(iter(failures.values()))
    if any(isinstance(exc, Pyro5.errors.CommunicationError) for exc in failures.values()):
        log.warning("renewing %d of %d lease(s) with %r failed (%s: %s); trying again until they expire "
                    "(the first in %.1f s)", len(failures), count, first, ", ".join(kinds), example, max(left, 0.0))
    else:
        log.warning("renewing %d of %d lease(s) with %r was refused (%s: %s); they are lost",
                    len(failures), count, first, ", ".join(kinds), example)


def _check_lease(lease: object) -> None:
    if not isinstance(lease, Lease):
        raise TypeError(f"expected a Lease, got {type(lease).__name__}")


def _check_expiration(expiration: object) -> float:
    """An absolute wall-clock time: a number, ``math.inf`` allowed.

    Raises:
        ValueError: a non-number (including ``bool``), NaN or ``-inf``.
    """
    if isinstance(expiration, bool) or not isinstance(expiration, numbers.Real):
        raise ValueError(f"expiration must be a wall-clock time in seconds, got {expiration!r:.50}")
    value = float(expiration)
    if math.isnan(value) or value == -math.inf:
        raise ValueError(f"expiration must be a wall-clock time in seconds, got {value!r}")
    return value


def _check_finite(value: object, name: str) -> float:
    value = check_duration(value, name=name, allow_any=False)
    if math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value
