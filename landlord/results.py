"""What a batch renewal answers: :class:`RenewResults`, a value both sides share.

A landlord's ``renew_all`` returns it and a holder's batch reads it, so it
lives below both: a holder process that receives one loads no grantor
(:mod:`landlord.wire` carries it as ``landlord.RenewResults``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RenewResults"]


@dataclass(frozen=True, slots=True)
class RenewResults:
    """The answer to a batch renewal.

    Two are equal when they grant the same and deny with errors of the same
    type and arguments (exceptions themselves compare by identity).

    Args:
        granted: seconds granted per lease, in request order; ``-1`` where that renewal failed.
        denied: the exceptions of the failed renewals, in order.
    """

    granted: list[float]
    denied: list[Exception]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RenewResults):
            return NotImplemented
        return self.granted == other.granted and [repr(e) for e in self.denied] == [repr(e) for e in other.denied]

    def __repr__(self) -> str:  # a batch may hold 10,000 leases: kept short for logs
        return f"RenewResults(granted={self.granted!r:.80}, denied={self.denied!r:.80})"
