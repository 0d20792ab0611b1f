"""One replica of a replicated room landlord: run three, on three hosts, and any one may die.

Every replica of a group is started with the same ``--etcd``, ``--group`` and
``--replicas``; ``--port`` says which of ``--replicas`` this one is::

    python rooms.py --etcd http://e1:2379,http://e2:2379,http://e3:2379 --group rooms \\
        --port 7001 --replicas h1:7001,h2:7002,h3:7003

The replicas elect one leader through etcd. The leader alone rents rooms,
renews, cancels and frees them, and writes every lease to etcd; the others
answer ``NotLeaderError`` naming it, which a lease of the group follows by
itself (it names every replica). When the leader dies, another is elected
within about the election's TTL (2 s), loads every lease from etcd and goes
on: each lease keeps its cookie and the time it had left.

Prints ``replica at <uri> (...)`` once serving (``serve_replica``), then one
line per room rented (on the leader) and per room freed (on the leader, by
expiry or cancellation). Remote methods beside a landlord's (and a
replica's ``replica_status()``): ``rent(room, duration)``. SIGTERM or Ctrl-C
stops it: it resigns, and another replica leads at once.

Bad arguments print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Sequence
from typing import NoReturn

import Pyro5.api
import Pyro5.core

import landlord  # importing it registers the converters that send leases over the wire
from landlord import LandlordLease, LeaseDurationPolicy, ReplicatedLandlord, replica_uris
from landlord.cli import configure_logging
from landlord.replication.election import connect, parse_endpoints
from landlord.replication.replicated import replica_object_id

_started = time.monotonic()
_print_lock = threading.Lock()  # Pyro5's thread and the reaper's both print


def say(message: str) -> None:
    """Print one line, stamped with the seconds since this replica started."""
    with _print_lock:  # line and newline in one write: a log line on stderr may share the terminal or pipe
        sys.stdout.write(f"[+{time.monotonic() - _started:5.2f}s] {message}\n")
        sys.stdout.flush()


class RoomLandlord(ReplicatedLandlord):
    """Leases on rooms, granted by whichever replica leads the group (this one, or another)."""

    @Pyro5.api.expose
    def rent(self, room: str, duration: float) -> LandlordLease:
        """Lease ``room`` for ``duration`` seconds (at most ``--max-lease``); written to etcd before it returns.

        This example does not keep track of which rooms are taken: a room is just a name.

        Raises:
            NotLeaderError: this replica does not lead; the error names the one that does.
            ValueError: ``room`` is not a non-empty str, or ``duration`` not a valid duration.
        """
        if not isinstance(room, str) or not room:
            raise ValueError(f"a room is a non-empty name, not {room!r:.40}")
        lease = self.new_lease(room, duration)
        say(f"rented {room} for {lease.term:g} s")
        return lease


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose every complaint is one line on stderr (no usage block), status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments, checked: the etcd URLs, the group's name, this replica's place in ``--replicas``.

    Sets ``args.uri`` (this replica's URI) and ``args.advertise`` (its host as ``--replicas`` names it).
    """
    parser = OneLineParser(prog="rooms.py", description=__doc__.splitlines()[0])
    parser.add_argument("--etcd", required=True, metavar="URL[,URL...]",
                        help="the etcd cluster's client URLs, http://host:port, comma-separated")
    parser.add_argument("--group", required=True,
                        help="the group's name (letters, digits, _.-): the same on every replica")
    parser.add_argument("--port", required=True, type=int, help="this replica's port: one of --replicas")
    parser.add_argument("--replicas", required=True, metavar="HOST:PORT,...",
                        help="every replica of the group, the same list (and order) on each")
    parser.add_argument("--advertise", metavar="HOST",
                        help="this replica's host as --replicas names it; needed only when several share --port")
    parser.add_argument("--listen", metavar="ADDR",
                        help="the address to listen on (default: this replica's host in --replicas; "
                             "0.0.0.0: every interface)")
    parser.add_argument("--max-lease", type=float, default=60.0,
                        help="longest lease granted, in seconds (default: %(default)g)")
    args = parser.parse_args(argv)
    uris: list[str] = []
    for option, check in (("--etcd", lambda: parse_endpoints(args.etcd)),
                          ("--group", lambda: replica_object_id(args.group)),
                          ("--replicas", lambda: uris.extend(replica_uris(args.replicas, args.group)))):
        try:
            check()
        except (ValueError, TypeError) as exc:
            parser.error(f"{option}: {exc}")
    if not 0 < args.max_lease < float("inf"):
        parser.error(f"--max-lease must be a positive number of seconds, not {args.max_lease}")
    mine = [uri for uri in uris if Pyro5.core.URI(uri).port == args.port
            and args.advertise in (None, Pyro5.core.URI(uri).host)]
    if not mine:
        where = f"{args.advertise}:{args.port}" if args.advertise else f"port {args.port}"
        parser.error(f"--port: {where} is not in --replicas {args.replicas} (--port says which replica this is)")
    if len(mine) > 1:
        parser.error(f"--port: port {args.port} is in --replicas {len(mine)} times: say which is this "
                     "replica with --advertise HOST")
    args.uri = mine[0]
    args.advertise = Pyro5.core.URI(args.uri).host
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging("warning")  # the format every landlord server and example logs in
    listen = args.listen if args.listen is not None else args.advertise
    try:
        rooms = RoomLandlord(connect(args.etcd), group=args.group, replicas=replica_uris(args.replicas, args.group),
                             policy=LeaseDurationPolicy(maximum=args.max_lease),
                             on_expire=lambda room: say(f"freed {room}: its lease expired"),
                             on_cancel=lambda room: say(f"freed {room}: its lease was cancelled"))
    except ImportError as exc:  # the etcd client is not installed
        print(f"rooms.py: {exc}", file=sys.stderr)
        return 1

    def ready(uri: str) -> None:  # serve_replica has printed "replica at <uri> (...)" and joined the election
        say(f"room landlord (landlord {landlord.__version__}) joined group {args.group} of "
            f"{len(rooms.replicas)} replicas, leases of at most {args.max_lease:g} s")

    try:  # until SIGTERM or Ctrl-C; then it resigns (serve_replica closes it)
        landlord.serve_replica(rooms, listen, args.port, advertise=args.advertise, ready=ready)
    except OSError as exc:
        print(f"rooms.py: cannot listen on {listen}:{args.port}: {exc}", file=sys.stderr)
        return 1
    say(f"stopped: resigned from group {args.group}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
