"""A landlord served by ``landlord.serve_landlord`` with its metrics, in its own process.

Usage: metrics_landlord.py [--metrics-port P]

serve_landlord prints ``landlord at <uri> (...)`` and ``landlord metrics at
http://127.0.0.1:<port>/metrics (...)`` once serving; the landlord rents rooms
(``rent(room, duration)``, leases of at most 600 s). Logs to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys

import Pyro5.api

import landlord


class RoomLandlord(landlord.Landlord):
    @Pyro5.api.expose
    def rent(self, room: str, duration: float) -> landlord.LandlordLease:
        return self.new_lease(room, duration)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--metrics-port", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    rooms = RoomLandlord(policy=landlord.LeaseDurationPolicy(maximum=600))
    landlord.serve_landlord(rooms, metrics_port=args.metrics_port)
    rooms.close()


if __name__ == "__main__":
    main()
