"""The flat error tree of landlord.

A :class:`LeaseError` is a *definite* answer from a landlord: the lease is
gone or may not be renewed. A Pyro5 ``CommunicationError`` is passed through
unchanged and means the opposite: nothing is known, try again. So does a
:class:`NotLeaderError`, a replica's answer that another replica of its group
leads (:func:`landlord.transport.verdicts.classify` says retry for both); a client that
knows the group asks the replica it names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["LeaseError", "LeaseDeniedError", "UnknownLeaseError", "LeaseMapError", "NotLeaderError", "StaleTokenError"]


class LeaseError(Exception):
    """Base of every definite failure of a lease operation."""


class LeaseDeniedError(LeaseError):
    """The landlord refused to grant or renew the lease (its policy said no)."""


class UnknownLeaseError(LeaseError):
    """The landlord does not know the lease: it expired, was cancelled, or never existed."""


class StaleTokenError(LeaseError):
    """A fenced resource refused an operation: its fencing token is older than one it has accepted.

    A :class:`LeaseError`, a definite answer: whoever holds ``token`` no longer
    holds the name (a later holder has written), whatever it believes. Raised by
    :class:`~landlord.Fence`; it crosses the wire as itself, for a fence checked remotely.

    Args:
        message: what happened.
        token: the token refused.
        highest: the highest token the resource had accepted.
    """

    def __init__(self, message: str, token: int | None = None, highest: int | None = None) -> None:
        super().__init__(message)
        self.token, self.highest = token, highest

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.token, self.highest))


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


class NotLeaderError(Exception):
    """This replica does not lead its group, so it neither grants nor renews: ask ``leader``.

    Not a :class:`LeaseError`: it says nothing about the lease, only where to
    ask (the call may be sent again, there). Nor a Pyro5
    ``CommunicationError``: a Pyro5 daemon closes the connection of a call
    that raises one, and this answer should arrive.

    Args:
        message: what happened.
        leader: the URI of the replica that leads, or ``None`` while no leader is known.
    """

    def __init__(self, message: str = "this replica does not lead its group", leader: str | None = None) -> None:
        super().__init__(message)
        self.leader = leader

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.leader))
