"""A holder that lets a LeaseRenewalManager keep its leases alive, and reacts when one is denied.

Run it against a running room landlord (see server.py), from the repository root::

    python examples/renewal/holder.py PYRO:rooms.landlord@127.0.0.1:PORT

The story, in about five and a half seconds:

1. rent three rooms on short leases (the landlord grants 2 s at most) and
   hand them to one ``LeaseRenewalManager`` with ``renew_for(lease, FOREVER)``;
   from then on this program never renews anything itself;
2. the manager renews them every second or so, all three in one
   ``renew_all`` call (the landlord prints each call);
3. when the landlord revokes a room, the next renewal of its lease is
   denied: the manager drops that lease and calls our listener once, with
   ``LeaseDeniedError``; we rent a replacement room and hand it over too;
4. at the end we ask the landlord how often each lease was renewed, and
   cancel the leases we still hold.

Exit status 0 when exactly one lease was lost, by denial, and every other
lease was kept alive through several renewals; 1 otherwise.
"""

from __future__ import annotations

import argparse
import queue
import sys
import threading
import time
from collections.abc import Sequence

import Pyro5.api

import landlord  # importing it registers the converters that bring leases over the wire
from landlord import (
    FOREVER,
    LandlordLease,
    LeaseDeniedError,
    LeaseError,
    LeaseRenewalEvent,
    LeaseRenewalManager,
    UnknownLeaseError,
)

ROOMS_WANTED = 3
LEASE_SECONDS = 10.0  # asked for; the landlord grants less (2 s with the demo's settings)
RUN_SECONDS = 5.5  # ends between two renewal rounds (they come every second)
MIN_RENEWALS = 3  # a lease held from the start must have been renewed at least this often
CALL_TIMEOUT_SECONDS = 10.0  # a hung landlord must not hang the example

_started = time.monotonic()
_print_lock = threading.Lock()  # the main thread and the manager's threads print


def say(message: str) -> None:
    """Print one line, stamped with the seconds since the holder started."""
    with _print_lock:
        print(f"[+{time.monotonic() - _started:5.2f}s] {message}", flush=True)


class Holder:
    """Rooms rented from one landlord, kept alive by a LeaseRenewalManager."""

    def __init__(self, rooms_landlord: Pyro5.api.Proxy, manager: LeaseRenewalManager) -> None:
        self.landlord = rooms_landlord
        self.manager = manager
        self.room_of: dict[LandlordLease, str] = {}
        self.rented_at: dict[LandlordLease, float] = {}
        self.lost: list[LeaseRenewalEvent] = []
        # The listener runs on the manager's thread: it only reports and hands
        # the event over; the main thread (which owns the proxy) does the
        # remote call to replace the room, so no renewal waits for it.
        self.to_replace: queue.Queue[LeaseRenewalEvent] = queue.Queue()

    def rent(self) -> LandlordLease:
        """Rent a room and give its lease to the manager to keep alive forever."""
        lease: LandlordLease = self.landlord.rent_room(LEASE_SECONDS)
        room = self.landlord.room_of(lease.cookie)
        self.room_of[lease] = room
        self.rented_at[lease] = time.monotonic()
        self.manager.renew_for(lease, FOREVER, listener=self.on_lost)
        return lease

    def on_lost(self, event: LeaseRenewalEvent) -> None:
        """The manager's listener: a lease was lost and is no longer renewed."""
        room = self.room_of.get(event.lease, "an unknown room")
        exc = event.exception
        kind = "denied" if isinstance(exc, LeaseDeniedError) else "failed"
        say(f"LOST {room}: renewal {kind}, {type(exc).__name__}: {exc}")
        self.lost.append(event)
        self.to_replace.put(event)

    def replace(self, event: LeaseRenewalEvent) -> None:
        """Rent another room in place of the one lost."""
        old = self.room_of.pop(event.lease, "an unknown room")
        self.rented_at.pop(event.lease, None)
        lease = self.rent()
        say(f"asked for a replacement for {old}: got {self.room_of[lease]}, "
            f"now kept alive by the manager too")

    def run(self) -> bool:
        """Tell the story; True if it went as described in the module docstring."""
        for _ in range(ROOMS_WANTED):
            self.rent()
        first = next(iter(self.room_of))
        say(f"rented {', '.join(self.room_of.values())}; the landlord granted "
            f"{first.remaining:.1f} s each; the manager keeps them alive from here on")

        # Nothing to do but wait: the manager renews. Wake only to replace a lost room.
        deadline = time.monotonic() + RUN_SECONDS
        while (left := deadline - time.monotonic()) > 0:
            try:
                event = self.to_replace.get(timeout=left)
            except queue.Empty:
                break
            self.replace(event)

        return self.report()

    def report(self) -> bool:
        """Print what the landlord says about each lease, cancel them, and check the story."""
        held = list(self.room_of)
        counts = self.landlord.renewals_of([lease.cookie for lease in held])
        as_expected = True
        for lease, renewals in zip(held, counts):
            room = self.room_of[lease]
            held_for = time.monotonic() - self.rented_at[lease]
            try:
                alive = self.landlord.room_of(lease.cookie) == room
            except UnknownLeaseError:
                alive = False
            say(f"{room} kept alive through {renewals} renewals over {held_for:.1f} s "
                f"({lease.remaining:.1f} s left; the landlord still has it: {alive})")
            # a lease held all along gets MIN_RENEWALS; a replacement at least one
            needed = MIN_RENEWALS if held_for > RUN_SECONDS - 1 else 1
            if renewals < needed or not alive:
                say(f"UNEXPECTED: {room} was renewed only {renewals} times, or is gone")
                as_expected = False
        for lease in held:
            try:
                self.manager.cancel(lease)  # stop renewing it, and give the room back
            except LeaseError as exc:
                say(f"UNEXPECTED: cancelling {self.room_of[lease]} failed: {type(exc).__name__}: {exc}")
                as_expected = False
        say(f"cancelled {', '.join(self.room_of[lease] for lease in held)}")

        denials = [e for e in self.lost if isinstance(e.exception, LeaseDeniedError)]
        if len(self.lost) != 1 or len(denials) != 1:
            say(f"UNEXPECTED: {len(self.lost)} lease(s) lost, {len(denials)} by denial; expected one denial")
            as_expected = False
        return as_expected


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("uri", help="the room landlord's URI, as its server prints it (PYRO:...)")
    args = parser.parse_args(argv)
    say(f"landlord {landlord.__version__}, holder of meeting rooms")
    landlord.set_call_timeout(CALL_TIMEOUT_SECONDS)  # the manager's own calls to the landlord
    with Pyro5.api.Proxy(args.uri) as rooms_landlord, LeaseRenewalManager() as manager:
        rooms_landlord._pyroTimeout = CALL_TIMEOUT_SECONDS
        as_expected = Holder(rooms_landlord, manager).run()
    say("done" if as_expected else "done, but something was not as expected")
    return 0 if as_expected else 1


if __name__ == "__main__":
    sys.exit(main())
