"""A holder of Foo leases: renews one, cancels it, and lets another run out.

Run it against a running Foo landlord (see server.py), from the repository root::

    python examples/foo_landlord/client.py PYRO:foo.landlord@127.0.0.1:PORT

The story, in about two seconds:

1. take two Foos: one *kept* (2 s lease), one *left to lapse* (1 s lease);
2. renew the kept one three times, every 0.5 s: it outlives its first term;
3. the other one is never renewed, so it runs out; renewing it afterwards
   fails with ``UnknownLeaseError`` -- the Foo is already gone;
4. cancel the kept one: the landlord frees it at once, and it cannot be
   renewed either.

Exit status 0 when every step went as described, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

import Pyro5.api

import landlord  # importing it registers the converters that bring leases over the wire
from landlord import LandlordLease, UnknownLeaseError

KEPT_LEASE_SECONDS = 2.0
LAPSING_LEASE_SECONDS = 1.0
RENEWALS = 3
RENEW_EVERY_SECONDS = 0.5  # well inside the kept lease's term, so it never lapses
EXPIRY_MARGIN_SECONDS = 0.1
CALL_TIMEOUT_SECONDS = 10.0  # a hung landlord must not hang the example

_started = time.monotonic()


def say(message: str) -> None:
    """Print one line, stamped with the seconds since the client started."""
    print(f"[+{time.monotonic() - _started:5.2f}s] {message}", flush=True)


def renewal_fails(lease: LandlordLease, what: str) -> bool:
    """Try to renew a lease that should be dead; say what happened; True if it was refused."""
    try:
        granted = lease.renew(KEPT_LEASE_SECONDS)
    except UnknownLeaseError as exc:
        say(f"renewing {what} failed, as it should: UnknownLeaseError: {exc}")
        return True
    say(f"UNEXPECTED: renewing {what} succeeded ({granted:.1f} s granted)")
    return False


def run(uri: str) -> bool:
    """Tell the story against the landlord at ``uri``; True if every step went as expected."""
    all_as_expected = True
    with Pyro5.api.Proxy(uri) as foo_landlord:
        foo_landlord._pyroTimeout = CALL_TIMEOUT_SECONDS
        say(f"connected to {uri}")

        kept: LandlordLease = foo_landlord.take_foo(KEPT_LEASE_SECONDS)
        kept_foo: str = foo_landlord.foo_leased_by(kept.cookie)
        say(f"took {kept_foo} on a {KEPT_LEASE_SECONDS:g} s lease; I will keep renewing it")
        lapsing: LandlordLease = foo_landlord.take_foo(LAPSING_LEASE_SECONDS)
        lapsing_foo: str = foo_landlord.foo_leased_by(lapsing.cookie)
        say(f"took {lapsing_foo} on a {LAPSING_LEASE_SECONDS:g} s lease; "
            f"letting {lapsing_foo} run out")
        say(f"the landlord has {foo_landlord.foos_in_use()} foo(s) in use")

        for _ in range(RENEWALS):
            time.sleep(RENEW_EVERY_SECONDS)
            granted = kept.renew(KEPT_LEASE_SECONDS)
            say(f"renewed {kept_foo}: granted {granted:.1f} s "
                f"({lapsing_foo} has {lapsing.remaining:.1f} s left)")

        # Our view of the expiration is never earlier than the landlord's (it is
        # counted from when the lease arrived here), so once it has passed here the
        # landlord has expired the lease too; the margin covers sleep() rounding.
        time.sleep(lapsing.remaining + EXPIRY_MARGIN_SECONDS)
        say(f"{lapsing_foo}'s lease has run out; trying to renew it anyway")
        all_as_expected &= renewal_fails(lapsing, f"{lapsing_foo} after its lease expired")
        say(f"the landlord has {foo_landlord.foos_in_use()} foo(s) in use")

        left = kept.remaining
        kept.cancel()
        say(f"cancelled the lease on {kept_foo}, {left:.1f} s before it would have run out")
        all_as_expected &= renewal_fails(kept, f"{kept_foo} after cancelling it")
        say(f"the landlord has {foo_landlord.foos_in_use()} foo(s) in use")

    say("done" if all_as_expected else "done, but something was not as expected")
    return all_as_expected


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("uri", help="the Foo landlord's URI, as its server prints it (PYRO:...)")
    args = parser.parse_args(argv)
    say(f"landlord {landlord.__version__}, client of the Foo landlord")
    return 0 if run(args.uri) else 1


if __name__ == "__main__":
    sys.exit(main())
