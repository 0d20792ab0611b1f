"""One replica of a replicated room landlord, in a process of its own (tests/faults/test_replicated_failover.py).

    python tests/processes/replica_landlord.py ENDPOINTS GROUP PORT ADDRESSES [HOST] [--admin-token-file F]

ADDRESSES names every replica of the group (``127.0.0.1:p1,127.0.0.1:p2,...``);
this one serves at ``HOST:PORT`` (HOST: 127.0.0.1 unless given), which must be one of them. Prints
``replica at <uri> (...)`` once serving, ``freed <room> <cookie>`` when a lease
ends on it (while it leads). Remote methods beside a landlord's:
``rent(room, duration)`` (a lease; only the leader grants), ``left(cookie)``
(seconds the leader gives the lease, on its own clock), ``term_source()`` (whence the leader's term took its
leases: "the warm copy" or "etcd"), ``term_took_standby()`` (whether it took the copy's standby table whole),
and every replica's ``replica_status()``. With ``--admin-token-file`` it serves the group's admin object beside
it (``replica admin at <uri>``), with the token in that file.
(The lock tests' replicas are the safety checker's: landlord.testing.replicacheck.)
"""

from __future__ import annotations

import argparse
import logging
import sys

import Pyro5.api

import landlord
from landlord.admin import LandlordAdmin, read_token
from landlord.replication.election import connect


def say(line: str) -> None:
    """One line to stdout in one write: the log's lines share the pipe (stderr merged) and must not split it."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class ReplicatedRooms(landlord.ReplicatedLandlord):
    @Pyro5.api.expose
    def rent(self, room: str, duration: float) -> landlord.LandlordLease:
        return self.new_lease(room, duration)

    @Pyro5.api.expose
    def left(self, cookie: str) -> float:
        def seconds_left(held: landlord.Landlord) -> float:
            return held.manager.get(cookie).expiration - self.clock.monotonic()
        seconds: float = self.answer(seconds_left)
        return seconds

    @Pyro5.api.expose
    def term_source(self) -> str:
        return str(self.answer(lambda held: getattr(held.store, "source", "")))

    @Pyro5.api.expose
    def term_took_standby(self) -> bool:
        """Whether the leader's term took its warm copy's standby table whole (no lease restored one by one)."""
        return bool(self.answer(lambda held: getattr(held.store, "ready_taken", False)))


def freed(room: str, cookie: str) -> None:
    """``on_expire`` (and so ``on_cancel``), given the cookie: one line, flushed before it returns."""
    say(f"freed {room} {cookie}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("endpoints")
    parser.add_argument("group")
    parser.add_argument("port", type=int)
    parser.add_argument("addresses")
    parser.add_argument("host", nargs="?", default="127.0.0.1")
    parser.add_argument("--admin-token-file")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
    # for a failed test's report (the failover tests show each replica's last lines): every failed etcd
    # call of the election, and each term begun
    logging.getLogger("landlord.election").setLevel(logging.DEBUG)
    logging.getLogger("landlord.replicated").setLevel(logging.INFO)
    rooms = ReplicatedRooms(connect(args.endpoints), group=args.group,
                            replicas=landlord.replica_uris(args.addresses, args.group),
                            policy=landlord.LeaseDurationPolicy(maximum=600),
                            on_expire=freed)
    admin = LandlordAdmin(rooms, token=read_token(args.admin_token_file)) if args.admin_token_file else None
    landlord.serve_replica(rooms, args.host, args.port, admin=admin)


if __name__ == "__main__":
    main()
