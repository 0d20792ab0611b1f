"""The holder's view of a lease: :class:`Lease`, :class:`AbstractLease`, and batching.

Batching is Jini's ``canBatch``/``LeaseMap`` idea, typed: a lease that can
go out in one call with others of its kind is a :class:`BatchableLease`. Its
:meth:`~BatchableLease.batch_key` says which leases share a call (equal keys),
its :meth:`~BatchableLease.renew_batch` and :meth:`~BatchableLease.cancel_batch`
send them and apply the answer (:meth:`AbstractLease.record_grant`). Whoever
batches (a :class:`LeaseMap`, the renewal manager and its schedule) groups
leases by :func:`batch_key_of` and sends each group with :func:`renew_together`
or :func:`cancel_together`; a lease that is not a :class:`BatchableLease` is
renewed and cancelled one by one.

A lease makes its own map (:meth:`Lease.create_lease_map`) and a map holds
leases, so the two live in one module: split, they would import each other.
"""

from __future__ import annotations

import abc
import math
import time
from collections.abc import Hashable, Iterator, MutableMapping, Sequence
from typing import TypeVar, cast

from .clock import SYSTEM_CLOCK, Clock
from .duration import ANY, FOREVER, check_duration
from .errors import LeaseError, LeaseMapError

__all__ = ["Lease", "AbstractLease", "BatchableLease", "LeaseMap", "batch_key_of", "renew_together",
           "cancel_together", "sent_now", "check_granted", "record_grants"]


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
        """Whether ``other`` can be renewed or cancelled in the same batch as this lease
        (never, but for a :class:`BatchableLease`)."""
        return False

    def create_lease_map(self, duration: float = ANY) -> LeaseMap:
        """A :class:`LeaseMap` holding this lease, to renew it together with others."""
        return LeaseMap({self: duration})


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

    @property
    def clock(self) -> Clock:
        """The holder's clocks this lease is timed on: a batch reads :func:`sent_now` on them
        before sending, and gives that to :meth:`record_grant`."""
        return self._clock

    def renew(self, duration: float = ANY) -> float:
        duration = check_duration(duration)
        clock = self._clock
        sent = clock.time(), clock.monotonic()  # sent_now(clock), a call less: this is on every renewal
        granted = self._do_renew(duration)
        if type(granted) is not float or not granted >= 0:  # a float of seconds passes as it is (not NaN)
            granted = check_granted(granted)
        self.record_grant(sent, granted)
        return granted

    def _start_granted(self, granted: float, clock: Clock) -> None:
        """Start a lease made without ``__init__`` as granted ``granted`` seconds now (for a
        landlord making its own lease from parts it has checked: see
        :meth:`~landlord.LandlordLease.granted`)."""
        self._clock = clock
        self._expiration = clock.time() + granted  # record_grant(sent_now(clock), granted), two calls less
        self._deadline = clock.monotonic() + granted
        self._term = granted

    def record_grant(self, sent: tuple[float, float], granted: float) -> None:
        """Record a grant of ``granted`` seconds to a request sent at ``sent`` (:func:`sent_now` on
        :attr:`clock`), made here or in a batch (:meth:`BatchableLease.renew_batch`): the lease now
        ends ``granted`` seconds after ``sent``, on both clocks, and its term is ``granted``.

        Args:
            sent: when the request went out, as ``(wall, monotonic)``.
            granted: the seconds the landlord granted, checked (:func:`check_granted`).
        """
        self._expiration = sent[0] + granted
        self._deadline = sent[1] + granted
        self._term = granted

    @abc.abstractmethod
    def _do_renew(self, duration: float) -> float:
        """Renew at the landlord; return the granted seconds."""


def record_grants(leases: Sequence[AbstractLease], sent: tuple[float, float], granted: Sequence[float]) -> bool:
    """Record the grants of a batch at once, if all were granted: each lease ends its grant after
    ``sent``, as :meth:`AbstractLease.record_grant` would have it, without a call per lease.

    Args:
        leases: the leases renewed, in order.
        sent: when the request went out (:func:`sent_now`).
        granted: the seconds granted to each, as the landlord answered them (unchecked).

    Returns:
        Whether it recorded them; not when a grant is not a float of at least 0 (``-1``, a
        refusal), nor when a lease's class records its grants its own way. Then nothing is
        recorded: the caller goes through them one by one.
    """
    if not (set(map(type, granted)) <= _FLOAT and min(granted, default=0.0) >= 0.0 and not math.isnan(sum(granted))
            and all(_records_plainly(kind) for kind in set(map(type, leases)))):
        return False
    wall, monotonic = sent
    for lease, grant in zip(leases, granted):
        lease._expiration = wall + grant
        lease._deadline = monotonic + grant
        lease._term = grant
    return True


_FLOAT = frozenset({float})


def _records_plainly(kind: type) -> bool:
    """Whether leases of ``kind`` record a grant as :class:`AbstractLease` does (their class does not override it)."""
    return issubclass(kind, AbstractLease) and kind.record_grant is AbstractLease.record_grant


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


# a batch holds leases of one kind: a class's renew_batch is handed leases of its class
SameKind = TypeVar("SameKind", bound="BatchableLease")


class BatchableLease(Lease):
    """A lease that can be renewed and cancelled in one remote call with others of its kind
    (Jini's ``canBatch`` and ``LeaseMap``): a :class:`~landlord.LandlordLease`, or a lease
    class of your own.

    Leases whose :meth:`batch_key` is equal (and not ``None``) go out together:
    a :class:`LeaseMap` and the :class:`~landlord.LeaseRenewalManager` gather
    them by key and hand a group to one of them, ``first.renew_batch(group,
    durations)``. An equal key is a promise that the
    first lease's :meth:`renew_batch` takes all of them, so a key names both the
    kind of lease and where its calls go (a :class:`~landlord.LandlordLease`'s
    starts with ``"landlord"``, its landlord's id and address).

    A lease that is not a :class:`BatchableLease` is renewed and cancelled one by one.
    """

    __slots__ = ()

    @abc.abstractmethod
    def batch_key(self) -> Hashable | None:
        """What this lease's batch calls go to: leases of equal keys share a call; ``None``: this
        lease goes on its own."""

    @abc.abstractmethod
    def renew_batch(self: SameKind, leases: Sequence[SameKind], durations: Sequence[float]) -> dict[Lease, Exception]:
        """Renew ``leases`` (this one's batch key, each for its duration) in as few calls as the
        landlord takes, and record each grant on its lease (:meth:`AbstractLease.record_grant`).

        Args:
            leases: leases whose :meth:`batch_key` equals this one's.
            durations: the seconds to ask for each, in the same order (``ANY`` allowed).

        Returns:
            The leases that were refused, with why; the others are renewed.

        Raises:
            Exception: the call failed as a whole (a ``CommunicationError``: no lease's
                outcome is known).
        """

    @abc.abstractmethod
    def cancel_batch(self: SameKind, leases: Sequence[SameKind]) -> dict[Lease, Exception]:
        """Cancel ``leases`` (this one's batch key) in as few calls as the landlord takes.

        Returns:
            The leases whose cancellation failed, with why.

        Raises:
            Exception: the call failed as a whole.
        """

    def can_batch(self, other: Lease) -> bool:
        """Whether ``other`` is a :class:`BatchableLease` of the same (non-``None``) batch key."""
        key = self.batch_key()
        return key is not None and isinstance(other, BatchableLease) and other.batch_key() == key


def batch_key_of(lease: Lease) -> Hashable | None:
    """The key ``lease`` is batched under: its :meth:`BatchableLease.batch_key`; ``None`` (renewed
    on its own) for a lease that is not a :class:`BatchableLease`."""
    batchable = _BATCHABLE.get(type(lease))
    if batchable is None:
        batchable = _batchable_class(type(lease))
    return cast("BatchableLease", lease).batch_key() if batchable else None


# whether a class of lease is a BatchableLease, by class: an ABC's isinstance costs a Python call
# per lease, and a batch is thousands of leases of a class or two
_BATCHABLE: dict[type, bool] = {}
_BATCHABLE_LIMIT = 256  # classes made on the fly cannot make it grow without end


def _batchable_class(kind: type) -> bool:
    if len(_BATCHABLE) >= _BATCHABLE_LIMIT:
        _BATCHABLE.clear()
    _BATCHABLE[kind] = batchable = issubclass(kind, BatchableLease)
    return batchable


def renew_together(leases: Sequence[Lease], durations: Sequence[float]) -> dict[Lease, Exception]:
    """Renew leases of one batch key (:func:`batch_key_of`) each for its duration: in one
    :meth:`BatchableLease.renew_batch` of the first when all are batchable, else one by one.

    Returns:
        The leases that failed, with why.

    Raises:
        Exception: what a batch call raised as a whole (one by one, each failure is returned).
    """
    batch = _batchable(leases)
    if batch is not None:
        return batch[0].renew_batch(batch, durations)
    failures: dict[Lease, Exception] = {}
    for lease, duration in zip(leases, durations):
        try:
            lease.renew(duration)
        except Exception as exc:  # every failure is reported, none is swallowed
            failures[lease] = exc
    return failures


def cancel_together(leases: Sequence[Lease]) -> dict[Lease, Exception]:
    """Cancel leases of one batch key: in one :meth:`BatchableLease.cancel_batch` of the first
    when all are batchable, else one by one.

    Returns:
        The leases whose cancellation failed, with why.

    Raises:
        Exception: what a batch call raised as a whole.
    """
    batch = _batchable(leases)
    if batch is not None:
        return batch[0].cancel_batch(batch)
    failures: dict[Lease, Exception] = {}
    for lease in leases:
        try:
            lease.cancel()
        except Exception as exc:
            failures[lease] = exc
    return failures


def _batchable(leases: Sequence[Lease]) -> list[BatchableLease] | None:
    """``leases`` as one batch, if every one is a :class:`BatchableLease` and they have a key."""
    # checked once per class, not once per lease: a batch of 10,000 is usually of one class
    if not leases or not all(issubclass(kind, BatchableLease) for kind in set(map(type, leases))):
        return None
    batch = cast("list[BatchableLease]", list(leases))
    return batch if batch[0].batch_key() is not None else None


class LeaseMap(MutableMapping[Lease, float]):
    """A mutable mapping of lease -> requested duration, renewed or cancelled as a batch.

    Leases of one batch key (:class:`BatchableLease`: a :class:`~landlord.LandlordLease`
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
        for group, durations in self._groups():
            failures.update(renew_together(group, durations))
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
        for group, _ in self._groups():
            failures.update(cancel_together(group))
        self._durations.clear()
        if failures:
            raise LeaseMapError(failures)

    def _groups(self) -> list[tuple[list[Lease], list[float]]]:
        """The leases by batch key (:func:`batch_key_of`), then each without one on its own; each
        group with its leases' durations, in the same order."""
        batches: dict[Hashable, tuple[list[Lease], list[float]]] = {}
        singles: list[tuple[list[Lease], list[float]]] = []
        for lease, duration in self._durations.items():  # no lease hashed again to find its duration
            key = batch_key_of(lease)
            if key is None:
                singles.append(([lease], [duration]))
                continue
            group = batches.get(key)
            if group is None:
                group = batches[key] = ([], [])
            group[0].append(lease)
            group[1].append(duration)
        return list(batches.values()) + singles
