"""A landlord of meeting rooms that can revoke a room: renewals of its lease are then denied.

Clients call ``rent_room(duration)`` and get a lease on the next free room.
The landlord's policy grants at most ``--max-lease`` seconds, so holders must
renew often; ``--revoke ROOM --after SECONDS`` makes the landlord take ROOM
back that many seconds after it was first rented: from then on every renewal
of its lease is denied with ``LeaseDeniedError``, the lease runs out, and the
room is never rented again.

Run it from the repository root::

    python examples/renewal/server.py --port 0 --revoke green --after 2.5

It prints ``URI: PYRO:...`` (one line, no timestamp) for holders to connect
to, then one timestamped line per grant, batch renewal, revocation and freed
room. SIGTERM or Ctrl-C stops it cleanly.
"""

from __future__ import annotations

import argparse
import collections
import sys
import threading
import time
from collections.abc import Sequence

import Pyro5.api

import landlord  # importing it registers the converters that send leases over the wire
from landlord import Landlord, LandlordLease, LeaseDeniedError, LeasedResource, LeaseDurationPolicy, RenewResults

OBJECT_ID = "rooms.landlord"  # a fixed Pyro5 object id, so a fixed port gives a fixed URI
ROOMS = ("red", "green", "blue", "yellow", "purple")

_started = time.monotonic()
_print_lock = threading.Lock()  # Pyro5 worker threads, the reaper and the revoking timer all print


def say(message: str) -> None:
    """Print one line, stamped with the seconds since the server started."""
    with _print_lock:
        print(f"[+{time.monotonic() - _started:5.2f}s] {message}", flush=True)


class RevocablePolicy(LeaseDurationPolicy):
    """Grants like :class:`~landlord.LeaseDurationPolicy`, but never on a revoked room.

    The policy is where a landlord says no: raising ``LeaseDeniedError`` from
    ``renew`` refuses that one renewal (in a batch, the others still go
    through) and leaves the lease to run out at its current expiration.
    """

    def __init__(self, maximum: float) -> None:
        super().__init__(maximum=maximum)
        self.revoked: set[str] = set()  # only ever grows; a set read is atomic in CPython

    def lease_for(self, resource: LeasedResource, requested: float) -> landlord.Lease:
        if resource.resource in self.revoked:
            raise LeaseDeniedError(f"room {resource.resource} has been revoked")
        return super().lease_for(resource, requested)

    def renew(self, resource: LeasedResource, requested: float) -> float:
        if resource.resource in self.revoked:
            raise LeaseDeniedError(f"room {resource.resource} has been revoked by its landlord")
        return super().renew(resource, requested)


class RoomLandlord(Landlord):
    """Rents meeting rooms, one lease per room; can revoke a room some time after it is first rented."""

    def __init__(self, max_lease: float, revoke: str | None, revoke_after: float) -> None:
        self._policy = RevocablePolicy(max_lease)
        super().__init__(policy=self._policy,
                         on_expire=lambda room: self._free(room, "its lease expired"),
                         on_cancel=lambda room: self._free(room, "its lease was cancelled"))
        self._lock = threading.Lock()  # rooms are rented from Pyro5's worker threads
        self._rented: set[str] = set()
        self._renewals: collections.Counter[str] = collections.Counter()  # by cookie
        self._revoke, self._revoke_after = revoke, revoke_after
        self._timers: list[threading.Timer] = []

    def _free(self, room: str, reason: str) -> None:
        with self._lock:
            self._rented.discard(room)
        say(f"{room} freed: {reason}")

    def _revoke_now(self, room: str) -> None:
        self._policy.revoked.add(room)
        say(f"revoked {room}: renewals of its lease will be denied")

    @Pyro5.api.expose
    def rent_room(self, duration: float) -> LandlordLease:
        """Lease the first free room that is not revoked, for ``duration`` seconds (at most the maximum).

        Raises:
            LeaseDeniedError: every room is taken or revoked.
            ValueError: an invalid duration.
        """
        with self._lock:
            free = [room for room in ROOMS if room not in self._rented and room not in self._policy.revoked]
            if not free:
                raise LeaseDeniedError("no free room")
            room = free[0]
            self._rented.add(room)
        try:
            lease = self.new_lease(room, duration)
        except BaseException:
            with self._lock:
                self._rented.discard(room)
            raise
        say(f"granted {room} for {lease.remaining:.1f} s")
        if room == self._revoke:
            timer = threading.Timer(self._revoke_after, self._revoke_now, args=(room,))
            timer.daemon = True
            self._timers.append(timer)
            timer.start()
        return lease

    @Pyro5.api.expose
    def room_of(self, cookie: str) -> str:
        """The room leased under ``cookie``.

        Raises:
            UnknownLeaseError: that lease expired, was cancelled or never existed.
        """
        return str(self.get_resource(cookie))

    @Pyro5.api.expose
    def renewals_of(self, cookies: list[str]) -> list[int]:
        """How many times each of these leases has been renewed (0 for an unknown cookie)."""
        with self._lock:
            return [self._renewals[cookie] for cookie in cookies]

    @Pyro5.api.expose
    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> RenewResults:
        # overriding drops Pyro5's exposure: hence the decorator again
        rooms = [self._room_or_none(cookie) for cookie in cookies]  # before: a denied lease may expire
        results = super().renew_all(cookies, durations)
        renewed, denied = [], []
        with self._lock:
            for cookie, room, granted in zip(cookies, rooms, results.granted):
                if granted == -1:
                    denied.append(room or "an unknown lease")
                else:
                    self._renewals[cookie] += 1
                    renewed.append(room)
        message = f"renewed {', '.join(map(str, renewed)) or 'nothing'} in one renew_all call"
        if denied:
            message += f"; DENIED {', '.join(denied)}"
        say(message)
        return results

    @Pyro5.api.expose
    def renew(self, cookie: str, duration: float) -> float:
        granted = super().renew(cookie, duration)
        with self._lock:
            self._renewals[cookie] += 1
        return granted

    def _room_or_none(self, cookie: str) -> str | None:
        try:
            return self.room_of(cookie)
        except Exception:  # unknown or malformed: renew_all will say so to the holder
            return None

    def rented(self) -> int:
        with self._lock:
            return len(self._rented)

    def close(self) -> None:
        for timer in self._timers:
            timer.cancel()
        super().close()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on; 0 picks a free one (default)")
    parser.add_argument("--max-lease", type=float, default=2.0,
                        help="longest lease granted, in seconds (default: %(default)s)")
    parser.add_argument("--revoke", choices=ROOMS, help="a room to take back once rented")
    parser.add_argument("--after", type=float, default=2.5,
                        help="seconds after it is first rented that --revoke takes the room back "
                             "(default: %(default)s)")
    args = parser.parse_args(argv)
    if not args.max_lease > 0:
        parser.error(f"--max-lease must be a positive number of seconds, got {args.max_lease}")
    if not args.after >= 0:
        parser.error(f"--after must be a non-negative number of seconds, got {args.after}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rooms = RoomLandlord(args.max_lease, args.revoke, args.after)
    revoking = f"; will revoke {args.revoke} {args.after:g} s after renting it" if args.revoke else ""

    def ready(uri: str) -> None:
        say(f"room landlord (landlord {landlord.__version__}) serving {len(ROOMS)} rooms, "
            f"leases of at most {args.max_lease:g} s{revoking}")
        print(f"URI: {uri}", flush=True)  # unstamped: a parent process reads this line

    try:  # serve_landlord: the guarded server, until SIGTERM or Ctrl-C
        landlord.serve_landlord(rooms, args.host, args.port, object_id=OBJECT_ID, ready=ready)
        say(f"shutting down; {rooms.rented()} room(s) still rented")
    finally:
        rooms.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
