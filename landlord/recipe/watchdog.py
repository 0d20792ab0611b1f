"""The time a holder keeps: :class:`Watchdog`, one thread for every claim of a process on one clock.

A held claim must turn invalid, and tell its listeners, at its lease's
deadline less its margin, or at once when it is revoked. One thread per
holding would cost a thread start on every acquire (half a millisecond, a
third of a served lock's round trip); one thread sleeps instead until the
earliest moment any claim must be looked at, and asks it then
(:meth:`Watched.check`): the claim says when to look again (its lease was
renewed meanwhile) or that it is done.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
from typing import Protocol

from ..clock import Clock

__all__ = ["Watchdog", "Watched", "watchdog_for"]

_STALE_SLACK = 64  # entries beyond twice the watched that trigger a rebuild of the heap


class Watched(Protocol):
    """What a watchdog looks after (a holding of a claim)."""

    def check(self) -> float | None:
        """Called on the watchdog's thread when due: when to be checked next, or ``None``: done."""


class Watchdog:
    """Checks each watched thing when it is due, on one thread of its own (made on first use).

    Args:
        clock: the clock the due times are on.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._changed = threading.Condition()
        self._due: list[tuple[float, int, Watched]] = []
        self._live: dict[int, Watched] = {}  # by the id of its entry: what is still watched
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, watched: Watched, due: float) -> int:
        """Check ``watched`` at ``due`` (on the clock's monotonic time); a key for :meth:`wake`/:meth:`drop`."""
        key = next(self._ids)
        with self._changed:
            self._live[key] = watched
            self._push(due, key, watched)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="Watchdog", daemon=True)
                self._thread.start()
        return key

    def wake(self, key: int) -> None:
        """Check the watched thing of ``key`` now (it was revoked)."""
        with self._changed:
            watched = self._live.get(key)
            if watched is not None:
                self._push(-math.inf, key, watched)

    def drop(self, key: int) -> None:
        """Stop watching ``key`` (released)."""
        with self._changed:
            self._live.pop(key, None)

    def __len__(self) -> int:
        with self._changed:
            return len(self._live)

    def _push(self, due: float, key: int, watched: Watched) -> None:
        if len(self._due) > 2 * len(self._live) + _STALE_SLACK:  # entries of dropped things: rebuild
            self._due = [entry for entry in self._due if self._live.get(entry[1]) is entry[2]]
            heapq.heapify(self._due)
        heapq.heappush(self._due, (due, key, watched))
        self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                while True:
                    while self._due and self._live.get(self._due[0][1]) is not self._due[0][2]:
                        heapq.heappop(self._due)  # dropped
                    due = self._due[0][0] if self._due else math.inf
                    if due <= self._clock.monotonic():
                        _, key, watched = heapq.heappop(self._due)
                        break
                    self._clock.wait(self._changed, due)
            again = watched.check()
            with self._changed:
                if again is None:
                    self._live.pop(key, None)
                elif self._live.get(key) is watched:
                    self._push(again, key, watched)


_lock = threading.Lock()
_watchdogs: dict[int, Watchdog] = {}


def watchdog_for(clock: Clock) -> Watchdog:
    """The one watchdog of this process for ``clock`` (made on first use)."""
    with _lock:
        watchdog = _watchdogs.get(id(clock))
        if watchdog is None or watchdog._clock is not clock:
            watchdog = _watchdogs[id(clock)] = Watchdog(clock)
        return watchdog
