"""A greeter service that keeps itself registered through a JoinManager, and says what it sees.

Usage: python mh_service.py LOOKUP_URI [LOOKUP_URI...] --host ADDRESS [--lease SECONDS]

It serves a greeter on ``ADDRESS`` (its host's address, so that clients on
other hosts can call it) and joins every lookup service given. A watcher
thread looks at the JoinManager's registrations every few milliseconds and
prints, with ``time.monotonic()`` stamps (one clock for every namespace)::

    serving <uri>
    registered <service id> <lookup uri> <times_registered> <monotonic> <lease's landlord uri>
    renewed <lookup uri> <seconds left> <monotonic>
    unregistered <lookup uri> <monotonic>     (the JoinManager gave that registration up)

Commands on stdin, one a line: ``status`` prints
``status times_registered=<n> registrations=<count> <lookup uri>...``; at the
end of stdin (the test is gone) it exits.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any

import Pyro5.api
from mh_api import Greeter, log_warnings, now, say

from lookup import JoinManager, Name

WATCH_INTERVAL = 0.01  # seconds between looks at the registrations: how late a renewal may be noticed


@Pyro5.api.expose
class HostGreeter(Greeter):
    """Says hello, and from where."""

    def __init__(self, where: str) -> None:
        self.where = where

    def hello(self, who: str) -> str:
        return f"hello {who} from {self.where}"


class Watcher:
    """Prints what changes in a JoinManager's registrations: new ones, renewals, given-up ones."""

    def __init__(self, join: JoinManager) -> None:
        self.join = join
        self.stopped = threading.Event()
        self._known: dict[str, tuple[Any, float]] = {}  # lookup uri -> (registration, its lease's expiration)

    def run(self) -> None:
        while not self.stopped.wait(WATCH_INTERVAL):
            self.look()

    def look(self) -> None:
        """Compare the registrations with the last look; print the differences."""
        current = self.join.registrations()
        for locator, registration in current.items():
            expiration = registration.lease.expiration
            known = self._known.get(locator)
            if known is None or known[0] is not registration:
                say("registered", registration.service_id, locator, self.join.times_registered, now(),
                    getattr(registration.lease, "landlord", "?"))
            elif expiration > known[1] + 0.001:
                say("renewed", locator, f"{expiration - time.time():.3f}", now())
            self._known[locator] = (registration, expiration)
        for locator in [locator for locator in self._known if locator not in current]:
            del self._known[locator]
            say("unregistered", locator, now())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A greeter that joins lookup services and reports its leases.")
    parser.add_argument("lookups", nargs="+", help="the lookup services' URIs")
    parser.add_argument("--host", required=True, help="the address to serve the greeter on")
    parser.add_argument("--lease", type=float, default=2.0, help="the registrations' lease in seconds")
    args = parser.parse_args(argv)
    log_warnings()
    daemon = Pyro5.api.Daemon(host=args.host)
    greeter = HostGreeter(args.host)
    say("serving", daemon.register(greeter))
    threading.Thread(target=daemon.requestLoop, name="greeter", daemon=True).start()
    join = JoinManager(greeter, attributes=[Name("multihost greeter")], lookups=args.lookups,
                       lease_duration=args.lease)
    watcher = Watcher(join)
    threading.Thread(target=watcher.run, name="watcher", daemon=True).start()
    for command in sys.stdin:
        if command.strip() == "status":
            registrations = join.registrations()
            say(f"status times_registered={join.times_registered} registrations={len(registrations)}",
                *sorted(registrations))
    watcher.stopped.set()
    join.close()
    daemon.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
