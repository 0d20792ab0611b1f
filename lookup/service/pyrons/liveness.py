"""When to ping a registered object's daemon, and when to give it up: :class:`PingTerms`, :class:`PingSchedule`.

Pure and clock-free: every method takes ``now`` (seconds on a monotonic
clock), so the time logic is tested on a fake clock and the pinging around it
(:mod:`~lookup.service.pyrons.pinger`) only does what this says.

One schedule entry per daemon *address* (``host:port``), however many names
share it: a daemon that answers keeps all of them; one that misses
:attr:`PingTerms.misses` pings in a row loses all of them.
"""

from __future__ import annotations

import dataclasses
import heapq
import math

__all__ = ["PingTerms", "PingSchedule"]


def _check_seconds(value: object, name: str) -> None:
    """``value`` as a term's seconds: a positive finite number.

    Raises:
        ValueError: anything else (a bool or a str too).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")


@dataclasses.dataclass(frozen=True)
class PingTerms:
    """How a registration made through the name server face is kept alive.

    A daemon that answered is pinged again ``interval`` seconds later; a ping
    that fails (refused, or no answer within ``timeout``) is tried again
    ``retry`` seconds later; ``misses`` failures in a row and the daemon is dead.
    So a daemon that dies is given up at most :attr:`removal_bound` seconds
    after its last answer.

    Args:
        interval: seconds between pings of a daemon that answers.
        timeout: seconds one ping may take (connecting included).
        retry: seconds after a failed ping before the next.
        misses: failed pings in a row that make a daemon dead.

    Raises:
        ValueError: a value that is not a positive finite number (``misses``: a positive int),
            or a ``timeout`` not shorter than ``interval``.
    """

    interval: float = 10.0
    timeout: float = 2.0
    retry: float = 1.0
    misses: int = 2

    def __post_init__(self) -> None:
        for name in ("interval", "timeout", "retry"):
            _check_seconds(getattr(self, name), name)
        if isinstance(self.misses, bool) or not isinstance(self.misses, int) or self.misses < 1:
            raise ValueError(f"misses must be a positive int, got {self.misses!r}")
        if self.timeout >= self.interval:
            raise ValueError(f"timeout ({self.timeout:g} s) must be shorter than interval ({self.interval:g} s)")

    @classmethod
    def every(cls, interval: float) -> PingTerms:
        """Pings every ``interval`` seconds, the other terms scaled down for a short one:
        a timeout of 2 s and a retry of 1 s, or a fifth of ``interval`` each if shorter.

        Raises:
            ValueError: ``interval`` is not a positive finite number.
        """
        _check_seconds(interval, "interval")
        return cls(interval=interval, timeout=min(2.0, interval / 5), retry=min(1.0, interval / 5))

    @property
    def removal_bound(self) -> float:
        """The most seconds from a daemon's last answer to its names' removal (its pings' slowest path)."""
        return self.interval + self.misses * (self.timeout + self.retry)

    @property
    def lease_term(self) -> float:
        """The lease each name's registration is given, renewed at every answer: longer than the
        slowest path from one answer to the next (so a daemon that answers never loses it), and
        a bound on how long a name outlives its daemon should the pinging stop altogether."""
        return self.removal_bound + self.interval


class PingSchedule:
    """Which daemon addresses to ping when. Not thread-safe: its owner calls it under one lock.

    Args:
        terms: the intervals and misses.
    """

    def __init__(self, terms: PingTerms) -> None:
        self.terms = terms
        self._due: dict[str, float] = {}       # address -> when its next ping is due (absent while in flight)
        self._misses: dict[str, int] = {}      # address -> failed pings in a row
        self._in_flight: set[str] = set()
        self._proven: set[str] = set()         # addresses whose last ping was answered
        self._queue: list[tuple[float, str]] = []  # (due, address); stale once _due says otherwise

    def __len__(self) -> int:
        return len(self._misses)

    def __contains__(self, address: object) -> bool:
        return address in self._misses

    def watch(self, address: str, now: float) -> None:
        """Ping ``address`` from now on, first ``interval`` after ``now`` (it has just been
        registered, so its daemon was alive a moment ago); an address watched already is left as it is."""
        if address not in self._misses:
            self._misses[address] = 0
            self._set_due(address, now + self.terms.interval)

    def forget(self, address: str) -> None:
        """Ping ``address`` no more (its last name went); a ping in flight is then ignored."""
        self._misses.pop(address, None)
        self._due.pop(address, None)
        self._in_flight.discard(address)
        self._proven.discard(address)

    def proven(self, address: str) -> bool:
        """Whether ``address`` answered its last ping (a new one, or one that missed, has not)."""
        return address in self._proven

    def take_due(self, now: float) -> list[str]:
        """The addresses whose ping is due at ``now``, marked in flight (each is then
        :meth:`answered` or :meth:`missed`); never one already in flight."""
        taken = []
        while self._queue and self._queue[0][0] <= now:
            due, address = heapq.heappop(self._queue)
            if self._due.get(address) == due:
                del self._due[address]
                self._in_flight.add(address)
                taken.append(address)
        return taken

    def next_due(self) -> float | None:
        """When the next ping is due (``None``: nothing to ping but what is in flight)."""
        while self._queue and self._due.get(self._queue[0][1]) != self._queue[0][0]:
            heapq.heappop(self._queue)  # stale
        return self._queue[0][0] if self._queue else None

    def answered(self, address: str, now: float) -> bool:
        """``address`` answered its ping at ``now``: due again ``interval`` later.
        Returns whether it is still watched (not forgotten meanwhile)."""
        if address not in self._in_flight:
            return False
        self._in_flight.discard(address)
        self._proven.add(address)
        self._misses[address] = 0
        self._set_due(address, now + self.terms.interval)
        return True

    def missed(self, address: str, now: float) -> bool:
        """``address`` failed its ping at ``now``. Returns whether it is dead now: that many
        misses in a row (then it is forgotten); else it is tried again ``retry`` later."""
        if address not in self._in_flight:
            return False
        self._in_flight.discard(address)
        self._proven.discard(address)
        self._misses[address] += 1
        if self._misses[address] >= self.terms.misses:
            self.forget(address)
            return True
        self._set_due(address, now + self.terms.retry)
        return False

    def _set_due(self, address: str, due: float) -> None:
        self._due[address] = due
        heapq.heappush(self._queue, (due, address))
