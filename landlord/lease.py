"""The holder's view of a lease: :class:`Lease`, :class:`AbstractLease`, and :class:`LeaseMap` batching.

A lease makes its own map (:meth:`Lease.create_lease_map`) and a map holds
leases, so the two live in one module: split, they would import each other.
"""

from __future__ import annotations

import abc
import math
import time
from collections.abc import Hashable, Iterator, MutableMapping, Sequence

from .clock import SYSTEM_CLOCK, Clock
from .duration import ANY, FOREVER, check_duration
from .errors import LeaseError, LeaseMapError

__all__ = ["Lease", "AbstractLease", "LeaseMap", "sent_now", "check_granted"]


class Lease(abc.ABC):
    """A time-bounded hold on a resource granted by a landlord.

    ``expiration`` is on the holder's wall clock (``time.time()`` seconds,
    ``math.inf`` for FOREVER), for people and logs. ``deadline`` is the same
    moment on the holder's monotonic clock, and it is what ``remaining``,
    ``expired`` and the :class:`~landlord.LeaseRenewalManager` go by: a step of
    the wall clock (NTP, a suspended VM, an operator) changes neither when a
    lease is renewed nor what it sends as its remaining time.
    """

    __slots__ = ()  # leases are many: no per-instance __dict__ in the classes below

    FOREVER = FOREVER
    ANY = ANY

    @property
    @abc.abstractmethod
    def expiration(self) -> float:
        """Absolute wall-clock time at which the lease ends, as last known here."""

    @property
    @abc.abstractmethod
    def remaining(self) -> float:
        """Seconds left, never negative."""

    @property
    def deadline(self) -> float:
        """When the lease ends on this process's monotonic clock (``math.inf`` for FOREVER).

        This default derives it from :attr:`remaining` on the system clock;
        :class:`AbstractLease` keeps it, on its own clock.
        """
        return math.inf if math.isinf(self.expiration) else time.monotonic() + self.remaining

    @property
    def term(self) -> float:
        """Seconds granted by the last grant or renewal (``math.inf`` for FOREVER).

        A renewal manager asks for this much again unless told otherwise, so a
        short lease stays short (and a dead holder's resource is freed soon).
        This default, for leases that do not record their grants, is what is
        left now; :class:`AbstractLease` keeps the real figure.
        """
        return math.inf if math.isinf(self.expiration) else self.remaining

    @property
    def expired(self) -> bool:
        """Whether the lease has run out by this holder's clock."""
        return self.remaining <= 0

    @abc.abstractmethod
    def renew(self, duration: float = ANY) -> float:
        """Ask for the lease to run ``duration`` seconds from now; return the seconds granted.

        Raises:
            ValueError: for an invalid duration (nothing is sent).
            LeaseDeniedError: the landlord refused.
            UnknownLeaseError: the lease is no longer known to the landlord.
            Pyro5.errors.CommunicationError: the outcome is unknown; try again.
        """

    @abc.abstractmethod
    def cancel(self) -> None:
        """Give the lease back, freeing its resource now."""

    def can_batch(self, other: Lease) -> bool:
        """Whether ``other`` can be renewed or cancelled in the same batch as this lease."""
        return False

    def create_lease_map(self, duration: float = ANY) -> LeaseMap:
        """A :class:`LeaseMap` holding this lease, to renew it together with others."""
        return LeaseMap({self: duration})

    def _batch_key(self) -> Hashable | None:
        """Leases with the same non-``None`` key can share one batch call."""
        return None

    def _renew_batch(self, leases: Sequence[Lease], durations: Sequence[float]) -> dict[Lease, Exception]:
        """Renew ``leases`` (all batchable with this one); return the failures.

        This default renews them one by one; subclasses send one call.
        """
        failures: dict[Lease, Exception] = {}
        for lease, duration in zip(leases, durations):
            try:
                lease.renew(duration)
            except Exception as exc:  # every failure is reported, none is swallowed
                failures[lease] = exc
        return failures

    def _cancel_batch(self, leases: Sequence[Lease]) -> dict[Lease, Exception]:
        """Cancel ``leases`` (all batchable with this one); return the failures."""
        failures: dict[Lease, Exception] = {}
        for lease in leases:
            try:
                lease.cancel()
            except Exception as exc:
                failures[lease] = exc
        return failures


class AbstractLease(Lease):
    """A lease that keeps its expiration locally and renews through :meth:`_do_renew`.

    Subclasses implement ``_do_renew(duration) -> granted seconds`` and ``cancel``.
    The new expiration is *time the request was sent + granted*, so a slow
    round trip can only make the holder's view more cautious, never too late.
    It is kept on both clocks (see :class:`Lease`).

    Args:
        expiration: absolute wall-clock time the lease ends (its deadline is
            taken as the same distance from now on the monotonic clock).
        clock: the holder's clocks.
        term: the seconds granted (see :attr:`Lease.term`); ``None``: the
            time left now (``math.inf`` for a FOREVER lease).

    Raises:
        ValueError: ``expiration`` is NaN or not a number; ``term`` is
            negative, NaN or not a number.
    """

    __slots__ = ("_expiration", "_deadline", "_term", "_clock")

    def __init__(self, expiration: float, *, clock: Clock = SYSTEM_CLOCK, term: float | None = None) -> None:
        if isinstance(expiration, bool) or not isinstance(expiration, (int, float)) or math.isnan(expiration):
            raise ValueError(f"expiration must be a number of seconds, got {expiration!r:.50}")
        self._expiration = float(expiration)
        left = self._expiration - clock.time()
        self._deadline = self._expiration if math.isinf(expiration) else clock.monotonic() + left
        self._term = max(0.0, left) if term is None else check_duration(term, name="term", allow_any=False)
        self._clock = clock

    @property
    def expiration(self) -> float:
        return self._expiration

    @property
    def deadline(self) -> float:
        return self._deadline

    @property
    def remaining(self) -> float:
        return max(0.0, self._deadline - self._clock.monotonic())

    @property
    def term(self) -> float:
        return self._term

    def renew(self, duration: float = ANY) -> float:
        duration = check_duration(duration)
        sent = sent_now(self._clock)
        granted = check_granted(self._do_renew(duration))
        self._set_granted(sent, granted)
        return granted

    def _start_granted(self, granted: float, clock: Clock) -> None:
        """Start a lease made without ``__init__`` as granted ``granted`` seconds now (for a
        landlord making its own lease from parts it has checked: see
        :meth:`~landlord.LandlordLease.granted`)."""
        self._clock = clock
        self._set_granted(sent_now(clock), granted)

    def _set_granted(self, sent: tuple[float, float], granted: float) -> None:
        """Record a grant of a request sent at ``sent`` (see :func:`sent_now`), here or in a batch."""
        self._expiration = sent[0] + granted
        self._deadline = sent[1] + granted
        self._term = granted

    @abc.abstractmethod
    def _do_renew(self, duration: float) -> float:
        """Renew at the landlord; return the granted seconds."""


def sent_now(clock: Clock) -> tuple[float, float]:
    """The moment a request is sent, on the wall clock and on the monotonic clock."""
    return clock.time(), clock.monotonic()


def check_granted(granted: object) -> float:
    """A landlord's answer to a renewal, checked: a non-negative number of seconds.

    Raises:
        LeaseError: the landlord answered with something that is not a grant.
    """
    if isinstance(granted, bool) or not isinstance(granted, (int, float)) or not granted >= 0:
        raise LeaseError(f"landlord answered a renewal with {granted!r:.50}, not a grant in seconds")
    return float(granted)


class LeaseMap(MutableMapping[Lease, float]):
    """A mutable mapping of lease -> requested duration, renewed or cancelled as a batch.

    Leases that can batch with one another (a :class:`~landlord.LandlordLease`
    of the same landlord) go out in one remote call; others are handled one
    by one. Leases that fail are removed from the map and reported together.

    Args:
        leases: initial lease -> duration pairs.

    Raises:
        TypeError: a key is not a :class:`~landlord.Lease`.
        ValueError: a duration is invalid.
    """

    def __init__(self, leases: dict[Lease, float] | None = None) -> None:
        self._durations: dict[Lease, float] = {}
        if leases:
            self.update(leases)

    def __setitem__(self, lease: Lease, duration: float) -> None:
        if not isinstance(lease, Lease):
            raise TypeError(f"a LeaseMap holds leases, got {type(lease).__name__}")
        self._durations[lease] = check_duration(duration)

    def __getitem__(self, lease: Lease) -> float:
        return self._durations[lease]

    def __delitem__(self, lease: Lease) -> None:
        del self._durations[lease]

    def __iter__(self) -> Iterator[Lease]:
        return iter(self._durations)

    def __len__(self) -> int:
        return len(self._durations)

    def __repr__(self) -> str:
        return f"LeaseMap({len(self)} leases)"

    def can_contain(self, lease: Lease) -> bool:
        """Whether ``lease`` would batch with the leases already here."""
        return all(lease.can_batch(other) for other in self._durations) if self else True

    def renew_all(self) -> None:
        """Renew every lease for its duration.

        Raises:
            LeaseMapError: some renewals failed; those leases were removed from the map.
        """
        failures: dict[Lease, BaseException] = {}
        for group in self._groups():
            durations = [self._durations[lease] for lease in group]
            failures.update(group[0]._renew_batch(group, durations))
        for lease in failures:
            del self._durations[lease]
        if failures:
            raise LeaseMapError(failures)

    def cancel_all(self) -> None:
        """Cancel every lease and empty the map.

        Raises:
            LeaseMapError: some cancellations failed (the map is emptied all the same).
        """
        failures: dict[Lease, BaseException] = {}
        for group in self._groups():
            failures.update(group[0]._cancel_batch(group))
        self._durations.clear()
        if failures:
            raise LeaseMapError(failures)

    def _groups(self) -> list[list[Lease]]:
        batches: dict[Hashable, list[Lease]] = {}
        singles: list[list[Lease]] = []
        for lease in self._durations:
            key = lease._batch_key()
            if key is None:
                singles.append([lease])
            else:
                batches.setdefault(key, []).append(lease)
        return list(batches.values()) + singles
