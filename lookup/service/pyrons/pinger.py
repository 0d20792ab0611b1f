"""Pinging the daemons of names registered through the name server face: :class:`DaemonPinger`.

One thread waits for the next ping due (:class:`~lookup.service.pyrons.liveness.PingSchedule`
says when) and hands the due addresses to bounded pools of workers; each
worker calls ``ping()`` on the daemon's own object (``PYRO:Pyro.Daemon@host:port``,
which every Pyro5 daemon serves) with a timeout, and reports. Nothing here
holds the lookup service's lock or runs on its request threads: a daemon that
hangs costs one worker for :attr:`PingTerms.timeout`.

Two pools: addresses that answered their last ping have one, new addresses and
those that missed the other. So a stranger who registers names at a thousand
addresses that never answer (which costs him nothing) keeps the second pool
busy, and the daemons that answer are pinged on time all the same.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable

import Pyro5.client
import Pyro5.core

from landlord import SYSTEM_CLOCK, Clock

from .liveness import PingSchedule, PingTerms

__all__ = ["DaemonPinger", "ping_daemon", "PING_WORKERS"]

log = logging.getLogger("lookup.pyrons")

PING_WORKERS = 16  # pings at once, half for daemons that answered: 1,000 silent ones cost 1,000 x timeout / 8


def ping_daemon(address: str, timeout: float) -> None:
    """Call ``ping()`` on the Pyro5 daemon at ``address`` (``host:port``, or ``./u:path``).

    Raises:
        Exception: whatever the attempt raised (refused, timed out, not a Pyro5 daemon...).
    """
    with Pyro5.client.Proxy(f"PYRO:{Pyro5.core.DAEMON_NAME}@{address}") as proxy:
        proxy._pyroTimeout = timeout
        proxy._pyroSerializer = "serpent"  # every Pyro5 daemon takes it, whatever the process's default
        proxy.ping()


class DaemonPinger:
    """Pings each watched daemon address as :class:`PingSchedule` says, on a thread of its own.

    Args:
        terms: the intervals, timeout and misses.
        answered: called (on a worker) with an address whose daemon answered.
        dead: called (on a worker) with an address given up on (it is no longer watched).
        ping: how one address is pinged (default :func:`ping_daemon`); raises if it did not answer.
        clock: the monotonic clock the schedule is kept on.
        workers: pings at once, split between the two pools.

    Raises:
        ValueError: ``workers`` is not an int of at least 2.
    """

    def __init__(self, terms: PingTerms, answered: Callable[[str], None], dead: Callable[[str], None], *,
                 ping: Callable[[str, float], None] = ping_daemon, clock: Clock = SYSTEM_CLOCK,
                 workers: int = PING_WORKERS) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 2:
            raise ValueError(f"workers must be an int of at least 2 (two pools), got {workers!r}")
        self.terms = terms
        self._answered, self._dead, self._ping, self._clock = answered, dead, ping, clock
        self._schedule = PingSchedule(terms)
        self._changed = threading.Condition()
        self._closed = False
        self._proven_pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers // 2,
                                                                  thread_name_prefix="pyrons-ping")
        self._unproven_pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers - workers // 2,
                                                                    thread_name_prefix="pyrons-ping-new")
        self._thread = threading.Thread(target=self._run, name="pyrons-pinger", daemon=True)
        self._thread.start()

    def watch(self, address: str) -> None:
        """Ping ``address`` from now on (a name was registered at it)."""
        with self._changed:
            self._schedule.watch(address, self._clock.monotonic())
            self._changed.notify()

    def forget(self, address: str) -> None:
        """Ping ``address`` no more (its last name went)."""
        with self._changed:
            self._schedule.forget(address)

    def watched(self) -> int:
        """How many daemon addresses are watched."""
        with self._changed:
            return len(self._schedule)

    def close(self) -> None:
        """Stop pinging; waits for the pings in flight (each at most ``timeout``)."""
        with self._changed:
            self._closed = True
            self._changed.notify()
        self._thread.join()
        for pool in (self._proven_pool, self._unproven_pool):
            pool.shutdown(wait=True, cancel_futures=True)

    def _run(self) -> None:
        with self._changed:
            while not self._closed:
                now = self._clock.monotonic()
                for address in self._schedule.take_due(now):
                    pool = self._proven_pool if self._schedule.proven(address) else self._unproven_pool
                    pool.submit(self._ping_one, address)
                due = self._schedule.next_due()
                self._changed.wait(None if due is None else max(0.0, due - self._clock.monotonic()))

    def _ping_one(self, address: str) -> None:
        try:
            self._ping(address, self.terms.timeout)
            answered = True
        except Exception as exc:  # refused, timed out, garbage: each is a miss
            log.debug("daemon at %s did not answer its ping: %s", address, exc)
            answered = False
        with self._changed:
            now = self._clock.monotonic()
            watched = self._schedule.answered(address, now) if answered else False
            dead = False if answered else self._schedule.missed(address, now)
            self._changed.notify()
        try:
            if watched:
                self._answered(address)
            elif dead:
                log.info("daemon at %s answered no ping %d times in a row: its names go", address,
                         self.terms.misses)
                self._dead(address)
        except Exception:  # a callback's bug must not end the pinging
            log.exception("handling the ping of %s failed", address)
