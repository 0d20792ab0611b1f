"""What a failed remote call means: a definite answer, or a reason to try again.

A renewal (or any call to a landlord) that raises either got an answer or did
not. A :class:`~landlord.LeaseError` (``LeaseDeniedError``, ``UnknownLeaseError``)
is the landlord's answer: asking again gets the same one. A Pyro5
``CommunicationError`` (refused, closed, timed out, a garbled message) says
nothing about the lease: the call may never have arrived, or its answer was
lost on the way back, so it is worth trying again on a fresh connection.
A :class:`~landlord.NotLeaderError` says only that another replica of the
group leads: also worth trying again, there. Anything else is treated as
definite: nothing suggests that retrying helps.
"""

from __future__ import annotations

import enum

import Pyro5.errors

from ..errors import NotLeaderError

__all__ = ["Verdict", "classify"]


class Verdict(enum.Enum):
    """What to do after a failed call."""

    DEFINITE = "definite"  # an answer (denied, unknown lease, a bad reply): give up and say so
    RETRY = "retry"        # no answer: try again on a fresh connection while there is time


def classify(error: BaseException) -> Verdict:
    """Whether ``error``, raised by a call to a landlord, is a definite answer or a reason to try again.

    Args:
        error: what the call raised (or what a batch call reported for one lease).

    Returns:
        :attr:`Verdict.RETRY` for a Pyro5 ``CommunicationError`` (including its
        ``TimeoutError``, ``ConnectionClosedError`` and ``ProtocolError``) and a
        :class:`~landlord.NotLeaderError`; :attr:`Verdict.DEFINITE` for anything else.
    """
    return Verdict.RETRY if isinstance(error, (Pyro5.errors.CommunicationError, NotLeaderError)) else Verdict.DEFINITE
