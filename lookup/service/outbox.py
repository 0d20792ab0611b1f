"""Which listener's event goes out next: :class:`Outbox`, the clock-free core of event delivery.

Found by a hostile probe (issue 23): 300 event registrations naming
listeners that never answer kept a live listener from hearing anything for
over two minutes. Its events waited in line behind theirs, for a few worker
threads, each held by a dead listener's connect and call timeouts (30 s
each) and by its retry pauses (2.6 s), four times per event.

The outbox decides delivery so that no listener can hold up another:

* **a queue per listener**, at most ``queue`` events long: a listener that
  falls behind loses its own oldest events (it sees a gap in the sequence
  numbers, as after any loss), nobody else's;
* **a deadline per event**: an event not delivered ``deadline`` seconds after
  it was posted is dropped, and no attempt waits past its event's deadline;
* **no waiting in line behind a dead listener**: up to ``in_flight`` attempts
  run at once (one per listener at a time, so its events stay in order), a
  retry pause holds no slot, and listeners not known to be live (never
  reached yet, or whose last attempt failed) may take at most ``unproven``
  of the slots: the rest are kept for listeners whose last event got
  through, so however many dead listeners there are, a live one waits for at
  most the other live ones. Of the others, those never tried go before the
  retries of those that failed, so a new listener's first event waits for
  dead listeners' first attempts at most (none at all while fewer than
  ``unproven`` listeners are new);
* **giving up** on a listener after ``len(retry_delays) + 1`` attempts in a row
  failed (the registration then ends, as before), its mail dropped.

Not thread-safe, and it never reads a clock: its owner
(:class:`~lookup.service.mailer.EventMailer`) calls it under one lock, passing the time.
"""

from __future__ import annotations

import collections
import dataclasses
import heapq
import itertools
import math
from collections.abc import Hashable
from typing import Any

__all__ = ["MailLimits", "Attempt", "Outbox", "DELIVERED", "RETRY", "GAVE_UP"]

DELIVERED, RETRY, GAVE_UP = "delivered", "retry", "gave up"  # what :meth:`Outbox.report` says happened
_RANKS = ("proven", "untried", "failing")  # who gets a free slot first


@dataclasses.dataclass(frozen=True)
class MailLimits:
    """How event delivery is bounded (see the module's docstring).

    Args:
        queue: the most events waiting per listener (the one being delivered
            included); beyond it, its oldest event not being delivered is dropped.
        deadline: seconds an event may take to be delivered, from when it was
            posted; then it is dropped.
        attempt_timeout: seconds one attempt may take, connecting included
            (never past its event's deadline).
        retry_delays: seconds to wait before each retry of a listener that
            could not be reached; one more failure and it is given up on.
        in_flight: the most attempts at once (connections or threads in use).
        unproven: of those, the most to listeners not known to be live.

    Raises:
        TypeError: a count that is not an int, or a time that is not a number.
        ValueError: a count below 1, ``unproven`` above ``in_flight``, a
            time not positive and finite, or a negative retry delay.
    """

    queue: int = 100
    deadline: float = 30.0
    attempt_timeout: float = 5.0
    retry_delays: tuple[float, ...] = (0.1, 0.5, 2.0)
    in_flight: int = 512
    unproven: int = 384

    def __post_init__(self) -> None:
        for name in ("queue", "in_flight", "unproven"):
            _check_count(getattr(self, name), name)
        if self.unproven > self.in_flight:
            raise ValueError(f"unproven ({self.unproven}) must not exceed in_flight ({self.in_flight})")
        for name in ("deadline", "attempt_timeout"):
            _check_seconds(getattr(self, name), name, positive=True)
        if not isinstance(self.retry_delays, tuple):
            raise TypeError(f"retry_delays must be a tuple, got {type(self.retry_delays).__name__}")
        for delay in self.retry_delays:
            _check_seconds(delay, "a retry delay", positive=False)


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One event to try to deliver now: to ``listener`` (of registration ``key``) within ``timeout`` seconds."""

    key: Hashable
    listener: Any
    event: Any
    timeout: float


class _Lane:
    """One listener's mail: its events with their deadlines, and how delivering to it goes."""

    __slots__ = ("listener", "mail", "failures", "proven", "state")

    def __init__(self, listener: Any) -> None:
        self.listener = listener
        self.mail: collections.deque[tuple[Any, float]] = collections.deque()  # (event, deadline)
        self.failures = 0      # attempts failed in a row
        self.proven = False    # its last attempt got through
        self.state = "idle"    # idle (no mail), ready, parked (a retry pause), or busy (an attempt out)

    def rank(self) -> str:
        """Its place in the line for a slot: ``proven``, ``untried`` or ``failing``."""
        return "proven" if self.proven else "untried" if self.failures == 0 else "failing"


class Outbox:
    """Per-listener queues of events, and which attempts may go out now (see the module's docstring).

    Args:
        limits: the bounds (default: :class:`MailLimits`'s).
    """

    def __init__(self, limits: MailLimits | None = None) -> None:
        self.limits = limits if limits is not None else MailLimits()
        self._lanes: dict[Hashable, _Lane] = {}
        self._ready: dict[str, collections.deque[Hashable]] = {rank: collections.deque() for rank in _RANKS}
        self._parked: list[tuple[float, int, Hashable]] = []  # (ready again at, tie-break, key), a heap
        self._order = itertools.count()
        self._out: dict[Hashable, bool] = {}  # attempts out: key -> whether it took an unproven slot
        self._unproven_out = 0
        self._given_up: set[Hashable] = set()
        self._dropped: list[Hashable] = []  # keys of events dropped since drain_dropped

    def post(self, key: Hashable, listener: Any, event: Any, now: float) -> None:
        """Queue ``event`` for the listener of registration ``key``, to be delivered by ``now + deadline``.
        Ignored for a listener given up on (until :meth:`forget`)."""
        if key in self._given_up:
            return
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane(listener)
        lane.listener = listener
        if len(lane.mail) >= self.limits.queue and not self._drop_oldest(key, lane):
            self._dropped.append(key)  # a queue of one, its event out: the newest goes
            return
        lane.mail.append((event, now + self.limits.deadline))
        if lane.state == "idle":
            self._make_ready(key, lane)

    def take(self, now: float, *, room: int | None = None) -> list[Attempt]:
        """The attempts that may start now (each listener's oldest event), marked as out
        until :meth:`report`; events past their deadline are dropped on the way.

        Args:
            now: the time.
            room: fewer attempts at once than ``in_flight`` (the calls at hand
                are on a few threads): the unproven may then have as large a
                share of them as of ``in_flight``, at least one, and never all
                when there are two or more.
        """
        in_flight, unproven = self.limits.in_flight, self.limits.unproven
        if room is not None and room < in_flight:
            in_flight, unproven = room, max(1, min(room - 1, room * unproven // in_flight))
        self._unpark(now)
        attempts: list[Attempt] = []
        while len(self._out) < in_flight:
            key = self._next_ready(unproven)
            if key is None:
                break
            attempt = self._start(key, self._lanes[key], now)
            if attempt is not None:
                attempts.append(attempt)
        return attempts

    def report(self, key: Hashable, delivered: bool, now: float) -> str:
        """How the attempt for ``key`` went: ``delivered`` (reached), or not.

        Returns:
            ``DELIVERED``; ``RETRY`` (the listener is tried again after its next
            retry delay); or ``GAVE_UP``: that was its last retry, its mail is
            dropped and later posts to it are ignored (tell its owner).
        """
        self._unproven_out -= self._out.pop(key, False)
        lane = self._lanes.get(key)
        if lane is None or lane.state != "busy":  # forgotten while its attempt was out
            return DELIVERED if delivered else RETRY
        if delivered:
            lane.mail.popleft()
            lane.failures, lane.proven = 0, True
            self._after(key, lane)
            return DELIVERED
        lane.failures, lane.proven = lane.failures + 1, False
        if lane.failures > len(self.limits.retry_delays):
            del self._lanes[key]
            self._given_up.add(key)
            self._dropped.extend([key] * len(lane.mail))
            return GAVE_UP
        lane.state = "parked"
        heapq.heappush(self._parked, (now + self.limits.retry_delays[lane.failures - 1], next(self._order), key))
        return RETRY

    def forget(self, key: Hashable) -> Any:
        """Drop registration ``key``'s mail, and that it was given up on; its listener (``None``: none held)."""
        self._given_up.discard(key)
        lane = self._lanes.pop(key, None)
        return lane.listener if lane is not None else None

    def wanted(self, key: Hashable) -> bool:
        """Whether the attempt out for ``key`` is still wanted (its registration was not forgotten meanwhile)."""
        lane = self._lanes.get(key)
        return lane is not None and lane.state == "busy"

    def serves(self, listener: Any) -> bool:
        """Whether some registration's mail still goes to ``listener``."""
        return any(lane.listener == listener for lane in self._lanes.values())

    def next_due(self) -> float:
        """When a retry pause ends next (``inf``: none is running)."""
        return self._parked[0][0] if self._parked else math.inf

    def pending(self) -> int:
        """Events queued, those being delivered included."""
        return sum(len(lane.mail) for lane in self._lanes.values())

    def idle(self) -> bool:
        """Nothing queued and no attempt out."""
        return not self._out and self.pending() == 0

    def out(self) -> int:
        """Attempts out now."""
        return len(self._out)

    def drain_dropped(self) -> list[Hashable]:
        """The registrations of the events dropped since last asked (one key per event)."""
        dropped, self._dropped = self._dropped, []
        return dropped

    # -- inside ---------------------------------------------------------------------------

    def _drop_oldest(self, key: Hashable, lane: _Lane) -> bool:
        """Make room in a full queue: drop its oldest event not being delivered; False if there is none."""
        oldest = 1 if lane.state == "busy" else 0
        if len(lane.mail) <= oldest:
            return False
        del lane.mail[oldest]
        self._dropped.append(key)
        return True

    def _make_ready(self, key: Hashable, lane: _Lane) -> None:
        lane.state = "ready"
        self._ready[lane.rank()].append(key)

    def _unpark(self, now: float) -> None:
        while self._parked and self._parked[0][0] <= now:
            _, _, key = heapq.heappop(self._parked)
            lane = self._lanes.get(key)
            if lane is not None and lane.state == "parked":
                self._make_ready(key, lane)

    def _next_ready(self, unproven: int) -> Hashable | None:
        """The next lane to try: proven listeners first; then, while the others hold fewer than
        ``unproven`` slots, those never tried before the retries of those that failed."""
        for rank in _RANKS:
            if rank != "proven" and self._unproven_out >= unproven:
                return None
            queue = self._ready[rank]
            while queue:
                key = queue.popleft()
                lane = self._lanes.get(key)
                if lane is not None and lane.state == "ready" and lane.rank() == rank:
                    return key
        return None

    def _start(self, key: Hashable, lane: _Lane, now: float) -> Attempt | None:
        while lane.mail and lane.mail[0][1] <= now:  # past its deadline
            lane.mail.popleft()
            self._dropped.append(key)
        if not lane.mail:
            lane.state = "idle"
            return None
        lane.state = "busy"
        self._out[key] = not lane.proven
        self._unproven_out += not lane.proven
        event, deadline = lane.mail[0]
        return Attempt(key, lane.listener, event, min(self.limits.attempt_timeout, deadline - now))

    def _after(self, key: Hashable, lane: _Lane) -> None:
        if lane.mail:
            self._make_ready(key, lane)
        else:
            lane.state = "idle"


def _check_count(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")


def _check_seconds(value: object, name: str, *, positive: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if not (0 < value < math.inf if positive else 0 <= value < math.inf):
        raise ValueError(f"{name} must be {'positive' if positive else 'at least 0'} and finite, got {value!r}")
