"""The Foo landlord: leases on Foo objects, served over Pyro5.

The classic first example of the Jini leasing literature. Clients call
``take_foo(duration)`` and get back a lease, not the Foo: as long as they
renew it, the Foo is theirs; when they cancel it, or stop renewing and it
runs out, the landlord frees the Foo and prints why.

Run it from the repository root::

    python examples/foo_landlord/server.py --port 0

It prints ``URI: PYRO:...`` (one line, no timestamp) for clients to connect
to, then one timestamped line per grant, renewal and freed Foo. SIGTERM or
Ctrl-C stops it cleanly.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import threading
import time
from dataclasses import dataclass
from typing import Sequence

import Pyro5.api

import landlord  # importing it registers the converters that send leases over the wire
from landlord import Landlord, LandlordLease, LeaseDurationPolicy

OBJECT_ID = "foo.landlord"  # a fixed Pyro5 object id, so a fixed port gives a fixed URI

_started = time.monotonic()
_print_lock = threading.Lock()  # Pyro5 worker threads and the reaper thread all print


def say(message: str) -> None:
    """Print one line, stamped with the seconds since the server started."""
    with _print_lock:
        print(f"[+{time.monotonic() - _started:5.2f}s] {message}", flush=True)


@dataclass(frozen=True)
class Foo:
    """The leased resource: a thing with a serial number and a name."""

    serial: int
    name: str

    def __str__(self) -> str:
        return f"foo #{self.serial}"


class FooLandlord(Landlord):
    """A landlord that makes a new Foo for every lease and says when each is freed, and why."""

    def __init__(self, max_lease: float) -> None:
        super().__init__(policy=LeaseDurationPolicy(maximum=max_lease),
                         on_expire=lambda foo: say(f"{foo} freed: its lease expired"),
                         on_cancel=lambda foo: say(f"{foo} freed: its lease was cancelled"))
        self._serials = itertools.count(1)  # next() on a count is atomic in CPython

    @Pyro5.api.expose
    def take_foo(self, duration: float) -> LandlordLease:
        """Lease a fresh Foo for ``duration`` seconds (capped at the maximum); return the lease.

        Raises:
            ValueError: an invalid duration.
        """
        serial = next(self._serials)
        foo = Foo(serial, f"Foo-{serial:04d}")
        lease = self.new_lease(foo, duration)
        say(f"granted {foo} ({foo.name}) for {lease.remaining:.1f} s")
        return lease

    @Pyro5.api.expose
    def foo_leased_by(self, cookie: str) -> str:
        """Which Foo the lease named ``cookie`` holds, e.g. ``"foo #3"``.

        Raises:
            UnknownLeaseError: that lease expired, was cancelled or never existed.
        """
        return str(self.get_resource(cookie))

    @Pyro5.api.expose
    def foos_in_use(self) -> int:
        """How many Foos are leased right now."""
        return len(self)

    @Pyro5.api.expose
    def renew(self, cookie: str, duration: float) -> float:
        # Looked up first only to name the Foo in the log; a dead lease fails here
        # with the same UnknownLeaseError the renewal itself would raise.
        foo = self.get_resource(cookie)
        granted = super().renew(cookie, duration)
        say(f"renewed the lease on {foo} for {granted:.1f} s")
        return granted


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=0,
                        help="port to listen on; 0 picks a free one (default)")
    parser.add_argument("--max-lease", type=float, default=10.0,
                        help="longest lease granted, in seconds (default: %(default)s)")
    args = parser.parse_args(argv)
    if not args.max_lease > 0:
        parser.error(f"--max-lease must be a positive number of seconds, got {args.max_lease}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    foo_landlord = FooLandlord(args.max_lease)

    def ready(uri: str) -> None:
        say(f"Foo landlord (landlord {landlord.__version__}) serving, "
            f"leases of at most {args.max_lease:g} s")
        print(f"URI: {uri}", flush=True)  # unstamped: a parent process reads this line

    try:  # serve_landlord: the multiplex server, until SIGTERM or Ctrl-C
        landlord.serve_landlord(foo_landlord, args.host, args.port, object_id=OBJECT_ID, ready=ready)
        say(f"shutting down; {foo_landlord.foos_in_use()} foo(s) still leased")
    finally:
        foo_landlord.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
