"""A landlord served by ``landlord.serve_landlord`` in its own process, optionally over two-way TLS.

Usage: served_landlord.py [--host H] [--advertise A] [--port P] [--landlord-id ID] [--server-type T]
                          [--quiet] [--cert C --key K --ca A [--handshake-timeout S]]
                          [--admin-token-file F]

serve_landlord prints ``landlord at <uri> (...)`` once serving (not with
``--quiet``); then this script prints ``URI: <uri>``, ``freed <room>`` when a lease ends and
``stopped`` once serve_landlord has returned (on SIGTERM). Logs to stderr
(merged with stdout by the tests' ChildProcess). With ``--admin-token-file`` it serves an admin object
beside the landlord (``landlord admin at <uri>``), with the token in that file.
"""

from __future__ import annotations

import argparse
import logging
import sys

import Pyro5.api

import landlord
import landlord.serving
from landlord.admin import LandlordAdmin, read_token


class RoomLandlord(landlord.Landlord):
    @Pyro5.api.expose
    def rent(self, room: str, duration: float) -> landlord.LandlordLease:
        return self.new_lease(room, duration)

    @Pyro5.api.expose
    def evict(self, cookie: str, reason: str) -> None:
        """For the tests: the landlord's own decision to revoke, made on request."""
        self.revoke(cookie, reason)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default=landlord.serving.DEFAULT_HOST)
    parser.add_argument("--advertise", default=None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="serve_landlord(announce=False)")
    parser.add_argument("--landlord-id", default=None)
    parser.add_argument("--server-type", default=landlord.serving.SERVER_TYPE)
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--ca")
    parser.add_argument("--handshake-timeout", type=float, default=landlord.tls.HANDSHAKE_TIMEOUT)
    parser.add_argument("--admin-token-file")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("landlord").setLevel(logging.INFO)

    tls = None
    if args.cert:
        tls = landlord.TLSConfig(args.cert, args.key, args.ca, handshake_timeout=args.handshake_timeout)
    rooms = RoomLandlord(policy=landlord.LeaseDurationPolicy(maximum=600), landlord_id=args.landlord_id,
                         on_expire=lambda room: print("freed", room, flush=True))
    admin = None
    if args.admin_token_file:
        admin = LandlordAdmin(rooms, token=read_token(args.admin_token_file))
    landlord.serve_landlord(rooms, args.host, args.port, advertise=args.advertise, tls=tls,
                            server_type=args.server_type, announce=not args.quiet, admin=admin,
                            ready=lambda uri: print("URI:", uri, flush=True))
    rooms.close()
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
