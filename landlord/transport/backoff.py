"""Retrying a peer that cannot be reached: :class:`Backoff` delays and :class:`OutageLog`.

A client that retries at a fixed interval hammers a peer that has just come
back together with every other client that lost it at the same moment. The
delays of a :class:`Backoff` grow exponentially up to a cap, and each is
shortened by a random share (jitter), so retries spread out. An
:class:`OutageLog` says what happened without flooding the log: the first
failure of an outage at WARNING, its repeats at DEBUG, the recovery at INFO.
"""

from __future__ import annotations

import logging
import math
import numbers
import random as _random
import threading
from collections.abc import Callable

__all__ = ["Backoff", "OutageLog", "PeerErrors"]

log = logging.getLogger("landlord.backoff")  # its name before it moved into transport/


class Backoff:
    """Exponentially growing retry delays with jitter.

    The ``n``-th delay (counting failures from 0) has the ceiling
    ``min(initial * factor ** n, maximum)`` and is that ceiling shortened by
    ``jitter * random()`` of itself: with the default jitter of a half, a
    delay lies between half its ceiling and the full ceiling (the "equal
    jitter" of AWS's architecture blog), so it never collapses towards zero
    the way full jitter can. :meth:`reset` starts again from ``initial``
    after a success. Not thread-safe: one backoff per retrying thread.

    Args:
        initial: the first delay's ceiling, in seconds.
        maximum: the largest ceiling, in seconds.
        factor: what the ceiling is multiplied by after each failure.
        jitter: the share of each ceiling that may be taken off at random,
            from 0 (none: the delays are the ceilings) to 1.
        random: draws a float in ``[0, 1)``; inject one to make delays predictable.

    Raises:
        ValueError: ``initial`` not positive, ``maximum`` below ``initial``,
            either infinite or NaN; ``factor`` below 1; ``jitter`` outside 0..1.
        TypeError: a non-number option, or ``random`` not callable.
    """

    __slots__ = ("_initial", "_maximum", "_factor", "_jitter", "_random", "_failures", "_ceiling")

    def __init__(self, initial: float, maximum: float, *, factor: float = 2.0, jitter: float = 0.5,
                 random: Callable[[], float] = _random.random) -> None:
        initial, maximum = _number(initial, "initial"), _number(maximum, "maximum")
        factor, jitter = _number(factor, "factor"), _number(jitter, "jitter")
        if not (0 < initial <= maximum < math.inf):
            raise ValueError(f"need 0 < initial <= maximum < inf, got {initial!r} and {maximum!r}")
        if not 1 <= factor < math.inf:
            raise ValueError(f"factor must be at least 1, got {factor!r}")
        if not 0 <= jitter <= 1:
            raise ValueError(f"jitter must be from 0 to 1, got {jitter!r}")
        if not callable(random):
            raise TypeError(f"random must be callable, got {type(random).__name__}")
        self._initial = initial
        self._maximum = maximum
        self._factor = factor
        self._jitter = jitter
        self._random = random
        self._failures = 0
        self._ceiling = initial  # grown step by step: a power of a long outage's count would overflow

    @property
    def initial(self) -> float:
        return self._initial

    @property
    def maximum(self) -> float:
        return self._maximum

    @property
    def failures(self) -> int:
        """How many delays have been handed out since the last :meth:`reset`."""
        return self._failures

    def ceiling(self) -> float:
        """The ceiling of the next delay."""
        return self._ceiling

    def next_delay(self) -> float:
        """The delay before the next retry, in seconds; each call counts one more failure."""
        ceiling = self._ceiling
        self._ceiling = min(ceiling * self._factor, self._maximum)
        self._failures += 1
        draw = self._random()
        if not 0 <= draw < 1:  # a broken random source must not make a negative or longer delay
            draw = min(max(draw, 0.0), 1.0)
        return ceiling * (1 - self._jitter * draw)

    def reset(self) -> None:
        """Start again from ``initial`` (after a success)."""
        self._failures = 0
        self._ceiling = self._initial

    def __repr__(self) -> str:
        return (f"Backoff(initial={self._initial!r}, maximum={self._maximum!r}, factor={self._factor!r}, "
                f"jitter={self._jitter!r}, failures={self._failures})")


class OutageLog:
    """Tells the log about one peer's outages, once each.

    The first failure of an outage is logged at WARNING, the failures that
    follow at DEBUG, and the first success after them at INFO, with how many
    attempts failed in between. Thread-safe.

    Args:
        logger: the logger to write to (the caller's module logger).
        peer: how to name the peer in messages (a URI, say).
    """

    def __init__(self, logger: logging.Logger, peer: str) -> None:
        self._logger = logger
        self._peer = peer
        self._lock = threading.Lock()
        self._failures = 0
        self._error: BaseException | None = None

    @property
    def ongoing(self) -> bool:
        """Whether the peer has failed since it last succeeded."""
        with self._lock:
            return self._failures > 0

    @property
    def error(self) -> BaseException | None:
        """The last failure of the current outage, ``None`` when there is none."""
        with self._lock:
            return self._error

    def failed(self, error: BaseException, doing: str = "reach") -> bool:
        """Record a failure; return whether it began an outage (and was logged at WARNING).

        Args:
            error: what went wrong.
            doing: what was tried, as a verb ("register with", "subscribe to").
        """
        with self._lock:
            self._failures += 1
            self._error = error
            first = self._failures == 1
        if first:
            self._logger.warning("could not %s %s: %s (retrying; further failures are logged at DEBUG)",
                                 doing, self._peer, _describe(error))
        else:
            self._logger.debug("could not %s %s (attempt %d of this outage): %s",
                               doing, self._peer, self._failures, _describe(error))
        return first

    def recovered(self) -> bool:
        """Record a success; return whether it ended an outage (and was logged at INFO)."""
        with self._lock:
            failures, self._failures, self._error = self._failures, 0, None
        if failures:
            self._logger.info("reached %s again after %d failed attempt%s",
                              self._peer, failures, "" if failures == 1 else "s")
        return failures > 0


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    number = float(value)
    if math.isnan(number):
        raise ValueError(f"{name} must not be NaN")
    return number


class PeerErrors:
    """The last error of each peer that failed and has not been reached since, and the latest of them all.

    Not thread-safe: its owner guards it with its own lock.
    """

    def __init__(self) -> None:
        self._errors: dict[str, BaseException] = {}  # in the order they happened: the latest last

    def failed(self, peer: str, error: BaseException) -> None:
        """``peer`` failed with ``error`` (its newest failure: the latest overall)."""
        self._errors.pop(peer, None)
        self._errors[peer] = error

    def reached(self, peer: str) -> None:
        """``peer`` was reached: its error no longer stands."""
        self._errors.pop(peer, None)

    @property
    def latest(self) -> BaseException | None:
        """The newest error still standing, ``None`` if none."""
        return next(reversed(self._errors.values()), None)

    def by_peer(self) -> dict[str, BaseException]:
        """Every error still standing, by peer."""
        return dict(self._errors)
