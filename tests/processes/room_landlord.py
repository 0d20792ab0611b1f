"""A landlord in its own process, at a fixed object id so it can be restarted at the same URI.

Usage: room_landlord.py PORT [STORE]. With STORE (an SQLite file) its leases
are durable: restarted on the same store, it has them back. Prints
``URI: <uri>`` once serving, ``took back <n>`` with a store, and
``freed <room>`` on expiry.
"""

from __future__ import annotations

import sys

import Pyro5.api

import landlord


class RoomLandlord(landlord.Landlord):
    @Pyro5.api.expose
    def rent(self, room: str, duration: float) -> landlord.LandlordLease:
        return self.new_lease(room, duration)

    @Pyro5.api.expose
    def held(self) -> int:
        return len(self)


def main() -> None:
    port = int(sys.argv[1])
    store = landlord.LeaseStore(sys.argv[2]) if len(sys.argv) > 2 else None
    rooms = RoomLandlord(policy=landlord.LeaseDurationPolicy(maximum=600), store=store,
                         on_expire=lambda room: print("freed", room, flush=True))
    if store is not None:
        print("took back", len(rooms), flush=True)
    daemon = Pyro5.api.Daemon(host="127.0.0.1", port=port)
    print("URI:", daemon.register(rooms, objectId="rooms"), flush=True)
    daemon.requestLoop()


if __name__ == "__main__":
    main()
