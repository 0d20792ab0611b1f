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

What happens on failure (:func:`landlord.transport.verdicts.classify` tells which):

* a :class:`~landlord.LeaseError` (denied, unknown) is definite: the lease is
  dropped and its ``listener`` told at once;
* a Pyro5 ``CommunicationError`` is indefinite: the renewal is retried until
  the lease has actually expired by the holder's clock, and only then dropped
  and reported with the last error. Retries back off exponentially with
  jitter (:class:`~landlord.Backoff`), counted from when the failed attempt
  was sent. No attempt waits past half the time its lease has left
  (:func:`attempt_timeout`): a call stuck on a dead connection gives up, the
  connection is dropped, and the next attempt goes out on a fresh one, at
  shrinking intervals as the end nears, so a lease is reported lost when its
  term ends, not when the link comes back;
* a landlord that is slow but answering is measured, not given up on: each
  landlord's calls are timed (:mod:`landlord.holder.pace`), an attempt waits at least
  three times what a call of its size took, rounds start early enough to
  finish while a third of the term is left, a bulk of leases is split into
  calls started a measured call-time apart, and a WARNING on
  ``landlord.pace`` says when the landlord cannot be kept up with, before a
  lease is lost;
* any other exception is treated as definite (nothing suggests retrying helps).

Failed renewals are logged at WARNING on ``landlord.renewal``.

Every time here is on the holder's monotonic clock (``clock.monotonic()``),
the clock ``lease.deadline`` is on: a step of the wall clock neither delays
nor hurries a renewal. Desired expirations are given and reported on the wall
clock, as ``lease.expiration`` is, and converted when they are given.

The manager is a driver. What is due when, batch by batch, is decided by its
:class:`~landlord.holder.schedule.Schedule`, which reads no clock and runs no
thread. One thread sleeps until the schedule's next due time and takes what
is due; the remote calls go out on a few worker threads, one
:mod:`lane <landlord.transport.lanes>` per *endpoint* (the host and port a landlord's
URI names: :class:`Endpoints`), so a landlord that hangs (until the call
timeout, :func:`landlord.set_call_timeout`) holds up its own renewals and no
one else's, however many landlords are named at its address. Endpoints
that answered their last call have workers of their own; those not yet heard
from have ``doubtful_workers`` others, and those whose last call failed to
communicate as many more (:class:`Endpoints` says which), so no number of
dead or hung landlords keeps a worker from a landlord that answers, and
once they have failed, none from one not yet heard from. A lease renewal
service, which renews whatever leases strangers hand it, relies on this.
"""

from __future__ import annotations

import collections
import functools
import logging
import math
import numbers
import threading
import warnings
from collections.abc import Callable, Hashable, Mapping
from types import TracebackType
from typing import Protocol

import Pyro5.core

from ..clock import SYSTEM_CLOCK, Clock
from ..duration import ANY, check_duration
from ..errors import LeaseDeniedError, UnknownLeaseError
from ..lease import Lease, batch_key_of, renew_together
from ..transport import proxies
from ..transport.lanes import Lanes
from ..transport.verdicts import Verdict, classify
from .landlordlease import CALL_BATCH, LandlordLease
from .schedule import (
    RENEW_AFTER,
    Call,
    Callback,
    LeaseRenewalEvent,
    LeaseWarningEvent,
    Schedule,
    Told,
    Warned,
    WarningCallback,
    attempt_timeout,
    check_finite,
    renewal_time,
)

__all__ = ["LeaseRenewalManager", "LeaseRenewalEvent", "LeaseWarningEvent", "renewal_time", "attempt_timeout",
           "renew_duration_for", "RENEW_AFTER", "Endpoints", "ANSWERING", "UNHEARD", "FAILING"]

log = logging.getLogger("landlord.renewal")  # its name before it moved

# Endpoints remembered as answering (and as failing): beyond this many, the one heard from
# longest ago is forgotten (and its next call goes with the unheard).
ANSWERING_ENDPOINTS = 4096


class RevocationWatcher(Protocol):
    """What tells a renewal manager at once that a landlord revoked a lease:
    :class:`landlord.holder.revocations.RevocationReceiver`."""

    def watch(self, lease: LandlordLease, on_revoked: Callable[[str], None]) -> None: ...

    def unwatch(self, lease: LandlordLease) -> None: ...


class LeaseRenewalManager:
    """Keeps leases renewed until their desired expiration, from one background thread.

    Leases may be added, changed and removed from any thread. Callbacks run on
    the manager's threads, after the lease has been removed and with no lock
    held, so they may call back into the manager; an exception in a callback
    is logged and ignored.

    Leases whose batch keys are equal (:class:`~landlord.lease.BatchableLease`: a
    :class:`~landlord.LandlordLease` of the same landlord id at the same address) and that fall due
    within ``batch_window`` seconds of one another are renewed in one remote call (up to ``max_batch``
    leases per call); leases without a key are renewed one by one.

    Args:
        clock: the holder's clocks: renewals are timed on its ``monotonic()``
            (the clock of ``lease.deadline``), desired expirations given on its ``time()``.
        renew_after: the share of a lease's term after which it is renewed
            (default a third; see :func:`renewal_time`), above 0 and below 1.
        round_trip_allowance: deprecated and ignored (it shaped the schedule
            before renewals went out at a share of the term); giving it warns.
        batch_window: a lease due within this many seconds joins a batch going
            to its landlord now, rather than waiting for a call of its own.
        retry_initial: the first delay's ceiling, in seconds, before retrying after a communication
            failure; it doubles with each further failure (jittered: :class:`~landlord.Backoff`)...
        retry_max: ...up to this many seconds.
        max_batch: the most leases renewed in one call (default ``CALL_BATCH``, 1,000).
        workers: the most remote calls in flight at once to landlords that answered their last call
            (each endpoint, a host and port, one at a time).
        doubtful_workers: the most in flight at once to landlords not yet heard from, and as many
            to those whose last call failed to communicate, on threads of their own: they never
            hold up a landlord that answers, and those failing never hold up one not yet heard from.
        name: the background thread's name.
        revocations: a :class:`~landlord.holder.revocations.RevocationReceiver`: each
            :class:`~landlord.LandlordLease` kept is watched through it (one
            remote call, on the landlord's lane), so a lease its landlord revokes
            is dropped at once and its ``listener`` told, with a
            :class:`~landlord.LeaseDeniedError` carrying the landlord's reason.
            Without one, a revoked lease is found at its next renewal (the same
            error, later).

    Raises:
        ValueError: an option out of range (negative, NaN, infinite, or ``renew_after`` not strictly
            between 0 and 1, ``retry_initial`` not positive, ``retry_max < retry_initial``,
            ``max_batch < 1``, ``workers < 1``, ``doubtful_workers < 1``).
    """

    def __init__(self, *, clock: Clock = SYSTEM_CLOCK, renew_after: float = RENEW_AFTER,
                 round_trip_allowance: float | None = None, batch_window: float = 1.0,
                 retry_initial: float = 1.0, retry_max: float = 60.0, max_batch: int = CALL_BATCH,
                 workers: int = 4, doubtful_workers: int = 2, name: str = "LeaseRenewalManager",
                 revocations: RevocationWatcher | None = None) -> None:
        if round_trip_allowance is not None:
            check_finite(round_trip_allowance, "round_trip_allowance")
            warnings.warn("round_trip_allowance is ignored: leases are renewed once renew_after "
                          "of their term has passed", DeprecationWarning, stacklevel=2)
        self._schedule = Schedule(renew_after=renew_after, batch_window=batch_window, max_batch=max_batch,
                                  retry_initial=retry_initial, retry_max=retry_max)
        self._clock = clock
        self._cond = threading.Condition()  # guards the schedule and the fields below
        self._closed = False
        self._endpoints = Endpoints()  # under self._cond
        self._pools: dict[str, Lanes] = {}  # by the standing of the endpoints whose calls they make
        try:
            for standing, count in ((ANSWERING, workers), (UNHEARD, doubtful_workers), (FAILING, doubtful_workers)):
                self._pools[standing] = Lanes(workers=count, name=f"{name}-{standing}")
        except BaseException:
            for pool in self._pools.values():
                pool.close()
            raise
        self._state = _ThreadState(self._cond, clock)
        self._revocations = revocations
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    # -- public ------------------------------------------------------------------

    def renew_for(self, lease: Lease, duration: float, listener: Callback | None = None, *,
                  renew_duration: float | None = None, on_desired_expiration: Callback | None = None,
                  on_warning: WarningCallback | None = None, warn_before: float | None = None) -> None:
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
            on_warning: called with a :class:`LeaseWarningEvent` ``warn_before``
                seconds before the desired expiration (``reason="desired"``: extend
                it with :meth:`set_expiration` to keep the lease), and when the lease
                itself will end within ``warn_before`` seconds without having been
                renewed (``reason="unrenewed"``: its landlord is slow or out of
                reach; see :func:`~landlord.holder.schedule.warning_time`). Each warning
                is given once per end it is about; the lease stays managed.
            warn_before: seconds, positive and finite; required with ``on_warning``.

        Raises:
            TypeError: ``lease`` is not a :class:`~landlord.Lease`, a callback is not
                callable, or ``warn_before`` is given without ``on_warning`` or the reverse.
            ValueError: ``duration`` is negative, NaN, ``ANY`` or not a number;
                ``renew_duration`` is not positive (nor ``ANY`` or ``None``);
                ``warn_before`` is not positive and finite.
            RuntimeError: the manager is closed.
        """
        duration = check_duration(duration, allow_any=False)
        self._add(lease, self._clock.time() + duration, self._clock.monotonic() + duration, listener,
                  renew_duration, on_desired_expiration, on_warning, warn_before)

    def renew_until(self, lease: Lease, expiration: float, listener: Callback | None = None, *,
                    renew_duration: float | None = None, on_desired_expiration: Callback | None = None,
                    on_warning: WarningCallback | None = None, warn_before: float | None = None) -> None:
        """Keep ``lease`` alive until the wall-clock time ``expiration`` (``FOREVER``: until removed).

        Otherwise as :meth:`renew_for`; an expiration already past drops the
        lease at once, through ``on_desired_expiration``.

        Raises:
            TypeError: ``lease`` is not a :class:`~landlord.Lease`, a callback is not
                callable, or ``warn_before`` is given without ``on_warning`` or the reverse.
            ValueError: ``expiration`` is NaN, ``-inf`` or not a number;
                ``renew_duration`` is not positive (nor ``ANY`` or ``None``);
                ``warn_before`` is not positive and finite.
            RuntimeError: the manager is closed.
        """
        expiration = _check_expiration(expiration)
        self._add(lease, expiration, _monotonic(self._clock, expiration), listener, renew_duration,
                  on_desired_expiration, on_warning, warn_before)

    def remove(self, lease: Lease) -> None:
        """Stop managing ``lease`` without cancelling it. No callback runs.

        Raises:
            TypeError: ``lease`` is not a :class:`~landlord.Lease`.
            UnknownLeaseError: the lease is not managed here.
        """
        _check_lease(lease)
        with self._cond:
            if not self._schedule.remove(lease):
                raise _not_managed(lease)
        if self._revocations is not None and isinstance(lease, LandlordLease):
            self._revocations.unwatch(lease)

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
            self._schedule.clear()

    def get_expiration(self, lease: Lease) -> float:
        """The desired expiration of ``lease`` (wall clock; ``math.inf`` for FOREVER).

        Raises:
            TypeError: ``lease`` is not a :class:`~landlord.Lease`.
            UnknownLeaseError: the lease is not managed here.
        """
        _check_lease(lease)
        with self._cond:
            expiration = self._schedule.expiration(lease)
        if expiration is None:
            raise _not_managed(lease)
        return expiration

    def set_expiration(self, lease: Lease, expiration: float) -> None:
        """Change the desired expiration of a managed lease, keeping its other settings.

        Raises:
            TypeError: ``lease`` is not a :class:`~landlord.Lease`.
            ValueError: ``expiration`` is NaN, ``-inf`` or not a number.
            UnknownLeaseError: the lease is not managed here.
        """
        _check_lease(lease)
        expiration = _check_expiration(expiration)
        desired = _monotonic(self._clock, expiration)
        with self._cond:
            if not self._schedule.set_expiration(lease, desired=desired, desired_wall=expiration,
                                                 now=self._clock.monotonic()):
                raise _not_managed(lease)
            self._state.sooner(self._schedule.next_due())

    def close(self) -> None:
        """Stop the thread and forget every lease (cancelling none; no callback runs).

        Returns once the thread has ended; a renewal in flight is waited for (at most
        the remote call timeout). Safe to call more than once, and from a callback.
        """
        with self._cond:
            self._closed = True
            self._schedule.clear()
            self._cond.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join()
        for pool in self._pools.values():
            pool.close()

    def __enter__(self) -> LeaseRenewalManager:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __len__(self) -> int:
        with self._cond:
            return len(self._schedule)

    def __repr__(self) -> str:
        return f"<LeaseRenewalManager {'closed' if self._closed else f'{len(self._schedule)} leases'}>"

    # -- the driver --------------------------------------------------------------------

    def _add(self, lease: Lease, desired_wall: float, desired: float, listener: Callback | None,
             renew_duration: float | None, on_desired: Callback | None, on_warning: WarningCallback | None,
             warn_before: float | None) -> None:
        renew_duration = _check_settings(lease, listener, on_desired, renew_duration)
        before = _check_warning(on_warning, warn_before)
        with self._cond:
            if self._closed:
                raise RuntimeError("this LeaseRenewalManager is closed")
            new = self._schedule.expiration(lease) is None
            self._schedule.add(lease, desired=desired, desired_wall=desired_wall, renew_duration=renew_duration,
                               now=self._clock.monotonic(), listener=listener, on_desired=on_desired,
                               on_warning=on_warning, warn_before=before)
            self._state.sooner(self._schedule.next_due())
            revocations = self._revocations if new and isinstance(lease, LandlordLease) else None
            if revocations is not None:  # on its landlord's lane, as its renewals: a hang holds up only its own
                lane = self._endpoints.lane_of(lease, batch_key_of(lease))
                lanes = self._pools[self._endpoints.standing(lane)]
        if revocations is not None and isinstance(lease, LandlordLease):
            lanes.submit(lane, functools.partial(self._watch, revocations, lease))

    def _told(self, told: list[Told]) -> None:
        """Tell the listeners of leases let go; and no longer watch those leases for revocation."""
        if self._revocations is not None:
            for _, event in told:
                if isinstance(event.lease, LandlordLease):
                    self._revocations.unwatch(event.lease)
        _tell(told)

    def _watch(self, revocations: RevocationWatcher, lease: LandlordLease) -> None:
        """On the landlord's lane: ask it to tell us if it revokes ``lease``."""
        try:
            revocations.watch(lease, functools.partial(self._revoked, lease))
        except Exception as exc:  # renewed all the same; a revocation is found at the next renewal
            log.warning("%r: the landlord cannot tell us at once if it revokes it (%s: %s)",
                        lease, type(exc).__name__, exc)

    def _revoked(self, lease: Lease, reason: str) -> None:
        """The landlord revoked ``lease``: let it go now and tell its listener."""
        with self._cond:
            told = self._schedule.let_go(lease, LeaseDeniedError(f"revoked by the landlord: {reason}"))
        if told is not None:
            log.warning("%r was revoked by its landlord: %s", lease, reason)
            _tell([told])

    def _run(self) -> None:
        """The thread: sleep until something is due, take it, tell whom it concerns, send the calls."""
        try:
            while True:
                with self._cond:
                    if self._closed:
                        return
                    now = self._clock.monotonic()
                    due = self._schedule.next_due()
                    if due > now:
                        self._state.sleep(due)
                        continue
                    calls, told = self._schedule.take_due(now)
                    warned = self._schedule.take_warnings(now)
                    self._state.out += len(calls)
                    routes = [self._endpoints.route(call) for call in calls]
                self._told(told)
                _warn(warned)
                for call, (lane, standing) in zip(calls, routes):
                    self._submit(call, lane, standing)
        except Exception:  # a bug: say so loudly, the leases are no longer renewed
            log.exception("%s stopped by an error; leases are no longer renewed", self._thread.name)

    def _submit(self, call: Call, lane: Hashable, standing: str) -> None:
        """Queue ``call`` on ``lane`` of the pool for endpoints of that standing."""
        if not self._pools[standing].submit(lane, functools.partial(self._renew, call, lane, standing)):
            self._state.returned()  # closed meanwhile (the schedule is cleared)

    def _renew(self, call: Call, lane: Hashable, standing: str) -> None:
        """On the call's lane: make it, record the outcome, then run the callbacks.

        A call queued while its endpoint stood otherwise (an unheard one that has
        failed since, say) moves to the pool of its standing now, rather than
        hold a worker that others of its old standing are waiting for."""
        with self._cond:
            now_standing = self._endpoints.standing(lane)
        if now_standing != standing:
            self._submit(call, lane, now_standing)
            return
        started = self._clock.monotonic()
        failures, error = _send(call, self._clock)
        with self._cond:
            self._endpoints.heard(lane, answered=error is None or classify(error) is not Verdict.RETRY)
            told = self._schedule.finished(call, self._clock.monotonic(), failures=failures, error=error,
                                           started=started)
            self._state.sooner(self._schedule.next_due())
        self._told(told)
        # the errors' tracebacks hold this frame (through _send's frame): kept here past the return, they
        # would make a cycle of ~50 objects per failed attempt, left to full garbage collections that
        # hold the whole process (a renewal service failing 2,000 attempts in 12 s: 96,000 objects, 73 ms)
        del failures, error
        self._state.returned()  # only once the callbacks have run: _wait_idle counts on it

    def _wait_idle(self, timeout: float = 10.0) -> bool:
        """For tests on a fake clock: wait (``timeout`` real seconds at most) until nothing is left to do now."""
        with self._cond:
            return self._cond.wait_for(lambda: self._closed or self._state.idle(), timeout)


ANSWERING, UNHEARD, FAILING = "answering", "unheard", "failing"  # an endpoint's standing


class Endpoints:
    """Where each renewal call goes, and how that place has answered.

    A call's lane is its *endpoint*: the host and port its landlord's URI names
    (the first replica's, for a replicated landlord), so that leases naming one
    address under many landlord ids share one lane, and hold one worker at most
    however long that address takes to fail. Calls without such an address (an
    in-process landlord, a lease of another class) keep their own lanes.

    An endpoint's *standing*: :data:`ANSWERING` once a call to it got an answer
    (granted or refused), :data:`FAILING` once a call to it failed to
    communicate (until one is answered), :data:`UNHEARD` before either. At most
    ``remembered`` of each are kept, the one heard from longest ago forgotten
    first (it is unheard again). Pure: no clock, no thread.

    Args:
        remembered: how many answering, and how many failing, endpoints to remember.
    """

    def __init__(self, remembered: int = ANSWERING_ENDPOINTS) -> None:
        self._heard: dict[str, collections.OrderedDict[Hashable, None]] = {
            ANSWERING: collections.OrderedDict(), FAILING: collections.OrderedDict()}
        self._remembered = remembered
        self._locations: dict[str, str] = {}  # URI -> host:port, parsed once

    def route(self, call: Call) -> tuple[Hashable, str]:
        """The lane for ``call``, and its endpoint's standing."""
        lane = self.lane_of(call.first, call.lane)
        return lane, self.standing(lane)

    def lane_of(self, lease: Lease, lane: Hashable) -> Hashable:
        """The lane of ``lease``'s calls: its endpoint, or ``lane`` where it has none."""
        if not isinstance(lease, LandlordLease) or not isinstance(lease.landlord, str):
            return lane
        uri = lease.landlords[0] if lease.replicated else lease.landlord
        location = self._locations.get(uri)
        if location is None:
            if len(self._locations) >= self._remembered:
                self._locations.clear()
            location = self._locations[uri] = _location(uri)
        return ("endpoint", location)

    def heard(self, lane: Hashable, *, answered: bool) -> None:
        """A call on ``lane`` got an answer (``answered``), or failed to communicate."""
        now, before = (ANSWERING, FAILING) if answered else (FAILING, ANSWERING)
        self._heard[before].pop(lane, None)
        heard = self._heard[now]
        heard[lane] = None
        heard.move_to_end(lane)
        if len(heard) > self._remembered:
            heard.popitem(last=False)

    def standing(self, lane: Hashable) -> str:
        """:data:`ANSWERING`, :data:`FAILING` or :data:`UNHEARD`: how the endpoint of ``lane`` last answered."""
        for standing, heard in self._heard.items():
            if lane in heard:
                return standing
        return UNHEARD

    def answering(self, lane: Hashable) -> bool:
        """Whether the endpoint of ``lane`` answered its last call."""
        return lane in self._heard[ANSWERING]


def _location(uri: str) -> str:
    """The host and port (or socket path) a ``PYRO:`` URI names; the URI itself if it names none."""
    try:
        return str(Pyro5.core.URI(uri).location or uri)
    except Exception:  # checked when the lease was made; a name without a place is its own lane
        return uri


class _ThreadState:
    """What the manager's thread is doing: asleep till when, and how many of its calls are out.

    Used under the manager's lock. A change wakes the thread only if it makes
    something due sooner than what the thread sleeps towards.
    """

    __slots__ = ("_cond", "_clock", "_asleep", "_until", "_last", "_woken", "out")

    def __init__(self, cond: threading.Condition, clock: Clock) -> None:
        self._cond, self._clock = cond, clock
        self._asleep = False
        self._until = -math.inf  # the due it sleeps towards; -inf while awake
        self._last = -math.inf  # the last due it slept towards (for idle)
        self._woken = False  # notified while asleep, not yet awake
        self.out = 0  # calls handed to the lanes whose outcome is not yet told

    def sleep(self, due: float) -> None:
        """Sleep (the lock held) until ``due``, or until woken."""
        self._asleep, self._until, self._last, self._woken = True, due, due, False
        self._cond.notify_all()  # for _wait_idle
        try:
            self._clock.wait(self._cond, due)
        finally:
            self._asleep, self._until = False, -math.inf

    def sooner(self, due: float) -> None:
        """Something is due at ``due``: wake the thread if that is before what it sleeps towards."""
        if not self._woken and due < self._until:
            self._woken = True
            self._cond.notify_all()

    def returned(self) -> None:
        """A call is done with (the lock not held)."""
        with self._cond:
            self.out -= 1
            self._cond.notify_all()

    def idle(self) -> bool:
        """No call out, and asleep towards a time still to come: nothing to do now."""
        return self.out == 0 and self._asleep and not self._woken and self._last > self._clock.monotonic()


def _send(call: Call, clock: Clock) -> tuple[Mapping[Lease, BaseException], BaseException | None]:
    """Make ``call``, waiting at most :func:`attempt_timeout` of what its first lease has left
    (or longer, up to all of it, for a landlord measured to be slow: :meth:`Call.timeout`).

    Returns:
        The leases that failed with why, and what the whole call raised (``None`` if nothing).
    """
    leases, durations = call.requests()
    now = clock.monotonic()
    left = call.deadline() - now
    failures: Mapping[Lease, BaseException] = {}
    try:
        with proxies.timeout_within(call.timeout(now)):  # a stuck call must not outlive the lease
            if call.key is None:
                leases[0].renew(durations[0])
            else:
                failures = renew_together(leases, durations)
    except Exception as exc:  # the whole call failed: every lease in it shares the outcome
        _log_failures(leases[0], len(leases), len(leases), [exc], left)
        return {}, exc
    log.debug("renewed %d lease(s), %d failed", len(leases), len(failures))
    if failures:
        _log_failures(leases[0], len(leases), len(failures), list(failures.values()), left)
    return failures, None


def _tell(told: list[Told]) -> None:
    """Run the callbacks (no lock held); a lost lease nobody listens for is logged."""
    for callback, event in told:
        if callback is None:
            if event.exception is not None:
                log.warning("lost %r: %s: %s", event.lease, type(event.exception).__name__, event.exception)
            continue
        try:
            callback(event)
        except Exception:
            log.exception("a lease renewal callback failed on %r", event)


def _warn(warned: list[Warned]) -> None:
    """Run the warning callbacks (no lock held)."""
    for callback, event in warned:
        log.info("warning: %r ends in %.1f s (%s)", event.lease, event.left, event.reason)
        try:
            callback(event)
        except Exception:
            log.exception("a lease warning callback failed on %r", event)


def _log_failures(first: Lease, count: int, failed: int, errors: list[BaseException], left: float) -> None:
    """One WARNING line for a renewal call that failed, in whole or in part."""
    kinds = ", ".join(sorted({type(exc).__name__ for exc in errors}))
    if any(classify(exc) is Verdict.RETRY for exc in errors):
        log.warning("renewing %d of %d lease(s) with %r failed (%s: %s); trying again until they expire "
                    "(the first in %.1f s)", failed, count, first, kinds, errors[0], max(left, 0.0))
    else:
        log.warning("renewing %d of %d lease(s) with %r was refused (%s: %s); they are lost",
                    failed, count, first, kinds, errors[0])


def _monotonic(clock: Clock, expiration: float) -> float:
    """A wall-clock time as the same moment on ``clock``'s monotonic clock."""
    return expiration if math.isinf(expiration) else clock.monotonic() + (expiration - clock.time())


def _check_lease(lease: object) -> None:
    if not isinstance(lease, Lease):
        raise TypeError(f"expected a Lease, got {type(lease).__name__}")


def _not_managed(lease: Lease) -> UnknownLeaseError:
    return UnknownLeaseError(f"{lease!r} is not managed by this renewal manager")


def _check_settings(lease: Lease, listener: object, on_desired: object, renew_duration: object) -> float:
    """Check what :meth:`LeaseRenewalManager.renew_for` was given, and return what each
    renewal asks for at most: ``renew_duration``, or by default the lease's own term.

    Raises:
        TypeError: ``lease`` is not a :class:`~landlord.Lease`, or a callback is not callable.
        ValueError: ``renew_duration`` is not positive, ``FOREVER``, ``ANY`` or ``None``.
    """
    _check_lease(lease)
    for name, callback in (("listener", listener), ("on_desired_expiration", on_desired)):
        if callback is not None and not callable(callback):
            raise TypeError(f"{name} must be callable or None, got {type(callback).__name__}")
    return renew_duration_for(lease, renew_duration)


def renew_duration_for(lease: Lease, renew_duration: object) -> float:
    """What each renewal of ``lease`` asks for at most: ``renew_duration``, or by default
    (``None``) the lease's own term as it is now.

    Raises:
        ValueError: ``renew_duration`` is not positive, ``FOREVER``, ``ANY`` or ``None``.
    """
    if renew_duration is None:
        term = lease.term
        return term if term > 0 else ANY  # a lease with no term to speak of: the landlord's choice
    value = check_duration(renew_duration, name="renew_duration")
    if value != ANY and not value > 0:
        raise ValueError(f"renew_duration must be positive, FOREVER, ANY or None, got {value!r}")
    return value


def _check_warning(on_warning: object, warn_before: object) -> float:
    """``warn_before`` checked as a warning time for ``on_warning``; 0 when there is no warning.

    Raises:
        TypeError: one given without the other, or ``on_warning`` not callable.
        ValueError: ``warn_before`` not a positive, finite number of seconds.
    """
    if on_warning is None and warn_before is None:
        return 0.0
    if on_warning is None or warn_before is None:
        raise TypeError("on_warning and warn_before go together")
    if not callable(on_warning):
        raise TypeError(f"on_warning must be callable, got {type(on_warning).__name__}")
    before = check_finite(warn_before, "warn_before")
    if not before > 0:
        raise ValueError(f"warn_before must be positive, got {before!r}")
    return before


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
