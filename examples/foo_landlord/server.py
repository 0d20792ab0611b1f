"""The Foo landlord: leases on Foo objects, served over Pyro5.

The classic first example of the Jini leasing literature. Clients call
``take_foo(duration)`` and get back a lease, not the Foo: as long as they
renew it, the Foo is theirs; when they cancel it, or stop renewing and it
runs out, the landlord frees the Foo and prints why.

Run it from the repository root::

    python examples/foo_landlord/server.py --port 0
    python examples/foo_landlord/server.py --host 0.0.0.0 --advertise h1.example.org --port 7000

``serve_landlord`` prints where it serves, ``landlord at PYRO:... (guarded
server)`` (one line, no timestamp), for clients to connect to; then this
server prints one timestamped line per grant, renewal (single, or a batch of
them in one ``renew_all`` call) and freed Foo. With ``--host 0.0.0.0`` it
listens on every interface, and its URI (which every lease carries) names
``--advertise``, or this host's own address. SIGTERM or Ctrl-C stops it cleanly.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import Pyro5.api

import landlord  # importing it registers the converters that send leases over the wire
from landlord import Landlord, LandlordLease, LeaseDurationPolicy, RenewResults, UnknownLeaseError
from landlord.transport.addresses import check_advertise

OBJECT_ID = "foo.landlord"  # a fixed Pyro5 object id, so a fixed port gives a fixed URI
NAMED_IN_A_BATCH = 10       # Foos named in the line for one renew_all call; more are counted

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

    @Pyro5.api.expose
    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> RenewResults:
        """Renew many leases in one call (what a ``LeaseMap`` and the renewal manager send); say which.

        Raises:
            TypeError, ValueError: as :meth:`landlord.Landlord.renew_all` (malformed input renews nothing).
        """
        results = super().renew_all(cookies, durations)  # checks the whole call first
        renewed = [f"{self._foo_of(cookie)} for {granted:.1f} s"
                   for cookie, granted in zip(cookies, results.granted) if granted != -1]
        named = ", ".join(renewed[:NAMED_IN_A_BATCH])
        if len(renewed) > NAMED_IN_A_BATCH:
            named += f" and {len(renewed) - NAMED_IN_A_BATCH} more"
        line = f"renewed {len(renewed)} lease(s) in one call" + (f": {named}" if named else "")
        if results.denied:
            reasons = sorted({type(error).__name__ for error in results.denied})
            line += f"; {len(results.denied)} refused ({', '.join(reasons)})"
        say(line)
        return results

    def _foo_of(self, cookie: str) -> str:
        """The Foo a live lease holds, as text (a lease may end between its renewal and this)."""
        try:
            return str(self.get_resource(cookie))
        except UnknownLeaseError:
            return "a foo just freed"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: %(default)s; 0.0.0.0: every interface)")
    parser.add_argument("--advertise", metavar="ADDR",
                        help="host name or address clients on other hosts reach this one by: put in the "
                             "URI and every lease (default: --host, or this host's own address on 0.0.0.0)")
    parser.add_argument("--port", type=int, default=0,
                        help="port to listen on; 0 picks a free one (default)")
    parser.add_argument("--max-lease", type=float, default=10.0,
                        help="longest lease granted, in seconds (default: %(default)s)")
    args = parser.parse_args(argv)
    if not args.max_lease > 0:
        parser.error(f"--max-lease must be a positive number of seconds, got {args.max_lease}")
    if args.advertise is not None:
        try:
            check_advertise(args.advertise)
        except ValueError as exc:
            parser.error(str(exc))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    foo_landlord = FooLandlord(args.max_lease)

    def ready(uri: str) -> None:  # serve_landlord has just printed "landlord at <uri> (...)"
        say(f"Foo landlord (landlord {landlord.__version__}) serving, "
            f"leases of at most {args.max_lease:g} s")

    try:  # serve_landlord: the guarded server, until SIGTERM or Ctrl-C
        landlord.serve_landlord(foo_landlord, args.host, args.port, advertise=args.advertise,
                                object_id=OBJECT_ID, ready=ready)
        say(f"shutting down; {foo_landlord.foos_in_use()} foo(s) still leased")
    finally:
        foo_landlord.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
