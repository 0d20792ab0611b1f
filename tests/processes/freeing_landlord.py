"""A durable landlord in its own process that says what it frees, and can be made to die as it frees.

Usage: freeing_landlord.py PORT STORE [DIE_AT]. Its leases are kept in STORE
(an SQLite file). Its ``on_expire`` and ``on_cancel`` take the cookie and
print ``freed <expired|cancelled> <room> <cookie>``, flushed: a line printed
is in the pipe to the test, even if the process is killed the next instant.
With DIE_AT, the DIE_AT-th call of either kills the process (SIGKILL, of
itself) as it starts, before it prints: a crash between a lease's end and
its resource being freed. Prints ``URI: <uri>`` once serving.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

import Pyro5.api

import landlord

_printing = threading.Lock()  # the reaper's lines and the main thread's: print() writes a line in two parts


def say(*words: object) -> None:
    with _printing:
        print(*words, flush=True)


class Freeing:
    """The landlord's callbacks: count the calls, die at the ``die_at``-th (0: never)."""

    def __init__(self, die_at: int) -> None:
        self._lock = threading.Lock()
        self._calls = 0
        self._die_at = die_at

    def expired(self, room: str, cookie: str) -> None:
        self._freed("expired", room, cookie)

    def cancelled(self, room: str, cookie: str) -> None:
        self._freed("cancelled", room, cookie)

    def _freed(self, kind: str, room: str, cookie: str) -> None:
        with self._lock:
            self._calls += 1
            dying = self._calls == self._die_at
        if dying:
            os.kill(os.getpid(), signal.SIGKILL)
        say("freed", kind, room, cookie)


class Rooms(landlord.Landlord):
    @Pyro5.api.expose
    def rent(self, count: int, duration: float) -> list[landlord.LandlordLease]:
        """Leases on ``room-0`` to ``room-<count-1>``, each for ``duration`` seconds (granted within milliseconds)."""
        return [self.new_lease(f"room-{n}", duration) for n in range(count)]

    @Pyro5.api.expose
    def held(self) -> int:
        return len(self)


def main() -> None:
    port, store = int(sys.argv[1]), landlord.LeaseStore(sys.argv[2])
    freeing = Freeing(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    rooms = Rooms(policy=landlord.LeaseDurationPolicy(maximum=600), store=store,
                  on_expire=freeing.expired, on_cancel=freeing.cancelled)
    daemon = Pyro5.api.Daemon(host="127.0.0.1", port=port)
    say("URI:", daemon.register(rooms, objectId="rooms"))
    daemon.requestLoop()


if __name__ == "__main__":
    main()
