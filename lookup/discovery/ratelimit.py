"""Limits for what strangers can make discovery do: :class:`ReplyLimiter` and :class:`DropLog`.

Anyone on the network can send discovery packets, with any source address.
A lookup service answering every request would be an amplifier (a forged
request of 100 bytes buys a reply of up to 1,400 at the forged address), and
logging every malformed packet would let a flood fill the disk. So replies
are rate-limited per source address and in all (:class:`ReplyLimiter`), and
dropped packets are logged at most once per period, with a count of those
not logged (:class:`DropLog`).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

from landlord import SYSTEM_CLOCK, Clock

__all__ = ["TokenBucket", "ReplyLimiter", "DropLog"]


class TokenBucket:
    """``burst`` tokens, refilled at ``rate`` a second; :meth:`take` one if there is one (not thread-safe)."""

    __slots__ = ("rate", "burst", "_tokens", "_at")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate, self.burst = rate, burst
        self._tokens, self._at = burst, now

    def take(self, now: float) -> bool:
        self._tokens = min(self.burst, self._tokens + max(0.0, now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        return False


class ReplyLimiter:
    """Whether a reply may go to a source now: at most ``per_source`` a second to one address (``burst``
    at once), and ``total`` a second to all together; the ``max_sources`` addresses last seen are remembered.

    Args:
        per_source: replies a second to one address, in the long run.
        burst: replies to one address at once.
        total: replies a second to all addresses.
        max_sources: addresses remembered (the longest unseen is forgotten first).
        clock: what rates are measured on.
    """

    def __init__(self, *, per_source: float = 1.0, burst: float = 4.0, total: float = 50.0,
                 max_sources: int = 4096, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._per_source, self._burst = per_source, burst
        self._max_sources = max_sources
        self._all = TokenBucket(total, total, clock.monotonic())
        self._sources: OrderedDict[str, TokenBucket] = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, source: str) -> bool:
        """Whether a reply to ``source`` may go now (taking its token if so)."""
        with self._lock:
            now = self._clock.monotonic()
            bucket = self._sources.get(source)
            if bucket is None:
                bucket = self._sources[source] = TokenBucket(self._per_source, self._burst, now)
                if len(self._sources) > self._max_sources:
                    self._sources.popitem(last=False)
            else:
                self._sources.move_to_end(source)
            return bucket.take(now) and self._all.take(now)


class DropLog:
    """Logs dropped packets at WARNING, at most once per ``period`` seconds; the others are counted and
    the count said in the next line logged (each one is logged at DEBUG too).

    Args:
        logger: where to log.
        period: seconds between two WARNING lines at least.
        clock: what the period is measured on.
    """

    def __init__(self, logger: logging.Logger, *, period: float = 60.0, clock: Clock = SYSTEM_CLOCK) -> None:
        self._logger = logger
        self._period = period
        self._clock = clock
        self._next = -float("inf")
        self._suppressed = 0
        self._lock = threading.Lock()

    def dropped(self, source: object, why: object) -> None:
        """A packet from ``source`` was dropped because of ``why``."""
        with self._lock:
            now = self._clock.monotonic()
            if now < self._next:
                self._suppressed += 1
                suppressed = -1
            else:
                self._next = now + self._period
                suppressed, self._suppressed = self._suppressed, 0
        if suppressed < 0:
            self._logger.debug("dropped a discovery packet from %s: %s", source, why)
        else:
            self._logger.warning("dropped a discovery packet from %s: %s%s", source, why,
                                 f" ({suppressed} more dropped since the last such line)" if suppressed else "")
