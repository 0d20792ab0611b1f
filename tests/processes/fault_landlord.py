"""A landlord in its own process for the fault suite (tests/faults): it tells what it frees and
what it holds, and can sit behind a TCP proxy or run on a skewed wall clock.

Usage: fault_landlord.py --port PORT [--natport PORT] [--wall-offset SECONDS]
                         [--maximum SECONDS] [--quiet] [--verbose]

Serves at the fixed object id ``rooms``, so a restart on the same port keeps
its URI. Prints, one line each:

* ``URI: <uri>`` once serving: the URI its leases carry (through ``--natport``
  when given, e.g. a TCP proxy's port);
* ``DIRECT: <uri>`` the same object at the daemon's own port, for a test's
  control calls that must not go through the proxy;
* ``freed <resource> <now>`` when a lease expires, ``now`` on
  ``time.monotonic()`` (on Linux one clock for every process), unless ``--quiet``;
* ``cancelled <resource>`` when a lease is cancelled, unless ``--quiet``;
* ``renewed <resource> <granted>`` per lease renewed, with ``--verbose``.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import Pyro5.api

import landlord


class SkewedClock(landlord.SystemClock):
    """This machine's clocks, with the wall clock set ``offset`` seconds wrong (monotonic untouched)."""

    def __init__(self, offset: float) -> None:
        self.offset = offset

    def time(self) -> float:
        return time.time() + self.offset

    def __repr__(self) -> str:
        return f"SkewedClock({self.offset:+})"


class FaultLandlord(landlord.Landlord):
    """A landlord that counts grants and frees and answers questions about its own process."""

    def __init__(self, *, quiet: bool, verbose: bool, **kwargs: Any) -> None:
        self._quiet, self._verbose = quiet, verbose
        self._counts = threading.Condition()
        self.granted = self.freed = self.cancelled = 0
        self._cookies: dict[str, str] = {}  # resource -> cookie, so a test can ask by name
        super().__init__(on_expire=self._expired, on_cancel=self._cancelled, **kwargs)

    # -- callbacks (the reaper's or a caller's thread) -----------------------------

    def _expired(self, resource: str) -> None:
        now = time.monotonic()
        with self._counts:
            self.freed += 1
            self._counts.notify_all()
        if not self._quiet:
            print("freed", resource, f"{now:.6f}", flush=True)

    def _cancelled(self, resource: str) -> None:
        with self._counts:
            self.cancelled += 1
            self._counts.notify_all()
        if not self._quiet:
            print("cancelled", resource, flush=True)

    # -- remote ----------------------------------------------------------------------

    @Pyro5.api.expose
    def rent(self, resource: str, duration: float) -> landlord.LandlordLease:
        lease = self.new_lease(resource, duration)
        with self._counts:
            self.granted += 1
            if not self._quiet:  # a thousand crashing holders need no names kept
                self._cookies[resource] = lease.cookie
        return lease

    @Pyro5.api.expose
    def rent_many(self, prefix: str, count: int, duration: float) -> list[landlord.LandlordLease]:
        return [self.rent(f"{prefix}{i}", duration) for i in range(count)]

    @Pyro5.api.expose
    def expiration_of(self, resource: str) -> float:
        """When the lease on ``resource`` ends here, on ``time.monotonic()``: the landlord's truth.

        Raises:
            UnknownLeaseError: that lease has ended.
        """
        with self._counts:
            cookie = self._cookies.get(resource, "?")
        return self.manager.get(cookie).expiration  # type: ignore[no-any-return]

    @Pyro5.api.expose
    def wall_time(self) -> float:
        """This landlord's wall clock (skewed, if it is)."""
        return self.clock.time()

    @Pyro5.api.expose
    def stats(self) -> dict[str, Any]:
        """Grants, frees, leases held, and this process's open files and threads."""
        with self._counts:
            counts = {"granted": self.granted, "freed": self.freed, "cancelled": self.cancelled}
        return dict(counts, held=len(self.manager), fds=len(os.listdir("/proc/self/fd")),
                    threads=threading.active_count(), pid=os.getpid())

    @Pyro5.api.expose
    def wait_all_freed(self, timeout: float) -> dict[str, Any]:
        """Block until every lease granted has expired or been cancelled (or ``timeout`` runs out);
        then :meth:`stats`."""
        with self._counts:
            self._counts.wait_for(lambda: self.freed + self.cancelled >= self.granted, timeout)
        return self.stats()

    @Pyro5.api.expose
    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> landlord.RenewResults:
        results = super().renew_all(cookies, durations)
        if self._verbose:
            for cookie, granted in zip(cookies, results.granted):
                if granted != -1:
                    print("renewed", self.get_resource(cookie), granted, flush=True)
        return results


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--natport", type=int, help="the port its leases lead to (a proxy's)")
    parser.add_argument("--wall-offset", type=float, default=0.0, help="skew its wall clock by this")
    parser.add_argument("--maximum", type=float, default=600.0, help="longest lease granted")
    parser.add_argument("--quiet", action="store_true", help="no line per freed or cancelled lease")
    parser.add_argument("--verbose", action="store_true", help="a line per lease renewed")
    args = parser.parse_args(argv)

    clock = SkewedClock(args.wall_offset) if args.wall_offset else landlord.SYSTEM_CLOCK
    rooms = FaultLandlord(quiet=args.quiet, verbose=args.verbose, clock=clock,
                          policy=landlord.LeaseDurationPolicy(maximum=args.maximum))
    nat = {"nathost": "127.0.0.1", "natport": args.natport} if args.natport else {}
    daemon = Pyro5.api.Daemon(host="127.0.0.1", port=args.port, **nat)
    uri = daemon.register(rooms, objectId="rooms")
    print("DIRECT:", f"PYRO:rooms@{daemon.locationStr}", flush=True)
    print("URI:", uri, flush=True)
    daemon.requestLoop()


if __name__ == "__main__":
    main(sys.argv[1:])
