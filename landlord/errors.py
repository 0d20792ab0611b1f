"""The flat error tree of landlord.

A :class:`LeaseError` is a *definite* answer from a landlord: the lease is
gone or may not be renewed. A Pyro5 ``CommunicationError`` is passed through
unchanged and means the opposite: nothing is known, try again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["LeaseError", "LeaseDeniedError", "UnknownLeaseError", "LeaseMapError"]


class LeaseError(Exception):
    """Base of every definite failure of a lease operation."""


class LeaseDeniedError(LeaseError):
    """The landlord refused to grant or renew the lease (its policy said no)."""


class UnknownLeaseError(LeaseError):
    """The landlord does not know the lease: it expired, was cancelled, or never existed."""


class LeaseMapError(LeaseError):
    """Some leases of a :class:`~landlord.LeaseMap` batch failed.

    Args:
        failures: each failed :class:`~landlord.Lease` mapped to the exception it raised
            (typed ``Any`` here: the errors module sits below the lease module).
    """

    def __init__(self, failures: Mapping[Any, BaseException], message: str | None = None) -> None:
        self.failures: dict[Any, BaseException] = dict(failures)
        if message is None:
            kinds = sorted({type(e).__name__ for e in self.failures.values()})
            message = f"{len(self.failures)} lease(s) failed ({', '.join(kinds)})"
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.failures, str(self)))
