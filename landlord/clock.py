"""Clocks: the single place where landlord reads time.

Every component that reads time takes a :class:`Clock`, so tests drive time
with a :class:`FakeClock` instead of sleeping. A clock has two faces:

* ``monotonic()`` — what grantors use to decide expiry; never jumps.
* ``time()`` — the wall clock, what a holder's ``lease.expiration`` is on.

and one primitive for threads that sleep until a deadline: :meth:`Clock.wait`.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Protocol

__all__ = ["Clock", "SystemClock", "FakeClock", "SYSTEM_CLOCK"]


class Clock(Protocol):
    """What landlord needs from a clock."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        ...

    def time(self) -> float:
        """Seconds since the epoch on the wall clock."""
        ...

    def wait(self, condition: threading.Condition, deadline: float) -> None:
        """Block on ``condition`` (held by the caller) until it is notified or
        ``monotonic()`` reaches ``deadline``. May return early; callers loop."""
        ...


class SystemClock:
    """The real clocks of this process."""

    # the C functions themselves, not methods that call them: a grant reads four clocks, a renewal three
    monotonic = staticmethod(time.monotonic)
    time = staticmethod(time.time)

    def wait(self, condition: threading.Condition, deadline: float) -> None:
        if math.isinf(deadline):
            condition.wait()
            return
        timeout = deadline - self.monotonic()  # self: a subclass may shift the monotonic clock
        if timeout > 0:
            condition.wait(min(timeout, threading.TIMEOUT_MAX))

    def __repr__(self) -> str:
        return "SystemClock()"


SYSTEM_CLOCK = SystemClock()  #: this process's real clocks, the default wherever a clock is taken


class FakeClock:
    """A clock that moves only when told to, for tests.

    Threads that :meth:`wait` on it sleep until :meth:`advance` moves time past
    their deadline (or their condition is notified). :meth:`wait_for_sleeper`
    lets a test block until a background thread has gone to sleep with a given
    deadline, which is how tests synchronise with reapers without sleeping.

    Args:
        start: the initial monotonic reading.
        wall_offset: added to the monotonic reading to give ``time()``.
    """

    def __init__(self, start: float = 0.0, *, wall_offset: float = 1_700_000_000.0) -> None:
        self._now = float(start)
        self._wall_offset = float(wall_offset)
        self._lock = threading.Condition()
        # condition -> deadlines of the threads waiting on it
        self._sleepers: dict[threading.Condition, list[float]] = {}

    def monotonic(self) -> float:
        with self._lock:
            return self._now

    def time(self) -> float:
        with self._lock:
            return self._now + self._wall_offset

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline has come.

        Raises:
            ValueError: if ``seconds`` is negative or NaN (monotonic time never goes back).
        """
        if not seconds >= 0:
            raise ValueError(f"a monotonic clock cannot go back: advance({seconds!r})")
        with self._lock:
            self._now += seconds
            due = [c for c, deadlines in self._sleepers.items()
                   if any(d <= self._now for d in deadlines)]
        for condition in due:
            with condition:
                condition.notify_all()

    def jump_wall_clock(self, seconds: float) -> None:
        """Move only the wall clock (as an NTP step or an operator would)."""
        with self._lock:
            self._wall_offset += seconds

    def wait(self, condition: threading.Condition, deadline: float) -> None:
        with self._lock:
            if deadline <= self._now:
                return
            self._sleepers.setdefault(condition, []).append(deadline)
            self._lock.notify_all()
        try:
            # The caller holds ``condition``; advance() notifies it once the
            # deadline is due, and the owner notifies it to wake us early.
            condition.wait()
        finally:
            with self._lock:
                deadlines = self._sleepers[condition]
                deadlines.remove(deadline)
                if not deadlines:
                    del self._sleepers[condition]

    def sleeping_deadlines(self) -> list[float]:
        """Deadlines that threads are currently waiting for, sorted."""
        with self._lock:
            return sorted(d for ds in self._sleepers.values() for d in ds)

    def wait_for_sleeper(self, deadline: float | None = None, *, timeout: float = 10.0) -> None:
        """Block until some thread waits on this clock (with ``deadline``, if given).

        Raises:
            TimeoutError: if no such sleeper appears within ``timeout`` real seconds.
        """
        def found() -> bool:
            ds = [d for dl in self._sleepers.values() for d in dl]
            return bool(ds) if deadline is None else deadline in ds

        with self._lock:
            if not self._lock.wait_for(found, timeout):
                raise TimeoutError(
                    f"no thread went to sleep until {deadline!r} within {timeout}s; "
                    f"sleeping until {self.sleeping_deadlines()}")

    def __repr__(self) -> str:
        return f"FakeClock(monotonic={self._now!r})"
