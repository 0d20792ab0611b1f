"""Batching: :class:`LeaseMap` renews or cancels many leases in few calls."""

from __future__ import annotations

from collections.abc import Hashable, Iterator, MutableMapping

from .duration import check_duration
from .errors import LeaseMapError
from .lease import Lease

__all__ = ["LeaseMap"]


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
