"""How long renewals with one landlord take, measured, and what the schedule plans by it.

A renewal round is not instant: renewing 100,000 leases with one landlord is
ten calls of 10,000, sent one after another on that landlord's lane, and on a
loaded machine each takes a good part of a second. A schedule that starts the
round when the first lease is due, as if it took no time, finishes it late,
and a round that takes longer than the term loses leases.

:class:`Pace` measures, per landlord, the seconds a renewal call takes per
lease (decayed, so it follows a landlord that slows down or speeds up) and
how busy its lane has been over the last term. From it the schedule:

* starts a batch early enough to finish within the first half of what its
  renewal leaves (:func:`finish_by`: with renewals a third into the term,
  while a third of the term is still left);
* once the lane is busy half the time or more, starts batches as late as
  that allows rather than a third into the term: each lease is then renewed
  once in two thirds of its term, not once in a third, which halves the
  load, where renewing early would only queue calls behind one another;
* splits a batch handed over in bulk into calls whose start times are
  staggered back from that bound, so that one after the other they all make it;
* lets an attempt wait at least a few times the time measured for its size
  (:func:`landlord.holder.schedule.attempt_timeout`), so a slow call is not abandoned
  and sent again while the landlord is still working on it;
* warns (WARNING on ``landlord.pace``) when a call finishes later than that
  bound, or when the lane was busy through most of a term: the load cannot be
  kept up with, and leases will be lost unless it drops. The warning comes
  before anything is lost, at most once a minute per landlord.

Before anything is measured a landlord's calls are taken to take no time:
its first round is sent as the terms say, and measured.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Hashable

__all__ = ["Pace", "finish_by", "planned_start", "BUSY", "OVERLOAD", "WARN_EVERY"]

log = logging.getLogger("landlord.pace")  # its name before it moved

# Each call measured counts as much as every call before it put together, so a
# landlord that slows down is followed within a few calls.
_DECAY = 0.5
# The lane busy this share of the time or more (over about a term): renew as late as is safe...
BUSY = 0.5
# ...and this share or more: the load cannot be kept up with.
OVERLOAD = 0.9
# A call done this little past its time is on time: planned to the bound, it ends on it, give or take.
_LATE_SLACK = 0.05
# At most one warning of each kind per landlord this often (seconds).
WARN_EVERY = 60.0


def finish_by(renewal: float, deadline: float) -> float:
    """When a renewal that starts at ``renewal`` should be done: halfway from it to ``deadline``.

    With renewals a third into the term that leaves a third of the term, the
    other half of what the renewal left being for retries on fresh connections.
    """
    return renewal + (deadline - renewal) / 2 if math.isfinite(deadline) else math.inf


def planned_start(renewal: float, deadline: float, expected: float, now: float, *, busy: bool = False) -> float:
    """When to start a round of ``expected`` seconds, due at ``renewal``, its leases ending at ``deadline``.

    At ``renewal`` if it finishes by :func:`finish_by`, else early enough that
    it does, but never before ``now``. With ``busy`` (the landlord's lane busy
    half the time: :meth:`Pace.busy`), as late as still finishes by then.
    """
    if not math.isfinite(renewal) or (expected <= 0 and not busy):
        return renewal
    latest = finish_by(renewal, deadline) - expected
    return max(latest if busy else min(renewal, latest), now)


class Pace:
    """What renewals with one landlord have taken: seconds per lease, and how busy its lane is.

    Plain data: it reads no clock; the schedule hands it the times.
    """

    __slots__ = ("_seconds", "_leases", "_load", "_last", "_warned")

    def __init__(self) -> None:
        self._seconds = 0.0  # decayed sums of call time and of leases in those calls
        self._leases = 0.0
        self._load = 0.0  # the share of time the lane was busy, over about a term (a leaky sum)
        self._last = math.nan  # when _load was last brought up to date
        self._warned: dict[str, float] = {}  # kind of warning -> when last given

    def expected(self, leases: int) -> float:
        """Seconds a call of ``leases`` leases is expected to take; 0 before anything is measured."""
        return leases * self._seconds / self._leases if self._leases else 0.0

    @property
    def load(self) -> float:
        """The share of time the lane was busy with calls, over about the last term (0 to about 1)."""
        return self._load

    def busy(self) -> bool:
        """Busy half the time or more: renewals should go out as late as is safe (:func:`planned_start`)."""
        return self._load >= BUSY

    def record(self, key: Hashable, *, started: float, ended: float, leases: int, term: float,
               late: float) -> None:
        """A call of ``leases`` leases ran from ``started`` to ``ended``; ``late`` seconds past its
        :func:`finish_by` (zero or less: in time). Warns if the landlord cannot be kept up with.

        Args:
            key: the landlord's batch key (named in a warning).
            started: when the call went out.
            ended: when it returned.
            leases: how many leases it carried.
            term: the term of its leases: the window over which the lane's load is judged.
            late: how far past the time it should have been done by it returned.
        """
        took = max(ended - started, 0.0)
        self._seconds = self._seconds * _DECAY + took
        self._leases = self._leases * _DECAY + max(leases, 1)
        if late > _LATE_SLACK:
            self._warn("late", ended, "renewals with %r finished %.2f s later than they should (a call of %d "
                       "lease(s) took %.2f s): the load cannot be kept up with at this pace; leases will be "
                       "lost if it does not drop", key, late, leases, took)
        if math.isfinite(term) and term > 0:
            # a leaky sum with a time constant of a term: each call adds its share of a term,
            # and what was added fades by e every term that passes
            faded = self._load * math.exp(-(ended - self._last) / term) if not math.isnan(self._last) else 0.0
            self._load, self._last = faded + took / term, ended
            if self._load >= OVERLOAD:
                self._warn("busy", ended, "renewing leases with %r keeps its lane busy %.0f%% of the time "
                           "(their term: %.1f s): the load cannot be kept up with; leases will be lost unless "
                           "it drops", key, 100 * self._load, term)

    def _warn(self, kind: str, now: float, message: str, *args: object) -> None:
        last = self._warned.get(kind)
        if last is None or now - last >= WARN_EVERY:
            self._warned[kind] = now
            log.warning(message, *args)
