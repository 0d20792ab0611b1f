"""A landlord served by ``landlord.serve_landlord`` in its own process, with its admin object
(``serve_landlord(admin=...)``) beside it on the same daemon; optionally over two-way TLS.

Usage: admin_landlord.py [--token-file F] [--admin-name NAME ...] [--cert C --key K --ca A]
                         [--landlord-id ID]

Once both answer it prints ``admin at <uri>``; ``freed <room>`` when a lease's resource is
freed (``cancelled <room>`` when through ``on_cancel``); ``stopped`` once
serve_landlord has returned (on SIGTERM). Its landlord grants leases through ``rent(room,
duration)`` and resources attach through ``attach(cookie, resource)``. Logs to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

import Pyro5.api

import landlord
from landlord.admin import LandlordAdmin, read_token


class RoomLandlord(landlord.Landlord):
    @Pyro5.api.expose
    def rent(self, room: str, duration: float) -> landlord.LandlordLease:
        return self.new_lease(room, duration)

    @Pyro5.api.expose
    def attach(self, cookie: str, resource: Any) -> None:
        super().attach(cookie, resource)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--token-file")
    parser.add_argument("--admin-name", action="append", default=[])
    parser.add_argument("--landlord-id", default=None)
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--ca")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("landlord").setLevel(logging.INFO)

    tls = landlord.TLSConfig(args.cert, args.key, args.ca) if args.cert else None
    token = read_token(args.token_file) if args.token_file else None
    rooms = RoomLandlord(policy=landlord.LeaseDurationPolicy(maximum=600), landlord_id=args.landlord_id,
                         on_expire=lambda room: print("freed", room, flush=True),
                         on_cancel=lambda room: print("cancelled", room, flush=True))

    admin = LandlordAdmin(rooms, token=token, admin_names=args.admin_name)
    landlord.serve_landlord(rooms, "127.0.0.1", 0, tls=tls, admin=admin)
    rooms.close()
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
