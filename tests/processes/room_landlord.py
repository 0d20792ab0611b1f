"""A landlord in its own process, at a fixed object id so it can be restarted at the same URI.

Usage: room_landlord.py PORT. Prints ``URI: <uri>`` once serving and ``freed <room>`` on expiry.
"""

from __future__ import annotations

import sys

import Pyro5.api

import landlord


class RoomLandlord(landlord.Landlord):
    @Pyro5.api.expose
    def rent(self, room: str, duration: float) -> landlord.LandlordLease:
        return self.new_lease(room, duration)


def main() -> None:
    port = int(sys.argv[1])
    rooms = RoomLandlord(policy=landlord.LeaseDurationPolicy(maximum=600),
                         on_expire=lambda room: print("freed", room, flush=True))
    daemon = Pyro5.api.Daemon(host="127.0.0.1", port=port)
    print("URI:", daemon.register(rooms, objectId="rooms"), flush=True)
    daemon.requestLoop()


if __name__ == "__main__":
    main()
