"""Reapers decide *when* a lease manager frees the resources of expired leases.

* :class:`SleeperReaper` — one thread asleep until the earliest expiration,
  woken early when an earlier one arrives. Next to no CPU when idle and
  frees promptly: the default.
* :class:`PollingReaper` — one thread that wakes every ``interval`` seconds.
* :class:`LazyReaper` — no thread; expired leases are freed when the manager
  is next used.

A reaper never decides *whether* a lease is alive: the manager refuses an
expired lease whether or not it has been reaped.
"""

from __future__ import annotations

import abc
import logging
import math
import threading
from typing import Protocol

from ..clock import Clock
from ..duration import check_duration

__all__ = ["Reaper", "Reaped", "SleeperReaper", "PollingReaper", "LazyReaper", "make_reaper", "REAPERS"]

log = logging.getLogger("landlord.reapers")  # its name before it moved


class Reaped(Protocol):
    """What a reaper needs of the :class:`~landlord.LeaseManager` it serves.

    A protocol, so that the reapers need not import the manager (which makes them).
    """

    @property
    def clock(self) -> Clock:
        """The clock expirations are on (its ``monotonic()``)."""

    def next_expiration(self) -> float:
        """The earliest expiration of a lease held, ``math.inf`` if none."""

    def reap(self) -> int:
        """Free every lease that has run out; return how many."""


class Reaper(abc.ABC):
    """What a :class:`~landlord.LeaseManager` tells its reaper."""

    @abc.abstractmethod
    def start(self, manager: Reaped) -> None:
        """Begin reaping ``manager`` (called once, by the manager)."""

    def expiration_added(self, expiration: float) -> None:
        """A lease now ends at ``expiration`` (new or renewed)."""

    def on_use(self) -> None:
        """The manager is about to be used."""

    def close(self) -> None:
        """Stop; return once any thread of the reaper has ended."""


class _ThreadedReaper(Reaper):
    """A reaper with one daemon thread that sleeps on the manager's clock."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._manager: Reaped | None = None

    def start(self, manager: Reaped) -> None:
        if self._manager is not None:
            raise ValueError("a reaper serves one lease manager")
        self._manager = manager
        self._thread = threading.Thread(target=self._run_logged, name=type(self).__name__, daemon=True)
        self._thread.start()

    def close(self) -> None:
        with self._condition:
            self._closed = True
            self._condition.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _run_logged(self) -> None:
        try:
            self._run()
        except Exception:  # never expected: reap() logs callback errors itself
            log.exception("%s stopped by an error", type(self).__name__)

    @abc.abstractmethod
    def _run(self) -> None: ...


class SleeperReaper(_ThreadedReaper):
    """One thread sleeping until the earliest expiration (see module docs)."""

    def __init__(self) -> None:
        super().__init__()
        self._sleeping_until = math.inf

    def expiration_added(self, expiration: float) -> None:
        # Read without the lock first: most leases end after the one slept for. A finite
        # value here was written after the thread last read the table (it reads it while
        # this is -inf or inf), and the lease was filed before this call, so the thread
        # sees it when it wakes, by ``expiration`` at the latest: no notice needed.
        sleeping_until = self._sleeping_until
        if -math.inf < sleeping_until <= expiration:
            return
        with self._condition:
            if expiration < self._sleeping_until:
                self._condition.notify_all()

    def _run(self) -> None:
        assert self._manager is not None
        manager, clock = self._manager, self._manager.clock
        while True:
            with self._condition:
                if self._closed:
                    return
                deadline = manager.next_expiration()
                if deadline > clock.monotonic():
                    # expiration_added() reads this under the same condition,
                    # so an earlier lease arriving now cannot miss the wake-up
                    self._sleeping_until = deadline
                    clock.wait(self._condition, deadline)
                    self._sleeping_until = -math.inf  # awake: every arrival notifies
                    continue
            manager.reap()


class PollingReaper(_ThreadedReaper):
    """One thread that frees expired leases every ``interval`` seconds.

    Args:
        interval: seconds between polls.

    Raises:
        ValueError: ``interval`` not a positive finite number.
    """

    def __init__(self, interval: float = 1.0) -> None:
        super().__init__()
        interval = check_duration(interval, name="interval", allow_any=False)
        if not 0 < interval < math.inf:
            raise ValueError(f"interval must be positive and finite, got {interval!r}")
        self.interval = interval

    def _run(self) -> None:
        assert self._manager is not None
        manager, clock = self._manager, self._manager.clock
        while True:
            next_poll = clock.monotonic() + self.interval
            with self._condition:
                while not self._closed and clock.monotonic() < next_poll:
                    clock.wait(self._condition, next_poll)
                if self._closed:
                    return
            manager.reap()


class LazyReaper(Reaper):
    """No thread: expired leases are freed whenever the manager is next used.

    It keeps a lower bound of the earliest expiration held, so a use before
    that moment costs one clock read, not a trip through the manager's lock.
    """

    def __init__(self) -> None:
        self._manager: Reaped | None = None
        self._lock = threading.Lock()
        self._earliest = -math.inf  # nothing can expire before this
        self._arrivals = 0  # bumped by every expiration_added that takes the lock, to detect races with on_use
        self._updating = 0  # on_use calls between reading the table and setting _earliest from it

    def start(self, manager: Reaped) -> None:
        if self._manager is not None:
            raise ValueError("a reaper serves one lease manager")
        self._manager = manager

    def expiration_added(self, expiration: float) -> None:
        # Without the lock when no on_use is under way and the bound already covers the lease:
        # an on_use starting later reads the table after the lease was filed (read in this order).
        if not self._updating and self._earliest <= expiration:
            return
        with self._lock:
            self._arrivals += 1
            if expiration < self._earliest:
                self._earliest = expiration

    def on_use(self) -> None:
        manager = self._manager
        assert manager is not None
        if manager.clock.monotonic() < self._earliest:
            return
        with self._lock:
            arrivals = self._arrivals
            self._updating += 1
        earliest = -math.inf  # if reaping fails: the next use tries again
        try:
            manager.reap()  # outside our lock: on_expire may add leases
            earliest = manager.next_expiration()
        finally:
            with self._lock:
                self._updating -= 1
                if self._arrivals == arrivals:  # else a new lease may be earlier: keep the old, lower bound
                    self._earliest = earliest


REAPERS: dict[str, type[Reaper]] = {
    "sleeper": SleeperReaper,
    "polling": PollingReaper,
    "lazy": LazyReaper,
}


def make_reaper(reaper: str | Reaper) -> Reaper:
    """A reaper from its name, or ``reaper`` itself.

    Raises:
        ValueError: an unknown name.
        TypeError: neither a name nor a :class:`Reaper`.
    """
    if isinstance(reaper, Reaper):
        return reaper
    if isinstance(reaper, str):
        try:
            return REAPERS[reaper]()
        except KeyError:
            raise ValueError(f"unknown reaper {reaper!r}; choose one of {sorted(REAPERS)}") from None
    raise TypeError(f"reaper must be a name or a Reaper, got {type(reaper).__name__}")
